/*
 * pathsec.c - ownership and mode checks for trusted paths.
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

int
hs_pathsec_check_parents(const char *path, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	struct stat st;
	char *slash;

	if (path[0] != '/') {
		if (!realpath(".", buf)) {
			snprintf(err, errlen, "cannot resolve the current directory: %s", strerror(errno));
			return -1;
		}
		size_t n = strlen(buf);
		if (n + 1 + strlen(path) >= sizeof(buf)) {
			snprintf(err, errlen, "'%s': path too long", path);
			return -1;
		}
		buf[n] = '/';
		strcpy(buf + n + 1, path);
	} else {
		if (strlen(path) >= sizeof(buf)) {
			snprintf(err, errlen, "'%s': path too long", path);
			return -1;
		}
		strcpy(buf, path);
	}
	for (;;) {
		slash = strrchr(buf, '/');
		if (!slash)
			return 0;
		if (slash == buf)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (lstat(buf, &st) < 0) {
			snprintf(err, errlen, "cannot stat '%s': %s", buf, strerror(errno));
			return -1;
		}
		if (S_ISLNK(st.st_mode)) {
			/* A symlinked parent is trusted only if its target chain is. */
			char real[PATH_MAX];
			if (!realpath(buf, real)) {
				snprintf(err, errlen, "cannot resolve '%s': %s", buf, strerror(errno));
				return -1;
			}
			if (st.st_uid != 0 && st.st_uid != geteuid()) {
				snprintf(err, errlen, "'%s' is a symbolic link owned by uid %u", buf,
				         (unsigned)st.st_uid);
				return -1;
			}
			if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
				snprintf(err, errlen, "'%s' is not a directory", real);
				return -1;
			}
			if (hs_pathsec_check_stat(&st, real, err, errlen) < 0)
				return -1;
			if (strcmp(real, "/") != 0 &&
			    hs_pathsec_check_parents(real, err, errlen) < 0)
				return -1;
			return 0;
		}
		if (!S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "'%s' is not a directory", buf);
			return -1;
		}
		if (hs_pathsec_check_stat(&st, buf, err, errlen) < 0)
			return -1;
		if (strcmp(buf, "/") == 0)
			return 0;
	}
}

int
hs_pathsec_open(const char *path, int flags, char *err, size_t errlen)
{
	struct stat st;
	int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		if (errno == ELOOP)
			snprintf(err, errlen, "'%s' is a symbolic link", path);
		else
			snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
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
	if (hs_pathsec_check_parents(path, err, errlen) < 0)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

int
hs_pathsec_private_dir(const char *path, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	struct stat st;

	if (strlen(path) >= sizeof(buf) || path[0] != '/') {
		snprintf(err, errlen, "'%s': not an absolute path of sane length", path);
		return -1;
	}
	strcpy(buf, path);
	/* Create missing ancestors with 0700 too: they are ours. */
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create '%s': %s", buf, strerror(errno));
			return -1;
		}
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create '%s': %s", buf, strerror(errno));
		return -1;
	}
	if (lstat(buf, &st) < 0) {
		snprintf(err, errlen, "cannot stat '%s': %s", buf, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "'%s' is not a directory", buf);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "'%s' is owned by uid %u, not the user", buf, (unsigned)st.st_uid);
		return -1;
	}
	if ((st.st_mode & 07777) != 0700) {
		snprintf(err, errlen, "'%s' has mode %04o (must be 0700)", buf,
		         (unsigned)(st.st_mode & 07777));
		return -1;
	}
	return 0;
}

int
hs_pathsec_write_atomic(const char *path, const void *buf, size_t len, mode_t mode,
                        char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	const char *p = buf;
	int fd, n;

	n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		snprintf(err, errlen, "'%s': path too long", path);
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create '%s': %s", tmp, strerror(errno));
		return -1;
	}
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			snprintf(err, errlen, "cannot write '%s': %s", tmp, strerror(errno));
			goto fail;
		}
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd) < 0) {
		snprintf(err, errlen, "cannot sync '%s': %s", tmp, strerror(errno));
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		snprintf(err, errlen, "cannot write '%s': %s", tmp, strerror(errno));
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		snprintf(err, errlen, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
		goto fail;
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return -1;
}
