/* SPDX-License-Identifier: MIT */
/*
 * dt-json.c - readers for the Daytona API's responses, with yajl's tree
 * parser.  Everything that comes back from the network is parsed here, so
 * this file is what plugins/daytona/fuzz-json.c exercises.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_tree.h>

#include "dt.h"

/* Bodies larger than this are not API answers this backend expects. */
#define DT_JSON_MAX (64u << 20)

void
dt_buf_add(struct dt_buf *b, const void *p, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *d = realloc(b->data, cap);
		if (!d) {
			b->failed = 1;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void
dt_buf_free(struct dt_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* Parse len bytes (copied to a NUL-terminated buffer); NULL on failure. */
static yajl_val
dt_parse(const char *body, size_t len, char *err, size_t errlen)
{
	char ebuf[128] = "";
	if (len == 0 || len > DT_JSON_MAX) {
		if (err)
			snprintf(err, errlen, "empty or oversized body (%zu bytes)", len);
		return NULL;
	}
	char *s = malloc(len + 1);
	if (!s) {
		if (err)
			snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(s, body, len);
	s[len] = '\0';
	yajl_val v = yajl_tree_parse(s, ebuf, sizeof(ebuf));
	free(s);
	if (!v && err) {
		char *nl = strchr(ebuf, '\n');
		if (nl)
			*nl = '\0';
		snprintf(err, errlen, "not json: %s", ebuf[0] ? ebuf : "parse error");
	}
	return v;
}

/* The member key of object o, or NULL. */
static yajl_val
dt_get(yajl_val o, const char *key)
{
	if (!YAJL_IS_OBJECT(o))
		return NULL;
	for (size_t i = 0; i < o->u.object.len; i++)
		if (strcmp(o->u.object.keys[i], key) == 0)
			return o->u.object.values[i];
	return NULL;
}

/* The string of v, or NULL when v is not a string. */
static const char *
dt_str(yajl_val v)
{
	return YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : NULL;
}

/* Copy string member key of o into out; 0 when present, -1 otherwise ("" left). */
static int
dt_get_str(yajl_val o, const char *key, char *out, size_t outlen)
{
	const char *v = dt_str(dt_get(o, key));
	out[0] = '\0';
	if (!v)
		return -1;
	snprintf(out, outlen, "%s", v);
	return 0;
}

/* Integer member key of o: 1 when present and integral, 0 when null or absent, -1 when malformed. */
static int
dt_get_int(yajl_val o, const char *key, int *out)
{
	yajl_val v = dt_get(o, key);
	if (!v || YAJL_IS_NULL(v))
		return 0;
	if (!YAJL_IS_INTEGER(v))
		return -1;
	long long x = YAJL_GET_INTEGER(v);
	if (x < -1000000 || x > 1000000)
		return -1;
	*out = (int)x;
	return 1;
}

static int
dt_read_sandbox(yajl_val o, struct dt_sandbox *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!YAJL_IS_OBJECT(o)) {
		if (err)
			snprintf(err, errlen, "sandbox is not an object");
		return -1;
	}
	if (dt_get_str(o, "id", out->id, sizeof(out->id)) < 0 || !out->id[0]) {
		if (err)
			snprintf(err, errlen, "sandbox has no id");
		return -1;
	}
	/* Ids travel in URL paths: only the characters the API uses. */
	if (strspn(out->id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
	    strlen(out->id)) {
		if (err)
			snprintf(err, errlen, "sandbox id has unexpected characters");
		return -1;
	}
	dt_get_str(o, "name", out->name, sizeof(out->name));
	dt_get_str(o, "state", out->state, sizeof(out->state));
	dt_get_str(o, "errorReason", out->error_reason, sizeof(out->error_reason));
	for (char *p = out->error_reason; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	return 0;
}

int
dt_json_sandbox(const char *body, size_t len, struct dt_sandbox *out, char *err, size_t errlen)
{
	yajl_val v = dt_parse(body, len, err, errlen);
	if (!v)
		return -1;
	int rc = dt_read_sandbox(v, out, err, errlen);
	yajl_tree_free(v);
	return rc;
}

int
dt_json_sandbox_list(const char *body, size_t len, struct dt_sandbox *out, int max, int *n)
{
	*n = 0;
	yajl_val v = dt_parse(body, len, NULL, 0);
	if (!v)
		return -1;
	yajl_val a = YAJL_IS_ARRAY(v) ? v : dt_get(v, "items");
	int rc = -1;
	if (YAJL_IS_ARRAY(a)) {
		rc = 0;
		for (size_t i = 0; i < a->u.array.len && *n < max; i++)
			if (dt_read_sandbox(a->u.array.values[i], &out[*n], NULL, 0) == 0)
				(*n)++;
	}
	yajl_tree_free(v);
	return rc;
}

int
dt_json_exec(const char *body, size_t len, char *cmd_id, size_t idlen, int *has_exit, int *exit_code)
{
	yajl_val v = dt_parse(body, len, NULL, 0);
	int rc = -1;
	*has_exit = 0;
	if (!v)
		return -1;
	if (dt_get_str(v, "cmdId", cmd_id, idlen) == 0 && cmd_id[0] &&
	    strspn(cmd_id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
	            strlen(cmd_id)) {
		int h = dt_get_int(v, "exitCode", exit_code);
		if (h >= 0) {
			*has_exit = h;
			rc = 0;
		}
	}
	yajl_tree_free(v);
	return rc;
}

int
dt_json_command(const char *body, size_t len, int *has_exit, int *exit_code)
{
	yajl_val v = dt_parse(body, len, NULL, 0);
	int rc = -1;
	*has_exit = 0;
	if (!v)
		return -1;
	if (YAJL_IS_OBJECT(v)) {
		int h = dt_get_int(v, "exitCode", exit_code);
		if (h >= 0) {
			*has_exit = h;
			rc = 0;
		}
	}
	yajl_tree_free(v);
	return rc;
}

/* Split plain-text logs on the 3-byte stream markers. */
static void
dt_demux(const char *p, size_t len, struct dt_buf *out, struct dt_buf *errb)
{
	struct dt_buf *cur = out;
	size_t i = 0, start = 0;
	while (i + 3 <= len) {
		if ((p[i] == 1 || p[i] == 2) && p[i + 1] == p[i] && p[i + 2] == p[i]) {
			dt_buf_add(cur, p + start, i - start);
			cur = p[i] == 1 ? out : errb;
			i += 3;
			start = i;
		} else {
			i++;
		}
	}
	dt_buf_add(cur, p + start, len - start);
}

int
dt_json_logs(const char *body, size_t len, int is_json, struct dt_buf *out, struct dt_buf *errb)
{
	if (!is_json) {
		dt_demux(body, len, out, errb);
		return 0;
	}
	if (len == 0)
		return 0;
	yajl_val v = dt_parse(body, len, NULL, 0);
	if (!v)
		return -1;
	int rc = -1;
	const char *so = dt_str(dt_get(v, "stdout")), *se = dt_str(dt_get(v, "stderr"));
	const char *all = dt_str(dt_get(v, "output"));
	if (so || se) {
		if (so)
			dt_buf_add(out, so, strlen(so));
		if (se)
			dt_buf_add(errb, se, strlen(se));
		rc = 0;
	} else if (all) {
		dt_demux(all, strlen(all), out, errb);
		rc = 0;
	}
	yajl_tree_free(v);
	return rc;
}

void
dt_json_message(const char *body, size_t len, char *msg, size_t msglen)
{
	msg[0] = '\0';
	yajl_val v = dt_parse(body, len, NULL, 0);
	if (!v)
		return;
	yajl_val m = dt_get(v, "message");
	if (YAJL_IS_ARRAY(m) && m->u.array.len > 0)
		m = m->u.array.values[0];
	if (dt_str(m))
		snprintf(msg, msglen, "%s", dt_str(m));
	else
		dt_get_str(v, "error", msg, msglen);
	yajl_tree_free(v);
	/* One line: the message goes into a one-line error. */
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
}
