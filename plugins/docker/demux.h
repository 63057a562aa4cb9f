/* SPDX-License-Identifier: MIT */
/*
 * demux.h - incremental demultiplexer of the Docker attach stream.
 *
 * With Tty=false the daemon frames each chunk of output with an 8-byte
 * header: the stream (0 stdin, 1 stdout, 2 stderr), three zero bytes and
 * the payload length as a big-endian 32-bit number.  Frames arrive split
 * at any byte boundary, so the parser keeps its position between calls.
 */
#ifndef HS_DOCKER_DEMUX_H
#define HS_DOCKER_DEMUX_H

#include <stddef.h>
#include <stdint.h>

struct dk_demux {
	uint8_t hdr[8];
	uint32_t have;     /* header bytes collected so far */
	uint32_t remain;   /* payload bytes left in the current frame */
	int stream;        /* stream of the current frame */
	int broken;        /* a bad header was seen; everything after is refused */
};

/* Called for each piece of payload; a non-zero return stops the feed. */
typedef int (*dk_demux_cb)(void *ctx, int stream, const uint8_t *buf, size_t len);

void dk_demux_init(struct dk_demux *d);
/*
 * Feeds len bytes.  Returns 0, -1 on a malformed header (stream above 2 or
 * non-zero padding; the demuxer stays broken), or the callback's non-zero
 * return value.
 */
int dk_demux_feed(struct dk_demux *d, const uint8_t *buf, size_t len, dk_demux_cb cb, void *ctx);
/* Non-zero when the stream may end here (not inside a header or frame). */
int dk_demux_idle(const struct dk_demux *d);

#endif
