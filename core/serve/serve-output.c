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
#include "core/job-ops.h"
#include "core/json.h"
#include "core/pipeline.h"
#include "core/serve/serve-req.h"
#include "core/serve/serve.h"

void
srv_output_fields(struct sess *ss, yajl_gen g, const struct hs_cmd_result *res, int spill)
{
	hs_output_json(g, &ss->hs.cn, ss->hs.lim.output_keep, &res->out, 1, spill);
}

int
srv_op_output(struct sess *ss, struct req *r)
{
	struct hs_job_op_err e = { .code = NULL };
	yajl_gen g = srv_reply_ok(r->id);
	if (hs_output_range_json(&ss->hs, r->root, g, &e) < 0) {
		yajl_gen_free(g);
		srv_reply_error(ss->srv, r->id, e.code, e.why);
		return 0;
	}
	yajl_gen_map_close(g);
	srv_emit(ss->srv, g);
	return 0;
}
