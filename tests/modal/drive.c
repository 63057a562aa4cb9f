/* SPDX-License-Identifier: MIT */
/*
 * drive.c - drive the modal plugin as the core would, for the tests: the
 * fake host's services, with the core's real credential resolution
 * (core/safety/credentials.c) plugged in.  One open, one exec, one close.
 *
 *   drive PLUGIN.so [-d DEADLINE_MS] [-c CANCEL_AFTER_MS] [-i STDIN] [-C CWD]
 *         [-e K=V] [-k] [-n ENV_NAME] [-N NETWORK] -- ARGV...
 *
 * The command's output goes to stdout/stderr; the last stderr line is
 * "result: status=S exit=N timed_out=T cancelled=C ms=M", or "error: ...".
 */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hs/backend.h>
#include <hs/fakehost.h>

#include "core/safety/credentials.h"

static int32_t
resolve(void *ctx, const char *provider, struct hs_credentials *out, char *err)
{
	(void)ctx;
	struct hs_cred_query q = {
		.provider = provider, .mode = getenv("HS_MODAL_MODE"), .home = getenv("HOME"),
		.uid = geteuid(),
	};
	return hs_cred_resolve(&q, out, err, HS_ERR_MAX);
}

static int32_t
sink(void *ctx, int32_t stream, const void *buf, uint64_t len)
{
	(void)ctx;
	fwrite(buf, 1, len, stream == 2 ? stderr : stdout);
	fflush(stream == 2 ? stderr : stdout);
	return 0;
}

struct canceller {
	const struct hs_backend_v1 *be;
	void *env;
	long after_ms;
};

static void *
cancel_later(void *ud)
{
	struct canceller *c = ud;
	struct timespec ts = { c->after_ms / 1000, (c->after_ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	/* Not yet registered by exec (HS_E_NOTFOUND): a caller asks again, as the core does. */
	ts = (struct timespec){ 0, 10 * 1000 * 1000 };
	for (int i = 0; i < 500 && c->be->cancel(c->env, 7) == HS_E_NOTFOUND; i++)
		nanosleep(&ts, NULL);
	return NULL;
}

static long
ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int
main(int argc, char **argv)
{
	long deadline = 0, cancel_after = 0;
	const char *in = NULL, *cwd = NULL, *name = "drive", *net = NULL;
	const char *envs[16];
	uint32_t n_env = 0;
	int keep = 0, o;

	if (argc < 2)
		return 2;
	const char *so = argv[1];
	optind = 2;
	while ((o = getopt(argc, argv, "d:c:i:C:e:kn:N:")) != -1) {
		switch (o) {
		case 'd': deadline = atol(optarg); break;
		case 'c': cancel_after = atol(optarg); break;
		case 'i': in = optarg; break;
		case 'C': cwd = optarg; break;
		case 'e': if (n_env < 16) envs[n_env++] = optarg; break;
		case 'k': keep = 1; break;
		case 'n': name = optarg; break;
		case 'N': net = optarg; break;
		default: return 2;
		}
	}
	void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "error: %s\n", dlerror());
		return 1;
	}
	const struct hs_backend_v1 *be = dlsym(h, "hs_backend_v1");
	struct hs_fakehost *fh = hs_fakehost_new("modal", NULL);
	struct hs_host_v1 host = *hs_fakehost_host(fh);
	host.resolve_credentials = resolve;
	/* A state directory that outlives one run, for the re-attach test. */
	if (getenv("DRIVE_STATE_DIR"))
		host.state_dir = getenv("DRIVE_STATE_DIR");
	if (getenv("DRIVE_SERVER_URL"))
		hs_fakehost_set(fh, "server_url", getenv("DRIVE_SERVER_URL"));
	char err[HS_ERR_MAX] = "";
	void *state = NULL, *env = NULL;
	struct hs_env_props props = { 0 };
	struct hs_env_spec spec = { .struct_size = sizeof(spec), .flags = HS_SPEC_PERSISTENT,
	                            .session = name, .env_name = name, .network = net };
	int32_t st = be->init(&host, &state, err);
	if (st == HS_OK)
		st = be->open(state, &spec, &env, &props, err);
	if (st != HS_OK) {
		fprintf(stderr, "error: status=%d %s\n", st, err);
		return 1;
	}
	fprintf(stderr, "opened: %s\n", props.note);
	struct hs_exec_req req = { .struct_size = sizeof(req), .argc = (uint32_t)(argc - optind),
	                           .exec_id = 7, .argv = (const char *const *)argv + optind,
	                           .envp = envs, .n_env = n_env, .cwd = cwd, .stdin_data = in,
	                           .stdin_len = in ? strlen(in) : 0, .deadline_ms = deadline,
	                           .sink = { NULL, sink } };
	struct hs_exec_result res = { 0 };
	pthread_t t;
	struct canceller c = { be, env, cancel_after };
	if (cancel_after)
		pthread_create(&t, NULL, cancel_later, &c);
	long t0 = ms_now();
	st = be->exec(env, &req, &res, err);
	long took = ms_now() - t0;
	if (cancel_after)
		pthread_join(t, NULL);
	fprintf(stderr, "\nresult: status=%d exit=%d timed_out=%d cancelled=%d ms=%ld%s%s\n", st,
	        res.exit_code, res.timed_out, res.cancelled, took, err[0] ? " err=" : "", err);
	char e2[HS_ERR_MAX] = "";
	if (be->close(env, keep ? HS_CLOSE_KEEP : 0, e2) != HS_OK)
		fprintf(stderr, "close: %s\n", e2);
	be->fini(state);
	hs_fakehost_free(fh);
	return st == HS_OK ? 0 : 1;
}
