/* SPDX-License-Identifier: MIT */
/*
 * serve-sess.c - the session threads of `hs serve`: each runs its session's
 * requests in order (open, exec, job, put_file, get_file, close), asks the
 * client for approvals, and streams a foreground command's output.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "core/safety/approval.h"
#include "core/guard.h"
#include "core/shell.h"
#include "core/capture.h"
#include "core/cli/cmds.h"
#include "core/core.h"
#include "core/env.h"
#include "core/exec.h"
#include "core/config/hsconf.h"
#include "core/json.h"
#include "core/safety/audit.h"
#include "core/safety/redact.h"
#include "core/job-ops.h"
#include "core/screen.h"
#include "core/serve/serve-req.h"
#include "core/serve/serve.h"

extern char **environ;

#define SRV_APPROVAL_WAIT_S 300

/* --- approval through the client ------------------------------------- */

/* The client answers through an approval event (ctx: the sess). */
static int
srv_ask(void *ctx, const char *command, const struct hs_analysis *a)
{
	struct sess *ss = ctx;
	struct srv *s = ss->srv;

	pthread_mutex_lock(&ss->mu);
	if (s->eof) {
		pthread_mutex_unlock(&ss->mu);
		return HS_DECIDE_DENY; /* a vanished client denies */
	}
	/* Not under s->mu: the approve op takes s->mu, then ss->mu. */
	snprintf(ss->approval_req, sizeof(ss->approval_req), "a%u",
	         __atomic_add_fetch(&s->approvals, 1, __ATOMIC_RELAXED));
	ss->approval_answer = -1;
	pthread_mutex_unlock(&ss->mu);

	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	srv_gen_id(g, ss->ask_id);
	hs_json_kstr(g, "event", "approval");
	hs_json_kstr(g, "request", ss->approval_req);
	hs_json_kstr(g, "session", ss->name);
	hs_json_kstr(g, "command", command);
	hs_rules_json(g, a);
	yajl_gen_map_close(g);
	srv_emit(s, g);

	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += SRV_APPROVAL_WAIT_S;
	pthread_mutex_lock(&ss->mu);
	while (ss->approval_answer < 0 && !s->eof) {
		if (pthread_cond_timedwait(&ss->cv, &ss->mu, &dl) == ETIMEDOUT)
			break;
	}
	int d = ss->approval_answer < 0 ? HS_DECIDE_DENY : ss->approval_answer;
	ss->approval_req[0] = '\0';
	pthread_mutex_unlock(&ss->mu);
	return d;
}

static void srv_egress(void *ctx, int allowed, const struct hs_audit_egress *e);

void
srv_sess_init(struct sess *ss, int mode, int persistent)
{
	ss->asker = (struct hs_asker){ ss, srv_ask, "client" };
	hs_session_init(&ss->hs, ss->srv->c, ss->name, persistent, mode, &ss->asker);
	ss->hs.egress_event = srv_egress;
	ss->hs.egress_event_ctx = ss;
}

/* --- exec --------------------------------------------------------------- */

struct srv_sink {
	struct sess *ss;
	yajl_val id;
	int stream;
	struct srv_stream events; /* stream: the output events, with offsets */
	struct hs_capture cap[3];
	struct hs_mem_input in; /* the exec's "stdin" */
	int pty;                /* on a terminal: its stream is stdout */
};

static int
srv_output(void *ctx, int stream, const void *buf, size_t len)
{
	struct srv_sink *k = ctx;
	hs_capture_add(&k->cap[stream], buf, len);
	if (k->stream)
		srv_stream_output(&k->events, stream, buf, len);
	return 0;
}

/*
 * An egress attempt of the session (network "allowlist"), allowed or
 * refused: an "egress" event carrying the id of the exec running then
 * (null between commands).  Called on the relay's thread.
 */
static void
srv_egress(void *ctx, int allowed, const struct hs_audit_egress *e)
{
	struct sess *ss = ctx;
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	pthread_mutex_lock(&ss->mu);
	srv_gen_id(g, ss->running_id);
	pthread_mutex_unlock(&ss->mu);
	hs_json_kstr(g, "event", "egress");
	hs_json_kstr(g, "session", ss->name);
	hs_json_kstr(g, "decision", allowed ? "allow" : "deny");
	hs_json_kstr(g, "kind", e->kind);
	hs_json_kstr(g, "host", e->host);
	hs_json_kint(g, "port", e->port);
	hs_json_kstr(g, "address", e->address);
	hs_json_kstr(g, "rule", e->rule);
	hs_json_kstr(g, "reason", e->reason);
	hs_json_kint(g, "bytes_out", (long long)e->bytes_out);
	hs_json_kint(g, "bytes_in", (long long)e->bytes_in);
	yajl_gen_map_close(g);
	srv_emit(ss->srv, g);
}

static void
srv_gap(void *ctx, int stream, uint64_t bytes)
{
	struct srv_sink *k = ctx;
	if (k->stream)
		srv_stream_gap(&k->events, stream, bytes);
}

/* The command waits for input: an event, once per wait. */
static void
srv_waiting(void *ctx, const char *prompt)
{
	struct srv_sink *k = ctx;
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	srv_gen_id(g, k->id);
	hs_json_kstr(g, "event", "waiting_input");
	hs_json_kstr(g, "session", k->ss->name);
	hs_json_kbytes(g, "prompt", prompt, strlen(prompt));
	yajl_gen_map_close(g);
	srv_emit(k->ss->srv, g);
}

static long
srv_input(void *ctx, void *buf, size_t len)
{
	struct srv_sink *k = ctx;
	return hs_mem_input_read(&k->in, buf, len);
}

static int
srv_cancelled(void *ctx)
{
	struct srv_sink *k = ctx;
	char buf[16];
	if (read(k->ss->cancel_pipe[0], buf, sizeof(buf)) <= 0)
		return 0;
	k->events.stopping = 1;
	return 1;
}


/* The reply to a background exec: the job's name. */
static void
reply_job(struct sess *ss, struct req *r, const struct hs_job *job)
{
	char name[32];
	snprintf(name, sizeof(name), "j%u", job->number);
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kstr(g, "job", name);
	yajl_gen_map_close(g);
	srv_emit(ss->srv, g);
}

/* The fields of a job's output from "offset" (output replies). */
static void
job_output_json(yajl_gen g, struct req *r, struct hs_job *j)
{
	const char *st = hs_serve_str(r->root, "stream");
	int stream = st && !strcmp(st, "stderr") ? 2 : 1;
	uint64_t off = hs_serve_uint(r->root, "offset", 0);
	size_t len = 0;
	uint64_t next = 0;
	int gap = 0;
	char *data = hs_capture_from(&j->cap[stream], off, &len, &next, &gap);
	hs_json_kstr(g, "stream", stream == 1 ? "stdout" : "stderr");
	hs_json_kint(g, "offset", (long long)off);
	hs_json_kbytes(g, "data", data ? data : "", data ? len : 0);
	hs_json_kint(g, "next_offset", (long long)next);
	hs_json_kbool(g, "gap", gap);
	hs_json_kbool(g, "running", !j->done);
	free(data);
}

#define SHELL_JOBS_MAX 64

/* A job of the session shell ("sID"): list, poll, output (its log), kill. */
static void
do_shell_job(struct sess *ss, struct req *r, const char *name, const char *action)
{
	struct srv *s = ss->srv;
	struct hs_shell_job jobs[SHELL_JOBS_MAX], *j = NULL;
	unsigned long long id = 0;
	char err[1024] = "";
	int n = hs_conn_shell_jobs(&ss->hs.cn, jobs, SHELL_JOBS_MAX, err, sizeof(err));

	if (n < 0) {
		srv_reply_error(s, r->id, "backend_error", err);
		return;
	}
	yajl_gen g;
	if (!strcmp(action, "list")) {
		g = srv_reply_ok(r->id);
		hs_json_key(g, "jobs");
		yajl_gen_array_open(g);
		for (int i = 0; i < n; i++) {
			yajl_gen_map_open(g);
			hs_shell_job_json(g, &jobs[i]);
			yajl_gen_map_close(g);
		}
		yajl_gen_array_close(g);
		yajl_gen_map_close(g);
		srv_emit(s, g);
		return;
	}
	if (sscanf(name, "s%llu", &id) == 1)
		for (int i = 0; i < n; i++)
			if (jobs[i].id == id)
				j = &jobs[i];
	if (!j) {
		srv_reply_error(s, r->id, "no_job", "no job of that name in this session");
		return;
	}
	if (!strcmp(action, "kill")) {
		int k = hs_conn_shell_job_signal(&ss->hs.cn, j->id, SIGTERM, err, sizeof(err));
		if (k < 0) {
			srv_reply_error(s, r->id, "backend_error", err);
			return;
		}
		g = srv_reply_ok(r->id);
		hs_json_kbool(g, "killed", k == 0);
		hs_shell_job_json(g, j);
	} else if (!strcmp(action, "output")) {
		const char *st = hs_serve_str(r->root, "stream");
		int stream = st && !strcmp(st, "stderr") ? 2 : 1;
		uint64_t off = hs_serve_uint(r->root, "offset", 0);
		void *buf = NULL;
		size_t from, take, total;
		if (hs_conn_shell_job_read(&ss->hs.cn, j, stream, off, (size_t)ss->hs.lim.output_limit,
		                           &buf, &from, &take, &total, err, sizeof(err)) < 0) {
			srv_reply_error(s, r->id, "backend_error", err);
			return;
		}
		g = srv_reply_ok(r->id);
		hs_json_kstr(g, "job", name);
		hs_json_kstr(g, "stream", stream == 1 ? "stdout" : "stderr");
		hs_json_kint(g, "offset", (long long)from);
		hs_json_kbytes(g, "data", buf ? (const char *)buf + from : "", take);
		hs_json_kint(g, "next_offset", (long long)(from + take));
		hs_json_kbool(g, "running", j->alive);
		free(buf);
	} else {
		g = srv_reply_ok(r->id);
		hs_shell_job_json(g, j);
	}
	yajl_gen_map_close(g);
	srv_emit(s, g);
}

/* {"op":"job","session":S,"job":"jN"|"sID","action":"poll"|"output"|"kill"}, or
 * {"op":"job","session":S,"action":"list"}: the shell's background jobs. */
static int
do_job(struct sess *ss, struct req *r)
{
	struct srv *s = ss->srv;
	const char *name = hs_serve_str(r->root, "job");
	const char *action = hs_serve_str(r->root, "action");
	char err[1024];
	unsigned n = 0;

	if (action && !strcmp(action, "list")) {
		do_shell_job(ss, r, "", action);
		return 0;
	}
	if (name && name[0] == 's' && action &&
	    (!strcmp(action, "poll") || !strcmp(action, "output") || !strcmp(action, "kill"))) {
		do_shell_job(ss, r, name, action);
		return 0;
	}
	if (!name || sscanf(name, "j%u", &n) != 1 || !action ||
	    (strcmp(action, "poll") && strcmp(action, "output") && strcmp(action, "kill"))) {
		srv_reply_error(s, r->id, "invalid_request",
		                "job needs \"job\" (\"jN\" or \"sID\") and \"action\" (poll, output, kill), "
		                "or \"action\": \"list\"");
		return 0;
	}
	if (hs_conn_pump(&ss->hs.cn, 0, err, sizeof(err)) < 0) {
		srv_reply_error(s, r->id, "backend_error", err);
		return 0;
	}
	struct hs_job *j = hs_conn_job(&ss->hs.cn, n);
	if (!j) {
		srv_reply_error(s, r->id, "no_job", "no job of that name in this session");
		return 0;
	}
	int screen = !strcmp(action, "output") && hs_serve_true(r->root, "screen");
	struct hs_screen_shot shot;
	struct hs_job_op_err e;
	if (screen && hs_job_screen(r->root, j, &shot, &e) < 0) {
		srv_reply_error(s, r->id, e.code, e.why);
		return 0;
	}
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kstr(g, "job", name);
	if (!strcmp(action, "kill"))
		hs_json_kbool(g, "killed", !j->done && hs_conn_job_kill(&ss->hs.cn, j) == 0);
	if (screen) {
		hs_screen_shot_json(g, &shot);
		hs_screen_shot_free(&shot);
	}
	if (!strcmp(action, "output"))
		job_output_json(g, r, j);
	else
		hs_job_state_json(g, j);
	yajl_gen_map_close(g);
	srv_emit(s, g);
	return 0;
}

/* A cancel sent before this exec is not for it; while it runs, cancel finds
 * it (ctx: the sess, whose ask_id is the exec's request id). */
static void
exec_running(void *ctx, int on)
{
	struct sess *ss = ctx;
	char drain[16];
	while (on && read(ss->cancel_pipe[0], drain, sizeof(drain)) > 0)
		;
	pthread_mutex_lock(&ss->mu);
	ss->running_id = on ? ss->ask_id : NULL;
	pthread_mutex_unlock(&ss->mu);
}

/* The error code of an outcome that is not OK. */
static const char *
outcome_code(int oc)
{
	return oc == HS_OUTCOME_INVALID ? "invalid_request" : oc == HS_OUTCOME_DENIED ? "denied"
	       : oc == HS_OUTCOME_AUDIT ? "audit_failed" : "backend_error";
}

/* The exec request of r, its env strings in kv (free them); 0, or -1 after an error reply. */
static int
exec_request(struct sess *ss, struct req *r, struct hs_cmd_req *rq, char **kv, const char **sets)
{
	*rq = (struct hs_cmd_req){
		.command = hs_serve_str(r->root, "command"),
		.cwd = hs_serve_str(r->root, "cwd"),
		.approval = hs_serve_str(r->root, "approval"),
		.timeout_s = -1,
		.bounded = 1,
		.keep_state = 1,
		.background = hs_serve_true(r->root, "background"),
		.running = exec_running,
		.running_ctx = ss,
	};
	if (!rq->command) {
		srv_reply_error(ss->srv, r->id, "invalid_request", "exec needs a \"command\" string");
		return -1;
	}
	if (hs_serve_seconds(r->root, "timeout", &rq->timeout_s) < 0) {
		srv_reply_error(ss->srv, r->id, "invalid_request",
		                "timeout must be a number of seconds, 0 or more");
		return -1;
	}
	/* "K=V" strings for the env member; each session thread has its own. */
	int ne = hs_serve_env(r->root, kv, 64);
	if (ne < 0) {
		srv_reply_error(ss->srv, r->id, "invalid_request",
		                "env must map names to strings (64 at most)");
		return -1;
	}
	for (int i = 0; i < ne; i++)
		sets[i] = kv[i];
	rq->sets = sets;
	rq->n_sets = (size_t)ne;
	if (srv_pty_request(ss, r, rq) < 0) {
		for (int i = 0; i < ne; i++)
			free(kv[i]);
		return -1;
	}
	return 0;
}

/* The reply to a foreground exec that ran. */
static void
reply_result(struct sess *ss, struct req *r, const struct hs_cmd_result *res, struct srv_sink *k)
{
	yajl_gen g = srv_reply_ok(r->id);
	hs_capture_json_result(g, &res->out, k->cap, res->restored);
	if (k->stream)
		hs_json_kint(g, "stream_dropped", (long long)k->events.dropped);
	if (k->pty)
		hs_json_kbool(g, "pty", 1);
	srv_output_fields(ss, g, res, hs_serve_true(r->root, "spill"));
	hs_job_left_json(g, &res->out);
	yajl_gen_map_close(g);
	srv_emit(ss->srv, g);
}

/* Put rq through the pipeline with the client's stdin and output sink, and reply. */
static void
exec_foreground(struct sess *ss, struct req *r, struct hs_cmd_req *rq)
{
	struct srv_sink k = { .ss = ss, .id = r->id, .stream = hs_serve_true(r->root, "stream"),
	                      .pty = rq->pty_rows != 0, .events = { .ss = ss, .id = r->id } };
	void *stdin_owned = NULL;
	if (hs_serve_bytes(r->root, "stdin", &k.in.data, &k.in.len, &stdin_owned) < 0) {
		srv_reply_error(ss->srv, r->id, "invalid_request", "stdin_b64 is not valid base64");
		return;
	}
	for (int i = 1; i <= 2; i++)
		hs_capture_init(&k.cap[i], (size_t)ss->hs.lim.output_limit);
	int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct hs_sink_ops sink = {
		.ctx = &k, .output = srv_output, .input = srv_input,
		.input_fd = k.in.data ? nullfd : -1, .cancelled = srv_cancelled,
		.cancel_fd = ss->cancel_pipe[0], .waiting = srv_waiting, .gap = srv_gap,
	};
	rq->stdin_pipe = k.in.data != NULL;
	/* Streamed output is complete: the runner pauses the command while the
	 * client is behind, instead of keeping only head and tail; the reply
	 * still holds head and tail (k.cap). */
	if (k.stream) {
		rq->bounded = 0;
		rq->keep_output = 1;
	}
	struct hs_cmd_result res;
	int oc = hs_session_exec(&ss->hs, rq, &sink, &res);
	if (k.stream)
		srv_stream_flush(&k.events);
	if (oc == HS_OUTCOME_OK)
		reply_result(ss, r, &res, &k);
	else
		srv_reply_error(ss->srv, r->id, outcome_code(oc),
		                oc == HS_OUTCOME_INVALID && rq->n_sets ? "env: invalid variable name" : res.why);
	if (nullfd >= 0)
		close(nullfd);
	free(stdin_owned);
	for (int i = 1; i <= 2; i++)
		hs_capture_free(&k.cap[i]);
}

static int
do_exec(struct sess *ss, struct req *r)
{
	struct hs_cmd_req rq;
	char *kv[64];
	const char *sets[64];

	if (exec_request(ss, r, &rq, kv, sets) < 0)
		return 0;
	if (rq.background) {
		struct hs_cmd_result res;
		int oc = hs_session_exec(&ss->hs, &rq, NULL, &res);
		if (oc == HS_OUTCOME_OK)
			reply_job(ss, r, res.job);
		else
			srv_reply_error(ss->srv, r->id, outcome_code(oc), res.why);
	} else {
		exec_foreground(ss, r, &rq);
	}
	for (size_t i = 0; i < rq.n_sets; i++)
		free(kv[i]);
	return 0;
}

/*
 * "network": {"allow": ["pypi.org", ...]} is network "allowlist" with those
 * entries (allow[64]; *n_allow stays 0 for a string network).  0, or -1 with *what.
 */
static int
egress_spec(yajl_val root, struct hs_env_spec *spec, const char **allow, size_t *n_allow,
            const char **what)
{
	yajl_val net = hs_serve_val(root, "network");
	*n_allow = 0;
	if (!net || YAJL_IS_STRING(net))
		return 0;
	const char *path[] = { "allow", NULL };
	yajl_val list = YAJL_IS_OBJECT(net) ? yajl_tree_get(net, path, yajl_t_array) : NULL;
	if (!list || list->u.array.len > 64) {
		*what = "\"network\" must be a string or {\"allow\": [up to 64 entries]}";
		return -1;
	}
	for (size_t i = 0; i < list->u.array.len; i++) {
		if (!YAJL_IS_STRING(list->u.array.values[i])) {
			*what = "\"network\".\"allow\" entries must be strings";
			return -1;
		}
		allow[(*n_allow)++] = YAJL_GET_STRING(list->u.array.values[i]);
	}
	spec->network = "allowlist";
	return 0;
}

/* The environment spec of an open request (mounts into mounts[32], allow
 * entries into allow[64]); 0, or -1 with *what. */
static int
open_spec(struct sess *ss, struct req *r, struct hs_env_spec *spec, const char **mounts,
          const char **allow, size_t *n_allow, const char **what)
{
	size_t nm = 0;
	*spec = (struct hs_env_spec){ .struct_size = sizeof(*spec) };
	spec->image = hs_serve_str(r->root, "image");
	spec->network = hs_serve_str(r->root, "network");
	if (egress_spec(r->root, spec, allow, n_allow, what) < 0)
		return -1;
	if (hs_serve_spec(r->root, &spec->memory_bytes, &spec->cpus_milli, what) < 0)
		return -1;
	if (hs_serve_true(r->root, "isolate"))
		spec->flags |= HS_SPEC_ISOLATE;
	/* The workspace the local backend's isolated mode binds: "workspace", else the configured one. */
	spec->workdir = hs_serve_str(r->root, "workspace");
	if (!spec->workdir)
		hs_conf_string(ss->srv->c->conf, "workspace", &spec->workdir);
	yajl_val mv = hs_serve_val(r->root, "mounts");
	if (mv && YAJL_IS_ARRAY(mv))
		for (size_t i = 0; i < mv->u.array.len && nm < 32; i++)
			if (YAJL_IS_STRING(mv->u.array.values[i]))
				mounts[nm++] = YAJL_GET_STRING(mv->u.array.values[i]);
	spec->mounts = mounts;
	spec->n_mounts = (uint32_t)nm;
	return 0;
}

/* The reply to an open: what the environment is, and the jobs adopted. */
static void
reply_open(struct sess *ss, struct req *r, unsigned first, unsigned adopted)
{
	struct hs_conn *cn = &ss->hs.cn;
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kstr(g, "session", ss->name);
	hs_json_kstr(g, "backend", cn->be->plugin.name);
	hs_json_kbool(g, "host_access", cn->props.host_access);
	hs_json_kstr(g, "isolation", cn->props.isolation);
	hs_json_kstr(g, "approval", hs_approval_mode_name(ss->hs.mode));
	/* Network "allowlist" mapped onto the backend's own filter: how much weaker. */
	if (ss->hs.egress_note[0])
		hs_json_kstr(g, "egress_warning", ss->hs.egress_note);
	hs_json_key(g, "adopted");
	yajl_gen_array_open(g);
	for (unsigned i = 0; i < adopted; i++) {
		char jn[32];
		snprintf(jn, sizeof(jn), "j%u", first + i);
		hs_json_str(g, jn);
	}
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	srv_emit(ss->srv, g);
}

/*
 * A failed open: the session is marked closed before the reply goes out, so
 * a request the client sends after reading it finds no session (rather than
 * waiting in the queue of a thread that is ending).
 */
static void
open_failed(struct sess *ss, struct req *r, const char *code, const char *msg)
{
	pthread_mutex_lock(&ss->mu);
	ss->closing = 2;
	pthread_mutex_unlock(&ss->mu);
	srv_reply_error(ss->srv, r->id, code, msg);
}

/* Open the session's environment; 0, or -1 after an error reply. */
static int
do_open(struct sess *ss, struct req *r)
{
	char err[1024];
	struct hs_env_spec spec;
	const char *mounts[32], *allow[64], *what = NULL;
	size_t n_allow = 0;

	if (open_spec(ss, r, &spec, mounts, allow, &n_allow, &what) < 0) {
		open_failed(ss, r, "invalid_request", what);
		return -1;
	}
	/* A session starts in its workspace, else where the client says
	 * ("cwd"), else (local) in serve's own directory. */
	ss->hs.start_cwd = hs_serve_str(r->root, "cwd");
	ss->hs.caller_cwd = 1;
	const char *sc = ss->hs.start_cwd;
	if (sc && sc[0] != '/') {
		open_failed(ss, r, "invalid_request", "\"cwd\" must be an absolute path");
		return -1;
	}
	/* An empty list in an object is still a list: no egress at all. */
	ss->hs.allow = spec.network && !hs_serve_str(r->root, "network") ? allow : NULL;
	ss->hs.n_allow = n_allow;
	int oc = hs_session_open(&ss->hs, hs_serve_str(r->root, "backend"), &spec, err, sizeof(err));
	ss->hs.start_cwd = NULL;
	ss->hs.allow = NULL;
	if (oc != HS_OUTCOME_OK) {
		open_failed(ss, r, oc == HS_OUTCOME_FAILED ? "open_failed" : outcome_code(oc), err);
		return -1;
	}
	/* Commands a killed client left in the runner become jobs, so their
	 * output and exit can still be read (and nothing stops them by accident). */
	unsigned first = 0, adopted = 0;
	if (hs_conn_adopt(&ss->hs.cn, (size_t)ss->hs.lim.output_limit, &first, &adopted, err,
	                  sizeof(err)) < 0)
		hs_warn("session '%s': %s", ss->name, err);
	reply_open(ss, r, first, adopted);
	return 0;
}

/* Close the session (r NULL: the client went away); replies to r. */
static void
close_session(struct sess *ss, struct req *r, int keep)
{
	char err[1024] = "";
	/* Not persistent: the environment is torn down through the open handle
	 * and the record forgotten, both under the session's lock.  A failed
	 * teardown keeps the record, so `hs session close` can try again. */
	int failed = hs_session_close(&ss->hs, keep, err, sizeof(err)) < 0;
	hs_job_guards_free(&ss->hs);
	if (failed && !r)
		hs_warn("session '%s': %s", ss->name, err);
	if (!r)
		return;
	/* Closed before the reply goes out, so the client can open the name
	 * again at once; and the cancel pipe is no longer needed (nothing
	 * runs), so its descriptors go now rather than when the thread is
	 * reaped. */
	pthread_mutex_lock(&ss->mu);
	ss->closing = 2;
	for (int i = 0; i < 2; i++) {
		close(ss->cancel_pipe[i]);
		ss->cancel_pipe[i] = -1;
	}
	pthread_mutex_unlock(&ss->mu);
	if (failed) {
		char msg[1200];
		snprintf(msg, sizeof(msg), "%s; the session record is kept (retry with 'hs session close %s')",
		         err, ss->name);
		srv_reply_error(ss->srv, r->id, "close_failed", msg);
		return;
	}
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kstr(g, "session", ss->name);
	hs_json_kbool(g, "kept", keep);
	yajl_gen_map_close(g);
	srv_emit(ss->srv, g);
}

static int
do_close(struct sess *ss, struct req *r)
{
	close_session(ss, r, 0);
	return 1;
}

/* The gate for a file op: judged as `cat > PATH` (put) or `cat PATH` (get).  1 to go on. */
static int
file_gate(struct sess *ss, struct req *r, const char *path, int put)
{
	struct hs_approval_out verdict;
	int allowed = hs_session_file_gate(&ss->hs, path, put, &verdict);
	if (!allowed)
		srv_reply_error(ss->srv, r->id, "denied", verdict.why);
	return allowed;
}

static void
put_file(struct sess *ss, struct req *r, const char *path)
{
	const char *data = NULL;
	size_t len = 0;
	void *buf = NULL;
	char err[1024];
	int got = hs_serve_bytes(r->root, "data", &data, &len, &buf);
	if (got <= 0) {
		srv_reply_error(ss->srv, r->id, "invalid_request", got < 0 ? "data_b64 is not valid base64"
		                                                  : "put_file needs \"data\" or \"data_b64\"");
		return;
	}
	uint32_t mode = (uint32_t)(hs_serve_uint(r->root, "mode", 0644) & 07777);
	int rc = hs_conn_put(&ss->hs.cn, path, mode, data, len, 1, err, sizeof(err));
	free(buf);
	if (rc < 0) {
		srv_reply_error(ss->srv, r->id, "file_error", err);
		return;
	}
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kint(g, "size", len);
	yajl_gen_map_close(g);
	srv_emit(ss->srv, g);
}

static void
get_file(struct sess *ss, struct req *r, const char *path)
{
	void *buf = NULL;
	size_t len = 0;
	char err[1024];
	if (hs_conn_get(&ss->hs.cn, path, 64u << 20, &buf, &len, err, sizeof(err)) < 0) {
		srv_reply_error(ss->srv, r->id, "file_error", err);
		return;
	}
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kint(g, "size", (long long)len);
	hs_json_kbytes(g, "data", buf, len);
	yajl_gen_map_close(g);
	srv_emit(ss->srv, g);
	free(buf);
}

static int
do_file(struct sess *ss, struct req *r, int put)
{
	const char *path = hs_serve_str(r->root, "path");
	if (!path || path[0] != '/') {
		srv_reply_error(ss->srv, r->id, "invalid_request", "an absolute \"path\" is required");
		return 0;
	}
	if (file_gate(ss, r, path, put))
		(put ? put_file : get_file)(ss, r, path);
	return 0;
}

static int
do_put(struct sess *ss, struct req *r)
{
	return do_file(ss, r, 1);
}

static int
do_get(struct sess *ss, struct req *r)
{
	return do_file(ss, r, 0);
}

/* The first op opens the session; a failed open ends the thread (the name is free again). */
static int
do_open_op(struct sess *ss, struct req *r)
{
	return do_open(ss, r) < 0;
}

/* The ops a session thread runs, in order; each returns 1 when the thread ends. */
static const struct {
	const char *op;
	int (*run)(struct sess *ss, struct req *r);
	int needs_open;
} session_ops[] = {
	{ "open", do_open_op, 0 },
	{ "exec", do_exec, 1 },
	{ "put_file", do_put, 1 },
	{ "get_file", do_get, 1 },
	{ "job", do_job, 1 },
	{ "resize", srv_do_resize, 1 },
	{ "write_stdin", srv_do_write_stdin, 1 },
	{ "output", srv_op_output, 1 },
	{ "close", do_close, 0 },
};

/* Run request r; 1 when the thread ends after it. */
static int
run_op(struct sess *ss, struct req *r)
{
	for (size_t i = 0; i < sizeof(session_ops) / sizeof(session_ops[0]); i++) {
		if (strcmp(r->op, session_ops[i].op) != 0)
			continue;
		if (session_ops[i].needs_open && !ss->hs.opened) {
			srv_reply_error(ss->srv, r->id, "no_session", "the session is not open");
			return 0;
		}
		ss->ask_id = r->id;
		return session_ops[i].run(ss, r);
	}
	return 0;
}

/* The next request, waiting (and taking the jobs' output while idle); NULL when closing. */
static struct req *
next_req(struct sess *ss)
{
	pthread_mutex_lock(&ss->mu);
	while (!ss->head && !ss->closing) {
		if (ss->hs.opened && hs_conn_jobs_running(&ss->hs.cn)) {
			/* Take the jobs' output while idle, so their spools stay small. */
			pthread_mutex_unlock(&ss->mu);
			char e[256];
			hs_conn_pump(&ss->hs.cn, 200, e, sizeof(e));
			pthread_mutex_lock(&ss->mu);
			continue;
		}
		pthread_cond_wait(&ss->cv, &ss->mu);
	}
	struct req *r = ss->head;
	if (r) {
		ss->head = r->next;
		if (!ss->head)
			ss->tail = NULL;
		ss->n_reqs--;
	}
	pthread_mutex_unlock(&ss->mu);
	if (r) {
		pthread_mutex_lock(&ss->srv->mu);
		ss->srv->req_bytes -= r->size;
		pthread_mutex_unlock(&ss->srv->mu);
	}
	return r;
}

/* Answer what was queued before the session closed (a client that did not wait for the reply). */
static void
drain_closed(struct sess *ss)
{
	pthread_mutex_lock(&ss->mu);
	struct req *r = ss->head;
	ss->head = ss->tail = NULL;
	ss->n_reqs = 0;
	pthread_mutex_unlock(&ss->mu);
	while (r) {
		struct req *next = r->next;
		pthread_mutex_lock(&ss->srv->mu);
		ss->srv->req_bytes -= r->size;
		pthread_mutex_unlock(&ss->srv->mu);
		srv_reply_error(ss->srv, r->id, "no_session", "the session was closed");
		yajl_tree_free(r->root);
		free(r);
		r = next;
	}
}

void *
srv_worker(void *arg)
{
	struct sess *ss = arg;
	for (;;) {
		struct req *r = next_req(ss);
		if (!r) {
			/* The client went away: a persistent session is kept. */
			close_session(ss, NULL, ss->hs.persistent);
			break;
		}
		int end = run_op(ss, r);
		yajl_tree_free(r->root);
		free(r);
		if (end) {
			drain_closed(ss);
			break;
		}
	}
	return NULL;
}
