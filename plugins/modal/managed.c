/* SPDX-License-Identifier: MIT */
/*
 * managed.c - managed mode: a gateway's REST API (JSON over HTTPS) holds the
 * Modal account; the user holds only a gateway token.  The contract is in
 * hs-modal(7):
 *
 *   POST   /v1/sandboxes                        (Idempotency-Key) -> {"id"}
 *   GET    /v1/sandboxes/ID                                       -> {"id","state"}
 *   POST   /v1/sandboxes/ID/execs               {"argv","stdin_b64"} -> {"id"}
 *   GET    /v1/sandboxes/ID/execs/EID/output?offset=N&wait_ms=M
 *          -> {"chunks":[{"fd","data_b64"}],"next_offset","done","exit_code"}
 *   POST   /v1/sandboxes/ID/execs/EID/cancel
 *   DELETE /v1/sandboxes/ID
 *
 * Output is polled from an offset, so a lost answer is simply asked again.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "modal.h"

#define MM_MAX_BODY (64u * 1024u * 1024u)

struct resp {
	char *p;
	size_t n;
	int over;
};

static size_t
on_body(char *p, size_t sz, size_t nm, void *ud)
{
	struct resp *r = ud;
	size_t n = sz * nm;
	if (r->n + n > MM_MAX_BODY) {
		r->over = 1;
		return 0;
	}
	char *np = realloc(r->p, r->n + n + 1);
	if (!np)
		return 0;
	r->p = np;
	memcpy(r->p + r->n, p, n);
	r->n += n;
	r->p[r->n] = '\0';
	return n;
}

struct prog {
	struct md_env *e;
	int use_cancel;
	uint64_t deadline;
	int timed_out, cancelled;
};

static int
on_prog(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	(void)a, (void)b, (void)c, (void)d;
	struct prog *p = ud;
	if (p->use_cancel && __atomic_load_n(&p->e->cancel, __ATOMIC_SEQ_CST)) {
		p->cancelled = 1;
		return 1;
	}
	if (p->deadline && p->e->st->host->now_ms(p->e->st->host->ctx) >= p->deadline) {
		p->timed_out = 1;
		return 1;
	}
	return 0;
}

/*
 * One request; *out gets the parsed JSON body (may be NULL for an empty one).
 * deadline: absolute now_ms (0: 30 s).  Returns HS_OK for 2xx.
 */
static int32_t
request(struct md_env *e, const char *method, const char *path, const char *json, int use_cancel,
        uint64_t deadline, yajl_val *out, long *code_out, char *err)
{
	struct resp r = { 0 };
	struct curl_slist *h = NULL;
	char url[1024], hdr[700];
	int32_t st = HS_E_IO;
	struct prog pg = { e, use_cancel, deadline, 0, 0 };

	if (out)
		*out = NULL;
	if (!deadline)
		pg.deadline = e->st->host->now_ms(e->st->host->ctx) + 30000;
	snprintf(url, sizeof(url), "%s%s", e->cred.id, path);
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", e->cred.secret);
	h = curl_slist_append(h, hdr);
	explicit_bzero(hdr, sizeof(hdr));
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Accept: application/json");
	h = curl_slist_append(h, "Expect:");
	if (strcmp(method, "POST") == 0 && strcmp(path, "/v1/sandboxes") == 0) {
		snprintf(hdr, sizeof(hdr), "Idempotency-Key: hs-%s", e->env_name);
		h = curl_slist_append(h, hdr);
	}
	CURL *cu = curl_easy_init();
	if (!cu || !h) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		st = HS_E_NOMEM;
		goto out;
	}
	curl_easy_setopt(cu, CURLOPT_URL, url);
	curl_easy_setopt(cu, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(cu, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
	if (json)
		curl_easy_setopt(cu, CURLOPT_POSTFIELDS, json);
	else if (strcmp(method, "POST") == 0)
		curl_easy_setopt(cu, CURLOPT_POSTFIELDS, "{}");
	curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(cu, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(cu, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(cu, CURLOPT_XFERINFOFUNCTION, on_prog);
	curl_easy_setopt(cu, CURLOPT_XFERINFODATA, &pg);
	curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	uint64_t t0 = e->st->host->now_ms(e->st->host->ctx);
	curl_easy_setopt(cu, CURLOPT_TIMEOUT_MS, pg.deadline > t0 ? (long)(pg.deadline - t0) : 1L);
	CURLcode rc = curl_easy_perform(cu);
	if (rc == CURLE_OPERATION_TIMEDOUT)
		pg.timed_out = 1;
	long code = 0;
	curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &code);
	if (code_out)
		*code_out = code;
	if (pg.cancelled) {
		st = HS_E_CANCELLED;
		snprintf(err, HS_ERR_MAX, "gateway %s %s: cancelled", method, path);
	} else if (pg.timed_out) {
		st = HS_E_TIMEOUT;
		snprintf(err, HS_ERR_MAX, "gateway %s %s: deadline passed", method, path);
	} else if (rc != CURLE_OK) {
		snprintf(err, HS_ERR_MAX, "gateway %s: cannot reach %s: %s", method, e->cred.id,
		         r.over ? "answer too large" : curl_easy_strerror(rc));
	} else if (code < 200 || code > 299) {
		char ebuf[128] = "";
		yajl_val v = r.p ? yajl_tree_parse(r.p, NULL, 0) : NULL;
		const char *ep[] = { "error", NULL };
		yajl_val m = v ? yajl_tree_get(v, ep, yajl_t_string) : NULL;
		if (m)
			snprintf(ebuf, sizeof(ebuf), ": %s", YAJL_GET_STRING(m));
		yajl_tree_free(v);
		snprintf(err, HS_ERR_MAX, "gateway %s %s: HTTP %ld%s", method, path, code, ebuf);
		st = code == 401 || code == 403 ? HS_E_AUTH : code == 404 ? HS_E_NOTFOUND
		   : code >= 500 ? HS_E_IO : HS_E_PROTOCOL;
	} else {
		st = HS_OK;
		if (out && r.p && r.n) {
			char perr[128];
			*out = yajl_tree_parse(r.p, perr, sizeof(perr));
			if (!*out) {
				snprintf(err, HS_ERR_MAX, "gateway %s %s: invalid JSON: %s", method, path, perr);
				st = HS_E_PROTOCOL;
			}
		}
	}
out:
	if (cu)
		curl_easy_cleanup(cu);
	for (struct curl_slist *i = h; i; i = i->next)
		explicit_bzero(i->data, strlen(i->data));
	curl_slist_free_all(h);
	free(r.p);
	return st;
}

static const char *
jstr(yajl_val v, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val s = v ? yajl_tree_get(v, path, yajl_t_string) : NULL;
	return s ? YAJL_GET_STRING(s) : NULL;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *
b64_encode(const uint8_t *p, size_t n)
{
	char *o = malloc((n + 2) / 3 * 4 + 1), *q = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
		             (i + 2 < n ? p[i + 2] : 0);
		*q++ = b64[v >> 18];
		*q++ = b64[(v >> 12) & 63];
		*q++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		*q++ = i + 2 < n ? b64[v & 63] : '=';
	}
	*q = '\0';
	return o;
}

/* Decode in place; returns the length, or -1 when s is not base64. */
static long
b64_decode(char *s)
{
	size_t n = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (char *p = s; *p && *p != '='; p++) {
		const char *k = strchr(b64, *p);
		if (!k || !*p)
			return -1;
		acc = acc << 6 | (uint32_t)(k - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			s[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	return (long)n;
}

static char *
gen_done(yajl_gen g)
{
	const unsigned char *buf;
	size_t len;
	char *s = NULL;
	if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok)
		s = strndup((const char *)buf, len);
	yajl_gen_free(g);
	return s;
}

static void
gkv(yajl_gen g, const char *k, const char *v)
{
	yajl_gen_string(g, (const unsigned char *)k, strlen(k));
	yajl_gen_string(g, (const unsigned char *)v, strlen(v));
}

static void
gki(yajl_gen g, const char *k, long long v)
{
	yajl_gen_string(g, (const unsigned char *)k, strlen(k));
	yajl_gen_integer(g, v);
}

int32_t
md_managed_open(struct md_env *e, int reattach, char *err)
{
	char path[300];
	yajl_val v = NULL;
	int32_t st;

	if (reattach) {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s", e->sandbox_id);
		st = request(e, "GET", path, NULL, 0, 0, &v, NULL, err);
		const char *state = jstr(v, "state");
		int alive = st == HS_OK && (!state || strcmp(state, "running") == 0);
		yajl_tree_free(v);
		if (alive)
			return HS_OK;
		if (e->attach_only)
			return md_attach_gone(e, st == HS_OK ? HS_E_LOST : st, err);
		if (st != HS_OK && st != HS_E_NOTFOUND)
			return st;
		e->sandbox_id[0] = '\0';
	}
	yajl_gen g = yajl_gen_alloc(NULL);
	yajl_gen_map_open(g);
	gkv(g, "name", e->env_name);
	gkv(g, "image", e->image);
	gki(g, "timeout_secs", e->timeout_secs);
	gki(g, "cpu_milli", e->milli_cpu);
	gki(g, "memory_mb", e->memory_mb);
	yajl_gen_string(g, (const unsigned char *)"block_network", 13);
	yajl_gen_bool(g, e->block_network);
	if (e->cidrs && e->n_cidrs) {
		yajl_gen_string(g, (const unsigned char *)"cidr_allowlist", 14);
		yajl_gen_array_open(g);
		for (uint32_t i = 0; i < e->n_cidrs; i++)
			yajl_gen_string(g, (const unsigned char *)e->cidrs[i], strlen(e->cidrs[i]));
		yajl_gen_array_close(g);
	}
	yajl_gen_map_close(g);
	char *body = gen_done(g);
	st = request(e, "POST", "/v1/sandboxes", body, 0, 0, &v, NULL, err);
	free(body);
	const char *id = jstr(v, "id");
	if (st == HS_OK && (!id || !id[0] || strlen(id) >= sizeof(e->sandbox_id) || strchr(id, '/'))) {
		snprintf(err, HS_ERR_MAX, "gateway POST /v1/sandboxes: no valid sandbox id in the answer");
		st = HS_E_PROTOCOL;
	}
	if (st == HS_OK)
		snprintf(e->sandbox_id, sizeof(e->sandbox_id), "%s", id);
	yajl_tree_free(v);
	return st;
}

int32_t
md_managed_terminate(struct md_env *e, char *err)
{
	char path[300];
	if (!e->sandbox_id[0])
		return HS_OK;
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", e->sandbox_id);
	int32_t st = request(e, "DELETE", path, NULL, 0, 0, NULL, NULL, err);
	return st == HS_E_NOTFOUND ? HS_OK : st;
}

/* Run argv with data on its stdin; *code gets its exit code. */
static int32_t
run_with_stdin(struct md_env *e, const char *const *argv, size_t argc, const char *data, size_t len,
               uint64_t deadline, int32_t *xcode, char *err)
{
	char p[600];
	yajl_val v = NULL;
	yajl_gen g = yajl_gen_alloc(NULL);
	yajl_gen_map_open(g);
	yajl_gen_string(g, (const unsigned char *)"argv", 4);
	yajl_gen_array_open(g);
	for (size_t i = 0; i < argc; i++)
		yajl_gen_string(g, (const unsigned char *)argv[i], strlen(argv[i]));
	yajl_gen_array_close(g);
	char *in = b64_encode((const uint8_t *)data, len);
	if (in) {
		gkv(g, "stdin_b64", in);
		explicit_bzero(in, strlen(in));
	}
	free(in);
	yajl_gen_map_close(g);
	char *body = gen_done(g);
	if (!body) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/execs", e->sandbox_id);
	int32_t st = request(e, "POST", p, body, 1, deadline, &v, NULL, err);
	explicit_bzero(body, strlen(body));
	free(body);
	const char *id = jstr(v, "id");
	char eid[128] = "";
	if (st == HS_OK && id && id[0] && strlen(id) < sizeof(eid) && !strchr(id, '/'))
		snprintf(eid, sizeof(eid), "%s", id);
	yajl_tree_free(v);
	if (st != HS_OK)
		return st;
	if (!eid[0]) {
		snprintf(err, HS_ERR_MAX, "gateway: no valid exec id in the answer");
		return HS_E_PROTOCOL;
	}
	for (int i = 0; i < 10; i++) {
		snprintf(p, sizeof(p), "/v1/sandboxes/%s/execs/%s/output?offset=0&wait_ms=10000", e->sandbox_id, eid);
		v = NULL;
		st = request(e, "GET", p, NULL, 1, deadline, &v, NULL, err);
		if (st != HS_OK)
			return st;
		const char *dp[] = { "done", NULL }, *xp[] = { "exit_code", NULL };
		yajl_val done = yajl_tree_get(v, dp, yajl_t_any);
		yajl_val code = yajl_tree_get(v, xp, yajl_t_number);
		int fin = done && YAJL_IS_TRUE(done);
		long long x = code && YAJL_IS_INTEGER(code) ? YAJL_GET_INTEGER(code) : -1;
		yajl_tree_free(v);
		if (fin) {
			*xcode = (int32_t)x;
			return HS_OK;
		}
	}
	snprintf(err, HS_ERR_MAX, "modal: a setup command in the sandbox did not finish");
	return HS_E_TIMEOUT;
}

/* Write data to a private file in the sandbox through an exec of sh and cat. */
static int32_t
put_file(struct md_env *e, const char *path, const char *data, size_t len, uint64_t deadline,
         char *err)
{
	const char *argv[] = { "/bin/sh", "-c", MD_PUTFILE, "hs", path };
	int32_t code = -1, st = run_with_stdin(e, argv, 5, data, len, deadline, &code, err);
	if (st == HS_OK && code != 0) {
		snprintf(err, HS_ERR_MAX, "modal: cannot write '%s' in the sandbox (exit %d)", path, code);
		st = HS_E_IO;
	}
	return st;
}

int32_t
md_managed_run_stdin(struct md_env *e, const char *const *argv, size_t argc, const void *data,
                     size_t len, int32_t *code, char *err)
{
	return run_with_stdin(e, argv, argc, data, len, e->st->host->now_ms(e->st->host->ctx) + 120000,
	                      code, err);
}

/*
 * Under the one-shot runner the gateway's cancel (a kill of the exec's
 * process group) would kill the runner before it kills the tree: first kill
 * the command through a second exec, so the runner kills what is left and
 * exits, and wait (5 s at most) for the exec to end.
 */
static void
runner_kill(struct md_env *e, const char *eid, const char *pidfile)
{
	char p[600], e2[HS_ERR_MAX];
	const char *argv[] = { "/bin/sh", "-c", MD_KILL, "hs", pidfile };
	uint64_t until = e->st->host->now_ms(e->st->host->ctx) + 5000;
	int32_t code = -1;
	/* The caller's cancel must not stop the kill itself. */
	__atomic_store_n(&e->cancel, 0, __ATOMIC_SEQ_CST);
	if (run_with_stdin(e, argv, 5, "", 0, until, &code, e2) != HS_OK) {
		e->st->host->log(e->st->host->ctx, HS_LOG_WARN, "modal: cannot kill the command: %s", e2);
		return;
	}
	long long off = 0;
	while (e->st->host->now_ms(e->st->host->ctx) < until) {
		yajl_val v = NULL;
		snprintf(p, sizeof(p), "/v1/sandboxes/%s/execs/%s/output?offset=%lld&wait_ms=1000", e->sandbox_id,
		         eid, off);
		if (request(e, "GET", p, NULL, 0, until, &v, NULL, e2) != HS_OK) {
			yajl_tree_free(v);
			return;
		}
		const char *dp[] = { "done", NULL }, *np[] = { "next_offset", NULL };
		yajl_val done = yajl_tree_get(v, dp, yajl_t_any);
		yajl_val next = yajl_tree_get(v, np, yajl_t_number);
		int fin = done && YAJL_IS_TRUE(done);
		if (next && YAJL_IS_INTEGER(next) && YAJL_GET_INTEGER(next) > off)
			off = YAJL_GET_INTEGER(next); /* output after the kill is dropped */
		yajl_tree_free(v);
		if (fin)
			return;
	}
}

int32_t
md_managed_exec(struct md_env *e, const struct hs_exec_req *req, struct hs_exec_result *res,
                char *err)
{
	char path[600], eid[128], pidfile[96], envfile[96];
	uint64_t deadline = req->deadline_ms > 0
	                        ? e->st->host->now_ms(e->st->host->ctx) + (uint64_t)req->deadline_ms : 0;
	yajl_val v = NULL;
	int32_t st;

	uint64_t t = e->st->host->now_ms(e->st->host->ctx);
	snprintf(pidfile, sizeof(pidfile), "/tmp/.hs-exec-%llu-%llu", (unsigned long long)req->exec_id,
	         (unsigned long long)t);
	snprintf(envfile, sizeof(envfile), "/tmp/.hs-env-%llu-%llu", (unsigned long long)req->exec_id,
	         (unsigned long long)t);
	eid[0] = '\0';
	path[0] = '\0';
	if (req->n_env) {
		size_t len = 0;
		char *script = md_env_script(req, &len, err);
		if (!script)
			return HS_E_INVALID;
		st = put_file(e, envfile, script, len, deadline, err);
		explicit_bzero(script, len);
		free(script);
		if (st != HS_OK)
			goto stop;
	}
	yajl_gen g = yajl_gen_alloc(NULL);
	yajl_gen_map_open(g);
	yajl_gen_string(g, (const unsigned char *)"argv", 4);
	yajl_gen_array_open(g);
	char secs[32] = "", dl[32] = "";
	if (e->runner[0]) {
		/* Under the one-shot runner: it kills the whole tree at the deadline. */
		const char *rp[] = { e->runner, "--exec", "--grace-ms", "1000" };
		for (size_t i = 0; i < 4; i++)
			yajl_gen_string(g, (const unsigned char *)rp[i], strlen(rp[i]));
		if (req->deadline_ms > 0) {
			snprintf(dl, sizeof(dl), "%lld", (long long)req->deadline_ms);
			yajl_gen_string(g, (const unsigned char *)"--deadline-ms", 13);
			yajl_gen_string(g, (const unsigned char *)dl, strlen(dl));
		}
		yajl_gen_string(g, (const unsigned char *)"--", 2);
	} else if (req->deadline_ms > 0) {
		snprintf(secs, sizeof(secs), "%lld", MD_BACKSTOP_S(req->deadline_ms));
	}
	const char *pre[] = { "/bin/sh", "-c", MD_WRAP, "hs", pidfile, req->cwd ? req->cwd : "",
		              req->n_env ? envfile : "", secs };
	for (size_t i = 0; i < 8; i++)
		yajl_gen_string(g, (const unsigned char *)pre[i], strlen(pre[i]));
	for (uint32_t i = 0; i < req->argc; i++)
		yajl_gen_string(g, (const unsigned char *)req->argv[i], strlen(req->argv[i]));
	yajl_gen_array_close(g);
	char *in = b64_encode(req->stdin_data ? req->stdin_data : (const void *)"", req->stdin_len);
	if (in)
		gkv(g, "stdin_b64", in);
	free(in);
	yajl_gen_map_close(g);
	char *body = gen_done(g);
	if (!body) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/execs", e->sandbox_id);
	st = request(e, "POST", path, body, 1, deadline, &v, NULL, err);
	free(body);
	const char *id = jstr(v, "id");
	if (st == HS_OK && (!id || !id[0] || strlen(id) >= sizeof(eid) || strchr(id, '/'))) {
		snprintf(err, HS_ERR_MAX, "gateway: no valid exec id in the answer");
		st = HS_E_PROTOCOL;
	}
	if (st == HS_OK)
		snprintf(eid, sizeof(eid), "%s", id);
	yajl_tree_free(v);
	v = NULL;
	if (st != HS_OK)
		goto stop;

	long long offset = 0;
	unsigned errors = 0;
	for (;;) {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/execs/%s/output?offset=%lld&wait_ms=20000",
		         e->sandbox_id, eid, offset);
		st = request(e, "GET", path, NULL, 1, deadline ? deadline : e->st->host->now_ms(e->st->host->ctx) + 60000,
		             &v, NULL, err);
		if (st == HS_E_IO || (st == HS_E_TIMEOUT && !deadline)) {
			/* Lost answer: ask again from the same offset. */
			yajl_tree_free(v);
			v = NULL;
			if (++errors > 20)
				goto out;
			e->drops++;
			continue;
		}
		if (st != HS_OK)
			goto stop;
		const char *cp[] = { "chunks", NULL }, *np[] = { "next_offset", NULL },
		           *dp[] = { "done", NULL }, *xp[] = { "exit_code", NULL };
		yajl_val chunks = yajl_tree_get(v, cp, yajl_t_array);
		yajl_val next = yajl_tree_get(v, np, yajl_t_number);
		yajl_val done = yajl_tree_get(v, dp, yajl_t_any);
		yajl_val code = yajl_tree_get(v, xp, yajl_t_number);
		if (!next || !YAJL_IS_INTEGER(next) || YAJL_GET_INTEGER(next) < offset) {
			snprintf(err, HS_ERR_MAX, "gateway output: missing or backward next_offset");
			st = HS_E_PROTOCOL;
			goto out;
		}
		for (size_t i = 0; chunks && i < YAJL_GET_ARRAY(chunks)->len; i++) {
			yajl_val c = YAJL_GET_ARRAY(chunks)->values[i];
			const char *fp[] = { "fd", NULL };
			yajl_val fd = yajl_tree_get(c, fp, yajl_t_number);
			const char *data = jstr(c, "data_b64");
			if (!fd || !data)
				continue;
			char *d = strdup(data);
			long n = d ? b64_decode(d) : -1;
			if (n < 0) {
				free(d);
				snprintf(err, HS_ERR_MAX, "gateway output: bad base64");
				st = HS_E_PROTOCOL;
				goto out;
			}
			int32_t s = (int32_t)YAJL_GET_INTEGER(fd);
			if (n && (s == 1 || s == 2) && req->sink.write)
				req->sink.write(req->sink.ctx, s, d, (uint64_t)n);
			free(d);
		}
		offset = YAJL_GET_INTEGER(next);
		if (done && YAJL_IS_TRUE(done)) {
			long long x = code && YAJL_IS_INTEGER(code) ? YAJL_GET_INTEGER(code) : 255;
			res->exit_code = x < 0 ? 128 + (int32_t)(-x & 127) : (int32_t)(x & 255);
			st = HS_OK;
			err[0] = '\0'; /* a retried poll may have left a message */
			goto out;
		}
		yajl_tree_free(v);
		v = NULL;
	}
stop:
	if (st == HS_E_TIMEOUT || st == HS_E_CANCELLED) {
		char e2[HS_ERR_MAX];
		if (eid[0] && e->runner[0])
			runner_kill(e, eid, pidfile);
		if (eid[0]) {
			snprintf(path, sizeof(path), "/v1/sandboxes/%s/execs/%s/cancel", e->sandbox_id, eid);
			if (request(e, "POST", path, NULL, 0, 0, NULL, NULL, e2) != HS_OK)
				e->st->host->log(e->st->host->ctx, HS_LOG_WARN, "modal: cannot cancel: %s", e2);
		}
		res->timed_out = st == HS_E_TIMEOUT;
		res->cancelled = st == HS_E_CANCELLED;
		res->exit_code = st == HS_E_TIMEOUT ? 124 : 130;
		err[0] = '\0';
		st = HS_OK;
	}
out:
	yajl_tree_free(v);
	return st;
}
