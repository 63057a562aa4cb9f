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

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "core/approval.h"
#include "core/cmds.h"
#include "core/core.h"
#include "core/hsconf.h"
#include "core/json.h"
#include "core/serve-req.h"
#include "core/serve.h"

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
		yajl_gen g = srv_reply_ok(r->id);
		hs_json_kstr(g, "server", "hs " PACKAGE_VERSION);
		hs_json_kint(g, "protocol", 1);
		yajl_gen_map_close(g);
		srv_emit(s, g);
	} else if (!strcmp(op, "open")) {
		if (!name || !hs_session_name_valid(name)) {
			srv_reply_error(s, r->id, "invalid_request", "open needs a valid \"session\" name");
			goto done;
		}
		if (find_session(s, name)) {
			srv_reply_error(s, r->id, "session_exists", "the session is already open here");
			goto done;
		}
		const char *am = hs_serve_str(r->root, "approval");
		int mode = hs_approval_mode_parse(am ? am : "ask");
		if (mode < 0) {
			srv_reply_error(s, r->id, "invalid_request", "approval must be ask, deny or approve");
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
			srv_reply_error(s, r->id, "internal", "out of memory");
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
			srv_reply_error(s, r->id, "internal", "cannot create a pipe");
			goto done;
		}
		pthread_mutex_init(&ss->mu, NULL);
		pthread_cond_init(&ss->cv, NULL);
		enqueue(ss, r);
		if (pthread_create(&ss->thread, NULL, srv_worker, ss) != 0) {
			srv_reply_error(s, r->id, "internal", "cannot start a session thread");
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
			srv_reply_error(s, r->id, "no_session", "no open session of that name (open it first)");
			goto done;
		}
		enqueue(ss, r);
		return;
	} else if (!strcmp(op, "cancel")) {
		struct sess *ss = name ? find_session(s, name) : NULL;
		if (!ss) {
			srv_reply_error(s, r->id, "no_session", "cancel needs the \"session\" of the command");
			goto done;
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
	} else if (!strcmp(op, "approve")) {
		const char *rq = hs_serve_str(r->root, "request");
		int d = hs_decision_parse(hs_serve_str(r->root, "decision"));
		if (!rq || d < 0) {
			srv_reply_error(s, r->id, "invalid_request",
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
			srv_reply_error(s, r->id, "no_request", "no pending approval request of that id");
			goto done;
		}
		yajl_gen g = srv_reply_ok(r->id);
		yajl_gen_map_close(g);
		srv_emit(s, g);
	} else if (!strcmp(op, "check")) {
		const char *command = hs_serve_str(r->root, "command");
		const char *cx = hs_serve_str(r->root, "context");
		if (!command) {
			srv_reply_error(s, r->id, "invalid_request", "check needs a \"command\" string");
			goto done;
		}
		/* "runs" is judged for the request's "approval" mode, else the configured one. */
		const char *mode = hs_serve_str(r->root, "approval");
		if (!mode) {
			mode = "ask";
			hs_conf_string(s->c->conf, "approval", &mode);
		}
		yajl_gen g = srv_reply_ok(r->id);
		if (hs_check_gen(s->c, command, cx && !strcmp(cx, "sandbox") ? HS_CONTEXT_SANDBOX : HS_CONTEXT_HOST,
		                 mode, g) < 0) {
			yajl_gen_free(g);
			srv_reply_error(s, r->id, "invalid_request", "approval must be ask, deny or approve");
			goto done;
		}
		yajl_gen_map_close(g);
		srv_emit(s, g);
	} else if (!strcmp(op, "backends")) {
		yajl_val dv = hs_serve_val(r->root, "deep");
		yajl_gen g = srv_reply_ok(r->id);
		if (hs_backends_gen(s->c, dv && YAJL_IS_TRUE(dv), g) < 0) {
			yajl_gen_free(g);
			srv_reply_error(s, r->id, "internal", "out of memory");
			goto done;
		}
		yajl_gen_map_close(g);
		srv_emit(s, g);
	} else {
		snprintf(err, sizeof(err), "unknown op '%.60s'", op);
		srv_reply_error(s, r->id, "unknown_op", err);
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
	if (pthread_create(&s.writer, NULL, srv_writer, &s) != 0) {
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
