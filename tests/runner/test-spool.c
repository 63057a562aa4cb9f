/* SPDX-License-Identifier: MIT */
/*
 * The runner's spool (runner/spool.c): newest bytes in a memory ring, what
 * leaves it unacknowledged (or kept) in the file, offsets exact across the
 * boundary, resend after a rewind, kept output read back by range and
 * trimmed honestly, head and tail bounds.
 */
#include <config.h>

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "runner.h"

void hsr_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

#define TOTAL (6u * 1024u * 1024u)

static uint8_t *data;
static int dirfd_;
static char dir[64];

static int setup(void **state)
{
	(void)state;
	data = malloc(TOTAL);
	for (size_t i = 0; i < TOTAL; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 13);
	snprintf(dir, sizeof(dir), "/tmp/hs-spool.XXXXXX");
	assert_non_null(mkdtemp(dir));
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY);
	return dirfd_ < 0;
}

static int teardown(void **state)
{
	(void)state;
	close(dirfd_);
	rmdir(dir);
	free(data);
	return 0;
}

/* Appends data[0, TOTAL) in uneven chunks, calling between(i) after each. */
static void feed(struct hsr_spool *sp, void (*between)(struct hsr_spool *, void *), void *ctx)
{
	size_t off = 0, k = 1;

	while (off < TOTAL) {
		size_t n = (k * 7919) % 300000 + 1;

		if (n > TOTAL - off)
			n = TOTAL - off;
		assert_int_equal(hsr_spool_append(sp, dirfd_, data + off, n), 0);
		off += n;
		k++;
		if (between)
			between(sp, ctx);
	}
}

struct taker {
	uint64_t got;     /* bytes taken and checked */
	uint64_t lag;     /* acknowledge only up to got - lag */
};

static void take_some(struct hsr_spool *sp, void *ctx)
{
	struct taker *t = ctx;
	static uint8_t buf[100000];
	uint64_t off;
	ssize_t n;

	while ((n = hsr_spool_take(sp, buf, sizeof(buf), &off)) > 0) {
		assert_true(off == t->got);
		assert_memory_equal(buf, data + off, (size_t)n);
		t->got += (uint64_t)n;
	}
	assert_true(n == 0);
	if (t->got > t->lag)
		hsr_spool_ack(sp, t->got - t->lag);
}

/* Lossless: acknowledgements 3 MiB behind push bytes out of the ring into
 * the file; every byte is taken once, in order, whichever holds it. */
static void test_lossless_ring_and_file(void **state)
{
	struct hsr_spool sp;
	struct taker t = { 0, 3u * 1024u * 1024u };

	(void)state;
	hsr_spool_init(&sp, 0, 0);
	feed(&sp, take_some, &t);
	take_some(&sp, &t);
	assert_true(t.got == TOTAL);
	assert_true(sp.fd >= 0); /* the lag made it use the file */
	/* A new attach resends from the acknowledged offset, from file and ring. */
	hsr_spool_rewind(&sp);
	t.got = sp.acked;
	t.lag = 0;
	take_some(&sp, &t);
	assert_true(t.got == TOTAL);
	assert_true(sp.dropped == 0);
	hsr_spool_close(&sp);
}

/* Acknowledged in time, nothing touches the file. */
static void test_lossless_in_time(void **state)
{
	struct hsr_spool sp;
	struct taker t = { 0, 0 };

	(void)state;
	hsr_spool_init(&sp, 0, 0);
	feed(&sp, take_some, &t);
	assert_true(t.got == TOTAL);
	assert_int_equal(sp.fd, -1);
	hsr_spool_close(&sp);
}

/* Kept output: every range reads back exactly after the stream ended;
 * trimming frees the oldest bytes after the head, and a read there starts
 * at the next byte still held. */
static void test_keep_read_and_trim(void **state)
{
	struct hsr_spool sp;
	struct taker t = { 0, 0 };
	static uint8_t buf[200000];
	uint64_t at;

	(void)state;
	/* A tail larger than any chunk: the taker keeps up, nothing is skipped. */
	hsr_spool_init(&sp, 1000, 400000);
	sp.keep = 1;
	feed(&sp, take_some, &t);
	assert_true(hsr_spool_stored(&sp) == TOTAL);
	for (uint64_t off = 0; off < TOTAL; off += 123457) {
		ssize_t n = hsr_spool_read(&sp, off, buf, sizeof(buf), &at);

		assert_true(n > 0);
		assert_true(at == off);
		assert_memory_equal(buf, data + off, (size_t)n);
	}
	assert_true(hsr_spool_trim(&sp, 2u * 1024u * 1024u) == 2u * 1024u * 1024u);
	assert_true(hsr_spool_stored(&sp) == TOTAL - 2u * 1024u * 1024u);
	assert_true(hsr_spool_read(&sp, 10, buf, 100, &at) == 100 && at == 10);
	assert_memory_equal(buf, data + 10, 100);
	assert_true(hsr_spool_read(&sp, 5000, buf, 100, &at) == 100);
	assert_true(at == 1000 + 2u * 1024u * 1024u);
	assert_memory_equal(buf, data + at, 100);
	hsr_spool_close(&sp);
}

/* Bounded without a reader: only the head and the tail are sent, the rest
 * is counted as dropped. */
static void test_bounded(void **state)
{
	struct hsr_spool sp;
	static uint8_t buf[100000];
	uint64_t off, got = 0;
	ssize_t n;

	(void)state;
	hsr_spool_init(&sp, 5000, 7000);
	feed(&sp, NULL, NULL);
	while ((n = hsr_spool_take(&sp, buf, sizeof(buf), &off)) > 0) {
		assert_memory_equal(buf, data + off, (size_t)n);
		assert_true(off < 5000 || off >= TOTAL - 7000);
		got += (uint64_t)n;
	}
	assert_true(got == 12000);
	assert_true(sp.dropped == TOTAL - 12000);
	hsr_spool_close(&sp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lossless_ring_and_file),
		cmocka_unit_test(test_lossless_in_time),
		cmocka_unit_test(test_keep_read_and_trim),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
