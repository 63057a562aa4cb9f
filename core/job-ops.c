/* SPDX-License-Identifier: MIT */
/*
 * job-ops.c - stdin writes, resize and screen of a session's background
 * job, for `hs serve` and `hs mcp` alike (job-ops.h).  Every write is put
 * to the stdin gate first, with the job's own gate state, so that what is
 * typed into a shell or a REPL is judged like the command it is.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/job-ops.h"
#include "core/json.h"
#include "core/serve/serve-req.h"
#include "core/safety/safety.h"

/* The stdin gate state of one job of a session. */
struct hs_job_guard {
	unsigned job;
	struct hs_stdin_guard *g;
	struct hs_job_guard *next;
};

void
hs_job_guards_free(struct hs_session *s)
{
	while (s->guards) {
		struct hs_job_guard *x = s->guards;
		s->guards = x->next;
		hs_stdin_guard_free(x->g);
		free(x);
	}
}

/* Job n's gate state, made on first use; NULL on OOM. */
static struct hs_stdin_guard *
guard_of(struct hs_session *s, unsigned job)
{
	for (struct hs_job_guard *x = s->guards; x; x = x->next)
		if (x->job == job)
			return x->g;
	struct hs_job_guard *x = calloc(1, sizeof(*x));
	if (!x || !(x->g = hs_stdin_guard_new())) {
		free(x);
		return NULL;
	}
	x->job = job;
	x->next = s->guards;
	s->guards = x;
	return x->g;
}

int
hs_job_size_member(yajl_val v, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val n = v ? yajl_tree_get(v, path, yajl_t_number) : NULL;
	if (!n || !YAJL_IS_INTEGER(n) || YAJL_GET_INTEGER(n) < 1 ||
	    YAJL_GET_INTEGER(n) > HS_SCREEN_SIZE_MAX)
		return -1;
	return (int)YAJL_GET_INTEGER(n);
}

static int
fail(struct hs_job_op_err *e, const char *code, const char *why)
{
	e->code = code;
	snprintf(e->why, sizeof(e->why), "%s", why);
	return -1;
}

int
hs_job_pty_request(struct hs_session *s, yajl_val args, struct hs_cmd_req *rq, struct hs_job_op_err *e)
{
	const char *path[] = { "pty", NULL }, *open_path[] = { "stdin_open", NULL };
	yajl_val v = args ? yajl_tree_get(args, path, yajl_t_any) : NULL;
	yajl_val o = args ? yajl_tree_get(args, open_path, yajl_t_any) : NULL;
	rq->stdin_open = o && YAJL_IS_TRUE(o);
	if (!v || YAJL_IS_FALSE(v) || YAJL_IS_NULL(v))
		return 0;
	if (YAJL_IS_TRUE(v)) {
		rq->pty_rows = HS_PTY_ROWS;
		rq->pty_cols = HS_PTY_COLS;
	} else {
		int rows = YAJL_IS_OBJECT(v) ? hs_job_size_member(v, "rows") : -1;
		int cols = YAJL_IS_OBJECT(v) ? hs_job_size_member(v, "cols") : -1;
		if (rows < 0 || cols < 0)
			return fail(e, "bad_request",
			            "pty must be true or {\"rows\": R, \"cols\": C} with each 1 to 1000");
		rq->pty_rows = (uint16_t)rows;
		rq->pty_cols = (uint16_t)cols;
	}
	if (s->cn.exec_mode) {
		e->code = "unsupported";
		hs_conn_pty_unsupported(&s->cn, e->why, sizeof(e->why));
		return -1;
	}
	return 0;
}

int
hs_job_write(struct hs_session *s, struct hs_job *j, const void *buf, size_t len, int eof,
             struct hs_job_op_err *e)
{
	char err[1024], jname[32];
	if (!j->stdin_open || j->done) {
		hs_conn_write_stdin(&s->cn, j, NULL, 0, 0, err, sizeof(err));
		return fail(e, "invalid_request", err);
	}
	struct hs_approval_out verdict = { .decision = NULL };
	struct hs_stdin_guard *g = guard_of(s, j->number);
	if (!g)
		return fail(e, "backend_error", "out of memory");
	snprintf(jname, sizeof(jname), "j%u", j->number);
	/* Judged before anything is delivered: a refused write delivers nothing.
	 * Closing stdin is judged too (a shell reading a pipe runs its last
	 * line at EOF); if only that is refused, the data goes without it. */
	if (len && !hs_session_stdin_gate(s, g, jname, buf, len, &verdict))
		return fail(e, "denied", verdict.why);
	int eof_refused = eof && !hs_session_stdin_gate(s, g, jname, NULL, 0, &verdict);
	if ((len || (eof && !eof_refused)) &&
	    hs_conn_write_stdin(&s->cn, j, buf, len, eof && !eof_refused, err, sizeof(err)) < 0)
		return fail(e, "backend_error", err);
	if (eof_refused) {
		e->code = "denied";
		snprintf(e->why, sizeof(e->why), "%sclosing stdin refused: %s",
		         len ? "the data was delivered; " : "", verdict.why);
		return -1;
	}
	return 0;
}

int
hs_job_resize(struct hs_session *s, struct hs_job *j, yajl_val args, struct hs_job_op_err *e)
{
	char err[1024];
	int rows = hs_job_size_member(args, "rows"), cols = hs_job_size_member(args, "cols");
	if (rows < 0 || cols < 0)
		return fail(e, "bad_request", "resize needs \"rows\" and \"cols\", each 1 to 1000");
	if (hs_conn_resize(&s->cn, j, (unsigned)rows, (unsigned)cols, err, sizeof(err)) < 0)
		return fail(e, j->pty ? "backend_error" : "invalid_request", err);
	return 0;
}

int
hs_job_screen(yajl_val args, const struct hs_job *j, struct hs_screen_shot *shot,
              struct hs_job_op_err *e)
{
	static const char *const keys[2] = { "rows", "cols" };
	int size[2] = { HS_SCREEN_ROWS_DEFAULT, HS_SCREEN_COLS_DEFAULT };
	if (j->pty && j->pty_rows && j->pty_cols) {
		size[0] = (int)j->pty_rows;
		size[1] = j->pty_cols < 2 ? 2 : (int)j->pty_cols; /* a wide character needs 2 */
	}
	for (int i = 0; i < 2; i++) {
		const char *path[] = { keys[i], NULL };
		if (!args || !yajl_tree_get(args, path, yajl_t_any))
			continue;
		int v = hs_job_size_member(args, keys[i]);
		if (v < (i ? 2 : 1))
			return fail(e, "invalid_request", i ? "\"cols\" must be an integer from 2 to 1000"
			                                     : "\"rows\" must be an integer from 1 to 1000");
		size[i] = v;
	}
	/* Output that came through a pipe has bare line feeds; a PTY job's
	 * terminal has turned them into CR LF already. */
	char serr[256];
	if (hs_screen_render(&j->cap[1], size[0], size[1], !j->pty, shot, serr, sizeof(serr)) < 0)
		return fail(e, "screen_failed", serr);
	return 0;
}

/* The most one runner READ asks for (its answer is one frame). */
#define OUTPUT_READ_CHUNK (1024u * 1024u)

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
hs_output_range_json(struct hs_session *s, yajl_val args, yajl_gen g, struct hs_job_op_err *e)
{
	const char *st = hs_serve_str(args, "stream");
	uint64_t id = output_id(args);
	uint64_t off = hs_serve_uint(args, "offset", 0);
	uint64_t want = hs_serve_uint(args, "length", (uint64_t)s->lim.output_limit);
	int stream = st && !strcmp(st, "stderr") ? 2 : 1;
	char err[1024] = "";

	if (!id || (st && strcmp(st, "stdout") && strcmp(st, "stderr"))) {
		e->code = "invalid_request";
		snprintf(e->why, sizeof(e->why), "output needs \"output_id\" (from an exec reply) and "
		         "\"stream\" stdout or stderr");
		return -1;
	}
	if (want > HS_OUTPUT_RANGE_MAX)
		want = HS_OUTPUT_RANGE_MAX;
	char *buf = malloc(want ? want : 1);
	if (!buf) {
		e->code = "internal";
		snprintf(e->why, sizeof(e->why), "out of memory");
		return -1;
	}
	/* The first read may start later than asked (evicted bytes); the
	 * following ones go on from where the last ended. */
	struct hs_output_range rg = { 0 };
	uint64_t at = off, start = off, total = 0;
	size_t have = 0;
	int ended = 0, first = 1;
	while (first || have < want) {
		size_t ask = want - have < OUTPUT_READ_CHUNK ? (size_t)(want - have) : OUTPUT_READ_CHUNK;
		int rc = hs_conn_output_read(&s->cn, id, stream, at, ask, &rg, err, sizeof(err));
		if (rc != 0) {
			free(buf);
			e->code = rc == 1 ? "no_output" : "backend_error";
			snprintf(e->why, sizeof(e->why), "%s", err);
			return -1;
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
	size_t cut = at < total ? hs_utf8_cut((const unsigned char *)buf, have) : 0;
	if (cut && hs_utf8_valid(buf, have - cut))
		have -= cut;
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
	free(buf);
	return 0;
}
