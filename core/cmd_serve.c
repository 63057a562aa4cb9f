/*
 * cmd_serve.c - `hs serve`: JSON lines on stdin/stdout.
 *
 * The main thread reads requests; each session has a worker thread that
 * runs its requests in order (foreground commands one at a time), so a
 * slow command in one session never delays another.  Replies and events
 * are written whole, one line per write, under one lock, so lines never
 * interleave.  Malformed input gets an error reply and the server goes on.
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
#include "core/capture.h"
#include "core/cmds.h"
#include "core/core.h"
#include "core/env.h"
#include "core/exec.h"
#include "core/hsconf.h"
#include "core/json.h"
#include "core/safety/redact.h"
#include "core/serve-req.h"
#include "core/session.h"

extern char **environ;

#define SRV_MAX_LINE (16u * 1024u * 1024u)
#define SRV_APPROVAL_WAIT_S 300
/* Streamed output a session may have waiting for a slow client before further
 * output events are dropped (the final reply still carries head and tail). */
#define SRV_STREAM_QUEUE_MAX (4u * 1024u * 1024u)

struct srv;

struct req {
	yajl_val root;
	yajl_val id;      /* inside root */
	const char *op;
	struct req *next;
};

struct sess {
	struct srv *srv;
	char name[65];
	int mode;              /* approval mode */
	int persistent;
	int opened;
	struct hs_conn cn;
	struct hs_record rec;
	int lockfd;
	struct hs_grants grants;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct req *head, *tail;
	int closing;
	/* The running exec, for cancel; and a pending approval. */
	yajl_val running_id;
	int cancel_pipe[2];    /* a byte here cancels the running foreground exec */
	char approval_req[32];
	int approval_answer;   /* -1 pending */
	size_t queued;         /* bytes of this session's lines waiting for the writer (out_mu) */
	char start_dir[4096];  /* an isolated local sandbox's workspace: commands start there */
	struct sess *next;
};

/* One line waiting for the writer. */
struct line {
	char *buf;
	size_t len;
	struct sess *owner; /* for the per-session queue bound; NULL: none */
	struct line *next;
};

struct srv {
	struct hs_core *c;
	/* The ordered writer: one thread writes queued lines to stdout, so a
	 * client that stops reading blocks no session thread. */
	pthread_t writer;
	pthread_mutex_t out_mu;
	pthread_cond_t out_cv;
	struct line *out_head, *out_tail;
	int out_closed;
	int client_gone;
	pthread_mutex_t mu;    /* sessions list */
	struct sess *sessions;
	unsigned approvals;
	int eof;
	struct hs_policy *policy;
};

static void
enqueue_line(struct srv *s, char *buf, size_t len, struct sess *owner)
{
	struct line *l = malloc(sizeof(*l));
	if (!l) {
		free(buf);
		return;
	}
	*l = (struct line){ buf, len, owner, NULL };
	pthread_mutex_lock(&s->out_mu);
	if (s->client_gone) {
		pthread_mutex_unlock(&s->out_mu);
		free(buf);
		free(l);
		return;
	}
	if (owner)
		owner->queued += len;
	if (s->out_tail)
		s->out_tail->next = l;
	else
		s->out_head = l;
	s->out_tail = l;
	pthread_cond_signal(&s->out_cv);
	pthread_mutex_unlock(&s->out_mu);
}

/* Queue one reply or event line; lines are written whole and in order. */
static void
emit(struct srv *s, yajl_gen g)
{
	size_t len;
	char *buf = hs_json_take(g, &len);
	if (buf)
		enqueue_line(s, buf, len, NULL);
}

/*
 * Queue a streamed output event of session ss, unless the client has fallen
 * SRV_STREAM_QUEUE_MAX behind on this session.  Returns 0 queued, -1 dropped.
 */
static int
emit_stream(struct sess *ss, yajl_gen g)
{
	struct srv *s = ss->srv;
	pthread_mutex_lock(&s->out_mu);
	int full = ss->queued > SRV_STREAM_QUEUE_MAX;
	pthread_mutex_unlock(&s->out_mu);
	if (full) {
		yajl_gen_free(g);
		return -1;
	}
	size_t len;
	char *buf = hs_json_take(g, &len);
	if (!buf)
		return -1;
	enqueue_line(s, buf, len, ss);
	return 0;
}

static void *
writer(void *arg)
{
	struct srv *s = arg;
	pthread_mutex_lock(&s->out_mu);
	for (;;) {
		while (!s->out_head && !s->out_closed)
			pthread_cond_wait(&s->out_cv, &s->out_mu);
		struct line *l = s->out_head;
		if (!l)
			break;
		s->out_head = l->next;
		if (!s->out_head)
			s->out_tail = NULL;
		int gone = s->client_gone;
		pthread_mutex_unlock(&s->out_mu);
		size_t off = 0;
		while (off < l->len && !gone) {
			ssize_t w = write(1, l->buf + off, l->len - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				gone = 1; /* nobody reads any more: drop what follows */
			else
				off += (size_t)w;
		}
		pthread_mutex_lock(&s->out_mu);
		s->client_gone |= gone;
		if (l->owner)
			l->owner->queued -= l->len;
		free(l->buf);
		free(l);
	}
	pthread_mutex_unlock(&s->out_mu);
	return NULL;
}

static void
gen_id(yajl_gen g, yajl_val id)
{
	hs_json_key(g, "id");
	if (!id)
		yajl_gen_null(g);
	else if (YAJL_IS_STRING(id))
		hs_json_str(g, YAJL_GET_STRING(id));
	else if (YAJL_IS_INTEGER(id))
		yajl_gen_integer(g, YAJL_GET_INTEGER(id));
	else if (YAJL_IS_NUMBER(id))
		yajl_gen_number(g, YAJL_GET_NUMBER(id), strlen(YAJL_GET_NUMBER(id)));
	else
		yajl_gen_null(g);
}

static void
reply_error(struct srv *s, yajl_val id, const char *code, const char *msg)
{
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	gen_id(g, id);
	hs_json_kbool(g, "ok", 0);
	hs_json_key(g, "error");
	yajl_gen_map_open(g);
	hs_json_kstr(g, "code", code);
	hs_json_kstr(g, "message", msg);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
	emit(s, g);
}

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
	pthread_mutex_lock(&s->mu);
	snprintf(ss->approval_req, sizeof(ss->approval_req), "a%u", ++s->approvals);
	pthread_mutex_unlock(&s->mu);
	ss->approval_answer = -1;
	pthread_mutex_unlock(&ss->mu);

	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	gen_id(g, ac->id);
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
	emit(s, g);

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
		gen_id(g, k->id);
		hs_json_kstr(g, "event", "output");
		hs_json_kstr(g, "stream", stream == 1 ? "stdout" : "stderr");
		hs_json_kbytes(g, "data", buf, len);
		yajl_gen_map_close(g);
		if (emit_stream(k->ss, g) < 0)
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
start_job(struct sess *ss, struct req *r, const struct hs_gate *gate, const struct hs_analysis *an,
          const struct hs_approval_out *verdict, const struct hs_envlist *env, int64_t timeout,
          int64_t grace, size_t limit)
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
		reply_error(ss->srv, r->id, "backend_error", err);
		return;
	}
	hs_approval_audit(ss->srv->c, gate, an, verdict, 0, 0, 0);
	char name[32];
	snprintf(name, sizeof(name), "j%u", job->number);
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	gen_id(g, r->id);
	hs_json_kbool(g, "ok", 1);
	hs_json_kstr(g, "job", name);
	yajl_gen_map_close(g);
	emit(ss->srv, g);
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
		reply_error(s, r->id, "no_session", "the session is not open");
		return;
	}
	if (!name || sscanf(name, "j%u", &n) != 1 || !action) {
		reply_error(s, r->id, "invalid_request", "job needs \"job\" (\"jN\") and \"action\" (poll, output, kill)");
		return;
	}
	if (hs_conn_pump(&ss->cn, 0, err, sizeof(err)) < 0) {
		reply_error(s, r->id, "backend_error", err);
		return;
	}
	struct hs_job *j = hs_conn_job(&ss->cn, n);
	if (!j) {
		reply_error(s, r->id, "no_job", "no job of that name in this session");
		return;
	}
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	gen_id(g, r->id);
	hs_json_kbool(g, "ok", 1);
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
		reply_error(s, r->id, "invalid_request", "action must be poll, output or kill");
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
	emit(s, g);
}

static void
do_exec(struct sess *ss, struct req *r)
{
	struct srv *s = ss->srv;
	struct hs_core *c = s->c;
	const char *command = hs_serve_str(r->root, "command");
	char err[1024];

	if (!command) {
		reply_error(s, r->id, "invalid_request", "exec needs a \"command\" string");
		return;
	}
	if (!ss->opened) {
		reply_error(s, r->id, "no_session", "the session is not open");
		return;
	}
	yajl_val bg = hs_serve_val(r->root, "background");
	int background = bg && YAJL_IS_TRUE(bg);
	int mode = ss->mode;
	const char *am = hs_serve_str(r->root, "approval");
	if (am) {
		int m = hs_approval_mode_parse(am);
		if (m < 0) {
			reply_error(s, r->id, "invalid_request", "approval must be ask, deny or approve");
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
		reply_error(s, r->id, "invalid_request", "timeout must be a number of seconds, 0 or more");
		return;
	}
	if (max_timeout > 0 && (timeout <= 0 || timeout > max_timeout))
		timeout = max_timeout;

	/* "K=V" strings for the env member; each session thread has its own. */
	char *kv[64];
	const char *sets[64];
	int ne = hs_serve_env(r->root, kv, 64);
	if (ne < 0) {
		reply_error(s, r->id, "invalid_request", "env must map names to strings (64 at most)");
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
	for (size_t i = 0; i < n_sets; i++)
		free(kv[i]);
	if (built < 0) {
		reply_error(s, r->id, "invalid_request", "env: invalid variable name");
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
		.command = command,
		.host = ss->cn.props.host_access,
		.mode = mode,
		.grants = &ss->grants,
		.asker = &asker,
		.redact = red,
	};
	struct hs_analysis an;
	struct hs_approval_out verdict;
	if (!hs_approval_gate(c, s->policy, &gate, &an, &verdict)) {
		reply_error(s, r->id, "denied", verdict.why);
		hs_redactor_free(red);
		hs_env_free(&env);
		return;
	}
	if (background) {
		start_job(ss, r, &gate, &an, &verdict, &env, timeout, grace, (size_t)limit);
		hs_redactor_free(red);
		hs_env_free(&env);
		return;
	}
	struct srv_sink k = { .ss = ss, .id = r->id };
	yajl_val sv = hs_serve_val(r->root, "stream");
	k.stream = sv && YAJL_IS_TRUE(sv);
	for (int i = 1; i <= 2; i++)
		hs_capture_init(&k.cap[i], (size_t)limit);
	void *stdin_owned = NULL;
	if (hs_serve_bytes(r->root, "stdin", &k.stdin_data, &k.stdin_len, &stdin_owned) < 0) {
		reply_error(s, r->id, "invalid_request", "stdin_b64 is not valid base64");
		hs_capture_free(&k.cap[1]);
		hs_capture_free(&k.cap[2]);
		hs_redactor_free(red);
		hs_env_free(&env);
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
	int rc = hs_conn_exec(&ss->cn, &eo, &sink, &res, err, sizeof(err));
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
		reply_error(s, r->id, "backend_error", err);
	} else {
		yajl_gen g = hs_json_new();
		yajl_gen_map_open(g);
		gen_id(g, r->id);
		hs_json_kbool(g, "ok", 1);
		hs_json_kint(g, "exit_code", res.timed_out ? HS_EXIT_TIMEOUT : res.exit_code);
		int trunc = 0;
		for (int i = 1; i <= 2; i++) {
			size_t n;
			hs_capture_gap(&k.cap[i], res.dropped[i]);
			char *b = hs_capture_join(&k.cap[i], &n);
			hs_json_kbytes(g, i == 1 ? "stdout" : "stderr", b ? b : "", b ? n : 0);
			free(b);
			trunc |= k.cap[i].dropped > 0;
		}
		hs_json_kbool(g, "timed_out", res.timed_out);
		hs_json_kbool(g, "cancelled", res.cancelled);
		hs_json_kbool(g, "truncated", trunc);
		hs_json_kint(g, "stdout_dropped", (long long)k.cap[1].dropped);
		hs_json_kint(g, "stderr_dropped", (long long)k.cap[2].dropped);
		hs_json_kint(g, "duration_ms", res.duration_ms);
		if (k.stream)
			hs_json_kint(g, "stream_dropped", (long long)k.stream_dropped);
		yajl_gen_map_close(g);
		emit(s, g);
	}
	for (int i = 1; i <= 2; i++)
		hs_capture_free(&k.cap[i]);
}

static void
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
		reply_error(s, r->id, "invalid_request", what);
		return;
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
		reply_error(s, r->id, strcmp(mverdict.decision, "invalid") ? "denied" : "invalid_request",
		            mverdict.why);
		return;
	}
	struct hs_session_req sr = { .name = ss->name, .backend = hs_serve_str(r->root, "backend"),
	                             .spec = &spec, .persistent = ss->persistent };
	ss->lockfd = hs_session_begin(s->c, &sr, &ss->cn, &ss->rec, err, sizeof(err));
	if (ss->lockfd == -1) {
		reply_error(s, r->id, ss->cn.open_status == HS_E_DENIED ? "denied" : "open_failed", err);
		return;
	}
	ss->opened = 1;
	ss->start_dir[0] = 0;
	if (strcmp(ss->cn.be->plugin.name, "local") == 0 &&
	    strcmp(ss->cn.props.isolation, "namespaces") == 0 && spec.workdir &&
	    !realpath(spec.workdir, ss->start_dir))
		ss->start_dir[0] = 0;
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	gen_id(g, r->id);
	hs_json_kbool(g, "ok", 1);
	hs_json_kstr(g, "session", ss->name);
	hs_json_kstr(g, "backend", ss->cn.be->plugin.name);
	hs_json_kbool(g, "host_access", ss->cn.props.host_access);
	hs_json_kstr(g, "isolation", ss->cn.props.isolation);
	hs_json_kstr(g, "approval", hs_approval_mode_name(ss->mode));
	yajl_gen_map_close(g);
	emit(s, g);
}

static void
do_close(struct sess *ss, struct req *r, int keep)
{
	if (ss->opened) {
		/* Not persistent: tear the environment down through the open handle
		 * and forget the record, both under the session's lock. */
		hs_conn_close(&ss->cn, keep);
		if (!keep)
			hs_record_remove(ss->srv->c, ss->name);
		if (ss->lockfd >= 0)
			close(ss->lockfd);
		ss->lockfd = -1;
	}
	ss->opened = 0;
	if (r) {
		yajl_gen g = hs_json_new();
		yajl_gen_map_open(g);
		gen_id(g, r->id);
		hs_json_kbool(g, "ok", 1);
		hs_json_kstr(g, "session", ss->name);
		hs_json_kbool(g, "kept", keep);
		yajl_gen_map_close(g);
		emit(ss->srv, g);
	}
}

static void
do_file(struct sess *ss, struct req *r, int put)
{
	struct srv *s = ss->srv;
	const char *path = hs_serve_str(r->root, "path");
	char err[1024];

	if (!path || path[0] != '/') {
		reply_error(s, r->id, "invalid_request", "an absolute \"path\" is required");
		return;
	}
	if (!ss->opened) {
		reply_error(s, r->id, "no_session", "the session is not open");
		return;
	}
	if (put) {
		const char *data = NULL;
		size_t len = 0;
		void *buf = NULL;
		int got = hs_serve_bytes(r->root, "data", &data, &len, &buf);
		if (got <= 0) {
			reply_error(s, r->id, "invalid_request", got < 0 ? "data_b64 is not valid base64"
			                                                 : "put_file needs \"data\" or \"data_b64\"");
			return;
		}
		uint32_t mode = (uint32_t)(hs_serve_uint(r->root, "mode", 0644) & 07777);
		int rc = hs_conn_put(&ss->cn, path, mode, data, len, 1, err, sizeof(err));
		free(buf);
		if (rc < 0) {
			reply_error(s, r->id, "file_error", err);
			return;
		}
		yajl_gen g = hs_json_new();
		yajl_gen_map_open(g);
		gen_id(g, r->id);
		hs_json_kbool(g, "ok", 1);
		hs_json_kint(g, "size", len);
		yajl_gen_map_close(g);
		emit(s, g);
		return;
	}
	void *buf = NULL;
	size_t len = 0;
	if (hs_conn_get(&ss->cn, path, 64u << 20, &buf, &len, err, sizeof(err)) < 0) {
		reply_error(s, r->id, "file_error", err);
		return;
	}
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	gen_id(g, r->id);
	hs_json_kbool(g, "ok", 1);
	hs_json_kint(g, "size", (long long)len);
	hs_json_kbytes(g, "data", buf, len);
	yajl_gen_map_close(g);
	emit(s, g);
	free(buf);
}

static void *
worker(void *arg)
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
		}
		int closing = ss->closing;
		pthread_mutex_unlock(&ss->mu);
		if (!r) {
			if (closing) {
				do_close(ss, NULL, ss->persistent);
				break;
			}
			continue;
		}
		if (!strcmp(r->op, "open"))
			do_open(ss, r);
		else if (!strcmp(r->op, "exec"))
			do_exec(ss, r);
		else if (!strcmp(r->op, "put_file"))
			do_file(ss, r, 1);
		else if (!strcmp(r->op, "get_file"))
			do_file(ss, r, 0);
		else if (!strcmp(r->op, "job"))
			do_job(ss, r);
		else if (!strcmp(r->op, "close")) {
			do_close(ss, r, 0);
			yajl_tree_free(r->root);
			free(r);
			pthread_mutex_lock(&ss->mu);
			ss->closing = 2; /* closed: the main thread may forget us */
			pthread_mutex_unlock(&ss->mu);
			break;
		}
		yajl_tree_free(r->root);
		free(r);
	}
	return NULL;
}

static struct sess *
find_session(struct srv *s, const char *name)
{
	struct sess *ss;
	pthread_mutex_lock(&s->mu);
	for (ss = s->sessions; ss; ss = ss->next)
		if (!strcmp(ss->name, name) && ss->closing != 2)
			break;
	pthread_mutex_unlock(&s->mu);
	return ss;
}

static void
enqueue(struct sess *ss, struct req *r)
{
	pthread_mutex_lock(&ss->mu);
	if (ss->tail)
		ss->tail->next = r;
	else
		ss->head = r;
	ss->tail = r;
	pthread_cond_signal(&ss->cv);
	pthread_mutex_unlock(&ss->mu);
}

static void
handle(struct srv *s, struct req *r)
{
	const char *op = r->op;
	const char *name = hs_serve_str(r->root, "session");
	char err[1024];

	if (!strcmp(op, "hello")) {
		yajl_gen g = hs_json_new();
		yajl_gen_map_open(g);
		gen_id(g, r->id);
		hs_json_kbool(g, "ok", 1);
		hs_json_kstr(g, "server", "hs " PACKAGE_VERSION);
		hs_json_kint(g, "protocol", 1);
		yajl_gen_map_close(g);
		emit(s, g);
	} else if (!strcmp(op, "open")) {
		if (!name || !hs_session_name_valid(name)) {
			reply_error(s, r->id, "invalid_request", "open needs a valid \"session\" name");
			goto done;
		}
		if (find_session(s, name)) {
			reply_error(s, r->id, "session_exists", "the session is already open here");
			goto done;
		}
		const char *am = hs_serve_str(r->root, "approval");
		int mode = hs_approval_mode_parse(am ? am : "ask");
		if (mode < 0) {
			reply_error(s, r->id, "invalid_request", "approval must be ask, deny or approve");
			goto done;
		}
		/* A locked admin mode is a ceiling the client cannot loosen. */
		const char *conf_mode = NULL;
		if (hs_conf_locked(s->c->conf, "approval") && hs_conf_string(s->c->conf, "approval", &conf_mode) == 0) {
			int cm = hs_approval_mode_parse(conf_mode);
			if (cm >= 0 && mode > cm)
				mode = cm;
		}
		struct sess *ss = calloc(1, sizeof(*ss));
		if (!ss) {
			reply_error(s, r->id, "internal", "out of memory");
			goto done;
		}
		ss->srv = s;
		snprintf(ss->name, sizeof(ss->name), "%s", name);
		ss->mode = mode;
		yajl_val pv = hs_serve_val(r->root, "persistent");
		ss->persistent = pv && YAJL_IS_TRUE(pv);
		ss->lockfd = -1;
		if (pipe2(ss->cancel_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
			free(ss);
			reply_error(s, r->id, "internal", "cannot create a pipe");
			goto done;
		}
		pthread_mutex_init(&ss->mu, NULL);
		pthread_cond_init(&ss->cv, NULL);
		enqueue(ss, r);
		if (pthread_create(&ss->thread, NULL, worker, ss) != 0) {
			reply_error(s, r->id, "internal", "cannot start a session thread");
			close(ss->cancel_pipe[0]);
			close(ss->cancel_pipe[1]);
			free(ss);
			goto done;
		}
		pthread_mutex_lock(&s->mu);
		ss->next = s->sessions;
		s->sessions = ss;
		pthread_mutex_unlock(&s->mu);
		return;
	} else if (!strcmp(op, "exec") || !strcmp(op, "close") || !strcmp(op, "put_file") ||
	           !strcmp(op, "get_file") || !strcmp(op, "job")) {
		struct sess *ss = name ? find_session(s, name) : NULL;
		if (!ss) {
			reply_error(s, r->id, "no_session", "no open session of that name (open it first)");
			goto done;
		}
		enqueue(ss, r);
		return;
	} else if (!strcmp(op, "cancel")) {
		struct sess *ss = name ? find_session(s, name) : NULL;
		if (!ss) {
			reply_error(s, r->id, "no_session", "cancel needs the \"session\" of the command");
			goto done;
		}
		pthread_mutex_lock(&ss->mu);
		int running = ss->running_id != NULL;
		if (running && write(ss->cancel_pipe[1], "c", 1) < 0)
			running = 0;
		pthread_mutex_unlock(&ss->mu);
		yajl_gen g = hs_json_new();
		yajl_gen_map_open(g);
		gen_id(g, r->id);
		hs_json_kbool(g, "ok", 1);
		hs_json_kbool(g, "cancelled", running);
		yajl_gen_map_close(g);
		emit(s, g);
	} else if (!strcmp(op, "approve")) {
		const char *rq = hs_serve_str(r->root, "request");
		int d = hs_decision_parse(hs_serve_str(r->root, "decision"));
		if (!rq || d < 0) {
			reply_error(s, r->id, "invalid_request",
			            "approve needs \"request\" and \"decision\" (once, session, always, deny)");
			goto done;
		}
		struct sess *found = NULL;
		pthread_mutex_lock(&s->mu);
		for (struct sess *ss = s->sessions; ss && !found; ss = ss->next) {
			pthread_mutex_lock(&ss->mu);
			if (ss->approval_req[0] && !strcmp(ss->approval_req, rq) && ss->approval_answer < 0) {
				ss->approval_answer = d;
				pthread_cond_broadcast(&ss->cv);
				found = ss;
			}
			pthread_mutex_unlock(&ss->mu);
		}
		pthread_mutex_unlock(&s->mu);
		if (!found) {
			reply_error(s, r->id, "no_request", "no pending approval request of that id");
			goto done;
		}
		yajl_gen g = hs_json_new();
		yajl_gen_map_open(g);
		gen_id(g, r->id);
		hs_json_kbool(g, "ok", 1);
		yajl_gen_map_close(g);
		emit(s, g);
	} else if (!strcmp(op, "check")) {
		const char *command = hs_serve_str(r->root, "command");
		const char *cx = hs_serve_str(r->root, "context");
		if (!command) {
			reply_error(s, r->id, "invalid_request", "check needs a \"command\" string");
			goto done;
		}
		struct hs_analysis a;
		hs_analyse(s->policy, command,
		           cx && !strcmp(cx, "sandbox") ? HS_CONTEXT_SANDBOX : HS_CONTEXT_HOST, &a);
		yajl_gen g = hs_json_new();
		yajl_gen_map_open(g);
		gen_id(g, r->id);
		hs_json_kbool(g, "ok", 1);
		hs_json_kstr(g, "verdict", hs_verdict_name(a.verdict));
		hs_json_key(g, "rules");
		yajl_gen_array_open(g);
		for (size_t i = 0; i < a.n_findings; i++) {
			yajl_gen_map_open(g);
			hs_json_kstr(g, "id", a.findings[i].rule_id);
			hs_json_kstr(g, "severity", a.findings[i].hardline ? "hardline" : "dangerous");
			hs_json_kstr(g, "description", a.findings[i].description);
			yajl_gen_map_close(g);
		}
		yajl_gen_array_close(g);
		yajl_gen_map_close(g);
		emit(s, g);
	} else if (!strcmp(op, "backends")) {
		yajl_val dv = hs_serve_val(r->root, "deep");
		yajl_gen g = hs_json_new();
		yajl_gen_map_open(g);
		gen_id(g, r->id);
		hs_json_kbool(g, "ok", 1);
		if (hs_backends_gen(s->c, dv && YAJL_IS_TRUE(dv), g) < 0) {
			yajl_gen_free(g);
			reply_error(s, r->id, "internal", "out of memory");
			goto done;
		}
		yajl_gen_map_close(g);
		emit(s, g);
	} else {
		snprintf(err, sizeof(err), "unknown op '%.60s'", op);
		reply_error(s, r->id, "unknown_op", err);
	}
done:
	yajl_tree_free(r->root);
	free(r);
}

/* Read one line of at most SRV_MAX_LINE bytes; longer lines are skipped (*too_long set). */
static char *
read_line(FILE *in, int *too_long, size_t *len)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, in);
	*too_long = 0;
	if (n < 0) {
		free(line);
		return NULL;
	}
	if ((size_t)n > SRV_MAX_LINE)
		*too_long = 1;
	*len = (size_t)n;
	return line;
}

int
hs_cmd_serve(struct hs_core *c, int argc, char **argv)
{
	struct srv s = { .c = c };
	char err[1024];

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: hs serve\n\nSpeak JSON lines on stdin/stdout: see hs(1), THE SERVE PROTOCOL.\n");
		return 0;
	}
	s.policy = hs_core_policy(c, err, sizeof(err));
	if (!s.policy) {
		hs_die_msg("%s", err);
		return HS_EXIT_FAIL;
	}
	pthread_mutex_init(&s.out_mu, NULL);
	pthread_cond_init(&s.out_cv, NULL);
	pthread_mutex_init(&s.mu, NULL);
	if (pthread_create(&s.writer, NULL, writer, &s) != 0) {
		hs_die_msg("cannot start the writer thread");
		return HS_EXIT_FAIL;
	}
	for (;;) {
		int too_long;
		size_t len;
		char *line = read_line(stdin, &too_long, &len);
		if (!line)
			break;
		if (too_long) {
			reply_error(&s, NULL, "too_large", "request line longer than 16 MiB");
			free(line);
			continue;
		}
		struct hs_serve_req pr;
		const char *code = "parse_error";
		char perr[256];
		int pv = hs_serve_req_parse(line, len, &pr, &code, perr, sizeof(perr));
		free(line);
		if (pv == 1)
			continue;
		if (pv < 0) {
			reply_error(&s, pr.id, code, perr);
			yajl_tree_free(pr.root);
			continue;
		}
		struct req *r = calloc(1, sizeof(*r));
		if (!r) {
			yajl_tree_free(pr.root);
			reply_error(&s, NULL, "internal", "out of memory");
			continue;
		}
		r->root = pr.root;
		r->id = pr.id;
		r->op = pr.op;
		handle(&s, r);
	}
	/* EOF: deny pending approvals, close non-persistent sessions, keep persistent ones. */
	pthread_mutex_lock(&s.mu);
	s.eof = 1;
	for (struct sess *ss = s.sessions; ss; ss = ss->next) {
		pthread_mutex_lock(&ss->mu);
		if (!ss->closing)
			ss->closing = 1;
		if (ss->running_id && !ss->persistent && write(ss->cancel_pipe[1], "c", 1) < 0) {
			/* The pipe is full: a cancel is already pending. */
		}
		pthread_cond_broadcast(&ss->cv);
		pthread_mutex_unlock(&ss->mu);
	}
	pthread_mutex_unlock(&s.mu);
	for (struct sess *ss = s.sessions; ss; ss = ss->next)
		pthread_join(ss->thread, NULL);
	/* Every reply is queued; let the writer finish before sessions are freed. */
	pthread_mutex_lock(&s.out_mu);
	s.out_closed = 1;
	pthread_cond_signal(&s.out_cv);
	pthread_mutex_unlock(&s.out_mu);
	pthread_join(s.writer, NULL);
	for (struct sess *ss = s.sessions, *next; ss; ss = next) {
		next = ss->next;
		close(ss->cancel_pipe[0]);
		close(ss->cancel_pipe[1]);
		hs_grants_free(&ss->grants);
		free(ss);
	}
	return 0;
}
