/* SPDX-License-Identifier: MIT */
/*
 * job-ops.h - what the front ends (`hs serve`, `hs mcp`) do to a running
 * background job of a session beyond reading it: write its stdin through
 * the stdin gate, resize its terminal and render its screen.  One code
 * path, so that a write is judged the same whichever client sends it.
 */
#ifndef HS_JOB_OPS_H
#define HS_JOB_OPS_H

#include <stddef.h>
#include <yajl/yajl_tree.h>

#include "core/pipeline.h"
#include "core/screen.h"

/* Why a job operation failed: a serve error code and one line. */
struct hs_job_op_err {
	const char *code; /* "invalid_request", "denied", "backend_error", "screen_failed", ... */
	char why[1280];
};

/* The "rows"/"cols" member key of v: an integer 1..HS_SCREEN_SIZE_MAX, else -1. */
int hs_job_size_member(yajl_val v, const char *key);

/*
 * The "pty" (true, or {"rows", "cols"}) and "stdin_open" members of a
 * background start's args into rq.  Returns 0, or -1 with e: a bad size
 * ("bad_request"), or a PTY on a backend in exec mode ("unsupported").
 */
int hs_job_pty_request(struct hs_session *s, yajl_val args, struct hs_cmd_req *rq,
                       struct hs_job_op_err *e);

/*
 * Write len bytes (buf may be NULL with len 0) and then, with eof, the end
 * of input into job j of session s.  The bytes are judged by
 * hs_session_stdin_gate with the job's own gate state first, closing stdin
 * too: a refused write delivers nothing; when only closing is refused the
 * bytes go without it.  Returns 0 when all was delivered, else -1 with e
 * filled ("denied" for a refusal, naming the rules).
 */
int hs_job_write(struct hs_session *s, struct hs_job *j, const void *buf, size_t len, int eof,
                 struct hs_job_op_err *e);

/* Set a PTY job's window size from args' "rows" and "cols".  0, or -1 with e. */
int hs_job_resize(struct hs_session *s, struct hs_job *j, yajl_val args, struct hs_job_op_err *e);

/*
 * The screen of job j's stdout at args' "rows" and "cols" (each optional:
 * else the job's terminal size, else 24x80), rendered in a contained
 * child (hs_screen_render).  Returns 0 with *shot filled (free it with
 * hs_screen_shot_free), or -1 with e.
 */
int hs_job_screen(yajl_val args, const struct hs_job *j, struct hs_screen_shot *shot,
                  struct hs_job_op_err *e);

/* The most one output range request returns. */
#define HS_OUTPUT_RANGE_MAX (4u * 1024u * 1024u)

/*
 * A range of a command's kept output (recoverable output, hs(1)): args'
 * "output_id" (from an exec result), "stream" (stdout, stderr), "offset"
 * and "length" (at most HS_OUTPUT_RANGE_MAX).  On success writes into the
 * open map g: output_id, stream, offset (the first byte returned: later
 * than asked when that part was evicted, with gap {offset, bytes}), data
 * (or data_b64), next_offset, stdout_bytes|stderr_bytes, eof, running; a
 * character cut by the range's end is left for the next request.  Returns
 * 0, or -1 with e ("invalid_request", "no_output", "backend_error") and g
 * untouched.
 */
int hs_output_range_json(struct hs_session *s, yajl_val args, yajl_gen g, struct hs_job_op_err *e);

/* Forget the stdin gate state of s's jobs (when the session closes). */
void hs_job_guards_free(struct hs_session *s);

#endif /* HS_JOB_OPS_H */
