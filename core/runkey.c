/* SPDX-License-Identifier: MIT */
/*
 * runkey.c - the runner channel's per-session key (see runkey.h).
 *
 * The key file lives in the backend's host-side runtime directory, which
 * no sandbox sees.  On the plain local backend commands run as this user
 * on this host and could read it: there the runner's refusal of its own
 * descendants is what keeps a command from its runner (hs-runner(7)).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "core/runkey.h"

/* Open the backend's runtime directory, checked to be this user's, 0700. */
static int
open_dir(struct hs_backend *be, char *err, size_t errlen)
{
	struct stat sb;
	int dfd = open(be->runtime_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(err, errlen, "cannot open runtime directory '%s': %s", be->runtime_dir,
		         strerror(errno));
		return -1;
	}
	if (fstat(dfd, &sb) < 0 || sb.st_uid != geteuid() || (sb.st_mode & 07777) != 0700) {
		snprintf(err, errlen, "runtime directory '%s' is not private to this user (want 0700)",
		         be->runtime_dir);
		close(dfd);
		return -1;
	}
	return dfd;
}

static int
key_name(const char *env_name, char *name, size_t len, char *err, size_t errlen)
{
	if (!env_name || !*env_name || strchr(env_name, '/') || env_name[0] == '.' ||
	    (size_t)snprintf(name, len, "%s.key", env_name) >= len) {
		snprintf(err, errlen, "invalid environment name '%s' for a runner key",
		         env_name ? env_name : "");
		return -1;
	}
	return 0;
}

/* Read the key from an open key file, checked first. */
static int
read_key(int fd, const char *name, uint8_t key[HSR_KEY_LEN], char *err, size_t errlen)
{
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
	    (sb.st_mode & 077) || sb.st_size != HSR_KEY_LEN) {
		snprintf(err, errlen, "runner key '%s' is not a private %d-byte file of this user; "
		         "remove it and close the session", name, HSR_KEY_LEN);
		return -1;
	}
	if (pread(fd, key, HSR_KEY_LEN, 0) != HSR_KEY_LEN) {
		snprintf(err, errlen, "cannot read runner key '%s': %s", name, strerror(errno));
		return -1;
	}
	return 0;
}

int
hs_runkey_get(struct hs_backend *be, const char *env_name, int persistent,
              uint8_t key[HSR_KEY_LEN], char *err, size_t errlen)
{
	char name[300];
	int dfd, fd, rc = -1;

	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (!persistent) {
		if (hsr_random(key, HSR_KEY_LEN) == 0)
			return 0;
		snprintf(err, errlen, "cannot make a runner key: getrandom: %s", strerror(errno));
		return -1;
	}
	if (key_name(env_name, name, sizeof(name), err, errlen) < 0)
		return -1;
	dfd = open_dir(be, err, errlen);
	if (dfd < 0)
		return -1;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		rc = read_key(fd, name, key, err, errlen);
		close(fd);
		goto out;
	}
	if (errno != ENOENT) {
		snprintf(err, errlen, "cannot open runner key '%s/%s': %s", be->runtime_dir, name,
		         strerror(errno));
		goto out;
	}
	/* New: made under the session lock, so no other hs races us. */
	if (hsr_random(key, HSR_KEY_LEN) < 0) {
		snprintf(err, errlen, "cannot make a runner key: getrandom: %s", strerror(errno));
		goto out;
	}
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, key, HSR_KEY_LEN) != HSR_KEY_LEN || fsync(fd) < 0) {
		snprintf(err, errlen, "cannot write runner key '%s/%s': %s", be->runtime_dir, name,
		         strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlinkat(dfd, name, 0);
		}
		goto out;
	}
	close(fd);
	rc = 0;
out:
	close(dfd);
	return rc;
}

void
hs_runkey_remove(struct hs_backend *be, const char *env_name)
{
	char name[300], err[256];
	if (key_name(env_name, name, sizeof(name), err, sizeof(err)) < 0)
		return;
	int dfd = open_dir(be, err, sizeof(err));
	if (dfd < 0)
		return;
	unlinkat(dfd, name, 0);
	close(dfd);
}
