/* SPDX-License-Identifier: MIT */
/*
 * relay.c - the egress relay: one thread per session stream that decides
 * and relays the connections the runner tunnels (relay.h).  Frames arrive
 * on whichever thread reads the runner stream, through on_frame(), which
 * only queues bytes and wakes the relay thread; the thread does all the
 * deciding, resolving, connecting and relaying, and writes back through
 * the stream's thread-safe senders.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/egress/relay.h"
#include "core/safety/audit.h"
#include "runner/client.h"

/* Bytes from the sandbox queued for a server before the connection is
 * dropped: the runner sends no more than its window (HSR_EGRESS_WINDOW,
 * renewed by CREDIT as the server takes them), so only a runner that
 * ignores the window gets here. */
#define TO_SERVER_MAX (8u * 1024u * 1024u)
/* Taken bytes are granted back to the runner in batches of this much. */
#define CREDIT_BATCH (64u * 1024u)
#define MAX_TUNS 256
/* Between commands (nobody has read the stream for this long) the relay
 * thread reads the stream itself, so a background job's connections move;
 * while the stream is in use, it looks again this often. */
#define IDLE_MS 1500
#define IDLE_CHECK_MS 250

const char *const hs_egress_env_names[HS_EGRESS_ENV_MAX] = {
	"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy",
	"NO_PROXY", "no_proxy", "npm_config_proxy", "npm_config_https_proxy", "PIP_PROXY",
	"YARN_HTTPS_PROXY",
};

enum tun_state { T_HEAD, T_OPEN, T_DONE };

struct tun {
	struct tun *next;
	uint64_t id;
	int state;
	int fd;              /* the server, once connected */
	char *q;             /* bytes from the sandbox not yet taken (head, then data) */
	size_t qlen, qcap;
	int sandbox_eof;     /* the sandbox sent EOF */
	int sandbox_closed;  /* the sandbox closed (or overran the queue) */
	int server_eof;
	int shut_wr;         /* the server's write side is shut */
	int socks;           /* a SOCKS5 client whose greeting was answered */
	struct hs_egress_req req;
	char address[INET6_ADDRSTRLEN + 8];
	char rule[300];
	uint64_t bytes_out, bytes_in;
	uint64_t taken;      /* bytes of the queue taken since the last CREDIT to the runner */
};

struct hs_egress_relay {
	struct hsr_client *rc;
	struct hs_egress_rules rules;
	char **names;
	size_t n_names;
	int timeout_ms;
	void (*audit)(void *ctx, int allowed, const struct hs_audit_egress *e);
	void *audit_ctx;
	pthread_t thread;
	pthread_mutex_t mu;  /* guards tuns and their queues */
	struct tun *tuns;
	unsigned n;
	int wake[2];
	int pipe[2];         /* for splice(2) from servers to the stream; -1: recv instead */
	size_t pipe_size;
	int stop;
	char buf[1024 * 1024]; /* the relay thread's read buffer: one EGRESS_DATA frame */
};

static struct tun *
tun_find(struct hs_egress_relay *r, uint64_t id)
{
	for (struct tun *t = r->tuns; t; t = t->next)
		if (t->id == id)
			return t;
	return NULL;
}

static void
wake(struct hs_egress_relay *r)
{
	char c = 1;
	ssize_t n = write(r->wake[1], &c, 1);
	(void)n; /* a full pipe already wakes the thread */
}

static void
pipe_close(struct hs_egress_relay *r)
{
	if (r->pipe[0] >= 0) {
		close(r->pipe[0]);
		close(r->pipe[1]);
	}
	r->pipe[0] = r->pipe[1] = -1;
}

/* What a failed send left in the pipe is not the next connection's. */
static void
pipe_empty(struct hs_egress_relay *r)
{
	while (r->pipe[0] >= 0 && read(r->pipe[0], r->buf, sizeof(r->buf)) > 0)
		;
}

/* The frame handler: runs on the stream's reading thread; never blocks. */
static void
on_frame(void *ctx, int type, uint64_t id, const void *data, size_t len)
{
	struct hs_egress_relay *r = ctx;

	pthread_mutex_lock(&r->mu);
	struct tun *t = tun_find(r, id);
	if (type == HSR_F_EGRESS_CONN && !t && r->n < MAX_TUNS && (t = calloc(1, sizeof(*t)))) {
		t->id = id;
		t->fd = -1;
		t->next = r->tuns;
		r->tuns = t;
		r->n++;
	} else if (t && type == HSR_F_EGRESS_DATA && !t->sandbox_eof && !t->sandbox_closed) {
		if (t->qlen + len > TO_SERVER_MAX) {
			t->sandbox_closed = 1;
		} else {
			if (t->qlen + len > t->qcap) {
				size_t cap = t->qcap ? t->qcap : 16384;
				while (cap < t->qlen + len)
					cap *= 2;
				char *q = realloc(t->q, cap);
				if (!q) {
					t->sandbox_closed = 1;
					goto out;
				}
				t->q = q;
				t->qcap = cap;
			}
			memcpy(t->q + t->qlen, data, len);
			t->qlen += len;
		}
	} else if (t && type == HSR_F_EGRESS_EOF) {
		t->sandbox_eof = 1;
	} else if (t && type == HSR_F_EGRESS_CLOSE) {
		t->sandbox_closed = 1;
	} else if (type == HSR_F_EGRESS_CONN && !t) {
		/* Over the limit: refuse at once (from this thread: a send may block briefly). */
		pthread_mutex_unlock(&r->mu);
		hsr_client_egress_end(r->rc, id, 1);
		return;
	}
out:
	pthread_mutex_unlock(&r->mu);
	wake(r);
}

int
hs_egress_resolve(const struct hs_egress_names *names, const char *host, int port,
                  struct sockaddr_storage *addrs, int max, int *trusted, char *err, size_t errlen)
{
	size_t hl = strlen(host);
	int n = 0;

	*trusted = 0;
	if (hl && host[hl - 1] == '.')
		hl--;
	for (size_t i = 0; i < names->n && n < max; i++) {
		const char *eq = strchr(names->items[i], '=');
		if (!eq || (size_t)(eq - names->items[i]) != hl ||
		    strncasecmp(names->items[i], host, hl) != 0)
			continue;
		struct sockaddr_storage *ss = &addrs[n];
		memset(ss, 0, sizeof(*ss));
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		if (inet_pton(AF_INET, eq + 1, &s4->sin_addr) == 1) {
			s4->sin_family = AF_INET;
			s4->sin_port = htons((uint16_t)port);
		} else if (inet_pton(AF_INET6, eq + 1, &s6->sin6_addr) == 1) {
			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons((uint16_t)port);
		} else {
			continue;
		}
		n++;
	}
	if (n) {
		*trusted = 1;
		return n;
	}
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char ps[8];
	snprintf(ps, sizeof(ps), "%d", port);
	int rc = getaddrinfo(host, ps, &hints, &res);
	if (rc != 0) {
		snprintf(err, errlen, "cannot resolve '%.200s': %s", host, gai_strerror(rc));
		return -1;
	}
	for (struct addrinfo *a = res; a && n < max; a = a->ai_next)
		if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
		    a->ai_addrlen <= sizeof(addrs[n])) {
			memset(&addrs[n], 0, sizeof(addrs[n]));
			memcpy(&addrs[n], a->ai_addr, a->ai_addrlen);
			n++;
		}
	freeaddrinfo(res);
	if (!n)
		snprintf(err, errlen, "'%.200s' has no address", host);
	return n ? n : -1;
}

/* Connect to sa within timeout_ms; the socket, or -1. */
static int
connect_to(const struct sockaddr_storage *sa, int timeout_ms)
{
	socklen_t len = sa->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)sa, len) < 0) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int e = 0;
		socklen_t el = sizeof(e);
		if (errno != EINPROGRESS || poll(&p, 1, timeout_ms) != 1 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e != 0) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

static void
report(struct hs_egress_relay *r, struct tun *t, int allowed, const char *reason)
{
	struct hs_audit_egress e = {
		.kind = t->req.kind == HS_EGRESS_CONNECT ? "connect" :
		        t->req.kind == HS_EGRESS_FORWARD ? "forward" :
		        t->req.kind == HS_EGRESS_SOCKS || t->socks ? "socks" : NULL,
		.host = t->req.host[0] ? t->req.host : NULL,
		.port = t->req.port,
		.address = t->address[0] ? t->address : NULL,
		.rule = t->rule[0] ? t->rule : NULL,
		.reason = reason,
		.bytes_out = t->bytes_out,
		.bytes_in = t->bytes_in,
	};
	if (r->audit)
		r->audit(r->audit_ctx, allowed, &e);
}

/* Refuse t with an HTTP status and reason (sent to the client; a SOCKS
 * client gets the matching reply code), audited. */
static void
refuse(struct hs_egress_relay *r, struct tun *t, int status, const char *reason)
{
	char resp[512];
	if (t->socks) {
		/* 2: not allowed by the ruleset; 4: host unreachable; 1: general failure. */
		char rep[10] = { 5, (char)(status == 403 ? 2 : status == 502 ? 4 : 1), 0, 1 };
		hsr_client_egress_data(r->rc, t->id, rep, sizeof(rep));
		hsr_client_egress_end(r->rc, t->id, 1);
		report(r, t, 0, reason);
		t->state = T_DONE;
		return;
	}
	const char *text = status == 400 ? "Bad Request" : status == 403 ? "Forbidden" : "Bad Gateway";
	int n = snprintf(resp, sizeof(resp), "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
	                 "Connection: close\r\nContent-Length: %zu\r\n\r\nhs egress: %s\n", status,
	                 text, strlen(reason) + 12, reason);
	if (n > 0 && (size_t)n < sizeof(resp))
		hsr_client_egress_data(r->rc, t->id, resp, (size_t)n);
	hsr_client_egress_end(r->rc, t->id, 1);
	report(r, t, 0, reason);
	t->state = T_DONE;
}

/* The head is complete in t->q: decide, resolve, connect. */
static void
open_tun(struct hs_egress_relay *r, struct tun *t)
{
	struct hs_egress_verdict v;
	struct sockaddr_storage addrs[16];
	char why[256];
	int trusted = 0;

	if (!hs_egress_check_name(&r->rules, t->req.host, t->req.port, &v)) {
		refuse(r, t, 403, v.reason);
		return;
	}
	int n;
	if (hs_egress_is_ip_literal(t->req.host)) {
		/* Allowed by a range: the literal is its only address. */
		n = hs_egress_resolve(&(struct hs_egress_names){ 0 }, t->req.host, t->req.port, addrs, 1,
		                      &trusted, why, sizeof(why));
		trusted = 0;
	} else {
		struct hs_egress_names names = { (const char *const *)r->names, r->n_names };
		n = hs_egress_resolve(&names, t->req.host, t->req.port, addrs, 16, &trusted, why,
		                      sizeof(why));
	}
	if (n < 0) {
		refuse(r, t, 502, why);
		return;
	}
	const struct hs_egress_rule *name_rule = v.rule;
	snprintf(why, sizeof(why), "no address of '%.200s' may be reached", t->req.host);
	for (int i = 0; i < n; i++) {
		v.rule = name_rule;
		/* The admin's test map vouches for its addresses; all others are checked. */
		if (!trusted && !hs_egress_check_addr(&r->rules, (struct sockaddr *)&addrs[i],
		                                      t->req.port, &v)) {
			snprintf(why, sizeof(why), "%s", v.reason);
			continue;
		}
		char a[INET6_ADDRSTRLEN] = "?";
		const void *bytes = addrs[i].ss_family == AF_INET ?
		                    (const void *)&((struct sockaddr_in *)&addrs[i])->sin_addr :
		                    (const void *)&((struct sockaddr_in6 *)&addrs[i])->sin6_addr;
		inet_ntop(addrs[i].ss_family, bytes, a, sizeof(a));
		snprintf(t->address, sizeof(t->address), "%s", a);
		snprintf(t->rule, sizeof(t->rule), "%s", v.rule ? v.rule->text : "");
		/* The address connected to is the one just checked: no second lookup. */
		t->fd = connect_to(&addrs[i], r->timeout_ms);
		if (t->fd < 0) {
			snprintf(why, sizeof(why), "cannot connect to %s port %d: %s", a, t->req.port,
			         strerror(errno));
			continue;
		}
		break;
	}
	if (t->fd < 0) {
		/* Refused by the filter (403) or unreachable (502). */
		refuse(r, t, t->address[0] ? 502 : 403, why);
		return;
	}
	if (t->req.kind == HS_EGRESS_CONNECT) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		hsr_client_egress_data(r->rc, t->id, ok, sizeof(ok) - 1);
	} else if (t->req.kind == HS_EGRESS_SOCKS) {
		static const char ok[10] = { 5, 0, 0, 1 }; /* succeeded; bound 0.0.0.0:0 */
		hsr_client_egress_data(r->rc, t->id, ok, sizeof(ok));
	}
	t->state = T_OPEN;
}

/* Work on one tun with r->mu held around queue access; 0, or -1 when it is done. */
static int
step(struct hs_egress_relay *r, struct tun *t, const struct pollfd *p)
{
	char why[256];

	pthread_mutex_lock(&r->mu);
	int closed = t->sandbox_closed;
	pthread_mutex_unlock(&r->mu);
	if (closed) {
		if (t->state == T_HEAD)
			report(r, t, 0, "the client closed before a complete request");
		else if (t->state == T_OPEN)
			report(r, t, 1, NULL);
		hsr_client_egress_end(r->rc, t->id, 1);
		return -1;
	}
	if (t->state == T_HEAD) {
		int rc, reply = 1;
		pthread_mutex_lock(&r->mu);
		int eof = t->sandbox_eof;
		if (!t->socks && t->qlen && t->q[0] == 5) {
			/* SOCKS5: answer the greeting, then read the request. */
			size_t used = 0;
			rc = hs_egress_socks_greeting(t->q, t->qlen, &used, why, sizeof(why));
			if (rc == 1) {
				memmove(t->q, t->q + used, t->qlen - used);
				t->qlen -= used;
				t->taken += used;
				t->socks = 1;
			}
			pthread_mutex_unlock(&r->mu);
			if (rc < 0 || (rc == 0 && eof)) {
				static const char no[2] = { 5, (char)0xff };
				hsr_client_egress_data(r->rc, t->id, no, sizeof(no));
				hsr_client_egress_end(r->rc, t->id, 1);
				t->socks = 1;
				report(r, t, 0, rc < 0 ? why : "the greeting ended early");
				return -1;
			}
			if (rc == 0)
				return 0;
			static const char yes[2] = { 5, 0 };
			hsr_client_egress_data(r->rc, t->id, yes, sizeof(yes));
			pthread_mutex_lock(&r->mu);
		}
		if (t->socks)
			rc = hs_egress_socks_request(t->q, t->qlen, &t->req, &reply, why, sizeof(why));
		else
			rc = hs_egress_req_parse(t->q, t->qlen, &t->req, why, sizeof(why));
		eof = t->sandbox_eof;
		pthread_mutex_unlock(&r->mu);
		if (rc < 0 || (rc == 0 && eof)) {
			refuse(r, t, 400, rc < 0 ? why : "the request ended before its head was complete");
			return -1;
		}
		if (rc == 0)
			return 0;
		open_tun(r, t);
		if (t->state == T_DONE)
			return -1;
		/* What follows the head goes on to the server: the rewritten head of
		 * a forward request first. */
		pthread_mutex_lock(&r->mu);
		size_t head = t->req.head_len;
		memmove(t->q, t->q + head, t->qlen - head);
		t->qlen -= head;
		pthread_mutex_unlock(&r->mu);
		t->taken += head;
		if (t->req.kind == HS_EGRESS_FORWARD) {
			if (send(t->fd, t->req.out, t->req.out_len, MSG_NOSIGNAL) != (ssize_t)t->req.out_len) {
				report(r, t, 1, "the server closed");
				hsr_client_egress_end(r->rc, t->id, 1);
				return -1;
			}
			t->bytes_out += t->req.out_len;
		}
		return 0;
	}
	/* Open: sandbox to server. */
	pthread_mutex_lock(&r->mu);
	while (t->qlen) {
		ssize_t n = send(t->fd, t->q, t->qlen, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			t->sandbox_closed = 1;
			break;
		}
		memmove(t->q, t->q + n, t->qlen - (size_t)n);
		t->qlen -= (size_t)n;
		t->bytes_out += (uint64_t)n;
		t->taken += (uint64_t)n;
	}
	int shut = t->sandbox_eof && !t->qlen && !t->shut_wr;
	int grant = t->taken >= CREDIT_BATCH || (t->taken && !t->qlen);
	pthread_mutex_unlock(&r->mu);
	/* The server took them: the runner may send as much again. */
	if (grant) {
		hsr_client_credit(r->rc, t->id, t->taken);
		t->taken = 0;
	}
	if (shut) {
		shutdown(t->fd, SHUT_WR);
		t->shut_wr = 1;
	}
	/* Server to sandbox. */
	/* A few reads per wake-up, so one busy download does not pay a poll per chunk. */
	for (int k = 0; k < 8 && p && (p->revents & (POLLIN | POLLHUP | POLLERR)) && !t->server_eof;
	     k++) {
		ssize_t n;
		if (r->pipe[0] >= 0) {
			/* Server to pipe to stream: the bytes are not copied through here. */
			n = splice(t->fd, NULL, r->pipe[1], NULL, r->pipe_size, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				t->bytes_in += (uint64_t)n;
				if (hsr_client_egress_splice(r->rc, t->id, r->pipe[0], (size_t)n) < 0) {
					pipe_empty(r);
					t->sandbox_closed = 1;
					break;
				}
				continue;
			}
			if (n < 0 && errno == EINVAL) {
				pipe_close(r); /* no splice from this socket: recv from now on */
				continue;
			}
		} else {
			n = recv(t->fd, r->buf, sizeof(r->buf), MSG_DONTWAIT);
		}
		if (n > 0) {
			t->bytes_in += (uint64_t)n;
			if (hsr_client_egress_data(r->rc, t->id, r->buf, (size_t)n) < 0) {
				t->sandbox_closed = 1;
				break;
			}
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			t->server_eof = 1;
			hsr_client_egress_end(r->rc, t->id, 0);
		} else {
			break;
		}
	}
	if (t->server_eof && t->shut_wr) {
		report(r, t, 1, NULL);
		hsr_client_egress_end(r->rc, t->id, 1);
		return -1;
	}
	return 0;
}

static void
tun_drop(struct hs_egress_relay *r, struct tun *t)
{
	pthread_mutex_lock(&r->mu);
	for (struct tun **pp = &r->tuns; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	r->n--;
	pthread_mutex_unlock(&r->mu);
	if (t->fd >= 0)
		close(t->fd);
	free(t->q);
	free(t);
}

static void *
relay_main(void *arg)
{
	struct hs_egress_relay *r = arg;
	struct pollfd pfd[MAX_TUNS + 2];
	struct tun *who[MAX_TUNS + 2];

	for (;;) {
		size_t n = 0;
		/* Idle stream: take its egress frames here (on_frame, as from any reader). */
		int pump = hsr_client_pump(r->rc, IDLE_MS);
		pfd[n] = (struct pollfd){ .fd = r->wake[0], .events = POLLIN };
		who[n++] = NULL;
		pfd[n] = (struct pollfd){ .fd = pump ? hsr_client_fd(r->rc) : -1, .events = POLLIN };
		who[n++] = NULL;
		pthread_mutex_lock(&r->mu);
		if (r->stop) {
			pthread_mutex_unlock(&r->mu);
			break;
		}
		for (struct tun *t = r->tuns; t && n <= MAX_TUNS; t = t->next) {
			if (t->state != T_OPEN)
				continue;
			pfd[n] = (struct pollfd){ .fd = t->fd,
				.events = (short)((t->server_eof ? 0 : POLLIN) | (t->qlen ? POLLOUT : 0)) };
			who[n++] = t;
		}
		pthread_mutex_unlock(&r->mu);
		if (poll(pfd, n, pump ? 1000 : IDLE_CHECK_MS) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			char buf[256];
			while (read(r->wake[0], buf, sizeof(buf)) > 0)
				;
		}
		/* Every tun gets a step: new heads, queued bytes, closes. */
		pthread_mutex_lock(&r->mu);
		struct tun *list[MAX_TUNS];
		size_t k = 0;
		for (struct tun *t = r->tuns; t && k < MAX_TUNS; t = t->next)
			list[k++] = t;
		pthread_mutex_unlock(&r->mu);
		for (size_t i = 0; i < k; i++) {
			const struct pollfd *p = NULL;
			for (size_t j = 2; j < n; j++)
				if (who[j] == list[i])
					p = &pfd[j];
			if (step(r, list[i], p) < 0)
				tun_drop(r, list[i]);
		}
	}
	return NULL;
}

int
hs_egress_relay_start(struct hs_egress_relay **out, struct hsr_client *rc,
                      const struct hs_egress_relay_opts *o, char *err, size_t errlen)
{
	struct hs_egress_relay *r = calloc(1, sizeof(*r));
	if (!r)
		goto nomem;
	r->rc = rc;
	r->timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 10000;
	r->audit = o->audit;
	r->audit_ctx = o->audit_ctx;
	r->wake[0] = r->wake[1] = -1;
	r->pipe[0] = r->pipe[1] = -1;
	r->rules.r = calloc(o->rules->n ? o->rules->n : 1, sizeof(*r->rules.r));
	r->names = calloc(o->names.n + 1, sizeof(*r->names));
	if (!r->rules.r || !r->names)
		goto nomem;
	memcpy(r->rules.r, o->rules->r, o->rules->n * sizeof(*r->rules.r));
	r->rules.n = o->rules->n;
	for (size_t i = 0; i < o->names.n; i++) {
		if (!(r->names[i] = strdup(o->names.items[i])))
			goto nomem;
		r->n_names = i + 1;
	}
	if (pipe2(r->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "cannot create a pipe: %s", strerror(errno));
		goto fail;
	}
	/* A pipe as large as a frame, for splice(2); without one, recv and send. */
	r->pipe_size = 64 * 1024;
	if (pipe2(r->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		r->pipe[0] = r->pipe[1] = -1;
	} else {
		int sz = fcntl(r->pipe[1], F_SETPIPE_SZ, (int)sizeof(r->buf));
		if (sz > 0)
			r->pipe_size = (size_t)sz;
	}
	pthread_mutex_init(&r->mu, NULL);
	struct hsr_egress_ops ops = { .ctx = r, .fn = on_frame };
	hsr_client_set_egress(rc, &ops);
	if (pthread_create(&r->thread, NULL, relay_main, r) != 0) {
		hsr_client_set_egress(rc, &(struct hsr_egress_ops){ 0 });
		pthread_mutex_destroy(&r->mu);
		snprintf(err, errlen, "cannot start the egress relay thread");
		goto fail;
	}
	*out = r;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
fail:
	if (r) {
		for (size_t i = 0; i < r->n_names; i++)
			free(r->names[i]);
		free(r->names);
		free(r->rules.r);
		if (r->wake[0] >= 0) {
			close(r->wake[0]);
			close(r->wake[1]);
		}
		pipe_close(r);
		free(r);
	}
	return -1;
}

void
hs_egress_relay_stop(struct hs_egress_relay *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	pthread_mutex_unlock(&r->mu);
	wake(r);
	pthread_join(r->thread, NULL);
	hsr_client_set_egress(r->rc, &(struct hsr_egress_ops){ 0 });
	/* Connections still open end with the session: audited as such. */
	while (r->tuns) {
		struct tun *t = r->tuns;
		if (t->state == T_OPEN)
			report(r, t, 1, "the session ended");
		tun_drop(r, t);
	}
	pthread_mutex_destroy(&r->mu);
	close(r->wake[0]);
	close(r->wake[1]);
	pipe_close(r);
	for (size_t i = 0; i < r->n_names; i++)
		free(r->names[i]);
	free(r->names);
	free(r->rules.r);
	free(r);
}
