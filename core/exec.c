/* SPDX-License-Identifier: MIT */
/*
 * exec.c - running a session's commands through its runner stream.
 *
 * Every command runs as SHELL -c WRAPPER (see shell.h) under the session's
 * hs-runner.  Output is taken frame by frame: in lossless mode (hs run) the
 * runner may send at most a window of unconsumed bytes, and the window is
 * reopened only after the sink took the bytes, so a slow reader throttles the
 * command and hs's memory stays bounded whatever the command prints.  Every
 * byte taken is acknowledged, so a re-attached stream resends exactly the
 * bytes not yet taken: nothing lost, nothing twice.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/egress/relay.h"
#include "core/exec.h"
#include "core/runkey.h"
#include "core/safety/redact.h"
#include "core/shell.h"
#include "runner/client.h"

#define HS_WINDOW (1024u * 1024u)      /* lossless output window */
#define HS_STATE_MAX (4u * 1024u * 1024u)
#define HS_REATTACH_TRIES 5

long
hs_mem_input_read(struct hs_mem_input *in, void *buf, size_t len)
{
	size_t n = in->len - in->off;
	if (n > len)
		n = len;
	memcpy(buf, in->data + in->off, n);
	in->off += n;
	return (long)n;
}

/* A job and what it holds: output, redactors. */
static void
job_free(struct hs_job *j)
{
	for (int s = 1; s <= 2; s++) {
		hs_capture_free(&j->cap[s]);
		hs_redactor_free(j->red[s]);
	}
	free(j);
}

/*
 * Where this process's command ids start.  A session's runner outlives the
 * hs process that talks to it, and a client killed mid-command leaves its
 * command running there; ids counted from 1 by every process would collide
 * with it ("command id 1 is in use"), and the failed exec's cancel would
 * stop the other process's command.  A random start in [2^32, 2^62) makes
 * a collision between processes practically impossible and leaves room to
 * count up.
 */
static uint64_t
first_id(void)
{
	uint64_t r = 0;
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		r = (uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)ts.tv_sec << 20 ^ (uint64_t)getpid() << 40;
	}
	return (r & ((UINT64_C(1) << 61) - 1)) + (UINT64_C(1) << 32);
}

static void route(struct hs_conn *cn, const struct hsr_event *ev);

/* Stop relaying and free the stream. */
static void
stream_free(struct hs_conn *cn)
{
	hs_egress_relay_stop(cn->egress);
	cn->egress = NULL;
	hsr_client_free(cn->rc);
	cn->rc = NULL;
}

/* Ask the runner on cn->rc to listen for egress and start the relay. */
static int
egress_start(struct hs_conn *cn, char *err, size_t errlen)
{
	struct hsr_event ev;
	uint64_t token = hs_now_ms() ^ UINT64_C(0x4567);
	char e[256] = "";

	if (hsr_client_egress_listen(cn->rc, token) < 0) {
		snprintf(err, errlen, "cannot ask the runner to listen for egress: %s", strerror(errno));
		return -1;
	}
	/* A fresh stream owns no command yet: the answer comes first. */
	for (;;) {
		int r = hsr_client_next(cn->rc, &ev, 30000, e, sizeof(e));
		if (r != 1) {
			snprintf(err, errlen, "the runner did not start the egress endpoint: %s",
			         r == 0 ? "no answer in 30 s" : e);
			return -1;
		}
		if (ev.type == HSR_EV_EGRESS && ev.token == token)
			break;
		if (ev.type == HSR_EV_ERROR && ev.id == 0) {
			snprintf(err, errlen, "the runner cannot serve egress: %s (a runner older than "
			         "this hs: close the session and open it again)", ev.message);
			return -1;
		}
		route(cn, &ev);
	}
	cn->egress_port = (int)ev.port;
	return hs_egress_relay_start(&cn->egress, cn->rc, cn->egress_opts, err, errlen);
}

int
hs_conn_egress(struct hs_conn *cn, const struct hs_egress_relay_opts *o, char *err, size_t errlen)
{
	if (cn->exec_mode || !cn->rc) {
		snprintf(err, errlen, "backend '%s' runs without the runner here, so it cannot host the "
		         "egress endpoint", cn->be->plugin.name);
		return -1;
	}
	cn->egress_opts = o;
	return egress_start(cn, err, errlen);
}

int
hs_conn_stream(struct hs_conn *cn, char *err, size_t errlen)
{
	char e[HS_ERR_MAX] = "";
	int32_t fd = -1;
	int32_t st;

	if (cn->rc)
		stream_free(cn);
	if (cn->exec_mode)
		return HS_OK;
	if (!cn->be->plugin.desc.runner_stream || !cn->props.runner) {
		snprintf(err, errlen, "backend '%s' cannot host the runner here%s%s", cn->be->plugin.name,
		         cn->props.runner_reason[0] ? ": " : "", cn->props.runner_reason);
		return HS_E_UNSUPPORTED;
	}
	st = cn->be->plugin.desc.runner_stream(cn->env, &fd, e);
	if (st != HS_OK) {
		snprintf(err, errlen, "backend '%s': %s", cn->be->plugin.name, e[0] ? e : hs_strerror(st));
		return st;
	}
	/* Every backend's stream is an `hs-runner --attach`, which takes the key first. */
	if (hsr_client_open(fd, cn->runner_key, HSR_CLIENT_PROXY, &cn->rc, e, sizeof(e)) < 0) {
		snprintf(err, errlen, "backend '%s': runner handshake failed: %s", cn->be->plugin.name, e);
		cn->rc = NULL;
		return HS_E_PROTOCOL;
	}
	const char *inst = hsr_client_instance(cn->rc);
	cn->runner_restarted = cn->runner_instance[0] && strcmp(inst, cn->runner_instance) != 0;
	snprintf(cn->runner_instance, sizeof(cn->runner_instance), "%s", inst);
	/* A new stream of an egress session: the endpoint follows it. */
	if (cn->egress_opts && egress_start(cn, err, errlen) < 0) {
		stream_free(cn);
		return HS_E_PROTOCOL;
	}
	return HS_OK;
}

int
hs_conn_open(struct hs_conn *cn, struct hs_backend *be, const struct hs_env_spec *spec, char *err,
             size_t errlen)
{
	char e[HS_ERR_MAX] = "";
	int32_t st;

	memset(cn, 0, sizeof(*cn));
	pthread_mutex_init(&cn->lock, NULL);
	cn->be = be;
	cn->next_id = first_id();
	st = be->plugin.desc.open(be->state, spec, &cn->env, &cn->props, e);
	/* A sandbox has an environment of its own, unless its backend says it has none. */
	cn->merge_env = !(cn->props.env_flags & HS_ENVP_HOST_ENV);
	cn->open_status = st;
	if (st != HS_OK) {
		snprintf(err, errlen, "backend '%s' cannot open '%s': %s", be->plugin.name,
		         spec->session ? spec->session : "", e[0] ? e : hs_strerror(st));
		/* close() must be safe after a failed open; give it the chance to clean up. */
		be->plugin.desc.close(cn->env, 0, e);
		cn->env = NULL;
		return st;
	}
	if (!cn->props.shell[0])
		snprintf(cn->props.shell, sizeof(cn->props.shell), "/bin/sh");
	/* Without a runner, a backend's exec runs each command (exec mode). */
	cn->exec_mode = (!be->plugin.desc.runner_stream || !cn->props.runner) && be->plugin.desc.exec;
	/* With one, a session keeps one persistent bash in the runner. */
	cn->session_shell = !cn->exec_mode && hs_shell_is_bash(cn->props.shell);
	if (cn->exec_mode)
		snprintf(cn->snapshot, sizeof(cn->snapshot), "%s%s%s/shell.snap",
		         cn->props.runtime_dir[0] ? cn->props.runtime_dir : "/tmp/.hs-",
		         cn->props.runtime_dir[0] ? "" : spec->env_name ? spec->env_name : "session",
		         "");
	else
		snprintf(cn->snapshot, sizeof(cn->snapshot), "%s/shell.snap",
		         cn->props.runtime_dir[0] ? cn->props.runtime_dir : "/tmp");
	int keyfile = !cn->exec_mode && (spec->flags & HS_SPEC_PERSISTENT);
	if (!cn->exec_mode &&
	    hs_runkey_get(be, spec->env_name, keyfile, cn->runner_key, err, errlen) < 0)
		st = HS_E_IO;
	else
		st = hs_conn_stream(cn, err, errlen);
	if (keyfile)
		snprintf(cn->runner_key_env, sizeof(cn->runner_key_env), "%s", spec->env_name);
	if (st != HS_OK) {
		be->plugin.desc.close(cn->env, HS_CLOSE_KEEP, e);
		cn->env = NULL;
		return st;
	}
	return HS_OK;
}

int
hs_conn_close(struct hs_conn *cn, int keep, char *err, size_t errlen)
{
	char e[HS_ERR_MAX] = "";
	int rc = 0;
	if (cn->rc)
		stream_free(cn);
	if (cn->env) {
		int32_t st = cn->be->plugin.desc.close(cn->env, keep ? HS_CLOSE_KEEP : 0, e);
		if (st != HS_OK) {
			rc = -1;
			if (err)
				snprintf(err, errlen, "cannot close the '%s' environment: %s", cn->be->plugin.name,
				         e[0] ? e : hs_strerror(st));
			else
				hs_warn("closing '%s' environment: %s", cn->be->plugin.name, e[0] ? e : hs_strerror(st));
		}
	}
	cn->env = NULL;
	/* Torn down: its key goes with it. */
	if (!keep && cn->runner_key_env[0])
		hs_runkey_remove(cn->be, cn->runner_key_env);
	hsr_wipe(cn->runner_key, sizeof(cn->runner_key));
	for (struct hs_job *j = cn->jobs, *next; j; j = next) {
		next = j->next;
		job_free(j);
	}
	cn->jobs = NULL;
	pthread_mutex_destroy(&cn->lock);
	return rc;
}

/*
 * After a broken stream: connect again, take over the daemon's commands, and
 * confirm again what was taken of each (the command's own offsets in
 * taken, NULL for none, and every job's), since acknowledgements in flight
 * when the stream broke are lost: without them the daemon would resend
 * bytes already taken, and a stream that keeps breaking might never get
 * past them.
 */
static int
reattach(struct hs_conn *cn, uint64_t credit, uint64_t id, const uint64_t *taken, char *err,
         size_t errlen)
{
	for (int i = 0; i < HS_REATTACH_TRIES; i++) {
		if (i) {
			long ms = 100L << i; /* 200, 400, 800, 1600 ms */
			struct timespec ts = { ms / 1000, (ms % 1000) * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		if (hs_conn_stream(cn, err, errlen) != HS_OK || hsr_client_attach_credit(cn->rc, credit) != 0)
			continue;
		int sent = 0;
		for (int s = 1; taken && s <= 3; s++)
			if (taken[s] && hsr_client_ack(cn->rc, id, s, taken[s]) < 0)
				sent = -1;
		for (struct hs_job *j = cn->jobs; j; j = j->next)
			for (int s = 1; s <= 2 && !j->done; s++)
				if (j->taken[s] && hsr_client_ack(cn->rc, j->id, s, j->taken[s]) < 0)
					sent = -1;
		if (sent == 0)
			return 0;
	}
	return -1;
}

/* After a stream that could not be re-attached: try again before the next request. */
static int
ensure_stream(struct hs_conn *cn, char *err, size_t errlen)
{
	if (cn->rc)
		return 0;
	return hs_conn_stream(cn, err, errlen) == HS_OK ? 0 : -1;
}

struct state_buf {
	char *data;
	size_t len, cap;
	int overflow;
};

static void
state_append(struct state_buf *s, const void *p, size_t n)
{
	if (s->overflow || s->len + n > HS_STATE_MAX) {
		s->overflow = 1;
		return;
	}
	if (s->len + n > s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 8192;
		while (nc < s->len + n)
			nc *= 2;
		char *d = realloc(s->data, nc);
		if (!d) {
			s->overflow = 1;
			return;
		}
		s->data = d;
		s->cap = nc;
	}
	memcpy(s->data + s->len, p, n);
	s->len += n;
}

/* 1 when the ATTACH list of ev names command id. */
static int
attach_lists(const struct hsr_event *ev, uint64_t id)
{
	for (size_t i = 0; i < ev->nattach; i++)
		if (ev->attach[i].id == id)
			return 1;
	return 0;
}

/* Redacted output of a handed-off command into its job's capture (ctx). */
static void
capture_emit(void *ctx, const char *data, size_t len)
{
	hs_capture_add(ctx, data, len);
}

static struct hs_job *
job_by_id(struct hs_conn *cn, uint64_t id)
{
	for (struct hs_job *j = cn->jobs; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

/* An event that is not about the caller's own command: a job's, or stale. */
static void
route(struct hs_conn *cn, const struct hsr_event *ev)
{
	if (ev->type == HSR_EV_ATTACH) {
		/* A job the daemon does not know was lost with a broken stream. */
		for (struct hs_job *k = cn->jobs; k; k = k->next)
			if (!k->done && !attach_lists(ev, k->id)) {
				k->done = 1;
				k->exit_code = 125;
				k->duration_ms = hs_now_ms() - k->start_ms;
			}
		return;
	}
	struct hs_job *j = job_by_id(cn, ev->id);
	if (!j) {
		/* A command this process gave up on (its exec failed): confirm its
		 * output and exit so the daemon forgets it instead of resending it
		 * on every re-attach. */
		if (ev->type == HSR_EV_OUTPUT || ev->type == HSR_EV_STATE)
			hsr_client_ack(cn->rc, ev->id, ev->stream, ev->offset + ev->len);
		else if (ev->type == HSR_EV_EXIT)
			hsr_client_ack(cn->rc, ev->id, 0, 0);
		return;
	}
	switch (ev->type) {
	case HSR_EV_OUTPUT:
		if (ev->stream < 1 || ev->stream > 2 || ev->offset + ev->len <= j->taken[ev->stream])
			break;
		{
			size_t skip = ev->offset < j->taken[ev->stream]
			                      ? (size_t)(j->taken[ev->stream] - ev->offset) : 0;
			struct hs_capture *cap = &j->cap[ev->stream];
			if (ev->offset > j->taken[ev->stream]) /* the runner dropped the middle */
				hs_capture_gap(cap, ev->offset - j->taken[ev->stream]);
			if (j->red[ev->stream])
				hs_redact_feed(j->red[ev->stream], (const char *)ev->data + skip, ev->len - skip,
				               capture_emit, cap);
			else
				hs_capture_add(cap, (const char *)ev->data + skip, ev->len - skip);
			j->taken[ev->stream] = ev->offset + ev->len;
			hsr_client_ack(cn->rc, j->id, ev->stream, j->taken[ev->stream]);
		}
		break;
	case HSR_EV_WAITING:
		j->waiting_input = ev->final != 0;
		break;
	case HSR_EV_STATE:
		/* A handed-off command of a shell without a session shell: its state is not kept. */
		hsr_client_ack(cn->rc, j->id, 3, ev->offset + ev->len);
		break;
	case HSR_EV_EXIT:
		j->done = 1;
		j->exit_code = ev->exit_code;
		j->timed_out = ev->timed_out;
		j->cancelled = ev->cancelled;
		j->duration_ms = hs_now_ms() - j->start_ms;
		for (int s = 1; s <= 2; s++)
			if (j->red[s]) {
				hs_redact_flush(j->red[s], capture_emit, &j->cap[s]);
				hs_redactor_free(j->red[s]);
				j->red[s] = NULL;
			}
		hsr_client_ack(cn->rc, j->id, 0, 0);
		break;
	case HSR_EV_ERROR:
		j->done = 1;
		j->exit_code = 125;
		j->duration_ms = hs_now_ms() - j->start_ms;
		break;
	default:
		break;
	}
}

#define HS_ARGV_MAX 8

void
hs_conn_pty_unsupported(const struct hs_conn *cn, char *why, size_t len)
{
	snprintf(why, len, "backend '%s' runs commands without the runner here, so it has no "
	         "terminal (pty) to give; use a backend that runs hs-runner in its sandbox "
	         "(`hs backends` shows \"pty\")", cn->be->plugin.name);
}

/* A terminal needs a runner of protocol HSR_PROTO_PTY; -1 with err when this one is older. */
static int
pty_check(struct hs_conn *cn, const struct hsr_exec_spec *spec, char *err, size_t errlen)
{
	if (!spec->pty_rows || hsr_client_version(cn->rc) >= HSR_PROTO_PTY)
		return 0;
	snprintf(err, errlen, "the runner in this sandbox speaks protocol %u, which has no terminal "
	         "(pty, protocol %u): close the session so that a new runner starts",
	         (unsigned)hsr_client_version(cn->rc), (unsigned)HSR_PROTO_PTY);
	return -1;
}

/* The runner's EXEC for o: SHELL -c WRAPPER hs SNAPSHOT CWD COMMAND, or in
 * the session shell SHELL COMMAND START_DIR CWD K=V... (argv has room for
 * HS_ARGV_MAX + n_sets entries). */
static void
exec_spec(const struct hs_conn *cn, const struct hs_exec_opts *o, uint64_t id, const char **argv,
          struct hsr_exec_spec *spec)
{
	int lossless = o->head_bytes == 0 && o->tail_bytes == 0;
	int pty = o->pty_rows && o->pty_cols;
	/* A terminal command of a session runs from the session shell's state
	 * (the runner dumps it) in a shell of its own. */
	int session = cn->session_shell && (o->keep_state || pty);
	argv[0] = cn->props.shell;
	if (session) {
		size_t k = 4;
		argv[1] = o->command;
		argv[2] = o->start_dir ? o->start_dir : "";
		argv[3] = o->cwd ? o->cwd : "";
		for (size_t i = 0; i < o->n_sets; i++)
			argv[k++] = o->sets[i];
		argv[k] = NULL;
	} else {
		argv[1] = "-c";
		argv[2] = hs_shell_wrapper(cn->props.shell);
		argv[3] = "hs";
		argv[4] = cn->snapshot;
		argv[5] = o->cwd ? o->cwd : "";
		argv[6] = o->command;
		argv[7] = NULL;
	}
	*spec = (struct hsr_exec_spec){
		.id = id,
		.argv = argv,
		.envp = (const char *const *)o->envp,
		.cwd = o->start_dir,
		.deadline_ms = o->deadline_ms,
		.grace_ms = o->grace_ms,
		.stdin_pipe = o->stdin_pipe && !pty, /* a terminal takes stdin anyway */
		.want_state = o->keep_state && !session && !pty,
		.session = session,
		.report_wait = o->stdin_pipe || pty,
		.pty_rows = pty ? o->pty_rows : 0,
		.pty_cols = pty ? o->pty_cols : 0,
		.merge_env = cn->merge_env,
		.head_bytes = o->head_bytes,
		.tail_bytes = o->tail_bytes,
		.initial_credit = lossless ? HS_WINDOW : HSR_CREDIT_UNLIMITED,
		.keep_bytes = o->keep_bytes,
	};
}

/* Output passes through a redactor per stream when there are secrets to hide. */
void
hs_redact_sink_emit(void *ctx, const char *data, size_t len)
{
	struct hs_redact_sink *rc = ctx;
	if (len && rc->sink->output(rc->sink->ctx, rc->stream, data, len) < 0)
		rc->failed = 1;
}

static int
deliver(const struct hs_sink_ops *sink, struct hs_redactor *red, int stream, const void *buf,
        size_t len)
{
	if (!red)
		return sink->output(sink->ctx, stream, buf, len);
	struct hs_redact_sink rc = { sink, stream, 0 };
	if (hs_redact_feed(red, buf, len, hs_redact_sink_emit, &rc) < 0)
		return -1;
	return rc.failed ? -1 : 0;
}

static void
deliver_flush(const struct hs_sink_ops *sink, struct hs_redactor *red, int stream)
{
	struct hs_redact_sink rc = { sink, stream, 0 };
	if (red)
		hs_redact_flush(red, hs_redact_sink_emit, &rc);
}

static struct hs_job *job_new(size_t limit);
static unsigned next_job_number(const struct hs_conn *cn);
static void forget_old_jobs(struct hs_conn *cn);

/*
 * A command that may be handed off keeps a copy of its (redacted) output in
 * the job it would become, so the job's output starts at offset 0: the
 * caller's sink sees every byte, and so does the job's capture.
 */
struct handoff {
	const struct hs_sink_ops *sink; /* the caller's */
	struct hs_sink_ops tee;         /* what output is delivered to */
	struct hs_job *job;             /* NULL: no handoff */
};

static int
handoff_output(void *ctx, int stream, const void *buf, size_t len)
{
	struct handoff *h = ctx;
	hs_capture_add(&h->job->cap[stream], buf, len);
	return h->sink->output(h->sink->ctx, stream, buf, len);
}

/* Prepare h for o: a job to hand off to when o asks for one and can have one. */
static int
handoff_init(struct handoff *h, const struct hs_exec_opts *o, const struct hs_sink_ops *sink)
{
	*h = (struct handoff){ .sink = sink };
	if (sink)
		h->tee = *sink;
	/* Lossless output needs the caller to take it: that cannot go on as a job. */
	if (o->handoff_ms <= 0 || !sink || (o->head_bytes == 0 && o->tail_bytes == 0))
		return 0;
	h->job = job_new((size_t)(o->head_bytes + o->tail_bytes));
	if (!h->job)
		return -1;
	h->tee.ctx = h;
	h->tee.output = handoff_output;
	return 0;
}

/*
 * Stop waiting for command id, still running: it goes on as h's job, whose
 * events route() takes from now on (with the command's redactors).
 */
static void
hand_off(struct hs_conn *cn, struct handoff *h, const struct hs_exec_opts *o, uint64_t id,
         const uint64_t *taken, struct hs_redactor **red, int64_t start, struct hs_exec_out *out)
{
	struct hs_job *j = h->job;
	h->job = NULL;
	j->id = id;
	j->start_ms = start;
	j->pty = o->pty_rows && o->pty_cols;
	j->pty_rows = o->pty_rows;
	j->pty_cols = o->pty_cols;
	/* A terminal command has its own shell: the session shell is free. */
	j->holds_shell = cn->session_shell && o->keep_state && !j->pty;
	j->stdin_open = j->pty;
	snprintf(j->command, sizeof(j->command), "%s", o->command);
	for (int s = 1; s <= 2; s++) {
		j->taken[s] = taken[s];
		j->red[s] = red[s];
		red[s] = NULL;
	}
	pthread_mutex_lock(&cn->lock);
	j->number = next_job_number(cn);
	j->next = cn->jobs;
	cn->jobs = j;
	forget_old_jobs(cn);
	pthread_mutex_unlock(&cn->lock);
	out->job = j;
	out->runner_id = id;
	out->duration_ms = hs_now_ms() - start;
}

/* The last line of a command's output, as far as it fits: a prompt. */
struct last_line {
	char s[256];
	size_t n;
	int ended; /* a newline ended it: the next byte starts another */
};

static int
is_break(char c)
{
	return c == '\n' || c == '\r';
}

/* Only the chunk's last line can matter, so only it is looked at (from the
 * end: a command's whole output passes here). */
static void
last_line_feed(struct last_line *l, const char *buf, size_t len)
{
	size_t end = len, start;
	while (end > 0 && is_break(buf[end - 1]))
		end--;
	if (end == 0) {
		if (len) /* only line breaks: the last line, if any, ended */
			l->ended = l->n > 0;
		return;
	}
	/* After the last line break before end (memrchr: this runs over every byte). */
	const char *nl = memrchr(buf, '\n', end), *cr = memrchr(buf, '\r', end);
	if (cr && (!nl || cr > nl))
		nl = cr;
	start = nl ? (size_t)(nl - buf) + 1 : 0;
	if (start > 0 || l->ended) /* a new line begins */
		l->n = l->ended = 0;
	for (size_t i = start; i < end && l->n < sizeof(l->s) - 1; i++)
		l->s[l->n++] = buf[i];
	if (end < len)
		l->ended = 1;
}

static void
prompt_emit(void *ctx, const char *data, size_t len)
{
	char *p = ctx;
	size_t have = strlen(p);
	if (len > 255 - have)
		len = 255 - have;
	memcpy(p + have, data, len);
	p[have + len] = '\0';
}

/* The prompt of l into out[256], with the secrets of o redacted. */
static void
prompt_of(const struct last_line *l, const struct hs_exec_opts *o, char *out)
{
	struct hs_redactor *r = NULL;
	out[0] = '\0';
	if (o->n_secrets && hs_redactor_new(&r, (const char *const *)o->secrets, o->n_secrets) == 0) {
		hs_redact_feed(r, l->s, l->n, prompt_emit, out);
		hs_redact_flush(r, prompt_emit, out);
		hs_redactor_free(r);
		return;
	}
	if (!o->n_secrets)
		prompt_emit(out, l->s, l->n);
}

/* Acknowledgements and credit are sent in batches: at least this much
 * taken, or nothing more buffered to take (before the reader waits). */
#define HS_ACK_BATCH (256u * 1024u)

/* Confirm every stream's taken offset not yet acknowledged, and return the
 * credit due, in one write. */
static void
taken_flush(struct hs_conn *cn, uint64_t id, const uint64_t *taken, uint64_t *acked,
            uint64_t *credit_due)
{
	uint64_t off[4] = { 0 };
	int any = *credit_due != 0;
	for (int s = 1; s <= 3; s++)
		if (taken[s] > acked[s]) {
			off[s] = acked[s] = taken[s];
			any = 1;
		}
	if (any && cn->rc)
		hsr_client_taken(cn->rc, id, off, *credit_due);
	*credit_due = 0;
}

/* taken_flush() once a batch is due. */
static void
taken_batch(struct hs_conn *cn, uint64_t id, const uint64_t *taken, uint64_t *acked,
            uint64_t *credit_due)
{
	uint64_t behind = *credit_due;
	for (int s = 1; s <= 3; s++)
		behind += taken[s] - acked[s];
	if (behind >= HS_ACK_BATCH || !hsr_client_pending(cn->rc))
		taken_flush(cn, id, taken, acked, credit_due);
}

int
hs_conn_exec(struct hs_conn *cn, const struct hs_exec_opts *o, const struct hs_sink_ops *sink,
             struct hs_exec_out *out, char *err, size_t errlen)
{
	const char **argv = calloc(HS_ARGV_MAX + o->n_sets, sizeof(*argv));
	struct state_buf state = { 0 };
	struct hs_redactor *red[3] = { NULL, NULL, NULL };
	struct hsr_event ev;
	uint64_t id, taken[4] = { 0 }, acked[4] = { 0 }, credit_due = 0;
	int lossless = o->head_bytes == 0 && o->tail_bytes == 0;
	int stdin_open = o->stdin_pipe && sink && sink->input_fd >= 0, stdin_sent = 0;
	int cancel_sent = 0, rc = -1, done = 0, resent = 0, deadline_cancel = 0, sent_exec = 0;
	int64_t start = hs_now_ms(), grace = o->grace_ms >= 0 ? o->grace_ms : 2000;
	char e[256] = "";
	struct handoff h;
	struct last_line last = { .n = 0 };

	if (cn->exec_mode) {
		free(argv);
		if (o->pty_rows && o->pty_cols) {
			hs_conn_pty_unsupported(cn, err, errlen);
			return -1;
		}
		return hs_conn_exec_direct(cn, o, sink, out, err, errlen);
	}
	memset(out, 0, sizeof(*out));
	if (!argv || handoff_init(&h, o, sink) < 0) {
		free(argv);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (o->n_secrets && sink) {
		for (int i = 1; i <= 2; i++)
			if (hs_redactor_new(&red[i], (const char *const *)o->secrets, o->n_secrets) < 0) {
				snprintf(err, errlen, "out of memory");
				goto out;
			}
	}
	pthread_mutex_lock(&cn->lock);
	id = ++cn->next_id;
	pthread_mutex_unlock(&cn->lock);
	struct hsr_exec_spec spec;
	exec_spec(cn, o, id, argv, &spec);
	if (ensure_stream(cn, err, errlen) < 0 || pty_check(cn, &spec, err, errlen) < 0)
		goto out;
	for (int tries = 0; hsr_client_exec(cn->rc, &spec) < 0; tries++) {
		if (tries == HS_REATTACH_TRIES || reattach(cn, 0, 0, NULL, e, sizeof(e)) < 0) {
			snprintf(err, errlen, "cannot send the command to the runner: %s", e[0] ? e : strerror(errno));
			goto out;
		}
	}
	sent_exec = 1;
	while (!done) {
		struct pollfd pf[4];
		int np = 0, ti = -1, wi = -1, timeout = 1000;
		if (h.job && !cancel_sent) {
			int64_t left = o->handoff_ms - (hs_now_ms() - start);
			if (left <= 0) {
				if (stdin_open)
					hsr_client_stdin_eof(cn->rc, id);
				taken_flush(cn, id, taken, acked, &credit_due);
				hand_off(cn, &h, o, id, taken, red, start, out);
				rc = 0;
				goto out;
			}
			if (left < timeout)
				timeout = (int)left;
		}
		if (!hsr_client_pending(cn->rc)) {
			pf[np++] = (struct pollfd){ hsr_client_fd(cn->rc), POLLIN, 0 };
			if (stdin_open) {
				ti = np;
				pf[np++] = (struct pollfd){ sink->input_fd, POLLIN, 0 };
			}
			if (sink && sink->cancel_fd >= 0 && !cancel_sent) {
				pf[np++] = (struct pollfd){ sink->cancel_fd, POLLIN, 0 };
			}
			if (sink && sink->resize && spec.pty_rows) {
				wi = np;
				pf[np++] = (struct pollfd){ sink->resize_fd, POLLIN, 0 };
			}
			if (poll(pf, (nfds_t)np, timeout) < 0 && errno != EINTR) {
				snprintf(err, errlen, "poll: %s", strerror(errno));
				goto out;
			}
		} else {
			pf[0].revents = POLLIN;
		}
		if (sink && sink->cancelled && !cancel_sent && sink->cancelled(sink->ctx)) {
			hsr_client_cancel(cn->rc, id);
			cancel_sent = 1;
		}
		/* The core backs the runner's deadline up: cancel, then give up. */
		if (o->deadline_ms > 0) {
			int64_t over = hs_now_ms() - start - o->deadline_ms;
			if (over > grace + 5000 && !cancel_sent) {
				hsr_client_cancel(cn->rc, id);
				cancel_sent = 1;
				deadline_cancel = 1;
			} else if (over > grace + 15000) {
				snprintf(err, errlen, "the runner did not stop the command at its deadline");
				goto out;
			}
		}
		uint16_t rows, cols;
		if (wi >= 0 && (pf[wi].revents & POLLIN) && sink->resize(sink->ctx, &rows, &cols))
			hsr_client_resize(cn->rc, id, rows, cols);
		if (ti >= 0 && (pf[ti].revents & (POLLIN | POLLHUP | POLLERR))) {
			char buf[65536];
			long n = sink->input(sink->ctx, buf, sizeof(buf));
			if (n >= 0)
				stdin_sent = 1;
			/* Judged before it is sent: refused, the command stops instead. */
			if (n >= 0 && o->stdin_gate &&
			    !o->stdin_gate(o->stdin_gate_ctx, n ? buf : NULL, (size_t)n,
			                   out->stdin_refused, sizeof(out->stdin_refused))) {
				stdin_open = 0;
				if (!cancel_sent) {
					hsr_client_cancel(cn->rc, id);
					cancel_sent = 1;
				}
				n = -1;
			}
			if (n > 0) {
				if (hsr_client_stdin(cn->rc, id, buf, (size_t)n) < 0)
					stdin_open = 0;
			} else if (n == 0) {
				hsr_client_stdin_eof(cn->rc, id);
				stdin_open = 0;
			}
		}
		if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		int r = hsr_client_next(cn->rc, &ev, 0, e, sizeof(e));
		if (r == 0)
			continue;
		if (r < 0) {
			/* The stream broke: re-attach and let the runner resend what we did not take. */
			if (reattach(cn, lossless ? 0 : HSR_CREDIT_UNLIMITED, id, taken, e, sizeof(e)) < 0) {
				snprintf(err, errlen, "lost the runner stream and could not re-attach: %s", e);
				goto out;
			}
			/* The re-attach confirmed taken and reset the credit. */
			memcpy(acked, taken, sizeof(acked));
			credit_due = 0;
			if (lossless)
				hsr_client_credit(cn->rc, id, HS_WINDOW);
			continue;
		}
		if (ev.type == HSR_EV_ATTACH && !attach_lists(&ev, id)) {
			/* The EXEC was lost with the stream before the daemon read it:
			 * nothing ran, so send it again, unless stdin was already taken. */
			if (cn->runner_restarted) {
				snprintf(err, errlen, "the sandbox's runner was restarted while the command ran: "
				                      "the command is lost (it may have run in part)");
				goto out;
			}
			if (taken[1] || taken[2] || taken[3] || stdin_sent) {
				snprintf(err, errlen, "the runner lost the command when its stream broke");
				goto out;
			}
			/* A failed send means the new stream broke too: the next read
			 * says so, and the next ATTACH list is checked again. */
			if (hsr_client_exec(cn->rc, &spec) == 0)
				resent = 1;
		}
		if (ev.id != id) {
			route(cn, &ev); /* another command's: a background job's */
			continue;
		}
		switch (ev.type) {
		case HSR_EV_OUTPUT:
			/* After a re-attach the runner resends from the acknowledged offset. */
			if (ev.stream < 1 || ev.stream > 2 || ev.offset + ev.len <= taken[ev.stream])
				break;
			{
				size_t skip = ev.offset < taken[ev.stream] ? (size_t)(taken[ev.stream] - ev.offset) : 0;
				if (ev.offset > taken[ev.stream]) {
					uint64_t gap = ev.offset - taken[ev.stream];
					out->dropped[ev.stream] += gap;
					if (h.job)
						hs_capture_gap(&h.job->cap[ev.stream], gap);
					/* Redacted bytes before the gap go first. */
					deliver_flush(&h.tee, red[ev.stream], ev.stream);
					if (sink && sink->gap)
						sink->gap(sink->ctx, ev.stream, gap);
				}
				if (sink && deliver(&h.tee, red[ev.stream], ev.stream, (const char *)ev.data + skip,
				                    ev.len - skip) < 0 && !cancel_sent) {
					hsr_client_cancel(cn->rc, id);
					cancel_sent = 1;
				}
				last_line_feed(&last, (const char *)ev.data + skip, ev.len - skip);
				taken[ev.stream] = ev.offset + ev.len;
				if (lossless)
					credit_due += ev.len;
				taken_batch(cn, id, taken, acked, &credit_due);
			}
			break;
		case HSR_EV_STATE:
			if (ev.offset + ev.len > taken[3]) {
				size_t skip = ev.offset < taken[3] ? (size_t)(taken[3] - ev.offset) : 0;
				state_append(&state, (const char *)ev.data + skip, ev.len - skip);
				taken[3] = ev.offset + ev.len;
				if (lossless)
					credit_due += ev.len;
				taken_batch(cn, id, taken, acked, &credit_due);
			}
			break;
		case HSR_EV_WAITING:
			out->waiting_input = ev.final != 0;
			if (out->waiting_input) {
				prompt_of(&last, o, out->prompt);
				if (sink && sink->waiting)
					sink->waiting(sink->ctx, out->prompt);
			}
			break;
		case HSR_EV_EXIT:
			/* Only a command stopped while it waited counts as waiting;
			 * its prompt is the last line of all it wrote. */
			if (!ev.timed_out && !ev.cancelled)
				out->waiting_input = 0;
			else if (out->waiting_input)
				prompt_of(&last, o, out->prompt);
			out->exit_code = ev.exit_code;
			out->timed_out = ev.timed_out;
			out->cancelled = ev.cancelled;
			out->jobs_left = ev.jobs_left;
			out->runner_id = id;
			out->shell_restarted = ev.shell_restarted;
			snprintf(out->restart_reason, sizeof(out->restart_reason), "%s", ev.reason);
			if (deadline_cancel && ev.cancelled) { /* the core's backup of the deadline */
				out->timed_out = 1;
				out->cancelled = 0;
			}
			/* The runner's count and the offset jumps seen are the same bytes. */
			for (int s = 1; s <= 2; s++) {
				if (ev.dropped[s] > out->dropped[s])
					out->dropped[s] = ev.dropped[s];
				out->total[s] = ev.total[s];
			}
			hsr_client_ack(cn->rc, id, 0, 0);
			for (int st = 1; sink && st <= 2; st++)
				deliver_flush(&h.tee, red[st], st);
			done = 1;
			break;
		case HSR_EV_ERROR:
			if (resent && ev.code == HSR_E_BUSY) {
				/* The first EXEC was still queued on the broken stream and
				 * arrived after all; take the command over on this stream. */
				resent = 0;
				/* A failed send means the stream broke: the re-attach that
				 * follows takes every command over anyway. */
				if (hsr_client_attach_credit(cn->rc, lossless ? 0 : HSR_CREDIT_UNLIMITED) == 0 &&
				    lossless)
					hsr_client_credit(cn->rc, id, HS_WINDOW);
				break;
			}
			snprintf(err, errlen, "the runner: %s", ev.message);
			goto out;
		default:
			break;
		}
	}
	out->duration_ms = hs_now_ms() - start;
	rc = 0;
	if (o->keep_state && state.len && !state.overflow && !out->timed_out && !out->cancelled) {
		size_t n = hs_shell_filter_snapshot(state.data, state.len);
		/* Atomic, but no fsync: the snapshot is scratch state of the session. */
		if (hs_conn_put(cn, cn->snapshot, 0600, state.data, n, 0, e, sizeof(e)) < 0)
			hs_warn("the session's shell state was not saved: %s", e);
	}
out:
	/* Given up on a command the runner has: it must not run on unseen. */
	if (rc < 0 && sent_exec && !done && cn->rc)
		hsr_client_cancel(cn->rc, id);
	for (int i = 1; i <= 2; i++)
		hs_redactor_free(red[i]);
	if (h.job)
		job_free(h.job);
	free(state.data);
	free(argv);
	return rc;
}

/* One PUT; -2 when the stream broke (the caller re-attaches and tries again). */
static int
put_once(struct hs_conn *cn, const char *path, uint32_t mode, const void *buf, size_t len,
         int durable, char *err, size_t errlen)
{
	struct hsr_event ev;
	uint64_t id;

	pthread_mutex_lock(&cn->lock);
	id = ++cn->next_id;
	pthread_mutex_unlock(&cn->lock);
	if (ensure_stream(cn, err, errlen) < 0)
		return -1;
	if (hsr_client_put_file_flags(cn->rc, id, path, mode, buf, len,
	                              durable ? 0 : HSR_PUT_NOSYNC) < 0) {
		snprintf(err, errlen, "cannot send '%s' to the runner: %s", path, strerror(errno));
		return -2;
	}
	for (;;) {
		int r = hsr_client_next(cn->rc, &ev, 30000, err, errlen);
		if (r <= 0) {
			if (r == 0)
				snprintf(err, errlen, "the runner did not confirm writing '%s'", path);
			return r < 0 ? -2 : -1;
		}
		if (ev.id != id) {
			route(cn, &ev);
			continue;
		}
		if (ev.type == HSR_EV_OK)
			return 0;
		if (ev.type == HSR_EV_ERROR) {
			snprintf(err, errlen, "cannot write '%s': %s", path, ev.message);
			return -1;
		}
	}
}

/* One GET; -2 when the stream broke. */
static int
get_once(struct hs_conn *cn, const char *path, size_t max, void **bufp, size_t *lenp, char *err,
         size_t errlen)
{
	struct hsr_event ev;
	char *buf = NULL;
	size_t len = 0;
	uint64_t id;

	pthread_mutex_lock(&cn->lock);
	id = ++cn->next_id;
	pthread_mutex_unlock(&cn->lock);
	if (ensure_stream(cn, err, errlen) < 0)
		return -1;
	if (hsr_client_get_file(cn->rc, id, path) < 0) {
		snprintf(err, errlen, "cannot ask the runner for '%s': %s", path, strerror(errno));
		return -2;
	}
	for (;;) {
		int r = hsr_client_next(cn->rc, &ev, 30000, err, errlen);
		if (r <= 0) {
			if (r == 0)
				snprintf(err, errlen, "the runner did not send '%s'", path);
			free(buf);
			return r < 0 ? -2 : -1;
		}
		if (ev.id != id) {
			route(cn, &ev);
			continue;
		}
		if (ev.type == HSR_EV_ERROR) {
			snprintf(err, errlen, "cannot read '%s': %s", path, ev.message);
			free(buf);
			return -1;
		}
		if (ev.type != HSR_EV_FILE_DATA)
			continue;
		if (len + ev.len > max) {
			snprintf(err, errlen, "'%s' is larger than %zu bytes", path, max);
			free(buf);
			/* Drain the rest of the transfer so the stream stays in step. */
			while (!ev.final && hsr_client_next(cn->rc, &ev, 30000, err, errlen) == 1)
				;
			return -1;
		}
		char *nb = realloc(buf, len + ev.len + 1);
		if (!nb) {
			free(buf);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		buf = nb;
		memcpy(buf + len, ev.data, ev.len);
		len += ev.len;
		if (ev.final) {
			buf[len] = '\0';
			*bufp = buf;
			*lenp = len;
			return 0;
		}
	}
}

/* One request answered by one event with its id or token (JOBS, SIGNAL to a
 * job): waits for it, routing other events; 1 with *ev, 0 timed out, -1
 * when the stream broke. */
static int
await_answer(struct hs_conn *cn, uint64_t id, int type, struct hsr_event *ev, char *err,
             size_t errlen)
{
	for (;;) {
		int r = hsr_client_next(cn->rc, ev, 30000, err, errlen);
		if (r <= 0)
			return r;
		if (ev->type == HSR_EV_JOBS) {
			if (type == HSR_EV_JOBS && ev->token == id)
				return 1;
		} else if ((ev->type == type || ev->type == HSR_EV_ERROR) && ev->id == id) {
			return 1;
		}
		route(cn, ev);
	}
}

int
hs_conn_shell_jobs(struct hs_conn *cn, struct hs_shell_job *out, size_t max, char *err,
                   size_t errlen)
{
	struct hsr_event ev;
	struct hsr_reader rd;
	struct hsr_job_entry e;
	uint64_t token;
	size_t n = 0;

	if (cn->exec_mode || !cn->session_shell)
		return 0;
	pthread_mutex_lock(&cn->lock);
	token = ++cn->next_id;
	pthread_mutex_unlock(&cn->lock);
	if (ensure_stream(cn, err, errlen) < 0)
		return -1;
	if (hsr_client_jobs(cn->rc, token) < 0 || await_answer(cn, token, HSR_EV_JOBS, &ev, err, errlen) != 1) {
		if (!err[0])
			snprintf(err, errlen, "the runner did not list its jobs");
		return -1;
	}
	if (ev.type != HSR_EV_JOBS) {
		snprintf(err, errlen, "the runner: %s", ev.message);
		return -1;
	}
	hsr_reader_init(&rd, ev.data, ev.len);
	while (n < max && hsr_jobs_entry_next(&rd, &e)) {
		struct hs_shell_job *j = &out[n++];
		j->id = e.id;
		j->alive = e.alive;
		j->procs = e.procs;
		j->log_bytes[1] = e.log_bytes[1];
		j->log_bytes[2] = e.log_bytes[2];
		snprintf(j->command, sizeof(j->command), "%.*s", (int)e.command_len, e.command);
	}
	return (int)n;
}

int
hs_conn_shell_job_signal(struct hs_conn *cn, uint64_t id, int sig, char *err, size_t errlen)
{
	struct hsr_event ev;

	if (cn->exec_mode || !cn->session_shell)
		return 1;
	if (ensure_stream(cn, err, errlen) < 0)
		return -1;
	if (hsr_client_signal(cn->rc, id, sig) < 0 || await_answer(cn, id, HSR_EV_OK, &ev, err, errlen) != 1) {
		if (!err[0])
			snprintf(err, errlen, "the runner did not answer");
		return -1;
	}
	return ev.type == HSR_EV_OK ? 0 : 1;
}

/* One READ of kept output; -2 when the stream broke. */
static int
read_once(struct hs_conn *cn, uint64_t id, int stream, uint64_t off, size_t max,
          struct hs_output_range *r, char *err, size_t errlen)
{
	struct hsr_event ev;
	uint64_t token;

	pthread_mutex_lock(&cn->lock);
	token = ++cn->next_id;
	pthread_mutex_unlock(&cn->lock);
	if (ensure_stream(cn, err, errlen) < 0)
		return -1;
	if (hsr_client_read(cn->rc, token, id, stream, off, (uint32_t)max) < 0)
		return -2;
	int a = await_answer(cn, token, HSR_EV_RANGE, &ev, err, errlen);
	if (a <= 0) {
		if (a == 0)
			snprintf(err, errlen, "the runner did not answer a read of kept output");
		return a < 0 ? -2 : -1;
	}
	if (ev.type == HSR_EV_ERROR) {
		snprintf(err, errlen, "%s", ev.code == HSR_E_PROTO
		         ? "the session's runner cannot read back output (an older hs-runner)" : ev.message);
		return ev.code == HSR_E_NOENT ? 1 : -1;
	}
	/* The runner is inside the sandbox: never take more than was asked. */
	if (ev.len > max || (ev.stream != stream)) {
		snprintf(err, errlen, "the runner answered a read of kept output with a range it was not asked for");
		return -1;
	}
	r->data = malloc(ev.len ? ev.len : 1);
	if (!r->data) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(r->data, ev.data, ev.len);
	r->len = ev.len;
	r->offset = ev.offset;
	r->total = ev.token;
	r->ended = ev.final;
	return 0;
}

int
hs_conn_output_read(struct hs_conn *cn, uint64_t id, int stream, uint64_t off, size_t max,
                    struct hs_output_range *r, char *err, size_t errlen)
{
	char e[256];
	memset(r, 0, sizeof(*r));
	if (cn->exec_mode) {
		snprintf(err, errlen, "backend '%s' keeps no output to read back: it has no runner here",
		         cn->be->plugin.name);
		return 1;
	}
	for (int i = 0;; i++) {
		int rc = read_once(cn, id, stream, off, max, r, err, errlen);
		if (rc != -2)
			return rc;
		if (i == HS_REATTACH_TRIES || reattach(cn, HSR_CREDIT_UNLIMITED, 0, NULL, e, sizeof(e)) < 0)
			return -1;
	}
}

int
hs_conn_output_spill(struct hs_conn *cn, uint64_t id, char *out_path, char *err_path, size_t len,
                     char *err, size_t errlen)
{
	struct hsr_event ev;
	uint64_t token;

	if (cn->exec_mode) {
		snprintf(err, errlen, "backend '%s' keeps no output to spill: it has no runner here",
		         cn->be->plugin.name);
		return -1;
	}
	pthread_mutex_lock(&cn->lock);
	token = ++cn->next_id;
	pthread_mutex_unlock(&cn->lock);
	if (ensure_stream(cn, err, errlen) < 0)
		return -1;
	if (hsr_client_spill(cn->rc, token, id) < 0 || await_answer(cn, token, HSR_EV_OK, &ev, err, errlen) != 1) {
		if (!err[0])
			snprintf(err, errlen, "the runner did not answer the spill");
		return -1;
	}
	if (ev.type == HSR_EV_ERROR) {
		snprintf(err, errlen, "%s", ev.code == HSR_E_PROTO
		         ? "the session's runner cannot spill output (an older hs-runner)" : ev.message);
		return -1;
	}
	const char *dir = cn->props.runtime_dir[0] ? cn->props.runtime_dir : "/tmp";
	snprintf(out_path, len, "%s/out-%llu.stdout", dir, (unsigned long long)id);
	snprintf(err_path, len, "%s/out-%llu.stderr", dir, (unsigned long long)id);
	return 0;
}

void
hs_conn_shell_job_log(const struct hs_conn *cn, uint64_t id, int stream, char *path, size_t len)
{
	snprintf(path, len, "%s/job-%llu.%s.log", cn->props.runtime_dir[0] ? cn->props.runtime_dir : "/tmp",
	         (unsigned long long)id, stream == 2 ? "err" : "out");
}

/* Files are whole-file operations: after a broken stream they are simply redone. */
int
hs_conn_put(struct hs_conn *cn, const char *path, uint32_t mode, const void *buf, size_t len,
            int durable, char *err, size_t errlen)
{
	char e[256];
	if (cn->exec_mode)
		return hs_conn_put_direct(cn, path, mode, buf, len, err, errlen);
	for (int i = 0;; i++) {
		int rc = put_once(cn, path, mode, buf, len, durable, err, errlen);
		if (rc != -2)
			return rc;
		if (i == HS_REATTACH_TRIES || reattach(cn, HSR_CREDIT_UNLIMITED, 0, NULL, e, sizeof(e)) < 0)
			return -1;
	}
}

int
hs_conn_get(struct hs_conn *cn, const char *path, size_t max, void **bufp, size_t *lenp, char *err,
            size_t errlen)
{
	char e[256];
	if (cn->exec_mode)
		return hs_conn_get_direct(cn, path, max, bufp, lenp, err, errlen);
	for (int i = 0;; i++) {
		int rc = get_once(cn, path, max, bufp, lenp, err, errlen);
		if (rc != -2)
			return rc;
		if (i == HS_REATTACH_TRIES || reattach(cn, HSR_CREDIT_UNLIMITED, 0, NULL, e, sizeof(e)) < 0)
			return -1;
	}
}

/* Keep the newest HS_JOBS_DONE_MAX finished jobs (the list is newest first);
 * older finished ones, and their output, are freed.  Called under cn->lock. */
static void
forget_old_jobs(struct hs_conn *cn)
{
	unsigned done = 0;
	for (struct hs_job **pp = &cn->jobs; *pp;) {
		struct hs_job *j = *pp;
		if (j->done && ++done > HS_JOBS_DONE_MAX) {
			*pp = j->next;
			job_free(j);
			continue;
		}
		pp = &j->next;
	}
}

/* A job with output bounded to limit bytes per stream, or NULL (no memory). */
static struct hs_job *
job_new(size_t limit)
{
	struct hs_job *j = calloc(1, sizeof(*j));
	if (!j || hs_capture_init(&j->cap[1], limit) < 0 || hs_capture_init(&j->cap[2], limit) < 0) {
		if (j) {
			hs_capture_free(&j->cap[1]);
			free(j);
		}
		return NULL;
	}
	return j;
}

/* The number for the next job ("j<number>"); under cn->lock. */
static unsigned
next_job_number(const struct hs_conn *cn)
{
	unsigned n = 0;
	for (const struct hs_job *k = cn->jobs; k; k = k->next)
		if (k->number > n)
			n = k->number;
	return n + 1;
}

int
hs_conn_adopt(struct hs_conn *cn, size_t limit, unsigned *first, unsigned *count, char *err,
              size_t errlen)
{
	struct hsr_event ev;
	char e[256] = "";
	*first = *count = 0;
	if (cn->exec_mode || !cn->rc)
		return 0;
	if (hsr_client_attach_credit(cn->rc, HSR_CREDIT_UNLIMITED) < 0) {
		snprintf(err, errlen, "cannot ask the runner for its commands: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		int r = hsr_client_next(cn->rc, &ev, 30000, e, sizeof(e));
		if (r <= 0) {
			snprintf(err, errlen, "the runner did not list its commands: %s",
			         r == 0 ? "no answer within 30 s" : e);
			return -1;
		}
		if (ev.type == HSR_EV_ATTACH)
			break;
		route(cn, &ev);
	}
	for (size_t i = 0; i < ev.nattach; i++) {
		const struct hsr_attach_entry *a = &ev.attach[i];
		if (job_by_id(cn, a->id))
			continue;
		struct hs_job *j = job_new(limit);
		if (!j) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		j->id = a->id;
		j->start_ms = hs_now_ms();
		/* What the lost client took is gone: the job's output starts at
		 * the runner's resend offset, after a gap of that size. */
		for (int st = 1; st <= 2; st++) {
			j->taken[st] = a->acked[st];
			if (a->acked[st])
				hs_capture_gap(&j->cap[st], a->acked[st]);
		}
		pthread_mutex_lock(&cn->lock);
		j->number = next_job_number(cn);
		j->next = cn->jobs;
		cn->jobs = j;
		pthread_mutex_unlock(&cn->lock);
		if (!*first)
			*first = j->number;
		(*count)++;
	}
	return 0;
}

int
hs_conn_start_job(struct hs_conn *cn, const struct hs_exec_opts *o, size_t limit,
                  struct hs_job **jobp, char *err, size_t errlen)
{
	const char *argv[HS_ARGV_MAX];
	struct hsr_exec_spec spec;
	struct hs_exec_opts jo = *o;
	struct hs_job *j;

	if (cn->exec_mode) {
		snprintf(err, errlen, "backend '%s' cannot run background jobs here: they need the runner%s%s",
		         cn->be->plugin.name, cn->props.runner_reason[0] ? ", and " : "",
		         cn->props.runner_reason);
		return -1;
	}
	j = job_new(limit);
	if (!j) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* Jobs keep bounded output and never write the session's shell state;
	 * their stdin is open only when asked (stdin_pipe: write_stdin). */
	jo.keep_state = 0;
	jo.head_bytes = limit / 2;
	jo.tail_bytes = limit - limit / 2;
	pthread_mutex_lock(&cn->lock);
	j->id = ++cn->next_id;
	j->number = next_job_number(cn);
	pthread_mutex_unlock(&cn->lock);
	exec_spec(cn, &jo, j->id, argv, &spec);
	j->start_ms = hs_now_ms();
	j->pty = spec.pty_rows != 0;
	j->pty_rows = spec.pty_rows;
	j->pty_cols = spec.pty_cols;
	j->stdin_open = j->pty || jo.stdin_pipe;
	snprintf(j->command, sizeof(j->command), "%s", o->command);
	if (ensure_stream(cn, err, errlen) < 0 || pty_check(cn, &spec, err, errlen) < 0) {
		job_free(j);
		return -1;
	}
	if (hsr_client_exec(cn->rc, &spec) < 0) {
		if (cn->rc)
			snprintf(err, errlen, "cannot send the job to the runner: %s", strerror(errno));
		job_free(j);
		return -1;
	}
	pthread_mutex_lock(&cn->lock);
	j->next = cn->jobs;
	cn->jobs = j;
	forget_old_jobs(cn);
	pthread_mutex_unlock(&cn->lock);
	*jobp = j;
	return 0;
}

/* 0 when job j can take a write or resize now, else -1 with err. */
static int
job_live(struct hs_conn *cn, const struct hs_job *j, char *err, size_t errlen)
{
	if (j->done || !cn->rc) {
		snprintf(err, errlen, "job j%u has ended", j->number);
		return -1;
	}
	return 0;
}

int
hs_conn_resize(struct hs_conn *cn, struct hs_job *j, unsigned rows, unsigned cols, char *err,
               size_t errlen)
{
	if (!j->pty) {
		snprintf(err, errlen, "job j%u has no terminal: start it with \"pty\"", j->number);
		return -1;
	}
	if (job_live(cn, j, err, errlen) < 0)
		return -1;
	if (hsr_client_resize(cn->rc, j->id, (uint16_t)rows, (uint16_t)cols) < 0) {
		snprintf(err, errlen, "cannot resize the terminal of job j%u: %s", j->number, strerror(errno));
		return -1;
	}
	j->pty_rows = rows;
	j->pty_cols = cols;
	return 0;
}

int
hs_conn_write_stdin(struct hs_conn *cn, struct hs_job *j, const void *buf, size_t len, int eof,
                    char *err, size_t errlen)
{
	if (!j->stdin_open) {
		snprintf(err, errlen, "job j%u takes no input: start it with \"pty\" or \"stdin_open\"%s",
		         j->number, j->pty ? "" : " (or its stdin was closed)");
		return -1;
	}
	if (job_live(cn, j, err, errlen) < 0)
		return -1;
	if ((len && hsr_client_stdin(cn->rc, j->id, buf, len) < 0) ||
	    (eof && hsr_client_stdin_eof(cn->rc, j->id) < 0)) {
		snprintf(err, errlen, "cannot write to job j%u: %s", j->number, strerror(errno));
		return -1;
	}
	if (eof && !j->pty)
		j->stdin_open = 0;
	return 0;
}

int
hs_conn_pump(struct hs_conn *cn, int timeout_ms, char *err, size_t errlen)
{
	struct hsr_event ev;
	int r;
	if (!cn->rc)
		return 0;
	while ((r = hsr_client_next(cn->rc, &ev, timeout_ms, err, errlen)) == 1) {
		route(cn, &ev);
		timeout_ms = 0;
	}
	if (r < 0) {
		/* The stream is gone and with it what we knew of running jobs: say so. */
		for (struct hs_job *j = cn->jobs; j; j = j->next)
			if (!j->done) {
				j->done = 1;
				j->exit_code = 125;
				j->duration_ms = hs_now_ms() - j->start_ms;
			}
	}
	return r;
}

struct hs_job *
hs_conn_job(struct hs_conn *cn, unsigned n)
{
	for (struct hs_job *j = cn->jobs; j; j = j->next)
		if (j->number == n)
			return j;
	return NULL;
}

int
hs_conn_jobs_running(const struct hs_conn *cn)
{
	for (const struct hs_job *j = cn->jobs; j; j = j->next)
		if (!j->done)
			return 1;
	return 0;
}

int
hs_conn_job_kill(struct hs_conn *cn, struct hs_job *job)
{
	return job->done || !cn->rc ? 0 : hsr_client_cancel(cn->rc, job->id);
}

struct hs_job *
hs_conn_shell_holder(struct hs_conn *cn)
{
	for (struct hs_job *j = cn->jobs; j; j = j->next)
		if (j->holds_shell && !j->done)
			return j;
	return NULL;
}

int
hs_conn_shell_job_read(struct hs_conn *cn, const struct hs_shell_job *j, int stream, uint64_t off,
                       size_t limit, void **buf, size_t *from, size_t *take, size_t *total,
                       char *err, size_t errlen)
{
	char path[4200];
	size_t len = 0;
	*buf = NULL;
	*from = *take = 0;
	hs_conn_shell_job_log(cn, j->id, stream, path, sizeof(path));
	/* Room for what the job wrote since it was listed. */
	if (j->log_bytes[stream] &&
	    hs_conn_get(cn, path, (size_t)j->log_bytes[stream] + 65536, buf, &len, err, errlen) < 0)
		return -1;
	*from = off < len ? (size_t)off : len;
	*take = len - *from < limit ? len - *from : limit;
	*total = len;
	return 0;
}
