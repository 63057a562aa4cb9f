/* SPDX-License-Identifier: MIT */
/*
 * core.c - the process-wide context: config, paths, backends and the host
 * table each backend receives.
 */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/safety/approval.h"
#include "core/pipeline.h"
#include "core/guard.h"
#include "core/config/hsconf.h"
#include "core/pathsec.h"
#include "core/safety/allowlist.h"
#include "core/safety/credentials.h"
#include "core/safety/audit.h"
#include "core/safety/mounts.h"
#include "core/safety/safety.h"

void
hs_die_msg(const char *fmt, ...)
{
	va_list ap;
	fputs("hs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
hs_warn(const char *fmt, ...)
{
	va_list ap;
	fputs("hs: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void
conf_warn(void *ctx, const char *msg)
{
	struct hs_core *c = ctx;
	if (!c->quiet)
		hs_warn("%s", msg);
}

const char *
hs_core_sysconfdir(void)
{
	/* The test suite points hs at its own admin layer; an installed hs
	 * ignores the variable, or any user could swap out the layer that
	 * holds the admin's locked ceilings. */
	const char *t = getenv("HS_SYSCONFDIR_FOR_TESTS");
	return t && *t && hs_paths_from_build_tree() ? t : HS_SYSCONFDIR;
}

int
hs_core_init(struct hs_core *c, const char *extra_file, char *err, size_t errlen)
{
	struct hs_conf_opts o = { 0 };
	const char *const *dirs = NULL;
	size_t n = 0;
	const char *rp = NULL;

	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	c->audit_fd = -1;
	if (hs_paths_init(&c->paths, err, errlen) < 0)
		return -1;
	o.sysconfdir = hs_core_sysconfdir();
	o.extra_file = extra_file;
	if (!extra_file && getenv("HS_CONFIG"))
		extra_file = getenv("HS_CONFIG");
	if (extra_file && extra_file[0] == '/')
		snprintf(c->extra_config, sizeof(c->extra_config), "%s", extra_file);
	else if (extra_file && *extra_file && getcwd(c->extra_config, sizeof(c->extra_config)))
		snprintf(c->extra_config + strlen(c->extra_config),
		         sizeof(c->extra_config) - strlen(c->extra_config), "/%s", extra_file);
	o.warn = conf_warn;
	o.warn_ctx = c;
	if (hs_conf_load(&c->conf, &o, err, errlen) < 0)
		return -1;
	hs_conf_strings(c->conf, "plugin_dirs", &dirs, &n);
	c->n_plugin_dirs = hs_paths_plugin_dirs(&c->paths, dirs, n, c->plugin_dirs, HS_MAX_PLUGIN_DIRS);
	hs_conf_string(c->conf, "runner_path", &rp);
	if (hs_paths_runner(&c->paths, rp, c->runner_path, sizeof(c->runner_path), c->runner_err,
	                    sizeof(c->runner_err)) < 0)
		c->runner_path[0] = '\0';
	return 0;
}

void
hs_core_free(struct hs_core *c)
{
	/* Backends are finalised but never unloaded (see DESIGN: no dlclose). */
	for (struct hs_backend *b = c->backends, *next; b; b = next) {
		next = b->next;
		if (b->initialised && b->plugin.desc.fini)
			b->plugin.desc.fini(b->state);
		free(b);
	}
	c->backends = NULL;
	for (size_t i = 0; i < c->n_plugin_dirs; i++)
		free(c->plugin_dirs[i]);
	c->n_plugin_dirs = 0;
	if (c->policy)
		hs_policy_free(c->policy);
	c->policy = NULL;
	if (c->allow)
		hs_allowlist_free(c->allow);
	c->allow = NULL;
	if (c->audit_fd >= 0)
		close(c->audit_fd);
	c->audit_fd = -1;
	hs_guard_free(c);
	hs_conf_free(c->conf);
	c->conf = NULL;
}

/* Host callbacks: ctx is the struct hs_backend. */

static void
host_log(void *ctx, int32_t level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	struct hs_backend *b = ctx;
	va_list ap;

	if (level >= HS_LOG_INFO && !getenv("HS_DEBUG"))
		return;
	fprintf(stderr, "hs: %s: %s: ", b->plugin.name, (level >= 0 && level <= 3) ? names[level] : "log");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void
section_key(const struct hs_backend *b, const char *key, char *out, size_t len)
{
	snprintf(out, len, "%s.%s", b->plugin.name, key);
}

static int32_t
map_conf(int r)
{
	return r == 0 ? HS_OK : r == 1 ? HS_E_NOTFOUND : HS_E_CONFIG;
}

static int32_t
host_config_string(void *ctx, const char *key, const char **out)
{
	struct hs_backend *b = ctx;
	char k[256];
	section_key(b, key, k, sizeof(k));
	return map_conf(hs_conf_string(b->core->conf, k, out));
}

static int32_t
host_config_int(void *ctx, const char *key, int64_t *out)
{
	struct hs_backend *b = ctx;
	char k[256];
	section_key(b, key, k, sizeof(k));
	return map_conf(hs_conf_int(b->core->conf, k, out));
}

static int32_t
host_config_bool(void *ctx, const char *key, int32_t *out)
{
	struct hs_backend *b = ctx;
	char k[256];
	int v = 0;
	section_key(b, key, k, sizeof(k));
	int32_t r = map_conf(hs_conf_bool(b->core->conf, k, &v));
	if (r == HS_OK)
		*out = v;
	return r;
}

static int32_t
host_config_strings(void *ctx, const char *key, const char *const **out, uint32_t *n)
{
	struct hs_backend *b = ctx;
	char k[256];
	size_t nn = 0;
	section_key(b, key, k, sizeof(k));
	int32_t r = map_conf(hs_conf_strings(b->core->conf, k, out, &nn));
	*n = (uint32_t)nn;
	return r;
}

static int32_t
host_assess_mount(void *ctx, const char *spec, struct hs_mount *out, char *err)
{
	struct hs_backend *b = ctx;
	const char *ws = NULL;
	hs_conf_string(b->core->conf, "workspace", &ws);
	if (hs_mount_assess(spec, b->core->paths.home, ws, out) < 0 || out->kind == HS_MOUNT_INVALID) {
		snprintf(err, HS_ERR_MAX, "invalid mount '%s': %s", spec, out->reason);
		return HS_E_INVALID;
	}
	return HS_OK;
}

/*
 * A risk only the plugin can see (a privileged container, say).  While a
 * session of this thread is being opened, it is decided like a host mount
 * with that session's mode, grants and client (hs run's tty, a serve
 * client's approval event).  Otherwise (plugin-check, a probe) nobody can
 * answer: the configured mode alone decides, ask and deny refuse.
 */
static int32_t
host_approve(void *ctx, const char *session, const struct hs_risk *risk, char *err)
{
	struct hs_backend *b = ctx;
	struct hs_session *s = hs_session_opening();
	int mode = s ? s->mode : hs_approval_mode_resolve(b->core, NULL, -1);
	struct hs_gate g = {
		.session = session,
		.backend = b->plugin.name,
		.mode = mode < 0 ? HS_APPROVAL_DENY : mode,
		.grants = s ? &s->grants : NULL,
		.asker = s && s->mode == HS_APPROVAL_ASK ? s->asker : NULL,
	};
	struct hs_approval_out out;
	if (!risk || !risk->rule_id) {
		snprintf(err, HS_ERR_MAX, "approve: no risk given");
		return HS_E_INVALID;
	}
	if (hs_approval_risk(b->core, &g, risk, &out))
		return HS_OK;
	snprintf(err, HS_ERR_MAX, "%s", out.why);
	return HS_E_DENIED;
}

static int32_t
host_resolve_credentials(void *ctx, const char *provider, struct hs_credentials *out, char *err)
{
	struct hs_backend *b = ctx;
	char k[3][128];
	const char *v[3] = { NULL, NULL, NULL };
	static const char *const names[3] = { "mode", "gateway_url", "gateway_token" };

	if (!provider || !out) {
		snprintf(err, HS_ERR_MAX, "resolve_credentials: no provider or result");
		return HS_E_INVALID;
	}
	for (int i = 0; i < 3; i++) {
		snprintf(k[i], sizeof(k[i]), "%.60s.%s", provider, names[i]);
		if (hs_conf_string(b->core->conf, k[i], &v[i]) < 0) {
			snprintf(err, HS_ERR_MAX, "config key '%s' must be a string", k[i]);
			return HS_E_CONFIG;
		}
	}
	struct hs_cred_query q = {
		.provider = provider, .mode = v[0], .gateway_url = v[1], .gateway_token = v[2],
		.home = b->core->paths.home, .uid = geteuid(),
	};
	return hs_cred_resolve(&q, out, err, HS_ERR_MAX);
}

int64_t
hs_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t
host_now_ms(void *ctx)
{
	(void)ctx;
	return (uint64_t)hs_now_ms();
}

const struct hs_host_v1 *
hs_core_host_for(struct hs_core *c, struct hs_backend *b, const char *name)
{
	snprintf(b->plugin.name, sizeof(b->plugin.name), "%s", name);
	b->core = c;
	snprintf(b->state_dir, sizeof(b->state_dir), "%s/%s", c->paths.state, name);
	snprintf(b->cache_dir, sizeof(b->cache_dir), "%s/%s", c->paths.cache, name);
	snprintf(b->runtime_dir, sizeof(b->runtime_dir), "%s/%s", c->paths.runtime, name);
	b->host = (struct hs_host_v1){
		.abi_major = HS_ABI_MAJOR,
		.abi_minor = HS_ABI_MINOR,
		.struct_size = sizeof(struct hs_host_v1),
		.ctx = b,
		.log = host_log,
		.config_string = host_config_string,
		.config_int = host_config_int,
		.config_bool = host_config_bool,
		.config_strings = host_config_strings,
		.assess_mount = host_assess_mount,
		.approve = host_approve,
		.resolve_credentials = host_resolve_credentials,
		.state_dir = b->state_dir,
		.cache_dir = b->cache_dir,
		.runtime_dir = b->runtime_dir,
		.runner_path = c->runner_path[0] ? c->runner_path : NULL,
		.now_ms = host_now_ms,
	};
	return &b->host;
}

/* Make path a private directory (0700, whole chain checked); a refusal
 * ends with "or HINT" (the variable that moves it). */
static int
private_dir(const char *path, const char *hint, char *err, size_t errlen)
{
	int fd = hs_pathsec_dir_open(path, hint, err, errlen);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* Create the per-backend directories before init. */
static int
backend_dirs(struct hs_backend *b, char *err, size_t errlen)
{
	const char *const d[] = { b->state_dir, b->cache_dir, b->runtime_dir };
	static const char *const hint[] = { "set XDG_STATE_HOME", "set XDG_CACHE_HOME",
		                            "set XDG_RUNTIME_DIR" };
	for (size_t i = 0; i < 3; i++)
		if (private_dir(d[i], hint[i], err, errlen) < 0)
			return -1;
	return 0;
}

/* The registry of built-in backends: the one place the core names a backend. */
static const struct hs_builtin builtins[] = {
	{ "local", &hs_builtin_local, "local.isolation" },
};

const struct hs_builtin *
hs_core_builtin(const char *name)
{
	for (size_t i = 0; name && i < sizeof(builtins) / sizeof(builtins[0]); i++)
		if (strcmp(builtins[i].name, name) == 0)
			return &builtins[i];
	return NULL;
}

struct hs_backend *
hs_core_backend(struct hs_core *c, const char *name, char *err, size_t errlen)
{
	const struct hs_builtin *bi = hs_core_builtin(name);
	struct hs_backend *b;
	char e[HS_ERR_MAX] = "";

	for (b = c->backends; b; b = b->next)
		if (strcmp(b->plugin.name, name) == 0)
			return b;
	b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (bi) {
		b->plugin.builtin = 1;
		snprintf(b->plugin.path, sizeof(b->plugin.path), "(built-in)");
		b->plugin.desc = *bi->desc;
	} else {
		int r = hs_loader_find((const char *const *)c->plugin_dirs, c->n_plugin_dirs, name,
		                       &b->plugin);
		if (r == 1) {
			snprintf(err, errlen, "unknown backend '%s' (no %s.so on the plugin path; see hs backends)",
			         name, name);
			goto fail;
		}
		if (r < 0) {
			snprintf(err, errlen, "cannot load backend '%s': %s: %s", name, b->plugin.path,
			         b->plugin.reason);
			goto fail;
		}
	}
	hs_core_host_for(c, b, name);
	if (backend_dirs(b, err, errlen) < 0)
		goto fail;
	/* The plugin's keys join the schema: locks on them get its order (ABI 1.1). */
	if (hs_conf_declare(c->conf, name, b->plugin.desc.config_keys, b->plugin.desc.config_rules, e,
	                    sizeof(e)) < 0) {
		snprintf(err, errlen, "%s", e);
		goto fail;
	}
	hs_conf_check_section(c->conf, name, b->plugin.desc.config_keys);
	if (b->plugin.desc.init) {
		int32_t st = b->plugin.desc.init(&b->host, &b->state, e);
		if (st != HS_OK) {
			snprintf(err, errlen, "backend '%s' failed to start: %s", name,
			         e[0] ? e : hs_strerror(st));
			goto fail;
		}
	}
	b->initialised = 1;
	b->next = c->backends;
	c->backends = b;
	return b;
fail:
	free(b);
	return NULL;
}

struct hs_policy *
hs_core_policy(struct hs_core *c, char *err, size_t errlen)
{
	char shipped[PATH_MAX], admin[PATH_MAX], tree[PATH_MAX];
	const char *dirs[8];
	const char *const *extra = NULL;
	size_t n = 0, n_extra = 0;
	const char *protect[16];
	size_t np = 0;
	char userconf[PATH_MAX], allow[PATH_MAX];

	if (c->policy)
		return c->policy;
	snprintf(tree, sizeof(tree), "%s/policy", HS_SRCDIR);
	snprintf(shipped, sizeof(shipped), "%s/policy", HS_DATADIR);
	snprintf(admin, sizeof(admin), "%s/policy.d", hs_core_sysconfdir());
	dirs[n++] = c->paths.in_build_tree ? tree : shipped;
	dirs[n++] = admin;
	/* Policy dirs the admin layers configured are trusted and read first; a
	 * user layer's come after them and may only add rules. */
	hs_conf_strings(c->conf, "policy_dirs", &extra, &n_extra);
	for (size_t i = 0; i < n_extra && n < 8; i++)
		if (hs_conf_admin_has(c->conf, "policy_dirs", extra[i]))
			dirs[n++] = extra[i];
	size_t user_from = n;
	for (size_t i = 0; i < n_extra && n < 8; i++)
		if (!hs_conf_admin_has(c->conf, "policy_dirs", extra[i]))
			dirs[n++] = extra[i];

	snprintf(userconf, sizeof(userconf), "%s", c->paths.config);
	snprintf(allow, sizeof(allow), "%s/allow.list", c->paths.config);
	protect[np++] = hs_core_sysconfdir();
	protect[np++] = userconf;
	protect[np++] = allow;
	protect[np++] = shipped;
	protect[np++] = HS_PLUGINDIR;
	for (size_t i = 0; i < c->n_plugin_dirs && np < 16; i++)
		protect[np++] = c->plugin_dirs[i];
	struct hs_policy_paths pp = { .protected_paths = protect, .n_protected = np,
	                              .home = c->paths.home };
	if (hs_policy_load_layers(&c->policy, dirs, n, user_from, &pp, err, errlen) < 0) {
		/*
		 * A user layer that breaks the add-only rule (or does not load) is
		 * ignored whole: hs goes on under the trusted policy, as if the
		 * user's files were absent, and says so.  A trusted layer that
		 * fails still stops hs.
		 */
		char e2[512];
		if (user_from == n || hs_policy_load_layers(&c->policy, dirs, user_from, user_from, &pp, e2,
		                                            sizeof(e2)) < 0)
			return NULL;
		hs_warn("%s; the user policy directories are ignored", err);
		err[0] = 0;
	}
	return c->policy;
}

/* Load the allow list once; called with c->mu held. */
static struct hs_allowlist *
allowlist_locked(struct hs_core *c, char *err, size_t errlen)
{
	char path[PATH_MAX], e[512];
	if (c->allow || c->allow_tried)
		goto out;
	c->allow_tried = 1;
	/* The directory is the user's config dir; create it private if missing. */
	if (access(c->paths.config, F_OK) < 0) {
		if (private_dir(c->paths.config, "set XDG_CONFIG_HOME", e, sizeof(e)) < 0) {
			hs_warn("allow list unavailable: %s", e);
			goto out;
		}
		hs_guard_rebase(c, c->paths.config); /* hs's own: the guard keeps it */
	}
	snprintf(path, sizeof(path), "%s/allow.list", c->paths.config);
	if (hs_allowlist_load(&c->allow, path, e, sizeof(e)) < 0) {
		hs_warn("allow list unavailable: %s", e);
		c->allow = NULL;
	}
out:
	if (!c->allow && err)
		snprintf(err, errlen, "the allow list could not be loaded (see the warning above)");
	return c->allow;
}

int
hs_core_allow_check(struct hs_core *c, const char *rule_id, const char *argv_norm)
{
	pthread_mutex_lock(&c->mu);
	struct hs_allowlist *al = allowlist_locked(c, NULL, 0);
	int r = al && hs_allowlist_check(al, rule_id, argv_norm);
	pthread_mutex_unlock(&c->mu);
	return r;
}

int
hs_core_allow_add(struct hs_core *c, const char *rule_id, const char *argv_norm, char *err,
                  size_t errlen)
{
	pthread_mutex_lock(&c->mu);
	struct hs_allowlist *al = allowlist_locked(c, err, errlen);
	int r = al ? hs_allowlist_add(al, rule_id, argv_norm, err, errlen) : -1;
	pthread_mutex_unlock(&c->mu);
	/* hs's own write: the guard takes the allow list as it now is. */
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/allow.list", c->paths.config);
	hs_guard_rebase(c, c->paths.config);
	hs_guard_rebase(c, path);
	return r;
}

const char *
hs_core_audit_path(struct hs_core *c, char *buf, size_t len)
{
	const char *p = NULL;
	if (hs_conf_string(c->conf, "audit_log", &p) != 0 || !p) {
		snprintf(buf, len, "%s/audit.log", c->paths.state);
		p = buf;
	}
	return p;
}

int
hs_core_audit(struct hs_core *c, const struct hs_audit_record *r, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int on = 1, rc = 0;

	pthread_mutex_lock(&c->mu);
	hs_conf_bool(c->conf, "audit", &on);
	if (!on)
		goto out;
	if (c->audit_fd < 0) {
		const char *p = hs_core_audit_path(c, path, sizeof(path));
		/* The default lives in hs's own state dir: make it, private. */
		size_t sl = strlen(c->paths.state);
		if (strncmp(p, c->paths.state, sl) == 0 && p[sl] == '/' &&
		    private_dir(c->paths.state, "set XDG_STATE_HOME", err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		c->audit_fd = hs_audit_open(p, err, errlen);
		if (c->audit_fd < 0) {
			rc = -1;
			goto out;
		}
	}
	if (hs_audit_append(c->audit_fd, r, err, errlen) < 0) {
		/* Opened again for the next record: a full disk may clear. */
		close(c->audit_fd);
		c->audit_fd = -1;
		rc = -1;
	}
out:
	pthread_mutex_unlock(&c->mu);
	return rc;
}
