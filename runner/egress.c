/* SPDX-License-Identifier: MIT */
/* The egress endpoint (hs-runner(7), "Egress"): on EGRESS_LISTEN the
 * daemon listens on 127.0.0.1 in its own network namespace, which in a
 * session with network "allowlist" has nothing but loopback, and tunnels
 * every accepted connection as EGRESS_* frames over the stream that asked.
 * The daemon neither parses nor judges what goes through: the core does,
 * on the host side.  Non-blocking, in the daemon's one poll loop; a
 * connection whose reader inside stops taking bytes holds the stream back
 * for a while (as stdin does) and is then closed, so memory stays bounded.
 */
#include "daemon.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bytes from the core queued for one connection above which the stream is
 * held back, and how long a connection may take nothing before it is closed. */
#define EGRESS_HIGH (1024u * 1024u)
#define EGRESS_STALL_MS 10000
/* At most this many connections at once; more are closed at accept. */
#define EGRESS_MAX_CONNS 256

struct hsr_tun {
	struct hsr_tun *next;
	uint64_t id;
	int fd;
	struct hsr_buf out;  /* from the core, to the socket: bytes from out_off on */
	size_t out_off;      /* written already (moved out only when more is put) */
	int rd_eof;          /* the socket said EOF (EGRESS_EOF sent) */
	int wr_eof;          /* the core said EOF: shut the socket's write side once out is empty */
	int close_after;     /* the core said CLOSE: close once out is written */
	int64_t moved_at;    /* when the socket last took bytes */
	uint64_t credit;     /* EGRESS_DATA bytes the core still takes (its CREDIT) */
};

struct hsr_egress {
	int listen_fd;
	uint32_t port;
	struct hsr_conn *owner; /* the stream connections go to; NULL: none */
	struct hsr_tun *tuns;
	unsigned n;
	uint64_t next_id;
};

static void send_id(struct hsr_conn *c, uint8_t type, uint64_t id)
{
	struct hsr_msg m = { .type = type, .id = id };

	hsr_msg_encode(&c->out, &m, 1);
}

static void tun_free(struct hsr_egress *e, struct hsr_tun *t)
{
	for (struct hsr_tun **pp = &e->tuns; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	close(t->fd);
	hsr_buf_free(&t->out);
	free(t);
	e->n--;
}

/* Closes t, telling the owner unless the close came from it. */
static void tun_close(struct hsr_egress *e, struct hsr_tun *t, int tell)
{
	if (tell && e->owner)
		send_id(e->owner, HSR_F_EGRESS_CLOSE, t->id);
	tun_free(e, t);
}

static int tun_write(struct hsr_egress *e, struct hsr_tun *t, int64_t now);

/* Bytes from the core not yet written to t's socket. */
static size_t out_left(const struct hsr_tun *t)
{
	return t->out.len - t->out_off;
}

/* Queues n bytes for t's socket; what was written goes first, so a busy
 * connection does not move its whole queue on every partial write. */
static void out_put(struct hsr_tun *t, const uint8_t *p, size_t n)
{
	if (t->out_off) {
		hsr_buf_consume(&t->out, t->out_off);
		t->out_off = 0;
	}
	hsr_buf_put(&t->out, p, n);
}

void hsr_egress_listen(struct hsr_daemon *d, struct hsr_conn *c, uint64_t token)
{
	struct hsr_egress *e = d->egress;

	if (!e) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t al = sizeof(a);
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0 ||
		    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
			hsr_conn_error(c, 0, HSR_E_LIMIT, "cannot listen on 127.0.0.1 for egress: %s",
				       strerror(errno));
			if (fd >= 0)
				close(fd);
			return;
		}
		if (!(e = calloc(1, sizeof(*e)))) {
			close(fd);
			hsr_conn_error(c, 0, HSR_E_LIMIT, "out of memory");
			return;
		}
		e->listen_fd = fd;
		e->port = ntohs(a.sin_port);
		e->next_id = HSR_EGRESS_ID_BIT | 1;
		d->egress = e;
	}
	/* The stream that asked last gets the connections; those of a stream
	 * before it were tunnelled there and go with it. */
	if (e->owner != c)
		while (e->tuns)
			tun_close(e, e->tuns, 1);
	e->owner = c;
	struct hsr_msg m = { .type = HSR_F_EGRESS_LISTEN, .value = token, .port = e->port };
	hsr_msg_encode(&c->out, &m, 1);
}

static struct hsr_tun *tun_find(struct hsr_egress *e, uint64_t id)
{
	for (struct hsr_tun *t = e ? e->tuns : NULL; t; t = t->next)
		if (t->id == id)
			return t;
	return NULL;
}

void hsr_egress_frame(struct hsr_daemon *d, struct hsr_conn *c, const struct hsr_msg *m)
{
	struct hsr_egress *e = d->egress;
	struct hsr_tun *t = e && e->owner == c ? tun_find(e, m->id) : NULL;

	/* A frame for a connection already closed here crossed our CLOSE. */
	if (!t)
		return;
	switch (m->type) {
	case HSR_F_EGRESS_DATA:
		if (t->wr_eof)
			break;
		if (out_left(t) == 0) {
			/* Straight from the frame to the socket; only the rest is kept. */
			ssize_t n = send(t->fd, m->data, m->len, MSG_NOSIGNAL | MSG_DONTWAIT);
			size_t done = n > 0 ? (size_t)n : 0;

			t->moved_at = hsr_now_ms();
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				tun_close(e, t, 1);
				break;
			}
			if (done == m->len)
				break;
			out_put(t, m->data + done, m->len - done);
		} else {
			out_put(t, m->data, m->len);
		}
		if (t->out.failed)
			tun_close(e, t, 1);
		else /* straight on to the socket, rather than after the next poll */
			tun_write(e, t, hsr_now_ms());
		break;
	case HSR_F_EGRESS_EOF:
		t->wr_eof = 1;
		if (out_left(t) == 0)
			shutdown(t->fd, SHUT_WR);
		break;
	case HSR_F_EGRESS_CLOSE:
		/* What the core sent before (a refusal's answer) still reaches the client. */
		if (out_left(t) == 0) {
			tun_close(e, t, 0);
		} else {
			t->wr_eof = 1;
			t->close_after = 1;
		}
		break;
	default:
		break;
	}
}

void hsr_egress_credit(struct hsr_daemon *d, struct hsr_conn *c, uint64_t id, uint64_t bytes)
{
	struct hsr_egress *e = d->egress;
	struct hsr_tun *t = e && e->owner == c ? tun_find(e, id) : NULL;

	/* A window never grows past what one stream queue holds a few times over. */
	if (t) {
		uint64_t max = 16 * (uint64_t)HSR_EGRESS_WINDOW;
		uint64_t room = t->credit < max ? max - t->credit : 0;

		t->credit += bytes < room ? bytes : room;
	}
}

int64_t hsr_egress_hold(const struct hsr_daemon *d, const struct hsr_conn *c, int64_t now)
{
	const struct hsr_egress *e = d->egress;

	if (!e || e->owner != c)
		return -1;
	for (const struct hsr_tun *t = e->tuns; t; t = t->next)
		if (out_left(t) > EGRESS_HIGH) {
			int64_t until = t->moved_at + EGRESS_STALL_MS;
			return until > now ? until : now;
		}
	return -1;
}

int hsr_egress_npoll(const struct hsr_daemon *d)
{
	return d->egress ? 1 + (int)d->egress->n : 0;
}

int hsr_egress_pollfds(struct hsr_daemon *d, struct pollfd *pfd, int max)
{
	struct hsr_egress *e = d->egress;
	int n = 0;

	if (!e || max < 1)
		return 0;
	pfd[n++] = (struct pollfd){ .fd = e->listen_fd, .events = POLLIN };
	for (struct hsr_tun *t = e->tuns; t && n < max; t = t->next) {
		/* Read only while the stream's queue is short: a slow core
		 * throttles the connection, not the daemon's memory. */
		int rd = !t->rd_eof && t->credit && e->owner && e->owner->out.len < HSR_OUT_HIGH;
		pfd[n++] = (struct pollfd){ .fd = t->fd,
			.events = (short)((rd ? POLLIN : 0) | (out_left(t) ? POLLOUT : 0)) };
	}
	return n;
}

static void accept_tuns(struct hsr_egress *e)
{
	for (;;) {
		int fd = accept4(e->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct hsr_tun *t;

		if (fd < 0)
			return;
		if (!e->owner || e->n >= EGRESS_MAX_CONNS || !(t = calloc(1, sizeof(*t)))) {
			close(fd);
			continue;
		}
		t->id = e->next_id++;
		t->fd = fd;
		t->credit = HSR_EGRESS_WINDOW;
		t->moved_at = hsr_now_ms();
		hsr_buf_init(&t->out);
		t->next = e->tuns;
		e->tuns = t;
		e->n++;
		send_id(e->owner, HSR_F_EGRESS_CONN, t->id);
	}
}

/* Socket to stream; 0, or -1 when t was closed. */
static int tun_read(struct hsr_egress *e, struct hsr_tun *t)
{
	static uint8_t buf[HSR_CHUNK];
	ssize_t n;

	if (!t->credit)
		return 0;
	do
		n = read(t->fd, buf, t->credit < sizeof(buf) ? (size_t)t->credit : sizeof(buf));
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN)
			return 0;
		tun_close(e, t, 1);
		return -1;
	}
	if (n == 0) {
		t->rd_eof = 1;
		send_id(e->owner, HSR_F_EGRESS_EOF, t->id);
		return 0;
	}
	t->credit -= (uint64_t)n;
	struct hsr_msg m = { .type = HSR_F_EGRESS_DATA, .id = t->id, .data = buf, .len = (size_t)n };
	hsr_msg_encode(&e->owner->out, &m, 1);
	return 0;
}

/* Core to socket; 0, or -1 when t was closed. */
static int tun_write(struct hsr_egress *e, struct hsr_tun *t, int64_t now)
{
	while (out_left(t)) {
		ssize_t n = send(t->fd, t->out.data + t->out_off, out_left(t), MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			tun_close(e, t, 1);
			return -1;
		}
		t->out_off += (size_t)n;
		if (t->out_off == t->out.len)
			t->out.len = t->out_off = 0;
		t->moved_at = now;
	}
	if (out_left(t) > EGRESS_HIGH && now - t->moved_at > EGRESS_STALL_MS) {
		tun_close(e, t, 1);
		return -1;
	}
	if (out_left(t) == 0 && t->close_after) {
		tun_close(e, t, 0);
		return -1;
	}
	if (out_left(t) == 0 && t->wr_eof)
		shutdown(t->fd, SHUT_WR);
	/* Both ways done: nothing more can pass. */
	if (out_left(t) == 0 && t->wr_eof && t->rd_eof) {
		tun_close(e, t, 1);
		return -1;
	}
	return 0;
}

void hsr_egress_io(struct hsr_daemon *d, const struct pollfd *pfd, int n)
{
	struct hsr_egress *e = d->egress;
	int64_t now = hsr_now_ms();

	if (!e || n < 1)
		return;
	/* The descriptors were listed in tuns order; match them by fd, since
	 * handling one may free it. */
	for (int i = 1; i < n; i++) {
		struct hsr_tun *t;

		for (t = e->tuns; t && t->fd != pfd[i].fd; t = t->next)
			;
		if (!t)
			continue;
		/* A few reads while the stream's queue is short: one busy
		 * upload does not pay a poll per chunk. */
		int gone = 0;
		for (int k = 0; k < 4 && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
		     !t->rd_eof && t->credit && e->owner && e->owner->out.len < HSR_OUT_HIGH; k++) {
			size_t before = e->owner->out.len;
			if (tun_read(e, t) < 0) {
				gone = 1;
				break;
			}
			if (e->owner->out.len == before)
				break;
		}
		if (gone)
			continue;
		tun_write(e, t, now);
	}
	/* Stalled writers are found by the hold timer even without events. */
	for (struct hsr_tun *t = e->tuns, *next; t; t = next) {
		next = t->next;
		if (out_left(t) > EGRESS_HIGH && now - t->moved_at > EGRESS_STALL_MS)
			tun_close(e, t, 1);
	}
	if (pfd[0].revents & POLLIN)
		accept_tuns(e);
}

void hsr_egress_conn_gone(struct hsr_daemon *d, struct hsr_conn *c)
{
	struct hsr_egress *e = d->egress;

	if (!e || e->owner != c)
		return;
	e->owner = NULL;
	while (e->tuns)
		tun_free(e, e->tuns);
}

void hsr_egress_free(struct hsr_daemon *d)
{
	struct hsr_egress *e = d->egress;

	if (!e)
		return;
	while (e->tuns)
		tun_free(e, e->tuns);
	close(e->listen_fd);
	free(e);
	d->egress = NULL;
}
