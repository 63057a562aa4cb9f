/* SPDX-License-Identifier: MIT */
/*
 * serve-output.c - recoverable output in `hs serve`: an exec's reply says
 * how much each stream produced and names the output (output_id), whose
 * whole stdout and stderr the session's runner keeps (config output_keep,
 * oldest commands evicted first); the "output" op reads any range of it by
 * offset after the command ended, and "spill": true has the runner write it
 * to files inside the sandbox.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "core/capture.h"
#include "core/json.h"
#include "core/pipeline.h"
#include "core/serve/serve-req.h"
#include "core/serve/serve.h"

/* The most one output request returns. */
#define SRV_OUTPUT_MAX (4u * 1024u * 1024u)
/* The most one runner READ asks for (its answer is one frame). */
#define SRV_READ_CHUNK (1024u * 1024u)

void
srv_output_fields(struct sess *ss, yajl_gen g, const struct hs_cmd_result *res, int spill)
{
	hs_output_json(g, &ss->hs.cn, ss->hs.lim.output_keep, &res->out, 1, spill);
}

/* output_id as a string of digits or a JSON integer; 0 when absent or invalid. */
static uint64_t
output_id(yajl_val root)
{
	const char *s = hs_serve_str(root, "output_id");
	if (!s)
		return hs_serve_uint(root, "output_id", 0);
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	return *s >= '0' && *s <= '9' && !*end ? (uint64_t)v : 0;
}

int
srv_op_output(struct sess *ss, struct req *r)
{
	struct srv *s = ss->srv;
	const char *st = hs_serve_str(r->root, "stream");
	uint64_t id = output_id(r->root);
	uint64_t off = hs_serve_uint(r->root, "offset", 0);
	uint64_t want = hs_serve_uint(r->root, "length", (uint64_t)ss->hs.lim.output_limit);
	int stream = st && !strcmp(st, "stderr") ? 2 : 1;
	char e[1024] = "";

	if (!id || (st && strcmp(st, "stdout") && strcmp(st, "stderr"))) {
		srv_reply_error(s, r->id, "invalid_request",
		                "output needs \"output_id\" (from an exec reply) and \"stream\" stdout or stderr");
		return 0;
	}
	if (want > SRV_OUTPUT_MAX)
		want = SRV_OUTPUT_MAX;
	char *buf = malloc(want ? want : 1);
	if (!buf) {
		srv_reply_error(s, r->id, "internal", "out of memory");
		return 0;
	}
	/* The first read may start later than asked (evicted bytes); the
	 * following ones go on from where the last ended. */
	struct hs_output_range rg = { 0 };
	uint64_t at = off, start = off, total = 0;
	size_t have = 0;
	int ended = 0, first = 1;
	while (first || have < want) {
		size_t ask = want - have < SRV_READ_CHUNK ? (size_t)(want - have) : SRV_READ_CHUNK;
		int rc = hs_conn_output_read(&ss->hs.cn, id, stream, at, ask, &rg, e, sizeof(e));
		if (rc != 0) {
			free(buf);
			srv_reply_error(s, r->id, rc == 1 ? "no_output" : "backend_error", e);
			return 0;
		}
		if (first)
			start = rg.offset;
		else if (rg.offset != at)
			rg.len = 0; /* trimmed meanwhile: stop at the hole */
		memcpy(buf + have, rg.data, rg.len);
		have += rg.len;
		at = rg.offset + rg.len;
		total = rg.total;
		ended = rg.ended;
		free(rg.data);
		first = 0;
		if (rg.len == 0 || at >= total)
			break;
	}
	/* In text, a character cut by the range's end is left for the next
	 * request, so the range stays text. */
	size_t cut = at < total ? srv_utf8_cut((const unsigned char *)buf, have) : 0;
	if (cut && hs_utf8_valid(buf, have - cut))
		have -= cut;
	yajl_gen g = srv_reply_ok(r->id);
	char ids[32];
	snprintf(ids, sizeof(ids), "%" PRIu64, id);
	hs_json_kstr(g, "output_id", ids);
	hs_json_kstr(g, "stream", stream == 1 ? "stdout" : "stderr");
	hs_json_kint(g, "offset", (long long)start);
	if (start > off) {
		hs_json_key(g, "gap");
		yajl_gen_map_open(g);
		hs_json_kint(g, "offset", (long long)off);
		hs_json_kint(g, "bytes", (long long)(start - off));
		yajl_gen_map_close(g);
	}
	hs_json_kbytes(g, "data", buf, have);
	hs_json_kint(g, "next_offset", (long long)(start + have));
	hs_json_kint(g, stream == 1 ? "stdout_bytes" : "stderr_bytes", (long long)total);
	hs_json_kbool(g, "eof", ended && start + have >= total);
	hs_json_kbool(g, "running", !ended);
	yajl_gen_map_close(g);
	srv_emit(s, g);
	free(buf);
	return 0;
}
