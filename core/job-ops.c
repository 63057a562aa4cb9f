/* SPDX-License-Identifier: MIT */
/*
 * job-ops.c - stdin writes, resize and screen of a session's background
 * job, for `hs serve` and `hs mcp` alike (job-ops.h).  Every write is put
 * to the stdin gate first, with the job's own gate state, so that what is
 * typed into a shell or a REPL is judged like the command it is.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/job-ops.h"
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
