/* SPDX-License-Identifier: MIT */
/*
 * exec.c - one exec per command, when no runner daemon is hosted
 * (docker.runner = false, or an image of another architecture).  The
 * command's output is demultiplexed into the core's sink.
 *
 * Where the runner fits the image (docker.runner = false), each exec is
 * `hs-runner --exec` (hs-runner(7)), uploaded as DK_ONESHOT: it enforces
 * the deadline inside the container and kills the command's whole tree,
 * setsid children included, and a cancel is a TERM to it.  Only for an
 * image of another architecture, where no runner can be placed, the
 * fallback remains: every process descended from the exec is killed from
 * the host side through /proc (the daemon has no API to signal an exec),
 * and a process that detaches itself (setsid and a double fork) is
 * reparented to the container's init and escapes (hs-docker(7)).
 */
#include "config.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "plugins/docker/docker.h"

#define DK_GRACE_MS 2000  /* the one-shot runner's TERM-to-KILL time */
#define DK_SLACK_MS 5000  /* past its deadline and grace, the host steps in */

struct ex_sink {
	const struct hs_sink *sink;
};

static int
ex_out(void *ctx, int stream, const uint8_t *buf, size_t len)
{
	struct ex_sink *s = ctx;
	if (stream != 1 && stream != 2)
		return 0;
	return s->sink->write(s->sink->ctx, stream, buf, len) != HS_OK;
}

static pid_t
ppid_of(pid_t pid)
{
	char p[64], line[256];
	pid_t pp = -1;
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "PPid: %d", &pp) == 1)
			break;
	fclose(f);
	return pp;
}

/* The fallback without a one-shot runner: SIGKILL pid and every process
 * below it, repeatedly until none is found. */
static void
kill_tree(pid_t root)
{
	for (int round = 0; round < 5; round++) {
		pid_t set[4096];
		int n = 0, grew = 1;
		set[n++] = root;
		while (grew) {
			grew = 0;
			DIR *d = opendir("/proc");
			if (!d)
				return;
			struct dirent *de;
			while ((de = readdir(d)) && n < 4096) {
				pid_t p = (pid_t)atoi(de->d_name);
				if (p <= 0)
					continue;
				int known = 0;
				for (int i = 0; i < n && !known; i++)
					known = set[i] == p;
				if (known)
					continue;
				pid_t pp = ppid_of(p);
				for (int i = 0; i < n; i++)
					if (set[i] == pp) {
						set[n++] = p;
						grew = 1;
						break;
					}
			}
			closedir(d);
		}
		int alive = 0;
		for (int i = 0; i < n; i++)
			alive += kill(set[i], SIGKILL) == 0;
		if (!alive)
			return;
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

static int32_t
exec_inspect(struct dk_env *env, const char *exec_id, int *running, int *code, pid_t *pid,
             char *err)
{
	static const char *const runp[] = { "Running", NULL };
	static const char *const codep[] = { "ExitCode", NULL };
	static const char *const pidp[] = { "Pid", NULL };
	char path[256];
	long http;
	yajl_val t = NULL;
	snprintf(path, sizeof(path), "/exec/%s/json", exec_id);
	int32_t st = dk_api_json(&env->api, "GET", path, NULL, &http, &t, err);
	if (st != HS_OK)
		return st;
	yajl_val r = yajl_tree_get(t, (const char **)runp, yajl_t_any);
	yajl_val c = yajl_tree_get(t, (const char **)codep, yajl_t_number);
	yajl_val p = yajl_tree_get(t, (const char **)pidp, yajl_t_number);
	*running = r && YAJL_IS_TRUE(r);
	*code = c ? (int)YAJL_GET_INTEGER(c) : -1;
	*pid = p ? (pid_t)YAJL_GET_INTEGER(p) : 0;
	yajl_tree_free(t);
	return HS_OK;
}

/* Stops a one-shot runner: TERM makes it kill the command's tree (TERM,
 * grace, KILL) and exit once none is left.  A runner that does not exit in
 * time is killed with its tree from here. */
static void
stop_oneshot(struct dk_env *env, const char *exec_id, pid_t pid)
{
	int running = 1, code;
	pid_t p;
	char e[HS_ERR_MAX];
	if (kill(pid, SIGTERM) == 0)
		for (int i = 0; i < (DK_GRACE_MS + DK_SLACK_MS) / 20; i++) {
			if (exec_inspect(env, exec_id, &running, &code, &p, e) != HS_OK || !running)
				break;
			struct timespec ts = { 0, 20 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	if (running)
		kill_tree(pid);
}

int32_t dk_exec(void *envp, const struct hs_exec_req *req, struct hs_exec_result *res, char *err);
int32_t dk_cancel(void *envp, uint64_t exec_id);

int32_t
dk_exec(void *envp, const struct hs_exec_req *req, struct hs_exec_result *res, char *err)
{
	struct dk_env *env = envp;
	struct dk_stream s;
	char exec_id[128];
	const char *argv[270];
	char dl[24], gr[24];
	uint32_t n = 0;
	int32_t rc;

	if (req->argc == 0 || req->argc >= 259) {
		snprintf(err, HS_ERR_MAX, "exec: bad argument count %u", req->argc);
		return HS_E_INVALID;
	}
	if (env->oneshot) {
		argv[n++] = DK_ONESHOT;
		argv[n++] = "--exec";
		if (req->deadline_ms > 0) {
			snprintf(dl, sizeof(dl), "%lld", (long long)req->deadline_ms);
			argv[n++] = "--deadline-ms";
			argv[n++] = dl;
		}
		snprintf(gr, sizeof(gr), "%d", DK_GRACE_MS);
		argv[n++] = "--grace-ms";
		argv[n++] = gr;
		argv[n++] = "--";
	}
	for (uint32_t i = 0; i < req->argc; i++)
		argv[n++] = req->argv[i];
	argv[n] = NULL;
	memset(res, 0, sizeof(*res));
	rc = dk_exec_create(&env->api, env->id, argv, req->envp, req->n_env, req->cwd, exec_id,
	                    sizeof(exec_id), err);
	if (rc != HS_OK)
		return rc;
	pthread_mutex_lock(&env->lock);
	env->exec_id = req->exec_id;
	env->exec_cancel = 0;
	pthread_mutex_unlock(&env->lock);
	if ((rc = dk_exec_hijack(&env->api, exec_id, &s, err)) != HS_OK)
		return rc;
	/* The one-shot runner keeps the deadline inside; the host backs it up. */
	uint64_t start = env->st->host->now_ms(env->st->host->ctx);
	uint64_t deadline = req->deadline_ms > 0
	                            ? start + (uint64_t)req->deadline_ms +
	                                      (env->oneshot ? DK_GRACE_MS + DK_SLACK_MS : 0)
	                            : 0;
	struct ex_sink xs = { &req->sink };
	rc = dk_stream_run(&s, req->stdin_data, req->stdin_data ? req->stdin_len : 0, ex_out, &xs,
	                   deadline, &env->exec_cancel, err);
	int running = 0, code = -1;
	pid_t pid = 0;
	char e[HS_ERR_MAX];
	if (rc == HS_E_TIMEOUT || rc == HS_E_CANCELLED) {
		if (exec_inspect(env, exec_id, &running, &code, &pid, e) == HS_OK && pid > 0) {
			if (env->oneshot)
				stop_oneshot(env, exec_id, pid);
			else
				kill_tree(pid);
		}
		res->timed_out = rc == HS_E_TIMEOUT;
		res->cancelled = rc == HS_E_CANCELLED;
		res->exit_code = rc == HS_E_TIMEOUT ? 124 : 130;
		dk_stream_free(&s);
		return HS_OK;
	}
	dk_stream_free(&s);
	if (rc != HS_OK)
		return rc;
	/* The stream ends just before the daemon records the exit code. */
	for (int i = 0; i < 200; i++) {
		if ((rc = exec_inspect(env, exec_id, &running, &code, &pid, err)) != HS_OK)
			return rc;
		if (!running)
			break;
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	res->exit_code = code < 0 ? 255 : code;
	/* 124 from the one-shot runner once the deadline passed: it stopped the command. */
	if (env->oneshot && code == 124 && req->deadline_ms > 0 &&
	    env->st->host->now_ms(env->st->host->ctx) - start >= (uint64_t)req->deadline_ms)
		res->timed_out = 1;
	return HS_OK;
}

int32_t
dk_cancel(void *envp, uint64_t exec_id)
{
	struct dk_env *env = envp;
	pthread_mutex_lock(&env->lock);
	if (env->exec_id == exec_id)
		env->exec_cancel = 1;
	pthread_mutex_unlock(&env->lock);
	return HS_OK;
}
