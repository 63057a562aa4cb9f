/* SPDX-License-Identifier: MIT */
/*
 * test-exec.c - the docker backend's ops against the SDK's fake host and a
 * real dockerd (DOCKER_HOST, started by exec.test): probe, the exec-per-
 * command mode (docker.runner = false) with output, stdin, env, cwd, exit
 * codes, a deadline that leaves nothing running (a setsid child under the
 * one-shot runner included), cancel from another
 * thread, and approval of daemon-side host access.
 *
 * Usage: test-exec IMAGE RUNNER
 */
#include <config.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hs/backend.h>
#include <hs/fakehost.h>

extern const struct hs_backend_v1 hs_backend_v1;

static int fails;
#define CHECK(cond, ...)                                                                     \
	do {                                                                                 \
		int ok_ = !!(cond);                                                              \
		printf("%s: ", ok_ ? "ok" : "FAIL");                                             \
		printf(__VA_ARGS__);                                                             \
		printf("\n");                                                                    \
		fflush(stdout);                                                                  \
		if (!ok_)                                                                        \
			fails++;                                                                     \
	} while (0)

struct out {
	char b[2][65536];
	size_t n[2];
};

static int32_t
sink_write(void *ctx, int32_t stream, const void *buf, uint64_t len)
{
	struct out *o = ctx;
	int s = stream == 2;
	if (o->n[s] + len < sizeof(o->b[s])) {
		memcpy(o->b[s] + o->n[s], buf, len);
		o->n[s] += len;
		o->b[s][o->n[s]] = '\0';
	}
	return HS_OK;
}

static int32_t
run(void *env, uint64_t id, const char *const *argv, const char *const *envp, uint32_t n_env,
    const char *cwd, const char *in, int64_t deadline, struct out *o, struct hs_exec_result *res)
{
	char err[HS_ERR_MAX] = "";
	uint32_t argc = 0;
	while (argv[argc])
		argc++;
	memset(o, 0, sizeof(*o));
	struct hs_exec_req req = {
		.struct_size = sizeof(req), .argc = argc, .exec_id = id, .argv = argv, .envp = envp,
		.n_env = n_env, .cwd = cwd, .stdin_data = in, .stdin_len = in ? strlen(in) : 0,
		.deadline_ms = deadline, .sink = { o, sink_write },
	};
	int32_t st = hs_backend_v1.exec(env, &req, res, err);
	if (st != HS_OK)
		printf("exec: %s\n", err);
	return st;
}

struct canceller {
	void *env;
};

static void *
cancel_later(void *arg)
{
	struct canceller *c = arg;
	struct timespec ts = { 0, 500 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	/* Not yet registered by exec (HS_E_NOTFOUND): a caller asks again, as the core does. */
	ts.tv_nsec = 10 * 1000 * 1000;
	for (int i = 0; i < 500 && hs_backend_v1.cancel(c->env, 7) == HS_E_NOTFOUND; i++)
		nanosleep(&ts, NULL);
	return NULL;
}

static long
ms_since(struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1000 + (b.tv_nsec - a->tv_nsec) / 1000000;
}

int
main(int argc, char **argv)
{
	char err[HS_ERR_MAX] = "";
	void *state = NULL, *env = NULL;
	struct hs_probe_report rep = { 0 };
	struct hs_env_props props = { 0 };
	struct hs_exec_result res;
	struct out o;

	if (argc != 3) {
		fprintf(stderr, "usage: test-exec IMAGE RUNNER\n");
		return 2;
	}
	struct hs_fakehost *fh = hs_fakehost_new("docker", argv[2]);
	if (!fh)
		return 2;
	hs_fakehost_set(fh, "runner", "false");
	const struct hs_host_v1 *host = hs_fakehost_host(fh);
	CHECK(hs_backend_v1.init(host, &state, err) == HS_OK, "init");
	CHECK(hs_backend_v1.probe(state, 0, &rep, err) == HS_OK && rep.ready, "probe ready (%s)",
	      rep.reason);
	/* docker.runner = false, or a sanitizer build's dynamic runner. */
	CHECK(!rep.runner && (strstr(rep.reason, "docker.runner = false") ||
	                      strstr(rep.reason, "dynamically linked")),
	      "probe says exec mode (%s)", rep.reason);

	struct hs_env_spec spec = { .struct_size = sizeof(spec), .session = "tx",
		                    .env_name = "hs-test-exec", .image = argv[1] };
	int32_t st = hs_backend_v1.open(state, &spec, &env, &props, err);
	CHECK(st == HS_OK, "open (%s)", st == HS_OK ? "" : err);
	if (st != HS_OK)
		goto out;
	CHECK(!props.runner && props.runner_reason[0], "exec mode: %s", props.runner_reason);
	CHECK(strcmp(props.isolation, "container") == 0, "isolation %s", props.isolation);

	const char *a1[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
	st = run(env, 1, a1, NULL, 0, NULL, NULL, 0, &o, &res);
	CHECK(st == HS_OK && res.exit_code == 3, "exit code 3 (%d)", res.exit_code);
	CHECK(strcmp(o.b[0], "out\n") == 0 && strcmp(o.b[1], "err\n") == 0, "stdout and stderr apart");

	const char *a2[] = { "cat", NULL };
	st = run(env, 2, a2, NULL, 0, NULL, "abc\ndef\n", 0, &o, &res);
	CHECK(st == HS_OK && strcmp(o.b[0], "abc\ndef\n") == 0, "stdin [%s]", o.b[0]);

	const char *a3[] = { "sh", "-c", "echo $FOO $PWD", NULL };
	const char *e3[] = { "FOO=bar baz" };
	st = run(env, 3, a3, e3, 1, "/etc", NULL, 0, &o, &res);
	CHECK(st == HS_OK && strcmp(o.b[0], "bar baz /etc\n") == 0, "env and cwd [%s]", o.b[0]);

	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	const char *a4[] = { "sh", "-c", "sleep 107 & setsid sleep 107 & sleep 107", NULL };
	st = run(env, 4, a4, NULL, 0, NULL, NULL, 1000, &o, &res);
	long ms = ms_since(&t0);
	CHECK(st == HS_OK && res.timed_out && res.exit_code == 124, "deadline: timed out, 124 (%d)",
	      res.exit_code);
	CHECK(ms < 5000, "deadline kept (%ld ms)", ms);
	const char *a5[] = { "ps", NULL };
	st = run(env, 5, a5, NULL, 0, NULL, NULL, 0, &o, &res);
	CHECK(st == HS_OK && !strstr(o.b[0], "sleep 107"), "nothing survives the deadline");

	/* A child that leaves the group and is reparented (setsid in a
	 * subshell that exits) was out of the host-side kill's reach; the
	 * one-shot runner, its subreaper, kills it too. */
	const char *a8[] = { "sh", "-c", "(setsid sleep 108 &); echo started; sleep 108", NULL };
	st = run(env, 8, a8, NULL, 0, NULL, NULL, 4000, &o, &res);
	CHECK(st == HS_OK && res.timed_out && res.exit_code == 124 && strstr(o.b[0], "started"),
	      "detached child: timed out after it started, 124 (%d)", res.exit_code);
	st = run(env, 5, a5, NULL, 0, NULL, NULL, 0, &o, &res);
	CHECK(st == HS_OK && !strstr(o.b[0], "sleep 108"), "a setsid child does not survive the deadline");
	const char *a9[] = { "sh", "-c", "tr '\\0' ' ' </proc/$PPID/cmdline", NULL };
	st = run(env, 9, a9, NULL, 0, NULL, NULL, 0, &o, &res);
	CHECK(st == HS_OK && strstr(o.b[0], "hs-runner-exec --exec"),
	      "the command runs under the one-shot runner [%s]", o.b[0]);

	pthread_t th;
	struct canceller c = { env };
	pthread_create(&th, NULL, cancel_later, &c);
	const char *a6[] = { "sleep", "100", NULL };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	st = run(env, 7, a6, NULL, 0, NULL, NULL, 0, &o, &res);
	pthread_join(th, NULL);
	CHECK(st == HS_OK && res.cancelled, "cancel from another thread (%ld ms)", ms_since(&t0));

	st = hs_backend_v1.close(env, 0, err);
	CHECK(st == HS_OK, "close removes the container (%s)", st == HS_OK ? "" : err);
	env = NULL;

	/* Daemon-side host access goes to approve(); the fake host refuses. */
	hs_fakehost_set(fh, "privileged", "true");
	unsigned before = hs_fakehost_approvals(fh);
	memset(&props, 0, sizeof(props));
	st = hs_backend_v1.open(state, &spec, &env, &props, err);
	CHECK(st == HS_E_DENIED, "privileged is refused (%d: %s)", st, err);
	CHECK(hs_fakehost_approvals(fh) == before + 1, "approve() was asked");
	hs_backend_v1.close(env, 0, err);
	env = NULL;
out:
	if (env)
		hs_backend_v1.close(env, 0, err);
	hs_backend_v1.fini(state);
	hs_fakehost_free(fh);
	return fails ? 1 : 0;
}
