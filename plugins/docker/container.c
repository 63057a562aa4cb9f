/* SPDX-License-Identifier: MIT */
/*
 * container.c - one hardened container per session: create, inspect, start,
 * remove, and the reaping of orphans.
 *
 * Hardening (hs-docker(7)): every capability dropped but the few a shell
 * run as root needs, no-new-privileges, a pids limit, the spec's memory and
 * CPU limits, a noexec tmpfs on /tmp, network "none" unless asked, and an
 * init process (docker-init) as PID 1 that reaps orphans.  The container's
 * main process is the session's hs-runner daemon; no secret is ever put in
 * its config: the environment of a command travels in the runner's frames.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yajl/yajl_gen.h>

#include "plugins/docker/docker.h"

/* The capabilities a normal shell run as root needs: own and chmod files,
 * read files regardless of mode, signal its children, switch users (su,
 * setpriv in package scripts). */
static const char *const dk_caps[] = { "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",
	                               "SETGID", "SETUID", NULL };

static void
gs(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void
gkv(yajl_gen g, const char *k, const char *v)
{
	gs(g, k);
	gs(g, v);
}

static int64_t
conf_int(struct dk_env *env, const char *key, int64_t def)
{
	int64_t v;
	const struct hs_host_v1 *h = env->st->host;
	return h->config_int(h->ctx, key, &v) == HS_OK ? v : def;
}

static void
gen_mounts(yajl_gen g, const struct dk_create *c)
{
	gs(g, "Mounts");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < c->spec->n_mounts; i++) {
		const struct hs_mount *m = &c->mounts[i];
		yajl_gen_map_open(g);
		gkv(g, "Type", m->kind == HS_MOUNT_HOST ? "bind" : m->kind == HS_MOUNT_TMPFS ? "tmpfs"
		                                                                           : "volume");
		if (m->kind == HS_MOUNT_HOST || m->kind == HS_MOUNT_VOLUME)
			gkv(g, "Source", m->source);
		gkv(g, "Target", m->target);
		gs(g, "ReadOnly");
		yajl_gen_bool(g, m->read_only);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

int32_t
dk_container_create(struct dk_env *env, const struct dk_create *c, char *err)
{
	static const char *const idp[] = { "Id", NULL };
	const struct hs_env_spec *spec = c->spec;
	char idle[32], created[32], path[512], esc[256];
	const unsigned char *body;
	size_t blen;
	long http;
	yajl_val t = NULL;
	int32_t st;
	yajl_gen g = yajl_gen_alloc(NULL);

	if (!g) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	snprintf(idle, sizeof(idle), "%lld", (long long)env->idle);
	snprintf(created, sizeof(created), "%lld", (long long)time(NULL));
	yajl_gen_map_open(g);
	gkv(g, "Image", c->image);
	gs(g, "Entrypoint");
	yajl_gen_array_open(g);
	if (c->runner) {
		/* The runner daemon is the main process: when it idles out, the
		 * container stops, and the next use starts it again. */
		gs(g, DK_RUNNER);
		gs(g, "--daemon");
		gs(g, "--foreground");
		gs(g, "--dir");
		gs(g, DK_RUNDIR);
		gs(g, "--idle");
		gs(g, idle);
	} else {
		gs(g, "/bin/sh");
		gs(g, "-c");
		gs(g, "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done");
	}
	yajl_gen_array_close(g);
	gs(g, "Cmd");
	yajl_gen_array_open(g);
	yajl_gen_array_close(g);
	gs(g, "Labels");
	yajl_gen_map_open(g);
	gkv(g, DK_LABEL ".session", spec->session ? spec->session : "");
	gkv(g, DK_LABEL ".env", spec->env_name);
	gkv(g, DK_LABEL ".persistent", env->persistent ? "1" : "0");
	gkv(g, DK_LABEL ".created", created);
	yajl_gen_map_close(g);
	gs(g, "HostConfig");
	yajl_gen_map_open(g);
	gs(g, "CapDrop");
	yajl_gen_array_open(g);
	gs(g, "ALL");
	yajl_gen_array_close(g);
	gs(g, "CapAdd");
	yajl_gen_array_open(g);
	for (const char *const *p = dk_caps; *p; p++)
		gs(g, *p);
	yajl_gen_array_close(g);
	gs(g, "SecurityOpt");
	yajl_gen_array_open(g);
	gs(g, "no-new-privileges");
	yajl_gen_array_close(g);
	gs(g, "PidsLimit");
	yajl_gen_integer(g, conf_int(env, "pids_limit", 1024));
	if (spec->memory_bytes > 0) {
		gs(g, "Memory");
		yajl_gen_integer(g, spec->memory_bytes);
	}
	if (spec->cpus_milli > 0) {
		gs(g, "NanoCpus");
		yajl_gen_integer(g, (long long)spec->cpus_milli * 1000000);
	}
	gs(g, "Tmpfs");
	yajl_gen_map_open(g);
	gkv(g, "/tmp", "rw,noexec,nosuid,nodev");
	yajl_gen_map_close(g);
	gkv(g, "NetworkMode", spec->network && *spec->network ? spec->network : "none");
	gs(g, "Init");
	yajl_gen_bool(g, 1);
	gen_mounts(g, c);
	/* Daemon-side options from the config, each approved in risks.c. */
	int32_t priv = 0;
	const char *s = NULL;
	const struct hs_host_v1 *h = env->st->host;
	if (h->config_bool(h->ctx, "privileged", &priv) == HS_OK && priv) {
		gs(g, "Privileged");
		yajl_gen_bool(g, 1);
	}
	if (h->config_string(h->ctx, "pid_mode", &s) == HS_OK && s && *s)
		gkv(g, "PidMode", s);
	s = NULL;
	if (h->config_string(h->ctx, "ipc_mode", &s) == HS_OK && s && *s)
		gkv(g, "IpcMode", s);
	const char *const *dev = NULL;
	uint32_t nd = 0;
	if (h->config_strings(h->ctx, "devices", &dev, &nd) == HS_OK && nd) {
		gs(g, "Devices");
		yajl_gen_array_open(g);
		for (uint32_t i = 0; i < nd; i++) {
			yajl_gen_map_open(g);
			gkv(g, "PathOnHost", dev[i]);
			gkv(g, "PathInContainer", dev[i]);
			gkv(g, "CgroupPermissions", "rwm");
			yajl_gen_map_close(g);
		}
		yajl_gen_array_close(g);
	}
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
	yajl_gen_get_buf(g, &body, &blen);
	dk_url_escape(env->name, esc, sizeof(esc));
	snprintf(path, sizeof(path), "/containers/create?name=%s", esc);
	st = dk_api_json(&env->api, "POST", path, (const char *)body, &http, &t, err);
	yajl_gen_free(g);
	if (st == HS_E_NOTFOUND) {
		snprintf(err, HS_ERR_MAX, "image '%s' is not in the docker daemon at '%s': load or pull "
		         "it first (docker pull %s), or set docker.pull = true", c->image, env->api.sock,
		         c->image);
		return st;
	}
	if (st != HS_OK)
		return st;
	const char *id = dk_json_str(t, idp);
	if (!id || strlen(id) >= sizeof(env->id)) {
		snprintf(err, HS_ERR_MAX, "docker create: no container id in the answer");
		st = HS_E_PROTOCOL;
	} else {
		snprintf(env->id, sizeof(env->id), "%s", id);
	}
	yajl_tree_free(t);
	return st;
}

int32_t
dk_container_inspect(struct dk_env *env, int *running, int *ours, char *image, size_t imlen,
                     char *err)
{
	static const char *const idp[] = { "Id", NULL };
	static const char *const runp[] = { "State", "Running", NULL };
	static const char *const labp[] = { "Config", "Labels", DK_LABEL ".env", NULL };
	static const char *const imgp[] = { "Config", "Image", NULL };
	char path[512], esc[256];
	long http;
	yajl_val t = NULL;

	dk_url_escape(env->name, esc, sizeof(esc));
	snprintf(path, sizeof(path), "/containers/%s/json", esc);
	int32_t st = dk_api_json(&env->api, "GET", path, NULL, &http, &t, err);
	if (st != HS_OK)
		return st;
	const char *id = dk_json_str(t, idp), *lab = dk_json_str(t, labp), *img = dk_json_str(t, imgp);
	yajl_val r = t ? yajl_tree_get(t, (const char **)runp, yajl_t_any) : NULL;
	*running = r && YAJL_IS_TRUE(r);
	*ours = lab && strcmp(lab, env->name) == 0;
	if (id)
		snprintf(env->id, sizeof(env->id), "%s", id);
	if (image)
		snprintf(image, imlen, "%s", img ? img : "");
	yajl_tree_free(t);
	if (!id) {
		snprintf(err, HS_ERR_MAX, "docker inspect '%s': no id in the answer", env->name);
		return HS_E_PROTOCOL;
	}
	return HS_OK;
}

int
dk_container_has(struct dk_env *env, const char *p)
{
	char path[1024], esc[512], e[HS_ERR_MAX];
	long http = 0;
	dk_url_escape(p, esc, sizeof(esc));
	snprintf(path, sizeof(path), "/containers/%s/archive?path=%s", env->id, esc);
	return dk_api_call(&env->api, "HEAD", path, NULL, NULL, 0, &http, NULL, e) == HS_OK &&
	       http == 200;
}

static int32_t
exit_reason(struct dk_env *env, char *err)
{
	static const char *const codep[] = { "State", "ExitCode", NULL };
	static const char *const errp[] = { "State", "Error", NULL };
	char path[512], e[HS_ERR_MAX];
	long http;
	yajl_val t = NULL;
	snprintf(path, sizeof(path), "/containers/%s/json", env->id);
	if (dk_api_json(&env->api, "GET", path, NULL, &http, &t, e) != HS_OK)
		return 0;
	yajl_val c = yajl_tree_get(t, (const char **)codep, yajl_t_number);
	const char *m = dk_json_str(t, errp);
	snprintf(err, HS_ERR_MAX, "container '%s' stopped right after its start (exit %lld%s%s)",
	         env->name, c ? YAJL_GET_INTEGER(c) : -1LL, m && *m ? ": " : "", m ? m : "");
	yajl_tree_free(t);
	return 1;
}

int32_t
dk_container_start(struct dk_env *env, char *err)
{
	char path[512];
	long http;
	snprintf(path, sizeof(path), "/containers/%s/start", env->id);
	int32_t st = dk_api_json(&env->api, "POST", path, NULL, &http, NULL, err);
	if (st != HS_OK) {
		char m[HS_ERR_MAX];
		snprintf(m, sizeof(m), "%s", err);
		snprintf(err, HS_ERR_MAX, "cannot start container '%s': %s", env->name, m);
		return st;
	}
	if (!env->runner)
		return HS_OK;
	/* The runner daemon binds its socket shortly after the start. */
	for (int i = 0; i < 500; i++) {
		if (dk_container_has(env, DK_RUNDIR "/sock"))
			return HS_OK;
		int running = 0, ours = 0;
		char e[HS_ERR_MAX];
		if (i % 20 == 19 && dk_container_inspect(env, &running, &ours, NULL, 0, e) == HS_OK &&
		    !running) {
			if (!exit_reason(env, err))
				snprintf(err, HS_ERR_MAX, "container '%s' stopped right after its start",
				         env->name);
			return HS_E_LOST;
		}
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	snprintf(err, HS_ERR_MAX, "the runner in container '%s' did not start listening within 5 s",
	         env->name);
	return HS_E_TIMEOUT;
}

int32_t
dk_container_remove(struct dk_env *env, char *err)
{
	char path[512];
	long http;
	if (!env->id[0])
		return HS_OK;
	snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", env->id);
	int32_t st = dk_api_json(&env->api, "DELETE", path, NULL, &http, NULL, err);
	return st == HS_E_NOTFOUND ? HS_OK : st;
}

void
dk_reap_orphans(struct dk_env *env, int64_t max_age_s)
{
	static const char *const idp[] = { "Id", NULL };
	static const char *const persp[] = { "Labels", DK_LABEL ".persistent", NULL };
	static const char *const crp[] = { "Labels", DK_LABEL ".created", NULL };
	char q[256], path[600], e[HS_ERR_MAX];
	long http;
	yajl_val t = NULL;

	dk_url_escape("{\"label\":[\"" DK_LABEL ".env\"],\"status\":[\"exited\",\"created\"]}", q,
	              sizeof(q));
	snprintf(path, sizeof(path), "/containers/json?all=1&filters=%s", q);
	if (dk_api_json(&env->api, "GET", path, NULL, &http, &t, e) != HS_OK || !YAJL_IS_ARRAY(t))
		goto out;
	time_t now = time(NULL);
	for (size_t i = 0; i < YAJL_GET_ARRAY(t)->len; i++) {
		yajl_val c = YAJL_GET_ARRAY(t)->values[i];
		const char *id = dk_json_str(c, idp), *pers = dk_json_str(c, persp),
		           *cr = dk_json_str(c, crp);
		if (!id || !pers || strcmp(pers, "0") != 0 || !cr)
			continue;
		long long created = strtoll(cr, NULL, 10);
		if (now - created < max_age_s)
			continue;
		snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", id);
		if (dk_api_json(&env->api, "DELETE", path, NULL, &http, NULL, e) == HS_OK)
			env->st->host->log(env->st->host->ctx, HS_LOG_INFO,
			                   "removed orphaned container %.12s", id);
	}
out:
	if (t)
		yajl_tree_free(t);
}
