/* SPDX-License-Identifier: MIT */
/*
 * serve-out.c - the ordered writer of `hs serve`: one thread writes the
 * queued reply and event lines to stdout, whole and in order, with a bound
 * on a session's streamed output; and the encoding of ids and error replies.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <time.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "core/json.h"
#include "core/serve/serve.h"

/* Streamed output a session may have waiting for a slow client before its
 * command is paused until the client reads (srv_emit_stream). */
#define SRV_STREAM_QUEUE_MAX (4u * 1024u * 1024u)

/* One line waiting for the writer. */
struct line {
	char *buf;
	size_t len;
	struct sess *owner; /* for the per-session queue bound; NULL: none */
	struct line *next;
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
	/* A client that does not read holds up the sender: memory stays within
	 * SRV_OUT_MAX (streamed output waits in srv_emit_stream, with a bound of
	 * its own). */
	while (!owner && s->out_bytes > SRV_OUT_MAX && !s->client_gone)
		pthread_cond_wait(&s->out_space, &s->out_mu);
	if (s->client_gone) {
		pthread_mutex_unlock(&s->out_mu);
		free(buf);
		free(l);
		return;
	}
	if (owner)
		owner->queued += len;
	s->out_bytes += len;
	if (s->out_tail)
		s->out_tail->next = l;
	else
		s->out_head = l;
	s->out_tail = l;
	pthread_cond_signal(&s->out_cv);
	pthread_mutex_unlock(&s->out_mu);
}

/* Queue one reply or event line; lines are written whole and in order. */
void
srv_emit(struct srv *s, yajl_gen g)
{
	size_t len;
	char *buf = hs_json_take(g, &len);
	if (buf)
		enqueue_line(s, buf, len, NULL);
}

/* 1 when a cancel request for ss is waiting in its pipe (left there for the exec loop). */
static int
cancel_pending(struct sess *ss)
{
	struct pollfd p = { ss->cancel_pipe[0], POLLIN, 0 };
	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

int
srv_stream_full(struct sess *ss)
{
	struct srv *s = ss->srv;
	pthread_mutex_lock(&s->out_mu);
	int full = (ss->queued > SRV_STREAM_QUEUE_MAX || s->out_bytes > SRV_OUT_MAX) && !s->client_gone;
	pthread_mutex_unlock(&s->out_mu);
	return full;
}

void
srv_emit_stream(struct sess *ss, yajl_gen g)
{
	struct srv *s = ss->srv;
	size_t len;
	char *buf = hs_json_take(g, &len);
	if (!buf)
		return;
	pthread_mutex_lock(&s->out_mu);
	/* Wait in steps, so that a cancel sent meanwhile is seen. */
	while ((ss->queued > SRV_STREAM_QUEUE_MAX || s->out_bytes > SRV_OUT_MAX) && !s->client_gone) {
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_nsec += 100 * 1000 * 1000;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&s->out_space, &s->out_mu, &dl) == ETIMEDOUT) {
			pthread_mutex_unlock(&s->out_mu);
			int cancel = cancel_pending(ss);
			pthread_mutex_lock(&s->out_mu);
			if (cancel)
				break;
		}
	}
	pthread_mutex_unlock(&s->out_mu);
	enqueue_line(s, buf, len, ss);
}

void *
srv_writer(void *arg)
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
		s->out_bytes -= l->len;
		pthread_cond_broadcast(&s->out_space);
		free(l->buf);
		free(l);
	}
	pthread_mutex_unlock(&s->out_mu);
	return NULL;
}

void
srv_gen_id(yajl_gen g, yajl_val id)
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

/* A reply to request id with "ok": true, its map left open for the caller's fields. */
yajl_gen
srv_reply_ok(yajl_val id)
{
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	srv_gen_id(g, id);
	hs_json_kbool(g, "ok", 1);
	return g;
}

void
srv_reply_error(struct srv *s, yajl_val id, const char *code, const char *msg)
{
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	srv_gen_id(g, id);
	hs_json_kbool(g, "ok", 0);
	hs_json_key(g, "error");
	yajl_gen_map_open(g);
	hs_json_kstr(g, "code", code);
	hs_json_kstr(g, "message", msg);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
	srv_emit(s, g);
}
