/* SPDX-License-Identifier: MIT */
/*
 * singularity.c - the singularity backend: each session runs in a named
 * Apptainer (or Singularity) instance, started contained (--containall
 * --no-home --cleanenv --no-privs), with hs-runner bound in read-only and
 * started once per instance; every stream is one
 * "apptainer exec instance://NAME hs-runner --attach".
 *
 * This file holds the configuration, init and probe, and the ops (open,
 * runner_stream, close); running apptainer is in sg-run.c, images and
 * instances in sg-instance.c, the SIF cache in sifcache.c, their shared
 * state in sg.h.
 */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <hs/backend.h>

#include <hs/hsb.h>
#include "sg.h"
#include "sifcache.h"

#define SG_NFS_MAGIC 0x6969

static const struct hs_config_key sg_keys[] = {
	{ "executable", HS_CONF_STRING, "apptainer or singularity to use (default: apptainer, then singularity, on PATH)" },
	{ "image", HS_CONF_STRING, "the default image when none is given (a SIF path, a sandbox directory, or docker://...)" },
	{ "scratch", HS_CONF_STRING, "scratch directory (default: /scratch/$USER/hs when /scratch is writable, else the state dir)" },
	{ "cache_dir", HS_CONF_STRING, "where remote images are built into SIF files (default: <scratch>/sif-cache)" },
	{ "cache_max", HS_CONF_STRING, "size cap of the SIF cache, e.g. \"20G\" (default 20G; 0: no cap)" },
	{ "build_timeout", HS_CONF_INT, "seconds one image build may take (default 3600)" },
	{ "lock_wait", HS_CONF_INT, "seconds to wait for another process building the same image (default 3600)" },
	{ "env_passthrough", HS_CONF_STRINGS, "names of host variables handed to the instance (as APPTAINERENV_*)" },
	{ NULL, 0, NULL },
};

/* Under an admin's lock: the pass-through list may only lose names. */
static const struct hs_config_rule sg_rules[] = {
	{ .name = "env_passthrough", .order = HS_CORDER_SUBSET, .checks = HS_CCHECK_ENVNAME },
	{ .name = NULL },
};

/* ---- Helpers. ---- */

static int
sg_find_in_path(const char *prog, char *out, size_t len)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		if (n > 0 && path[0] == '/') {
			int k = snprintf(out, len, "%.*s/%s", (int)n, path, prog);
			if (k > 0 && (size_t)k < len && access(out, X_OK) == 0)
				return 0;
		}
		path += n;
		if (*path == ':')
			path++;
	}
	out[0] = '\0';
	return -1;
}

/*
 * Scratch: create missing directories (0700) down to dir, then require its
 * whole chain from "/" to be root's or this user's and writable by nobody
 * else, and dir itself this user's (hsb_dir_check, hs/hsb.h).
 */
static int
sg_scratch_dir(const char *dir, char *err)
{
	return hsb_dir_check(dir, HSB_DIR_CREATE | HSB_DIR_NOWRITE,
	                           "set singularity.scratch", err);
}

/* Parse "20G", "512M", "1048576"; returns -1 on nonsense. */
static int
sg_parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	uint64_t mul = 1;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case 't': case 'T': mul = 1ull << 40; end++; break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -1;
	*out = v * mul;
	return 0;
}

/* ---- init / probe. ---- */

/* Find the executable (config, else apptainer, else singularity on PATH); "" when none. */
static void
sg_resolve(const struct hs_host_v1 *h, char *exe, size_t len, char *flavour, size_t flen)
{
	const char *v = NULL;

	exe[0] = '\0';
	if (h->config_string(h->ctx, "executable", &v) == HS_OK && v && *v) {
		if (strchr(v, '/'))
			snprintf(exe, len, "%s", access(v, X_OK) == 0 ? v : "");
		else
			sg_find_in_path(v, exe, len);
	} else if (sg_find_in_path("apptainer", exe, len) < 0) {
		sg_find_in_path("singularity", exe, len);
	}
	const char *base = strrchr(exe, '/');
	snprintf(flavour, flen, "%s",
	         base && strstr(base, "singularity") ? "singularity" : "apptainer");
}

static void
sg_scratch(struct sg_state *st)
{
	const struct hs_host_v1 *h = st->host;
	const char *v = NULL;
	struct passwd *pw = getpwuid(geteuid());
	struct stat sb;

	if (h->config_string(h->ctx, "scratch", &v) == HS_OK && v && v[0] == '/') {
		snprintf(st->scratch, sizeof(st->scratch), "%s", v);
	} else if (pw && stat("/scratch", &sb) == 0 && S_ISDIR(sb.st_mode) &&
	           access("/scratch", W_OK) == 0) {
		snprintf(st->scratch, sizeof(st->scratch), "/scratch/%s/hs", pw->pw_name);
	} else {
		snprintf(st->scratch, sizeof(st->scratch), "%s", h->state_dir);
	}
	if (h->config_string(h->ctx, "cache_dir", &v) == HS_OK && v && v[0] == '/')
		snprintf(st->cache_dir, sizeof(st->cache_dir), "%s", v);
	else
		snprintf(st->cache_dir, sizeof(st->cache_dir), "%s/sif-cache", st->scratch);
}

static int32_t
sg_init(const struct hs_host_v1 *host, void **state, char *err)
{
	struct sg_state *st = calloc(1, sizeof(*st));
	const char *v = NULL;
	int64_t i;

	if (!st) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	st->host = host;
	st->cache_max = 20ull << 30;
	st->build_timeout = 3600;
	st->lock_wait = 3600;
	if (host->config_string(host->ctx, "cache_max", &v) == HS_OK && v &&
	    sg_parse_size(v, &st->cache_max) < 0) {
		snprintf(err, HS_ERR_MAX, "singularity.cache_max '%s' is not a size (e.g. \"20G\")", v);
		free(st);
		return HS_E_CONFIG;
	}
	if (host->config_int(host->ctx, "cache_max", &i) == HS_OK && i >= 0)
		st->cache_max = (uint64_t)i;
	if (host->config_int(host->ctx, "build_timeout", &i) == HS_OK && i > 0)
		st->build_timeout = i;
	if (host->config_int(host->ctx, "lock_wait", &i) == HS_OK && i >= 0)
		st->lock_wait = i;
	/* Resolved once: open and the streams of other threads read it. */
	sg_resolve(host, st->exe, sizeof(st->exe), st->flavour, sizeof(st->flavour));
	sg_scratch(st);
	*state = st;
	return HS_OK;
}

static void
sg_fini(void *state)
{
	free(state);
}

static int32_t
sg_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
	struct sg_state *st = state;
	const char *runner = st->host->runner_path;
	char out[512];

	(void)flags;
	r->runner = runner && access(runner, X_OK) == 0;
	if (!st->exe[0]) {
		const char *v = NULL;
		if (st->host->config_string(st->host->ctx, "executable", &v) == HS_OK && v && *v)
			snprintf(r->reason, sizeof(r->reason),
			         "singularity.executable '%s' is not an executable; fix the setting or "
			         "install Apptainer (https://apptainer.org/docs/admin/main/installation.html)",
			         v);
		else
			snprintf(r->reason, sizeof(r->reason),
			         "neither 'apptainer' nor 'singularity' is on PATH; install Apptainer "
			         "(https://apptainer.org/docs/admin/main/installation.html; Debian 12 has no "
			         "package) or set singularity.executable");
		snprintf(r->detail, sizeof(r->detail), "executable=\nscratch=%s\ncache_dir=%s",
		         st->scratch, st->cache_dir);
		return HS_OK;
	}
	const char *argv[] = { st->exe, "version", NULL };
	int rc = sg_run(st, argv, 0, 10000, out, sizeof(out), err);
	if (rc != 0) {
		snprintf(r->reason, sizeof(r->reason), "'%s version' failed: %s", st->exe,
		         rc < 0 ? err : sg_last_line(out));
		err[0] = '\0';
		return HS_OK;
	}
	if (!r->runner) {
		snprintf(r->reason, sizeof(r->reason),
		         "hs-runner not found or not executable (set runner_path or HS_RUNNER)");
	} else {
		r->ready = 1;
	}
	snprintf(r->detail, sizeof(r->detail),
	         "executable=%s\nversion=%s\nscratch=%s\ncache_dir=%s\ncache_max=%llu", st->exe,
	         sg_last_line(out), st->scratch, st->cache_dir, (unsigned long long)st->cache_max);
	return HS_OK;
}

/* ---- Open. ---- */

static int
sg_name_ok(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
		      (s[n] >= '0' && s[n] <= '9') || s[n] == '-' || s[n] == '_' || s[n] == '.'))
			return 0;
	return n > 0 && n < 100 && s[0] != '.';
}

static int32_t
sg_open(void *state, const struct hs_env_spec *spec, void **envp, struct hs_env_props *props,
        char *err)
{
	struct sg_state *st = state;
	const struct hs_host_v1 *h = st->host;
	struct sg_env *env;
	struct statfs sf;
	const char *image = spec->image;
	char sif[1400], shell[64] = "";
	int32_t rc;

	if (!st->exe[0]) {
		snprintf(err, HS_ERR_MAX, "neither 'apptainer' nor 'singularity' is on PATH; install "
		         "Apptainer or set singularity.executable (see hs backends)");
		return HS_E_UNAVAILABLE;
	}
	if (!h->runner_path) {
		snprintf(err, HS_ERR_MAX, "hs-runner not found (set runner_path or HS_RUNNER)");
		return HS_E_UNAVAILABLE;
	}
	if (!image || !*image)
		h->config_string(h->ctx, "image", &image);
	if ((!image || !*image) && !(spec->flags & HS_SPEC_ATTACH)) {
		snprintf(err, HS_ERR_MAX, "no image: pass --image (a SIF file, a sandbox directory or "
		         "docker://...) or set singularity.image");
		return HS_E_INVALID;
	}
	if (!spec->env_name || !sg_name_ok(spec->env_name)) {
		snprintf(err, HS_ERR_MAX, "environment name '%s' is not a valid instance name",
		         spec->env_name ? spec->env_name : "");
		return HS_E_INVALID;
	}
	env = calloc(1, sizeof(*env));
	if (!env) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	*envp = env;
	env->st = st;
	env->idle = spec->runner_idle_s > 0 ? spec->runner_idle_s : 600;
	snprintf(env->name, sizeof(env->name), "%s", spec->env_name);
	snprintf(env->rundir, sizeof(env->rundir), "%s/%s", h->runtime_dir, env->name);
	snprintf(env->shellfile, sizeof(env->shellfile), "%s/%s.shell", h->state_dir, env->name);
	snprintf(env->logfile, sizeof(env->logfile), "%s/%s.log", h->state_dir, env->name);
	if (spec->flags & HS_SPEC_ATTACH) {
		/* Attach only: no running instance, nothing to attach to; start none. */
		int up = sg_running(st, env->name, err);
		if (up < 0)
			return HS_E_UNAVAILABLE;
		if (up == 0) {
			snprintf(err, HS_ERR_MAX, "no running instance '%s'", env->name);
			env->opened = 1; /* close() clears the files the vanished instance left */
			return HS_E_NOTFOUND;
		}
	}
	rc = hsb_private_dir(env->rundir, err);
	if (rc != HS_OK)
		return rc;
	if (statfs(env->rundir, &sf) == 0 && sf.f_type == SG_NFS_MAGIC) {
		snprintf(err, HS_ERR_MAX, "runtime directory '%s' is on NFS; set XDG_RUNTIME_DIR to a "
		         "node-local directory", env->rundir);
		return HS_E_CONFIG;
	}
	rc = sg_scratch_dir(st->scratch, err);
	if (rc != HS_OK)
		return rc;
	int running = sg_running(st, env->name, err);
	if (running < 0)
		return HS_E_UNAVAILABLE;
	if (running) {
		/* Re-attach: the instance keeps the mounts it was started with; a
		 * validation pass still reports its host access truthfully. */
		struct sg_argv a = { .n = 0 };
		rc = sg_mounts(st, spec, &a, props, err);
		sg_argv_free(&a);
		if (rc != HS_OK)
			return rc;
		snprintf(props->note, sizeof(props->note), "re-attached to running instance '%s'",
		         env->name);
	} else {
		rc = sg_image(st, image, sif, sizeof(sif), props->note, sizeof(props->note), err);
		if (rc != HS_OK)
			return rc;
		unlink(env->shellfile);
		rc = sg_start(env, spec, sif, props, err);
		/* Another session's eviction or a cleaner may have removed the image
		 * between the check and the start: fetch it again, once. */
		if (rc != HS_OK && sg_is_remote(image) && !hs_sif_check(sif)) {
			rc = sg_image(st, image, sif, sizeof(sif), props->note, sizeof(props->note), err);
			if (rc == HS_OK)
				rc = sg_start(env, spec, sif, props, err);
		}
		if (rc != HS_OK)
			return rc;
		env->started = 1;
	}
	if (sg_read_shell(env, shell, sizeof(shell)) < 0 &&
	    sg_detect_shell(env, shell, sizeof(shell), err) < 0)
		return HS_E_UNAVAILABLE;
	snprintf(props->isolation, sizeof(props->isolation), "container");
	props->runner = 1;
	snprintf(props->shell, sizeof(props->shell), "%s", shell);
	snprintf(props->runtime_dir, sizeof(props->runtime_dir), "%s", SG_IN_RUNDIR);
	env->opened = 1;
	return HS_OK;
}

/* ---- Streams and teardown. ---- */

static int32_t
sg_runner_stream(void *envp, int32_t *fd, char *err)
{
	struct sg_env *env = envp;
	struct sg_state *st = env->st;
	struct sg_envv e;
	char idle[32], inst[160];
	int slot = hsb_attach_slot(env->attach, SG_MAX_ATTACH);
	pid_t pid;

	if (slot < 0) {
		snprintf(err, HS_ERR_MAX, "too many runner streams for instance '%s'", env->name);
		return HS_E_BUSY;
	}
	if (sg_env_build(st, 1, &e) < 0) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	snprintf(idle, sizeof(idle), "%lld", (long long)env->idle);
	snprintf(inst, sizeof(inst), "instance://%s", env->name);
	/*
	 * The daemon is started by whichever stream finds none, so every exec
	 * carries the pass-through variables (exec builds its own environment;
	 * it does not inherit the instance's).
	 */
	const char *argv[] = { st->exe, "exec", "--cleanenv", "--no-privs", inst, SG_IN_RUNNER,
	                       "--attach", "--start", "--dir", SG_IN_RUNDIR, "--idle", idle, NULL };
	/* Apptainer's own messages must not mix into the command's stderr. */
	struct hsb_attach_spawn sp = { .argv = argv, .envp = (const char *const *)e.v,
	                              .stderr_path = env->logfile };
	int rc = hsb_attach_start(&sp, &pid, fd, err);
	sg_envv_free(&e);
	if (rc != 0)
		return HS_E_IO;
	env->attach[slot] = pid;
	return HS_OK;
}

static int
sg_rm(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb, (void)type, (void)ftw;
	return remove(path);
}

static int32_t
sg_close(void *envp, uint32_t flags, char *err)
{
	struct sg_env *env = envp;
	int32_t rc = HS_OK;
	if (!env)
		return HS_OK;
	/* The core closed its streams first, so each attach process sees EOF and exits. */
	hsb_attach_reap(env->attach, SG_MAX_ATTACH, 5000);
	/*
	 * After a failed open, only an instance this open started is torn down:
	 * a running session whose re-attach failed is left alone.
	 */
	if (!(flags & HS_CLOSE_KEEP) && env->name[0] && (env->opened || env->started)) {
		struct sg_state *st = env->st;
		char out[1024];
		int running = sg_running(st, env->name, err);
		if (running > 0) {
			const char *argv[] = { st->exe, "instance", "stop", env->name, NULL };
			int r = sg_run(st, argv, 0, 60000, out, sizeof(out), err);
			if (r != 0) {
				if (r > 0)
					snprintf(err, HS_ERR_MAX, "'%s instance stop %s' failed: %s", st->exe,
					         env->name, sg_last_line(out));
				rc = HS_E_IO;
			}
		}
		if (rc == HS_OK) {
			err[0] = '\0';
			/* FTW_PHYS: a symlink inside is removed, never followed. */
			if (env->rundir[0] && nftw(env->rundir, sg_rm, 8, FTW_DEPTH | FTW_PHYS) < 0 &&
			    errno != ENOENT)
				st->host->log(st->host->ctx, HS_LOG_WARN, "cannot remove '%s': %s", env->rundir,
				              strerror(errno));
			unlink(env->shellfile);
			unlink(env->logfile);
		}
	}
	free(env);
	return rc;
}

HS_BACKEND_EXPORT const struct hs_backend_v1 hs_backend_v1 = {
	HS_BACKEND_V1_HEADER,
	.name = "singularity",
	.version = PACKAGE_VERSION,
	.summary = "run each session in a contained Apptainer/Singularity instance (HPC)",
	.caps = HS_CAP_RUNNER | HS_CAP_MOUNTS | HS_CAP_IMAGE | HS_CAP_NETWORK | HS_CAP_LIMITS |
	        HS_CAP_PERSIST | HS_CAP_FILES | HS_CAP_ISOLATED,
	.config_keys = sg_keys,
	.config_rules = sg_rules,
	.init = sg_init,
	.fini = sg_fini,
	.probe = sg_probe,
	.open = sg_open,
	.runner_stream = sg_runner_stream,
	.close = sg_close,
};
