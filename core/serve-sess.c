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
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "core/approval.h"
#include "core/guard.h"
#include "core/shell.h"
#include "core/capture.h"
#include "core/cmds.h"
#include "core/core.h"
#include "core/env.h"
#include "core/exec.h"
#include "core/hsconf.h"
#include "core/json.h"
#include "core/safety/redact.h"
#include "core/serve-req.h"
#include "core/serve.h"

extern char **environ;

#define SRV_APPROVAL_WAIT_S 300

/* --- approval through the client ------------------------------------- */

struct srv_asker_ctx {
	struct sess *ss;
	yajl_val id;
};

static int
srv_ask(void *ctx, const char *command, const struct hs_analysis *a)
{
	struct srv_asker_ctx *ac = ctx;
	struct sess *ss = ac->ss;
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
	srv_gen_id(g, ac->id);
	hs_json_kstr(g, "event", "approval");
	hs_json_kstr(g, "request", ss->approval_req);
	hs_json_kstr(g, "session", ss->name);
	hs_json_kstr(g, "command", command);
	hs_json_key(g, "rules");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < a->n_findings; i++) {
		yajl_gen_map_open(g);
		hs_json_kstr(g, "id", a->findings[i].rule_id);
		hs_json_kstr(g, "severity", a->findings[i].hardline ? "hardline" : "dangerous");
		hs_json_kstr(g, "description", a->findings[i].description);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
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

/* --- exec --------------------------------------------------------------- */

struct srv_sink {
	struct sess *ss;
	yajl_val id;
	int stream;
	uint64_t stream_dropped; /* output bytes not sent as events (slow client) */
	struct hs_capture cap[3];
	const char *stdin_data;
	size_t stdin_len, stdin_off;
};

static int
srv_output(void *ctx, int stream, const void *buf, size_t len)
{
	struct srv_sink *k = ctx;
	hs_capture_add(&k->cap[stream], buf, len);
	if (k->stream) {
		yajl_gen g = hs_json_new();
		yajl_gen_map_open(g);
		srv_gen_id(g, k->id);
		hs_json_kstr(g, "event", "output");
		hs_json_kstr(g, "stream", stream == 1 ? "stdout" : "stderr");
		hs_json_kbytes(g, "data", buf, len);
		yajl_gen_map_close(g);
		if (srv_emit_stream(k->ss, g) < 0)
			k->stream_dropped += len;
	}
	return 0;
}

static long
srv_input(void *ctx, void *buf, size_t len)
{
	struct srv_sink *k = ctx;
	size_t n = k->stdin_len - k->stdin_off;
	if (n > len)
		n = len;
	memcpy(buf, k->stdin_data + k->stdin_off, n);
	k->stdin_off += n;
	return (long)n;
}

static int
srv_cancelled(void *ctx)
{
	struct srv_sink *k = ctx;
	char buf[16];
	return read(k->ss->cancel_pipe[0], buf, sizeof(buf)) > 0;
}

static void
start_job(struct sess *ss, struct req *r, const struct hs_gate *gate, const struct hs_envlist *env,
          int64_t timeout, int64_t grace, size_t limit)
{
	struct hs_job *job;
	char err[1024];
	struct hs_exec_opts eo = {
		.command = gate->command,
		.cwd = hs_serve_str(r->root, "cwd"),
		.start_dir = ss->start_dir[0] ? ss->start_dir : NULL,
		.envp = env->v,
		.deadline_ms = timeout * 1000,
		.grace_ms = grace,
	};
	if (hs_conn_start_job(&ss->cn, &eo, limit, &job, err, sizeof(err)) < 0) {
		srv_reply_error(ss->srv, r->id, "backend_error", err);
		return;
	}
	char name[32];
	snprintf(name, sizeof(name), "j%u", job->number);
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kstr(g, "job", name);
	yajl_gen_map_close(g);
	srv_emit(ss->srv, g);
}

/* {"op":"job","session":S,"job":"jN","action":"poll"|"output"|"kill"} */
static void
do_job(struct sess *ss, struct req *r)
{
	struct srv *s = ss->srv;
	const char *name = hs_serve_str(r->root, "job");
	const char *action = hs_serve_str(r->root, "action");
	char err[1024];
	unsigned n = 0;

	if (!ss->opened) {
		srv_reply_error(s, r->id, "no_session", "the session is not open");
		return;
	}
	if (!name || sscanf(name, "j%u", &n) != 1 || !action) {
		srv_reply_error(s, r->id, "invalid_request", "job needs \"job\" (\"jN\") and \"action\" (poll, output, kill)");
		return;
	}
	if (hs_conn_pump(&ss->cn, 0, err, sizeof(err)) < 0) {
		srv_reply_error(s, r->id, "backend_error", err);
		return;
	}
	struct hs_job *j = hs_conn_job(&ss->cn, n);
	if (!j) {
		srv_reply_error(s, r->id, "no_job", "no job of that name in this session");
		return;
	}
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kstr(g, "job", name);
	if (!strcmp(action, "kill")) {
		hs_json_kbool(g, "killed", !j->done && hs_conn_job_kill(&ss->cn, j) == 0);
	} else if (!strcmp(action, "output")) {
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
	} else if (strcmp(action, "poll") != 0) {
		yajl_gen_free(g);
		srv_reply_error(s, r->id, "invalid_request", "action must be poll, output or kill");
		return;
	}
	if (strcmp(action, "output") != 0) {
		hs_json_kbool(g, "running", !j->done);
		if (j->done) {
			hs_json_kint(g, "exit_code", j->timed_out ? HS_EXIT_TIMEOUT : j->exit_code);
			hs_json_kbool(g, "timed_out", j->timed_out);
			hs_json_kbool(g, "cancelled", j->cancelled);
			hs_json_kint(g, "duration_ms", j->duration_ms);
		}
		hs_json_kint(g, "stdout_bytes", (long long)j->cap[1].total);
		hs_json_kint(g, "stderr_bytes", (long long)j->cap[2].total);
		hs_json_kint(g, "stdout_dropped", (long long)j->cap[1].dropped);
		hs_json_kint(g, "stderr_dropped", (long long)j->cap[2].dropped);
	}
	yajl_gen_map_close(g);
	srv_emit(s, g);
}

static void
do_exec(struct sess *ss, struct req *r)
{
	struct srv *s = ss->srv;
	struct hs_core *c = s->c;
	const char *command = hs_serve_str(r->root, "command");
	char err[1024];

	if (!command) {
		srv_reply_error(s, r->id, "invalid_request", "exec needs a \"command\" string");
		return;
	}
	if (!ss->opened) {
		srv_reply_error(s, r->id, "no_session", "the session is not open");
		return;
	}
	yajl_val bg = hs_serve_val(r->root, "background");
	int background = bg && YAJL_IS_TRUE(bg);
	int mode = ss->mode;
	const char *am = hs_serve_str(r->root, "approval");
	if (am) {
		int m = hs_approval_mode_parse(am);
		if (m < 0) {
			srv_reply_error(s, r->id, "invalid_request", "approval must be ask, deny or approve");
			return;
		}
		if (m < mode) /* exec may only narrow the session's mode */
			mode = m;
	}
	int64_t timeout = 0, limit = 1 << 20, grace = 2000, max_timeout = 0;
	hs_conf_int(c->conf, "timeout", &timeout);
	hs_conf_int(c->conf, "max_timeout", &max_timeout);
	hs_conf_int(c->conf, "output_limit", &limit);
	hs_conf_int(c->conf, "kill_grace_ms", &grace);
	if (hs_serve_seconds(r->root, "timeout", &timeout) < 0) {
		srv_reply_error(s, r->id, "invalid_request", "timeout must be a number of seconds, 0 or more");
		return;
	}
	if (max_timeout > 0 && (timeout <= 0 || timeout > max_timeout))
		timeout = max_timeout;

	/* "K=V" strings for the env member; each session thread has its own. */
	char *kv[64];
	const char *sets[64];
	int ne = hs_serve_env(r->root, kv, 64);
	if (ne < 0) {
		srv_reply_error(s, r->id, "invalid_request", "env must map names to strings (64 at most)");
		return;
	}
	size_t n_sets = (size_t)ne;
	for (size_t i = 0; i < n_sets; i++)
		sets[i] = kv[i];
	struct hs_envlist env;
	const char *const *pass = NULL;
	size_t n_pass = 0;
	const char *bad = NULL;
	hs_conf_strings(c->conf, "env_passthrough", &pass, &n_pass);
	int built = hs_env_build(&env, environ, pass, n_pass, sets, n_sets, ss->cn.merge_env, &bad);
	/* env variables are judged with the command: BASH_ENV=x runs code too. */
	char *gate_cmd = built < 0 ? NULL : hs_env_gate_command(sets, n_sets, command);
	for (size_t i = 0; i < n_sets; i++)
		free(kv[i]);
	if (built < 0) {
		srv_reply_error(s, r->id, "invalid_request", "env: invalid variable name");
		return;
	}
	if (!gate_cmd) {
		srv_reply_error(s, r->id, "internal", "out of memory");
		hs_env_free(&env);
		return;
	}
	struct hs_redactor *red = NULL;
	if (env.n_secrets)
		hs_redactor_new(&red, (const char *const *)env.secrets, env.n_secrets);
	struct srv_asker_ctx actx = { ss, r->id };
	struct hs_asker asker = { &actx, srv_ask, "client" };
	struct hs_gate gate = {
		.session = ss->name,
		.backend = ss->cn.be->plugin.name,
		.command = gate_cmd,
		.host = ss->cn.props.host_access,
		.mode = mode,
		.grants = &ss->grants,
		.asker = &asker,
		.redact = red,
	};
	struct hs_analysis an;
	struct hs_approval_out verdict;
	if (!hs_approval_gate(c, s->policy, &gate, &an, &verdict)) {
		srv_reply_error(s, r->id, strcmp(verdict.decision, "error") ? "denied" : "audit_failed",
		                verdict.why);
		hs_redactor_free(red);
		hs_env_free(&env);
		free(gate_cmd);
		return;
	}
	if (background) {
		start_job(ss, r, &gate, &env, timeout, grace, (size_t)limit);
		hs_redactor_free(red);
		hs_env_free(&env);
		free(gate_cmd);
		return;
	}
	struct srv_sink k = { .ss = ss, .id = r->id };
	yajl_val sv = hs_serve_val(r->root, "stream");
	k.stream = sv && YAJL_IS_TRUE(sv);
	for (int i = 1; i <= 2; i++)
		hs_capture_init(&k.cap[i], (size_t)limit);
	void *stdin_owned = NULL;
	if (hs_serve_bytes(r->root, "stdin", &k.stdin_data, &k.stdin_len, &stdin_owned) < 0) {
		srv_reply_error(s, r->id, "invalid_request", "stdin_b64 is not valid base64");
		hs_capture_free(&k.cap[1]);
		hs_capture_free(&k.cap[2]);
		hs_redactor_free(red);
		hs_env_free(&env);
		free(gate_cmd);
		return;
	}
	int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct hs_sink_ops sink = {
		.ctx = &k, .output = srv_output, .input = srv_input,
		.input_fd = k.stdin_data ? nullfd : -1, .cancelled = srv_cancelled,
		.cancel_fd = ss->cancel_pipe[0],
	};
	struct hs_exec_opts eo = {
		.command = command,
		.cwd = hs_serve_str(r->root, "cwd"),
		.start_dir = ss->start_dir[0] ? ss->start_dir : NULL,
		.envp = env.v,
		.deadline_ms = timeout * 1000,
		.grace_ms = grace,
		.head_bytes = (uint64_t)limit / 2,
		.tail_bytes = (uint64_t)limit / 2,
		.stdin_pipe = k.stdin_data != NULL,
		.keep_state = 1,
		.secrets = env.secrets,
		.n_secrets = env.n_secrets,
	};
	struct hs_exec_out res;
	char drain[16];
	while (read(ss->cancel_pipe[0], drain, sizeof(drain)) > 0)
		; /* a cancel that came before this exec is not for it */
	pthread_mutex_lock(&ss->mu);
	ss->running_id = r->id;
	pthread_mutex_unlock(&ss->mu);
	unsigned restored = 0;
	int rc = hs_guard_begin(c, gate.session, gate.backend, ss->cn.snapshot, err, sizeof(err));
	if (rc == 0) {
		rc = hs_conn_exec(&ss->cn, &eo, &sink, &res, err, sizeof(err));
		char gerr[1024];
		if (hs_guard_end(c, gate.session, gate.backend, ss->cn.snapshot,
		                 rc == 0 && !res.timed_out && !res.cancelled, &restored, gerr,
		                 sizeof(gerr)) < 0 && rc == 0) {
			snprintf(err, sizeof(err), "%s", gerr);
			rc = -1;
		}
	}
	pthread_mutex_lock(&ss->mu);
	ss->running_id = NULL;
	pthread_mutex_unlock(&ss->mu);
	if (nullfd >= 0)
		close(nullfd);
	free(stdin_owned);
	hs_approval_audit(c, &gate, &an, &verdict, 1,
	                       rc < 0 ? HS_EXIT_FAIL : res.timed_out ? HS_EXIT_TIMEOUT : res.exit_code,
	                       res.duration_ms);
	hs_redactor_free(red);
	hs_env_free(&env);
	if (rc < 0) {
		srv_reply_error(s, r->id, "backend_error", err);
	} else {
		yajl_gen g = srv_reply_ok(r->id);
		hs_capture_json_result(g, &res, k.cap);
		hs_json_kint(g, "hs_files_restored", restored);
		if (k.stream)
			hs_json_kint(g, "stream_dropped", (long long)k.stream_dropped);
		yajl_gen_map_close(g);
		srv_emit(s, g);
	}
	for (int i = 1; i <= 2; i++)
		hs_capture_free(&k.cap[i]);
	free(gate_cmd);
}

/* Open the session's environment; 0, or -1 after an error reply. */
static int
do_open(struct sess *ss, struct req *r)
{
	struct srv *s = ss->srv;
	char err[1024];
	struct hs_env_spec spec = { .struct_size = sizeof(spec) };
	const char *mounts[32];
	size_t nm = 0;

	spec.image = hs_serve_str(r->root, "image");
	spec.network = hs_serve_str(r->root, "network");
	const char *what = NULL;
	if (hs_serve_spec(r->root, &spec.memory_bytes, &spec.cpus_milli, &what) < 0) {
		srv_reply_error(s, r->id, "invalid_request", what);
		return -1;
	}
	if (hs_serve_true(r->root, "isolate"))
		spec.flags |= HS_SPEC_ISOLATE;
	/* The workspace the local backend's isolated mode binds: "workspace", else the configured one. */
	spec.workdir = hs_serve_str(r->root, "workspace");
	if (!spec.workdir)
		hs_conf_string(s->c->conf, "workspace", &spec.workdir);
	yajl_val mv = hs_serve_val(r->root, "mounts");
	if (mv && YAJL_IS_ARRAY(mv))
		for (size_t i = 0; i < mv->u.array.len && nm < 32; i++)
			if (YAJL_IS_STRING(mv->u.array.values[i]))
				mounts[nm++] = YAJL_GET_STRING(mv->u.array.values[i]);
	spec.mounts = mounts;
	spec.n_mounts = (uint32_t)nm;
	/* Host access through mounts is put to the client before anything is created. */
	const char *conf_backend = "local";
	hs_conf_string(s->c->conf, "backend", &conf_backend);
	struct srv_asker_ctx actx = { ss, r->id };
	struct hs_asker asker = { &actx, srv_ask, "client" };
	struct hs_gate mgate = {
		.session = ss->name,
		.backend = hs_serve_str(r->root, "backend") ? hs_serve_str(r->root, "backend") : conf_backend,
		.mode = ss->mode,
		.grants = &ss->grants,
		.asker = ss->mode == HS_APPROVAL_ASK ? &asker : NULL,
	};
	struct hs_approval_out mverdict;
	if (!hs_approval_mounts(s->c, &mgate, mounts, nm, &mverdict)) {
		srv_reply_error(s, r->id, !strcmp(mverdict.decision, "invalid") ? "invalid_request"
		                          : !strcmp(mverdict.decision, "error") ? "audit_failed" : "denied",
		                mverdict.why);
		return -1;
	}
	struct hs_session_req sr = { .name = ss->name, .backend = hs_serve_str(r->root, "backend"),
	                             .spec = &spec, .persistent = ss->persistent };
	ss->lockfd = hs_session_begin(s->c, &sr, &ss->cn, &ss->rec, err, sizeof(err));
	if (ss->lockfd == -1) {
		srv_reply_error(s, r->id, ss->cn.open_status == HS_E_DENIED ? "denied" : "open_failed", err);
		return -1;
	}
	ss->opened = 1;
	/* Commands a killed client left in the runner become jobs, so their
	 * output and exit can still be read (and nothing stops them by accident). */
	int64_t limit = 1 << 20;
	unsigned first = 0, adopted = 0;
	hs_conf_int(s->c->conf, "output_limit", &limit);
	if (hs_conn_adopt(&ss->cn, (size_t)limit, &first, &adopted, err, sizeof(err)) < 0)
		hs_warn("session '%s': %s", ss->name, err);
	ss->start_dir[0] = 0;
	if (strcmp(ss->cn.be->plugin.name, "local") == 0 &&
	    strcmp(ss->cn.props.isolation, "namespaces") == 0 && spec.workdir &&
	    !realpath(spec.workdir, ss->start_dir))
		ss->start_dir[0] = 0;
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kstr(g, "session", ss->name);
	hs_json_kstr(g, "backend", ss->cn.be->plugin.name);
	hs_json_kbool(g, "host_access", ss->cn.props.host_access);
	hs_json_kstr(g, "isolation", ss->cn.props.isolation);
	hs_json_kstr(g, "approval", hs_approval_mode_name(ss->mode));
	hs_json_key(g, "adopted");
	yajl_gen_array_open(g);
	for (unsigned i = 0; i < adopted; i++) {
		char jn[32];
		snprintf(jn, sizeof(jn), "j%u", first + i);
		hs_json_str(g, jn);
	}
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	srv_emit(s, g);
	return 0;
}

static void
do_close(struct sess *ss, struct req *r, int keep)
{
	char err[1024] = "";
	int failed = 0;
	if (ss->opened) {
		/* Not persistent: tear the environment down through the open handle
		 * and forget the record, both under the session's lock.  A failed
		 * teardown keeps the record, so `hs session close` can try again. */
		failed = hs_conn_close(&ss->cn, keep, err, sizeof(err)) < 0;
		if (failed && !r)
			hs_warn("session '%s': %s", ss->name, err);
		if (!keep && !failed)
			hs_record_remove(ss->srv->c, ss->name);
		if (ss->lockfd >= 0)
			close(ss->lockfd);
		ss->lockfd = -1;
	}
	ss->opened = 0;
	if (r) {
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
	}
	if (r && failed) {
		char msg[1200];
		snprintf(msg, sizeof(msg), "%s; the session record is kept (retry with 'hs session close %s')",
		         err, ss->name);
		srv_reply_error(ss->srv, r->id, "close_failed", msg);
	} else if (r) {
		yajl_gen g = srv_reply_ok(r->id);
		hs_json_kstr(g, "session", ss->name);
		hs_json_kbool(g, "kept", keep);
		yajl_gen_map_close(g);
		srv_emit(ss->srv, g);
	}
}

static void
do_file(struct sess *ss, struct req *r, int put)
{
	struct srv *s = ss->srv;
	const char *path = hs_serve_str(r->root, "path");
	char err[1024];

	if (!path || path[0] != '/') {
		srv_reply_error(s, r->id, "invalid_request", "an absolute \"path\" is required");
		return;
	}
	if (!ss->opened) {
		srv_reply_error(s, r->id, "no_session", "the session is not open");
		return;
	}
	/* The same line as for commands: nothing writes hs's own files on the host. */
	if (put && hs_guard_protects(s->c, path)) {
		snprintf(err, sizeof(err), "put_file refused: %s is one of the files that decide hs policy "
		         "(config, allow list, policy, state)", path);
		srv_reply_error(s, r->id, "denied", err);
		return;
	}
	/* And the same policy: a put is judged as `cat > PATH`, a get as `cat PATH`. */
	size_t ql = hs_shell_quote(NULL, path), pl = put ? 6 : 4;
	char *fcmd = malloc(pl + ql + 1);
	if (!fcmd) {
		srv_reply_error(s, r->id, "internal", "out of memory");
		return;
	}
	memcpy(fcmd, put ? "cat > " : "cat ", pl);
	hs_shell_quote(fcmd + pl, path);
	fcmd[pl + ql] = '\0';
	struct srv_asker_ctx actx = { ss, r->id };
	struct hs_asker asker = { &actx, srv_ask, "client" };
	struct hs_gate gate = {
		.session = ss->name,
		.backend = ss->cn.be->plugin.name,
		.command = fcmd,
		.host = ss->cn.props.host_access,
		.mode = ss->mode,
		.grants = &ss->grants,
		.asker = &asker,
	};
	struct hs_analysis an;
	struct hs_approval_out verdict;
	int allowed = hs_approval_gate(s->c, s->policy, &gate, &an, &verdict);
	free(fcmd);
	if (!allowed) {
		srv_reply_error(s, r->id, "denied", verdict.why);
		return;
	}
	if (put) {
		const char *data = NULL;
		size_t len = 0;
		void *buf = NULL;
		int got = hs_serve_bytes(r->root, "data", &data, &len, &buf);
		if (got <= 0) {
			srv_reply_error(s, r->id, "invalid_request", got < 0 ? "data_b64 is not valid base64"
			                                                 : "put_file needs \"data\" or \"data_b64\"");
			return;
		}
		uint32_t mode = (uint32_t)(hs_serve_uint(r->root, "mode", 0644) & 07777);
		int rc = hs_conn_put(&ss->cn, path, mode, data, len, 1, err, sizeof(err));
		free(buf);
		if (rc < 0) {
			srv_reply_error(s, r->id, "file_error", err);
			return;
		}
		yajl_gen g = srv_reply_ok(r->id);
		hs_json_kint(g, "size", len);
		yajl_gen_map_close(g);
		srv_emit(s, g);
		return;
	}
	void *buf = NULL;
	size_t len = 0;
	if (hs_conn_get(&ss->cn, path, 64u << 20, &buf, &len, err, sizeof(err)) < 0) {
		srv_reply_error(s, r->id, "file_error", err);
		return;
	}
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kint(g, "size", (long long)len);
	hs_json_kbytes(g, "data", buf, len);
	yajl_gen_map_close(g);
	srv_emit(s, g);
	free(buf);
}

void *
srv_worker(void *arg)
{
	struct sess *ss = arg;
	for (;;) {
		pthread_mutex_lock(&ss->mu);
		while (!ss->head && !ss->closing) {
			if (ss->opened && hs_conn_jobs_running(&ss->cn)) {
				/* Take the jobs' output while idle, so their spools stay small. */
				pthread_mutex_unlock(&ss->mu);
				char e[256];
				hs_conn_pump(&ss->cn, 200, e, sizeof(e));
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
		int closing = ss->closing;
		pthread_mutex_unlock(&ss->mu);
		if (r) {
			pthread_mutex_lock(&ss->srv->mu);
			ss->srv->req_bytes -= r->size;
			pthread_mutex_unlock(&ss->srv->mu);
		}
		if (!r) {
			if (closing) {
				do_close(ss, NULL, ss->persistent);
				break;
			}
			continue;
		}
		if (!strcmp(r->op, "open")) {
			if (do_open(ss, r) < 0) {
				/* Never opened: the name is free again, the main thread reaps us. */
				yajl_tree_free(r->root);
				free(r);
				pthread_mutex_lock(&ss->mu);
				ss->closing = 2;
				pthread_mutex_unlock(&ss->mu);
				break;
			}
		} else if (!strcmp(r->op, "exec"))
			do_exec(ss, r);
		else if (!strcmp(r->op, "put_file"))
			do_file(ss, r, 1);
		else if (!strcmp(r->op, "get_file"))
			do_file(ss, r, 0);
		else if (!strcmp(r->op, "job"))
			do_job(ss, r);
		else if (!strcmp(r->op, "close")) {
			do_close(ss, r, 0); /* closed: the main thread may forget us */
			yajl_tree_free(r->root);
			free(r);
			break;
		}
		yajl_tree_free(r->root);
		free(r);
	}
	return NULL;
}
