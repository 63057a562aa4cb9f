/* SPDX-License-Identifier: MIT */
/*
 * faulty.c - backends that misbehave on purpose, for the fault-injection
 * tests (tests/faults/*.test), built at test time:
 *
 *   -DFAULTY_HANG  "hang": an exec-mode backend whose exec ignores its
 *                  deadline and returns only when cancelled (or after
 *                  FAULTY_HANG_MAX_S seconds), as a broken plugin would.
 *                  With FAULTY_HANG_LATE_MS set, exec registers the command
 *                  only that long after it was called, and cancel answers
 *                  HS_E_NOTFOUND until then (a cancel that comes too early).
 *   -DFAULTY_CUT   "cutter": runs the session's runner on this host like
 *                  the local backend, but the stream it hands the core is
 *                  cut after a random number of bytes (either direction),
 *                  again on every re-attach.
 *
 * With FAULTY_CLOSE_FAIL set in the environment, close fails (HS_E_IO).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hs/backend.h>

#ifdef FAULTY_HANG
#define FAULTY_NAME "hang"
#define FAULTY_HANG_MAX_S 120
#else
#define FAULTY_NAME "cutter"
#endif

struct fstate {
	const struct hs_host_v1 *host;
};

struct fenv {
	struct fstate *st;
	char dir[512];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t running;
	int cancelled;
	unsigned seed;
	pthread_t pump;
	int have_pump;
};

static int32_t
f_init(const struct hs_host_v1 *host, void **state, char *err)
{
	struct fstate *st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	st->host = host;
	*state = st;
	return HS_OK;
}

static void
f_fini(void *state)
{
	free(state);
}

static int32_t
f_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
	r->ready = 1;
#ifdef FAULTY_CUT
	r->runner = 1;
#endif
	return HS_OK;
}

static int32_t
f_open(void *state, const struct hs_env_spec *spec, void **envp, struct hs_env_props *props,
       char *err)
{
	struct fstate *st = state;
	struct fenv *env = calloc(1, sizeof(*env));
	if (!env)
		return HS_E_NOMEM;
	env->st = st;
	pthread_mutex_init(&env->mu, NULL);
	pthread_cond_init(&env->cv, NULL);
	env->seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	snprintf(env->dir, sizeof(env->dir), "%s/%s-%s", st->host->runtime_dir, FAULTY_NAME,
	         spec->env_name);
	if (mkdir(env->dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, HS_ERR_MAX, "cannot create %s: %s", env->dir, strerror(errno));
		free(env);
		return HS_E_IO;
	}
	snprintf(props->isolation, sizeof(props->isolation), "none");
	snprintf(props->shell, sizeof(props->shell), "/bin/sh");
	snprintf(props->runtime_dir, sizeof(props->runtime_dir), "%s", env->dir);
	props->host_access = 1;
#ifdef FAULTY_CUT
	props->runner = 1;
#else
	snprintf(props->runner_reason, sizeof(props->runner_reason), "the hang backend has no runner");
#endif
	*envp = env;
	return HS_OK;
}

#ifdef FAULTY_HANG
static int32_t
f_exec(void *envp, const struct hs_exec_req *req, struct hs_exec_result *res, char *err)
{
	struct fenv *env = envp;
	struct timespec until;
	static const char msg[] = "hanging past the deadline\n";

	req->sink.write(req->sink.ctx, 1, msg, sizeof(msg) - 1);
	const char *late = getenv("FAULTY_HANG_LATE_MS");
	if (late && atoi(late) > 0) {
		struct timespec ts = { atoi(late) / 1000, (atoi(late) % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += FAULTY_HANG_MAX_S;
	pthread_mutex_lock(&env->mu);
	env->running = req->exec_id;
	env->cancelled = 0;
	while (!env->cancelled &&
	       pthread_cond_timedwait(&env->cv, &env->mu, &until) != ETIMEDOUT)
		;
	res->exit_code = env->cancelled ? 137 : 0;
	res->cancelled = env->cancelled;
	env->running = 0;
	pthread_mutex_unlock(&env->mu);
	return HS_OK;
}

static int32_t
f_cancel(void *envp, uint64_t exec_id)
{
	struct fenv *env = envp;
	int32_t s = HS_E_NOTFOUND;
	pthread_mutex_lock(&env->mu);
	if (env->running == exec_id) {
		env->cancelled = 1;
		pthread_cond_broadcast(&env->cv);
		s = HS_OK;
	}
	pthread_mutex_unlock(&env->mu);
	return s;
}
#endif

#ifdef FAULTY_CUT
struct pump_arg {
	int core, runner;
	pid_t child;
	size_t budget;
};

/* Copy both ways until budget bytes have passed, then cut both ends. */
static void *
pump(void *p)
{
	struct pump_arg *a = p;
	char buf[4096];
	size_t moved = 0;
	int open_ = 1;
	while (open_ && moved < a->budget) {
		struct pollfd pf[2] = { { a->core, POLLIN, 0 }, { a->runner, POLLIN, 0 } };
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2 && open_; i++) {
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			size_t want = a->budget - moved < sizeof(buf) ? a->budget - moved : sizeof(buf);
			ssize_t n = read(pf[i].fd, buf, want ? want : 1);
			if (n <= 0) {
				open_ = 0;
				break;
			}
			const char *q = buf;
			while (n > 0) {
				ssize_t w = write(i == 0 ? a->runner : a->core, q, (size_t)n);
				if (w <= 0) {
					open_ = 0;
					break;
				}
				q += w;
				n -= w;
				moved += (size_t)w;
			}
		}
	}
	if (moved >= a->budget) { /* count the cuts, so the test knows they happened */
		const char *log = getenv("FAULTY_CUT_LOG");
		int fd = log ? open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
		if (fd >= 0) {
			if (write(fd, "cut\n", 4) < 0) {
				/* the count is only informative */
			}
			close(fd);
		}
	}
	shutdown(a->core, SHUT_RDWR);
	close(a->core);
	close(a->runner);
	kill(a->child, SIGKILL);
	waitpid(a->child, NULL, 0);
	free(a);
	return NULL;
}

static int32_t
f_runner_stream(void *envp, int32_t *fd, char *err)
{
	struct fenv *env = envp;
	int core[2], run[2];
	char idle[16];

	if (env->have_pump) { /* the previous stream's pump has cut already or will */
		pthread_join(env->pump, NULL);
		env->have_pump = 0;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, core) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, run) < 0) {
		snprintf(err, HS_ERR_MAX, "socketpair: %s", strerror(errno));
		return HS_E_IO;
	}
	snprintf(idle, sizeof(idle), "%d", 30);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, HS_ERR_MAX, "fork: %s", strerror(errno));
		return HS_E_IO;
	}
	if (pid == 0) {
		dup2(run[1], 0);
		dup2(run[1], 1);
		execl(env->st->host->runner_path, "hs-runner", "--attach", "--start", "--dir", env->dir,
		      "--idle", idle, (char *)NULL);
		_exit(127);
	}
	close(run[1]);
	struct pump_arg *a = malloc(sizeof(*a));
	a->core = core[1];
	a->runner = run[0];
	a->child = pid;
	/* Between 2 KiB and 130 KiB: enough to make progress, small enough to cut often. */
	a->budget = 2048 + (size_t)(rand_r(&env->seed) % (128 * 1024));
	if (pthread_create(&env->pump, NULL, pump, a) != 0) {
		snprintf(err, HS_ERR_MAX, "cannot start the pump thread");
		return HS_E_IO;
	}
	env->have_pump = 1;
	*fd = core[0];
	return HS_OK;
}
#endif

static int32_t
f_close(void *envp, uint32_t flags, char *err)
{
	struct fenv *env = envp;
	if (!env)
		return HS_OK;
	if (getenv("FAULTY_CLOSE_FAIL")) {
		/* A teardown that fails, as a daemon that refuses to stop would. */
		snprintf(err, HS_ERR_MAX, "injected close failure");
		free(env);
		return HS_E_IO;
	}
#ifdef FAULTY_CUT
	if (env->have_pump)
		pthread_join(env->pump, NULL);
	if (!(flags & HS_CLOSE_KEEP)) {
		pid_t pid = fork();
		if (pid == 0) {
			execl(env->st->host->runner_path, "hs-runner", "--stop", "--dir", env->dir, (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
#endif
	free(env);
	return HS_OK;
}

HS_BACKEND_EXPORT const struct hs_backend_v1 hs_backend_v1 = {
	HS_BACKEND_V1_HEADER,
	.name = FAULTY_NAME,
	.version = "1",
	.summary = "fault-injection fixture",
	.init = f_init,
	.fini = f_fini,
	.probe = f_probe,
	.open = f_open,
#ifdef FAULTY_HANG
	.exec = f_exec,
	.cancel = f_cancel,
#else
	.runner_stream = f_runner_stream,
#endif
	.close = f_close,
};
