/* SPDX-License-Identifier: MIT */
/*
 * router.c - direct mode commands through the task's command router.
 *
 * TaskGetCommandRouterAccess (on the API) gives a URL and a JWT; the router
 * is then called with "authorization: Bearer JWT": TaskExecStart (an exec id
 * chosen here, the wrapped argv, a timeout_secs backstop inside the task),
 * TaskExecStdinWrite (from an offset, then eof), TaskExecStdioRead for
 * stdout and stderr at once (two readers, each resuming from its byte
 * offset after a broken stream, so nothing is lost or repeated), and
 * TaskExecWait for the exit status.  A deadline or cancel kills the command
 * through a second exec of the kill wrapper, with the client's own deadline
 * behind it.  The JWT is refreshed when it is old or refused.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modal.h"

#define RT_SERVICE "modal.task_command_router.TaskCommandRouter"
#define RT_UNARY_MS 30000L
#define RT_REFRESH_MS 300000u
#define RT_MAX_DROPS 20

static int32_t
router_access(struct md_env *e, char *err)
{
	struct pb_buf q = { 0 }, r = { 0 };
	char url[512];
	pb_str(&q, 1, e->task_id);
	int32_t st = md_unary(e, "TaskGetCommandRouterAccess", &q, &r, err);
	if (st == HS_OK) {
		md_get_str(&r, 1, e->r.bearer, sizeof(e->r.bearer));
		md_get_str(&r, 2, url, sizeof(url));
		if (!e->r.bearer[0] || !md_url_ok(url)) {
			snprintf(err, HS_ERR_MAX, "modal TaskGetCommandRouterAccess: %s",
			         e->r.bearer[0] ? "the router URL is not https (nor loopback)" : "no token");
			st = HS_E_PROTOCOL;
		} else {
			snprintf(e->r.base, sizeof(e->r.base), "%s", url);
			size_t l = strlen(e->r.base);
			while (l && e->r.base[l - 1] == '/')
				e->r.base[--l] = '\0';
			e->r.service = RT_SERVICE;
			e->r.cancel = &e->cancel;
			e->r.now_ms = e->g.now_ms;
			e->r.now_ctx = e->g.now_ctx;
			e->router_at = md_now(e);
		}
	}
	explicit_bzero(r.data, r.len);
	pb_buf_free(&r);
	return st;
}

/* A unary router call; a refused JWT is renewed once.  req is freed. */
static int32_t
rcall(struct md_env *e, const char *method, struct pb_buf *req, struct pb_buf *resp,
      uint64_t deadline, char *err)
{
	int32_t st = mg_call(&e->r, method, req, resp, NULL, NULL, deadline, RT_UNARY_MS, err);
	if (st == HS_E_AUTH && router_access(e, err) == HS_OK)
		st = mg_call(&e->r, method, req, resp, NULL, NULL, deadline, RT_UNARY_MS, err);
	pb_buf_free(req);
	return st;
}

static int32_t
start(struct md_env *e, const char *exec_id, const char *const *argv, size_t argc,
      uint32_t timeout_secs, uint64_t deadline, char *err)
{
	struct pb_buf q = { 0 }, r = { 0 };
	pb_str(&q, 1, e->task_id);
	pb_str(&q, 2, exec_id);
	for (size_t i = 0; i < argc; i++)
		pb_str_rep(&q, 3, argv[i]);
	pb_uint(&q, 4, 1);
	pb_uint(&q, 5, 1);
	if (timeout_secs)
		pb_varint(&q, 6, timeout_secs);
	int32_t st = rcall(e, "TaskExecStart", &q, &r, deadline, err);
	pb_buf_free(&r);
	return st;
}

static int32_t
stdin_write(struct md_env *e, const char *exec_id, const void *data, uint64_t len, uint64_t deadline,
            char *err)
{
	uint64_t off = 0;
	int32_t st;
	do {
		struct pb_buf q = { 0 }, r = { 0 };
		uint64_t n = len - off > (1u << 20) ? (1u << 20) : len - off;
		pb_str(&q, 1, e->task_id);
		pb_str(&q, 2, exec_id);
		pb_uint(&q, 3, off);
		if (n)
			pb_bytes(&q, 4, (const uint8_t *)data + off, (size_t)n);
		pb_bool(&q, 5, off + n >= len);
		st = rcall(e, "TaskExecStdinWrite", &q, &r, deadline, err);
		pb_buf_free(&r);
		off += n;
	} while (st == HS_OK && off < len);
	return st;
}

/* TaskExecWait: *code set to the exit code (128+N for signal N). */
static int32_t
wait_exit(struct md_env *e, const char *exec_id, uint64_t deadline, int32_t *code, char *err)
{
	struct pb_buf q = { 0 }, r = { 0 };
	struct pb_reader rd;
	struct pb_field f;
	int got = 0;
	pb_str(&q, 1, e->task_id);
	pb_str(&q, 2, exec_id);
	int32_t st = rcall(e, "TaskExecWait", &q, &r, deadline ? deadline : md_now(e) + 3600000, err);
	if (st == HS_OK) {
		pb_reader_init(&rd, r.data, r.len);
		while (pb_next(&rd, &f) > 0) {
			if (f.num == 1 && f.wire == 0) {
				*code = (int32_t)f.v & 255;
				got = 1;
			} else if (f.num == 2 && f.wire == 0) {
				*code = 128 + ((int32_t)f.v & 127);
				got = 1;
			}
		}
		if (!got) {
			snprintf(err, HS_ERR_MAX, "modal TaskExecWait: no exit status in the answer");
			st = HS_E_PROTOCOL;
		}
	}
	pb_buf_free(&r);
	return st;
}

/* One output stream, read from its offset until the end, resumed after breaks. */
struct reader {
	struct md_env *e;
	const struct hs_exec_req *req;
	pthread_mutex_t *lock;
	const char *exec_id;
	int fd;            /* 0 stdout, 1 stderr (the router's numbering) */
	uint64_t offset;
	uint64_t deadline;
	unsigned drops;
	int32_t st;
	char err[HS_ERR_MAX];
};

static int
on_chunk(void *ud, const uint8_t *p, size_t n)
{
	struct reader *rd = ud;
	struct pb_reader r;
	struct pb_field f;
	int rc;
	pb_reader_init(&r, p, n);
	while ((rc = pb_next(&r, &f)) > 0) {
		if (f.num != 1 || f.wire != 2 || !f.n)
			continue;
		pthread_mutex_lock(rd->lock);
		if (rd->req->sink.write)
			rd->req->sink.write(rd->req->sink.ctx, rd->fd + 1, f.p, f.n);
		pthread_mutex_unlock(rd->lock);
		rd->offset += f.n;
	}
	return rc < 0;
}

static void *
read_stream(void *ud)
{
	struct reader *rd = ud;
	for (;;) {
		struct pb_buf q = { 0 };
		uint64_t before = rd->offset;
		pb_str(&q, 1, rd->e->task_id);
		pb_str(&q, 2, rd->exec_id);
		pb_uint(&q, 3, rd->offset);
		pb_uint(&q, 4, (uint64_t)rd->fd);
		rd->st = mg_call(&rd->e->r, "TaskExecStdioRead", &q, NULL, on_chunk, rd,
		                 rd->deadline ? rd->deadline : md_now(rd->e) + 3600000, 0, rd->err);
		pb_buf_free(&q);
		if (rd->st != HS_E_IO)
			break;
		/* A broken stream: resume from the byte offset reached. */
		if (rd->offset == before && ++rd->drops > RT_MAX_DROPS)
			break;
		__atomic_add_fetch(&rd->e->drops, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

/* Kill the command through a second exec; the caller's cancel flag must not stop it. */
static void
remote_kill(struct md_env *e, const char *exec_id, const char *pidfile)
{
	char kid[160], err[HS_ERR_MAX];
	const char *argv[] = { "/bin/sh", "-c", MD_KILL, "hs", pidfile };
	const volatile int *saved = e->r.cancel;
	e->r.cancel = NULL;
	snprintf(kid, sizeof(kid), "%s-kill", exec_id);
	int32_t st = start(e, kid, argv, 5, 10, md_now(e) + 5000, err);
	int32_t code = 0;
	if (st == HS_OK)
		st = wait_exit(e, kid, md_now(e) + 5000, &code, err);
	if (st != HS_OK)
		e->st->host->log(e->st->host->ctx, HS_LOG_WARN, "modal: cannot kill the command: %s", err);
	e->r.cancel = saved;
}

/* Run argv with data on its stdin; *code gets its exit code. */
static int32_t
run_with_stdin(struct md_env *e, const char *exec_id, const char *const *argv, size_t argc,
               const void *data, size_t len, uint64_t deadline, int32_t *code, char *err)
{
	int32_t st = start(e, exec_id, argv, argc, 60, deadline, err);
	if (st == HS_OK)
		st = stdin_write(e, exec_id, data, len, deadline, err);
	if (st == HS_OK)
		st = wait_exit(e, exec_id, deadline ? deadline : md_now(e) + 60000, code, err);
	return st;
}

/* Write data to a private file in the sandbox (exec of sh and cat); HS_OK when it exited 0. */
static int32_t
put_file(struct md_env *e, const char *exec_id, const char *path, const char *data, size_t len,
         uint64_t deadline, char *err)
{
	const char *argv[] = { "/bin/sh", "-c", MD_PUTFILE, "hs", path };
	int32_t code = -1, st = run_with_stdin(e, exec_id, argv, 5, data, len, deadline, &code, err);
	if (st == HS_OK && code != 0) {
		snprintf(err, HS_ERR_MAX, "modal: cannot write '%s' in the sandbox (exit %d)", path, code);
		st = HS_E_IO;
	}
	return st;
}

int32_t
md_direct_run_stdin(struct md_env *e, const char *const *argv, size_t argc, const void *data,
                    size_t len, int32_t *code, char *err)
{
	char exec_id[200];
	int32_t st;
	if ((!e->r.bearer[0] || md_now(e) - e->router_at > RT_REFRESH_MS) &&
	    (st = router_access(e, err)) != HS_OK)
		return st;
	static unsigned seq;
	snprintf(exec_id, sizeof(exec_id), "hs-%s-setup-%llu-%u", e->env_name, (unsigned long long)md_now(e),
	         __atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST));
	return run_with_stdin(e, exec_id, argv, argc, data, len, md_now(e) + 120000, code, err);
}

int32_t
md_direct_exec(struct md_env *e, const struct hs_exec_req *req, struct hs_exec_result *res,
               char *err)
{
	char exec_id[96], pidfile[128], envfile[128];
	uint64_t deadline = req->deadline_ms > 0 ? md_now(e) + (uint64_t)req->deadline_ms : 0;
	uint32_t backstop = (uint32_t)MD_BACKSTOP_S(req->deadline_ms);
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	const char **argv = NULL;
	int32_t st;

	if ((!e->r.bearer[0] || md_now(e) - e->router_at > RT_REFRESH_MS) &&
	    (st = router_access(e, err)) != HS_OK)
		return st;
	/* Exec ids are ours: unique per environment and command. */
	snprintf(exec_id, sizeof(exec_id), "hs-%s-%llu-%llu", e->env_name,
	         (unsigned long long)req->exec_id, (unsigned long long)md_now(e));
	snprintf(pidfile, sizeof(pidfile), "/tmp/.%s.pid", exec_id);
	snprintf(envfile, sizeof(envfile), "/tmp/.%s.env", exec_id);
	if (req->n_env) {
		size_t len = 0;
		char eid[128];
		char *script = md_env_script(req, &len, err);
		if (!script)
			return HS_E_INVALID;
		snprintf(eid, sizeof(eid), "%s-env", exec_id);
		st = put_file(e, eid, envfile, script, len, deadline, err);
		explicit_bzero(script, len);
		free(script);
		if (st != HS_OK)
			goto stop_early;
	}
	argv = calloc(req->argc + 16, sizeof(*argv));
	if (!argv) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	size_t n = 0;
	char dl[32] = "";
	if (e->runner[0]) {
		/* Under the one-shot runner: it kills the whole tree at the deadline. */
		argv[n++] = e->runner;
		argv[n++] = "--exec";
		argv[n++] = "--grace-ms";
		argv[n++] = "1000";
		if (req->deadline_ms > 0) {
			snprintf(dl, sizeof(dl), "%lld", (long long)req->deadline_ms);
			argv[n++] = "--deadline-ms";
			argv[n++] = dl;
		}
		argv[n++] = "--";
	}
	argv[n++] = "/bin/sh";
	argv[n++] = "-c";
	argv[n++] = MD_WRAP;
	argv[n++] = "hs";
	argv[n++] = pidfile;
	argv[n++] = req->cwd ? req->cwd : "";
	argv[n++] = req->n_env ? envfile : "";
	argv[n++] = ""; /* the router's timeout_secs is the backstop here */
	for (uint32_t i = 0; i < req->argc; i++)
		argv[n++] = req->argv[i];
	if ((st = start(e, exec_id, argv, n, backstop, deadline, err)) != HS_OK)
		goto stop;
	if ((st = stdin_write(e, exec_id, req->stdin_data, req->stdin_len, deadline, err)) != HS_OK)
		goto stop;

	struct reader rd[2];
	for (int i = 0; i < 2; i++)
		rd[i] = (struct reader){ .e = e, .req = req, .lock = &lock, .exec_id = exec_id, .fd = i,
		                         .deadline = deadline, .st = HS_E_AUTH };
	/*
	 * Both streams at once (stderr on a second thread).  A JWT that expires
	 * mid-command ends a reader with HS_E_AUTH: renew it here, while no
	 * reader runs, and go on from the offsets reached.
	 */
	for (int round = 0; round < 3 && (rd[0].st == HS_E_AUTH || rd[1].st == HS_E_AUTH); round++) {
		if (round && (st = router_access(e, err)) != HS_OK)
			goto stop;
		pthread_t t;
		int run0 = rd[0].st == HS_E_AUTH, run1 = rd[1].st == HS_E_AUTH;
		int threaded = run1 && pthread_create(&t, NULL, read_stream, &rd[1]) == 0;
		if (run0)
			read_stream(&rd[0]);
		if (threaded)
			pthread_join(t, NULL);
		else if (run1)
			read_stream(&rd[1]);
	}
	for (int i = 0; i < 2; i++)
		if (rd[i].st != HS_OK) {
			st = rd[i].st;
			snprintf(err, HS_ERR_MAX, "%s", rd[i].err);
			if (st == HS_E_TIMEOUT || st == HS_E_CANCELLED)
				break;
		}
	if (st != HS_OK)
		goto stop;
	int32_t code = 0;
	if ((st = wait_exit(e, exec_id, deadline, &code, err)) != HS_OK)
		goto stop;
	res->exit_code = code;
	err[0] = '\0'; /* a resumed stream may have left a message */
	goto out;
stop:
	if (st == HS_E_TIMEOUT || st == HS_E_CANCELLED)
		remote_kill(e, exec_id, pidfile);
stop_early:
	if (st == HS_E_TIMEOUT || st == HS_E_CANCELLED) {
		res->timed_out = st == HS_E_TIMEOUT;
		res->cancelled = st == HS_E_CANCELLED;
		res->exit_code = st == HS_E_TIMEOUT ? 124 : 130;
		err[0] = '\0';
		st = HS_OK;
	}
out:
	free(argv);
	pthread_mutex_destroy(&lock);
	return st;
}
