/* SPDX-License-Identifier: MIT */
/*
 * docker.c - the docker backend: one hardened container per session,
 * driven through the Docker Engine API on its unix socket (libcurl, yajl;
 * never the docker CLI).  Every command of a session runs through one
 * hs-runner inside the container, reached by one exec whose hijacked
 * attach stream is pumped into the socketpair the core reads.  See
 * hs-docker(7).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hs/backend.h>

#include "plugins/docker/docker.h"

static const struct hs_config_key dk_keys[] = {
	{ "host", HS_CONF_STRING, "dockerd's socket, unix:///path (default: DOCKER_HOST, else "
	                          "/var/run/docker.sock)" },
	{ "image", HS_CONF_STRING, "the image when --image is not given" },
	{ "pull", HS_CONF_BOOL, "pull a missing image (default false)" },
	{ "runner", HS_CONF_BOOL, "host hs-runner in the container (default true); false: one "
	                          "exec per command" },
	{ "pids_limit", HS_CONF_INT, "maximum number of processes in a container (default 1024)" },
	{ "reap_after", HS_CONF_INT, "seconds after which exited non-persistent containers of hs "
	                             "are removed (default 3600)" },
	{ "privileged", HS_CONF_BOOL, "run privileged (host access: needs approval, never granted "
	                              "by approve mode)" },
	{ "pid_mode", HS_CONF_STRING, "\"host\" shares the host's processes (host access)" },
	{ "ipc_mode", HS_CONF_STRING, "\"host\" shares the host's IPC namespace (host access)" },
	{ "devices", HS_CONF_STRINGS, "host devices to add (host access)" },
	{ NULL, 0, NULL },
};

/* Under an admin's lock: privileged may only be switched off, devices only dropped. */
static const struct hs_config_rule dk_rules[] = {
	{ .name = "privileged", .order = HS_CORDER_BOOL, .strict_bool = 0 },
	{ .name = "devices", .order = HS_CORDER_SUBSET },
	{ .name = NULL },
};

static int32_t
dk_init(const struct hs_host_v1 *host, void **state, char *err)
{
	struct dk_state *st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	st->host = host;
	*state = st;
	return HS_OK;
}

static void
dk_fini(void *state)
{
	free(state);
}

static const char *
conf_str(struct dk_state *st, const char *key)
{
	const char *s = NULL;
	return st->host->config_string(st->host->ctx, key, &s) == HS_OK && s && *s ? s : NULL;
}

static int32_t
dk_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
	static const char *const apip[] = { "ApiVersion", NULL };
	static const char *const verp[] = { "Version", NULL };
	static const char *const archp[] = { "Arch", NULL };
	struct dk_state *st = state;
	struct dk_api api;
	char reason[256];
	long http;
	yajl_val t = NULL;
	int32_t rc;

	(void)flags;
	rc = dk_api_resolve(&api, conf_str(st, "host"), r->reason);
	if (rc != HS_OK)
		return HS_OK;
	if (dk_api_diagnose(&api, r->reason) != HS_OK)
		goto detail;
	/* Only the local socket is spoken to, with a short deadline. */
	api.timeout_ms = 3000;
	rc = dk_api_json(&api, "GET", "/version", NULL, &http, &t, err);
	if (rc == HS_E_TIMEOUT || rc == HS_E_IO) {
		snprintf(r->reason, sizeof(r->reason), "the docker daemon at '%s' does not answer: %s",
		         api.sock, err);
		err[0] = '\0';
		goto detail;
	}
	if (rc != HS_OK) {
		snprintf(r->reason, sizeof(r->reason), "docker daemon at '%s': %s", api.sock, err);
		err[0] = '\0';
		goto detail;
	}
	const char *v = dk_json_str(t, apip), *sv = dk_json_str(t, verp), *arch = dk_json_str(t, archp);
	int maj = 0, min = 0;
	if (!v || sscanf(v, "%d.%d", &maj, &min) != 2 || maj < 1 || (maj == 1 && min < 40)) {
		snprintf(r->reason, sizeof(r->reason), "the docker daemon at '%s' speaks API %s, too old: "
		         "hs needs 1.40 (Docker 19.03) or newer", api.sock, v ? v : "?");
		goto detail;
	}
	r->ready = 1;
	const char *goarch = arch && strcmp(arch, "x86_64") == 0 ? "amd64"
	                     : arch && strcmp(arch, "aarch64") == 0 ? "arm64" : arch;
	r->runner = dk_runner_fits(st->host->runner_path, goarch, reason, sizeof(reason)) == 0;
	int32_t want = 1;
	if (r->runner && st->host->config_bool(st->host->ctx, "runner", &want) == HS_OK && !want) {
		r->runner = 0;
		snprintf(reason, sizeof(reason), "docker.runner = false (each exec under hs-runner --exec)");
	}
	/* The configured image, when the daemon has it, may be of another architecture. */
	const char *img = conf_str(st, "image");
	if (r->runner && img) {
		static const char *const iarchp[] = { "Architecture", NULL };
		char path[1200], esc[1024], e[HS_ERR_MAX];
		yajl_val it = NULL;
		dk_url_escape(img, esc, sizeof(esc));
		snprintf(path, sizeof(path), "/images/%s/json", esc);
		if (dk_api_json(&api, "GET", path, NULL, &http, &it, e) == HS_OK) {
			const char *ia = dk_json_str(it, iarchp);
			if (ia && dk_runner_fits(st->host->runner_path, ia, reason, sizeof(reason)) < 0) {
				r->runner = 0;
				char why[sizeof(reason)];
				snprintf(why, sizeof(why), "%s", reason);
				snprintf(reason, sizeof(reason), "image '%.200s': %s", img, why);
			}
		}
		if (it)
			yajl_tree_free(it);
	}
	if (!r->runner)
		snprintf(r->reason, sizeof(r->reason), "%s", reason);
	snprintf(r->detail, sizeof(r->detail), "socket=%s\napi=%s\nserver=%s\narch=%s\nrunner=%s%s",
	         api.sock, v, sv ? sv : "?", arch ? arch : "?",
	         r->runner ? "hosted in each container" : "exec per command: ",
	         r->runner ? "" : reason);
	yajl_tree_free(t);
	return HS_OK;
detail:
	snprintf(r->detail, sizeof(r->detail), "socket=%s", api.sock);
	if (t)
		yajl_tree_free(t);
	return HS_OK;
}

/* The container id of a session is kept in the state dir, to tell a vanished container. */
static void
state_path(struct dk_env *env, char *out, size_t len)
{
	snprintf(out, len, "%s/%s.id", env->st->host->state_dir, env->name);
}

static int
state_had(struct dk_env *env)
{
	char p[1024];
	struct stat sb;
	state_path(env, p, sizeof(p));
	return lstat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static void
state_write(struct dk_env *env)
{
	char p[1024];
	state_path(env, p, sizeof(p));
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, env->id, strlen(env->id)) < 0)
		env->st->host->log(env->st->host->ctx, HS_LOG_DEBUG, "cannot write '%s'", p);
	close(fd);
}

static void
state_remove(struct dk_env *env)
{
	char p[1024];
	state_path(env, p, sizeof(p));
	unlink(p);
}

/* The image's architecture and user; HS_E_NOTFOUND when the daemon lacks it. */
static int32_t
image_inspect(struct dk_env *env, const char *image, char *arch, size_t alen, char *err)
{
	static const char *const archp[] = { "Architecture", NULL };
	static const char *const userp[] = { "Config", "User", NULL };
	char path[1200], esc[1024];
	long http;
	yajl_val t = NULL;

	dk_url_escape(image, esc, sizeof(esc));
	snprintf(path, sizeof(path), "/images/%s/json", esc);
	int32_t st = dk_api_json(&env->api, "GET", path, NULL, &http, &t, err);
	if (st != HS_OK)
		return st;
	const char *a = dk_json_str(t, archp), *u = dk_json_str(t, userp);
	snprintf(arch, alen, "%s", a ? a : "");
	env->uid = env->gid = 0;
	env->user[0] = '\0';
	if (u && *u) {
		char *end;
		long uid = strtol(u, &end, 10);
		if (end != u && (*end == '\0' || *end == ':')) {
			env->uid = env->gid = uid;
			if (*end == ':')
				env->gid = strtol(end + 1, NULL, 10);
		} else {
			snprintf(env->user, sizeof(env->user), "%s", u);
		}
	}
	yajl_tree_free(t);
	return HS_OK;
}

static int32_t
image_pull(struct dk_env *env, const char *image, char *err)
{
	char path[1200], esc[1024];
	long http;
	struct dk_buf b = { 0 };
	dk_url_escape(image, esc, sizeof(esc));
	snprintf(path, sizeof(path), "/images/create?fromImage=%s", esc);
	long saved = env->api.timeout_ms;
	env->api.timeout_ms = 0;
	int32_t st = dk_api_call(&env->api, "POST", path, NULL, NULL, 0, &http, &b, err);
	env->api.timeout_ms = saved;
	if (st == HS_OK && (http >= 300 || (b.p && strstr(b.p, "\"error\"")))) {
		char m[300];
		dk_api_message(&b, m, sizeof(m));
		snprintf(err, HS_ERR_MAX, "cannot pull image '%s': %s", image, m);
		st = HS_E_NOTFOUND;
	}
	dk_buf_free(&b);
	return st;
}

static int32_t
create_container(struct dk_env *env, const struct hs_env_spec *spec, const char *image,
                 const struct hs_mount *mounts, struct hs_env_props *props, char *err)
{
	struct dk_state *st = env->st;
	char arch[64], e[HS_ERR_MAX];
	int32_t rc = image_inspect(env, image, arch, sizeof(arch), e);
	if (rc == HS_E_NOTFOUND) {
		int32_t pull = 0;
		st->host->config_bool(st->host->ctx, "pull", &pull);
		if (!pull) {
			snprintf(err, HS_ERR_MAX, "image '%s' is not in the docker daemon at '%s': load or "
			         "pull it first (docker pull %s), or set docker.pull = true", image,
			         env->api.sock, image);
			return HS_E_NOTFOUND;
		}
		if ((rc = image_pull(env, image, err)) != HS_OK)
			return rc;
		rc = image_inspect(env, image, arch, sizeof(arch), e);
	}
	if (rc != HS_OK) {
		snprintf(err, HS_ERR_MAX, "image '%s': %s", image, e);
		return rc;
	}
	env->runner = dk_runner_fits(st->host->runner_path, arch, props->runner_reason,
	                             sizeof(props->runner_reason)) == 0;
	int32_t want = 1;
	if (env->runner && st->host->config_bool(st->host->ctx, "runner", &want) == HS_OK && !want) {
		/* No daemon, but each exec still runs under the one-shot runner. */
		env->runner = 0;
		env->oneshot = 1;
		snprintf(props->runner_reason, sizeof(props->runner_reason),
		         "docker.runner = false: one exec per command, under hs-runner --exec");
	}
	struct dk_create c = { .spec = spec, .image = image, .mounts = mounts, .runner = env->runner };
	rc = dk_container_create(env, &c, err);
	if (rc == HS_E_EXISTS) {
		/* Another hs created it meanwhile; use that one. */
		int running, ours;
		rc = dk_container_inspect(env, &running, &ours, NULL, 0, err);
		if (rc == HS_OK && running)
			return HS_OK;
	}
	if (rc != HS_OK)
		return rc;
	if (env->runner && env->user[0] && (rc = dk_resolve_user(env, env->id, err)) != HS_OK)
		goto fail;
	if ((env->runner || env->oneshot) &&
	    (rc = dk_upload_runner(env, env->id, env->runner ? DK_RUNNER : DK_ONESHOT, err)) != HS_OK)
		goto fail;
	if ((rc = dk_container_start(env, err)) != HS_OK)
		goto fail;
	state_write(env);
	return HS_OK;
fail:
	dk_container_remove(env, e);
	env->id[0] = '\0';
	return rc;
}

static int32_t
dk_open(void *state, const struct hs_env_spec *spec, void **envp, struct hs_env_props *props,
        char *err)
{
	struct dk_state *st = state;
	const struct hs_host_v1 *h = st->host;
	struct hs_mount *mounts = NULL;
	struct dk_env *env;
	char cur_image[512];
	int32_t rc;

	const char *image = spec->image && *spec->image ? spec->image : conf_str(st, "image");
	env = calloc(1, sizeof(*env));
	if (!env) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	*envp = env;
	env->st = st;
	pthread_mutex_init(&env->lock, NULL);
	for (int i = 0; i < DK_MAX_PUMPS; i++)
		env->pumps[i].fd = -1;
	snprintf(env->name, sizeof(env->name), "%s", spec->env_name);
	snprintf(env->session, sizeof(env->session), "%s", spec->session ? spec->session : "");
	env->persistent = !!(spec->flags & HS_SPEC_PERSISTENT);
	env->idle = spec->runner_idle_s > 0 ? spec->runner_idle_s : 600;
	if ((rc = dk_api_resolve(&env->api, conf_str(st, "host"), err)) != HS_OK)
		return rc;
	if ((rc = dk_api_diagnose(&env->api, err)) != HS_OK)
		return rc;
	if (spec->n_mounts && !(mounts = calloc(spec->n_mounts, sizeof(*mounts)))) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	for (uint32_t i = 0; i < spec->n_mounts; i++) {
		if ((rc = h->assess_mount(h->ctx, spec->mounts[i], &mounts[i], err)) != HS_OK)
			goto out;
	}
	if ((rc = dk_risks_check(env, spec, mounts, props, err)) != HS_OK)
		goto out;

	int64_t reap = 3600;
	h->config_int(h->ctx, "reap_after", &reap);
	dk_reap_orphans(env, reap);

	int running = 0, ours = 0;
	rc = dk_container_inspect(env, &running, &ours, cur_image, sizeof(cur_image), err);
	if (rc == HS_E_NOTFOUND && (spec->flags & HS_SPEC_ATTACH)) {
		/* Attach only: the container is gone; create none, and forget we had it. */
		snprintf(err, HS_ERR_MAX, "container '%s' is gone", env->name);
		state_remove(env);
		goto out;
	} else if (rc == HS_E_NOTFOUND) {
		if (!image) {
			snprintf(err, HS_ERR_MAX, "no image: pass --image IMAGE or set docker.image");
			rc = HS_E_INVALID;
			goto out;
		}
		int vanished = state_had(env);
		if ((rc = create_container(env, spec, image, mounts, props, err)) != HS_OK)
			goto out;
		if (vanished) {
			snprintf(props->note, sizeof(props->note),
			         "recreated container '%s' (it had vanished; its files are gone)", env->name);
			h->log(h->ctx, HS_LOG_WARN, "%s", props->note);
		}
	} else if (rc != HS_OK) {
		goto out;
	} else {
		if (!ours) {
			snprintf(err, HS_ERR_MAX, "a container named '%s' exists but was not made by hs "
			         "(no %s.env label): remove or rename it", env->name, DK_LABEL);
			rc = HS_E_EXISTS;
			goto out;
		}
		if (spec->image && *spec->image && strcmp(spec->image, cur_image) != 0) {
			snprintf(err, HS_ERR_MAX, "session container '%s' runs image '%s', not '%s' "
			         "(close the session first)", env->name, cur_image, spec->image);
			rc = HS_E_INVALID;
			goto out;
		}
		env->runner = dk_container_has(env, DK_RUNNER);
		env->oneshot = !env->runner && dk_container_has(env, DK_ONESHOT);
		if (env->oneshot)
			snprintf(props->runner_reason, sizeof(props->runner_reason),
			         "docker.runner = false: one exec per command, under hs-runner --exec");
		else if (!env->runner)
			snprintf(props->runner_reason, sizeof(props->runner_reason),
			         "the container has no hs-runner (image of another architecture)");
		if (!running) {
			if ((rc = dk_container_start(env, err)) != HS_OK)
				goto out;
			snprintf(props->note, sizeof(props->note), "started the stopped container '%s'",
			         env->name);
		}
	}
	props->runner = env->runner;
	snprintf(props->isolation, sizeof(props->isolation), "container");
	snprintf(props->shell, sizeof(props->shell), "%s",
	         dk_container_has(env, "/bin/bash") ? "/bin/bash" : "/bin/sh");
	snprintf(props->runtime_dir, sizeof(props->runtime_dir), "%s", env->runner ? DK_RUNDIR : "/tmp");
	rc = HS_OK;
out:
	/* close() after a failed open must not remove a container it did not make. */
	if (rc != HS_OK)
		env->id[0] = '\0';
	free(mounts);
	return rc;
}

static void
on_attach_err(void *ctx, const char *buf, size_t len)
{
	struct dk_env *env = ctx;
	pthread_mutex_lock(&env->lock);
	if (len >= sizeof(env->lasterr))
		len = sizeof(env->lasterr) - 1;
	memcpy(env->lasterr, buf, len);
	env->lasterr[len] = '\0';
	char *nl = strchr(env->lasterr, '\n');
	if (nl)
		*nl = '\0';
	/* The attach process speaks on stderr only when something is wrong. */
	if (env->lasterr[0])
		env->st->host->log(env->st->host->ctx, HS_LOG_WARN, "container '%s': %s", env->name,
		                   env->lasterr);
	pthread_mutex_unlock(&env->lock);
}

static int32_t
dk_runner_stream(void *envp, int32_t *fd, char *err)
{
	struct dk_env *env = envp;
	char idle[32], exec_id[128];
	int slot = -1, running = 0, ours = 0;
	int32_t rc;

	for (int i = 0; i < DK_MAX_PUMPS; i++) {
		if (env->pumps[i].started && env->pumps[i].done)
			dk_pump_stop(&env->pumps[i], 0);
		if (!env->pumps[i].started && slot < 0)
			slot = i;
	}
	if (slot < 0) {
		snprintf(err, HS_ERR_MAX, "too many runner streams for container '%s'", env->name);
		return HS_E_BUSY;
	}
	/* A stream is rare (start, re-attach): check that the container still runs. */
	rc = dk_container_inspect(env, &running, &ours, NULL, 0, err);
	if (rc == HS_E_NOTFOUND) {
		snprintf(err, HS_ERR_MAX, "container '%s' is gone (removed from outside); the next hs "
		         "command recreates it", env->name);
		return HS_E_LOST;
	}
	if (rc != HS_OK)
		return rc;
	if (!running) {
		env->st->host->log(env->st->host->ctx, HS_LOG_WARN,
		                   "container '%s' had stopped; starting it (running commands were lost)",
		                   env->name);
		if ((rc = dk_container_start(env, err)) != HS_OK)
			return rc;
	}
	snprintf(idle, sizeof(idle), "%lld", (long long)env->idle);
	const char *argv[] = { DK_RUNNER, "--attach", "--start", "--dir", DK_RUNDIR, "--idle", idle,
		               NULL };
	rc = dk_exec_create(&env->api, env->id, argv, NULL, 0, NULL, exec_id, sizeof(exec_id), err);
	if (rc != HS_OK)
		return rc;
	struct dk_pump *p = &env->pumps[slot];
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	rc = dk_exec_hijack(&env->api, exec_id, &p->s, err);
	if (rc != HS_OK)
		return rc;
	p->on_err = on_attach_err;
	p->err_ctx = env;
	rc = dk_pump_start(p, fd, err);
	if (rc != HS_OK)
		dk_stream_free(&p->s);
	return rc;
}

static int32_t
dk_close(void *envp, uint32_t flags, char *err)
{
	struct dk_env *env = envp;
	int32_t rc = HS_OK;
	if (!env)
		return HS_OK;
	/* The core closed its ends: each attach sees EOF and its stream ends. */
	for (int i = 0; i < DK_MAX_PUMPS; i++)
		dk_pump_stop(&env->pumps[i], 2000);
	/* A throwaway (non-persistent) environment is never kept: the core asks
	 * to keep one only when its stream failed, and nobody would re-attach. */
	if ((!(flags & HS_CLOSE_KEEP) || !env->persistent) && env->id[0]) {
		rc = dk_container_remove(env, err);
		if (rc == HS_OK)
			state_remove(env);
	}
	pthread_mutex_destroy(&env->lock);
	free(env);
	return rc;
}

int32_t dk_exec(void *envp, const struct hs_exec_req *req, struct hs_exec_result *res, char *err);
int32_t dk_cancel(void *envp, uint64_t exec_id);

HS_BACKEND_EXPORT const struct hs_backend_v1 hs_backend_v1 = {
	HS_BACKEND_V1_HEADER,
	.name = "docker",
	.version = PACKAGE_VERSION,
	.summary = "one hardened container per session through the Docker Engine API",
	.caps = HS_CAP_RUNNER | HS_CAP_EXEC | HS_CAP_MOUNTS | HS_CAP_IMAGE | HS_CAP_NETWORK |
	        HS_CAP_LIMITS | HS_CAP_PERSIST | HS_CAP_FILES | HS_CAP_ISOLATED,
	.config_keys = dk_keys,
	.config_rules = dk_rules,
	.init = dk_init,
	.fini = dk_fini,
	.probe = dk_probe,
	.open = dk_open,
	.runner_stream = dk_runner_stream,
	.exec = dk_exec,
	.cancel = dk_cancel,
	.close = dk_close,
};
