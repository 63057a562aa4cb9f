/* SPDX-License-Identifier: MIT */
/*
 * serve-req.c - reading serve protocol requests (see serve-req.h).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/serve/serve-req.h"

const char *
hs_serve_shape_check(const char *p, size_t len, unsigned max_depth, size_t max_values)
{
	unsigned depth = 0;
	size_t values = 0;
	int in_str = 0;

	for (size_t i = 0; i < len; i++) {
		char ch = p[i];
		if (in_str) {
			if (ch == '\\')
				i++; /* the escaped byte cannot end the string */
			else if (ch == '"')
				in_str = 0;
			continue;
		}
		switch (ch) {
		case '"':
			in_str = 1;
			break;
		case '[':
		case '{':
			if (++depth > max_depth)
				return "JSON nested too deeply (the limit is 64 levels)";
			/* fallthrough */
		case ',':
			if (++values > max_values)
				return "too many JSON values in one request (the limit is 100000)";
			break;
		case ']':
		case '}':
			if (depth)
				depth--;
			break;
		default:
			break;
		}
	}
	return NULL;
}

int
hs_serve_req_parse(const char *line, size_t len, struct hs_serve_req *r, const char **code,
                   char *msg, size_t msglen)
{
	char perr[256] = "";

	memset(r, 0, sizeof(*r));
	if (len == 0 || strspn(line, " \t\r\n") == len)
		return 1;
	if (strlen(line) != len) {
		*code = "parse_error";
		snprintf(msg, msglen, "a request line must not contain NUL bytes");
		return -1;
	}
	/* Bound the tree before yajl builds it: its free recurses once per level,
	 * and every value costs a node. */
	const char *shape = hs_serve_shape_check(line, len, HS_SERVE_MAX_DEPTH, HS_SERVE_MAX_VALUES);
	if (shape) {
		*code = "too_large";
		snprintf(msg, msglen, "%s", shape);
		return -1;
	}
	yajl_val root = yajl_tree_parse(line, perr, sizeof(perr));
	if (!root || !YAJL_IS_OBJECT(root)) {
		perr[strcspn(perr, "\n")] = '\0';
		*code = "parse_error";
		snprintf(msg, msglen, "%s", root ? "a request must be a JSON object"
		                                 : perr[0] ? perr : "malformed JSON");
		yajl_tree_free(root);
		return -1;
	}
	r->root = root;
	r->id = hs_serve_val(root, "id");
	if (r->id && !YAJL_IS_STRING(r->id) && !YAJL_IS_NUMBER(r->id))
		r->id = NULL;
	r->op = hs_serve_str(root, "op");
	if (!r->op) {
		*code = "invalid_request";
		snprintf(msg, msglen, "a request needs an \"op\" string");
		return -1;
	}
	return 0;
}

const char *
hs_serve_str(yajl_val root, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val v = yajl_tree_get(root, path, yajl_t_string);
	return v ? YAJL_GET_STRING(v) : NULL;
}

yajl_val
hs_serve_val(yajl_val root, const char *key)
{
	const char *path[] = { key, NULL };
	return yajl_tree_get(root, path, yajl_t_any);
}

int
hs_serve_true(yajl_val root, const char *key)
{
	yajl_val v = hs_serve_val(root, key);
	return v && YAJL_IS_TRUE(v);
}

int
hs_serve_seconds(yajl_val root, const char *key, int64_t *out)
{
	yajl_val v = hs_serve_val(root, key);
	if (!v)
		return 0;
	if (!YAJL_IS_NUMBER(v))
		return -1;
	double d = YAJL_IS_INTEGER(v) ? (double)YAJL_GET_INTEGER(v) : YAJL_GET_DOUBLE(v);
	if (isnan(d) || d < 0)
		return -1;
	/* A double beyond int64 must not reach the conversion (undefined). */
	*out = d > 1e9 ? (int64_t)1000000000 : (int64_t)d;
	return 0;
}

uint64_t
hs_serve_uint(yajl_val root, const char *key, uint64_t def)
{
	yajl_val v = hs_serve_val(root, key);
	if (!v || !YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) < 0)
		return def;
	return (uint64_t)YAJL_GET_INTEGER(v);
}

int
hs_serve_bytes(yajl_val root, const char *key, const char **buf, size_t *len, void **owned)
{
	char k64[64];
	*owned = NULL;
	snprintf(k64, sizeof(k64), "%s_b64", key);
	const char *b64 = hs_serve_str(root, k64);
	if (b64) {
		size_t n = strlen(b64);
		unsigned char *d = malloc(n / 4 * 3 + 4);
		long got = d ? hs_base64_decode(b64, n, d) : -1;
		if (got < 0) {
			free(d);
			return -1;
		}
		*owned = d;
		*buf = (const char *)d;
		*len = (size_t)got;
		return 1;
	}
	const char *s = hs_serve_str(root, key);
	if (!s)
		return 0;
	*buf = s;
	*len = strlen(s);
	return 1;
}

int
hs_serve_env(yajl_val root, char **kv, size_t max)
{
	yajl_val ev = hs_serve_val(root, "env");
	size_t n = 0;
	if (!ev || !YAJL_IS_OBJECT(ev))
		return 0;
	if (ev->u.object.len > max)
		return -1;
	for (size_t i = 0; i < ev->u.object.len; i++) {
		yajl_val v = ev->u.object.values[i];
		if (!YAJL_IS_STRING(v) || asprintf(&kv[n], "%s=%s", ev->u.object.keys[i], YAJL_GET_STRING(v)) < 0) {
			while (n)
				free(kv[--n]);
			return -1;
		}
		n++;
	}
	return (int)n;
}

int64_t
hs_parse_size(const char *s)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !(v >= 0))
		return -1;
	switch (*end) {
	case 'k': case 'K': v *= 1024; end++; break;
	case 'm': case 'M': v *= 1024 * 1024; end++; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
	case 't': case 'T': v *= 1024.0 * 1024 * 1024 * 1024; end++; break;
	case '\0': break;
	default: return -1;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	/* Beyond 2^62 bytes is no memory size, and must not reach the conversion. */
	return *end || v > 4611686018427387904.0 ? -1 : (int64_t)v;
}

int
hs_serve_spec(yajl_val root, int64_t *memory_bytes, int32_t *cpus_milli, const char **what)
{
	yajl_val mv = hs_serve_val(root, "memory");
	yajl_val cv = hs_serve_val(root, "cpus");
	if (mv) {
		int64_t m = -1;
		if (YAJL_IS_STRING(mv))
			m = hs_parse_size(YAJL_GET_STRING(mv));
		else if (YAJL_IS_INTEGER(mv))
			m = YAJL_GET_INTEGER(mv);
		if (m <= 0) {
			*what = "memory must be a size such as \"512m\" or a number of bytes";
			return -1;
		}
		*memory_bytes = m;
	}
	if (cv) {
		double d = !YAJL_IS_NUMBER(cv) ? -1 : YAJL_IS_INTEGER(cv) ? (double)YAJL_GET_INTEGER(cv)
		                                                         : YAJL_GET_DOUBLE(cv);
		if (!(d > 0 && d <= 4096)) {
			*what = "cpus must be a number above 0 (at most 4096)";
			return -1;
		}
		*cpus_milli = (int32_t)(d * 1000);
	}
	return 0;
}
