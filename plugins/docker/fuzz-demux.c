/* SPDX-License-Identifier: MIT */
/*
 * fuzz-demux.c - libFuzzer target for the attach-stream demultiplexer.
 * Also compiled into tests/docker/test-demux.c, which runs it on seeds.
 *
 * The input is fed twice, whole and in pieces whose sizes come from the
 * input itself; both runs must deliver the same payload bytes per stream
 * and agree on whether the stream was malformed.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/docker/demux.h"

struct fz_sink {
	uint8_t *out;
	size_t len, cap;
	uint64_t per_stream[3];
};

static int
fz_cb(void *ctx, int stream, const uint8_t *buf, size_t len)
{
	struct fz_sink *s = ctx;
	if (stream < 0 || stream > 2 || len == 0)
		abort();
	if (s->len + len > s->cap)
		abort();
	memcpy(s->out + s->len, buf, len);
	s->len += len;
	s->per_stream[stream] += len;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dk_demux a, b;
	struct fz_sink sa = { 0 }, sb = { 0 };
	int ra, rb = 0;

	sa.cap = sb.cap = size + 1;
	sa.out = malloc(sa.cap);
	sb.out = malloc(sb.cap);
	if (!sa.out || !sb.out)
		abort();
	dk_demux_init(&a);
	ra = dk_demux_feed(&a, data, size, fz_cb, &sa);

	dk_demux_init(&b);
	for (size_t off = 0, i = 0; off < size && rb == 0; i++) {
		size_t piece = 1 + (data[i % size] % 13);
		if (piece > size - off)
			piece = size - off;
		rb = dk_demux_feed(&b, data + off, piece, fz_cb, &sb);
		off += piece;
	}
	if (ra != rb || sa.len != sb.len || memcmp(sa.out, sb.out, sa.len) != 0)
		abort();
	for (int s = 0; s < 3; s++)
		if (sa.per_stream[s] != sb.per_stream[s])
			abort();
	if (ra == 0 && dk_demux_idle(&a) != dk_demux_idle(&b))
		abort();
	free(sa.out);
	free(sb.out);
	return 0;
}
