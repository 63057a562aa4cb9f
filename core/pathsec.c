/* SPDX-License-Identifier: MIT */
/*
 * pathsec.c - ownership and mode checks for trusted paths.  The directory
 * chains are checked by runner/dirchain.c, which hs-runner shares.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pathsec.h"
#include "runner/dirchain.h"

int
hs_pathsec_check_stat(const struct stat *st, const char *path, char *err, size_t errlen)
{
	uid_t me = geteuid();

	if (st->st_uid != 0 && st->st_uid != me) {
		snprintf(err, errlen, "'%s' is owned by uid %u (neither root nor the user)",
		         path, (unsigned)st->st_uid);
		return -1;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		if (S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX) && st->st_uid == 0)
			return 0;
		snprintf(err, errlen, "'%s' is writable by %s (mode %04o)", path,
		         (st->st_mode & S_IWOTH) ? "others" : "its group",
		         (unsigned)(st->st_mode & 07777));
		return -1;
	}
	return 0;
}

/*
 * The absolute directory part of path (the current directory for a bare
 * name) in dir, and a pointer to its last component in base.
 */
static int
split_path(const char *path, char *dir, size_t len, const char **base, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	char cwd[PATH_MAX];
	int n;

	*base = slash ? slash + 1 : path;
	if (path[0] == '/') {
		n = snprintf(dir, len, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	} else {
		if (!getcwd(cwd, sizeof(cwd))) {
			snprintf(err, errlen, "cannot resolve the current directory: %s", strerror(errno));
			return -1;
		}
		n = slash ? snprintf(dir, len, "%s/%.*s", cwd, (int)(slash - path), path)
		          : snprintf(dir, len, "%s", cwd);
	}
	if (n < 0 || (size_t)n >= len) {
		snprintf(err, errlen, "'%s': path too long", path);
		return -1;
	}
	return 0;
}

/* The descriptor of path's directory, its whole chain trusted (dirchain.h). */
static int
parent_open(const char *path, const char **base, char *err, size_t errlen)
{
	char dir[PATH_MAX];

	if (split_path(path, dir, sizeof(dir), base, err, errlen) < 0)
		return -1;
	return hs_dirchain_open(dir, HS_DIRCHAIN_TRUSTED, NULL, err, errlen);
}

int
hs_pathsec_check_parents(const char *path, char *err, size_t errlen)
{
	const char *base;
	int fd = parent_open(path, &base, err, errlen);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int
hs_pathsec_openat(int dirfd, const char *name, const char *path, int flags, char *err,
                  size_t errlen)
{
	struct stat st;
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY), e;

	if (fd < 0) {
		e = errno;
		if (e == ELOOP)
			snprintf(err, errlen, "'%s' is a symbolic link", path);
		else
			snprintf(err, errlen, "cannot open '%s': %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot stat '%s': %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "'%s' is not a regular file", path);
		goto fail;
	}
	if (hs_pathsec_check_stat(&st, path, err, errlen) < 0)
		goto fail;
	return fd;
fail:
	close(fd);
	errno = EPERM;
	return -1;
}

int
hs_pathsec_open(const char *path, int flags, char *err, size_t errlen)
{
	const char *base;
	int dfd = parent_open(path, &base, err, errlen), fd;

	if (dfd < 0)
		return -1;
	/* The checked directory's descriptor, so a swapped parent cannot matter. */
	fd = hs_pathsec_openat(dfd, base, path, flags, err, errlen);
	close(dfd);
	return fd;
}

int
hs_pathsec_dir_open(const char *path, const char *hint, char *err, size_t errlen)
{
	return hs_dirchain_open(path, HS_DIRCHAIN_CREATE, hint, err, errlen);
}

int
hs_pathsec_write_at(int dirfd, const char *dir, const char *name, const void *buf, size_t len,
                    mode_t mode, char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	const char *p = buf, *sep = dir ? "/" : "";
	int fd, n;

	if (!dir)
		dir = "";
	n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", name, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		snprintf(err, errlen, "'%s%s%s': path too long", dir, sep, name);
		return -1;
	}
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create '%s%s%s': %s", dir, sep, tmp, strerror(errno));
		return -1;
	}
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			snprintf(err, errlen, "cannot write '%s%s%s': %s", dir, sep, tmp, strerror(errno));
			goto fail;
		}
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd) < 0) {
		snprintf(err, errlen, "cannot sync '%s%s%s': %s", dir, sep, tmp, strerror(errno));
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		snprintf(err, errlen, "cannot write '%s%s%s': %s", dir, sep, tmp, strerror(errno));
		goto fail;
	}
	fd = -1;
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		snprintf(err, errlen, "cannot rename '%s%s%s' to '%s': %s", dir, sep, tmp, name,
		         strerror(errno));
		goto fail;
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	return -1;
}
