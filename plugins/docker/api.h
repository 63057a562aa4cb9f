/* SPDX-License-Identifier: MIT */
/*
 * api.h - the Docker Engine API over its unix socket, with libcurl and yajl.
 */
#ifndef HS_DOCKER_API_H
#define HS_DOCKER_API_H

#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <yajl/yajl_tree.h>

struct dk_buf {
	char *p;
	size_t n, cap;
};

struct dk_api {
	char sock[108];   /* unix socket path */
	long timeout_ms;  /* per request; 0: none */
};

/* Appends; returns 0 or -1 when out of memory. */
int dk_buf_add(struct dk_buf *b, const void *data, size_t len);
void dk_buf_free(struct dk_buf *b);

/*
 * Resolves the socket: config value, else DOCKER_HOST (unix:// only), else
 * /var/run/docker.sock.  Returns an hs_status; err says what is wrong.
 */
int32_t dk_api_resolve(struct dk_api *a, const char *conf_host, char *err);

/*
 * Says why the socket cannot be used (no socket, permission denied,
 * nothing listening): returns HS_OK when a connect() succeeds.
 */
int32_t dk_api_diagnose(const struct dk_api *a, char *err);

/*
 * One request.  body may be NULL; ctype defaults to application/json.
 * *http is the status code; out (may be NULL) receives the body.
 * Returns HS_OK when a response came, whatever its status, else an
 * hs_status with err naming the transport failure.
 */
int32_t dk_api_call(const struct dk_api *a, const char *method, const char *path,
                    const char *ctype, const void *body, size_t blen, long *http,
                    struct dk_buf *out, char *err);

/*
 * A request whose JSON answer is parsed: *tree is NULL when the body is
 * empty.  For a status >= 400 the daemon's "message" is copied to err and
 * the status mapped (404 HS_E_NOTFOUND, 409 HS_E_EXISTS, else HS_E_IO).
 */
int32_t dk_api_json(const struct dk_api *a, const char *method, const char *path,
                    const char *body, long *http, yajl_val *tree, char *err);

/* A string at a path of object keys, or NULL. */
const char *dk_json_str(yajl_val v, const char *const *path);
/* The daemon's message in a JSON error body (into out), or the raw body. */
void dk_api_message(const struct dk_buf *b, char *out, size_t len);
/* Percent-escapes s for a URL query or path segment. */
void dk_url_escape(const char *s, char *out, size_t len);

#endif
