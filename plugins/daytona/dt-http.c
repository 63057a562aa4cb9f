/* SPDX-License-Identifier: MIT */
/*
 * dt-http.c - the REST client of the daytona backend: one libcurl easy
 * handle per environment (calls on one environment are serialized by the
 * core), bearer authentication, bounded bodies and timeouts.  The API key
 * lives only in the Authorization header list in memory.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "dt.h"

/* Answers larger than this are refused (logs of a command included). */
#define DT_BODY_MAX (256u << 20)

struct dt_http {
	CURL *curl;
	struct curl_slist *hdr_json; /* Authorization + JSON content type */
	struct curl_slist *hdr_auth; /* Authorization only */
	char base[512];
};

static size_t
dt_write_cb(char *p, size_t size, size_t n, void *ctx)
{
	struct dt_buf *b = ctx;
	size_t len = size * n;
	if (b->len + len > DT_BODY_MAX)
		return 0;
	dt_buf_add(b, p, len);
	return b->failed ? 0 : len;
}

/* The secret is wiped from the temporary header string before it is freed. */
static struct curl_slist *
dt_auth_header(const char *key, const char *extra)
{
	size_t n = strlen(key) + 32;
	char *h = malloc(n);
	if (!h)
		return NULL;
	snprintf(h, n, "Authorization: Bearer %s", key);
	struct curl_slist *l = curl_slist_append(NULL, h);
	explicit_bzero(h, n);
	free(h);
	if (l && extra) {
		struct curl_slist *l2 = curl_slist_append(l, extra);
		if (!l2) {
			curl_slist_free_all(l);
			return NULL;
		}
		l = l2;
	}
	return l;
}

struct dt_http *
dt_http_new(const char *api_url, const char *key, char *err)
{
	struct dt_http *h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return NULL;
	}
	snprintf(h->base, sizeof(h->base), "%s", api_url);
	size_t bl = strlen(h->base);
	while (bl > 0 && h->base[bl - 1] == '/')
		h->base[--bl] = '\0';
	h->curl = curl_easy_init();
	h->hdr_json = dt_auth_header(key, "Content-Type: application/json");
	h->hdr_auth = dt_auth_header(key, NULL);
	if (!h->curl || !h->hdr_json || !h->hdr_auth) {
		snprintf(err, HS_ERR_MAX, "cannot set up the http client (libcurl)");
		dt_http_free(h);
		return NULL;
	}
	return h;
}

void
dt_http_free(struct dt_http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	curl_slist_free_all(h->hdr_json);
	curl_slist_free_all(h->hdr_auth);
	free(h);
}

void
dt_resp_free(struct dt_resp *r)
{
	dt_buf_free(&r->body);
	r->status = 0;
	r->is_json = 0;
}

void
dt_urlencode(const char *s, char *out, size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (; *s && o + 4 < outlen; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

/* Common options of every request; the caller sets method and body. */
static void
dt_prepare(struct dt_http *h, const char *path, long timeout_ms, struct dt_resp *r)
{
	char url[2048];
	snprintf(url, sizeof(url), "%s%s", h->base, path);
	curl_easy_reset(h->curl);
	curl_easy_setopt(h->curl, CURLOPT_URL, url);
	curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000 ? timeout_ms : 10000L);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, dt_write_cb);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &r->body);
	curl_easy_setopt(h->curl, CURLOPT_USERAGENT, "hermes-sandbox-daytona/" PACKAGE_VERSION);
	/* Never follow redirects: the bearer header must not travel elsewhere. */
	curl_easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
}

static int32_t
dt_perform(struct dt_http *h, struct dt_resp *r, char *err)
{
	CURLcode cc = curl_easy_perform(h->curl);
	if (cc != CURLE_OK) {
		char *url = NULL;
		curl_easy_getinfo(h->curl, CURLINFO_EFFECTIVE_URL, &url);
		snprintf(err, HS_ERR_MAX,
		         "cannot reach the daytona api at '%s': %s; check DAYTONA_API_URL and the network",
		         h->base, curl_easy_strerror(cc));
		return HS_E_IO;
	}
	char *ct = NULL;
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_getinfo(h->curl, CURLINFO_CONTENT_TYPE, &ct);
	r->is_json = ct && strncasecmp(ct, "application/json", 16) == 0;
	if (r->body.failed) {
		snprintf(err, HS_ERR_MAX, "the daytona api answer is too large or memory ran out");
		return HS_E_IO;
	}
	return HS_OK;
}

int32_t
dt_http_req(struct dt_http *h, const char *method, const char *path, const char *json_body,
            long timeout_ms, int retries, struct dt_resp *r, char *err)
{
	int32_t st = HS_E_IO;
	for (int attempt = 0; attempt <= retries; attempt++) {
		dt_resp_free(r);
		dt_prepare(h, path, timeout_ms, r);
		curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, method);
		if (json_body) {
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, json_body);
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(json_body));
		} else if (strcmp(method, "POST") == 0) {
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, "");
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE, 0L);
		} else if (strcmp(method, "GET") == 0) {
			curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
			curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, NULL);
		}
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, json_body ? h->hdr_json : h->hdr_auth);
		st = dt_perform(h, r, err);
		if (st == HS_OK)
			return HS_OK;
		if (attempt < retries) {
			struct timespec ts = { 0, 100000000L * (attempt + 1) };
			nanosleep(&ts, NULL);
		}
	}
	return st;
}

int32_t
dt_http_upload(struct dt_http *h, const char *sandbox, const char *path, const void *data,
               size_t len, struct dt_resp *r, char *err)
{
	char p[1536], enc[1024];
	dt_urlencode(path, enc, sizeof(enc));
	snprintf(p, sizeof(p), "/toolbox/%s/toolbox/files/upload?path=%s", sandbox, enc);
	dt_resp_free(r);
	dt_prepare(h, p, 120000L, r);
	curl_mime *mime = curl_mime_init(h->curl);
	curl_mimepart *part = mime ? curl_mime_addpart(mime) : NULL;
	if (!part) {
		curl_mime_free(mime);
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	const char *base = strrchr(path, '/');
	curl_mime_name(part, "file");
	curl_mime_filename(part, base ? base + 1 : path);
	curl_mime_type(part, "application/octet-stream");
	curl_mime_data(part, len ? data : "", len);
	curl_easy_setopt(h->curl, CURLOPT_MIMEPOST, mime);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->hdr_auth);
	int32_t st = dt_perform(h, r, err);
	curl_mime_free(mime);
	return st;
}

int32_t
dt_http_status(const struct dt_resp *r, const char *what, char *err)
{
	char msg[256];
	dt_json_message(r->body.data ? r->body.data : "", r->body.len, msg, sizeof(msg));
	const char *sep = msg[0] ? ": " : "";
	long s = r->status;
	if (s == 401) {
		snprintf(err, HS_ERR_MAX,
		         "daytona rejected the api key (401) on %s%s%s; set a valid DAYTONA_API_KEY",
		         what, sep, msg);
		return HS_E_AUTH;
	}
	if (s == 429) {
		snprintf(err, HS_ERR_MAX,
		         "daytona quota or rate limit reached (429) on %s%s%s; wait, or free sandboxes",
		         what, sep, msg);
		return HS_E_BUSY;
	}
	if (s == 403) {
		snprintf(err, HS_ERR_MAX,
		         "daytona refused %s (403: forbidden or over a quota or limit)%s%s; "
		         "check the key's permissions and the organization's limits",
		         what, sep, msg);
		return HS_E_PERM;
	}
	if (s == 404) {
		snprintf(err, HS_ERR_MAX, "daytona: %s: not found (404)%s%s", what, sep, msg);
		return HS_E_NOTFOUND;
	}
	if (s == 409) {
		snprintf(err, HS_ERR_MAX, "daytona: %s: conflict (409)%s%s", what, sep, msg);
		return HS_E_EXISTS;
	}
	if (s == 400 || s == 422) {
		snprintf(err, HS_ERR_MAX, "daytona refused %s as invalid (%ld)%s%s", what, s, sep, msg);
		return HS_E_INVALID;
	}
	snprintf(err, HS_ERR_MAX, "daytona api error on %s (http %ld)%s%s", what, s, sep, msg);
	return HS_E_IO;
}
