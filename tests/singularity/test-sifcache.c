/* SPDX-License-Identifier: MIT */
/*
 * test-sifcache.c - the singularity backend's SIF cache, for real: lock
 * files under concurrent builders, a stale lock of a dead process, a
 * foreign lock by age, eviction under the cap in least-recently-used order,
 * rebuild after a cleaner removed or damaged an image, failed builds.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <hs/backend.h>

#include "sifcache.h"

/* What the fake builder does, chosen per test. */
struct fake {
	char counter[1100]; /* one byte appended per build */
	int delay_ms;
	int fail;     /* exit 3 */
	int not_sif;  /* write garbage */
	size_t size;  /* bytes of the image */
};

/* Runs in the cache's forked child: plain system calls only. */
static int
fake_build(void *ctx, const char *source, const char *tmp)
{
	struct fake *f = ctx;
	static char buf[65536];
	(void)source;
	int c = open(f->counter, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (c >= 0) {
		if (write(c, "b", 1) != 1)
			return 9;
		close(c);
	}
	if (f->delay_ms) {
		struct timespec ts = { f->delay_ms / 1000, (f->delay_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (f->fail)
		return 3;
	memset(buf, 'x', sizeof(buf));
	if (!f->not_sif) {
		memcpy(buf, "#!/usr/bin/env run-singularity\n", 31);
		buf[31] = '\0';
		memcpy(buf + HS_SIF_MAGIC_OFF, HS_SIF_MAGIC, sizeof(HS_SIF_MAGIC));
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return 4;
	size_t left = f->size ? f->size : 8192;
	while (left) {
		size_t n = left < sizeof(buf) ? left : sizeof(buf);
		if (write(fd, buf, n) != (ssize_t)n)
			return 5;
		left -= n;
		if (!f->not_sif)
			memset(buf, 'y', 64); /* header only once */
	}
	close(fd);
	return 0;
}

struct fx {
	char dir[256];
	struct fake fake;
	struct hs_sifcache c;
};

static int
setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	snprintf(x->dir, sizeof(x->dir), "/tmp/hs-sifcache-XXXXXX");
	assert_non_null(mkdtemp(x->dir));
	snprintf(x->fake.counter, sizeof(x->fake.counter), "%s/builds", x->dir);
	snprintf(x->c.dir, sizeof(x->c.dir), "%s/cache", x->dir);
	x->c.stale_s = 600;
	x->c.wait_s = 30;
	x->c.build = fake_build;
	x->c.ctx = &x->fake;
	*state = x;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *x = *state;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", x->dir);
	assert_int_equal(system(cmd), 0);
	free(x);
	return 0;
}

static long
builds(struct fx *x)
{
	struct stat sb;
	return stat(x->fake.counter, &sb) == 0 ? (long)sb.st_size : 0;
}

static int
get(struct fx *x, const char *src, char *path, int *built, char *err)
{
	return hs_sifcache_get(&x->c, src, path, 1400, built, err);
}

static void
test_check(void **state)
{
	struct fx *x = *state;
	char p[512];
	snprintf(p, sizeof(p), "%s/a", x->dir);
	assert_int_equal(hs_sif_check(p), 0); /* missing */
	FILE *f = fopen(p, "w");
	fputs("#!/usr/bin/env run-singularity\n", f);
	fputc('\0', f);
	fputs("SIF_MAGIC", f);
	fclose(f);
	assert_int_equal(hs_sif_check(p), 1);
	f = fopen(p, "w");
	fputs("#!/bin/sh\necho not a sif at all, but long enough to read\n", f);
	fclose(f);
	assert_int_equal(hs_sif_check(p), 0);
	assert_int_equal(hs_sif_check(x->dir), 0); /* a directory */
}

static void
test_build_once_then_reuse(void **state)
{
	struct fx *x = *state;
	char path[1400], err[HS_ERR_MAX] = "";
	int built = -1;
	assert_int_equal(get(x, "docker://busybox:1", path, &built, err), HS_OK);
	assert_int_equal(built, 1);
	assert_int_equal(hs_sif_check(path), 1);
	assert_non_null(strstr(path, "/cache/busybox_1-"));
	assert_int_equal(get(x, "docker://busybox:1", path, &built, err), HS_OK);
	assert_int_equal(built, 0);
	assert_int_equal(builds(x), 1);
	/* No temporary or lock file is left behind. */
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "ls '%s/cache' | grep -q -e '\\.tmp\\.' -e '\\.sif\\.lock'", x->dir);
	assert_int_not_equal(system(cmd), 0);
}

static void
test_rebuild_after_cleaner(void **state)
{
	struct fx *x = *state;
	char path[1400], err[HS_ERR_MAX] = "";
	int built;
	assert_int_equal(get(x, "docker://alpine", path, &built, err), HS_OK);
	assert_int_equal(unlink(path), 0); /* a scratch cleaner */
	assert_int_equal(get(x, "docker://alpine", path, &built, err), HS_OK);
	assert_int_equal(built, 1);
	assert_int_equal(hs_sif_check(path), 1);
	/* Damaged (truncated to zero by a cleaner, or garbage): rebuilt too. */
	assert_int_equal(truncate(path, 0), 0);
	assert_int_equal(get(x, "docker://alpine", path, &built, err), HS_OK);
	assert_int_equal(built, 1);
	assert_int_equal(builds(x), 3);
}

static void
test_concurrent_builders(void **state)
{
	struct fx *x = *state;
	enum { N = 6 };
	pid_t kids[N];
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/cache", x->dir);
	mkdir(dir, 0700);
	x->fake.delay_ms = 300;
	for (int i = 0; i < N; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			char path[1400], err[HS_ERR_MAX] = "";
			int built;
			int rc = get(x, "docker://same", path, &built, err);
			_exit(rc == HS_OK && hs_sif_check(path) ? 0 : 1);
		}
	}
	for (int i = 0; i < N; i++) {
		int st;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	assert_int_equal(builds(x), 1); /* exactly one of them built */
}

static void
test_stale_lock_dead_owner(void **state)
{
	struct fx *x = *state;
	char path[1400], lock[1500], host[256] = "", err[HS_ERR_MAX] = "";
	int built;
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	mkdir(x->c.dir, 0700);
	assert_int_equal(hs_sifcache_path(&x->c, "docker://stale", path, sizeof(path)), 0);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	gethostname(host, sizeof(host) - 1);
	FILE *f = fopen(lock, "w");
	fprintf(f, "%s %d 12345\n", host, (int)dead);
	fclose(f);
	x->c.wait_s = 2;
	assert_int_equal(get(x, "docker://stale", path, &built, err), HS_OK);
	assert_int_equal(built, 1);
	assert_int_equal(access(lock, F_OK), -1);
}

static void
test_foreign_lock_busy_then_stale(void **state)
{
	struct fx *x = *state;
	char path[1400], lock[1500], err[HS_ERR_MAX] = "";
	int built;
	mkdir(x->c.dir, 0700);
	assert_int_equal(hs_sifcache_path(&x->c, "docker://foreign", path, sizeof(path)), 0);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	FILE *f = fopen(lock, "w");
	fprintf(f, "othernode.example 4242 99\n");
	fclose(f);
	/* Fresh, from another host: we cannot tell it is dead, so we wait, then give up. */
	x->c.wait_s = 1;
	x->c.stale_s = 60;
	assert_int_equal(get(x, "docker://foreign", path, &built, err), HS_E_BUSY);
	assert_non_null(strstr(err, "othernode.example 4242"));
	assert_non_null(strstr(err, lock));
	/* Not refreshed for longer than stale_s: broken. */
	struct timespec old[2] = { { time(NULL) - 120, 0 }, { time(NULL) - 120, 0 } };
	assert_int_equal(utimensat(AT_FDCWD, lock, old, 0), 0);
	assert_int_equal(get(x, "docker://foreign", path, &built, err), HS_OK);
	assert_int_equal(built, 1);
}

static int
exists(const char *p)
{
	return access(p, F_OK) == 0;
}

static void
test_evict_lru_under_cap(void **state)
{
	struct fx *x = *state;
	char a[1400], b[1400], c[1400], d[1400], err[HS_ERR_MAX] = "";
	int built;
	x->fake.size = 100000;
	x->c.max_bytes = 250000; /* room for two */
	assert_int_equal(get(x, "docker://a", a, &built, err), HS_OK);
	sleep(1); /* the index keeps seconds */
	assert_int_equal(get(x, "docker://b", b, &built, err), HS_OK);
	sleep(1);
	assert_int_equal(get(x, "docker://c", c, &built, err), HS_OK);
	assert_false(exists(a)); /* least recently used */
	assert_true(exists(b));
	assert_true(exists(c));
	sleep(1);
	/* Use b again: now c is the least recently used. */
	assert_int_equal(get(x, "docker://b", b, &built, err), HS_OK);
	assert_int_equal(built, 0);
	sleep(1);
	assert_int_equal(get(x, "docker://d", d, &built, err), HS_OK);
	assert_true(exists(b));
	assert_false(exists(c));
	assert_true(exists(d));
	/* The index, not atime, holds the order: it names exactly the kept images. */
	char idx[1400], line[512];
	int lines = 0;
	snprintf(idx, sizeof(idx), "%s/index", x->c.dir);
	FILE *f = fopen(idx, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		lines++;
		assert_true(strstr(line, strrchr(b, '/') + 1) || strstr(line, strrchr(d, '/') + 1));
	}
	fclose(f);
	assert_int_equal(lines, 2);
	/* A single image above the cap is still kept: it is the one in use. */
	x->c.max_bytes = 1000;
	assert_int_equal(get(x, "docker://d", d, &built, err), HS_OK);
	assert_true(exists(d));
	assert_false(exists(b));
}

static void
test_failed_builds(void **state)
{
	struct fx *x = *state;
	char path[1400], err[HS_ERR_MAX] = "", cmd[600];
	int built;
	x->fake.fail = 1;
	assert_int_equal(get(x, "docker://broken", path, &built, err), HS_E_IO);
	assert_non_null(strstr(err, "building 'docker://broken' failed (exit 3)"));
	x->fake.fail = 0;
	x->fake.not_sif = 1;
	assert_int_equal(get(x, "docker://broken", path, &built, err), HS_E_PROTOCOL);
	assert_non_null(strstr(err, "did not produce a SIF"));
	assert_false(exists(path));
	snprintf(cmd, sizeof(cmd), "ls -A '%s/cache' | grep -q -e tmp -e lock", x->dir);
	assert_int_not_equal(system(cmd), 0);
	/* A build that hangs is killed at build_s. */
	x->fake.not_sif = 0;
	x->fake.delay_ms = 5000;
	x->c.build_s = 1;
	assert_int_equal(get(x, "docker://slow", path, &built, err), HS_E_TIMEOUT);
	assert_false(exists(path));
}

static void
test_cache_dir_checked(void **state)
{
	struct fx *x = *state;
	char path[1400], err[HS_ERR_MAX] = "";
	int built;
	assert_int_equal(mkdir(x->c.dir, 0777), 0);
	assert_int_equal(chmod(x->c.dir, 0777), 0);
	assert_int_equal(get(x, "docker://x", path, &built, err), HS_E_PERM);
	assert_non_null(strstr(err, "cache' is writable by others (mode 0777); chmod go-w it or "
	                            "set singularity.cache_dir"));
	/* The whole chain counts: a private cache below a directory others can write. */
	assert_int_equal(chmod(x->c.dir, 0700), 0);
	assert_int_equal(chmod(x->dir, 0777), 0);
	err[0] = '\0';
	assert_int_equal(get(x, "docker://x", path, &built, err), HS_E_PERM);
	assert_non_null(strstr(err, "is writable by others (mode 0777)"));
	assert_null(strstr(err, "cache'"));
	assert_int_equal(chmod(x->dir, 0700), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_build_once_then_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rebuild_after_cleaner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_builders, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_lock_dead_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_lock_busy_then_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evict_lru_under_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_builds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_dir_checked, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
