/* SPDX-License-Identifier: MIT */
/* dirchain.c - the whole-chain directory check (see dirchain.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_PATH */
#endif
#include "dirchain.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* As many links as the kernel follows in one lookup (MAXSYMLINKS). */
#define DC_MAX_LINKS 40

struct dc_walk {
	int flags;
	const char *hint;
	char *err;
	size_t errlen;
	uid_t me;
	char shown[PATH_MAX]; /* the real path walked so far, for messages */
};

static void dc_refuse(struct dc_walk *w, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "'SHOWN' WHAT; FIX or HINT". */
static void dc_refuse(struct dc_walk *w, const char *fix, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(w->err, w->errlen, "'%s' %s; %s%s%s", w->shown[0] ? w->shown : "/", what, fix,
		 w->hint ? " or " : "", w->hint ? w->hint : "");
}

static const char *dc_who(mode_t mode)
{
	return (mode & S_IWOTH) ? "others" : "its group";
}

/* The first line of a small /proc file, or "" when it cannot be read. */
static void dc_read_line(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
}

/*
 * Whether uid is the overflow uid of a user namespace other than the
 * initial one: an owner the namespace does not map, such as root's image
 * and system directories inside an unprivileged container (Apptainer,
 * hs --isolate).  Nobody inside can act as that owner, so such an ancestor
 * counts as root's.  In the initial namespace the same number is a real
 * user (nobody) and is not accepted.
 */
static int dc_unmapped(uid_t uid)
{
	unsigned long a, b, c;
	char buf[128];

	dc_read_line("/proc/sys/kernel/overflowuid", buf, sizeof(buf));
	if (!buf[0] || strtoul(buf, NULL, 10) != (unsigned long)uid)
		return 0;
	dc_read_line("/proc/self/uid_map", buf, sizeof(buf));
	if (sscanf(buf, "%lu %lu %lu", &a, &b, &c) != 3)
		return 0;
	return !(a == 0 && b == 0 && c == 4294967295ul);
}

/* Root's, ours, or (inside a user namespace) an unmapped owner's. */
static int dc_owner_ok(const struct dc_walk *w, uid_t uid)
{
	return uid == 0 || uid == w->me || dc_unmapped(uid);
}

/* An ancestor (or a TRUSTED leaf): root's or ours, not writable by others
 * unless sticky.  Every entry walked is checked this way, so below a sticky
 * directory the next entry is always root's or ours. */
static int dc_check_ancestor(struct dc_walk *w, const struct stat *st)
{
	if (!dc_owner_ok(w, st->st_uid)) {
		dc_refuse(w, "remove it", "is owned by uid %u, not you or root",
			  (unsigned)st->st_uid);
		return -1;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
		dc_refuse(w, "chmod go-w it", "is writable by %s (mode %04o)", dc_who(st->st_mode),
			  (unsigned)(st->st_mode & 07777));
		return -1;
	}
	return 0;
}

static int dc_check_leaf(struct dc_walk *w, const struct stat *st)
{
	if (w->flags & HS_DIRCHAIN_TRUSTED)
		return dc_check_ancestor(w, st);
	if (st->st_uid != w->me) {
		dc_refuse(w, "remove it", "is owned by uid %u, not you", (unsigned)st->st_uid);
		return -1;
	}
	if (w->flags & HS_DIRCHAIN_NOWRITE) {
		if (st->st_mode & (S_IWGRP | S_IWOTH)) {
			dc_refuse(w, "chmod go-w it", "is writable by %s (mode %04o)",
				  dc_who(st->st_mode), (unsigned)(st->st_mode & 07777));
			return -1;
		}
	} else if ((st->st_mode & 07777) != 0700) {
		dc_refuse(w, "chmod 700 it", "has mode %04o, not 0700", (unsigned)(st->st_mode & 07777));
		return -1;
	}
	return 0;
}

/* Append "/name" to shown, or drop its last component for "..". */
static void dc_shown_step(struct dc_walk *w, const char *name)
{
	size_t n = strlen(w->shown);

	if (strcmp(name, "..") == 0) {
		char *s = strrchr(w->shown, '/');
		if (s)
			*s = '\0';
		return;
	}
	snprintf(w->shown + n, sizeof(w->shown) - n, "/%s", name);
}

/* The next component of *rest (skipping "/" and "."), NUL-terminated in
 * place; NULL when none is left. */
static char *dc_next(char **rest)
{
	char *p = *rest, *c;

	for (;;) {
		while (*p == '/')
			p++;
		if (!*p) {
			*rest = p;
			return NULL;
		}
		c = p;
		while (*p && *p != '/')
			p++;
		if (*p)
			*p++ = '\0';
		if (strcmp(c, ".") != 0)
			break;
	}
	*rest = p;
	return c;
}

/* Whether rest holds another component. */
static int dc_more(const char *rest)
{
	for (;;) {
		while (*rest == '/')
			rest++;
		if (!*rest)
			return 0;
		if (rest[0] == '.' && (rest[1] == '/' || rest[1] == '\0')) {
			rest++;
			continue;
		}
		return 1;
	}
}

static int dc_open_root(struct dc_walk *w)
{
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	w->shown[0] = '\0';
	if (fd < 0)
		snprintf(w->err, w->errlen, "cannot open '/': %s", strerror(errno));
	return fd;
}

/* Open name below cur without following a link; make it first when asked. */
static int dc_open_entry(struct dc_walk *w, int cur, const char *name, int last)
{
	int fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT && (w->flags & HS_DIRCHAIN_CREATE) &&
	    strcmp(name, "..") != 0) {
		if (mkdirat(cur, name, 0700) < 0 && errno != EEXIST) {
			dc_shown_step(w, name);
			snprintf(w->err, w->errlen, "cannot create '%s': %s", w->shown, strerror(errno));
			return -1;
		}
		fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	dc_shown_step(w, name);
	if (fd < 0)
		snprintf(w->err, w->errlen, "cannot open %s'%s': %s", last ? "" : "directory ",
			 w->shown, strerror(errno));
	return fd;
}

/* Follow the link fd (an ancestor named shown): returns the directory to go
 * on from (cur, or "/" for an absolute target) and prepends the target to
 * rest (held in buf). */
static int dc_follow(struct dc_walk *w, int fd, const struct stat *st, int cur, char *buf,
		     char **rest)
{
	char target[PATH_MAX], joined[PATH_MAX];
	ssize_t n;
	int len;

	if (!dc_owner_ok(w, st->st_uid)) {
		dc_refuse(w, "remove it", "is a symbolic link owned by uid %u, not you or root",
			  (unsigned)st->st_uid);
		return -1;
	}
	n = readlinkat(fd, "", target, sizeof(target) - 1);
	if (n <= 0) {
		snprintf(w->err, w->errlen, "cannot read link '%s': %s", w->shown,
			 n < 0 ? strerror(errno) : "empty");
		return -1;
	}
	target[n] = '\0';
	len = snprintf(joined, sizeof(joined), "%s/%s", target, *rest);
	if (len < 0 || (size_t)len >= sizeof(joined)) {
		snprintf(w->err, w->errlen, "'%s': path too long after its link", w->shown);
		return -1;
	}
	memcpy(buf, joined, (size_t)len + 1);
	*rest = buf;
	dc_shown_step(w, "..");
	if (target[0] == '/') {
		int root = dc_open_root(w);
		if (root >= 0)
			close(cur);
		return root;
	}
	return cur;
}

int hs_dirchain_open(const char *path, int flags, const char *hint, char *err, size_t errlen)
{
	struct dc_walk w = { .flags = flags, .hint = hint, .err = err, .errlen = errlen,
			     .me = geteuid() };
	char buf[PATH_MAX], *rest = buf, *name;
	struct stat st;
	int cur, fd, links = 0, any = 0, out;

	if (!path || path[0] != '/' || strlen(path) >= sizeof(buf)) {
		snprintf(err, errlen, "'%s': not an absolute path of sane length", path ? path : "");
		return -1;
	}
	memcpy(buf, path, strlen(path) + 1);
	if ((cur = dc_open_root(&w)) < 0)
		return -1;
	if (fstat(cur, &st) < 0 || dc_check_ancestor(&w, &st) < 0)
		goto fail;
	while ((name = dc_next(&rest))) {
		int last = !dc_more(rest);

		any = 1;
		if ((fd = dc_open_entry(&w, cur, name, last)) < 0)
			goto fail;
		if (fstat(fd, &st) < 0) {
			snprintf(err, errlen, "cannot stat '%s': %s", w.shown, strerror(errno));
			close(fd);
			goto fail;
		}
		if (S_ISLNK(st.st_mode)) {
			int next = -1;

			if (last)
				dc_refuse(&w, "remove it", "is a symbolic link");
			else if (++links > DC_MAX_LINKS)
				snprintf(err, errlen, "'%s': too many symbolic links", w.shown);
			else
				next = dc_follow(&w, fd, &st, cur, buf, &rest);
			close(fd);
			if (next < 0)
				goto fail;
			/* "/" is where an absolute target starts: check it again. */
			if (next != cur && (fstat(next, &st) < 0 || dc_check_ancestor(&w, &st) < 0)) {
				cur = next;
				goto fail;
			}
			cur = next;
			continue;
		}
		close(cur);
		cur = fd;
		if (!S_ISDIR(st.st_mode)) {
			dc_refuse(&w, "remove it", "is not a directory");
			goto fail;
		}
		if ((last ? dc_check_leaf(&w, &st) : dc_check_ancestor(&w, &st)) < 0)
			goto fail;
	}
	if (!any && dc_check_leaf(&w, &st) < 0)
		goto fail;
	out = openat(cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* A trusted directory we may search but not read (mode 0711) is
	 * still one to open files in: its O_PATH descriptor does that. */
	if (out < 0 && errno == EACCES && (flags & HS_DIRCHAIN_TRUSTED))
		return cur;
	if (out < 0)
		snprintf(err, errlen, "cannot open '%s': %s", w.shown[0] ? w.shown : "/",
			 strerror(errno));
	close(cur);
	return out;
fail:
	close(cur);
	return -1;
}
