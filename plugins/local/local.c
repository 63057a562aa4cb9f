/*
 * local.c - the local backend: commands run on this machine through a
 * forked hs-runner daemon per session.  It is compiled into hs (the
 * embedded default) but speaks only the plugin ABI, like any other backend.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hs/backend.h>

#define LO_MAX_ATTACH 16

struct lo_state {
	const struct hs_host_v1 *host;
};

struct lo_env {
	struct lo_state *st;
	char dir[512];
	int64_t idle;
	pid_t attach[LO_MAX_ATTACH]; /* our attach processes, reaped by us */
};

static const struct hs_config_key lo_keys[] = {
	{ "isolation", HS_CONF_STRING, "\"none\" or \"namespaces\"" },
	{ "shell", HS_CONF_STRING, "the session shell (default: bash when present, else sh)" },
	{ NULL, 0, NULL },
};

static int32_t
lo_init(const struct hs_host_v1 *host, void **state, char *err)
{
	struct lo_state *st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	st->host = host;
	*state = st;
	return HS_OK;
}

static void
lo_fini(void *state)
{
	free(state);
}

static const char *
lo_shell(struct lo_state *st)
{
	const char *sh = NULL;
	if (st->host->config_string(st->host->ctx, "shell", &sh) == HS_OK && sh && sh[0] == '/' &&
	    access(sh, X_OK) == 0)
		return sh;
	return access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
}

static int
isolation_requested(struct lo_state *st)
{
	const char *iso = NULL;
	return st->host->config_string(st->host->ctx, "isolation", &iso) == HS_OK && iso &&
	       strcmp(iso, "none") != 0;
}

static int32_t
lo_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
	struct lo_state *st = state;
	const char *runner = st->host->runner_path;

	r->runner = runner && access(runner, X_OK) == 0;
	r->ready = r->runner;
	if (!r->ready)
		snprintf(r->reason, sizeof(r->reason),
		         "hs-runner not found or not executable (set runner_path or HS_RUNNER)");
	if (r->ready && isolation_requested(st)) {
		r->ready = 0;
		snprintf(r->reason, sizeof(r->reason),
		         "local.isolation is set but namespace isolation is not in this build; "
		         "hs never runs unisolated when isolation was asked for");
	}
	snprintf(r->detail, sizeof(r->detail), "isolation=none\nshell=%s\nrunner=%s", lo_shell(st),
	         runner ? runner : "");
	return HS_OK;
}

/* The session's runtime directory: created 0700, then checked with lstat. */
static int32_t
lo_private_dir(const char *dir, char *err)
{
	struct stat sb;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, HS_ERR_MAX, "cannot create '%s': %s", dir, strerror(errno));
		return HS_E_IO;
	}
	if (lstat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() ||
	    (sb.st_mode & 07777) != 0700) {
		snprintf(err, HS_ERR_MAX, "'%s' is not a private directory of this user (want mode 0700)",
		         dir);
		return HS_E_PERM;
	}
	return HS_OK;
}

static int32_t
lo_open(void *state, const struct hs_env_spec *spec, void **envp, struct hs_env_props *props,
        char *err)
{
	struct lo_state *st = state;
	struct lo_env *env;
	int32_t rc;

	if ((spec->flags & HS_SPEC_ISOLATE) || isolation_requested(st)) {
		snprintf(err, HS_ERR_MAX, "isolation was asked for, but namespace isolation is not in "
		         "this build of the local backend; refusing to run unisolated");
		return HS_E_UNSUPPORTED;
	}
	if (spec->image && *spec->image) {
		snprintf(err, HS_ERR_MAX, "the local backend has no images (asked for '%s'); use -b docker",
		         spec->image);
		return HS_E_INVALID;
	}
	if (spec->n_mounts) {
		snprintf(err, HS_ERR_MAX, "the local backend cannot mount '%s'; use -b docker",
		         spec->mounts[0]);
		return HS_E_INVALID;
	}
	if (!st->host->runner_path) {
		snprintf(err, HS_ERR_MAX, "hs-runner not found (set runner_path or HS_RUNNER)");
		return HS_E_UNAVAILABLE;
	}
	env = calloc(1, sizeof(*env));
	if (!env) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	env->st = st;
	env->idle = 600;
	if (spec->runner_idle_s > 0)
		env->idle = spec->runner_idle_s;
	int n = snprintf(env->dir, sizeof(env->dir), "%s/%s", st->host->runtime_dir, spec->env_name);
	if (n < 0 || (size_t)n >= sizeof(env->dir) - 16) {
		snprintf(err, HS_ERR_MAX, "runtime directory path for '%s' is too long", spec->env_name);
		free(env);
		return HS_E_INVALID;
	}
	rc = lo_private_dir(env->dir, err);
	if (rc != HS_OK) {
		free(env);
		return rc;
	}
	props->host_access = 1;
	snprintf(props->host_reason, sizeof(props->host_reason),
	         "the local backend runs commands on this machine, as this user");
	snprintf(props->isolation, sizeof(props->isolation), "none");
	props->runner = 1;
	snprintf(props->shell, sizeof(props->shell), "%s", lo_shell(st));
	snprintf(props->runtime_dir, sizeof(props->runtime_dir), "%s", env->dir);
	*envp = env;
	return HS_OK;
}

static void
lo_reap(struct lo_env *env, int block)
{
	for (int i = 0; i < LO_MAX_ATTACH; i++) {
		if (env->attach[i] <= 0)
			continue;
		pid_t r;
		while ((r = waitpid(env->attach[i], NULL, block ? 0 : WNOHANG)) < 0 && errno == EINTR)
			;
		if (r == env->attach[i] || (r < 0 && errno == ECHILD))
			env->attach[i] = 0;
	}
}

static int32_t
lo_runner_stream(void *envp, int32_t *fd, char *err)
{
	struct lo_env *env = envp;
	posix_spawn_file_actions_t fa;
	char idle[32];
	int sv[2], slot = -1;
	pid_t pid;

	lo_reap(env, 0);
	for (int i = 0; i < LO_MAX_ATTACH && slot < 0; i++)
		if (env->attach[i] == 0)
			slot = i;
	if (slot < 0) {
		snprintf(err, HS_ERR_MAX, "too many runner streams for '%s'", env->dir);
		return HS_E_BUSY;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot create a socket pair: %s", strerror(errno));
		return HS_E_IO;
	}
	snprintf(idle, sizeof(idle), "%lld", (long long)env->idle);
	const char *argv[] = { env->st->host->runner_path, "--attach", "--start", "--dir", env->dir,
	                       "--idle", idle, NULL };
	/* The daemon's own environment is minimal: commands get theirs per exec. */
	const char *envv[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
	int e = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, (char *const *)envv);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	if (e != 0) {
		close(sv[0]);
		snprintf(err, HS_ERR_MAX, "cannot start '%s': %s", argv[0], strerror(e));
		return HS_E_IO;
	}
	env->attach[slot] = pid;
	*fd = sv[0];
	return HS_OK;
}

/* Ends the session's runner: `hs-runner --stop` kills every command, waits
 * until all are gone and removes the socket and lock; then the runtime
 * directory, now empty, goes too.  Failures are warnings: nothing is left
 * running either way once the stop succeeded. */
static int
lo_rm(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	return remove(path);
}

static void
lo_stop(struct lo_env *env)
{
	const struct hs_host_v1 *host = env->st->host;
	const char *argv[] = { host->runner_path, "--stop", "--dir", env->dir, NULL };
	const char *envv[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	pid_t pid;
	int status = 0;

	if (!host->runner_path)
		return;
	int e = posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, (char *const *)envv);
	if (e != 0) {
		host->log(host->ctx, HS_LOG_WARN, "cannot start '%s --stop': %s", argv[0], strerror(e));
		return;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		host->log(host->ctx, HS_LOG_WARN, "'%s --stop --dir %s' failed (%s %d)", argv[0],
		          env->dir, WIFEXITED(status) ? "exit" : "signal",
		          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return;
	}
	/*
	 * The directory is the environment's, private (0700, ours): tearing the
	 * environment down removes all of it, the session's shell state included.
	 * FTW_PHYS: a symlink inside is removed, never followed.
	 */
	if (nftw(env->dir, lo_rm, 8, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		host->log(host->ctx, HS_LOG_WARN, "cannot remove the runtime directory '%s': %s",
		          env->dir, strerror(errno));
}

static int32_t
lo_close(void *envp, uint32_t flags, char *err)
{
	struct lo_env *env = envp;
	if (!env)
		return HS_OK;
	/* The core closed its streams first, so each attach process sees EOF and exits. */
	lo_reap(env, 1);
	if (!(flags & HS_CLOSE_KEEP))
		lo_stop(env);
	free(env);
	return HS_OK;
}

const struct hs_backend_v1 hs_builtin_local = {
	HS_BACKEND_V1_HEADER,
	.name = "local",
	.version = PACKAGE_VERSION,
	.summary = "run commands on this machine through a per-session hs-runner",
	.caps = HS_CAP_RUNNER | HS_CAP_PERSIST | HS_CAP_FILES,
	.config_keys = lo_keys,
	.init = lo_init,
	.fini = lo_fini,
	.probe = lo_probe,
	.open = lo_open,
	.runner_stream = lo_runner_stream,
	.close = lo_close,
};
