/* SPDX-License-Identifier: MIT */
/*
 * fixture.c - one source for every bad-plugin fixture of the loader tests;
 * each variant is selected with -D when tests/abi/loader.test compiles it.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hs/backend.h>

#ifndef FIX_NAME
#define FIX_NAME "fixgood"
#endif
#ifndef FIX_MAJOR
#define FIX_MAJOR HS_ABI_MAJOR
#endif
#ifndef FIX_MINOR
#define FIX_MINOR HS_ABI_MINOR
#endif
#ifndef FIX_SIZE
#define FIX_SIZE sizeof(struct hs_backend_v1)
#endif
#ifndef FIX_SIG
#define FIX_SIG HS_BUILD_SIG
#endif

#ifdef FIX_CRASH
__attribute__((constructor)) static void
crash(void)
{
	abort();
}
#endif

static int32_t
fx_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
#ifdef FIX_UNAVAILABLE
	r->ready = 0;
	return HS_OK; /* deliberately gives no reason: plugin-check must flag it */
#else
	r->ready = 1;
	return HS_OK;
#endif
}

#ifdef FIX_WORKS
/*
 * A working exec-mode backend: commands run on this machine.  Each open
 * appends "open FLAGS" to $FIX_LOG; an environment is a marker file in
 * $FIX_LOG.d, so an attach-only open (ABI 1.1) can find it gone.
 */
static int32_t
fx_open(void *state, const struct hs_env_spec *spec, void **env, struct hs_env_props *props,
        char *err)
{
	const char *log = getenv("FIX_LOG");
	char mark[4096];
	FILE *f;

	if (!log) {
		snprintf(err, HS_ERR_MAX, "FIX_LOG is not set");
		return HS_E_CONFIG;
	}
	if ((f = fopen(log, "a"))) {
		fprintf(f, "open %u\n", spec->flags);
		fclose(f);
	}
	snprintf(mark, sizeof(mark), "%s.d/%s", log, spec->env_name);
	if (spec->flags & (1u << 2) /* HS_SPEC_ATTACH, by value: a 1.0 build lacks the name */) {
		if (access(mark, F_OK) != 0) {
			snprintf(err, HS_ERR_MAX, "environment '%s' is gone", spec->env_name);
			return HS_E_NOTFOUND;
		}
	} else if ((f = fopen(mark, "w"))) {
		fclose(f);
	}
	props->host_access = 1;
	snprintf(props->host_reason, sizeof(props->host_reason), "fixture runs on the host");
	snprintf(props->isolation, sizeof(props->isolation), "none");
	snprintf(props->shell, sizeof(props->shell), "/bin/sh");
	snprintf(props->runtime_dir, sizeof(props->runtime_dir), "%s.d", log);
	*env = strdup(mark);
	return *env ? HS_OK : HS_E_NOMEM;
}

static int32_t
fx_exec(void *env, const struct hs_exec_req *req, struct hs_exec_result *res, char *err)
{
	int p[2], status = 0;
	char buf[4096];
	ssize_t n;

	if (pipe(p) < 0)
		return HS_E_IO;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		for (uint32_t i = 0; i < req->n_env; i++)
			putenv((char *)req->envp[i]);
		if (req->cwd && chdir(req->cwd) < 0)
			_exit(126);
		execvp(req->argv[0], (char *const *)req->argv);
		_exit(127);
	}
	close(p[1]);
	while ((n = read(p[0], buf, sizeof(buf))) > 0)
		req->sink.write(req->sink.ctx, 1, buf, (uint64_t)n);
	close(p[0]);
	waitpid(pid, &status, 0);
	res->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return HS_OK;
}
#else
static int32_t
fx_open(void *state, const struct hs_env_spec *spec, void **env, struct hs_env_props *props,
        char *err)
{
	return HS_E_UNSUPPORTED;
}

static int32_t
fx_exec(void *env, const struct hs_exec_req *req, struct hs_exec_result *res, char *err)
{
	return HS_E_UNSUPPORTED;
}
#endif

static int32_t
fx_close(void *env, uint32_t flags, char *err)
{
#ifdef FIX_WORKS
	if (env && !(flags & HS_CLOSE_KEEP))
		unlink(env);
	free(env);
#endif
	return HS_OK;
}

#ifdef FIX_BADRULE
/* ABI 1.1 rules that do not fit the keys: an integer order on a string. */
static const struct hs_config_key fx_keys[] = { { "mode", HS_CONF_STRING, "a mode" }, { NULL, 0, NULL } };
static const struct hs_config_rule fx_rules[] = { { .name = "mode", .order = HS_CORDER_LESS },
                                                   { .name = NULL } };
#endif

#ifndef FIX_NO_SYMBOL
HS_BACKEND_EXPORT const struct hs_backend_v1 hs_backend_v1 = {
	.abi_major = FIX_MAJOR,
	.abi_minor = FIX_MINOR,
	.struct_size = FIX_SIZE,
	.build_sig = FIX_SIG,
	.name = FIX_NAME,
	.version = "0",
	.summary = "loader test fixture",
	.caps = HS_CAP_EXEC,
	.probe = fx_probe,
#ifndef FIX_NO_OPEN
	.open = fx_open,
#endif
	.exec = fx_exec,
	.close = fx_close,
#ifdef FIX_BADRULE
	.config_keys = fx_keys,
	.config_rules = fx_rules,
#endif
};
#else
HS_BACKEND_EXPORT int hs_backend_v0 = 1;
#endif
