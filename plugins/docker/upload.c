/* SPDX-License-Identifier: MIT */
/*
 * upload.c - puts hs-runner into a container's root filesystem through the
 * archive API, before the container starts: /tmp is a noexec tmpfs, so the
 * runner lives in the container's own layer at /.hs/hs-runner, next to its
 * private runtime directory /.hs/run.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <hs/backend.h>

#include "plugins/docker/docker.h"

static int
tar_write_cb(struct archive *ar, void *ctx, const void *buf, size_t len)
{
	(void)ar;
	return dk_buf_add(ctx, buf, len) < 0 ? -1 : (int)len;
}

static ssize_t
tar_write_shim(struct archive *ar, void *ctx, const void *buf, size_t len)
{
	return tar_write_cb(ar, ctx, buf, len);
}

static int
tar_entry(struct archive *ar, const char *name, mode_t type, mode_t perm, int64_t uid,
          int64_t gid, const void *data, size_t len)
{
	struct archive_entry *e = archive_entry_new();
	int r;
	if (!e)
		return -1;
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, perm);
	archive_entry_set_uid(e, uid);
	archive_entry_set_gid(e, gid);
	archive_entry_set_size(e, (la_int64_t)len);
	archive_entry_set_mtime(e, time(NULL), 0);
	r = archive_write_header(ar, e);
	if (r == ARCHIVE_OK && len && archive_write_data(ar, data, len) != (la_ssize_t)len)
		r = ARCHIVE_FATAL;
	archive_entry_free(e);
	return r == ARCHIVE_OK ? 0 : -1;
}

int32_t
dk_upload_runner(struct dk_env *env, const char *cid, const char *dest, char *err)
{
	const char *rp = env->st->host->runner_path;
	struct dk_buf tar = { 0 }, img = { 0 };
	struct archive *ar = NULL;
	char path[512];
	long http;
	int32_t st = HS_E_IO;
	int fd = -1;

	fd = open(rp, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, HS_ERR_MAX, "cannot open hs-runner '%s': %s", rp, strerror(errno));
		return HS_E_UNAVAILABLE;
	}
	for (;;) {
		char b[65536];
		ssize_t n = read(fd, b, sizeof(b));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, HS_ERR_MAX, "cannot read hs-runner '%s': %s", rp, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if (dk_buf_add(&img, b, (size_t)n) < 0) {
			snprintf(err, HS_ERR_MAX, "out of memory");
			st = HS_E_NOMEM;
			goto out;
		}
	}
	ar = archive_write_new();
	if (!ar || archive_write_set_format_pax_restricted(ar) != ARCHIVE_OK ||
	    archive_write_open(ar, &tar, NULL, tar_write_shim, NULL) != ARCHIVE_OK) {
		snprintf(err, HS_ERR_MAX, "cannot build the runner archive: %s",
		         ar ? archive_error_string(ar) : "out of memory");
		goto out;
	}
	/* The runtime directory belongs to the user the container runs as. */
	if (tar_entry(ar, ".hs", AE_IFDIR, 0755, 0, 0, NULL, 0) < 0 ||
	    tar_entry(ar, dest + 1, AE_IFREG, 0755, 0, 0, img.p, img.n) < 0 ||
	    tar_entry(ar, ".hs/run", AE_IFDIR, 0700, env->uid, env->gid, NULL, 0) < 0 ||
	    archive_write_close(ar) != ARCHIVE_OK) {
		snprintf(err, HS_ERR_MAX, "cannot build the runner archive: %s", archive_error_string(ar));
		goto out;
	}
	snprintf(path, sizeof(path), "/containers/%s/archive?path=/", cid);
	struct dk_buf ans = { 0 };
	st = dk_api_call(&env->api, "PUT", path, "application/x-tar", tar.p, tar.n, &http, &ans, err);
	if (st == HS_OK && http >= 300) {
		char m[300];
		dk_api_message(&ans, m, sizeof(m));
		snprintf(err, HS_ERR_MAX, "cannot upload hs-runner into the container: %s", m);
		st = HS_E_IO;
	}
	dk_buf_free(&ans);
out:
	if (ar)
		archive_write_free(ar);
	if (fd >= 0)
		close(fd);
	dk_buf_free(&tar);
	dk_buf_free(&img);
	return st;
}

/* One line of passwd: "name:x:uid:gid:..."; returns 1 when it is user's. */
static int
passwd_line(const char *line, size_t len, const char *user, int64_t *uid, int64_t *gid)
{
	size_t ul = strlen(user);
	char buf[512];
	if (len >= sizeof(buf) || len <= ul || memcmp(line, user, ul) != 0 || line[ul] != ':')
		return 0;
	memcpy(buf, line, len);
	buf[len] = '\0';
	long long u, g;
	if (sscanf(buf + ul + 1, "%*[^:]:%lld:%lld", &u, &g) != 2 || u < 0 || g < 0)
		return 0;
	*uid = u;
	*gid = g;
	return 1;
}

int32_t
dk_resolve_user(struct dk_env *env, const char *cid, char *err)
{
	char path[512], user[128];
	struct dk_buf tar = { 0 };
	long http;
	int32_t st;
	int found = 0;

	snprintf(user, sizeof(user), "%s", env->user);
	char *colon = strchr(user, ':');
	if (colon)
		*colon = '\0';
	snprintf(path, sizeof(path), "/containers/%s/archive?path=/etc/passwd", cid);
	st = dk_api_call(&env->api, "GET", path, NULL, NULL, 0, &http, &tar, err);
	if (st != HS_OK)
		return st;
	if (http == 200) {
		struct archive *ar = archive_read_new();
		struct archive_entry *e;
		archive_read_support_format_tar(ar);
		if (archive_read_open_memory(ar, tar.p, tar.n) == ARCHIVE_OK &&
		    archive_read_next_header(ar, &e) == ARCHIVE_OK) {
			struct dk_buf pw = { 0 };
			char b[8192];
			la_ssize_t n;
			while ((n = archive_read_data(ar, b, sizeof(b))) > 0 && pw.n < (1u << 20))
				dk_buf_add(&pw, b, (size_t)n);
			for (size_t i = 0; pw.p && i < pw.n && !found;) {
				char *nl = memchr(pw.p + i, '\n', pw.n - i);
				size_t len = nl ? (size_t)(nl - (pw.p + i)) : pw.n - i;
				found = passwd_line(pw.p + i, len, user, &env->uid, &env->gid);
				i += len + 1;
			}
			dk_buf_free(&pw);
		}
		archive_read_free(ar);
	}
	dk_buf_free(&tar);
	if (!found) {
		snprintf(err, HS_ERR_MAX, "the image's user '%s' is not in its /etc/passwd: set a numeric "
		         "USER in the image, or docker.runner = false", user);
		return HS_E_INVALID;
	}
	return HS_OK;
}
