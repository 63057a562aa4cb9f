/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * allowlist.c - load, check and atomically rewrite the "always" list.
 *
 * Format: one entry per line, "RULE-ID<TAB>ARGV", with backslash, tab and
 * newline in ARGV written as \\, \t and \n; lines starting with # are
 * comments.  A new file is written next to the old one (O_EXCL|O_NOFOLLOW,
 * 0600), synced and renamed over it, so a crash leaves either list whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/safety/allowlist.h"

struct entry {
	char *rule;
	char *argv;
};

struct hs_allowlist {
	char *path;
	struct entry *e;
	size_t n, cap;
};

static int
push(struct hs_allowlist *a, const char *rule, size_t rl, const char *argv, size_t al)
{
	struct entry *ne;

	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 16;
		ne = realloc(a->e, a->cap * sizeof(*a->e));
		if (!ne)
			return -1;
		a->e = ne;
	}
	a->e[a->n].rule = strndup(rule, rl);
	a->e[a->n].argv = strndup(argv, al);
	if (!a->e[a->n].rule || !a->e[a->n].argv) {
		free(a->e[a->n].rule);
		free(a->e[a->n].argv);
		return -1;
	}
	a->n++;
	return 0;
}

/* Undo the escaping in place; returns the new length. */
static size_t
unescape(char *s, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 1 < n) {
			i++;
			s[o++] = s[i] == 't' ? '\t' : s[i] == 'n' ? '\n' : s[i];
		} else {
			s[o++] = s[i];
		}
	}
	return o;
}

int
hs_allowlist_load(struct hs_allowlist **out, const char *path, char *err, size_t errlen)
{
	struct hs_allowlist *a = calloc(1, sizeof(*a));
	struct stat st;
	FILE *fp = NULL;
	char *line = NULL, *tab;
	size_t cap = 0;
	ssize_t len;
	int fd = -1, rc = -1;

	*out = NULL;
	if (!a || !(a->path = strdup(path))) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT) {
			rc = 0;
			goto out;
		}
		snprintf(err, errlen, "cannot open allow list '%s': %s", path, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "refusing allow list '%s': not a regular file", path);
		goto out;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "refusing allow list '%s': owned by uid %u, not the user", path, (unsigned)st.st_uid);
		goto out;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "refusing allow list '%s': writable by group or others", path);
		goto out;
	}
	fp = fdopen(fd, "r");
	if (!fp) {
		snprintf(err, errlen, "cannot read allow list '%s': %s", path, strerror(errno));
		goto out;
	}
	fd = -1;
	while ((len = getline(&line, &cap, fp)) >= 0) {
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (!len || line[0] == '#')
			continue;
		tab = memchr(line, '\t', (size_t)len);
		if (!tab)
			continue;
		if (push(a, line, (size_t)(tab - line), tab + 1, unescape(tab + 1, (size_t)(line + len - tab - 1)))) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	free(line);
	if (fp)
		fclose(fp);
	if (fd >= 0)
		close(fd);
	if (rc == 0) {
		*out = a;
		a = NULL;
	}
	hs_allowlist_free(a);
	return rc;
}

int
hs_allowlist_check(const struct hs_allowlist *a, const char *rule_id, const char *argv_norm)
{
	size_t k;

	if (!a)
		return 0;
	for (k = 0; k < a->n; k++)
		if (!strcmp(a->e[k].rule, rule_id) && !strcmp(a->e[k].argv, argv_norm))
			return 1;
	return 0;
}

size_t
hs_allowlist_count(const struct hs_allowlist *a)
{
	return a ? a->n : 0;
}

static int
write_all(int fd, const char *s, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, s, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
write_escaped(int fd, const char *s)
{
	char buf[1024];
	size_t o = 0;

	for (; *s; s++) {
		if (o + 3 > sizeof(buf)) {
			if (write_all(fd, buf, o))
				return -1;
			o = 0;
		}
		if (*s == '\\' || *s == '\t' || *s == '\n') {
			buf[o++] = '\\';
			buf[o++] = *s == '\t' ? 't' : *s == '\n' ? 'n' : '\\';
		} else {
			buf[o++] = *s;
		}
	}
	return write_all(fd, buf, o);
}

static int
save(struct hs_allowlist *a, char *err, size_t errlen)
{
	char tmp[4200], dir[4096], *slash;
	struct timespec ts;
	size_t k;
	int fd = -1, dfd, rc = -1;

	snprintf(dir, sizeof(dir), "%s", a->path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(tmp, sizeof(tmp), "%s/.allowlist.%ld.%ld.tmp", dir, (long)getpid(), (long)ts.tv_nsec);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "cannot write allow list '%s': %s", a->path, strerror(errno));
		return -1;
	}
	if (write_all(fd, "# hs allow list: rule id <TAB> normalised argv\n", 47))
		goto out;
	for (k = 0; k < a->n; k++)
		if (write_all(fd, a->e[k].rule, strlen(a->e[k].rule)) || write_all(fd, "\t", 1) ||
		    write_escaped(fd, a->e[k].argv) || write_all(fd, "\n", 1))
			goto out;
	if (fsync(fd))
		goto out;
	if (close(fd)) {
		fd = -1;
		goto out;
	}
	fd = -1;
	if (rename(tmp, a->path))
		goto out;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	rc = 0;
out:
	if (rc) {
		snprintf(err, errlen, "cannot write allow list '%s': %s", a->path, strerror(errno));
		if (fd >= 0)
			close(fd);
		unlink(tmp);
	}
	return rc;
}

int
hs_allowlist_add(struct hs_allowlist *a, const char *rule_id, const char *argv_norm, char *err, size_t errlen)
{
	if (strchr(rule_id, '\t') || strchr(rule_id, '\n')) {
		snprintf(err, errlen, "bad rule id '%s'", rule_id);
		return -1;
	}
	if (hs_allowlist_check(a, rule_id, argv_norm))
		return 0;
	if (push(a, rule_id, strlen(rule_id), argv_norm, strlen(argv_norm))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (save(a, err, errlen)) {
		a->n--;
		free(a->e[a->n].rule);
		free(a->e[a->n].argv);
		return -1;
	}
	return 0;
}

void
hs_allowlist_free(struct hs_allowlist *a)
{
	size_t k;

	if (!a)
		return;
	for (k = 0; k < a->n; k++) {
		free(a->e[k].rule);
		free(a->e[k].argv);
	}
	free(a->e);
	free(a->path);
	free(a);
}
