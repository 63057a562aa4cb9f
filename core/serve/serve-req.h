/* SPDX-License-Identifier: MIT */
/*
 * serve-req.h - reading one request line of the serve protocol: the JSON
 * object, its id and op, and the typed fields the ops take.  Kept apart
 * from the server so that it can be fuzzed on its own (tests/fuzz).
 */
#ifndef HS_SERVE_REQ_H
#define HS_SERVE_REQ_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

struct hs_serve_req {
	yajl_val root;
	yajl_val id; /* inside root: a string or a number, else NULL */
	const char *op;
};

/* Bounds on one request's JSON, checked before a tree is built. */
#define HS_SERVE_MAX_DEPTH 64
#define HS_SERVE_MAX_VALUES 100000

/*
 * A cheap scan of len bytes of JSON text, counting brackets and commas
 * outside strings: NULL when it nests at most max_depth deep and holds at
 * most max_values containers and members, else a one-line reason.
 */
const char *hs_serve_shape_check(const char *p, size_t len, unsigned max_depth, size_t max_values);

/*
 * Parse one line (len bytes, NUL-terminated).  Returns 0 with r filled (the
 * caller frees r->root with yajl_tree_free), 1 for a blank line, or -1 with
 * an error code from the protocol's list in *code, a one-line message in
 * msg, and r->id set when the id could be read.
 */
int hs_serve_req_parse(const char *line, size_t len, struct hs_serve_req *r, const char **code,
                       char *msg, size_t msglen);

/* The member key of root as a string, or NULL (absent or of another type). */
const char *hs_serve_str(yajl_val root, const char *key);
/* The member key of root, any type, or NULL. */
yajl_val hs_serve_val(yajl_val root, const char *key);
/* 1 when the member is the JSON literal true. */
int hs_serve_true(yajl_val root, const char *key);
/*
 * A number of seconds (timeout): 0 when absent; -1 when not a number, NaN
 * or negative; else clamped to 10^9 and stored in *out.
 */
int hs_serve_seconds(yajl_val root, const char *key, int64_t *out);
/* A non-negative integer member (offset, mode), or def when absent or invalid. */
uint64_t hs_serve_uint(yajl_val root, const char *key, uint64_t def);
/*
 * Bytes from key (UTF-8 text) or key_b64 (base64): *buf is malloc'd when
 * decoded, else points into root.  Returns 1 found, 0 absent, -1 malformed.
 */
int hs_serve_bytes(yajl_val root, const char *key, const char **buf, size_t *len, void **owned);
/*
 * The "env" object as "K=V" strings (at most max, malloc'd into kv).
 * Returns how many, or -1 when a value is not a string or there are too many.
 */
int hs_serve_env(yajl_val root, char **kv, size_t max);

/* "512m", "2g", "1048576" (bytes, k/m/g/t suffixes, optional b) or -1. */
int64_t hs_parse_size(const char *s);
/* open's "memory" and "cpus"; -1 with *what naming the problem. */
int hs_serve_spec(yajl_val root, int64_t *memory_bytes, int32_t *cpus_milli, const char **what);

#endif /* HS_SERVE_REQ_H */
