/* SPDX-License-Identifier: MIT */
/* Unit tests of the docker attach-stream demultiplexer, with the fuzz target on seeds. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugins/docker/demux.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct got {
	char out[4096], err[4096];
	size_t nout, nerr;
	int calls;
};

static int
cb(void *ctx, int stream, const uint8_t *buf, size_t len)
{
	struct got *g = ctx;
	g->calls++;
	if (stream == 1) {
		memcpy(g->out + g->nout, buf, len);
		g->nout += len;
	} else if (stream == 2) {
		memcpy(g->err + g->nerr, buf, len);
		g->nerr += len;
	}
	return 0;
}

static size_t
frame(uint8_t *p, int stream, const char *s)
{
	size_t n = strlen(s);
	p[0] = (uint8_t)stream;
	p[1] = p[2] = p[3] = 0;
	p[4] = (uint8_t)(n >> 24);
	p[5] = (uint8_t)(n >> 16);
	p[6] = (uint8_t)(n >> 8);
	p[7] = (uint8_t)n;
	memcpy(p + 8, s, n);
	return n + 8;
}

static size_t
sample(uint8_t *buf)
{
	size_t n = 0;
	n += frame(buf + n, 1, "hello ");
	n += frame(buf + n, 2, "warn\n");
	n += frame(buf + n, 1, "");
	n += frame(buf + n, 1, "world\n");
	return n;
}

static void
test_whole(void **state)
{
	uint8_t buf[256];
	size_t n = sample(buf);
	struct dk_demux d;
	struct got g = { 0 };
	(void)state;
	dk_demux_init(&d);
	assert_int_equal(dk_demux_feed(&d, buf, n, cb, &g), 0);
	assert_int_equal(g.nout, 12);
	assert_memory_equal(g.out, "hello world\n", 12);
	assert_int_equal(g.nerr, 5);
	assert_memory_equal(g.err, "warn\n", 5);
	assert_true(dk_demux_idle(&d));
}

/* Every split point, byte by byte included, gives the same payload. */
static void
test_split(void **state)
{
	uint8_t buf[256];
	size_t n = sample(buf);
	(void)state;
	for (size_t cut = 0; cut <= n; cut++) {
		struct dk_demux d;
		struct got g = { 0 };
		dk_demux_init(&d);
		assert_int_equal(dk_demux_feed(&d, buf, cut, cb, &g), 0);
		assert_int_equal(dk_demux_feed(&d, buf + cut, n - cut, cb, &g), 0);
		assert_int_equal(g.nout, 12);
		assert_memory_equal(g.out, "hello world\n", 12);
		assert_int_equal(g.nerr, 5);
	}
	struct dk_demux d;
	struct got g = { 0 };
	dk_demux_init(&d);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(dk_demux_feed(&d, buf + i, 1, cb, &g), 0);
	assert_memory_equal(g.out, "hello world\n", 12);
}

static void
test_malformed(void **state)
{
	uint8_t buf[64];
	struct dk_demux d;
	struct got g = { 0 };
	(void)state;
	size_t n = frame(buf, 1, "ok");
	buf[n] = 3; /* no stream 3 */
	memset(buf + n + 1, 0, 7);
	dk_demux_init(&d);
	assert_int_equal(dk_demux_feed(&d, buf, n + 8, cb, &g), -1);
	assert_int_equal(g.nout, 2);
	/* Once broken, it stays broken. */
	assert_int_equal(dk_demux_feed(&d, buf, n, cb, &g), -1);
	assert_false(dk_demux_idle(&d));

	frame(buf, 1, "x");
	buf[2] = 1; /* padding must be zero */
	dk_demux_init(&d);
	assert_int_equal(dk_demux_feed(&d, buf, 9, cb, &g), -1);
}

/* A large declared length is consumed across many feeds without buffering it. */
static void
test_large(void **state)
{
	uint8_t hdr[8] = { 1, 0, 0, 0, 0, 0x10, 0, 0 }; /* 1 MiB */
	uint8_t chunk[4096];
	struct dk_demux d;
	struct got g = { 0 };
	size_t total = 0;
	(void)state;
	memset(chunk, 'a', sizeof(chunk));
	dk_demux_init(&d);
	assert_int_equal(dk_demux_feed(&d, hdr, 8, cb, &g), 0);
	for (int i = 0; i < 256; i++) {
		g.nout = 0;
		assert_int_equal(dk_demux_feed(&d, chunk, sizeof(chunk), cb, &g), 0);
		total += g.nout;
	}
	assert_int_equal(total, 1 << 20);
	assert_true(dk_demux_idle(&d));
}

/* The fuzz target on seeds: valid streams, truncated ones, garbage. */
static void
test_fuzz_seeds(void **state)
{
	uint8_t buf[512];
	uint64_t r = 88172645463325252ull;
	(void)state;
	size_t n = sample(buf);
	assert_int_equal(LLVMFuzzerTestOneInput(buf, n), 0);
	for (size_t cut = 1; cut < n; cut++)
		assert_int_equal(LLVMFuzzerTestOneInput(buf, cut), 0);
	for (int i = 0; i < 2000; i++) {
		size_t len = 1 + (size_t)(r % sizeof(buf));
		for (size_t j = 0; j < len; j++) {
			r ^= r << 13;
			r ^= r >> 7;
			r ^= r << 17;
			buf[j] = (uint8_t)r;
			/* Bias towards plausible headers now and then. */
			if (j % 8 == 0 && (r & 3) == 0)
				buf[j] = (uint8_t)(r % 3);
			if (j % 8 >= 1 && j % 8 <= 4 && (r & 1))
				buf[j] = 0;
		}
		assert_int_equal(LLVMFuzzerTestOneInput(buf, len), 0);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole),       cmocka_unit_test(test_split),
		cmocka_unit_test(test_malformed),   cmocka_unit_test(test_large),
		cmocka_unit_test(test_fuzz_seeds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
