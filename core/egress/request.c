/* SPDX-License-Identifier: MIT */
/*
 * request.c - the egress endpoint's request parser: the head of an HTTP
 * CONNECT or plain-HTTP forward-proxy request, as a client inside the
 * sandbox sends it.  This is the second sanctioned piece of hand-written
 * protocol (docs/decisions.md): no Debian library parses a proxy request
 * for a server.  It is deliberately strict and small: one bounded buffer,
 * CRLF line ends only, HTTP/1.x only, no folded headers, and whatever it
 * does not understand is refused rather than guessed at.  Pure, fuzzed
 * (core/egress/fuzz-request.c).
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/egress/egress.h"

/* An RFC 9110 token character. */
static int
tchar(unsigned char c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Split "host:port" or "[v6]:port" (port optional when def > 0) into r. */
static int
authority(const char *s, size_t n, int def, char *host, size_t hostlen, int *port)
{
	size_t hn;
	const char *colon;

	if (n == 0)
		return -1;
	if (s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (!close)
			return -1;
		hn = (size_t)(close - s) + 1;
		colon = hn < n ? close + 1 : NULL;
		if (colon && *colon != ':')
			return -1;
	} else {
		colon = memchr(s, ':', n);
		hn = colon ? (size_t)(colon - s) : n;
	}
	if (hn == 0 || hn >= hostlen)
		return -1;
	for (size_t i = 0; i < hn; i++)
		if (!isalnum((unsigned char)s[i]) && (!s[i] || !strchr(".-_[]:%", s[i])))
			return -1;
	memcpy(host, s, hn);
	host[hn] = '\0';
	if (!colon) {
		*port = def;
		return def > 0 ? 0 : -1;
	}
	size_t pn = n - hn - 1;
	int v = 0;
	if (pn == 0 || pn > 5)
		return -1;
	for (size_t i = 0; i < pn; i++) {
		if (!isdigit((unsigned char)colon[1 + i]))
			return -1;
		v = v * 10 + (colon[1 + i] - '0');
	}
	if (v < 1 || v > 65535)
		return -1;
	*port = v;
	return 0;
}

/* Append n bytes to r->out; -1 when it would not fit. */
static int
out_put(struct hs_egress_req *r, const char *s, size_t n)
{
	if (r->out_len + n >= sizeof(r->out))
		return -1;
	memcpy(r->out + r->out_len, s, n);
	r->out_len += n;
	r->out[r->out_len] = '\0';
	return 0;
}

/* Headers that belong to the hop between client and proxy, not the server. */
static int
hop_header(const char *name, size_t n)
{
	static const char *const hop[] = { "connection", "keep-alive", "proxy-connection",
	                                   "proxy-authorization", "proxy-authenticate", "te",
	                                   "upgrade", NULL };
	for (int i = 0; hop[i]; i++)
		if (strlen(hop[i]) == n && strncasecmp(name, hop[i], n) == 0)
			return 1;
	return 0;
}

#define FAIL(...) do { snprintf(why, whylen, __VA_ARGS__); return -1; } while (0)

int
hs_egress_req_parse(const char *buf, size_t len, struct hs_egress_req *r, char *why, size_t whylen)
{
	size_t lim = len < HS_EGRESS_HEAD_MAX ? len : HS_EGRESS_HEAD_MAX, end = 0;

	memset(r, 0, offsetof(struct hs_egress_req, out));
	r->out[0] = '\0';
	r->out_len = 0;
	/* The head ends at the first empty line; CR and LF only as CRLF, no NUL. */
	for (size_t i = 0; i < lim; i++) {
		if (buf[i] == '\0')
			FAIL("the request contains a NUL byte");
		if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r'))
			FAIL("the request has a bare LF (lines must end with CRLF)");
		if (buf[i] == '\r' && i + 1 < lim && buf[i + 1] != '\n')
			FAIL("the request has a bare CR");
		if (i >= 3 && memcmp(buf + i - 3, "\r\n\r\n", 4) == 0) {
			end = i + 1;
			break;
		}
	}
	if (!end) {
		if (len >= HS_EGRESS_HEAD_MAX)
			FAIL("the request head is longer than %d bytes", HS_EGRESS_HEAD_MAX);
		return 0;
	}
	r->head_len = end;

	/* Request line: METHOD SP TARGET SP HTTP/1.x CRLF */
	const char *line = buf, *eol = memmem(buf, end, "\r\n", 2);
	const char *sp1 = memchr(line, ' ', (size_t)(eol - line));
	if (!sp1 || sp1 == line || sp1 - line > 16)
		FAIL("the request line has no method");
	for (const char *p = line; p < sp1; p++)
		if (!isupper((unsigned char)*p))
			FAIL("the method is not an upper-case word");
	const char *target = sp1 + 1;
	const char *sp2 = memchr(target, ' ', (size_t)(eol - target));
	if (!sp2 || sp2 == target)
		FAIL("the request line has no target");
	size_t vlen = (size_t)(eol - sp2 - 1);
	if (vlen != 8 || (memcmp(sp2 + 1, "HTTP/1.1", 8) != 0 && memcmp(sp2 + 1, "HTTP/1.0", 8) != 0))
		FAIL("only HTTP/1.0 and HTTP/1.1 requests are understood");
	size_t mlen = (size_t)(sp1 - line), tlen = (size_t)(sp2 - target);
	const char *path = NULL;
	size_t path_len = 0;

	if (mlen == 7 && memcmp(line, "CONNECT", 7) == 0) {
		r->kind = HS_EGRESS_CONNECT;
		if (authority(target, tlen, 0, r->host, sizeof(r->host), &r->port) < 0)
			FAIL("CONNECT needs host:port");
	} else {
		r->kind = HS_EGRESS_FORWARD;
		if (tlen >= 8 && strncasecmp(target, "https://", 8) == 0)
			FAIL("https:// URLs go through CONNECT, not a forward request");
		if (tlen < 7 || strncasecmp(target, "http://", 7) != 0)
			FAIL("a forward request needs an absolute http:// URL");
		const char *a = target + 7, *t_end = target + tlen;
		const char *ae = a;
		while (ae < t_end && *ae != '/' && *ae != '?' && *ae != '#')
			ae++;
		if (memchr(a, '@', (size_t)(ae - a)))
			FAIL("URLs with user information are refused");
		if (ae < t_end && *ae == '#')
			FAIL("a request target cannot have a fragment");
		if (authority(a, (size_t)(ae - a), 80, r->host, sizeof(r->host), &r->port) < 0)
			FAIL("the URL has no valid host[:port]");
		path = ae;
		path_len = (size_t)(t_end - ae);
		for (size_t i = 0; i < path_len; i++)
			if ((unsigned char)path[i] <= 0x20 || path[i] == 0x7f || path[i] == '#')
				FAIL("the URL path has a control character or fragment");
		if (out_put(r, line, mlen + 1) < 0 ||
		    (path_len == 0 || path[0] == '?' ? out_put(r, "/", 1) : 0) < 0 ||
		    out_put(r, path, path_len) < 0 || out_put(r, sp2, vlen + 3) < 0)
			FAIL("the request head is too long");
	}

	/* Headers. */
	int host_seen = 0;
	for (const char *h = eol + 2; h < buf + end - 2; ) {
		const char *he = memmem(h, (size_t)(buf + end - h), "\r\n", 2);
		const char *colon = memchr(h, ':', (size_t)(he - h));
		if (h[0] == ' ' || h[0] == '\t')
			FAIL("folded header lines are refused");
		if (!colon || colon == h)
			FAIL("a header line has no name");
		for (const char *p = h; p < colon; p++)
			if (!tchar((unsigned char)*p))
				FAIL("a header name has a character that is not allowed");
		size_t nl = (size_t)(colon - h);
		const char *v = colon + 1, *ve = he;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		for (const char *p = v; p < ve; p++)
			if ((unsigned char)*p < 0x20 && *p != '\t')
				FAIL("a header value has a control character");
		if (nl == 4 && strncasecmp(h, "host", 4) == 0) {
			char hh[sizeof(r->host)];
			int hp;
			if (host_seen++)
				FAIL("the request has two Host headers");
			if (authority(v, (size_t)(ve - v), r->kind == HS_EGRESS_FORWARD ? 80 : r->port, hh,
			              sizeof(hh), &hp) < 0)
				FAIL("the Host header is not host[:port]");
			if (strcasecmp(hh, r->host) != 0 || hp != r->port)
				FAIL("the Host header ('%.100s:%d') and the target ('%.100s:%d') disagree",
				     hh, hp, r->host, r->port);
		}
		if (r->kind == HS_EGRESS_FORWARD && !hop_header(h, nl) &&
		    out_put(r, h, (size_t)(he - h) + 2) < 0)
			FAIL("the request head is too long");
		h = he + 2;
	}
	if (r->kind == HS_EGRESS_FORWARD) {
		char hostline[HS_EGRESS_HOST_MAX + 32];
		int n = host_seen ? 0 : snprintf(hostline, sizeof(hostline), "Host: %s:%d\r\n", r->host,
		                                r->port);
		static const char closing[] = "Connection: close\r\n\r\n";
		if (out_put(r, hostline, (size_t)n) < 0 || out_put(r, closing, sizeof(closing) - 1) < 0)
			FAIL("the request head is too long");
	}
	return 1;
}

int
hs_egress_socks_greeting(const char *buf, size_t len, size_t *used, char *why, size_t whylen)
{
	const unsigned char *b = (const unsigned char *)buf;

	if (len >= 1 && b[0] != 5)
		FAIL("not a SOCKS5 greeting");
	if (len < 2)
		return 0;
	if (b[1] == 0)
		FAIL("the SOCKS5 greeting offers no method");
	if (len < 2u + b[1])
		return 0;
	*used = 2u + b[1];
	for (size_t i = 2; i < *used; i++)
		if (b[i] == 0)
			return 1;
	FAIL("the SOCKS5 client offers no method without authentication");
}

int
hs_egress_socks_request(const char *buf, size_t len, struct hs_egress_req *r, int *reply, char *why,
                        size_t whylen)
{
	const unsigned char *b = (const unsigned char *)buf;
	size_t need;

	memset(r, 0, offsetof(struct hs_egress_req, out));
	r->out[0] = '\0';
	r->out_len = 0;
	*reply = 1;
	if (len >= 1 && b[0] != 5)
		FAIL("not a SOCKS5 request");
	if (len >= 2 && b[1] != 1) {
		*reply = 7;
		FAIL("only SOCKS5 CONNECT is served (command %u)", b[1]);
	}
	if (len >= 3 && b[2] != 0)
		FAIL("the SOCKS5 request's reserved byte is not zero");
	if (len < 5)
		return 0;
	switch (b[3]) {
	case 1:
		need = 4 + 4 + 2;
		break;
	case 3:
		if (b[4] == 0)
			FAIL("the SOCKS5 request names an empty host");
		need = 4 + 1 + b[4] + 2;
		break;
	case 4:
		need = 4 + 16 + 2;
		break;
	default:
		*reply = 8;
		FAIL("unknown SOCKS5 address type %u", b[3]);
	}
	if (len < need)
		return 0;
	if (b[3] == 1) {
		inet_ntop(AF_INET, b + 4, r->host, sizeof(r->host));
	} else if (b[3] == 4) {
		inet_ntop(AF_INET6, b + 4, r->host, sizeof(r->host));
	} else {
		/* A name: the characters a host name may have, nothing else. */
		for (size_t i = 0; i < b[4]; i++)
			if (!isalnum(b[5 + i]) && (!b[5 + i] || !strchr(".-_", b[5 + i])))
				FAIL("the SOCKS5 request's host has a character that is not allowed");
		memcpy(r->host, b + 5, b[4]);
		r->host[b[4]] = '\0';
	}
	r->port = b[need - 2] << 8 | b[need - 1];
	if (r->port == 0)
		FAIL("the SOCKS5 request names port 0");
	r->kind = HS_EGRESS_SOCKS;
	r->head_len = need;
	return 1;
}
