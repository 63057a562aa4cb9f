/* SPDX-License-Identifier: MIT */
/*
 * local.c - the local backend: commands run on this machine through a
 * forked hs-runner daemon per session.  It is compiled into hs (the
 * embedded default) but speaks only the plugin ABI, like any other backend.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hs/backend.h>

#include <hs/hsb.h>
#include "plugins/local/isolate.h"

#define LO_MAX_ATTACH 16

struct lo_state {
	const struct hs_host_v1 *host;
	char isolate[PATH_MAX]; /* hs-isolate, next to hs-runner; empty when missing */
};

struct lo_env {
	struct lo_state *st;
	char dir[512];
	int64_t idle;
	int isolated;
	char workspace[PATH_MAX];
	int share_net;
	int64_t memory;
	pid_t attach[LO_MAX_ATTACH]; /* our attach processes, reaped by us */
};

static const struct hs_config_key lo_keys[] = {
	{ "isolation", HS_CONF_STRING, "\"none\" or \"namespaces\"" },
	{ "isolation_bind_ro", HS_CONF_STRINGS, "isolated mode: more host paths, bound read-only" },
	{ "isolation_bind_rw", HS_CONF_STRINGS, "isolated mode: more host paths, bound read-write" },
	{ "isolation_nofile", HS_CONF_INT, "isolated mode: open-file limit (RLIMIT_NOFILE)" },
	{ "isolation_nproc", HS_CONF_INT, "isolated mode: process limit (RLIMIT_NPROC, per user)" },
	{ "isolation_data", HS_CONF_INT, "isolated mode: writable memory per process (RLIMIT_DATA)" },
	{ "shell", HS_CONF_STRING, "the session shell (default: bash when present, else sh)" },
	{ "runner_handoff", HS_CONF_BOOL,
	  "not isolated: the core talks to the runner daemon directly (default true)" },
	{ NULL, 0, NULL },
};

/*
 * Default limits of isolated commands: 4096 processes, and 8 GiB of writable
 * memory per process.  A build with AddressSanitizer maps terabytes of
 * shadow memory, so its runner could not start under any data limit: there,
 * none by default.
 */
#define LO_ISOLATION_NPROC 4096
#if defined(__SANITIZE_ADDRESS__)
#define LO_ISOLATION_DATA 0
#else
#define LO_ISOLATION_DATA (8LL << 30)
#endif

/* What an admin's lock on each key means: what a user may still do to it. */
static const char *const lo_isolation_values[] = { "namespaces", "none", NULL };
static const struct hs_config_rule lo_rules[] = {
	{ .name = "isolation", .order = HS_CORDER_ENUM, .values = lo_isolation_values },
	{ .name = "isolation_bind_ro", .order = HS_CORDER_SUBSET, .checks = HS_CCHECK_ABSPATH },
	{ .name = "isolation_bind_rw", .order = HS_CORDER_SUBSET, .checks = HS_CCHECK_ABSPATH },
	{ .name = "isolation_nofile", .order = HS_CORDER_LESS_ZERO_MAX },
	{ .name = "isolation_nproc", .order = HS_CORDER_LESS_ZERO_MAX },
	{ .name = "isolation_data", .order = HS_CORDER_LESS_ZERO_MAX },
	{ .name = "shell", .order = HS_CORDER_FIXED, .checks = HS_CCHECK_ABSPATH },
	{ .name = NULL },
};

/*
 * hs-isolate is installed next to hs-runner; in the build tree, where
 * hs-runner is runner/hs-runner, it is plugins/local/hs-isolate.
 */
static void
lo_find_isolate(struct lo_state *st)
{
	const char *runner = st->host->runner_path;
	char cand[PATH_MAX];
	st->isolate[0] = 0;
	if (!runner || runner[0] != '/')
		return;
	if (strcmp(runner, HS_BUILDDIR "/runner/hs-runner") == 0)
		snprintf(cand, sizeof(cand), "%s/plugins/local/hs-isolate", HS_BUILDDIR);
	else {
		const char *slash = strrchr(runner, '/');
		snprintf(cand, sizeof(cand), "%.*s/hs-isolate", (int)(slash - runner), runner);
	}
	if (access(cand, X_OK) == 0)
		snprintf(st->isolate, sizeof(st->isolate), "%s", cand);
}

static int32_t
lo_init(const struct hs_host_v1 *host, void **state, char *err)
{
	struct lo_state *st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	st->host = host;
	lo_find_isolate(st);
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

/* 1: namespaces asked for by config, 0: none, -1: an unknown value. */
static int
isolation_configured(struct lo_state *st, const char **val)
{
	const char *iso = NULL;
	if (st->host->config_string(st->host->ctx, "isolation", &iso) != HS_OK || !iso ||
	    strcmp(iso, "none") == 0)
		return 0;
	*val = iso;
	return strcmp(iso, "namespaces") == 0 ? 1 : -1;
}

/*
 * Runs hs-isolate with argv and waits; its one-line complaint (without the
 * "hs-isolate: " prefix) lands in msg.  Returns its exit status, or -1.
 */
static int
lo_helper(const char *const *argv, char *msg, size_t len)
{
	static const char *const envv[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	struct hsb_run r = { .argv = argv, .envp = envv, .out = msg, .out_cap = len };
	char err[HSB_ERR_MAX];

	if (hsb_run(&r, err) < 0) {
		snprintf(msg, len, "%s", err);
		return -1;
	}
	size_t got = strlen(msg);
	while (got && msg[got - 1] == '\n')
		msg[--got] = 0;
	if (strncmp(msg, "hs-isolate: ", 12) == 0)
		memmove(msg, msg + 12, strlen(msg + 12) + 1);
	return r.status < 128 ? r.status : -1;
}

/* Can this machine isolate?  0 yes; -1 no, why in msg (with the fix). */
static int
lo_isolation_check(struct lo_state *st, char *msg, size_t len)
{
	if (!st->isolate[0]) {
		snprintf(msg, len, "hs-isolate is not installed next to '%s'; reinstall hs",
		         st->host->runner_path ? st->host->runner_path : "hs-runner");
		return -1;
	}
	const char *argv[] = { st->isolate, "--probe", "--dir", st->host->runtime_dir, NULL };
	if (lo_helper(argv, msg, len) != 0) {
		if (!msg[0])
			snprintf(msg, len, "'%s --probe' failed", st->isolate);
		return -1;
	}
	return 0;
}

static int32_t
lo_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
	struct lo_state *st = state;
	const char *runner = st->host->runner_path;
	const char *val = NULL;
	char why[400];

	(void)flags;
	(void)err;
	r->runner = runner && access(runner, X_OK) == 0;
	r->ready = r->runner;
	if (!r->ready)
		snprintf(r->reason, sizeof(r->reason),
		         "hs-runner not found or not executable (set runner_path or HS_RUNNER)");
	int conf = isolation_configured(st, &val);
	int avail = lo_isolation_check(st, why, sizeof(why)) == 0;
	if (r->ready && conf < 0) {
		r->ready = 0;
		snprintf(r->reason, sizeof(r->reason),
		         "local.isolation is '%s'; use \"none\" or \"namespaces\"", val);
	} else if (r->ready && conf > 0 && !avail) {
		r->ready = 0;
		snprintf(r->reason, sizeof(r->reason),
		         "local.isolation is \"namespaces\" but isolation is unavailable: %s; hs never "
		         "runs unisolated when isolation was asked for", why);
	}
	snprintf(r->detail, sizeof(r->detail),
	         "isolation=%s\nisolation_available=%s\n%s%s%sshell=%s\nrunner=%s\nisolate=%s",
	         conf > 0 ? "namespaces" : "none", avail ? "yes" : "no",
	         avail ? "" : "isolation_reason=", avail ? "" : why, avail ? "" : "\n", lo_shell(st),
	         runner ? runner : "", st->isolate);
	return HS_OK;
}

/* Is dir "/" or the home directory, or above it? */
static int
exposes_home(const char *dir)
{
	const char *home = getenv("HOME");
	size_t n = strlen(dir);
	if (strcmp(dir, "/") == 0)
		return 1;
	return home && strncmp(dir, home, n) == 0 && (home[n] == 0 || home[n] == '/');
}

/*
 * Checks what an isolated environment can honour and fixes its workspace:
 * -C DIR or the configured workspace (spec->workdir), else the current
 * directory, never / or the home directory itself.
 */
static int32_t
lo_isolated_open(struct lo_env *env, const struct hs_env_spec *spec, char *err)
{
	char cwd[PATH_MAX];
	const char *ws = spec->workdir && *spec->workdir ? spec->workdir : NULL;

	if (spec->cpus_milli > 0) {
		snprintf(err, HS_ERR_MAX, "the local backend's isolated mode cannot limit CPUs (that "
		         "needs cgroups); drop --cpus or use -b docker");
		return HS_E_INVALID;
	}
	if (spec->network && *spec->network && strcmp(spec->network, "none") != 0 &&
	    strcmp(spec->network, "host") != 0) {
		snprintf(err, HS_ERR_MAX, "the local backend's isolated mode has no network '%s'; use "
		         "\"none\" (loopback only, the default) or \"host\"", spec->network);
		return HS_E_INVALID;
	}
	env->share_net = spec->network && strcmp(spec->network, "host") == 0;
	env->memory = spec->memory_bytes;
	if (!ws) {
		if (!getcwd(cwd, sizeof(cwd))) {
			snprintf(err, HS_ERR_MAX, "cannot get the current directory: %s", strerror(errno));
			return HS_E_IO;
		}
		ws = cwd;
	}
	if (!realpath(ws, env->workspace)) {
		snprintf(err, HS_ERR_MAX, "workspace '%s': %s", ws, strerror(errno));
		return HS_E_INVALID;
	}
	struct stat sb;
	if (stat(env->workspace, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		snprintf(err, HS_ERR_MAX, "workspace '%s' is not a directory", env->workspace);
		return HS_E_INVALID;
	}
	if (exposes_home(env->workspace)) {
		snprintf(err, HS_ERR_MAX, "isolated mode would bind '%s' (the root or your home) as the "
		         "workspace; pass -C DIR or set workspace to a project directory",
		         env->workspace);
		return HS_E_INVALID;
	}
	env->isolated = 1;
	return HS_OK;
}

/*
 * Makes sure the sandbox of env runs with its daemon listening: hs-isolate
 * starts it, or finds it running.  Its reason on failure is passed on.
 */
static int32_t
lo_isolate_start(struct lo_env *env, char *err)
{
	struct lo_state *st = env->st;
	const char *argv[64];
	char idle[32], mem[32], lim[3][32], msg[HS_ERR_MAX];
	char hide[3][PATH_MAX];
	int n = 0;
	const char *const *list;
	uint32_t nl = 0;
	int64_t v;

	if (!st->isolate[0]) {
		snprintf(err, HS_ERR_MAX, "isolation was asked for, but hs-isolate is not installed "
		         "next to '%s'; reinstall hs (refusing to run unisolated)", st->host->runner_path);
		return HS_E_UNAVAILABLE;
	}
	snprintf(idle, sizeof(idle), "%lld", (long long)env->idle);
	argv[n++] = st->isolate;
	argv[n++] = "--start";
	argv[n++] = "--dir";
	argv[n++] = env->dir;
	argv[n++] = "--runner";
	argv[n++] = st->host->runner_path;
	argv[n++] = "--workspace";
	argv[n++] = env->workspace;
	argv[n++] = "--idle";
	argv[n++] = idle;
	const char *home = getenv("HOME");
	if (home && home[0] == '/') {
		argv[n++] = "--home";
		argv[n++] = home;
	}
	/* hs's own config, state and cache, wherever XDG puts them. */
	const char *xdg[3] = { "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME" };
	for (int i = 0; i < 3; i++) {
		const char *x = getenv(xdg[i]);
		if (x && x[0] == '/') {
			snprintf(hide[i], sizeof(hide[i]), "%s/hs", x);
			argv[n++] = "--hide";
			argv[n++] = hide[i];
		}
	}
	/* The admin configuration: hs-isolate hides the installed one itself; the
	 * core also reads another when its test override names one. */
	const char *adm = getenv("HS_SYSCONFDIR_FOR_TESTS");
	if (adm && adm[0] == '/') {
		argv[n++] = "--hide";
		argv[n++] = adm;
	}
	if (env->memory > 0) {
		snprintf(mem, sizeof(mem), "%lld", (long long)env->memory);
		argv[n++] = "--memory";
		argv[n++] = mem;
	}
	/* Resource limits from config, else these defaults; 0 keeps the inherited. */
	static const char *const limits[3][2] = {
		{ "isolation_nofile", "--nofile" }, { "isolation_nproc", "--nproc" },
		{ "isolation_data", "--data" },
	};
	static const int64_t defaults[3] = { 0, LO_ISOLATION_NPROC, LO_ISOLATION_DATA };
	for (int i = 0; i < 3; i++) {
		if (st->host->config_int(st->host->ctx, limits[i][0], &v) != HS_OK)
			v = defaults[i];
		if (v > 0) {
			snprintf(lim[i], sizeof(lim[i]), "%lld", (long long)v);
			argv[n++] = limits[i][1];
			argv[n++] = lim[i];
		}
	}
	if (env->share_net)
		argv[n++] = "--share-net";
	const char *keys[2] = { "isolation_bind_ro", "isolation_bind_rw" };
	for (int k = 0; k < 2; k++) {
		if (st->host->config_strings(st->host->ctx, keys[k], &list, &nl) != HS_OK)
			continue;
		for (uint32_t i = 0; i < nl && n < 60; i++) {
			argv[n++] = k ? "--rw" : "--ro";
			argv[n++] = list[i];
		}
	}
	argv[n] = NULL;
	int rc = lo_helper(argv, msg, sizeof(msg));
	if (rc != 0) {
		snprintf(err, HS_ERR_MAX, "isolation is unavailable: %.400s; refusing to run unisolated",
		         msg[0] ? msg : "hs-isolate failed");
		return HS_E_UNAVAILABLE;
	}
	return HS_OK;
}

/*
 * The record that an environment was started isolated, and around which
 * workspace: in the backend's state directory, never in the runtime
 * directory, which the sandbox can write (a record there could name "/etc"
 * as the next workspace).
 */
static void
lo_sticky_path(struct lo_env *env, char *path, size_t len)
{
	const char *name = strrchr(env->dir, '/');
	snprintf(path, len, "%s/%s.isolated", env->st->host->state_dir, name ? name + 1 : env->dir);
}

/* Was the environment started isolated?  1 and its workspace, else 0. */
static int
lo_sticky_read(struct lo_env *env, char *ws, size_t len)
{
	char path[PATH_MAX];
	lo_sticky_path(env, path, sizeof(path));
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, ws, len - 1);
	close(fd);
	ws[n > 0 ? n : 0] = 0;
	return 1;
}

static int32_t
lo_sticky_write(struct lo_env *env, char *err)
{
	char path[PATH_MAX];
	lo_sticky_path(env, path, sizeof(path));
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	size_t n = strlen(env->workspace);
	if (fd < 0 || write(fd, env->workspace, n) != (ssize_t)n) {
		snprintf(err, HS_ERR_MAX, "cannot write '%s': %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return HS_E_IO;
	}
	close(fd);
	return HS_OK;
}

static int32_t
lo_open(void *state, const struct hs_env_spec *spec, void **envp, struct hs_env_props *props,
        char *err)
{
	struct lo_state *st = state;
	struct lo_env *env;
	int32_t rc;

	const char *val = NULL;
	int conf = isolation_configured(st, &val);
	if (conf < 0) {
		snprintf(err, HS_ERR_MAX, "local.isolation is '%s'; use \"none\" or \"namespaces\"", val);
		return HS_E_CONFIG;
	}
	int isolated = conf > 0 || (spec->flags & HS_SPEC_ISOLATE);
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
	/* Attach only: the environment is its runtime directory; no directory, nothing to attach to. */
	struct stat dst;
	if ((spec->flags & HS_SPEC_ATTACH) && lstat(env->dir, &dst) < 0 && errno == ENOENT) {
		snprintf(err, HS_ERR_MAX, "local environment '%s' is gone", spec->env_name);
		free(env);
		return HS_E_NOTFOUND;
	}
	rc = hsb_private_dir(env->dir, err);
	if (rc != HS_OK) {
		free(env);
		return rc;
	}
	/* Isolation sticks to a session: one that started isolated stays so. */
	char sticky[PATH_MAX];
	int had = lo_sticky_read(env, sticky, sizeof(sticky));
	if (spec->flags & HS_SPEC_ATTACH)
		isolated = had; /* attach as it is; runner_stream starts its sandbox on demand */
	if (isolated || had) {
		struct hs_env_spec sp = *spec;
		if (had && !(spec->workdir && *spec->workdir))
			sp.workdir = sticky;
		rc = lo_isolated_open(env, &sp, err);
		if (rc == HS_OK && !(spec->flags & HS_SPEC_ATTACH))
			rc = lo_isolate_start(env, err);
		if (rc == HS_OK && !had)
			rc = lo_sticky_write(env, err);
		if (rc != HS_OK) {
			free(env);
			return rc;
		}
		props->host_access = 0;
		snprintf(props->isolation, sizeof(props->isolation), "namespaces");
		props->runner = 1;
		snprintf(props->shell, sizeof(props->shell), "%s", lo_shell(st));
		/* The daemon's directory, the same path inside and out (the session's
		 * shell snapshot lives there); DIR itself is the host's alone. */
		snprintf(props->runtime_dir, sizeof(props->runtime_dir), "%s/%s", env->dir, ISO_BOX);
		snprintf(props->note, sizeof(props->note), "isolated with namespaces; workspace %s",
		         env->workspace);
		/* The sandbox sees only its workspace, and has no environment of its own. */
		props->env_flags = HS_ENVP_HOST_ENV;
		if (strlen(env->workspace) < sizeof(props->start_dir))
			memcpy(props->start_dir, env->workspace, strlen(env->workspace) + 1);
		*envp = env;
		return HS_OK;
	}
	props->host_access = 1;
	snprintf(props->host_reason, sizeof(props->host_reason),
	         "the local backend runs commands on this machine, as this user");
	snprintf(props->isolation, sizeof(props->isolation), "none");
	props->runner = 1;
	snprintf(props->shell, sizeof(props->shell), "%s", lo_shell(st));
	snprintf(props->runtime_dir, sizeof(props->runtime_dir), "%s", env->dir);
	/* Commands run on this machine: the caller's environment and directory. */
	props->env_flags = HS_ENVP_HOST_ENV | HS_ENVP_CALLER_CWD;
	*envp = env;
	return HS_OK;
}

static int32_t
lo_runner_stream(void *envp, int32_t *fd, char *err)
{
	struct lo_env *env = envp;
	char idle[32];
	int slot = hsb_attach_slot(env->attach, LO_MAX_ATTACH);
	pid_t pid;

	if (slot < 0) {
		snprintf(err, HS_ERR_MAX, "too many runner streams for '%s'", env->dir);
		return HS_E_BUSY;
	}
	if (env->isolated) {
		/* The daemon may have gone idle: start the sandbox again, never a plain one. */
		int32_t rc = lo_isolate_start(env, err);
		if (rc != HS_OK)
			return rc;
	}
	snprintf(idle, sizeof(idle), "%lld", (long long)env->idle);
	/* Not isolated: the proxy hands the daemon's connection over to the
	 * core, which then talks to the daemon without a process between. */
	int32_t direct = 1;
	if (env->st->host->config_bool(env->st->host->ctx, "runner_handoff", &direct) != HS_OK)
		direct = 1;
	const char *argv[] = { env->st->host->runner_path, "--attach", "--start", "--dir", env->dir,
	                       "--idle", idle, direct ? "--handoff" : NULL, NULL };
	/* Isolated: attach only, since a daemon started here would run on the host. */
	const char *argv_iso[] = { env->st->host->runner_path, "--attach", "--dir", env->dir, NULL };
	/* The daemon's own environment is minimal: commands get theirs per exec. */
	const char *envv[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	struct hsb_attach_spawn sp = { .argv = env->isolated ? argv_iso : argv, .envp = envv };
	if (hsb_attach_start(&sp, &pid, fd, err) != 0)
		return HS_E_IO;
	env->attach[slot] = pid;
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

/*
 * Waits (up to 5 s) until the sandbox's init is gone: it holds its lock
 * until it has killed and reaped everything left in the PID namespace.
 * The lock is in DIR, which the sandbox cannot write; it is opened without
 * following or blocking all the same, and must be a regular file.  Returns
 * 1 when the sandbox is gone, 0 when it may still run.
 */
static int
lo_wait_sandbox(struct lo_env *env)
{
	char path[600];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/%s", env->dir, ISO_ALIVE_FILE);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		env->st->host->log(env->st->host->ctx, HS_LOG_WARN,
		                   "'%s' is not a regular file: cannot tell whether the sandbox is gone",
		                   path);
		return 0;
	}
	/* Short steps first: the sandbox is usually gone within a millisecond or two. */
	for (int waited = 0, step = 1; waited < 5000; waited += step, step = step < 10 ? step + 1 : 10) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			close(fd);
			return 1;
		}
		poll(NULL, 0, step);
	}
	close(fd);
	env->st->host->log(env->st->host->ctx, HS_LOG_WARN,
	                   "the sandbox of '%s' is still running 5 s after its runner stopped", env->dir);
	return 0;
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
	if (env->isolated) {
		char path[PATH_MAX];
		/* A sandbox still running could swap what nftw walks below: leave it. */
		if (!lo_wait_sandbox(env))
			return;
		lo_sticky_path(env, path, sizeof(path));
		unlink(path);
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
	hsb_attach_reap(env->attach, LO_MAX_ATTACH, 5000);
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
	.config_rules = lo_rules,
	.init = lo_init,
	.fini = lo_fini,
	.probe = lo_probe,
	.open = lo_open,
	.runner_stream = lo_runner_stream,
	.close = lo_close,
};
