/* SPDX-License-Identifier: MIT */
/*
 * sg-instance.c - images and instances of the singularity backend: a local
 * image is checked, a remote one is built into the SIF cache (sifcache.c);
 * an instance is started contained with hs-runner and the user's mounts
 * bound, found with "instance list --json", and its shell detected once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yajl/yajl_tree.h>

#include "sg.h"
#include "sifcache.h"

/* ---- Images. ---- */

struct sg_build_ctx {
	const char *exe;
	char *const *envp;
	const char *log;
};

/* Runs in the forked child of the cache: only async-signal-safe calls. */
static int
sg_build_child(void *ctx, const char *source, const char *tmp)
{
	struct sg_build_ctx *b = ctx;
	char *const argv[] = { (char *)b->exe, (char *)"build", (char *)tmp, (char *)source, NULL };
	int fd = open(b->log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || nul < 0)
		return 126;
	dup2(nul, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	execve(b->exe, argv, b->envp);
	return 127;
}

int
sg_is_remote(const char *img)
{
	const char *s = strstr(img, "://");
	return s && s != img && strncmp(img, "instance://", 11) != 0;
}

/* Turn the image the user named into something instance start can use. */
int32_t
sg_image(struct sg_state *st, const char *image, char *out, size_t len, char *note, size_t nlen,
         char *err)
{
	struct stat sb;

	if (!sg_is_remote(image)) {
		if (stat(image, &sb) < 0) {
			snprintf(err, HS_ERR_MAX, "image '%s' not found: %s", image, strerror(errno));
			return HS_E_NOTFOUND;
		}
		if (S_ISREG(sb.st_mode) && !hs_sif_check(image)) {
			snprintf(err, HS_ERR_MAX,
			         "image '%s' is not a SIF file; build one with 'apptainer build' or pass a "
			         "sandbox directory", image);
			return HS_E_INVALID;
		}
		snprintf(out, len, "%s", image);
		return HS_OK;
	}
	struct sg_envv e;
	char log[1200];
	int built = 0;
	if (sg_env_build(st, 0, &e) < 0) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	/* Apptainer's own layer cache and temporary files go to scratch too. */
	const char *const sub[] = { "apptainer-cache", "tmp" };
	for (size_t i = 0; i < 2; i++) {
		char d[1200];
		snprintf(d, sizeof(d), "%s/%s", st->scratch, sub[i]);
		mkdir(d, 0700);
	}
	snprintf(log, sizeof(log), "%s/build.log", st->cache_dir);
	struct sg_build_ctx b = { st->exe, e.v, log };
	struct hs_sifcache c = { .max_bytes = st->cache_max, .stale_s = 600,
	                         .wait_s = st->lock_wait, .build_s = st->build_timeout,
	                         .build = sg_build_child, .ctx = &b };
	snprintf(c.dir, sizeof(c.dir), "%s", st->cache_dir);
	int32_t rc = hs_sifcache_get(&c, image, out, len, &built, err);
	sg_envv_free(&e);
	if (rc == HS_E_IO && strncmp(err, "building", 8) == 0) {
		size_t n = strlen(err);
		snprintf(err + n, HS_ERR_MAX - n, "; see '%s'", log);
	}
	if (rc == HS_OK && built)
		snprintf(note, nlen, "built '%s' into the SIF cache", image);
	return rc;
}

/* ---- Instances. ---- */

/* 1 when the instance is running, 0 when not, -1 with err set. */
int
sg_running(struct sg_state *st, const char *name, char *err)
{
	char out[16384], eout[1024];
	const char *argv[] = { st->exe, "instance", "list", "--json", name, NULL };
	/* Standard error apart: a warning there must not spoil the JSON. */
	int rc = sg_run2(st, argv, 0, 30000, out, sizeof(out), eout, sizeof(eout), err);
	if (rc != 0) {
		if (rc > 0)
			snprintf(err, HS_ERR_MAX, "'%s instance list' failed: %s", st->exe,
			         sg_last_line(eout[0] ? eout : out));
		return -1;
	}
	char ebuf[256];
	yajl_val root = yajl_tree_parse(out, ebuf, sizeof(ebuf));
	const char *path[] = { "instances", NULL };
	yajl_val list = root ? yajl_tree_get(root, path, yajl_t_array) : NULL;
	if (!list) {
		yajl_tree_free(root);
		snprintf(err, HS_ERR_MAX, "'%s instance list --json' printed no instance list", st->exe);
		return -1;
	}
	int found = 0;
	for (size_t i = 0; i < list->u.array.len && !found; i++) {
		const char *ip[] = { "instance", NULL };
		yajl_val v = yajl_tree_get(list->u.array.values[i], ip, yajl_t_string);
		const char *s = v ? YAJL_GET_STRING(v) : NULL;
		found = s && strcmp(s, name) == 0;
	}
	yajl_tree_free(root);
	return found;
}

int
sg_detect_shell(struct sg_env *env, char *shell, size_t len, char *err)
{
	struct sg_state *st = env->st;
	char inst[160], out[256];
	snprintf(inst, sizeof(inst), "instance://%s", env->name);
	const char *argv[] = { st->exe, "exec", "--cleanenv", "--no-privs", inst, "/bin/sh", "-c",
	                       "test -x /bin/bash", NULL };
	int rc = sg_run(st, argv, 0, 60000, out, sizeof(out), err);
	if (rc < 0)
		return -1;
	if (rc != 0 && rc != 1) {
		snprintf(err, HS_ERR_MAX, "cannot run /bin/sh in instance '%s': %s", env->name,
		         sg_last_line(out));
		return -1;
	}
	snprintf(shell, len, "%s", rc == 0 ? "/bin/bash" : "/bin/sh");
	int fd = open(env->shellfile, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		ssize_t w = write(fd, shell, strlen(shell));
		(void)w;
		close(fd);
	}
	return 0;
}

int
sg_read_shell(struct sg_env *env, char *shell, size_t len)
{
	char buf[64];
	int fd = open(env->shellfile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (strcmp(buf, "/bin/bash") != 0 && strcmp(buf, "/bin/sh") != 0)
		return -1;
	snprintf(shell, len, "%s", buf);
	return 0;
}

static int
sg_arg(struct sg_argv *a, const char *s)
{
	if (a->n >= SG_MAX_ARGS)
		return -1;
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
	return 0;
}

/* Append "--bind SRC:DST[:ro]". */
static int
sg_bind(struct sg_argv *a, const char *src, const char *dst, int ro)
{
	size_t len = strlen(src) + strlen(dst) + 5;
	char *s = a->n_owned < SG_MAX_ARGS ? malloc(len) : NULL;
	if (!s)
		return -1;
	snprintf(s, len, "%s:%s%s", src, dst, ro ? ":ro" : "");
	a->owned[a->n_owned++] = s;
	return sg_arg(a, "--bind") < 0 ? -1 : sg_arg(a, s);
}

void
sg_argv_free(struct sg_argv *a)
{
	for (int i = 0; i < a->n_owned; i++)
		free(a->owned[i]);
}

/* A bind path apptainer can parse: absolute, no ':' or ',' (its separators). */
static int
sg_bindable(const char *p)
{
	return p[0] == '/' && !strchr(p, ':') && !strchr(p, ',') && !strchr(p, '\n');
}

/* Add the user's mounts as binds, each assessed by the core. */
int32_t
sg_mounts(struct sg_state *st, const struct hs_env_spec *spec, struct sg_argv *a,
          struct hs_env_props *props, char *err)
{
	const struct hs_host_v1 *h = st->host;
	for (uint32_t i = 0; i < spec->n_mounts; i++) {
		struct hs_mount m;
		char e[HS_ERR_MAX] = "";
		memset(&m, 0, sizeof(m));
		int32_t rc = h->assess_mount(h->ctx, spec->mounts[i], &m, e);
		if (rc != HS_OK || m.kind == HS_MOUNT_INVALID) {
			snprintf(err, HS_ERR_MAX, "mount '%s': %s", spec->mounts[i],
			         e[0] ? e : m.reason[0] ? m.reason : "invalid");
			return HS_E_INVALID;
		}
		if (m.kind != HS_MOUNT_HOST) {
			snprintf(err, HS_ERR_MAX,
			         "mount '%s': apptainer binds host paths only (no volumes or tmpfs; "
			         "--containall already gives a private /tmp)", spec->mounts[i]);
			return HS_E_INVALID;
		}
		if (!sg_bindable(m.source) || !sg_bindable(m.target) ||
		    strncmp(m.target, "/.hs", 4) == 0) {
			snprintf(err, HS_ERR_MAX,
			         "mount '%s': paths must be absolute without ':' or ',' and not under /.hs",
			         spec->mounts[i]);
			return HS_E_INVALID;
		}
		if (sg_bind(a, m.source, m.target, m.read_only) < 0) {
			snprintf(err, HS_ERR_MAX, "too many mounts");
			return HS_E_INVALID;
		}
		if (m.host_access && !m.workspace && !props->host_access) {
			props->host_access = 1;
			snprintf(props->host_reason, sizeof(props->host_reason), "host path '%s' is bound at '%s'%s",
			         m.source, m.target, m.reason[0] ? "" : "");
		}
	}
	if (spec->workdir && *spec->workdir) {
		if (!sg_bindable(spec->workdir)) {
			snprintf(err, HS_ERR_MAX, "workspace '%s' cannot be bound (needs an absolute path "
			         "without ':' or ',')", spec->workdir);
			return HS_E_INVALID;
		}
		if (sg_bind(a, spec->workdir, "/workspace", 0) < 0) {
			snprintf(err, HS_ERR_MAX, "too many mounts");
			return HS_E_INVALID;
		}
	}
	return HS_OK;
}

int32_t
sg_start(struct sg_env *env, const struct hs_env_spec *spec, const char *image,
         struct hs_env_props *props, char *err)
{
	struct sg_state *st = env->st;
	struct sg_argv a = { .n = 0 };
	char out[2048], num[32], cpus[32];
	int32_t rc = HS_E_INVALID;

	if (sg_arg(&a, st->exe) || sg_arg(&a, "instance") || sg_arg(&a, "start") ||
	    /* Containment: own PID/IPC namespaces, minimal /dev, private /tmp and home,
	     * no host home, no host environment, no capabilities or setuid. */
	    sg_arg(&a, "--containall") || sg_arg(&a, "--no-home") || sg_arg(&a, "--cleanenv") ||
	    sg_arg(&a, "--no-privs"))
		goto toomany;
	if (!spec->network || !*spec->network || strcmp(spec->network, "none") == 0) {
		if (sg_arg(&a, "--net") || sg_arg(&a, "--network") || sg_arg(&a, "none"))
			goto toomany;
	} else if (strcmp(spec->network, "host") != 0) {
		snprintf(err, HS_ERR_MAX, "network '%s' is not supported: use \"none\" (the default) or "
		         "\"host\"", spec->network);
		goto out;
	}
	if (sg_bind(&a, st->host->runner_path, SG_IN_RUNNER, 1) || sg_bind(&a, env->rundir, SG_IN_RUNDIR, 0))
		goto toomany;
	if (spec->memory_bytes > 0) {
		snprintf(num, sizeof(num), "%lldB", (long long)spec->memory_bytes);
		if (sg_arg(&a, "--memory") || sg_arg(&a, num))
			goto toomany;
	}
	if (spec->cpus_milli > 0) {
		snprintf(cpus, sizeof(cpus), "%d.%03d", spec->cpus_milli / 1000, spec->cpus_milli % 1000);
		if (sg_arg(&a, "--cpus") || sg_arg(&a, cpus))
			goto toomany;
	}
	rc = sg_mounts(st, spec, &a, props, err);
	if (rc != HS_OK)
		goto out;
	if (sg_arg(&a, image) || sg_arg(&a, env->name))
		goto toomany;
	int r = sg_run(st, a.v, 1, 300000, out, sizeof(out), err);
	if (r != 0) {
		if (r > 0)
			snprintf(err, HS_ERR_MAX, "'%s instance start' of '%s' failed (exit %d): %s", st->exe,
			         env->name, r, sg_last_line(out));
		rc = HS_E_UNAVAILABLE;
		goto out;
	}
	rc = HS_OK;
	goto out;
toomany:
	snprintf(err, HS_ERR_MAX, "too many arguments for instance start");
	rc = HS_E_INVALID;
out:
	sg_argv_free(&a);
	return rc;
}
