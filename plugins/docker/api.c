/* SPDX-License-Identifier: MIT */
/*
 * api.c - requests to the Docker Engine API over its unix socket (see api.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <hs/backend.h>

#include "plugins/docker/api.h"

int
dk_buf_add(struct dk_buf *b, const void *data, size_t len)
{
	if (b->n + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap < b->n + len + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, len);
	b->n += len;
	b->p[b->n] = '\0';
	return 0;
}

void
dk_buf_free(struct dk_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

int32_t
dk_api_resolve(struct dk_api *a, const char *conf_host, char *err)
{
	const char *h = conf_host && *conf_host ? conf_host : getenv("DOCKER_HOST");
	const char *what = conf_host && *conf_host ? "docker.host" : "DOCKER_HOST";

	memset(a, 0, sizeof(*a));
	a->timeout_ms = 60000;
	if (!h || !*h)
		h = "unix:///var/run/docker.sock";
	if (strncmp(h, "unix://", 7) == 0)
		h += 7;
	else if (strstr(h, "://")) {
		snprintf(err, HS_ERR_MAX, "%s '%s' is not a unix socket: hs speaks to dockerd only over "
		         "unix:// (set docker.host = \"unix:///path\")", what, h);
		return HS_E_CONFIG;
	}
	if (h[0] != '/' || strlen(h) >= sizeof(a->sock)) {
		snprintf(err, HS_ERR_MAX, "%s '%s' is not an absolute socket path", what, h);
		return HS_E_CONFIG;
	}
	snprintf(a->sock, sizeof(a->sock), "%s", h);
	return HS_OK;
}

int32_t
dk_api_diagnose(const struct dk_api *a, char *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat sb;
	int fd, e;

	if (stat(a->sock, &sb) < 0) {
		if (errno == EACCES)
			goto denied;
		snprintf(err, HS_ERR_MAX, "no docker socket at '%s': start dockerd or set docker.host "
		         "(or DOCKER_HOST=unix://PATH)", a->sock);
		return HS_E_UNAVAILABLE;
	}
	if (!S_ISSOCK(sb.st_mode)) {
		snprintf(err, HS_ERR_MAX, "'%s' is not a socket: set docker.host to dockerd's socket",
		         a->sock);
		return HS_E_UNAVAILABLE;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", a->sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, HS_ERR_MAX, "cannot create a socket: %s", strerror(errno));
		return HS_E_IO;
	}
	e = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? errno : 0;
	close(fd);
	if (e == 0)
		return HS_OK;
	if (e == EACCES || e == EPERM) {
	denied:
		snprintf(err, HS_ERR_MAX, "permission denied on the docker socket '%s': join its group "
		         "(usually 'docker') or use a rootless dockerd's socket", a->sock);
		return HS_E_PERM;
	}
	if (e == ECONNREFUSED) {
		snprintf(err, HS_ERR_MAX, "nothing listens on the docker socket '%s' (stale socket): "
		         "start dockerd", a->sock);
		return HS_E_UNAVAILABLE;
	}
	snprintf(err, HS_ERR_MAX, "cannot connect to the docker socket '%s': %s", a->sock,
	         strerror(e));
	return HS_E_UNAVAILABLE;
}

static size_t
dk_write_cb(char *data, size_t size, size_t n, void *ctx)
{
	struct dk_buf *b = ctx;
	if (b && dk_buf_add(b, data, size * n) < 0)
		return 0;
	return size * n;
}

int32_t
dk_api_call(const struct dk_api *a, const char *method, const char *path, const char *ctype,
            const void *body, size_t blen, long *http, struct dk_buf *out, char *err)
{
	char url[2048], ct[128];
	struct curl_slist *hdr = NULL;
	int32_t st = HS_OK;
	CURL *c = curl_easy_init();

	*http = 0;
	if (!c) {
		snprintf(err, HS_ERR_MAX, "cannot initialise libcurl");
		return HS_E_NOMEM;
	}
	snprintf(url, sizeof(url), "http://docker%s", path);
	snprintf(ct, sizeof(ct), "Content-Type: %s", ctype ? ctype : "application/json");
	hdr = curl_slist_append(hdr, ct);
	hdr = curl_slist_append(hdr, "Expect:");
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, a->sock);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, dk_write_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	if (a->timeout_ms > 0)
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, a->timeout_ms);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
	} else if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
	CURLcode cc = curl_easy_perform(c);
	if (cc == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, http);
	} else if (cc == CURLE_COULDNT_CONNECT) {
		st = dk_api_diagnose(a, err);
		if (st == HS_OK) {
			snprintf(err, HS_ERR_MAX, "cannot connect to the docker daemon at '%s'", a->sock);
			st = HS_E_UNAVAILABLE;
		}
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		snprintf(err, HS_ERR_MAX, "the docker daemon at '%s' does not answer (%s %s timed out)",
		         a->sock, method, path);
		st = HS_E_TIMEOUT;
	} else {
		snprintf(err, HS_ERR_MAX, "docker daemon at '%s': %s %s: %s", a->sock, method, path,
		         curl_easy_strerror(cc));
		st = HS_E_IO;
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	return st;
}

const char *
dk_json_str(yajl_val v, const char *const *path)
{
	yajl_val s = v ? yajl_tree_get(v, (const char **)path, yajl_t_string) : NULL;
	return s ? YAJL_GET_STRING(s) : NULL;
}

void
dk_api_message(const struct dk_buf *b, char *out, size_t len)
{
	static const char *const msg[] = { "message", NULL };
	yajl_val t = b->p ? yajl_tree_parse(b->p, NULL, 0) : NULL;
	const char *m = dk_json_str(t, msg);
	snprintf(out, len, "%s", m ? m : b->p ? b->p : "");
	/* One line: the daemon's messages may end with a newline. */
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if (t)
		yajl_tree_free(t);
}

int32_t
dk_api_json(const struct dk_api *a, const char *method, const char *path, const char *body,
            long *http, yajl_val *tree, char *err)
{
	struct dk_buf b = { 0 };
	int32_t st = dk_api_call(a, method, path, NULL, body, body ? strlen(body) : 0, http, &b, err);

	if (tree)
		*tree = NULL;
	if (st != HS_OK)
		goto out;
	if (*http >= 400) {
		char m[400];
		dk_api_message(&b, m, sizeof(m));
		snprintf(err, HS_ERR_MAX, "%s", m[0] ? m : "the docker daemon answered with an error");
		st = *http == 404 ? HS_E_NOTFOUND : *http == 409 ? HS_E_EXISTS : HS_E_IO;
		goto out;
	}
	if (tree && b.n) {
		char perr[128] = "";
		*tree = yajl_tree_parse(b.p, perr, sizeof(perr));
		if (!*tree) {
			snprintf(err, HS_ERR_MAX, "docker %s %s: bad JSON answer: %s", method, path, perr);
			st = HS_E_PROTOCOL;
		}
	}
out:
	dk_buf_free(&b);
	return st;
}

void
dk_url_escape(const char *s, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (; *s && o + 4 < len; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '_' || ch == '.' || ch == '~') {
			out[o++] = (char)ch;
		} else {
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	out[o] = '\0';
}
