/* SPDX-License-Identifier: MIT */
/*
 * serve-pty.c - `hs serve`'s terminal and stdin ops: the "pty" member of
 * exec, "resize" and "write_stdin" (hs(1) SERVE).  Every write is put to
 * the stdin gate first, with the job's own gate state, so that what is
 * typed into a shell or a REPL is judged like the command it is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/serve/serve-req.h"
#include "core/serve/serve.h"

/* The stdin gate state of one job of a session. */
struct srv_guard {
	unsigned job;
	struct hs_stdin_guard *g;
	struct srv_guard *next;
};

void
srv_guards_free(struct sess *ss)
{
	while (ss->guards) {
		struct srv_guard *x = ss->guards;
		ss->guards = x->next;
		hs_stdin_guard_free(x->g);
		free(x);
	}
}

static struct hs_stdin_guard *
guard_of(struct sess *ss, unsigned job)
{
	for (struct srv_guard *x = ss->guards; x; x = x->next)
		if (x->job == job)
			return x->g;
	struct srv_guard *x = calloc(1, sizeof(*x));
	if (!x || !(x->g = hs_stdin_guard_new())) {
		free(x);
		return NULL;
	}
	x->job = job;
	x->next = ss->guards;
	ss->guards = x;
	return x->g;
}

/* A size member: 1..HSR_PTY_MAX, else -1. */
static int
size_member(yajl_val v, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val n = yajl_tree_get(v, path, yajl_t_number);
	if (!n || !YAJL_IS_INTEGER(n) || YAJL_GET_INTEGER(n) < 1 || YAJL_GET_INTEGER(n) > 1000)
		return -1;
	return (int)YAJL_GET_INTEGER(n);
}

int
srv_pty_request(struct sess *ss, struct req *r, struct hs_cmd_req *rq)
{
	yajl_val v = hs_serve_val(r->root, "pty");
	rq->stdin_open = hs_serve_true(r->root, "stdin_open");
	if (!v || YAJL_IS_FALSE(v) || YAJL_IS_NULL(v))
		return 0;
	if (YAJL_IS_TRUE(v)) {
		rq->pty_rows = HS_PTY_ROWS;
		rq->pty_cols = HS_PTY_COLS;
	} else {
		int rows = YAJL_IS_OBJECT(v) ? size_member(v, "rows") : -1;
		int cols = YAJL_IS_OBJECT(v) ? size_member(v, "cols") : -1;
		if (rows < 0 || cols < 0) {
			srv_reply_error(ss->srv, r->id, "bad_request",
			                "pty must be true or {\"rows\": R, \"cols\": C} with each 1 to 1000");
			return -1;
		}
		rq->pty_rows = (uint16_t)rows;
		rq->pty_cols = (uint16_t)cols;
	}
	if (ss->hs.cn.exec_mode) {
		char why[512];
		hs_conn_pty_unsupported(&ss->hs.cn, why, sizeof(why));
		srv_reply_error(ss->srv, r->id, "unsupported", why);
		return -1;
	}
	return 0;
}

/* The running job r names ("jN"), events taken; NULL after an error reply. */
static struct hs_job *
named_job(struct sess *ss, struct req *r, unsigned *n)
{
	const char *name = hs_serve_str(r->root, "job");
	char err[1024];
	if (!name || sscanf(name, "j%u", n) != 1) {
		srv_reply_error(ss->srv, r->id, "invalid_request",
		                "this op needs \"job\": the \"jN\" of a background exec");
		return NULL;
	}
	if (hs_conn_pump(&ss->hs.cn, 0, err, sizeof(err)) < 0) {
		srv_reply_error(ss->srv, r->id, "backend_error", err);
		return NULL;
	}
	struct hs_job *j = hs_conn_job(&ss->hs.cn, *n);
	if (!j)
		srv_reply_error(ss->srv, r->id, "no_job", "no job of that name in this session");
	return j;
}

static void
reply_job_ok(struct sess *ss, struct req *r, unsigned n, long long written)
{
	char name[32];
	snprintf(name, sizeof(name), "j%u", n);
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kstr(g, "job", name);
	if (written >= 0)
		hs_json_kint(g, "written", written);
	yajl_gen_map_close(g);
	srv_emit(ss->srv, g);
}

/* {"op":"resize","session":S,"job":"jN","rows":R,"cols":C} */
int
srv_do_resize(struct sess *ss, struct req *r)
{
	unsigned n;
	char err[1024];
	int rows = size_member(r->root, "rows"), cols = size_member(r->root, "cols");
	if (rows < 0 || cols < 0) {
		srv_reply_error(ss->srv, r->id, "bad_request", "resize needs \"rows\" and \"cols\", each 1 to 1000");
		return 0;
	}
	struct hs_job *j = named_job(ss, r, &n);
	if (!j)
		return 0;
	if (hs_conn_resize(&ss->hs.cn, j, (unsigned)rows, (unsigned)cols, err, sizeof(err)) < 0) {
		srv_reply_error(ss->srv, r->id, j->pty ? "backend_error" : "invalid_request", err);
		return 0;
	}
	reply_job_ok(ss, r, n, -1);
	return 0;
}

/* {"op":"write_stdin","session":S,"job":"jN","data":"..."|"data_b64":"...","eof":bool} */
int
srv_do_write_stdin(struct sess *ss, struct req *r)
{
	const char *data = NULL;
	size_t len = 0;
	void *owned = NULL;
	unsigned n;
	char err[1024];
	int eof = hs_serve_true(r->root, "eof");
	if (hs_serve_bytes(r->root, "data", &data, &len, &owned) < 0) {
		srv_reply_error(ss->srv, r->id, "invalid_request", "data_b64 is not valid base64");
		return 0;
	}
	if (!data && !eof) {
		srv_reply_error(ss->srv, r->id, "invalid_request",
		                "write_stdin needs \"data\" or \"data_b64\", or \"eof\": true");
		return 0;
	}
	struct hs_job *j = named_job(ss, r, &n);
	if (!j)
		goto out;
	if (!j->stdin_open || j->done) {
		hs_conn_write_stdin(&ss->hs.cn, j, NULL, 0, 0, err, sizeof(err));
		srv_reply_error(ss->srv, r->id, "invalid_request", err);
		goto out;
	}
	/* Judged before anything is delivered: a refused write delivers nothing.
	 * Closing stdin is judged too (a shell reading a pipe runs its last
	 * line at EOF); if only that is refused, the data goes without it. */
	struct hs_approval_out verdict = { .decision = NULL };
	struct hs_stdin_guard *g = guard_of(ss, n);
	char jname[32];
	snprintf(jname, sizeof(jname), "j%u", n);
	if (!g) {
		srv_reply_error(ss->srv, r->id, "backend_error", "out of memory");
		goto out;
	}
	if (len && !hs_session_stdin_gate(&ss->hs, g, jname, data, len, &verdict)) {
		srv_reply_error(ss->srv, r->id, "denied", verdict.why);
		goto out;
	}
	int eof_refused = eof && !hs_session_stdin_gate(&ss->hs, g, jname, NULL, 0, &verdict);
	if ((len || (eof && !eof_refused)) &&
	    hs_conn_write_stdin(&ss->hs.cn, j, data, len, eof && !eof_refused, err, sizeof(err)) < 0) {
		srv_reply_error(ss->srv, r->id, "backend_error", err);
		goto out;
	}
	if (eof_refused) {
		char why[sizeof(verdict.why) + 64];
		snprintf(why, sizeof(why), "%sclosing stdin refused: %s",
		         len ? "the data was delivered; " : "", verdict.why);
		srv_reply_error(ss->srv, r->id, "denied", why);
		goto out;
	}
	reply_job_ok(ss, r, n, (long long)len);
out:
	free(owned);
	return 0;
}
