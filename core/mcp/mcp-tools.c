/* SPDX-License-Identifier: MIT */
/*
 * mcp-tools.c - the tools of `hs mcp`: run, check, session_open,
 * session_close and session_list (the job and file tools are in
 * mcp-jobs.c), each a thin adapter over the session pipeline like `hs run`
 * and `hs serve`.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/capture.h"
#include "core/safety/approval.h"
#include "core/cli/cmds.h"
#include "core/config/hsconf.h"
#include "core/core.h"
#include "core/job-ops.h"
#include "core/json.h"
#include "core/mcp/mcp.h"
#include "core/safety/safety.h"
#include "core/serve/serve-req.h"

/* The open session shown to the client as name, or NULL. */
static struct hs_mcp_sess *
find_sess(struct hs_mcp *m, const char *name)
{
	for (int i = 0; i < HS_MCP_MAX_SESSIONS; i++)
		if (m->sess[i].used && !strcmp(m->sess[i].shown, name))
			return &m->sess[i];
	return NULL;
}

/* Open a session shown as shown (real name real) with the open arguments args; NULL with err. */
static struct hs_mcp_sess *
open_sess(struct hs_mcp *m, const char *shown, const char *real, int persistent, yajl_val args,
          char *err, size_t errlen)
{
	struct hs_mcp_sess *ms = NULL;
	for (int i = 0; i < HS_MCP_MAX_SESSIONS && !ms; i++)
		if (!m->sess[i].used)
			ms = &m->sess[i];
	if (!ms) {
		snprintf(err, errlen, "too many open sessions (at most %d): close one with session_close",
		         HS_MCP_MAX_SESSIONS);
		return NULL;
	}
	struct hs_env_spec spec = { .struct_size = sizeof(spec) };
	const char *backend = hs_serve_str(args, "backend");
	spec.image = hs_serve_str(args, "image");
	if (!spec.image)
		spec.image = m->image;
	spec.workdir = hs_serve_str(args, "workspace");
	if (!spec.workdir)
		spec.workdir = m->workspace;
	if (!spec.workdir)
		hs_conf_string(m->c->conf, "workspace", &spec.workdir);
	/* Ask mode asks the client by elicitation when it can answer, else denies. */
	hs_session_init(&ms->hs, m->c, real, persistent, m->mode, m->asker);
	if (hs_session_open(&ms->hs, backend ? backend : m->backend, &spec, err, errlen) != HS_OUTCOME_OK) {
		hs_session_free(&ms->hs);
		return NULL;
	}
	snprintf(ms->shown, sizeof(ms->shown), "%s", shown);
	ms->used = 1;
	/* What an hs that died left running in a kept session becomes jobs, as serve does. */
	char e[512];
	if (hs_conn_adopt(&ms->hs.cn, (size_t)ms->hs.lim.output_limit, &ms->adopt_first,
	                  &ms->adopted, e, sizeof(e)) < 0)
		hs_warn("session '%s': %s", shown, e);
	return ms;
}

static void
close_sess(struct hs_mcp_sess *ms, char *err, size_t errlen)
{
	hs_session_close(&ms->hs, ms->hs.persistent, err, errlen);
	hs_job_guards_free(&ms->hs);
	hs_session_free(&ms->hs);
	ms->used = 0;
}

void
hs_mcp_close_all(struct hs_mcp *m)
{
	for (int i = 0; i < HS_MCP_MAX_SESSIONS; i++)
		if (m->sess[i].used)
			close_sess(&m->sess[i], NULL, 0);
}

/* --- run ---------------------------------------------------------------- */

struct mcp_sink {
	struct hs_mcp *m;
	struct hs_capture cap[3];
	struct hs_mem_input in; /* its "stdin" */
};

static int
mcp_output(void *ctx, int stream, const void *buf, size_t len)
{
	struct mcp_sink *k = ctx;
	hs_capture_add(&k->cap[stream], buf, len);
	hs_mcp_progress(k->m, buf, len);
	return 0;
}

static long
mcp_input(void *ctx, void *buf, size_t len)
{
	struct mcp_sink *k = ctx;
	return hs_mem_input_read(&k->in, buf, len);
}

static int
mcp_cancelled(void *ctx)
{
	struct mcp_sink *k = ctx;
	return hs_mcp_call_cancelled(k->m);
}

struct hs_mcp_sess *
hs_mcp_session(struct hs_mcp *m, const char *name, char *err, size_t errlen)
{
	struct hs_mcp_sess *ms = find_sess(m, name ? name : "default");
	if (ms)
		return ms;
	if (name) {
		snprintf(err, errlen, "session '%s' is not open: open it with session_open first", name);
		return NULL;
	}
	return open_sess(m, "default", m->default_name, 0, NULL, err, errlen);
}

/* A background run: the job started. */
static int
run_background(struct hs_mcp_sess *ms, struct hs_cmd_req *rq, yajl_gen out, char *err,
               size_t errlen)
{
	struct hs_cmd_result res;
	rq->background = 1;
	if (hs_session_exec(&ms->hs, rq, NULL, &res) != HS_OUTCOME_OK) {
		snprintf(err, errlen, "%s", res.why);
		return -1;
	}
	char name[32];
	snprintf(name, sizeof(name), "j%u", res.job->number);
	yajl_gen_map_open(out);
	hs_json_kstr(out, "job", name);
	hs_json_kbool(out, "running", 1);
	yajl_gen_map_close(out);
	return 0;
}

/* A run handed off as job j: the output so far, and where the rest is. */
static void
handed_off_json(yajl_gen out, const struct hs_exec_out *o, struct hs_capture cap[3], int64_t after)
{
	char name[32], msg[400];
	snprintf(name, sizeof(name), "j%u", o->job->number);
	snprintf(msg, sizeof(msg), "still running after %llds: it goes on as job %s; read its output "
	         "with job_output (stdout and stderr from offset 0 hold everything) and stop it with "
	         "job_kill; until it ends, further runs in this session are refused (background "
	         "runs and other sessions work)", (long long)after, name);
	yajl_gen_map_open(out);
	hs_json_kstr(out, "job", name);
	hs_json_kbool(out, "running", 1);
	for (int i = 1; i <= 2; i++) {
		size_t n;
		char *b = hs_capture_join(&cap[i], &n);
		hs_json_kbytes(out, i == 1 ? "stdout" : "stderr", b ? b : "", b ? n : 0);
		free(b);
	}
	hs_json_kint(out, "duration_ms", o->duration_ms);
	hs_json_kstr(out, "message", msg);
	yajl_gen_map_close(out);
}

static int
tool_run(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	struct hs_cmd_req rq = { .command = hs_serve_str(args, "command"),
	                         .cwd = hs_serve_str(args, "cwd"), .timeout_s = -1,
	                         .bounded = 1, .keep_state = 1, .handoff_ms = m->handoff_s * 1000 };
	struct mcp_sink k = { .m = m, .in = { .data = hs_serve_str(args, "stdin") } };
	if (!rq.command) {
		snprintf(err, errlen, "run needs a \"command\" string");
		return -1;
	}
	if (hs_serve_seconds(args, "timeout", &rq.timeout_s) < 0) {
		snprintf(err, errlen, "timeout must be a number of seconds, 0 or more");
		return -1;
	}
	struct hs_mcp_sess *ms = hs_mcp_session(m, hs_serve_str(args, "session"), err, errlen);
	if (!ms)
		return -1;
	/* A terminal or an open stdin is for a job driven with job_write: background. */
	struct hs_job_op_err e;
	if (hs_job_pty_request(&ms->hs, args, &rq, &e) < 0) {
		snprintf(err, errlen, "%s", e.why);
		return -1;
	}
	if (hs_serve_true(args, "background") || rq.pty_rows || rq.stdin_open) {
		if (k.in.data) {
			snprintf(err, errlen, "a background run takes no stdin: give it a file instead, "
			         "or write to it with job_write (stdin_open true)");
			return -1;
		}
		return run_background(ms, &rq, out, err, errlen);
	}
	/* The session shell runs one command at a time: while a handed-off one
	 * still runs, the session refuses rather than queue behind it. */
	struct hs_job *holder;
	if (hs_conn_pump(&ms->hs.cn, 0, err, errlen) >= 0 && (holder = hs_conn_shell_holder(&ms->hs.cn))) {
		snprintf(err, errlen, "session '%s' is busy: job j%u (a run handed off to the background) "
		         "still runs in its shell; wait for it with job_output, stop it with job_kill, "
		         "or run in another session (session_open)", ms->shown, holder->number);
		return -1;
	}
	k.in.len = k.in.data ? strlen(k.in.data) : 0;
	for (int i = 1; i <= 2; i++)
		hs_capture_init(&k.cap[i], (size_t)ms->hs.lim.output_limit);
	int nullfd = k.in.data ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
	struct hs_sink_ops sink = { .ctx = &k, .output = mcp_output, .input = mcp_input,
	                            .input_fd = nullfd, .cancelled = mcp_cancelled,
	                            .cancel_fd = m->cancel_fd };
	rq.stdin_pipe = nullfd >= 0;
	struct hs_cmd_result res;
	int oc = hs_session_exec(&ms->hs, &rq, &sink, &res);
	if (oc == HS_OUTCOME_OK && res.out.job) {
		handed_off_json(out, &res.out, k.cap, m->handoff_s);
	} else if (oc == HS_OUTCOME_OK) {
		yajl_gen_map_open(out);
		hs_capture_json_result(out, &res.out, k.cap, res.restored);
		hs_json_kbool(out, "running", 0);
		hs_job_left_json(out, &res.out);
		hs_output_json(out, &ms->hs.cn, ms->hs.lim.output_keep, &res.out, 1, 0);
		yajl_gen_map_close(out);
	} else {
		snprintf(err, errlen, "%s", res.why);
	}
	if (nullfd >= 0)
		close(nullfd);
	for (int i = 1; i <= 2; i++)
		hs_capture_free(&k.cap[i]);
	return oc == HS_OUTCOME_OK ? 0 : -1;
}

/* --- check and sessions ------------------------------------------------- */

static int
tool_check(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	const char *command = hs_serve_str(args, "command");
	if (!command) {
		snprintf(err, errlen, "check needs a \"command\" string");
		return -1;
	}
	yajl_gen_map_open(out);
	if (hs_check_gen(m->c, command, HS_CONTEXT_HOST, hs_approval_mode_name(m->mode), out) < 0) {
		snprintf(err, errlen, "cannot load the safety policy: see hs check --help");
		return -1;
	}
	yajl_gen_map_close(out);
	return 0;
}

static void
sess_json(yajl_gen g, const struct hs_mcp_sess *ms)
{
	yajl_gen_map_open(g);
	hs_json_kstr(g, "session", ms->shown);
	hs_json_kstr(g, "backend", ms->hs.rec.backend);
	hs_json_kbool(g, "persistent", ms->hs.persistent);
	if (ms->adopted) {
		hs_json_key(g, "adopted");
		yajl_gen_array_open(g);
		for (unsigned i = 0; i < ms->adopted; i++) {
			char jn[32];
			snprintf(jn, sizeof(jn), "j%u", ms->adopt_first + i);
			hs_json_str(g, jn);
		}
		yajl_gen_array_close(g);
	}
	/* network "allowlist" mapped onto the backend's own filter: how much weaker. */
	if (ms->hs.egress_note[0])
		hs_json_kstr(g, "egress_warning", ms->hs.egress_note);
	yajl_gen_map_close(g);
}

static int
tool_session_open(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	const char *name = hs_serve_str(args, "session");
	if (!name || !hs_session_name_valid(name)) {
		snprintf(err, errlen, "session must be a name of 1-64 characters [A-Za-z0-9._-]");
		return -1;
	}
	if (find_sess(m, name)) {
		snprintf(err, errlen, "session '%s' is already open in this connection", name);
		return -1;
	}
	const char *real = strcmp(name, "default") ? name : m->default_name;
	struct hs_mcp_sess *ms = open_sess(m, name, real, hs_serve_true(args, "persistent"), args, err,
	                                   errlen);
	if (!ms)
		return -1;
	sess_json(out, ms);
	return 0;
}

static int
tool_session_close(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	const char *name = hs_serve_str(args, "session");
	struct hs_mcp_sess *ms = name ? find_sess(m, name) : NULL;
	if (!ms) {
		snprintf(err, errlen, "session '%s' is not open in this connection (see session_list)",
		         name ? name : "");
		return -1;
	}
	int kept = ms->hs.persistent;
	err[0] = '\0';
	close_sess(ms, err, errlen);
	if (err[0])
		return -1;
	yajl_gen_map_open(out);
	hs_json_kstr(out, "session", name);
	hs_json_kbool(out, "closed", 1);
	hs_json_kbool(out, "kept", kept);
	yajl_gen_map_close(out);
	return 0;
}

static int
tool_session_list(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	yajl_gen_map_open(out);
	hs_json_key(out, "sessions");
	yajl_gen_array_open(out);
	for (int i = 0; i < HS_MCP_MAX_SESSIONS; i++)
		if (m->sess[i].used)
			sess_json(out, &m->sess[i]);
	yajl_gen_array_close(out);
	yajl_gen_map_close(out);
	return 0;
}

int
hs_mcp_tool_call(struct hs_mcp *m, const char *name, yajl_val args, yajl_gen out, char *err,
                 size_t errlen)
{
	static const struct {
		const char *name;
		int (*fn)(struct hs_mcp *, yajl_val, yajl_gen, char *, size_t);
	} tools[] = {
		{ "run", tool_run },
		{ "check", tool_check },
		{ "session_open", tool_session_open },
		{ "session_close", tool_session_close },
		{ "session_list", tool_session_list },
		{ "job_list", hs_mcp_job_list },
		{ "job_output", hs_mcp_job_output },
		{ "job_kill", hs_mcp_job_kill },
		{ "job_write", hs_mcp_job_write },
		{ "job_resize", hs_mcp_job_resize },
		{ "output_read", hs_mcp_output_read },
		{ "read_file", hs_mcp_read_file },
		{ "write_file", hs_mcp_write_file },
	};
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		if (!strcmp(tools[i].name, name))
			return tools[i].fn(m, args, out, err, errlen) < 0 ? -1 : 0;
	return 1;
}
