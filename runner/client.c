/* SPDX-License-Identifier: MIT */
/* hs-runner client: the core's side of one runner stream. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* splice, dup3 */
#endif
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define HELLO_TIMEOUT_MS 30000
/* The largest EGRESS_DATA frame sent: big frames, few trips for bulk data. */
#define EGRESS_FRAME (1024u * 1024u)
/* How long hsr_client_shutdown() waits beyond the grace it asked for. */
#define SHUTDOWN_WAIT_MS 30000

struct hsr_client {
	int fd;
	int not_socket;
	int not_sock;         /* the reader's: recv() said ENOTSOCK (the reader thread only) */
	int no_splice;        /* splice() to fd is refused: EGRESS_DATA through a buffer */
	pthread_mutex_t lock; /* serialises senders; guards out and not_socket */
	struct hsr_buf out;
	struct hsr_decoder dec;
	uint32_t version;
	char peer[64];
	char instance[40];
	struct hsr_attach_entry *attach;
	struct hsr_egress_ops egress; /* handler of tunnelled connections (egress.fn NULL: none) */
	/* The reader: whoever holds rd reads the stream.  hsr_client_next() and
	 * friends hold it throughout; between them, once the caller has left the
	 * stream alone for a while (rd_at), hsr_client_pump() may take egress
	 * frames from it, reading into idle (never moving dec's bytes, which
	 * the last event may point into); what it read beyond them goes to dec
	 * when the caller reads again. */
	pthread_mutex_t rd;
	int64_t rd_at;        /* when the caller last read or asked (CLOCK_MONOTONIC ms) */
	int rd_dead;          /* the pump saw the stream end: it leaves it to the caller */
	struct hsr_decoder idle;
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Writes all of the nv buffers of v (which it consumes); uses MSG_NOSIGNAL
 * on sockets so a vanished runner is an EPIPE error rather than a signal,
 * whatever the caller's SIGPIPE setting. */
static int write_iov(struct hsr_client *c, struct iovec *v, int nv)
{
	while (nv) {
		ssize_t w;

		if (!c->not_socket) {
			struct msghdr mh = { .msg_iov = v, .msg_iovlen = (size_t)nv };

			w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
			if (w < 0 && errno == ENOTSOCK) {
				c->not_socket = 1;
				continue;
			}
		} else {
			w = writev(c->fd, v, nv);
		}
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };

				poll(&pfd, 1, -1);
				continue;
			}
			return -1;
		}
		while (nv && (size_t)w >= v->iov_len) {
			w -= (ssize_t)v->iov_len;
			v++;
			nv--;
		}
		if (nv) {
			v->iov_base = (uint8_t *)v->iov_base + w;
			v->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Writes all of p. */
static int write_all(struct hsr_client *c, const uint8_t *p, size_t n)
{
	struct iovec v = { (void *)p, n };

	return write_iov(c, &v, 1);
}

/* Sends the frame(s) built into c->out; the caller holds c->lock. */
static int flush_locked(struct hsr_client *c)
{
	int rc;

	if (c->out.failed) {
		hsr_buf_free(&c->out);
		errno = ENOMEM;
		return -1;
	}
	rc = write_all(c, c->out.data, c->out.len);
	c->out.len = 0;
	return rc;
}

static int send_msg(struct hsr_client *c, const struct hsr_msg *m)
{
	int rc;

	pthread_mutex_lock(&c->lock);
	hsr_msg_encode(&c->out, m, 0);
	rc = flush_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int hsr_client_fd(const struct hsr_client *c)
{
	return c->fd;
}

uint32_t hsr_client_version(const struct hsr_client *c)
{
	return c->version;
}

const char *hsr_client_instance(const struct hsr_client *c)
{
	return c->instance;
}

const char *hsr_client_peer_version(const struct hsr_client *c)
{
	return c->peer;
}

/* The type of the next frame buffered in d if it is whole, 0 if it is not,
 * -1 if its length is invalid. */
static int whole_frame(const struct hsr_decoder *d)
{
	const uint8_t *p;
	uint32_t n;

	if (d->len - d->pos < 4)
		return 0;
	p = d->buf + d->pos;
	n = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	if (n == 0 || n > d->max_frame)
		return -1;
	return d->len - d->pos - 4 >= n ? p[4] : 0;
}

static int64_t now_ms(void);

/* The caller takes the stream back from the pump: what the pump read
 * beyond its frames comes first. */
static int reader_enter(struct hsr_client *c)
{
	int rc = 0;

	pthread_mutex_lock(&c->rd);
	c->rd_at = now_ms();
	if (c->idle.len > c->idle.pos) {
		rc = hsr_decoder_feed(&c->dec, c->idle.buf + c->idle.pos, c->idle.len - c->idle.pos);
		c->idle.pos = c->idle.len = 0;
	}
	return rc;
}

static void reader_leave(struct hsr_client *c)
{
	c->rd_at = now_ms();
	pthread_mutex_unlock(&c->rd);
}

int hsr_client_pending(struct hsr_client *c)
{
	int rc;

	pthread_mutex_lock(&c->rd);
	c->rd_at = now_ms();
	/* An invalid length is "pending" too: the next call reports it; and
	 * so are bytes the pump read, which the next call takes first. */
	rc = whole_frame(&c->dec) != 0 || c->idle.len > c->idle.pos;
	pthread_mutex_unlock(&c->rd);
	return rc;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What one read of the stream asks for. */
#define READ_CHUNK (256u * 1024u)

/* Waits for one whole frame.  Returns 1, 0 on timeout, -1 with err set. */
static int read_frame(struct hsr_client *c, struct hsr_frame *f, int timeout_ms,
		      char *err, size_t errlen)
{
	int64_t end = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		int rc = hsr_decoder_next(&c->dec, f);
		int wait;
		ssize_t n;
		uint8_t *room;

		if (rc == 1)
			return 1;
		if (rc < 0) {
			set_err(err, errlen, "runner stream: invalid frame length");
			errno = EPROTO;
			return -1;
		}
		/* Read straight into the decoder, in large reads, and without a
		 * poll when bytes are already there (a socket; else poll first). */
		if (!(room = hsr_decoder_reserve(&c->dec, READ_CHUNK))) {
			set_err(err, errlen, "runner stream: out of memory");
			errno = ENOMEM;
			return -1;
		}
		if (!c->not_sock) {
			n = recv(c->fd, room, READ_CHUNK, MSG_DONTWAIT);
			if (n > 0) {
				hsr_decoder_commit(&c->dec, (size_t)n);
				continue;
			}
			if (n == 0) {
				set_err(err, errlen, "runner stream closed by the runner");
				errno = EPIPE;
				return -1;
			}
			if (errno == ENOTSOCK)
				c->not_sock = 1;
			else if (errno != EAGAIN && errno != EINTR) {
				set_err(err, errlen, "runner stream: read: %s", strerror(errno));
				return -1;
			}
		}
		wait = -1;
		if (end >= 0) {
			int64_t left = end - now_ms();

			/* A zero timeout still looks once: poll(0), then read. */
			if (left < 0)
				left = 0;
			wait = left > 1000000 ? 1000000 : (int)left;
		}
		rc = poll(&pfd, 1, wait);
		if (rc < 0 && errno != EINTR) {
			set_err(err, errlen, "runner stream: poll: %s", strerror(errno));
			return -1;
		}
		if (rc == 0 && end >= 0 && now_ms() >= end)
			return 0;
		if (rc <= 0)
			continue;
		n = read(c->fd, room, READ_CHUNK);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			set_err(err, errlen, "runner stream: read: %s", strerror(errno));
			return -1;
		}
		if (n == 0) {
			set_err(err, errlen, "runner stream closed by the runner");
			errno = EPIPE;
			return -1;
		}
		hsr_decoder_commit(&c->dec, (size_t)n);
	}
}

/* Reads the next frame of the handshake and decodes it; an ERROR becomes
 * a message.  Returns 0 or -1 with err set. */
static int handshake_msg(struct hsr_client *c, struct hsr_msg *m, const char *what,
			 char *err, size_t errlen)
{
	struct hsr_frame f;
	int rc = read_frame(c, &f, HELLO_TIMEOUT_MS, err, errlen);

	if (rc == 0)
		set_err(err, errlen, "runner stream: no %s from the runner", what);
	if (rc <= 0)
		return -1;
	if (hsr_msg_decode(&f, 1, m) < 0) {
		set_err(err, errlen, "runner stream: malformed %s frame", hsr_frame_name(f.type));
		return -1;
	}
	if (m->type == HSR_F_ERROR) {
		/* A runner of protocol 1 knows neither KEY nor version 2; one
		 * of a newer protocol may not know ours. */
		int old = m->code == HSR_E_PROTO || m->code == HSR_E_VERSION;

		set_err(err, errlen, "runner refused the handshake: %.*s%s", (int)m->str_len, m->str,
			old ? " (a runner of another protocol version runs there: close the "
			      "session and open it again)" : "");
		return -1;
	}
	return 0;
}

/* Sends a frame holding the key, then wipes the copy in the buffer. */
static int send_key(struct hsr_client *c, const uint8_t key[HSR_KEY_LEN])
{
	struct hsr_msg k = { .type = HSR_F_KEY, .data = key, .len = HSR_KEY_LEN };
	int rc = send_msg(c, &k);

	if (c->out.data)
		hsr_wipe(c->out.data, c->out.cap);
	return rc;
}

/* Closes every descriptor an SCM_RIGHTS message carried; returns the first
 * one's number (it is closed too unless keep), or -1 when none came. */
static int take_fds(struct msghdr *mh, int keep)
{
	int first = -1;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; (i + 1) * sizeof(int) <= cm->cmsg_len - CMSG_LEN(0); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (first < 0 && keep)
				first = fd;
			else
				close(fd);
		}
	}
	return first;
}

/*
 * The first bytes from an `hs-runner --attach --handoff` may be an empty KEY
 * frame carrying the daemon's connection (hs-runner(7)): then that socket
 * replaces the proxy's, and 1 is returned.  Otherwise the bytes read are the
 * daemon's answer through the proxy; they go to the decoder, 0.  -1: error.
 */
static int take_handoff(struct hsr_client *c, char *err, size_t errlen)
{
	static const uint8_t hand[5] = { 1, 0, 0, 0, HSR_F_KEY };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} u;
	uint8_t b[sizeof(hand)];
	struct iovec iov = { .iov_base = b, .iov_len = sizeof(b) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	struct stat st;
	int type = 0, dom = 0, fd;
	socklen_t tl = sizeof(type), dl = sizeof(dom);
	ssize_t n;

	if (poll(&pfd, 1, HELLO_TIMEOUT_MS) == 0) {
		set_err(err, errlen, "runner stream: no hello from the runner");
		return -1;
	}
	do
		n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == ENOTSOCK)
		return 0; /* a pipe: read_frame() reads it */
	if (n <= 0) {
		set_err(err, errlen, "runner stream closed by the runner%s%s", n ? ": " : "",
			n ? strerror(errno) : "");
		return -1;
	}
	fd = take_fds(&mh, 1);
	if (fd < 0 && !(mh.msg_flags & MSG_CTRUNC)) {
		if (hsr_decoder_feed(&c->dec, b, (size_t)n) < 0) {
			set_err(err, errlen, "runner stream: out of memory");
			return -1;
		}
		return 0;
	}
	/* Only a stream socket of our own machine, sent with exactly the frame. */
	if (fd < 0 || (mh.msg_flags & MSG_CTRUNC) || n != (ssize_t)sizeof(hand) ||
	    memcmp(b, hand, sizeof(hand)) != 0 || fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM ||
	    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &dl) < 0 || dom != AF_UNIX) {
		if (fd >= 0)
			close(fd);
		set_err(err, errlen, "runner stream: the attach proxy handed over no usable "
			"connection (is hs-runner the same version as hs?)");
		return -1;
	}
	/* Blocking, like the proxy's socket was; same descriptor number. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (dup3(fd, c->fd, O_CLOEXEC) < 0) {
		set_err(err, errlen, "runner stream: dup3: %s", strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 1;
}

int hsr_client_open(int fd, const uint8_t key[HSR_KEY_LEN], unsigned flags,
		    struct hsr_client **out, char *err, size_t errlen)
{
	struct hsr_client *c;
	struct hsr_msg m = { .type = HSR_F_HELLO, .vmin = HSR_PROTO_MIN, .vmax = HSR_PROTO_MAX,
			     .str = HSR_VERSION, .str_len = sizeof(HSR_VERSION) - 1 };
	uint8_t nonce_c[HSR_NONCE_LEN], nonce_d[HSR_NONCE_LEN], proof[HSR_SHA256_LEN];
	int provisioned = 0;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		set_err(err, errlen, "runner stream: out of memory");
		return -1;
	}
	c->fd = fd;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->rd, NULL);
	hsr_decoder_init(&c->dec, HSR_MAX_FRAME);
	hsr_decoder_init(&c->idle, HSR_MAX_FRAME);
	if (hsr_random(nonce_c, sizeof(nonce_c)) < 0) {
		set_err(err, errlen, "runner stream: getrandom: %s", strerror(errno));
		goto fail;
	}
	/* An `hs-runner --attach` takes the key first (it starts the daemon
	 * with it); then HELLO and our CHALLENGE go to the daemon. */
	if ((flags & HSR_CLIENT_PROXY) && send_key(c, key) < 0) {
		set_err(err, errlen, "runner stream: cannot send the key: %s", strerror(errno));
		goto fail;
	}
	{
		struct hsr_msg ch = { .type = HSR_F_CHALLENGE, .data = nonce_c, .len = HSR_NONCE_LEN };

		/* Handed the daemon's connection: the handshake again, on it.
		 * The proxy may have left before our first hello reached it. */
		for (int first = 1;; first = 0) {
			int sent = send_msg(c, &m) == 0 && send_msg(c, &ch) == 0, e = errno, h;

			if (!sent && (!first || !(flags & HSR_CLIENT_PROXY) ||
				      (e != EPIPE && e != ECONNRESET))) {
				set_err(err, errlen, "runner stream: cannot send hello: %s", strerror(e));
				goto fail;
			}
			if (!(flags & HSR_CLIENT_PROXY) || !first)
				break;
			if ((h = take_handoff(c, err, errlen)) < 0)
				goto fail;
			if (!h && !sent) {
				set_err(err, errlen, "runner stream: cannot send hello: %s", strerror(e));
				goto fail;
			}
			if (!h)
				break;
		}
	}
	if (handshake_msg(c, &m, "hello", err, errlen) < 0)
		goto fail;
	if (m.type != HSR_F_HELLO || m.vmin != m.vmax || m.vmin < HSR_PROTO_MIN ||
	    m.vmin > HSR_PROTO_MAX) {
		set_err(err, errlen, "runner stream: unexpected answer to hello");
		goto fail;
	}
	c->version = m.vmin;
	{
		/* "VERSION instance=HEX": keep the two apart. */
		size_t vl = m.str_len;
		for (size_t i = 0; i + 10 <= m.str_len; i++)
			if (memcmp(m.str + i, " instance=", 10) == 0) {
				vl = i;
				snprintf(c->instance, sizeof(c->instance), "%.*s",
					 (int)(m.str_len - i - 10), m.str + i + 10);
				break;
			}
		snprintf(c->peer, sizeof(c->peer), "%.*s", (int)vl, m.str);
	}
	for (;;) {
		if (handshake_msg(c, &m, "AUTH", err, errlen) < 0)
			goto fail;
		if (m.type != HSR_F_AUTH) {
			set_err(err, errlen, "runner stream: expected AUTH, got %s",
				hsr_frame_name(m.type));
			goto fail;
		}
		if (m.keyed)
			break;
		/* A daemon started without a key takes ours, once. */
		if (provisioned || send_key(c, key) < 0) {
			set_err(err, errlen, "runner stream: the runner holds no session key");
			goto fail;
		}
		provisioned = 1;
	}
	memcpy(nonce_d, m.data, sizeof(nonce_d));
	hsr_auth_proof(key, HSR_LABEL_DAEMON, nonce_c, nonce_d, proof);
	if (hsr_memneq(proof, m.proof, sizeof(proof))) {
		set_err(err, errlen, "the runner did not prove this session's key: it is another "
			"session's runner (a replaced socket?) or one started with another key; "
			"close the session to stop it");
		goto fail;
	}
	hsr_auth_proof(key, HSR_LABEL_CLIENT, nonce_d, nonce_c, proof);
	{
		struct hsr_msg a = { .type = HSR_F_AUTH, .proof = proof };

		if (send_msg(c, &a) < 0) {
			set_err(err, errlen, "runner stream: cannot send AUTH: %s", strerror(errno));
			goto fail;
		}
	}
	*out = c;
	return 0;
fail:
	hsr_client_free(c);
	errno = EPROTO;
	return -1;
}

void hsr_client_free(struct hsr_client *c)
{
	if (!c)
		return;
	close(c->fd);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->rd);
	hsr_buf_free(&c->out);
	hsr_decoder_free(&c->dec);
	hsr_decoder_free(&c->idle);
	free(c->attach);
	free(c);
}

int hsr_client_exec(struct hsr_client *c, const struct hsr_exec_spec *s)
{
	static const char *const noenv[] = { NULL };
	uint32_t flags = 0;
	int rc;

	if (!s->argv || !s->argv[0]) {
		errno = EINVAL;
		return -1;
	}
	if (s->stdin_pipe)
		flags |= HSR_EXEC_STDIN_PIPE;
	if (s->want_state)
		flags |= HSR_EXEC_WANT_STATE;
	if (s->merge_env)
		flags |= HSR_EXEC_MERGE_ENV;
	if (s->session)
		flags |= HSR_EXEC_SESSION;
	if (s->report_wait)
		flags |= HSR_EXEC_REPORT_WAIT;
	if (s->pty_rows || s->pty_cols) {
		if (c->version < HSR_PROTO_PTY || s->pty_rows < HSR_PTY_MIN ||
		    s->pty_rows > HSR_PTY_MAX || s->pty_cols < HSR_PTY_MIN ||
		    s->pty_cols > HSR_PTY_MAX) {
			errno = c->version < HSR_PROTO_PTY ? ENOTSUP : EINVAL;
			return -1;
		}
		flags |= HSR_EXEC_PTY;
	}
	if (s->keep_bytes)
		flags |= HSR_EXEC_KEEP;
	pthread_mutex_lock(&c->lock);
	hsr_exec_encode_pty(&c->out, s->id, flags, s->deadline_ms < 0 ? 0 : s->deadline_ms,
			    s->grace_ms < 0 ? 2000 : s->grace_ms, s->head_bytes, s->tail_bytes,
			    s->initial_credit, s->keep_bytes, s->cwd ? s->cwd : "", s->argv,
			    s->envp ? s->envp : noenv, s->pty_rows, s->pty_cols);
	if (c->out.len > HSR_MAX_FRAME + 4) {
		c->out.len = 0;
		pthread_mutex_unlock(&c->lock);
		errno = E2BIG;
		return -1;
	}
	rc = flush_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int hsr_client_stdin(struct hsr_client *c, uint64_t id, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		size_t n = len > HSR_CHUNK ? HSR_CHUNK : len;
		struct hsr_msg m = { .type = HSR_F_STDIN, .id = id, .data = p, .len = n };

		if (send_msg(c, &m) < 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

int hsr_client_stdin_eof(struct hsr_client *c, uint64_t id)
{
	struct hsr_msg m = { .type = HSR_F_STDIN_EOF, .id = id };

	return send_msg(c, &m);
}

int hsr_client_resize(struct hsr_client *c, uint64_t id, uint16_t rows, uint16_t cols)
{
	struct hsr_msg m = { .type = HSR_F_RESIZE, .id = id, .rows = rows, .cols = cols };

	if (c->version < HSR_PROTO_PTY || rows < HSR_PTY_MIN || rows > HSR_PTY_MAX ||
	    cols < HSR_PTY_MIN || cols > HSR_PTY_MAX) {
		errno = c->version < HSR_PROTO_PTY ? ENOTSUP : EINVAL;
		return -1;
	}
	return send_msg(c, &m);
}

int hsr_client_signal(struct hsr_client *c, uint64_t id, int signo)
{
	struct hsr_msg m = { .type = HSR_F_SIGNAL, .id = id, .signo = (uint32_t)signo };

	if (signo <= 0 || signo >= 65) {
		errno = EINVAL;
		return -1;
	}
	return send_msg(c, &m);
}

int hsr_client_cancel(struct hsr_client *c, uint64_t id)
{
	struct hsr_msg m = { .type = HSR_F_CANCEL, .id = id };

	return send_msg(c, &m);
}

int hsr_client_ack(struct hsr_client *c, uint64_t id, int stream, uint64_t offset)
{
	struct hsr_msg m = { .type = HSR_F_ACK, .id = id, .stream = (uint8_t)stream,
			     .offset = offset };

	if (stream < 0 || stream > HSR_STREAM_STATE) {
		errno = EINVAL;
		return -1;
	}
	return send_msg(c, &m);
}

int hsr_client_taken(struct hsr_client *c, uint64_t id, const uint64_t offset[4], uint64_t credit)
{
	int rc;

	pthread_mutex_lock(&c->lock);
	for (int s = 1; s <= HSR_STREAM_STATE; s++)
		if (offset[s]) {
			struct hsr_msg m = { .type = HSR_F_ACK, .id = id, .stream = (uint8_t)s,
					     .offset = offset[s] };

			hsr_msg_encode(&c->out, &m, 0);
		}
	if (credit) {
		struct hsr_msg m = { .type = HSR_F_CREDIT, .id = id, .value = credit };

		hsr_msg_encode(&c->out, &m, 0);
	}
	rc = flush_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int hsr_client_credit(struct hsr_client *c, uint64_t id, uint64_t bytes)
{
	struct hsr_msg m = { .type = HSR_F_CREDIT, .id = id, .value = bytes };

	return send_msg(c, &m);
}

int hsr_client_attach_credit(struct hsr_client *c, uint64_t credit)
{
	struct hsr_msg m = { .type = HSR_F_ATTACH, .value = credit };

	return send_msg(c, &m);
}

int hsr_client_attach(struct hsr_client *c)
{
	return hsr_client_attach_credit(c, 0);
}

int hsr_client_put_file(struct hsr_client *c, uint64_t id, const char *path,
			uint32_t mode, const void *buf, size_t len)
{
	return hsr_client_put_file_flags(c, id, path, mode, buf, len, 0);
}

int hsr_client_put_file_flags(struct hsr_client *c, uint64_t id, const char *path,
			      uint32_t mode, const void *buf, size_t len, uint32_t flags_final)
{
	const uint8_t *p = buf;
	uint32_t flags = HSR_PUT_FIRST;
	int rc = 0;

	if (!path || path[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	/* The chunks go out under one lock so that a concurrent sender's
	 * frames cannot make the daemon see them out of order (they could
	 * not anyway, but a whole file stays contiguous on the wire). */
	pthread_mutex_lock(&c->lock);
	do {
		size_t n = len > HSR_CHUNK ? HSR_CHUNK : len;
		struct hsr_msg m = { .type = HSR_F_PUT, .id = id, .mode = mode,
				     .str = path, .str_len = (uint32_t)strlen(path),
				     .data = p, .len = n };

		if (n == len)
			flags |= HSR_PUT_FINAL | (flags_final & HSR_PUT_NOSYNC);
		m.flags = flags;
		hsr_msg_encode(&c->out, &m, 0);
		rc = flush_locked(c);
		flags = 0;
		p += n;
		len -= n;
	} while (rc == 0 && len);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int hsr_client_get_file(struct hsr_client *c, uint64_t id, const char *path)
{
	struct hsr_msg m = { .type = HSR_F_GET, .id = id, .str = path };

	if (!path || path[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	m.str_len = (uint32_t)strlen(path);
	return send_msg(c, &m);
}

int hsr_client_jobs(struct hsr_client *c, uint64_t token)
{
	struct hsr_msg m = { .type = HSR_F_JOBS, .value = token };

	return send_msg(c, &m);
}

int hsr_client_read(struct hsr_client *c, uint64_t token, uint64_t id, int stream,
		    uint64_t offset, uint32_t max)
{
	struct hsr_msg m = { .type = HSR_F_READ, .id = token, .value = id,
			     .stream = (uint8_t)stream, .offset = offset, .mode = max };

	return send_msg(c, &m);
}

int hsr_client_spill(struct hsr_client *c, uint64_t token, uint64_t id)
{
	struct hsr_msg m = { .type = HSR_F_SPILL, .id = token, .value = id };

	return send_msg(c, &m);
}

int hsr_client_ping(struct hsr_client *c, uint64_t token)
{
	struct hsr_msg m = { .type = HSR_F_PING, .value = token };

	return send_msg(c, &m);
}

int hsr_client_shutdown(struct hsr_client *c, int64_t grace_ms)
{
	struct hsr_msg m = { .type = HSR_F_SHUTDOWN, .value = HSR_GRACE_DEFAULT };
	int64_t end = now_ms() + SHUTDOWN_WAIT_MS + (grace_ms > 0 ? grace_ms : 0);

	if (grace_ms >= 0)
		m.value = grace_ms < HSR_GRACE_DEFAULT ? (uint64_t)grace_ms : HSR_GRACE_DEFAULT - 1;
	if (send_msg(c, &m) < 0)
		return -1;
	if (reader_enter(c) < 0) {
		reader_leave(c);
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		int64_t left = end - now_ms();
		struct hsr_frame f;
		struct hsr_msg r;
		int rc;

		if (left <= 0) {
			errno = ETIMEDOUT;
			break;
		}
		rc = read_frame(c, &f, left > 1000000 ? 1000000 : (int)left, NULL, 0);
		if (rc == 0)
			continue;
		if (rc < 0)
			break;
		/* Output and EXITs of the commands being stopped are dropped. */
		if (hsr_msg_decode(&f, 1, &r) < 0)
			continue;
		if (r.type == HSR_F_OK && r.id == 0) {
			reader_leave(c);
			return 0;
		}
		if (r.type == HSR_F_ERROR && r.id == 0) {
			/* An older daemon does not know the frame type. */
			errno = r.code == HSR_E_PROTO ? ENOTSUP : EIO;
			break;
		}
	}
	int e = errno;
	reader_leave(c);
	errno = e;
	return -1;
}

static int fill_event(struct hsr_client *c, const struct hsr_msg *m, struct hsr_event *ev,
		      char *err, size_t errlen)
{
	ev->id = m->id;
	switch (m->type) {
	case HSR_F_OUTPUT:
	case HSR_F_STATE:
		ev->type = m->type == HSR_F_OUTPUT ? HSR_EV_OUTPUT : HSR_EV_STATE;
		ev->stream = m->stream;
		ev->offset = m->offset;
		ev->data = m->data;
		ev->len = m->len;
		return 0;
	case HSR_F_EXIT:
		ev->type = HSR_EV_EXIT;
		ev->exit_code = m->exit_code;
		ev->timed_out = m->timed_out;
		ev->cancelled = m->cancelled;
		ev->dropped[1] = m->dropped[1];
		ev->dropped[2] = m->dropped[2];
		for (int s = 1; s <= 3; s++)
			ev->total[s] = m->total[s];
		ev->shell_restarted = m->restarted;
		ev->jobs_left = m->jobs;
		snprintf(ev->reason, sizeof(ev->reason), "%.*s", (int)m->str_len, m->str ? m->str : "");
		return 0;
	case HSR_F_ERROR:
		ev->type = HSR_EV_ERROR;
		ev->code = (int)m->code;
		snprintf(ev->message, sizeof(ev->message), "%.*s", (int)m->str_len, m->str);
		return 0;
	case HSR_F_ATTACH:
		ev->type = HSR_EV_ATTACH;
		free(c->attach);
		c->attach = calloc(m->count ? m->count : 1, sizeof(*c->attach));
		if (!c->attach) {
			set_err(err, errlen, "runner stream: out of memory");
			return -1;
		}
		for (uint32_t i = 0; i < m->count; i++)
			hsr_attach_entry_decode(m, i, &c->attach[i]);
		ev->attach = c->attach;
		ev->nattach = m->count;
		return 0;
	case HSR_F_FILE_DATA:
		ev->type = HSR_EV_FILE_DATA;
		ev->offset = m->offset;
		ev->data = m->data;
		ev->len = m->len;
		ev->final = m->final;
		return 0;
	case HSR_F_OK:
		ev->type = HSR_EV_OK;
		return 0;
	case HSR_F_PONG:
		ev->type = HSR_EV_PONG;
		ev->token = m->value;
		return 0;
	case HSR_F_WAITING:
		ev->type = HSR_EV_WAITING;
		ev->id = m->id;
		ev->final = m->final;
		return 0;
	case HSR_F_EGRESS_LISTEN:
		ev->type = HSR_EV_EGRESS;
		ev->token = m->value;
		ev->port = m->port;
		return 0;
	case HSR_F_RANGE:
		ev->type = HSR_EV_RANGE;
		ev->stream = m->stream;
		ev->offset = m->offset;
		ev->token = m->value; /* the stream's total */
		ev->final = m->final;
		ev->data = m->data;
		ev->len = m->len;
		return 0;
	case HSR_F_JOBS:
		ev->type = HSR_EV_JOBS;
		ev->token = m->value;
		ev->njobs = m->count;
		ev->data = m->data;
		ev->len = m->len;
		return 0;
	default:
		set_err(err, errlen, "runner stream: unexpected %s frame", hsr_frame_name(m->type));
		errno = EPROTO;
		return -1;
	}
}

static int is_egress(int type)
{
	return type >= HSR_F_EGRESS_CONN && type <= HSR_F_EGRESS_CLOSE;
}

static int next_locked(struct hsr_client *c, struct hsr_event *ev, int timeout_ms,
		       char *err, size_t errlen)
{
	int64_t end = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	struct hsr_frame f;
	struct hsr_msg m;
	int rc;

	for (;;) {
		memset(ev, 0, sizeof(*ev));
		rc = read_frame(c, &f, timeout_ms, err, errlen);
		if (rc <= 0)
			return rc;
		if (hsr_msg_decode(&f, 1, &m) < 0) {
			set_err(err, errlen, "runner stream: malformed %s frame", hsr_frame_name(f.type));
			errno = EPROTO;
			return -1;
		}
		/* Tunnelled connections go to their handler, whoever reads. */
		if (!is_egress(m.type) || !c->egress.fn)
			return fill_event(c, &m, ev, err, errlen) < 0 ? -1 : 1;
		c->egress.fn(c->egress.ctx, m.type, m.id, m.data, m.len);
		if (end >= 0) {
			int64_t left = end - now_ms();
			timeout_ms = left > 0 ? (int)left : 0;
		}
	}
}

int hsr_client_next(struct hsr_client *c, struct hsr_event *ev, int timeout_ms,
		    char *err, size_t errlen)
{
	int rc;

	if (reader_enter(c) < 0) {
		reader_leave(c);
		set_err(err, errlen, "runner stream: out of memory");
		errno = ENOMEM;
		return -1;
	}
	rc = next_locked(c, ev, timeout_ms, err, errlen);
	int e = errno;
	reader_leave(c);
	errno = e;
	return rc;
}

/* Hands the whole egress frame at the head of d to the handler; 1 if there
 * was one. */
static int pump_one(struct hsr_client *c, struct hsr_decoder *d)
{
	struct hsr_frame f;
	struct hsr_msg m;
	int type = whole_frame(d);

	if (type <= 0 || !is_egress(type) || hsr_decoder_next(d, &f) != 1)
		return 0;
	/* A malformed one is dropped; the stream goes on. */
	if (hsr_msg_decode(&f, 1, &m) == 0)
		c->egress.fn(c->egress.ctx, m.type, m.id, m.data, m.len);
	return 1;
}

int hsr_client_pump(struct hsr_client *c, int idle_ms)
{
	int want = 0;

	if (pthread_mutex_trylock(&c->rd) != 0)
		return 0;
	if (!c->egress.fn || c->rd_dead || now_ms() - c->rd_at < idle_ms)
		goto out;
	/* Egress frames the caller's last read left buffered; they do not move. */
	while (pump_one(c, &c->dec))
		;
	if (c->dec.len > c->dec.pos)
		goto out; /* the caller's next frame, or part of it: its own */
	for (;;) {
		while (pump_one(c, &c->idle))
			;
		if (whole_frame(&c->idle) != 0)
			goto out; /* a frame for the caller (or an invalid one) */
		if (c->idle.pos == c->idle.len)
			c->idle.pos = c->idle.len = 0;
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		if (poll(&pfd, 1, 0) != 1)
			break;
		uint8_t *room = hsr_decoder_reserve(&c->idle, READ_CHUNK);
		ssize_t n = room ? read(c->fd, room, READ_CHUNK) : -1;
		if (n > 0) {
			hsr_decoder_commit(&c->idle, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		/* The end of the stream, or an error: the caller finds it on its next read. */
		c->rd_dead = 1;
		goto out;
	}
	want = 1;
out:
	pthread_mutex_unlock(&c->rd);
	return want;
}

void hsr_client_set_egress(struct hsr_client *c, const struct hsr_egress_ops *ops)
{
	c->egress = *ops;
}

int hsr_client_egress_listen(struct hsr_client *c, uint64_t token)
{
	struct hsr_msg m = { .type = HSR_F_EGRESS_LISTEN, .value = token };

	return send_msg(c, &m);
}

/* Writes the frame head built in c->out, then n bytes of p, without copying
 * them into c->out; the caller holds c->lock. */
static int write_head_data(struct hsr_client *c, const uint8_t *p, size_t n)
{
	struct iovec iov[2] = { { c->out.data, c->out.len }, { (void *)p, n } };
	int rc = write_iov(c, iov, 2);

	c->out.len = 0;
	return rc;
}

/* Builds the head of an EGRESS_DATA frame of n bytes in c->out; 0, or -1
 * (out of memory).  The caller holds c->lock. */
static int egress_head(struct hsr_client *c, uint64_t conn, size_t n)
{
	/* The head alone, its length then made to count the bytes. */
	struct hsr_msg m = { .type = HSR_F_EGRESS_DATA, .id = conn };

	hsr_msg_encode(&c->out, &m, 0);
	if (c->out.failed || c->out.len < 4) {
		hsr_buf_free(&c->out);
		errno = ENOMEM;
		return -1;
	}
	uint32_t fl = (uint32_t)(c->out.len - 4 + n);
	for (int i = 0; i < 4; i++)
		c->out.data[i] = (uint8_t)(fl >> (8 * i));
	return 0;
}

int hsr_client_egress_data(struct hsr_client *c, uint64_t conn, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	do {
		size_t n = len > EGRESS_FRAME ? EGRESS_FRAME : len;
		int rc;

		pthread_mutex_lock(&c->lock);
		rc = egress_head(c, conn, n) < 0 ? -1 : write_head_data(c, p, n);
		pthread_mutex_unlock(&c->lock);
		if (rc < 0)
			return -1;
		p += n;
		len -= n;
	} while (len);
	return 0;
}

int hsr_client_egress_splice(struct hsr_client *c, uint64_t conn, int pipe_fd, size_t len)
{
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	if (egress_head(c, conn, len) < 0 || flush_locked(c) < 0) {
		rc = -1;
		goto out;
	}
	while (len) {
		if (!c->no_splice) {
			ssize_t n = splice(pipe_fd, NULL, c->fd, NULL, len, SPLICE_F_MOVE);

			if (n > 0) {
				len -= (size_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN) {
				struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };

				poll(&pfd, 1, -1);
				continue;
			}
			if (n == 0 || errno != EINVAL) {
				rc = -1;
				break;
			}
			/* The stream takes no splice: through a buffer, the frame already begun. */
			c->no_splice = 1;
		}
		uint8_t buf[16384];
		ssize_t r = read(pipe_fd, buf, len < sizeof(buf) ? len : sizeof(buf));
		if (r <= 0 || write_all(c, buf, (size_t)r) < 0) {
			rc = -1;
			break;
		}
		len -= (size_t)r;
	}
out:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int hsr_client_egress_end(struct hsr_client *c, uint64_t conn, int close_it)
{
	struct hsr_msg m = { .type = close_it ? HSR_F_EGRESS_CLOSE : HSR_F_EGRESS_EOF, .id = conn };

	return send_msg(c, &m);
}
