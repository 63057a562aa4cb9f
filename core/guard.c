/* SPDX-License-Identifier: MIT */
/*
 * guard.c - hs's own files, put back after a command changed them
 * (see guard.h).
 *
 * A root is one of hs's directories or files.  Entries are kept in walk
 * order (a directory before what it holds), so restoring them in order
 * recreates a removed directory before its files.  An entry whose lstat
 * identity (device, inode, type, mode, owner, size, mtime, ctime) has not
 * moved is unchanged: ctime cannot be set back by an unprivileged process.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/guard.h"
#include "core/config/hsconf.h"
#include "core/safety/audit.h"

enum {
	G_RECURSE = 1,      /* walk subdirectories */
	G_REMOVE_ADDED = 2, /* anything new in it is removed */
	G_REMOVE_SO = 4,    /* a new *.so in it is removed (plugin dirs) */
	G_SNAP_ONLY = 8,    /* only shell state counts (the runtime dir): snapshots, and
	                       the session shell's files its bash sources (sh.*) */
	G_NOCOPY = 16,      /* identity only, no content kept (plugins) */
	G_APPEND = 32,      /* a file that only grew was appended to by hs (audit log) */
	G_RESTORE = 64,     /* what was removed is recreated (else a removal is taken as
	                       it is: hs itself closes sessions while others run) */
};

#define MAX_ROOTS 24
#define MAX_ENTS 8192
#define MAX_DEPTH 8
#define COPY_MAX (256 * 1024)
#define COPY_BUDGET ((size_t)16 << 20)

struct ent {
	char *path;
	struct stat st;       /* st_mode 0: absent */
	unsigned char *data;  /* a regular file's content, when kept */
	size_t len;
	int copied;
	char *link;           /* a symlink's target */
	size_t root;
};

struct root {
	char path[PATH_MAX];
	int flags;
};

struct hs_guard {
	pthread_mutex_t mu;
	struct root roots[MAX_ROOTS];
	size_t n_roots;
	struct ent *ents;
	size_t n, cap;
	size_t copied_bytes;
	int ready;
	char broken[700];
	/* The state directories (the snapshot's) of sessions with a command in
	 * flight: their own hs and runner write them while it runs, so another
	 * session's check leaves them. */
	char *busy[64];
	size_t n_busy;
};

static void
ent_clear(struct hs_guard *g, struct ent *e)
{
	if (e->copied)
		g->copied_bytes -= e->len;
	free(e->data);
	free(e->link);
	e->data = NULL;
	e->link = NULL;
	e->len = 0;
	e->copied = 0;
}

static int
read_all(int fd, unsigned char *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t r = read(fd, buf + off, len - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		off += (size_t)r;
	}
	return 0;
}

/* Record what e->path is now (identity, and content or target when small). */
static void
take(struct hs_guard *g, struct ent *e)
{
	int flags = g->roots[e->root].flags;

	ent_clear(g, e);
	if (lstat(e->path, &e->st) < 0) {
		memset(&e->st, 0, sizeof(e->st));
		return;
	}
	if (S_ISLNK(e->st.st_mode)) {
		char t[PATH_MAX];
		ssize_t n = readlink(e->path, t, sizeof(t) - 1);
		if (n >= 0) {
			t[n] = '\0';
			e->link = strdup(t);
		}
		return;
	}
	if (!S_ISREG(e->st.st_mode) || (flags & G_NOCOPY) || e->st.st_size > COPY_MAX ||
	    g->copied_bytes + (size_t)e->st.st_size > COPY_BUDGET)
		return;
	int fd = open(e->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat fst;
	if (fd < 0)
		return;
	if (fstat(fd, &fst) == 0 && fst.st_ino == e->st.st_ino && fst.st_dev == e->st.st_dev) {
		size_t len = (size_t)fst.st_size;
		e->data = malloc(len ? len : 1);
		if (e->data && read_all(fd, e->data, len) == 0) {
			e->len = len;
			e->copied = 1;
			g->copied_bytes += len;
		} else {
			free(e->data);
			e->data = NULL;
		}
	}
	close(fd);
}

static struct ent *
find(struct hs_guard *g, const char *path)
{
	for (size_t k = 0; k < g->n; k++)
		if (strcmp(g->ents[k].path, path) == 0)
			return &g->ents[k];
	return NULL;
}

static struct ent *
add(struct hs_guard *g, const char *path, size_t root)
{
	if (g->n == MAX_ENTS)
		return NULL;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 64;
		struct ent *ne = realloc(g->ents, cap * sizeof(*ne));
		if (!ne)
			return NULL;
		g->ents = ne;
		g->cap = cap;
	}
	struct ent *e = &g->ents[g->n];
	memset(e, 0, sizeof(*e));
	if (!(e->path = strdup(path)))
		return NULL;
	e->root = root;
	g->n++;
	take(g, e);
	return e;
}

/* Is a child named name (of type mode) one the root keeps? */
static int
wanted(int flags, const char *name, mode_t mode)
{
	if (flags & G_SNAP_ONLY)
		return S_ISDIR(mode) ||
		       (S_ISREG(mode) && (strcmp(name, "shell.snap") == 0 || strncmp(name, "sh.", 3) == 0));
	return 1;
}

static void
scan(struct hs_guard *g, const char *dir, size_t root, int depth)
{
	int flags = g->roots[root].flags;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	char path[PATH_MAX];

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path) ||
		    lstat(path, &st) < 0 || !wanted(flags, de->d_name, st.st_mode) || find(g, path))
			continue;
		struct ent *e = add(g, path, root);
		if (e && S_ISDIR(e->st.st_mode) && (flags & G_RECURSE) && depth < MAX_DEPTH)
			scan(g, path, root, depth + 1);
	}
	closedir(d);
}

static void
add_root(struct hs_guard *g, const char *path, int flags)
{
	if (!path || path[0] != '/' || g->n_roots == MAX_ROOTS)
		return;
	size_t l = strlen(path);
	/* A root inside an earlier one is already covered. */
	for (size_t k = 0; k < g->n_roots; k++) {
		size_t rl = strlen(g->roots[k].path);
		if (strncmp(g->roots[k].path, path, rl) == 0 && (path[rl] == '/' || path[rl] == '\0'))
			return;
	}
	while (l > 1 && path[l - 1] == '/')
		l--;
	struct root *r = &g->roots[g->n_roots++];
	snprintf(r->path, sizeof(r->path), "%.*s", (int)l, path);
	r->flags = flags;
}

static void
build_roots(struct hs_guard *g, struct hs_core *c)
{
	char p[PATH_MAX];
	const char *const *dirs = NULL;
	size_t n = 0;

	add_root(g, c->paths.config, G_RECURSE | G_REMOVE_ADDED | G_RESTORE);
	if (c->extra_config[0])
		add_root(g, c->extra_config, G_RESTORE);
	snprintf(p, sizeof(p), "%s", hs_core_sysconfdir());
	add_root(g, p, G_RECURSE | G_REMOVE_ADDED | G_RESTORE);
	if (c->paths.in_build_tree)
		snprintf(p, sizeof(p), "%s/policy", HS_SRCDIR);
	else
		snprintf(p, sizeof(p), "%s/policy", HS_DATADIR);
	add_root(g, p, G_RECURSE | G_REMOVE_ADDED | G_RESTORE);
	if (hs_conf_strings(c->conf, "policy_dirs", &dirs, &n) == 0)
		for (size_t k = 0; k < n; k++)
			add_root(g, dirs[k], G_RECURSE | G_REMOVE_ADDED | G_RESTORE);
	for (size_t k = 0; k < c->n_plugin_dirs; k++)
		add_root(g, c->plugin_dirs[k], G_REMOVE_SO | G_NOCOPY);
	add_root(g, c->paths.state, G_RECURSE | G_APPEND);
	add_root(g, c->paths.runtime, G_RECURSE | G_SNAP_ONLY);
}

static struct hs_guard *
guard_get(struct hs_core *c)
{
	if (!c->guard) {
		struct hs_guard *g = calloc(1, sizeof(*g));
		if (!g)
			return NULL;
		pthread_mutex_init(&g->mu, NULL);
		build_roots(g, c);
		c->guard = g;
	}
	return c->guard;
}

static void
baseline(struct hs_guard *g)
{
	for (size_t k = 0; k < g->n_roots; k++) {
		struct ent *e = add(g, g->roots[k].path, k);
		if (e && S_ISDIR(e->st.st_mode) && g->roots[k].flags & (G_RECURSE | G_REMOVE_SO))
			scan(g, e->path, k, 0);
	}
	g->ready = 1;
}

static void
note(struct hs_guard_report *r, const char *path)
{
	if (r->restored < HS_GUARD_SHOWN)
		snprintf(r->paths[r->restored], sizeof(r->paths[0]), "%s", path);
	r->restored++;
}

/* Remove path, a directory with all it holds included.  0 or -1. */
static int
remove_tree(const char *path, int depth)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
	if (depth > 32)
		return -1;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	char child[PATH_MAX];
	int rc = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(child, sizeof(child), "%s/%s", path, de->d_name) >= sizeof(child) ||
		    remove_tree(child, depth + 1) < 0)
			rc = -1;
	}
	closedir(d);
	if (rmdir(path) < 0 && errno != ENOENT)
		rc = -1;
	return rc;
}

/* Put a regular file's kept content (or a symlink) back at e->path.  0 or -1. */
static int
put_back(const struct ent *e)
{
	char tmp[PATH_MAX + 16];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.hs-guard", e->path);
	if (remove_tree(tmp, 0) < 0)
		return -1;
	if (S_ISLNK(e->st.st_mode)) {
		if (!e->link || symlink(e->link, tmp) < 0)
			return -1;
	} else {
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return -1;
		size_t off = 0;
		while (off < e->len) {
			ssize_t w = write(fd, e->data + off, e->len - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		if (off < e->len || fchmod(fd, e->st.st_mode & 07777) < 0) {
			close(fd);
			unlink(tmp);
			return -1;
		}
		close(fd);
	}
	/* rename() does not replace a directory with a file: clear the way first. */
	struct stat cur;
	if (lstat(e->path, &cur) == 0 && S_ISDIR(cur.st_mode) && remove_tree(e->path, 0) < 0) {
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, e->path) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int
same_id(const struct stat *a, const struct stat *b)
{
	if ((a->st_mode & S_IFMT) != (b->st_mode & S_IFMT) || a->st_mode != b->st_mode ||
	    a->st_uid != b->st_uid)
		return 0;
	/* A directory's times move whenever an entry is added: its entries are checked instead. */
	if (S_ISDIR(a->st_mode))
		return 1;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Does the file at e->path still hold the kept content (plus, with append, more)? */
static int
same_content(const struct ent *e, const struct stat *cur, int append)
{
	if (!e->copied || cur->st_ino != e->st.st_ino || (cur->st_mode != e->st.st_mode) ||
	    (append ? (size_t)cur->st_size < e->len : (size_t)cur->st_size != e->len))
		return 0;
	int fd = open(e->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	unsigned char *buf = malloc(e->len ? e->len : 1);
	int same = buf && read_all(fd, buf, e->len) == 0 && memcmp(buf, e->data, e->len) == 0;
	free(buf);
	close(fd);
	return same;
}

/* Bring one entry back to what was kept.  0 (r counts a change) or -1. */
static int
check_ent(struct hs_guard *g, struct ent *e, struct hs_guard_report *r)
{
	int flags = g->roots[e->root].flags;
	struct stat cur;
	int present = lstat(e->path, &cur) == 0;

	if (!e->st.st_mode) {
		/* Absent when recorded: new in a directory hs owns outright, it goes. */
		if (!present || !(flags & G_REMOVE_ADDED))
			return 0;
		if (remove_tree(e->path, 0) < 0)
			return -1;
		note(r, e->path);
		return 0;
	}
	if (present && same_id(&e->st, &cur))
		return 0;
	if (!present && !(flags & G_RESTORE)) {
		take(g, e); /* removed: a session closed, say */
		return 0;
	}
	if (S_ISDIR(e->st.st_mode) && !(flags & G_RESTORE) && !S_ISDIR(cur.st_mode)) {
		/* A directory of sessions swapped for a link or file: it goes, nothing comes back. */
		if (remove_tree(e->path, 0) < 0)
			return -1;
		note(r, e->path);
		take(g, e);
		return 0;
	}
	if (present && S_ISREG(cur.st_mode) && S_ISREG(e->st.st_mode) &&
	    same_content(e, &cur, (flags & G_APPEND) != 0)) {
		take(g, e); /* touched, or appended to by hs (the audit log) */
		return 0;
	}
	if (present && S_ISREG(cur.st_mode) && !e->copied && (flags & G_APPEND) &&
	    cur.st_ino == e->st.st_ino && cur.st_size >= e->st.st_size && cur.st_mode == e->st.st_mode) {
		take(g, e); /* a big log that grew */
		return 0;
	}
	if (S_ISDIR(e->st.st_mode)) {
		if (present && !S_ISDIR(cur.st_mode) && remove_tree(e->path, 0) < 0)
			return -1;
		if ((!present || !S_ISDIR(cur.st_mode)) && mkdir(e->path, 0700) < 0 && errno != EEXIST)
			return -1;
		if (chmod(e->path, e->st.st_mode & 07777) < 0)
			return -1;
	} else if (S_ISLNK(e->st.st_mode) || e->copied) {
		if (put_back(e) < 0)
			return -1;
	} else {
		return -1; /* too big to keep, or a socket: cannot be put back */
	}
	note(r, e->path);
	take(g, e);
	return 0;
}

/* Remove what was added to directories hs owns outright. */
static int
remove_added(struct hs_guard *g, const char *dir, size_t root, struct hs_guard_report *r)
{
	int flags = g->roots[root].flags;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	char path[PATH_MAX];
	int rc = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((flags & G_REMOVE_SO) && !(l > 3 && !strcmp(de->d_name + l - 3, ".so")))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path) ||
		    find(g, path))
			continue;
		if (remove_tree(path, 0) < 0)
			rc = -1;
		else
			note(r, path);
	}
	closedir(d);
	return rc;
}

static int
is_busy(const struct hs_guard *g, const char *path)
{
	for (size_t k = 0; k < g->n_busy; k++) {
		size_t n = strlen(g->busy[k]);
		if (strncmp(g->busy[k], path, n) == 0 && path[n] == '/')
			return 1;
	}
	return 0;
}

static int
check_all(struct hs_guard *g, struct hs_guard_report *r, char *err, size_t errlen)
{
	const char *failed = NULL;

	for (size_t k = 0; k < g->n && !failed; k++)
		if (!is_busy(g, g->ents[k].path) && check_ent(g, &g->ents[k], r) < 0)
			failed = g->ents[k].path;
	for (size_t k = 0; k < g->n && !failed; k++) {
		struct ent *e = &g->ents[k];
		if (S_ISDIR(e->st.st_mode) && (g->roots[e->root].flags & (G_REMOVE_ADDED | G_REMOVE_SO)) &&
		    remove_added(g, e->path, e->root, r) < 0)
			failed = e->path;
	}
	if (failed) {
		snprintf(g->broken, sizeof(g->broken),
		         "hs's own file '%s' was changed by a command and could not be put back; "
		         "check it by hand, then start hs again", failed);
		snprintf(err, errlen, "%s", g->broken);
		return -1;
	}
	return 0;
}

static int
guard_check(struct hs_core *c, int first, struct hs_guard_report *r, char *err, size_t errlen)
{
	struct hs_guard *g = guard_get(c);
	int rc = 0;

	memset(r, 0, sizeof(*r));
	if (!g) {
		snprintf(err, errlen, "cannot guard hs's own files: out of memory");
		return -1;
	}
	pthread_mutex_lock(&g->mu);
	if (g->broken[0]) {
		snprintf(err, errlen, "%s", g->broken);
		rc = -1;
	} else if (first && !g->ready) {
		baseline(g);
	} else if (g->ready) {
		rc = check_all(g, r, err, errlen);
	}
	pthread_mutex_unlock(&g->mu);
	return rc;
}

int
hs_guard_before(struct hs_core *c, struct hs_guard_report *r, char *err, size_t errlen)
{
	return guard_check(c, 1, r, err, errlen);
}

int
hs_guard_after(struct hs_core *c, struct hs_guard_report *r, char *err, size_t errlen)
{
	return guard_check(c, 0, r, err, errlen);
}

static ssize_t
root_of(const struct hs_guard *g, const char *path)
{
	for (size_t k = 0; k < g->n_roots; k++) {
		size_t rl = strlen(g->roots[k].path);
		if (strncmp(g->roots[k].path, path, rl) == 0 && (path[rl] == '/' || path[rl] == '\0'))
			return (ssize_t)k;
	}
	return -1;
}

void
hs_guard_rebase(struct hs_core *c, const char *path)
{
	struct hs_guard *g = c->guard;

	if (!g || !path)
		return;
	pthread_mutex_lock(&g->mu);
	if (g->ready) {
		struct ent *e = find(g, path);
		ssize_t root = root_of(g, path);
		if (e)
			take(g, e);
		else if (root >= 0 && (e = add(g, path, (size_t)root)) && S_ISDIR(e->st.st_mode))
			scan(g, path, (size_t)root, 0);
	}
	pthread_mutex_unlock(&g->mu);
}

/* Takes what a session's own command changed in its state directory dir
 * as it now is. */
static void
rebase_dir(struct hs_core *c, const char *dir)
{
	struct hs_guard *g = c->guard;
	size_t n = strlen(dir);

	if (!g)
		return;
	pthread_mutex_lock(&g->mu);
	ssize_t root = g->ready ? root_of(g, dir) : -1;
	if (root >= 0) {
		for (size_t k = 0; k < g->n; k++)
			if (strncmp(g->ents[k].path, dir, n) == 0 && g->ents[k].path[n] == '/')
				take(g, &g->ents[k]);
		if (!find(g, dir))
			add(g, dir, (size_t)root);
		scan(g, dir, (size_t)root, 1);
	}
	pthread_mutex_unlock(&g->mu);
}

int
hs_guard_protects(struct hs_core *c, const char *path)
{
	struct hs_guard *g = guard_get(c);
	char dir[PATH_MAX], real[PATH_MAX], full[PATH_MAX * 2];

	if (!g || !path || path[0] != '/')
		return 1;
	/* The file may not exist yet: resolve its directory, keep its name. */
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	const char *base = path + (slash - dir) + 1;
	*slash = '\0';
	if (!realpath(dir[0] ? dir : "/", real))
		snprintf(real, sizeof(real), "%s", dir[0] ? dir : "/");
	snprintf(full, sizeof(full), "%s/%s", strcmp(real, "/") ? real : "", base);
	for (size_t k = 0; k < g->n_roots; k++) {
		char rr[PATH_MAX];
		const char *r = realpath(g->roots[k].path, rr) ? rr : g->roots[k].path;
		size_t rl = strlen(r);
		if (strncmp(r, full, rl) == 0 && (full[rl] == '/' || full[rl] == '\0'))
			return 1;
	}
	return root_of(g, path) >= 0;
}

/* One audit line saying what was put back. */
static void
audit_restored(struct hs_core *c, const char *session, const char *backend,
               const struct hs_guard_report *r)
{
	static const char *const rules[] = { "hs.self-modify" };
	char what[HS_GUARD_SHOWN * 520 + 96];
	size_t off = (size_t)snprintf(what, sizeof(what), "(hs guard) put back %u of hs's own files:",
	                              r->restored);
	for (unsigned k = 0; k < r->restored && k < HS_GUARD_SHOWN && off < sizeof(what); k++)
		off += (size_t)snprintf(what + off, sizeof(what) - off, " %s", r->paths[k]);
	struct hs_audit_record ar = {
		.ts_ms = (int64_t)time(NULL) * 1000,
		.session = session,
		.backend = backend,
		.command = what,
		.verdict = "deny",
		.rules = rules,
		.n_rules = 1,
		.decision = "restored",
		.approver = "guard",
	};
	char err[256];
	if (hs_core_audit(c, &ar, err, sizeof(err)) < 0)
		hs_warn("audit log: %s", err);
}

/* Mark (busy 1) or unmark a session's state directory (the snapshot's) as
 * written by its own hs and runner. */
static void
set_busy(struct hs_core *c, const char *snapshot_path, int busy)
{
	char snapshot[PATH_MAX] = "";
	if (snapshot_path) {
		snprintf(snapshot, sizeof(snapshot), "%s", snapshot_path);
		char *sl = strrchr(snapshot, '/');
		if (sl && sl != snapshot)
			*sl = '\0';
	}
	struct hs_guard *g = c->guard;

	if (!g || !*snapshot)
		return;
	pthread_mutex_lock(&g->mu);
	for (size_t k = 0; k < g->n_busy; k++)
		if (strcmp(g->busy[k], snapshot) == 0) {
			if (!busy) {
				free(g->busy[k]);
				g->busy[k] = g->busy[--g->n_busy];
			}
			busy = 0; /* already there, or removed */
			break;
		}
	if (busy && g->n_busy < sizeof(g->busy) / sizeof(g->busy[0]) &&
	    (g->busy[g->n_busy] = strdup(snapshot)))
		g->n_busy++;
	pthread_mutex_unlock(&g->mu);
}

int
hs_guard_begin(struct hs_core *c, const char *session, const char *backend,
               const char *snapshot, char *err, size_t errlen)
{
	struct hs_guard_report r;

	if (hs_guard_before(c, &r, err, errlen) < 0)
		return -1;
	set_busy(c, snapshot, 1);
	if (r.restored) {
		audit_restored(c, session, backend, &r);
		hs_warn("put back %u of hs's own files changed since the last command (first: %s)",
		        r.restored, r.paths[0]);
	}
	return 0;
}

int
hs_guard_end(struct hs_core *c, const char *session, const char *backend,
             const char *snapshot, int written, unsigned *restored, char *err, size_t errlen)
{
	struct hs_guard_report r;

	*restored = 0;
	set_busy(c, snapshot, 0);
	if (written)
		hs_guard_rebase(c, snapshot);
	/* The session shell's files its runner and bash wrote meanwhile. */
	if (snapshot) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", snapshot);
		char *sl = strrchr(dir, '/');
		if (sl && sl != dir) {
			*sl = '\0';
			rebase_dir(c, dir);
		}
	}
	int rc = hs_guard_after(c, &r, err, errlen);
	*restored = r.restored;
	if (r.restored)
		audit_restored(c, session, backend, &r);
	return rc;
}

void
hs_guard_free(struct hs_core *c)
{
	struct hs_guard *g = c->guard;

	if (!g)
		return;
	for (size_t k = 0; k < g->n; k++) {
		ent_clear(g, &g->ents[k]);
		free(g->ents[k].path);
	}
	free(g->ents);
	for (size_t k = 0; k < g->n_busy; k++)
		free(g->busy[k]);
	pthread_mutex_destroy(&g->mu);
	free(g);
	c->guard = NULL;
}
