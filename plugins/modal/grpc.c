/* SPDX-License-Identifier: MIT */
/*
 * grpc.c - gRPC over libcurl (see grpc.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "grpc.h"

#define MG_MAX_MSG (16u * 1024u * 1024u)

struct call {
	struct mg_client *c;
	struct pb_buf in;      /* bytes not yet framed */
	struct pb_buf *resp;
	mg_on_msg on_msg;
	void *ctx;
	int nmsg;
	int stopped;           /* on_msg asked to stop */
	int bad;               /* malformed framing */
	int grpc_status;       /* -1 until seen */
	char grpc_message[256];
	int http_status;
	uint64_t deadline_at;
	int timed_out, cancelled;
};

static int
deliver(struct call *k)
{
	size_t off = 0;
	while (k->in.len - off >= 5) {
		const uint8_t *h = k->in.data + off;
		uint32_t n = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
		if (h[0] != 0 || n > MG_MAX_MSG) {
			k->bad = 1; /* compressed or oversized: we never ask for either */
			return -1;
		}
		if (k->in.len - off - 5 < n)
			break;
		k->nmsg++;
		if (k->on_msg) {
			if (!k->stopped && k->on_msg(k->ctx, h + 5, n)) {
				k->stopped = 1;
				return -1;
			}
		} else if (k->resp) {
			k->resp->len = 0;
			pb_raw(k->resp, h + 5, n);
		}
		off += 5 + n;
	}
	memmove(k->in.data, k->in.data + off, k->in.len - off);
	k->in.len -= off;
	return 0;
}

static size_t
on_write(char *p, size_t sz, size_t nm, void *ud)
{
	struct call *k = ud;
	pb_raw(&k->in, p, sz * nm);
	if (k->in.failed || deliver(k) < 0)
		return 0;
	return sz * nm;
}

static void
pct_decode(char *s)
{
	char *o = s;
	for (; *s; s++) {
		if (s[0] == '%' && s[1] && s[2]) {
			char hx[3] = { s[1], s[2], 0 };
			*o++ = (char)strtol(hx, NULL, 16);
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

static size_t
on_header(char *p, size_t sz, size_t nm, void *ud)
{
	struct call *k = ud;
	size_t n = sz * nm;
	char line[512];
	size_t l = n < sizeof(line) - 1 ? n : sizeof(line) - 1;
	memcpy(line, p, l);
	line[l] = '\0';
	while (l && (line[l - 1] == '\r' || line[l - 1] == '\n'))
		line[--l] = '\0';
	if (strncasecmp(line, "grpc-status:", 12) == 0)
		k->grpc_status = atoi(line + 12);
	else if (strncasecmp(line, "grpc-message:", 13) == 0) {
		const char *v = line + 13;
		while (*v == ' ')
			v++;
		snprintf(k->grpc_message, sizeof(k->grpc_message), "%s", v);
		pct_decode(k->grpc_message);
	}
	return n;
}

static int
on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c2, curl_off_t d)
{
	(void)a, (void)b, (void)c2, (void)d;
	struct call *k = ud;
	if (k->c->cancel && *k->c->cancel) {
		k->cancelled = 1;
		return 1;
	}
	if (k->deadline_at && k->c->now_ms(k->c->now_ctx) >= k->deadline_at) {
		k->timed_out = 1;
		return 1;
	}
	return 0;
}

int32_t
mg_call(struct mg_client *c, const char *method, const struct pb_buf *req, struct pb_buf *resp,
        mg_on_msg on_msg, void *ctx, uint64_t deadline_at, long timeout_ms, char *err)
{
	struct call k = { .c = c, .resp = resp, .on_msg = on_msg, .ctx = ctx, .grpc_status = -1 };
	struct pb_buf body = { 0 };
	struct curl_slist *h = NULL;
	char url[768], hdr[2200];
	int32_t st = HS_E_PROTOCOL;
	CURL *cu = NULL;
	uint8_t pre[5];

	k.deadline_at = deadline_at ? deadline_at : c->now_ms(c->now_ctx) + (uint64_t)timeout_ms;
	if (req->failed) {
		snprintf(err, HS_ERR_MAX, "modal %s: out of memory", method);
		return HS_E_NOMEM;
	}
	pre[0] = 0;
	pre[1] = (uint8_t)(req->len >> 24);
	pre[2] = (uint8_t)(req->len >> 16);
	pre[3] = (uint8_t)(req->len >> 8);
	pre[4] = (uint8_t)req->len;
	pb_raw(&body, pre, 5);
	pb_raw(&body, req->data, req->len);
	snprintf(url, sizeof(url), "%s/%s/%s", c->base, c->service ? c->service : "modal.client.ModalClient",
	         method);

	h = curl_slist_append(h, "content-type: application/grpc");
	h = curl_slist_append(h, "te: trailers");
	h = curl_slist_append(h, "grpc-accept-encoding: identity");
	h = curl_slist_append(h, "x-modal-client-type: 1");
	h = curl_slist_append(h, "x-modal-client-version: " PACKAGE_VERSION);
	h = curl_slist_append(h, "user-agent: hermes-sandbox/" PACKAGE_VERSION);
	if (c->bearer[0]) {
		snprintf(hdr, sizeof(hdr), "authorization: Bearer %s", c->bearer);
		h = curl_slist_append(h, hdr);
	} else {
		snprintf(hdr, sizeof(hdr), "x-modal-token-id: %s", c->token_id);
		h = curl_slist_append(h, hdr);
		snprintf(hdr, sizeof(hdr), "x-modal-token-secret: %s", c->token_secret);
		h = curl_slist_append(h, hdr);
	}
	explicit_bzero(hdr, sizeof(hdr));
	h = curl_slist_append(h, "expect:");
	if (!h || body.failed || !(cu = curl_easy_init())) {
		snprintf(err, HS_ERR_MAX, "modal %s: out of memory", method);
		st = HS_E_NOMEM;
		goto out;
	}
	curl_easy_setopt(cu, CURLOPT_URL, url);
	curl_easy_setopt(cu, CURLOPT_HTTP_VERSION,
	                 strncmp(c->base, "http://", 7) == 0 ? (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
	                                                     : (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(cu, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(cu, CURLOPT_POST, 1L);
	curl_easy_setopt(cu, CURLOPT_POSTFIELDS, body.data);
	curl_easy_setopt(cu, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len);
	curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(cu, CURLOPT_WRITEDATA, &k);
	curl_easy_setopt(cu, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(cu, CURLOPT_HEADERDATA, &k);
	curl_easy_setopt(cu, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(cu, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(cu, CURLOPT_XFERINFODATA, &k);
	curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(cu, CURLOPT_FOLLOWLOCATION, 0L);

	/* The deadline is exact through libcurl's own timer; the progress callback adds cancel. */
	uint64_t t0 = c->now_ms(c->now_ctx);
	curl_easy_setopt(cu, CURLOPT_TIMEOUT_MS, k.deadline_at > t0 ? (long)(k.deadline_at - t0) : 1L);
	CURLcode rc = curl_easy_perform(cu);
	if (rc == CURLE_OPERATION_TIMEDOUT && !k.stopped)
		k.timed_out = 1;
	long code = 0;
	curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &code);
	k.http_status = (int)code;
	if (k.stopped) {
		st = HS_OK;
	} else if (k.cancelled) {
		snprintf(err, HS_ERR_MAX, "modal %s: cancelled", method);
		st = HS_E_CANCELLED;
	} else if (k.timed_out) {
		snprintf(err, HS_ERR_MAX, "modal %s: deadline passed", method);
		st = HS_E_TIMEOUT;
	} else if (k.bad) {
		snprintf(err, HS_ERR_MAX, "modal %s: malformed gRPC framing", method);
	} else if (rc != CURLE_OK && k.grpc_status < 0) {
		snprintf(err, HS_ERR_MAX, "modal %s: cannot reach %s: %s", method, c->base,
		         curl_easy_strerror(rc));
		st = HS_E_IO;
	} else if (k.grpc_status < 0) {
		snprintf(err, HS_ERR_MAX, "modal %s: no grpc-status (HTTP %ld): the stream broke or "
		         "%s is not a gRPC server", method, code, c->base);
		st = HS_E_IO;
	} else if (k.grpc_status != 0) {
		snprintf(err, HS_ERR_MAX, "modal %s: %s (grpc-status %d)", method,
		         k.grpc_message[0] ? k.grpc_message : "failed", k.grpc_status);
		st = k.grpc_status == 16 || k.grpc_status == 7 ? HS_E_AUTH
		   : k.grpc_status == 5                         ? HS_E_NOTFOUND
		   : k.grpc_status == 14                        ? HS_E_IO
		   : k.grpc_status == 4                         ? HS_E_TIMEOUT
		                                                : HS_E_PROTOCOL;
	} else if (k.in.len) {
		snprintf(err, HS_ERR_MAX, "modal %s: truncated message", method);
		st = HS_E_IO;
	} else if (!on_msg && k.nmsg != 1) {
		snprintf(err, HS_ERR_MAX, "modal %s: %d messages in a unary answer", method, k.nmsg);
	} else {
		st = HS_OK;
	}
out:
	if (cu)
		curl_easy_cleanup(cu);
	/* The list holds the secret header: wipe before freeing. */
	for (struct curl_slist *i = h; i; i = i->next)
		explicit_bzero(i->data, strlen(i->data));
	curl_slist_free_all(h);
	pb_buf_free(&body);
	pb_buf_free(&k.in);
	return st;
}
