/* SPDX-License-Identifier: MIT */
/*
 * direct.c - direct mode: Modal's gRPC API with the user's own token.
 *
 * open: ClientHello, AppGetOrCreate, ImageGetOrCreate (FROM a registry
 * tag), SandboxCreate (network blocked unless asked), then SandboxGetTaskId
 * until the task runs.  Commands go through the task's command router
 * (router.c); close: SandboxTerminate.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "modal.h"

#define MD_UNARY_MS 30000L
#define MD_MAX_DROPS 20

uint64_t
md_now(struct md_env *e)
{
	return e->st->host->now_ms(e->st->host->ctx);
}

/* First string field num of a message, or "" (-1 when malformed). */
int
md_get_str(const struct pb_buf *m, uint32_t num, char *out, size_t len)
{
	struct pb_reader r;
	struct pb_field f;
	int rc;
	out[0] = '\0';
	pb_reader_init(&r, m->data, m->len);
	while ((rc = pb_next(&r, &f)) > 0)
		if (f.num == num && f.wire == 2)
			pb_copy_str(&f, out, len);
	return rc;
}

int32_t
md_unary(struct md_env *e, const char *method, struct pb_buf *req, struct pb_buf *resp, char *err)
{
	int32_t st = mg_call(&e->g, method, req, resp, NULL, NULL, 0, MD_UNARY_MS, err);
	pb_buf_free(req);
	return st;
}

/* Poll SandboxGetTaskId until the sandbox's task exists (up to two minutes). */
static int32_t
wait_task(struct md_env *e, char *err)
{
	uint64_t until = md_now(e) + 120000;
	for (;;) {
		struct pb_buf q = { 0 }, r = { 0 };
		pb_str(&q, 1, e->sandbox_id);
		pb_float(&q, 2, 10.0f);
		int32_t st = md_unary(e, "SandboxGetTaskId", &q, &r, err);
		if (st == HS_OK)
			md_get_str(&r, 1, e->task_id, sizeof(e->task_id));
		pb_buf_free(&r);
		if (st != HS_OK)
			return st;
		if (e->task_id[0])
			return HS_OK;
		if (md_now(e) >= until) {
			snprintf(err, HS_ERR_MAX, "modal sandbox '%s' did not start within 120 s", e->sandbox_id);
			return HS_E_TIMEOUT;
		}
		struct timespec ts = { 0, 500 * 1000000L };
		nanosleep(&ts, NULL);
	}
}

int32_t
md_direct_open(struct md_env *e, int reattach, char *err)
{
	struct pb_buf q = { 0 }, r = { 0 }, sub = { 0 }, sub2 = { 0 };
	char cmd[300];
	int32_t st;

	/* ClientHello checks the token and the client version before anything is created. */
	if ((st = md_unary(e, "ClientHello", &q, &r, err)) != HS_OK)
		goto out;
	char warning[256];
	md_get_str(&r, 1, warning, sizeof(warning));
	if (warning[0])
		e->st->host->log(e->st->host->ctx, HS_LOG_WARN, "modal: %s", warning);
	if (reattach && e->sandbox_id[0]) {
		/* The recorded sandbox still answers: use it; otherwise create a new one. */
		if ((st = wait_task(e, err)) == HS_OK)
			goto out;
		if (e->attach_only) {
			st = md_attach_gone(e, st, err);
			goto out;
		}
		e->sandbox_id[0] = e->task_id[0] = '\0';
	}
	pb_buf_free(&r);
	pb_str(&q, 1, e->app_name);
	pb_str(&q, 2, e->environment);
	pb_uint(&q, 3, 1); /* create if missing */
	if ((st = md_unary(e, "AppGetOrCreate", &q, &r, err)) != HS_OK)
		goto out;
	md_get_str(&r, 1, e->app_id, sizeof(e->app_id));
	pb_buf_free(&r);

	snprintf(cmd, sizeof(cmd), "FROM %s", e->image);
	pb_str_rep(&sub, 6, cmd);
	pb_msg(&q, 2, &sub);
	pb_str(&q, 4, e->app_id);
	pb_buf_free(&sub);
	char image_id[128];
	if ((st = md_unary(e, "ImageGetOrCreate", &q, &r, err)) != HS_OK)
		goto out;
	md_get_str(&r, 1, image_id, sizeof(image_id));
	pb_buf_free(&r);

	/* The sandbox idles; every command is an exec into it. */
	pb_str_rep(&sub, 1, "sleep");
	pb_str_rep(&sub, 1, "infinity");
	pb_str(&sub, 3, image_id);
	pb_uint(&sub2, 2, e->memory_mb);
	pb_uint(&sub2, 3, e->milli_cpu);
	pb_msg(&sub, 5, &sub2);
	pb_uint(&sub, 7, e->timeout_secs);
	pb_bool(&sub, 11, e->block_network);
	if (e->cidrs && e->n_cidrs) {
		/* network_access (22): type ALLOWLIST (3), allowed_cidrs (2). */
		struct pb_buf na = { 0 };
		pb_uint(&na, 1, 3);
		for (uint32_t i = 0; i < e->n_cidrs; i++)
			pb_str_rep(&na, 2, e->cidrs[i]);
		pb_msg(&sub, 22, &na);
		pb_buf_free(&na);
	}
	pb_str(&q, 1, e->app_id);
	pb_msg(&q, 2, &sub);
	pb_str(&q, 3, e->environment);
	if ((st = md_unary(e, "SandboxCreate", &q, &r, err)) != HS_OK)
		goto out;
	md_get_str(&r, 1, e->sandbox_id, sizeof(e->sandbox_id));
	if (!e->sandbox_id[0] || !e->app_id[0] || !image_id[0]) {
		snprintf(err, HS_ERR_MAX, "modal: the API returned an empty app, image or sandbox id");
		st = HS_E_PROTOCOL;
		goto out;
	}
	st = wait_task(e, err);
out:
	pb_buf_free(&q);
	pb_buf_free(&r);
	pb_buf_free(&sub);
	pb_buf_free(&sub2);
	return st;
}

int32_t
md_direct_terminate(struct md_env *e, char *err)
{
	struct pb_buf q = { 0 }, r = { 0 };
	if (!e->sandbox_id[0])
		return HS_OK;
	pb_str(&q, 1, e->sandbox_id);
	int32_t st = md_unary(e, "SandboxTerminate", &q, &r, err);
	pb_buf_free(&r);
	return st == HS_E_NOTFOUND ? HS_OK : st;
}

