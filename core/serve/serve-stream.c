/* SPDX-License-Identifier: MIT */
/*
 * serve-stream.c - the output events of a streamed exec (`"stream": true`).
 *
 * Every event carries the offset of its first byte in its stream, so a
 * client sees at once whether anything is missing; what is missing is said
 * in a "gap" member ({offset, bytes}) of the next event and counted in the
 * reply's stream_dropped.  An event never ends inside a UTF-8 character:
 * the bytes of a character cut by a chunk boundary wait for the rest, so
 * text stays text, and only an event holding bytes that are not UTF-8 goes
 * as base64 ("data_b64").  A slow client is not dropped from: the session
 * waits for the writer (srv_emit_stream), the core stops granting the
 * runner credit, and the runner stops reading the command's pipes.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/serve/serve.h"

static void
stream_event(struct srv_stream *st, int stream, const void *buf, size_t len)
{
	/* Cancelled while the client does not read: what it would wait for is
	 * dropped, and said in a gap, so the cancel goes through. */
	if (st->stopping && len && srv_stream_full(st->ss)) {
		srv_stream_gap(st, stream, len);
		return;
	}
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	srv_gen_id(g, st->id);
	hs_json_kstr(g, "event", "output");
	hs_json_kstr(g, "stream", stream == 1 ? "stdout" : "stderr");
	hs_json_kint(g, "offset", (long long)st->s[stream].off);
	if (st->s[stream].gap) {
		hs_json_key(g, "gap");
		yajl_gen_map_open(g);
		hs_json_kint(g, "offset", (long long)st->s[stream].gap_off);
		hs_json_kint(g, "bytes", (long long)st->s[stream].gap);
		yajl_gen_map_close(g);
		st->s[stream].gap = 0;
	}
	hs_json_kbytes(g, "data", buf, len);
	yajl_gen_map_close(g);
	srv_emit_stream(st->ss, g);
	st->s[stream].off += len;
}

void
srv_stream_output(struct srv_stream *st, int stream, const void *data, size_t len)
{
	struct srv_stream_one *o = &st->s[stream];
	const unsigned char *p = data;
	unsigned char *joined = NULL;

	if (o->ncarry) {
		/* A character cut at the last chunk's end: complete it first. */
		size_t need = hs_utf8_seq_len(o->carry[0]);
		while (o->ncarry < need && len && (*p & 0xc0) == 0x80) {
			o->carry[o->ncarry++] = *p++;
			len--;
		}
		if (o->ncarry < need && !len)
			return; /* still incomplete: wait for more */
		/* Complete (it leads this event), or broken by a byte that
		 * cannot continue it (it goes alone, as base64). */
		if (o->ncarry < need || !(joined = malloc(o->ncarry + len))) {
			size_t n = o->ncarry;
			o->ncarry = 0;
			stream_event(st, stream, o->carry, n);
		} else {
			memcpy(joined, o->carry, o->ncarry);
			memcpy(joined + o->ncarry, p, len);
			len += o->ncarry;
			p = joined;
			o->ncarry = 0;
		}
	}
	size_t cut = hs_utf8_cut(p, len);
	if (len > cut)
		stream_event(st, stream, p, len - cut);
	memcpy(o->carry, p + len - cut, cut);
	o->ncarry = cut;
	free(joined);
}

void
srv_stream_gap(struct srv_stream *st, int stream, uint64_t bytes)
{
	struct srv_stream_one *o = &st->s[stream];

	/* What waited for the rest of a character will not get it. */
	if (o->ncarry) {
		size_t n = o->ncarry;
		o->ncarry = 0;
		stream_event(st, stream, o->carry, n);
	}
	if (!o->gap)
		o->gap_off = o->off;
	o->gap += bytes;
	o->off += bytes;
	st->dropped += bytes;
}

void
srv_stream_flush(struct srv_stream *st)
{
	for (int s = 1; s <= 2; s++) {
		struct srv_stream_one *o = &st->s[s];
		if (o->ncarry || o->gap) {
			size_t n = o->ncarry;
			o->ncarry = 0;
			stream_event(st, s, o->carry, n);
			if (o->gap) /* the held bytes became a gap themselves: say it */
				stream_event(st, s, "", 0);
		}
	}
}
