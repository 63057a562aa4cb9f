/* SPDX-License-Identifier: MIT */
/*
 * serve.h - internals of `hs serve`: the server, its sessions and their
 * queued requests, shared by the main loop and dispatch (cmd_serve.c), the
 * ordered writer and reply encoding (serve-out.c) and the session threads
 * and their ops (serve-sess.c).  Request lines are read by serve-req.c.
 */
#ifndef HS_SERVE_H
#define HS_SERVE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "core/safety/approval.h"
#include "core/exec.h"
#include "core/pipeline.h"
#include "core/session.h"

struct hs_core;
struct hs_policy;
struct line; /* one line waiting for the srv_writer (serve-out.c) */
struct srv;

struct req {
	size_t size;      /* bytes of the request line, for the queue bound */
	yajl_val root;
	yajl_val id;      /* inside root */
	const char *op;
	struct req *next;
};

struct sess {
	struct srv *srv;
	char name[65];
	struct hs_session hs;  /* record, lock, connection, grants, mode, limits */
	struct hs_asker asker; /* the client, through approval events (srv_ask) */
	yajl_val ask_id;       /* the request an approval event answers to */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct req *head, *tail;
	size_t n_reqs;         /* requests waiting in head..tail (mu) */
	int closing;           /* 1 closing, 2 closed: the thread is done (mu) */
	/* The running exec, for cancel; and a pending approval. */
	yajl_val running_id;
	int cancel_pipe[2];    /* a byte here cancels the running foreground exec */
	char approval_req[32];
	int approval_answer;   /* -1 pending */
	size_t queued;         /* bytes of this session's lines waiting for the srv_writer (out_mu) */
	struct sess *next;
};


struct srv {
	struct hs_core *c;
	/* The ordered writer: one thread writes queued lines to stdout, so a
	 * client that stops reading blocks no session thread. */
	pthread_t writer;
	pthread_mutex_t out_mu;
	pthread_cond_t out_cv;
	struct line *out_head, *out_tail;
	size_t out_bytes;      /* bytes of all queued lines (out_mu) */
	pthread_cond_t out_space; /* signalled when out_bytes falls */
	int out_closed;
	int client_gone;
	pthread_mutex_t mu;    /* sessions list */
	struct sess *sessions;
	size_t req_bytes;      /* bytes of requests queued for all sessions (mu) */
	unsigned approvals;    /* atomic */
	int eof;
	struct hs_policy *policy;
};

/* Bounds on what one client can make the server hold (documented in hs(1)). */
#define SRV_OUT_MAX (64u * 1024u * 1024u)      /* queued reply and event bytes */
#define SRV_SESS_REQS_MAX 256                  /* requests waiting per session */
#define SRV_REQ_BYTES_MAX (256u * 1024u * 1024u) /* request bytes waiting, all sessions */

/* the srv_writer (serve-out.c) */
/* Queue one reply or event line; lines are written whole and in order. */
void srv_emit(struct srv *s, yajl_gen g);
/*
 * Queue a streamed output event of session ss.  While the client is more
 * than SRV_STREAM_QUEUE_MAX behind on this session, waits for it to read
 * (flow control: the command is paused, its output is not dropped); a
 * cancel request for the session ends the wait.
 */
void srv_emit_stream(struct sess *ss, yajl_gen g);
/* 1 when ss's streamed output is over SRV_STREAM_QUEUE_MAX behind (an event
 * would wait). */
int srv_stream_full(struct sess *ss);
/* The writer thread (arg: the srv): writes queued lines until out_closed. */
void *srv_writer(void *arg);
/* The "id" member of a reply: the request's id, or null. */
void srv_gen_id(yajl_gen g, yajl_val id);
/* A reply to id with "ok": true, its map left open for the caller's fields. */
yajl_gen srv_reply_ok(yajl_val id);
/* Queue an error reply with code and message. */
void srv_reply_error(struct srv *s, yajl_val id, const char *code, const char *msg);

/* the output events of a streamed exec (serve-stream.c) */
struct srv_stream_one {
	uint64_t off;            /* stream offset of the next event's first byte */
	uint64_t gap, gap_off;   /* bytes dropped, to be said in the next event, and where */
	unsigned char carry[4];  /* the start of a UTF-8 character cut by a chunk's end */
	size_t ncarry;
};
struct srv_stream {
	struct sess *ss;
	yajl_val id;             /* the exec's request id */
	struct srv_stream_one s[3]; /* by stream 1, 2 */
	uint64_t dropped;        /* bytes said in gaps, for the reply's stream_dropped */
	int stopping;            /* the command was cancelled: a client that does not read
	                            gets gaps instead of holding the cancel up */
};
/* Output of stream (1, 2) as events with offsets, never cutting a UTF-8 character. */
void srv_stream_output(struct srv_stream *st, int stream, const void *buf, size_t len);
/* bytes of stream were dropped: the next event says so. */
void srv_stream_gap(struct srv_stream *st, int stream, uint64_t bytes);
/* At the end of the command: what is held back, and a gap not yet said. */
void srv_stream_flush(struct srv_stream *st);

/* recoverable output (serve-output.c) */
/* The op {"op":"output","session","output_id","stream","offset","length"}. */
int srv_op_output(struct sess *ss, struct req *r);
/* The reply fields saying how to read a command's whole output back, and
 * with spill, the files holding it (into an open reply map). */
struct hs_cmd_result;
void srv_output_fields(struct sess *ss, yajl_gen g, const struct hs_cmd_result *res, int spill);

/* the session thread (serve-sess.c) */
/* Set up ss's session (approval mode resolved) with the client as its asker. */
void srv_sess_init(struct sess *ss, int mode, int persistent);
/* A session's thread (arg: its sess): runs its requests in order until closed. */
void *srv_worker(void *arg);

/* terminals and stdin writes (serve-pty.c) */
/* The "pty" and "stdin_open" members of an exec into rq; 0, or -1 after an error reply. */
int srv_pty_request(struct sess *ss, struct req *r, struct hs_cmd_req *rq);
/* The ops "resize" and "write_stdin" (0: the thread goes on). */
int srv_do_resize(struct sess *ss, struct req *r);
int srv_do_write_stdin(struct sess *ss, struct req *r);

#endif /* HS_SERVE_H */
