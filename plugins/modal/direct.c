/*
 * direct.c - direct mode: Modal's gRPC API with the user's own token.
 *
 * open: ClientHello, AppGetOrCreate, ImageGetOrCreate (FROM a registry
 * tag), SandboxCreate (network blocked unless asked), then SandboxGetTaskId
 * until the task runs.  exec: ContainerExec of the wrapped argv,
 * ContainerExecPutInput with stdin and eof, ContainerExecGetOutput streamed
 * from the last batch index seen (so a broken stream resumes without loss or
 * repetition) until the batch carrying the exit code, then
 * ContainerExecWait.  A deadline or cancel kills the command remotely
 * through a second exec, with the client-side deadline behind it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "modal.h"

#define MD_UNARY_MS 30000L
#define MD_MAX_DROPS 20

static uint64_t
now(struct md_env *e)
{
	return e->st->host->now_ms(e->st->host->ctx);
}

/* First string field num of a message, or "" (-1 when malformed). */
static int
get_str(const struct pb_buf *m, uint32_t num, char *out, size_t len)
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

static int32_t
unary(struct md_env *e, const char *method, struct pb_buf *req, struct pb_buf *resp, char *err)
{
	int32_t st = mg_call(&e->g, method, req, resp, NULL, NULL, 0, MD_UNARY_MS, err);
	pb_buf_free(req);
	return st;
}

/* Poll SandboxGetTaskId until the sandbox's task exists (up to two minutes). */
static int32_t
wait_task(struct md_env *e, char *err)
{
	uint64_t until = now(e) + 120000;
	for (;;) {
		struct pb_buf q = { 0 }, r = { 0 };
		pb_str(&q, 1, e->sandbox_id);
		pb_float(&q, 2, 10.0f);
		int32_t st = unary(e, "SandboxGetTaskId", &q, &r, err);
		if (st == HS_OK)
			get_str(&r, 1, e->task_id, sizeof(e->task_id));
		pb_buf_free(&r);
		if (st != HS_OK)
			return st;
		if (e->task_id[0])
			return HS_OK;
		if (now(e) >= until) {
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
	if ((st = unary(e, "ClientHello", &q, &r, err)) != HS_OK)
		goto out;
	char warning[256];
	get_str(&r, 1, warning, sizeof(warning));
	if (warning[0])
		e->st->host->log(e->st->host->ctx, HS_LOG_WARN, "modal: %s", warning);
	if (reattach && e->sandbox_id[0]) {
		/* The recorded sandbox still answers: use it; otherwise create a new one. */
		if (wait_task(e, err) == HS_OK)
			goto out;
		e->sandbox_id[0] = e->task_id[0] = '\0';
	}
	pb_buf_free(&r);
	pb_str(&q, 1, e->app_name);
	pb_str(&q, 2, e->environment);
	pb_uint(&q, 3, 1); /* create if missing */
	if ((st = unary(e, "AppGetOrCreate", &q, &r, err)) != HS_OK)
		goto out;
	get_str(&r, 1, e->app_id, sizeof(e->app_id));
	pb_buf_free(&r);

	snprintf(cmd, sizeof(cmd), "FROM %s", e->image);
	pb_str_rep(&sub, 6, cmd);
	pb_msg(&q, 2, &sub);
	pb_str(&q, 4, e->app_id);
	pb_buf_free(&sub);
	char image_id[128];
	if ((st = unary(e, "ImageGetOrCreate", &q, &r, err)) != HS_OK)
		goto out;
	get_str(&r, 1, image_id, sizeof(image_id));
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
	pb_str(&q, 1, e->app_id);
	pb_msg(&q, 2, &sub);
	pb_str(&q, 3, e->environment);
	if ((st = unary(e, "SandboxCreate", &q, &r, err)) != HS_OK)
		goto out;
	get_str(&r, 1, e->sandbox_id, sizeof(e->sandbox_id));
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
	int32_t st = unary(e, "SandboxTerminate", &q, &r, err);
	pb_buf_free(&r);
	return st == HS_E_NOTFOUND ? HS_OK : st;
}

struct out_ctx {
	const struct hs_exec_req *req;
	uint64_t last;      /* highest batch index delivered */
	int have_exit;
	int32_t exit_code;
	int bad;
};

static int
on_batch(void *ud, const uint8_t *p, size_t n)
{
	struct out_ctx *o = ud;
	struct pb_reader r, ri;
	struct pb_field f, g;
	uint64_t index = 0;
	int has_exit = 0, rc;
	int32_t code = 0;

	/* The index decides whether this batch was seen before a resume. */
	pb_reader_init(&r, p, n);
	while ((rc = pb_next(&r, &f)) > 0) {
		if (f.num == 2 && f.wire == 0)
			index = f.v;
		else if (f.num == 3 && f.wire == 0) {
			has_exit = 1;
			code = (int32_t)f.v;
		}
	}
	if (rc < 0) {
		o->bad = 1;
		return 1;
	}
	if (index && index <= o->last)
		return 0;
	pb_reader_init(&r, p, n);
	while (pb_next(&r, &f) > 0) {
		if (f.num != 1 || f.wire != 2)
			continue;
		int32_t fd = 1;
		const uint8_t *data = NULL;
		size_t len = 0;
		pb_reader_init(&ri, f.p, f.n);
		while ((rc = pb_next(&ri, &g)) > 0) {
			if (g.num == 1 && g.wire == 0)
				fd = (int32_t)g.v;
			else if ((g.num == 2 || g.num == 3) && g.wire == 2) {
				data = g.p;
				len = g.n;
			}
		}
		if (rc < 0) {
			o->bad = 1;
			return 1;
		}
		if (len && (fd == 1 || fd == 2) && o->req->sink.write)
			o->req->sink.write(o->req->sink.ctx, fd, data, len);
	}
	if (index)
		o->last = index;
	if (has_exit) {
		o->have_exit = 1;
		o->exit_code = code;
		return 1;
	}
	return 0;
}

/* Kill the command through a second exec; the caller's cancel flag must not stop it. */
static void
remote_kill(struct md_env *e, const char *pidfile)
{
	struct mg_client g = e->g;
	struct pb_buf q = { 0 }, r = { 0 };
	char err[HS_ERR_MAX];
	g.cancel = NULL;
	pb_str(&q, 1, e->task_id);
	pb_str_rep(&q, 2, "/bin/sh");
	pb_str_rep(&q, 2, "-c");
	pb_str_rep(&q, 2, MD_KILL);
	pb_str_rep(&q, 2, "hs");
	pb_str_rep(&q, 2, pidfile);
	if (mg_call(&g, "ContainerExec", &q, &r, NULL, NULL, 0, 5000, err) != HS_OK)
		e->st->host->log(e->st->host->ctx, HS_LOG_WARN, "modal: cannot kill the command: %s", err);
	pb_buf_free(&q);
	pb_buf_free(&r);
}

/* Send stdin (in 1 MiB messages, then eof) to a started exec. */
static int32_t
put_input(struct md_env *e, const char *exec_id, const void *data, uint64_t len, uint64_t deadline,
          char *err)
{
	struct pb_buf q = { 0 }, r = { 0 }, sub = { 0 };
	uint64_t idx = 1, off = 0;
	int32_t st = HS_OK;
	do {
		uint64_t n = len - off > (1u << 20) ? (1u << 20) : len - off;
		pb_str(&q, 1, exec_id);
		if (n)
			pb_bytes(&sub, 1, (const uint8_t *)data + off, (size_t)n);
		pb_uint(&sub, 2, idx++);
		pb_bool(&sub, 3, off + n >= len);
		pb_msg(&q, 2, &sub);
		pb_buf_free(&sub);
		st = mg_call(&e->g, "ContainerExecPutInput", &q, &r, NULL, NULL, deadline, MD_UNARY_MS, err);
		pb_buf_free(&q);
		pb_buf_free(&r);
		off += n;
	} while (st == HS_OK && off < len);
	return st;
}

/* Write data to a private file in the sandbox (exec of sh and cat); HS_OK when it exited 0. */
static int32_t
put_file(struct md_env *e, const char *path, const char *data, size_t len, uint64_t deadline, char *err)
{
	struct pb_buf q = { 0 }, r = { 0 };
	char exec_id[128];
	int32_t st;
	pb_str(&q, 1, e->task_id);
	pb_str_rep(&q, 2, "/bin/sh");
	pb_str_rep(&q, 2, "-c");
	pb_str_rep(&q, 2, MD_PUTFILE);
	pb_str_rep(&q, 2, "hs");
	pb_str_rep(&q, 2, path);
	if ((st = unary(e, "ContainerExec", &q, &r, err)) != HS_OK)
		goto out;
	get_str(&r, 1, exec_id, sizeof(exec_id));
	pb_buf_free(&r);
	if ((st = put_input(e, exec_id, data, len, deadline, err)) != HS_OK)
		goto out;
	for (int i = 0; i < 10; i++) {
		int completed = 0;
		int32_t code = -1;
		pb_str(&q, 1, exec_id);
		pb_float(&q, 2, 10.0f);
		st = mg_call(&e->g, "ContainerExecWait", &q, &r, NULL, NULL, deadline, 20000, err);
		pb_buf_free(&q);
		if (st != HS_OK)
			goto out;
		struct pb_reader rd;
		struct pb_field f;
		pb_reader_init(&rd, r.data, r.len);
		while (pb_next(&rd, &f) > 0) {
			if (f.num == 1 && f.wire == 0)
				code = (int32_t)f.v;
			else if (f.num == 2 && f.wire == 0)
				completed = f.v != 0;
		}
		pb_buf_free(&r);
		if (completed) {
			if (code != 0) {
				snprintf(err, HS_ERR_MAX, "modal: cannot write '%s' in the sandbox (exit %d)", path, code);
				st = HS_E_IO;
			}
			goto out;
		}
	}
	snprintf(err, HS_ERR_MAX, "modal: writing '%s' in the sandbox did not finish", path);
	st = HS_E_TIMEOUT;
out:
	pb_buf_free(&q);
	pb_buf_free(&r);
	return st;
}

int32_t
md_direct_exec(struct md_env *e, const struct hs_exec_req *req, struct hs_exec_result *res,
               char *err)
{
	struct pb_buf q = { 0 }, r = { 0 }, sub = { 0 };
	char exec_id[128], pidfile[96], envfile[96], secs[32] = "";
	uint64_t deadline = req->deadline_ms > 0 ? now(e) + (uint64_t)req->deadline_ms : 0;
	int32_t st;

	snprintf(pidfile, sizeof(pidfile), "/tmp/.hs-exec-%llu-%llu",
	         (unsigned long long)req->exec_id, (unsigned long long)now(e));
	if (req->deadline_ms > 0)
		snprintf(secs, sizeof(secs), "%lld", MD_BACKSTOP_S(req->deadline_ms));
	snprintf(envfile, sizeof(envfile), "/tmp/.hs-env-%llu-%llu",
	         (unsigned long long)req->exec_id, (unsigned long long)now(e));
	if (req->n_env) {
		size_t len = 0;
		char *script = md_env_script(req, &len, err);
		if (!script)
			return HS_E_INVALID;
		st = put_file(e, envfile, script, len, deadline, err);
		explicit_bzero(script, len);
		free(script);
		if (st != HS_OK)
			goto stop_early;
	}
	pb_str(&q, 1, e->task_id);
	pb_str_rep(&q, 2, "/bin/sh");
	pb_str_rep(&q, 2, "-c");
	pb_str_rep(&q, 2, MD_WRAP);
	pb_str_rep(&q, 2, "hs");
	pb_str_rep(&q, 2, pidfile);
	pb_str_rep(&q, 2, req->cwd ? req->cwd : "");
	pb_str_rep(&q, 2, req->n_env ? envfile : "");
	pb_str_rep(&q, 2, secs);
	for (uint32_t i = 0; i < req->argc; i++)
		pb_str_rep(&q, 2, req->argv[i]);
	if ((st = unary(e, "ContainerExec", &q, &r, err)) != HS_OK)
		goto out;
	get_str(&r, 1, exec_id, sizeof(exec_id));
	pb_buf_free(&r);
	if (!exec_id[0]) {
		snprintf(err, HS_ERR_MAX, "modal ContainerExec: no exec id in the answer");
		st = HS_E_PROTOCOL;
		goto out;
	}
	if ((st = put_input(e, exec_id, req->stdin_data, req->stdin_len, deadline, err)) != HS_OK)
		goto stop;

	struct out_ctx o = { .req = req };
	unsigned drops = 0;
	while (!o.have_exit) {
		pb_str(&q, 1, exec_id);
		pb_float(&q, 2, 50.0f);
		pb_uint(&q, 3, o.last);
		uint64_t before = o.last;
		st = mg_call(&e->g, "ContainerExecGetOutput", &q, NULL, on_batch, &o,
		             deadline ? deadline : now(e) + 600000, 0, err);
		pb_buf_free(&q);
		if (o.bad) {
			snprintf(err, HS_ERR_MAX, "modal ContainerExecGetOutput: malformed batch");
			st = HS_E_PROTOCOL;
			goto out;
		}
		if (st == HS_E_IO || (st == HS_E_TIMEOUT && !deadline)) {
			/* A broken stream: resume from the last batch index seen. */
			if (o.last == before && ++drops > MD_MAX_DROPS)
				goto out;
			e->drops++;
			continue;
		}
		if (st != HS_OK)
			goto stop;
	}
	/* ContainerExecWait confirms the end (and gives the code if the batch did not). */
	pb_str(&q, 1, exec_id);
	pb_float(&q, 2, 5.0f);
	if (mg_call(&e->g, "ContainerExecWait", &q, &r, NULL, NULL, 0, 10000, err) == HS_OK) {
		struct pb_reader rd;
		struct pb_field f;
		pb_reader_init(&rd, r.data, r.len);
		while (pb_next(&rd, &f) > 0)
			if (f.num == 1 && f.wire == 0 && !o.have_exit)
				o.exit_code = (int32_t)f.v;
	}
	pb_buf_free(&q);
	pb_buf_free(&r);
	res->exit_code = o.exit_code < 0 ? 128 + (-o.exit_code & 127) : o.exit_code & 255;
	st = HS_OK;
	goto out;
stop:
	if (st == HS_E_TIMEOUT || st == HS_E_CANCELLED)
		remote_kill(e, pidfile);
stop_early:
	if (st == HS_E_TIMEOUT || st == HS_E_CANCELLED) {
		if (st == HS_E_TIMEOUT) {
			res->timed_out = 1;
			res->exit_code = 124;
		} else {
			res->cancelled = 1;
			res->exit_code = 130;
		}
		err[0] = '\0';
		st = HS_OK;
	}
out:
	pb_buf_free(&q);
	pb_buf_free(&r);
	pb_buf_free(&sub);
	return st;
}
