/* SPDX-License-Identifier: MIT */
/*
 * sifcache.c - the SIF cache of the singularity backend: O_EXCL lock files
 * with owner and stale detection, build to a temporary name and rename,
 * least-recently-used eviction under a size cap tracked in an index file.
 * See sifcache.h for why each piece is shaped the way it is.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hs/backend.h>

#include <hs/hsb.h>
#include "sifcache.h"

#define SC_MAX_ENTRIES 4096

struct sc_entry {
	int64_t used; /* seconds since the epoch of the last use */
	uint64_t size;
	char name[256];
};

static void
sc_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int
hs_sif_check(const char *path)
{
	char buf[HS_SIF_MAGIC_OFF + sizeof(HS_SIF_MAGIC)];
	struct stat sb;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	ssize_t n = -1;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode))
		n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	return n == (ssize_t)sizeof(buf) - 1 &&
	       memcmp(buf + HS_SIF_MAGIC_OFF, HS_SIF_MAGIC, sizeof(HS_SIF_MAGIC) - 1) == 0;
}

/* FNV-1a: a stable name for a source, not a security boundary. */
static uint64_t
sc_hash(const char *s)
{
	uint64_t h = UINT64_C(14695981039346656037);
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= UINT64_C(1099511628211);
	}
	return h;
}

int
hs_sifcache_path(const struct hs_sifcache *c, const char *source, char *out, size_t len)
{
	char readable[49];
	const char *s = strstr(source, "://");
	size_t k = 0;

	for (s = s ? s + 3 : source; *s && k < sizeof(readable) - 1; s++) {
		int ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		         (*s >= '0' && *s <= '9') || *s == '.' || *s == '-';
		readable[k++] = ok ? *s : '_';
	}
	readable[k] = '\0';
	int n = snprintf(out, len, "%s/%s-%016llx.sif", c->dir, readable,
	                 (unsigned long long)sc_hash(source));
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* ---- Lock files: O_EXCL, owner inside, stale detection. ---- */

/* The start time of pid (clock ticks since boot, /proc/PID/stat field 22), or 0. */
static unsigned long long
sc_start_time(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long long st = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* After ") " come fields 3..; the start time is field 22. */
	p++;
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (p)
		st = strtoull(p + 1, NULL, 10);
	return st;
}

static void
sc_owner(char *out, size_t len)
{
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	snprintf(out, len, "%s %d %llu\n", host[0] ? host : "unknown", (int)getpid(),
	         sc_start_time(getpid()));
}

/*
 * Is the lock whose content is owner (as read) stale?  On this host, the
 * owner must be alive with the same start time; from another host only the
 * lock's age counts, since the holder refreshes its mtime while building.
 */
static int
sc_stale(const char *owner, const struct stat *sb, int64_t stale_s)
{
	char host[256] = "", ohost[256] = "";
	int pid = 0;
	unsigned long long start = 0;
	time_t now = time(NULL);

	gethostname(host, sizeof(host) - 1);
	if (sscanf(owner, "%255s %d %llu", ohost, &pid, &start) >= 2 && pid > 0 &&
	    strcmp(ohost, host[0] ? host : "unknown") == 0) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return 1;
		unsigned long long now_start = sc_start_time(pid);
		if (start && now_start && now_start != start)
			return 1; /* the pid was reused */
		return 0;
	}
	return stale_s > 0 && now - sb->st_mtime > stale_s;
}

static int
sc_read_small(const char *path, char *buf, size_t len, struct stat *sb)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = -1;
	if (fstat(fd, sb) == 0 && S_ISREG(sb->st_mode))
		n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/*
 * Break a stale lock: rename it aside, and put it back if what was moved is
 * not the lock judged stale (a new owner took it in between).
 */
static void
sc_break(const char *lock, const char *judged)
{
	char aside[1100], now[512];
	struct stat sb;
	snprintf(aside, sizeof(aside), "%s.broken.%d", lock, (int)getpid());
	if (rename(lock, aside) < 0)
		return;
	if (sc_read_small(aside, now, sizeof(now), &sb) == 0 && strcmp(now, judged) != 0) {
		if (link(aside, lock) < 0 && errno != EEXIST)
			return;
	}
	unlink(aside);
}

/* Take the lock file lock, waiting up to wait_s.  Returns an hs_status. */
static int
sc_lock(const char *lock, int64_t stale_s, int64_t wait_s, const char *what, char *err)
{
	char me[512], owner[512];
	struct stat sb;
	int64_t waited_ms = 0;

	sc_owner(me, sizeof(me));
	for (;;) {
		int fd = open(lock, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			size_t len = strlen(me);
			ssize_t w = write(fd, me, len);
			close(fd);
			if (w != (ssize_t)len) {
				unlink(lock);
				snprintf(err, HS_ERR_MAX, "cannot write the lock '%s'", lock);
				return HS_E_IO;
			}
			return HS_OK;
		}
		if (errno != EEXIST) {
			snprintf(err, HS_ERR_MAX, "cannot create the lock '%s': %s", lock, strerror(errno));
			return errno == EACCES ? HS_E_PERM : HS_E_IO;
		}
		if (sc_read_small(lock, owner, sizeof(owner), &sb) == 0 &&
		    (owner[0] || time(NULL) - sb.st_mtime > 5) && sc_stale(owner, &sb, stale_s)) {
			sc_break(lock, owner);
			continue;
		}
		if (waited_ms >= wait_s * 1000) {
			char *nl = strchr(owner, '\n');
			if (nl)
				*nl = '\0';
			snprintf(err, HS_ERR_MAX,
			         "%s is locked by '%s' (lock '%s'); wait for it, or remove the lock if "
			         "that process is gone", what, owner, lock);
			return HS_E_BUSY;
		}
		sc_sleep_ms(100);
		waited_ms += 100;
	}
}

/* ---- The index: "<last-used seconds> <file name>" per line. ---- */

static int
sc_index_read(const struct hs_sifcache *c, struct sc_entry *e, size_t max, size_t *n)
{
	char path[1100], line[512];
	snprintf(path, sizeof(path), "%s/index", c->dir);
	*n = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -1;
	}
	while (*n < max && fgets(line, sizeof(line), f)) {
		long long used;
		char name[256];
		if (sscanf(line, "%lld %255s", &used, name) != 2 || strchr(name, '/') ||
		    name[0] == '.')
			continue;
		e[*n].used = used;
		e[*n].size = 0;
		snprintf(e[*n].name, sizeof(e[*n].name), "%s", name);
		(*n)++;
	}
	fclose(f);
	return 0;
}

static int
sc_index_write(const struct hs_sifcache *c, const struct sc_entry *e, size_t n, char *err)
{
	char path[1100], tmp[1200];
	snprintf(path, sizeof(path), "%s/index", c->dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, HS_ERR_MAX, "cannot write '%s': %s", tmp, strerror(errno));
		return HS_E_IO;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (e[i].name[0])
			fprintf(f, "%lld %s\n", (long long)e[i].used, e[i].name);
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot replace '%s': %s", path, strerror(errno));
		unlink(tmp);
		return HS_E_IO;
	}
	return HS_OK;
}

static const char *
sc_base(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

static int
sc_cmp_used(const void *a, const void *b)
{
	const struct sc_entry *x = a, *y = b;
	return x->used < y->used ? -1 : x->used > y->used;
}

/*
 * Under the index lock: record that used_path (may be NULL) was used now,
 * adopt cache files the index lost, forget vanished ones, and when above
 * the cap remove the least recently used images (never keep, never one
 * being built).
 */
static int
sc_index_update(const struct hs_sifcache *c, const char *used_path, const char *keep, char *err)
{
	char lock[1100], path[1400];
	struct sc_entry *e = calloc(SC_MAX_ENTRIES, sizeof(*e));
	size_t n = 0;
	int rc;

	if (!e) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	snprintf(lock, sizeof(lock), "%s/index.lock", c->dir);
	rc = sc_lock(lock, 60, 60, "the SIF cache index", err);
	if (rc != HS_OK) {
		free(e);
		return rc;
	}
	if (sc_index_read(c, e, SC_MAX_ENTRIES, &n) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot read the index of '%s': %s", c->dir, strerror(errno));
		rc = HS_E_IO;
		goto out;
	}
	/* Files the index does not know (index lost, older version) count as oldest. */
	DIR *d = opendir(c->dir);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)) && n < SC_MAX_ENTRIES) {
			size_t l = strlen(de->d_name);
			if (l < 5 || strcmp(de->d_name + l - 4, ".sif") != 0 || de->d_name[0] == '.')
				continue;
			size_t i;
			for (i = 0; i < n && strcmp(e[i].name, de->d_name) != 0; i++)
				;
			if (i == n && l < sizeof(e[n].name)) {
				e[n].used = 0;
				snprintf(e[n].name, sizeof(e[n].name), "%s", de->d_name);
				n++;
			}
		}
		closedir(d);
	}
	int found = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		struct stat sb;
		snprintf(path, sizeof(path), "%s/%s", c->dir, e[i].name);
		if (used_path && strcmp(e[i].name, sc_base(used_path)) == 0) {
			e[i].used = time(NULL);
			found = 1;
		}
		if (lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode)) {
			e[i].name[0] = '\0'; /* removed by a cleaner: forget it */
			continue;
		}
		e[i].size = (uint64_t)sb.st_size;
		total += e[i].size;
	}
	if (used_path && !found && n < SC_MAX_ENTRIES) {
		struct stat sb;
		if (lstat(used_path, &sb) == 0) {
			e[n].used = time(NULL);
			e[n].size = (uint64_t)sb.st_size;
			snprintf(e[n].name, sizeof(e[n].name), "%s", sc_base(used_path));
			total += e[n].size;
			n++;
		}
	}
	qsort(e, n, sizeof(*e), sc_cmp_used);
	for (size_t i = 0; c->max_bytes && total > c->max_bytes && i < n; i++) {
		struct stat sb;
		if (!e[i].name[0] || (keep && strcmp(e[i].name, sc_base(keep)) == 0))
			continue;
		snprintf(path, sizeof(path), "%s/%s.lock", c->dir, e[i].name);
		if (lstat(path, &sb) == 0)
			continue; /* being built right now */
		snprintf(path, sizeof(path), "%s/%s", c->dir, e[i].name);
		if (unlink(path) == 0 || errno == ENOENT) {
			total -= e[i].size;
			e[i].name[0] = '\0';
		}
	}
	rc = sc_index_write(c, e, n, err);
out:
	unlink(lock);
	free(e);
	return rc;
}

/* ---- Building. ---- */

/* Run the build in a child, refreshing the lock's mtime while it runs. */
static int
sc_build(const struct hs_sifcache *c, const char *source, const char *path, const char *lock,
         char *err)
{
	char tmp[1400], host[64] = "";
	int status = 0;
	int64_t waited_ms = 0, refresh_ms = 0;

	gethostname(host, sizeof(host) - 1);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%s.%d", path, host, (int)getpid());
	unlink(tmp);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, HS_ERR_MAX, "cannot fork to build '%s': %s", source, strerror(errno));
		return HS_E_IO;
	}
	if (pid == 0) {
		setpgid(0, 0);
		_exit(c->build(c->ctx, source, tmp) & 0xff);
	}
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			snprintf(err, HS_ERR_MAX, "lost the build of '%s': %s", source, strerror(errno));
			return HS_E_INTERNAL;
		}
		if (c->build_s > 0 && waited_ms >= c->build_s * 1000) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			unlink(tmp);
			snprintf(err, HS_ERR_MAX,
			         "building '%s' took longer than %llds; raise singularity.build_timeout",
			         source, (long long)c->build_s);
			return HS_E_TIMEOUT;
		}
		sc_sleep_ms(50);
		waited_ms += 50;
		refresh_ms += 50;
		if (refresh_ms >= 10000) {
			refresh_ms = 0;
			utimensat(AT_FDCWD, lock, NULL, AT_SYMLINK_NOFOLLOW);
		}
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		unlink(tmp);
		snprintf(err, HS_ERR_MAX, "building '%s' failed (%s %d)", source,
		         WIFEXITED(status) ? "exit" : "signal",
		         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return HS_E_IO;
	}
	if (!hs_sif_check(tmp)) {
		unlink(tmp);
		snprintf(err, HS_ERR_MAX, "building '%s' did not produce a SIF file", source);
		return HS_E_PROTOCOL;
	}
	int fd = open(tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	if (rename(tmp, path) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot move the built image to '%s': %s", path,
		         strerror(errno));
		unlink(tmp);
		return HS_E_IO;
	}
	return HS_OK;
}

/* The cache directory, its whole chain checked (hsb_dir_check, hs/hsb.h). */
static int
sc_mkdir(const char *dir, char *err)
{
	return hsb_dir_check(dir, HSB_DIR_CREATE | HSB_DIR_NOWRITE,
	                           "set singularity.cache_dir", err);
}

int
hs_sifcache_get(const struct hs_sifcache *c, const char *source, char *path, size_t len,
                int *built, char *err)
{
	char lock[1400], what[1200];
	int rc;

	*built = 0;
	rc = sc_mkdir(c->dir, err);
	if (rc != HS_OK)
		return rc;
	if (hs_sifcache_path(c, source, path, len) < 0 || strlen(path) + 64 > sizeof(lock)) {
		snprintf(err, HS_ERR_MAX, "the SIF cache path for '%s' is too long", source);
		return HS_E_INVALID;
	}
	if (!hs_sif_check(path)) {
		snprintf(lock, sizeof(lock), "%s.lock", path);
		snprintf(what, sizeof(what), "the build of '%s'", source);
		rc = sc_lock(lock, c->stale_s, c->wait_s, what, err);
		if (rc != HS_OK)
			return rc;
		/* Another builder may have finished while we waited. */
		if (!hs_sif_check(path)) {
			/* A damaged file (not a SIF) is replaced by the rename. */
			rc = sc_build(c, source, path, lock, err);
			*built = rc == HS_OK;
		}
		unlink(lock);
		if (rc != HS_OK)
			return rc;
	}
	return sc_index_update(c, path, path, err);
}
