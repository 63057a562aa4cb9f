/* SPDX-License-Identifier: MIT */
/*
 * risks.c - host access that only the daemon can see, put to the core's
 * approval logic before the container exists.  The core has already judged
 * the mount specs as written (host paths); this adds a named volume whose
 * local driver binds a host path, the daemon's own socket, and the
 * container options that hand over the host (privileged, host namespaces,
 * devices).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "plugins/docker/docker.h"

static int32_t
put(struct dk_env *env, const char *rule, const char *desc, int critical,
    struct hs_env_props *props, char *err)
{
	const struct hs_host_v1 *h = env->st->host;
	struct hs_risk r = { .rule_id = rule, .description = desc, .critical = critical };
	char e[HS_ERR_MAX] = "";
	int32_t st = h->approve(h->ctx, env->session[0] ? env->session : NULL, &r, e);
	if (st != HS_OK) {
		snprintf(err, HS_ERR_MAX, "%s", e[0] ? e : desc);
		return HS_E_DENIED;
	}
	props->host_access = 1;
	snprintf(props->host_reason, sizeof(props->host_reason), "%s", desc);
	return HS_OK;
}

/* Is path the daemon's socket (same inode), so the container could run anything on the host? */
static int
is_daemon_socket(struct dk_env *env, const char *path)
{
	struct stat a, b;
	return stat(path, &a) == 0 && stat(env->api.sock, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* A named volume of the local driver with a bind option and a device names a host path. */
static int32_t
check_volume(struct dk_env *env, const struct hs_mount *m, struct hs_env_props *props, char *err)
{
	static const char *const drvp[] = { "Driver", NULL };
	static const char *const typ[] = { "Options", "type", NULL };
	static const char *const op[] = { "Options", "o", NULL };
	static const char *const devp[] = { "Options", "device", NULL };
	char path[600], esc[400], e[HS_ERR_MAX], desc[400];
	long http;
	yajl_val t = NULL;
	int32_t st = HS_OK;

	dk_url_escape(m->source, esc, sizeof(esc));
	snprintf(path, sizeof(path), "/volumes/%s", esc);
	st = dk_api_json(&env->api, "GET", path, NULL, &http, &t, e);
	if (st == HS_E_NOTFOUND)
		return HS_OK; /* the daemon creates a plain volume */
	if (st != HS_OK) {
		snprintf(err, HS_ERR_MAX, "cannot inspect volume '%s': %s", m->source, e);
		return st;
	}
	const char *drv = dk_json_str(t, drvp), *type = dk_json_str(t, typ), *o = dk_json_str(t, op),
	           *dev = dk_json_str(t, devp);
	int bind = dev && *dev == '/' && ((o && strstr(o, "bind")) || (type && strcmp(type, "none") == 0));
	if (drv && strcmp(drv, "local") == 0 && bind) {
		int sock = is_daemon_socket(env, dev);
		snprintf(desc, sizeof(desc), "named volume '%s' binds the host path '%s'%s", m->source,
		         dev, sock ? " (the docker socket)" : "");
		st = put(env, sock ? "docker.socket" : "docker.volume-host-bind", desc,
		         sock || strcmp(dev, "/") == 0, props, err);
	}
	yajl_tree_free(t);
	return st;
}

int32_t
dk_risks_check(struct dk_env *env, const struct hs_env_spec *spec, const struct hs_mount *mounts,
               struct hs_env_props *props, char *err)
{
	const struct hs_host_v1 *h = env->st->host;
	char desc[400];
	int32_t st;

	for (uint32_t i = 0; i < spec->n_mounts; i++) {
		const struct hs_mount *m = &mounts[i];
		if (m->kind == HS_MOUNT_VOLUME) {
			if ((st = check_volume(env, m, props, err)) != HS_OK)
				return st;
		} else if (m->kind == HS_MOUNT_HOST) {
			if (is_daemon_socket(env, m->source)) {
				snprintf(desc, sizeof(desc), "the docker socket '%s' is mounted at '%s'",
				         m->source, m->target);
				if ((st = put(env, "docker.socket", desc, 1, props, err)) != HS_OK)
					return st;
			}
			/* Approved by the core before open(); it still is host access. */
			if (!m->workspace) {
				props->host_access = 1;
				snprintf(props->host_reason, sizeof(props->host_reason),
				         "host path '%s' is mounted at '%s'", m->source, m->target);
			}
		}
	}
	int32_t priv = 0;
	if (h->config_bool(h->ctx, "privileged", &priv) == HS_OK && priv &&
	    (st = put(env, "docker.privileged", "the container is privileged (docker.privileged)", 1,
	              props, err)) != HS_OK)
		return st;
	const char *s = NULL;
	if (h->config_string(h->ctx, "pid_mode", &s) == HS_OK && s && strcmp(s, "host") == 0 &&
	    (st = put(env, "docker.host-pid", "the container shares the host's process namespace "
	              "(docker.pid_mode = \"host\")", 1, props, err)) != HS_OK)
		return st;
	s = NULL;
	if (h->config_string(h->ctx, "ipc_mode", &s) == HS_OK && s && strcmp(s, "host") == 0 &&
	    (st = put(env, "docker.host-ipc", "the container shares the host's IPC namespace "
	              "(docker.ipc_mode = \"host\")", 0, props, err)) != HS_OK)
		return st;
	if (spec->network && strcmp(spec->network, "host") == 0 &&
	    (st = put(env, "docker.host-network", "the container shares the host's network "
	              "(--network host)", 0, props, err)) != HS_OK)
		return st;
	const char *const *dev = NULL;
	uint32_t nd = 0;
	if (h->config_strings(h->ctx, "devices", &dev, &nd) == HS_OK) {
		for (uint32_t i = 0; i < nd; i++) {
			snprintf(desc, sizeof(desc), "host device '%s' is added to the container", dev[i]);
			if ((st = put(env, "docker.device", desc, 0, props, err)) != HS_OK)
				return st;
		}
	}
	return HS_OK;
}
