/* SPDX-License-Identifier: MIT */
/*
 * cmd_serve.c - `hs serve`: JSON lines on stdin/stdout.
 *
 * The main thread reads requests; each session has a worker thread that
 * runs its requests in order (foreground commands one at a time), so a
 * slow command in one session never delays another.  Replies and events
 * are written whole, one line per write, under one lock, so lines never
 * interleave.  Malformed input gets an error reply and the server goes on.
 *
 * This file holds the main loop and the dispatch of requests to sessions;
 * serve-out.c the writer, serve-sess.c the session threads and their ops.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "core/safety/approval.h"
#include "core/cli/cmds.h"
#include "core/core.h"
#include "core/config/hsconf.h"
#include "core/job-ops.h"
#include "core/json.h"
#include "core/serve/serve-req.h"
#include "core/serve/serve.h"

#define SRV_MAX_LINE (16u * 1024u * 1024u)

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

/* Hand r to ss's thread; 0, or (r untouched) -1 when too much is waiting already, -2 when it is closed. */
static int
enqueue(struct sess *ss, struct req *r)
{
	struct srv *s = ss->srv;
	pthread_mutex_lock(&s->mu);
	pthread_mutex_lock(&ss->mu);
	/* Closed (or failed to open) since it was found: its thread takes nothing more. */
	int full = ss->n_reqs >= SRV_SESS_REQS_MAX || s->req_bytes + r->size > SRV_REQ_BYTES_MAX;
	if (ss->closing == 2 || full) {
		pthread_mutex_unlock(&ss->mu);
		pthread_mutex_unlock(&s->mu);
		return full ? -1 : -2;
	}
	s->req_bytes += r->size;
	ss->n_reqs++;
	if (ss->tail)
		ss->tail->next = r;
	else
		ss->head = r;
	ss->tail = r;
	pthread_cond_signal(&ss->cv);
	pthread_mutex_unlock(&ss->mu);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static void
free_req(struct req *r)
{
	yajl_tree_free(r->root);
	free(r);
}

/* Free ss; requests that came in while it was closing get an answer if reply is set. */
static void
sess_free(struct sess *ss, int reply)
{
	for (struct req *r = ss->head, *next; r; r = next) {
		next = r->next;
		if (reply)
			srv_reply_error(ss->srv, r->id, "no_session", "the session was closed");
		free_req(r);
	}
	for (int i = 0; i < 2; i++)
		if (ss->cancel_pipe[i] >= 0)
			close(ss->cancel_pipe[i]);
	hs_job_guards_free(&ss->hs);
	hs_session_free(&ss->hs);
	pthread_mutex_destroy(&ss->mu);
	pthread_cond_destroy(&ss->cv);
	free(ss);
}

/*
 * Forget the sessions whose threads are done (closed, or failed to open):
 * join the thread, free what it held.  A session with streamed output still
 * queued for the writer waits for the next round.
 */
static void
reap_closed(struct srv *s)
{
	pthread_mutex_lock(&s->mu);
	for (struct sess **pp = &s->sessions; *pp;) {
		struct sess *ss = *pp;
		pthread_mutex_lock(&ss->mu);
		int done = ss->closing == 2;
		pthread_mutex_unlock(&ss->mu);
		if (done) {
			pthread_mutex_lock(&s->out_mu);
			done = ss->queued == 0;
			pthread_mutex_unlock(&s->out_mu);
		}
		if (!done) {
			pp = &ss->next;
			continue;
		}
		*pp = ss->next;
		pthread_join(ss->thread, NULL);
		for (struct req *r = ss->head; r; r = r->next)
			s->req_bytes -= r->size;
		sess_free(ss, 1);
	}
	pthread_mutex_unlock(&s->mu);
}

/* Each op returns 1 when it kept r (queued to a session), else 0 (r is freed). */
static int
op_hello(struct srv *s, struct req *r, const char *name)
{
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kstr(g, "server", "hs " PACKAGE_VERSION);
	hs_json_kint(g, "protocol", 1);
	yajl_gen_map_close(g);
	srv_emit(s, g);
	return 0;
}

/* A new session and its thread, which runs r (the open) first. */
static int
op_open(struct srv *s, struct req *r, const char *name)
{
	if (!name || !hs_session_name_valid(name)) {
		srv_reply_error(s, r->id, "invalid_request", "open needs a valid \"session\" name");
		return 0;
	}
	if (find_session(s, name)) {
		srv_reply_error(s, r->id, "session_exists", "the session is already open here");
		return 0;
	}
	/* A client that names no mode is asked: serve has a client to ask. */
	const char *am = hs_serve_str(r->root, "approval");
	int mode = hs_approval_mode_resolve(s->c, am ? am : "ask", -1);
	if (mode < 0) {
		srv_reply_error(s, r->id, "invalid_request", "approval must be ask, deny or approve");
		return 0;
	}
	struct sess *ss = calloc(1, sizeof(*ss));
	if (!ss) {
		srv_reply_error(s, r->id, "internal", "out of memory");
		return 0;
	}
	ss->srv = s;
	snprintf(ss->name, sizeof(ss->name), "%s", name);
	srv_sess_init(ss, mode, hs_serve_true(r->root, "persistent"));
	if (pipe2(ss->cancel_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		free(ss);
		srv_reply_error(s, r->id, "internal", "cannot create a pipe");
		return 0;
	}
	pthread_mutex_init(&ss->mu, NULL);
	pthread_cond_init(&ss->cv, NULL);
	ss->head = ss->tail = r;
	ss->n_reqs = 1;
	pthread_mutex_lock(&s->mu);
	s->req_bytes += r->size;
	pthread_mutex_unlock(&s->mu);
	if (pthread_create(&ss->thread, NULL, srv_worker, ss) != 0) {
		srv_reply_error(s, r->id, "internal", "cannot start a session thread");
		pthread_mutex_lock(&s->mu);
		s->req_bytes -= r->size;
		pthread_mutex_unlock(&s->mu);
		ss->head = NULL;
		sess_free(ss, 0);
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	ss->next = s->sessions;
	s->sessions = ss;
	pthread_mutex_unlock(&s->mu);
	return 1;
}

/* exec, close, put_file, get_file, job: queued to the session's thread, in order. */
static int
op_queue(struct srv *s, struct req *r, const char *name)
{
	char err[1024];
	struct sess *ss = name ? find_session(s, name) : NULL;
	int q = ss ? enqueue(ss, r) : -2;
	if (q == -2) {
		srv_reply_error(s, r->id, "no_session", "no open session of that name (open it first)");
		return 0;
	}
	if (q < 0) {
		snprintf(err, sizeof(err), "too many requests waiting for session '%s' (at most %d, "
		         "and 256 MiB in all): wait for replies before sending more", ss->name,
		         SRV_SESS_REQS_MAX);
		srv_reply_error(s, r->id, "busy", err);
		return 0;
	}
	return 1;
}

/* Cancel the running foreground exec of a session. */
static int
op_cancel(struct srv *s, struct req *r, const char *name)
{
	struct sess *ss = name ? find_session(s, name) : NULL;
	if (!ss) {
		srv_reply_error(s, r->id, "no_session", "cancel needs the \"session\" of the command");
		return 0;
	}
	pthread_mutex_lock(&ss->mu);
	int running = ss->running_id != NULL;
	if (running && write(ss->cancel_pipe[1], "c", 1) < 0)
		running = 0;
	pthread_mutex_unlock(&ss->mu);
	yajl_gen g = srv_reply_ok(r->id);
	hs_json_kbool(g, "cancelled", running);
	yajl_gen_map_close(g);
	srv_emit(s, g);
	return 0;
}

/* The client's answer to an approval event. */
static int
op_approve(struct srv *s, struct req *r, const char *name)
{
	const char *rq = hs_serve_str(r->root, "request");
	int d = hs_decision_parse(hs_serve_str(r->root, "decision"));
	if (!rq || d < 0) {
		srv_reply_error(s, r->id, "invalid_request",
		            "approve needs \"request\" and \"decision\" (once, session, always, deny)");
		return 0;
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
		srv_reply_error(s, r->id, "no_request", "no pending approval request of that id");
		return 0;
	}
	yajl_gen g = srv_reply_ok(r->id);
	yajl_gen_map_close(g);
	srv_emit(s, g);
	return 0;
}

/* What the analyser and the approval mode make of a command. */
static int
op_check(struct srv *s, struct req *r, const char *name)
{
	const char *command = hs_serve_str(r->root, "command");
	const char *cx = hs_serve_str(r->root, "context");
	if (!command) {
		srv_reply_error(s, r->id, "invalid_request", "check needs a \"command\" string");
		return 0;
	}
	/* "runs" is judged for the request's "approval" mode, else the configured one. */
	const char *mode = hs_serve_str(r->root, "approval");
	yajl_gen g = srv_reply_ok(r->id);
	if (hs_check_gen(s->c, command, cx && !strcmp(cx, "sandbox") ? HS_CONTEXT_SANDBOX : HS_CONTEXT_HOST,
	                 mode, g) < 0) {
		yajl_gen_free(g);
		srv_reply_error(s, r->id, "invalid_request", "approval must be ask, deny or approve");
		return 0;
	}
	yajl_gen_map_close(g);
	srv_emit(s, g);
	return 0;
}

/* The backends and what they can do here. */
static int
op_backends(struct srv *s, struct req *r, const char *name)
{
	yajl_val dv = hs_serve_val(r->root, "deep");
	yajl_gen g = srv_reply_ok(r->id);
	if (hs_backends_gen(s->c, dv && YAJL_IS_TRUE(dv), g) < 0) {
		yajl_gen_free(g);
		srv_reply_error(s, r->id, "internal", "out of memory");
		return 0;
	}
	yajl_gen_map_close(g);
	srv_emit(s, g);
	return 0;
}

/* The ops of the protocol (hs(1) SERVE), like main.c's commands[]. */
static const struct {
	const char *op;
	int (*run)(struct srv *s, struct req *r, const char *name);
} ops[] = {
	{ "hello", op_hello },
	{ "open", op_open },
	{ "exec", op_queue },
	{ "close", op_queue },
	{ "put_file", op_queue },
	{ "get_file", op_queue },
	{ "job", op_queue },
	{ "resize", op_queue },
	{ "write_stdin", op_queue },
	{ "output", op_queue },
	{ "cancel", op_cancel },
	{ "approve", op_approve },
	{ "check", op_check },
	{ "backends", op_backends },
};

static void
handle(struct srv *s, struct req *r)
{
	const char *name = hs_serve_str(r->root, "session");
	char err[1024];

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(r->op, ops[i].op)) {
			if (!ops[i].run(s, r, name))
				free_req(r);
			return;
		}
	snprintf(err, sizeof(err), "unknown op '%.60s'", r->op);
	srv_reply_error(s, r->id, "unknown_op", err);
	free_req(r);
}

/* The request reader: lines from fd 0, each held to SRV_MAX_LINE bytes while
 * it is read, so a longer line costs no more memory than the limit. */
struct line_reader {
	int fd;
	char buf[65536];
	size_t pos, len;
	int eof;
};

/*
 * The next line (without its newline, NUL-terminated; the caller frees it),
 * or NULL at end of input.  A line longer than SRV_MAX_LINE is read to its
 * end and thrown away as it comes: *too_long is set and an empty line
 * returned.
 */
static char *
read_line(struct line_reader *lr, int *too_long, size_t *len)
{
	char *line = NULL;
	size_t n = 0, cap = 0;
	int got = 0;

	*too_long = 0;
	for (;;) {
		if (lr->pos == lr->len) {
			if (lr->eof)
				break;
			ssize_t r = read(lr->fd, lr->buf, sizeof(lr->buf));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				lr->eof = 1;
				break;
			}
			lr->pos = 0;
			lr->len = (size_t)r;
		}
		got = 1;
		char *nl = memchr(lr->buf + lr->pos, '\n', lr->len - lr->pos);
		size_t take = nl ? (size_t)(nl - (lr->buf + lr->pos)) : lr->len - lr->pos;
		if (!*too_long && n + take > SRV_MAX_LINE) {
			*too_long = 1;
			free(line);
			line = NULL;
			n = cap = 0;
		}
		if (!*too_long) {
			if (n + take + 1 > cap) {
				size_t nc = cap ? cap : 4096;
				while (nc < n + take + 1)
					nc *= 2;
				char *nb = realloc(line, nc);
				if (!nb) {
					/* Treat it like an overlong line: skip it, say so. */
					*too_long = 1;
					free(line);
					line = NULL;
					n = cap = 0;
				} else {
					line = nb;
					cap = nc;
				}
			}
			if (!*too_long) {
				memcpy(line + n, lr->buf + lr->pos, take);
				n += take;
			}
		}
		lr->pos += take + (nl ? 1 : 0);
		if (nl)
			break;
	}
	if (!got) {
		free(line);
		return NULL;
	}
	if (*too_long || !line) {
		free(line);
		line = strdup("");
		n = 0;
		if (!line)
			return NULL;
	}
	line[n] = '\0';
	*len = n;
	return line;
}

/* Each open session holds a few descriptors (its runner stream, its lock, a
 * cancel pipe): take every descriptor the hard limit allows. */
static void
raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
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
	raise_fd_limit();
	pthread_mutex_init(&s.out_mu, NULL);
	pthread_cond_init(&s.out_cv, NULL);
	pthread_cond_init(&s.out_space, NULL);
	pthread_mutex_init(&s.mu, NULL);
	if (pthread_create(&s.writer, NULL, srv_writer, &s) != 0) {
		hs_die_msg("cannot start the writer thread");
		return HS_EXIT_FAIL;
	}
	struct line_reader *lr = calloc(1, sizeof(*lr));
	if (!lr) {
		hs_die_msg("out of memory");
		return HS_EXIT_FAIL;
	}
	for (;;) {
		int too_long;
		size_t len;
		char *line = read_line(lr, &too_long, &len);
		if (!line)
			break;
		if (too_long) {
			srv_reply_error(&s, NULL, "too_large", "request line longer than 16 MiB");
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
			srv_reply_error(&s, pr.id, code, perr);
			yajl_tree_free(pr.root);
			continue;
		}
		struct req *r = calloc(1, sizeof(*r));
		if (!r) {
			yajl_tree_free(pr.root);
			srv_reply_error(&s, NULL, "internal", "out of memory");
			continue;
		}
		r->size = len;
		r->root = pr.root;
		r->id = pr.id;
		r->op = pr.op;
		handle(&s, r);
		reap_closed(&s);
	}
	free(lr);
	/* EOF: deny pending approvals, close non-persistent sessions, keep persistent ones. */
	pthread_mutex_lock(&s.mu);
	s.eof = 1;
	for (struct sess *ss = s.sessions; ss; ss = ss->next) {
		pthread_mutex_lock(&ss->mu);
		if (!ss->closing)
			ss->closing = 1;
		if (ss->running_id && !ss->hs.persistent && write(ss->cancel_pipe[1], "c", 1) < 0) {
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
		sess_free(ss, 0);
	}
	return 0;
}
