/* SPDX-License-Identifier: MIT */
/*
 * example.c - a tiny hermes-sandbox backend, built out of tree against the
 * installed SDK with pkg-config alone:
 *
 *     cc -shared -fPIC -fvisibility=hidden $(pkg-config --cflags hs-backend) \
 *        -o example.so example.c $(pkg-config --libs hs-backend)
 *
 * It runs each argv directly on the host in its own process group (no
 * isolation, no runner), which is enough to show every required part of the
 * ABI: the descriptor, init/fini, probe, open/close, exec with a relative
 * deadline, and a thread-safe cancel.  Its probe uses libhsb (hs/hsb.h),
 * the SDK's helper library, to run a program and capture its output.  It
 * also shows two ABI 1.1 parts: a config key with a rule
 * (example.max_output: smaller is stricter, so an admin's lock on it is a
 * ceiling users may only lower), and attach-only open (HS_SPEC_ATTACH),
 * which hs session close uses: a persistent environment is a marker file in
 * the state directory, and an attach-only open of one that is gone returns
 * HS_E_NOTFOUND and creates nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hs/backend.h>
#include <hs/hsb.h>

struct ex_state {
	const struct hs_host_v1 *host;
};

struct ex_env {
	struct ex_state *st;
	int64_t max_output;         /* output bytes per command; 0: no limit */
	char marker[4096];          /* persistent environments: its marker file, else "" */
	volatile pid_t running;     /* process group of the running exec, or 0 */
	volatile uint64_t running_id;
};

static int32_t
ex_init(const struct hs_host_v1 *host, void **state, char *err)
{
	struct ex_state *st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	st->host = host;
	*state = st;
	return HS_OK;
}

static void
ex_fini(void *state)
{
	free(state);
}

/* example.max_output as the core resolved it (layers, locks); 0 when unset. */
static int64_t
ex_max_output(struct ex_state *st)
{
	int64_t v = 0;
	if (st->host->config_int(st->host->ctx, "max_output", &v) != HS_OK || v < 0)
		v = 0;
	return v;
}

static int32_t
ex_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
	static const char *const argv[] = { "/bin/sh", "-c", "echo ok", NULL };
	char out[16], e[HSB_ERR_MAX];
	struct hsb_run run = { .argv = argv, .out = out, .out_cap = sizeof(out),
	                       .timeout_ms = 10000 };

	/* A local check: /bin/sh runs here and answers. */
	r->ready = hsb_run(&run, e) == 0 && run.status == 0 && strcmp(out, "ok\n") == 0;
	r->runner = 0;
	if (!r->ready)
		snprintf(r->reason, sizeof(r->reason), "'/bin/sh -c \"echo ok\"' does not work here: %.400s",
		         run.status < 0 ? e : "it did not answer ok");
	snprintf(r->detail, sizeof(r->detail), "isolation=none\nmax_output=%lld",
	         (long long)ex_max_output(state));
	return HS_OK;
}

static int32_t
ex_open(void *state, const struct hs_env_spec *spec, void **envp,
        struct hs_env_props *props, char *err)
{
	struct ex_env *env;

	if (spec->image && *spec->image) {
		snprintf(err, HS_ERR_MAX, "backend 'example' has no images (asked for '%s')", spec->image);
		return HS_E_INVALID;
	}
	struct ex_state *st = state;
	char marker[4096] = "";
	if ((spec->flags & (HS_SPEC_PERSISTENT | HS_SPEC_ATTACH)) && st->host->state_dir)
		snprintf(marker, sizeof(marker), "%s/%s.env", st->host->state_dir, spec->env_name);
	if ((spec->flags & HS_SPEC_ATTACH) && (!marker[0] || access(marker, F_OK) != 0)) {
		snprintf(err, HS_ERR_MAX, "environment '%s' is gone", spec->env_name);
		return HS_E_NOTFOUND;
	}
	env = calloc(1, sizeof(*env));
	if (!env) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	env->st = st;
	env->max_output = ex_max_output(st);
	snprintf(env->marker, sizeof(env->marker), "%s", marker);
	if (marker[0] && !(spec->flags & HS_SPEC_ATTACH)) {
		int fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0) {
			snprintf(err, HS_ERR_MAX, "cannot create '%s': %s", marker, strerror(errno));
			free(env);
			return HS_E_IO;
		}
		close(fd);
	}
	props->host_access = 1;
	snprintf(props->host_reason, sizeof(props->host_reason), "commands run directly on the host");
	snprintf(props->isolation, sizeof(props->isolation), "none");
	snprintf(props->runner_reason, sizeof(props->runner_reason), "the example backend has no runner");
	snprintf(props->shell, sizeof(props->shell), "/bin/sh");
	*envp = env;
	return HS_OK;
}

/* Pass what fd has to the sink, within *left bytes (-1: no limit). */
static void
ex_drain(int fd, int stream, const struct hs_exec_req *req, int *open_, int64_t *left)
{
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n > 0) {
		if (*left >= 0 && n > *left)
			n = (ssize_t)*left;
		if (*left >= 0)
			*left -= n;
		if (n > 0)
			req->sink.write(req->sink.ctx, stream, buf, (uint64_t)n);
	} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		*open_ = 0;
	}
}

static int32_t
ex_exec(void *envp, const struct hs_exec_req *req, struct hs_exec_result *res, char *err)
{
	struct ex_env *env = envp;
	int in[2], out[2], errp[2], status = 0;
	uint64_t in_off = 0;
	uint64_t start = env->st->host->now_ms(env->st->host->ctx);
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot create pipes: %s", strerror(errno));
		return HS_E_IO;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(err, HS_ERR_MAX, "cannot fork: %s", strerror(errno));
		return HS_E_IO;
	}
	if (pid == 0) {
		setpgid(0, 0);
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(errp[1], 2);
		if (req->cwd && chdir(req->cwd) < 0)
			_exit(126);
		/* envp holds the per-command variables: they override the sandbox's
		 * own environment, which for this example is the one it runs in. */
		for (uint32_t i = 0; i < req->n_env; i++)
			putenv((char *)req->envp[i]);
		execvp(req->argv[0], (char *const *)req->argv);
		_exit(127);
	}
	setpgid(pid, pid);
	env->running_id = req->exec_id;
	env->running = pid;
	close(in[0]);
	close(out[1]);
	close(errp[1]);
	/* stdin: the request's bytes, written as the command takes them, then EOF. */
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	if (!req->stdin_data || req->stdin_len == 0) {
		close(in[1]);
		in[1] = -1;
	}
	int open_out = 1, open_err = 1;
	int64_t left = env->max_output > 0 ? env->max_output : -1;
	memset(res, 0, sizeof(*res));
	while (open_out || open_err) {
		struct pollfd p[3] = { { out[0], POLLIN, 0 }, { errp[0], POLLIN, 0 }, { in[1], POLLOUT, 0 } };
		int timeout = -1;
		if (req->deadline_ms > 0) {
			int64_t left = req->deadline_ms -
			               (int64_t)(env->st->host->now_ms(env->st->host->ctx) - start);
			if (left <= 0) {
				res->timed_out = 1;
				kill(-pid, SIGKILL);
				break;
			}
			timeout = (int)left;
		}
		if (poll(p, in[1] >= 0 ? 3 : 2, timeout) < 0 && errno != EINTR)
			break;
		if (in[1] >= 0 && p[2].revents) {
			ssize_t n = write(in[1], (const char *)req->stdin_data + in_off, req->stdin_len - in_off);
			if (n > 0)
				in_off += (uint64_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) || in_off == req->stdin_len) {
				close(in[1]);
				in[1] = -1;
			}
		}
		if (open_out && p[0].revents)
			ex_drain(out[0], 1, req, &open_out, &left);
		if (open_err && p[1].revents)
			ex_drain(errp[0], 2, req, &open_err, &left);
	}
	if (in[1] >= 0)
		close(in[1]);
	close(out[0]);
	close(errp[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	kill(-pid, SIGKILL); /* nothing of the command outlives it */
	env->running = 0;
	if (WIFSIGNALED(status)) {
		res->exit_code = 128 + WTERMSIG(status);
		if (!res->timed_out && WTERMSIG(status) == SIGKILL && env->running_id == UINT64_MAX)
			res->cancelled = 1;
	} else {
		res->exit_code = WEXITSTATUS(status);
	}
	return HS_OK;
}

static int32_t
ex_cancel(void *envp, uint64_t exec_id)
{
	struct ex_env *env = envp;
	pid_t pid = env->running;
	if (pid > 0 && env->running_id == exec_id) {
		env->running_id = UINT64_MAX;
		kill(-pid, SIGKILL);
		return HS_OK;
	}
	return HS_E_NOTFOUND;
}

static int32_t
ex_close(void *envp, uint32_t flags, char *err)
{
	struct ex_env *env = envp;
	if (env && env->marker[0] && !(flags & HS_CLOSE_KEEP))
		unlink(env->marker);
	free(env);
	return HS_OK;
}

static const struct hs_config_key ex_keys[] = {
	{ "max_output", HS_CONF_INT, "output bytes passed on per command; 0: no limit" },
	{ NULL, 0, NULL },
};

/* ABI 1.1: smaller is stricter, 0 is no limit; an admin's lock is a ceiling. */
static const struct hs_config_rule ex_rules[] = {
	{ .name = "max_output", .order = HS_CORDER_LESS_ZERO_MAX },
	{ .name = NULL },
};

HS_BACKEND_EXPORT const struct hs_backend_v1 hs_backend_v1 = {
	HS_BACKEND_V1_HEADER,
	.name = "example",
	.version = "1.0",
	.summary = "example backend: runs commands directly on the host",
	.caps = HS_CAP_EXEC,
	.config_keys = ex_keys,
	.config_rules = ex_rules,
	.init = ex_init,
	.fini = ex_fini,
	.probe = ex_probe,
	.open = ex_open,
	.exec = ex_exec,
	.cancel = ex_cancel,
	.close = ex_close,
};
