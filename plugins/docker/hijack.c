/* SPDX-License-Identifier: MIT */
/*
 * hijack.c - Docker exec with a hijacked attach stream (see hijack.h).
 *
 * libcurl cannot express an HTTP upgrade to a raw stream, so, as the one
 * sanctioned piece of hand-written protocol, the start request is written
 * by hand on a connection libcurl opened with CURLOPT_CONNECT_ONLY, and the
 * stream is then read and written with curl_easy_recv/curl_easy_send.  The
 * stream is framed (demux.c) because the exec has no tty.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hs/backend.h>
#include <yajl/yajl_gen.h>

#include "plugins/docker/hijack.h"

#define DK_BUF (256 * 1024)

static void
gen_str(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

int32_t
dk_exec_create(const struct dk_api *a, const char *id, const char *const *argv,
               const char *const *envp, uint32_t n_env, const char *cwd, char *exec_id,
               size_t idlen, char *err)
{
	static const char *const idp[] = { "Id", NULL };
	char path[512];
	const unsigned char *body;
	size_t blen;
	long http;
	yajl_val t = NULL;
	yajl_gen g = yajl_gen_alloc(NULL);
	int32_t st;

	if (!g) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	yajl_gen_map_open(g);
	gen_str(g, "AttachStdin");
	yajl_gen_bool(g, 1);
	gen_str(g, "AttachStdout");
	yajl_gen_bool(g, 1);
	gen_str(g, "AttachStderr");
	yajl_gen_bool(g, 1);
	gen_str(g, "Tty");
	yajl_gen_bool(g, 0);
	gen_str(g, "Cmd");
	yajl_gen_array_open(g);
	for (const char *const *p = argv; *p; p++)
		gen_str(g, *p);
	yajl_gen_array_close(g);
	if (envp && n_env) {
		gen_str(g, "Env");
		yajl_gen_array_open(g);
		for (uint32_t i = 0; i < n_env; i++)
			gen_str(g, envp[i]);
		yajl_gen_array_close(g);
	}
	if (cwd && *cwd) {
		gen_str(g, "WorkingDir");
		gen_str(g, cwd);
	}
	yajl_gen_map_close(g);
	yajl_gen_get_buf(g, &body, &blen);
	snprintf(path, sizeof(path), "/containers/%s/exec", id);
	st = dk_api_json(a, "POST", path, (const char *)body, &http, &t, err);
	yajl_gen_free(g);
	if (st != HS_OK) {
		if (st == HS_E_EXISTS)
			st = HS_E_LOST; /* 409: the container is not running */
		return st;
	}
	const char *x = dk_json_str(t, idp);
	if (!x || strlen(x) >= idlen) {
		snprintf(err, HS_ERR_MAX, "docker exec create: no exec id in the answer");
		st = HS_E_PROTOCOL;
	} else {
		snprintf(exec_id, idlen, "%s", x);
	}
	yajl_tree_free(t);
	return st;
}

static int
wait_sock(int fd, short ev, int ms)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int r;
	while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	return r;
}

void
dk_stream_free(struct dk_stream *s)
{
	if (s->curl)
		curl_easy_cleanup(s->curl);
	free(s->lead);
	memset(s, 0, sizeof(*s));
	s->sock = -1;
}

static int32_t
send_all(struct dk_stream *s, const void *buf, size_t len, char *err)
{
	const char *p = buf;
	while (len > 0) {
		size_t n = 0;
		CURLcode cc = curl_easy_send(s->curl, p, len, &n);
		if (cc == CURLE_AGAIN) {
			if (wait_sock(s->sock, POLLOUT, 10000) <= 0) {
				snprintf(err, HS_ERR_MAX, "docker exec stream: write timed out");
				return HS_E_TIMEOUT;
			}
			continue;
		}
		if (cc != CURLE_OK) {
			snprintf(err, HS_ERR_MAX, "docker exec stream: %s", curl_easy_strerror(cc));
			return HS_E_IO;
		}
		p += n;
		len -= n;
	}
	return HS_OK;
}

int32_t
dk_exec_hijack(const struct dk_api *a, const char *exec_id, struct dk_stream *s, char *err)
{
	static const char body[] = "{\"Detach\":false,\"Tty\":false}";
	char req[1024];
	struct dk_buf ans = { 0 };
	curl_socket_t sock = CURL_SOCKET_BAD;
	int32_t st;

	memset(s, 0, sizeof(*s));
	s->sock = -1;
	s->curl = curl_easy_init();
	if (!s->curl) {
		snprintf(err, HS_ERR_MAX, "cannot initialise libcurl");
		return HS_E_NOMEM;
	}
	curl_easy_setopt(s->curl, CURLOPT_UNIX_SOCKET_PATH, a->sock);
	curl_easy_setopt(s->curl, CURLOPT_URL, "http://docker/");
	curl_easy_setopt(s->curl, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	CURLcode cc = curl_easy_perform(s->curl);
	if (cc == CURLE_OK)
		cc = curl_easy_getinfo(s->curl, CURLINFO_ACTIVESOCKET, &sock);
	if (cc != CURLE_OK || sock == CURL_SOCKET_BAD) {
		st = dk_api_diagnose(a, err);
		if (st == HS_OK) {
			snprintf(err, HS_ERR_MAX, "cannot connect to the docker daemon at '%s': %s", a->sock,
			         curl_easy_strerror(cc));
			st = HS_E_UNAVAILABLE;
		}
		goto fail;
	}
	s->sock = (int)sock;
	int n = snprintf(req, sizeof(req),
	                 "POST /exec/%s/start HTTP/1.1\r\n"
	                 "Host: docker\r\n"
	                 "Content-Type: application/json\r\n"
	                 "Connection: Upgrade\r\n"
	                 "Upgrade: tcp\r\n"
	                 "Content-Length: %zu\r\n\r\n%s",
	                 exec_id, sizeof(body) - 1, body);
	if (n < 0 || (size_t)n >= sizeof(req)) {
		snprintf(err, HS_ERR_MAX, "exec id too long");
		st = HS_E_INTERNAL;
		goto fail;
	}
	st = send_all(s, req, (size_t)n, err);
	if (st != HS_OK)
		goto fail;
	/* Read the answer's head; what follows it already belongs to the stream. */
	char *end = NULL;
	while (!end) {
		char tmp[4096];
		size_t got = 0;
		cc = curl_easy_recv(s->curl, tmp, sizeof(tmp), &got);
		if (cc == CURLE_AGAIN) {
			if (wait_sock(s->sock, POLLIN, 15000) <= 0) {
				snprintf(err, HS_ERR_MAX, "the docker daemon at '%s' does not answer the exec start",
				         a->sock);
				st = HS_E_TIMEOUT;
				goto fail;
			}
			continue;
		}
		if (cc != CURLE_OK || got == 0) {
			snprintf(err, HS_ERR_MAX, "docker exec start: the daemon closed the connection%s%s",
			         cc != CURLE_OK ? ": " : "", cc != CURLE_OK ? curl_easy_strerror(cc) : "");
			st = HS_E_IO;
			goto fail;
		}
		if (dk_buf_add(&ans, tmp, got) < 0 || ans.n > 65536) {
			snprintf(err, HS_ERR_MAX, "docker exec start: answer head too large");
			st = HS_E_PROTOCOL;
			goto fail;
		}
		end = memmem(ans.p, ans.n, "\r\n\r\n", 4);
	}
	int code = 0;
	if (sscanf(ans.p, "HTTP/1.%*d %d", &code) != 1) {
		snprintf(err, HS_ERR_MAX, "docker exec start: not an HTTP answer");
		st = HS_E_PROTOCOL;
		goto fail;
	}
	size_t head = (size_t)(end + 4 - ans.p);
	if (code != 101 && code != 200) {
		char m[300];
		struct dk_buf rest = { .p = ans.p + head, .n = ans.n - head };
		dk_api_message(&rest, m, sizeof(m));
		snprintf(err, HS_ERR_MAX, "docker exec start: HTTP %d%s%s", code, m[0] ? ": " : "", m);
		st = code == 404 ? HS_E_NOTFOUND : code == 409 ? HS_E_LOST : HS_E_IO;
		goto fail;
	}
	if (ans.n > head) {
		s->lead = malloc(ans.n - head);
		if (!s->lead) {
			snprintf(err, HS_ERR_MAX, "out of memory");
			st = HS_E_NOMEM;
			goto fail;
		}
		memcpy(s->lead, ans.p + head, ans.n - head);
		s->lead_len = ans.n - head;
	}
	dk_buf_free(&ans);
	return HS_OK;
fail:
	dk_buf_free(&ans);
	dk_stream_free(s);
	return st;
}

/* ---- the pump ---- */

struct pump_out {
	struct dk_pump *p;
	uint8_t *buf;
	size_t len;
};

static int
pump_demux_cb(void *ctx, int stream, const uint8_t *buf, size_t len)
{
	struct pump_out *o = ctx;
	if (stream == 1) {
		memcpy(o->buf + o->len, buf, len);
		o->len += len;
	} else if (stream == 2 && o->p->on_err) {
		o->p->on_err(o->p->err_ctx, (const char *)buf, len);
	}
	return 0;
}

static void *
pump_main(void *arg)
{
	struct dk_pump *p = arg;
	struct dk_demux dm;
	uint8_t *out = malloc(DK_BUF), *in = malloc(DK_BUF);
	size_t olen = 0, ooff = 0, ilen = 0, ioff = 0;
	int sock_eof = 0, fd_eof = 0, fd_dead = 0, wr_shut = 0;

	dk_demux_init(&dm);
	if (!out || !in)
		goto out;
	if (p->s.lead_len) {
		struct pump_out o = { p, out, 0 };
		if (p->s.lead_len > DK_BUF || dk_demux_feed(&dm, p->s.lead, p->s.lead_len, pump_demux_cb, &o))
			goto out;
		olen = o.len;
	}
	for (;;) {
		struct pollfd pf[3] = {
			{ .fd = p->s.sock, .events = 0 },
			{ .fd = p->fd, .events = 0 },
			{ .fd = p->wake[0], .events = POLLIN },
		};
		if (!sock_eof && olen == 0)
			pf[0].events |= POLLIN;
		if (ilen > ioff)
			pf[0].events |= POLLOUT;
		if (!fd_eof && !fd_dead && ilen == 0)
			pf[1].events |= POLLIN;
		if (olen > ooff && !fd_dead)
			pf[1].events |= POLLOUT;
		if (sock_eof && (olen == ooff || fd_dead))
			break;
		/* A side with nothing to wait for is left out, so a hang-up there cannot spin us. */
		if (!pf[0].events)
			pf[0].fd = -1;
		if (!pf[1].events)
			pf[1].fd = -1;
		if (poll(pf, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[2].revents)
			break;
		/* stream -> core */
		if (pf[1].revents & (POLLOUT | POLLERR | POLLHUP) && olen > ooff && !fd_dead) {
			ssize_t w = send(p->fd, out + ooff, olen - ooff, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0) {
				ooff += (size_t)w;
				if (ooff == olen)
					ooff = olen = 0;
			} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
				fd_dead = 1;
			}
		}
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR) && !sock_eof && olen == 0) {
			uint8_t raw[65536];
			size_t got = 0;
			CURLcode cc = curl_easy_recv(p->s.curl, raw, sizeof(raw), &got);
			if (cc == CURLE_OK && got > 0) {
				struct pump_out o = { p, out, 0 };
				if (dk_demux_feed(&dm, raw, got, pump_demux_cb, &o) != 0)
					sock_eof = 1; /* a malformed stream ends it */
				olen = fd_dead ? 0 : o.len;
				ooff = 0;
			} else if (cc != CURLE_AGAIN) {
				sock_eof = 1;
			}
		}
		/* core -> stream */
		if (pf[1].revents & (POLLIN | POLLHUP) && ilen == 0 && !fd_eof) {
			ssize_t r = recv(p->fd, in, DK_BUF, MSG_DONTWAIT);
			if (r > 0) {
				ilen = (size_t)r;
				ioff = 0;
			} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				fd_eof = 1;
			}
		}
		if (pf[0].revents & POLLOUT && ilen > ioff) {
			size_t n = 0;
			CURLcode cc = curl_easy_send(p->s.curl, in + ioff, ilen - ioff, &n);
			if (cc == CURLE_OK) {
				ioff += n;
				if (ioff == ilen)
					ioff = ilen = 0;
			} else if (cc != CURLE_AGAIN) {
				ilen = ioff = 0;
				fd_eof = 1;
			}
		}
		/* The core closed its end: close the exec's stdin, keep draining. */
		if ((fd_eof || fd_dead) && ilen == 0 && !wr_shut) {
			shutdown(p->s.sock, SHUT_WR);
			wr_shut = 1;
		}
	}
out:
	free(out);
	free(in);
	close(p->fd);
	p->fd = -1;
	p->done = 1;
	return NULL;
}

int32_t
dk_pump_start(struct dk_pump *p, int *core_fd, char *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot create a socket pair: %s", strerror(errno));
		return HS_E_IO;
	}
	if (pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot create a pipe: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return HS_E_IO;
	}
	p->fd = sv[1];
	p->done = 0;
	int e = pthread_create(&p->th, NULL, pump_main, p);
	if (e != 0) {
		snprintf(err, HS_ERR_MAX, "cannot start the stream thread: %s", strerror(e));
		close(sv[0]);
		close(sv[1]);
		close(p->wake[0]);
		close(p->wake[1]);
		return HS_E_IO;
	}
	p->started = 1;
	*core_fd = sv[0];
	return HS_OK;
}

void
dk_pump_stop(struct dk_pump *p, int wait_ms)
{
	if (!p->started)
		return;
	for (int i = 0; i < wait_ms / 10 && !p->done; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (!p->done && write(p->wake[1], "x", 1) < 0) {
		/* The pipe is ours and empty; a failed write leaves join to wait. */
	}
	pthread_join(p->th, NULL);
	close(p->wake[0]);
	close(p->wake[1]);
	dk_stream_free(&p->s);
	p->started = 0;
}

/* ---- one exec to its end (backends without the runner) ---- */

static uint64_t
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int32_t
dk_stream_run(struct dk_stream *s, const void *stdin_data, uint64_t stdin_len, dk_demux_cb out,
              void *ctx, uint64_t deadline_ms, volatile int *cancel, char *err)
{
	struct dk_demux dm;
	const uint8_t *in = stdin_data;
	uint64_t ioff = 0;
	int wr_shut = 0;

	dk_demux_init(&dm);
	if (s->lead_len && dk_demux_feed(&dm, s->lead, s->lead_len, out, ctx) != 0) {
		snprintf(err, HS_ERR_MAX, "docker exec stream: malformed frame");
		return HS_E_PROTOCOL;
	}
	for (;;) {
		if (!wr_shut && ioff >= stdin_len) {
			shutdown(s->sock, SHUT_WR);
			wr_shut = 1;
		}
		if (cancel && *cancel)
			return HS_E_CANCELLED;
		int ms = 200;
		if (deadline_ms) {
			uint64_t now = mono_ms();
			if (now >= deadline_ms)
				return HS_E_TIMEOUT;
			if (deadline_ms - now < (uint64_t)ms)
				ms = (int)(deadline_ms - now);
		}
		struct pollfd pf = { .fd = s->sock, .events = POLLIN | (wr_shut ? 0 : POLLOUT) };
		if (poll(&pf, 1, ms) < 0 && errno != EINTR) {
			snprintf(err, HS_ERR_MAX, "poll: %s", strerror(errno));
			return HS_E_IO;
		}
		if (pf.revents & POLLOUT && !wr_shut) {
			size_t n = 0;
			size_t chunk = stdin_len - ioff > 65536 ? 65536 : (size_t)(stdin_len - ioff);
			CURLcode cc = curl_easy_send(s->curl, in + ioff, chunk, &n);
			if (cc == CURLE_OK)
				ioff += n;
			else if (cc != CURLE_AGAIN)
				ioff = stdin_len; /* the command stopped reading */
		}
		if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
			uint8_t raw[65536];
			size_t got = 0;
			CURLcode cc = curl_easy_recv(s->curl, raw, sizeof(raw), &got);
			if (cc == CURLE_AGAIN)
				continue;
			if (cc != CURLE_OK || got == 0)
				return HS_OK;
			if (dk_demux_feed(&dm, raw, got, out, ctx) != 0) {
				snprintf(err, HS_ERR_MAX, "docker exec stream: malformed frame");
				return HS_E_PROTOCOL;
			}
		}
	}
}
