/* SPDX-License-Identifier: MIT */
/*
 * serve-pty.c - `hs serve`'s terminal and stdin ops: the "pty" member of
 * exec, "resize" and "write_stdin" (hs(1) SERVE), over core/job-ops.c
 * (shared with `hs mcp`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/job-ops.h"
#include "core/json.h"
#include "core/serve/serve-req.h"
#include "core/serve/serve.h"

int
srv_pty_request(struct sess *ss, struct req *r, struct hs_cmd_req *rq)
{
	struct hs_job_op_err e;
	if (hs_job_pty_request(&ss->hs, r->root, rq, &e) < 0) {
		srv_reply_error(ss->srv, r->id, e.code, e.why);
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
	struct hs_job_op_err e;
	struct hs_job *j = named_job(ss, r, &n);
	if (j && hs_job_resize(&ss->hs, j, r->root, &e) < 0)
		srv_reply_error(ss->srv, r->id, e.code, e.why);
	else if (j)
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
	struct hs_job_op_err e;
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
	if (j && hs_job_write(&ss->hs, j, data, len, eof, &e) < 0)
		srv_reply_error(ss->srv, r->id, e.code, e.why);
	else if (j)
		reply_job_ok(ss, r, n, (long long)len);
	free(owned);
	return 0;
}
