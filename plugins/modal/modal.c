/* SPDX-License-Identifier: MIT */
/*
 * modal.c - the modal backend: sessions run in Modal Sandboxes, one exec per
 * command (Modal has no program host for hs-runner's attach stream).  Where
 * the host's hs-runner fits the sandbox's architecture it is placed once per
 * sandbox (place_runner) and every command runs under `hs-runner --exec`,
 * which kills the whole tree at the deadline, setsid children too.
 *
 * The credential mode (direct: the user's Modal token over gRPC; managed: a
 * gateway's REST API) is resolved by the core (core/safety/credentials.c)
 * through host->resolve_credentials, so probe and open fail closed with the
 * core's exact reason.  See hs-modal(7).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <curl/curl.h>

#include "modal.h"
#include "runner/hmac.h"

static const struct hs_config_key md_keys[] = {
	{ "mode", HS_CONF_STRING, "\"auto\" (managed, else direct), \"direct\" or \"managed\" (HS_MODAL_MODE)" },
	{ "gateway_url", HS_CONF_STRING, "managed mode: the gateway's https:// URL (HS_MODAL_GATEWAY_URL)" },
	{ "gateway_token", HS_CONF_STRING, "managed mode: the gateway token (prefer HS_MODAL_GATEWAY_TOKEN)" },
	{ "server_url", HS_CONF_STRING, "direct mode: Modal's API URL (default https://api.modal.com; MODAL_SERVER_URL)" },
	{ "app", HS_CONF_STRING, "the Modal app the sandboxes belong to (default \"hermes-sandbox\")" },
	{ "environment", HS_CONF_STRING, "the Modal environment (default: the workspace's default)" },
	{ "image", HS_CONF_STRING, "registry tag of the sandbox image (default \"debian:bookworm-slim\")" },
	{ "timeout", HS_CONF_INT, "sandbox lifetime in seconds (default 3600)" },
	{ NULL, 0, NULL },
};

/* Under an admin's lock: a sandbox may live shorter, never longer. */
static const struct hs_config_rule md_rules[] = {
	{ .name = "timeout", .order = HS_CORDER_LESS, .checks = HS_CCHECK_POSITIVE },
	{ .name = NULL },
};

static int32_t
md_init(const struct hs_host_v1 *host, void **state, char *err)
{
	struct md_state *st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		free(st);
		snprintf(err, HS_ERR_MAX, "cannot initialise libcurl");
		return HS_E_INTERNAL;
	}
	st->host = host;
	*state = st;
	return HS_OK;
}

static void
md_fini(void *state)
{
	curl_global_cleanup();
	free(state);
}

static const char *
conf_str(struct md_state *st, const char *key, const char *dflt)
{
	const char *v = NULL;
	if (st->host->config_string(st->host->ctx, key, &v) == HS_OK && v && v[0])
		return v;
	return dflt;
}

int
md_url_ok(const char *u)
{
	if (strncmp(u, "https://", 8) == 0)
		return u[8] != '\0';
	return strncmp(u, "http://127.0.0.1:", 17) == 0 || strncmp(u, "http://localhost:", 17) == 0 ||
	       strncmp(u, "http://[::1]:", 13) == 0;
}

/* Modal's API URL: https anywhere, http (h2c) only to loopback.  NULL with err when refused. */
static const char *
server_url(struct md_state *st, char *err)
{
	const char *u = getenv("MODAL_SERVER_URL");
	const char *from = "MODAL_SERVER_URL";
	if (!u || !u[0]) {
		u = conf_str(st, "server_url", "https://api.modal.com");
		from = "modal.server_url";
	}
	if (md_url_ok(u))
		return u;
	snprintf(err, HS_ERR_MAX, "%s '%.200s' must be https:// (http:// only to loopback)", from, u);
	return NULL;
}

static int32_t
md_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
	struct md_state *st = state;
	struct hs_credentials c;
	char e[HS_ERR_MAX] = "";
	(void)flags; /* no network even for a deep probe: the mode is what matters */

	memset(r, 0, sizeof(*r));
	int32_t rc = st->host->resolve_credentials(st->host->ctx, "modal", &c, e);
	if (rc != HS_OK) {
		snprintf(r->reason, sizeof(r->reason), "%s", e[0] ? e : hs_strerror(rc));
		snprintf(r->detail, sizeof(r->detail), "mode=none");
		explicit_bzero(&c, sizeof(c));
		return HS_OK;
	}
	if (strcmp(c.mode, "direct") == 0 && !server_url(st, e)) {
		snprintf(r->reason, sizeof(r->reason), "%s", e);
		explicit_bzero(&c, sizeof(c));
		return HS_OK;
	}
	r->ready = 1;
	r->runner = 0;
	snprintf(r->reason, sizeof(r->reason), "mode %s (%s)%s%s", c.mode, c.source,
	         c.warning[0] ? "; warning: " : "", c.warning);
	/* Where the credentials came from, never the secret. */
	snprintf(r->detail, sizeof(r->detail), "mode=%s\nsource=%s%s%s", c.mode, c.source,
	         c.warning[0] ? "\nwarning=" : "", c.warning);
	if (strcmp(c.mode, "managed") == 0)
		snprintf(r->detail + strlen(r->detail), sizeof(r->detail) - strlen(r->detail),
		         "\ngateway=%s", c.id);
	explicit_bzero(&c, sizeof(c));
	(void)err;
	return HS_OK;
}

/* The record of a kept sandbox: state_dir/ENV_NAME, 0600, ids only. */
static void
record_load(struct md_env *e)
{
	char buf[300] = "";
	int fd = open(e->record, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat sb;
	if (fd < 0)
		return;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid() &&
	    !(sb.st_mode & 077)) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = '\0';
			char mode[16] = "";
			if (sscanf(buf, "%15s %127s", mode, e->sandbox_id) != 2 ||
			    strcmp(mode, e->cred.mode) != 0)
				e->sandbox_id[0] = '\0';
		}
	}
	close(fd);
}

static void
record_save(struct md_env *e)
{
	char tmp[1100];
	snprintf(tmp, sizeof(tmp), "%s.tmp", e->record);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	dprintf(fd, "%s %s\n", e->cred.mode, e->sandbox_id);
	if (fsync(fd) == 0 && close(fd) == 0)
		rename(tmp, e->record);
	else
		unlink(tmp);
}

/*
 * Places the one-shot runner: sh -c PUT_RUNNER hs ARCH DIR SIZE SHA256 MODE
 * with the runner on stdin (MODE "put") or nothing (MODE "check").  Exit 3:
 * the sandbox is another architecture; 4: DIR is not a private directory of
 * ours; 8 ("check"): not there yet; 0: DIR/hs-runner is in place, its size
 * and (where sha256sum exists) its hash checked.
 */
#define PUT_RUNNER \
	"A=$1 D=$2 S=$3 H=$4 f=\"$2/hs-runner\"\n" \
	"drain() { cat >/dev/null; }\n" \
	"[ \"$(uname -m 2>/dev/null)\" = \"$A\" ] || { drain; exit 3; }\n" \
	"umask 077; mkdir -p \"$D\" 2>/dev/null\n" \
	"[ -d \"$D\" ] && [ ! -L \"$D\" ] && [ -O \"$D\" ] && chmod 700 \"$D\" || { drain; exit 4; }\n" \
	"ok() { [ -f \"$1\" ] && [ \"$(wc -c < \"$1\")\" -eq \"$S\" ] || return 1\n" \
	" if command -v sha256sum >/dev/null 2>&1; then [ \"$(sha256sum < \"$1\" | cut -d' ' -f1)\" = \"$H\" ] || return 1; fi; }\n" \
	"[ -x \"$f\" ] && ok \"$f\" && { drain; exit 0; }\n" \
	"[ \"$5\" = put ] || { drain; exit 8; }\n" \
	"cat > \"$f.up\" || exit 5\n" \
	"ok \"$f.up\" || { rm -f \"$f.up\"; exit 6; }\n" \
	"chmod 700 \"$f.up\" && mv -f \"$f.up\" \"$f\" || exit 7\n"

static int32_t
run_stdin(struct md_env *e, const char *const *argv, size_t argc, const void *data, size_t len,
          int32_t *code, char *err)
{
	return e->managed ? md_managed_run_stdin(e, argv, argc, data, len, code, err)
	                  : md_direct_run_stdin(e, argv, argc, data, len, code, err);
}

/*
 * Put the host's hs-runner into the sandbox, once per sandbox (named by its
 * hash), when it fits the sandbox's architecture; commands then run under
 * `hs-runner --exec`.  Best effort: e->runner stays "" otherwise, and a
 * deadline or cancel kills the command's process group only.
 */
static void
place_runner(struct md_env *e)
{
	const char *local = e->st->host->runner_path;
	struct utsname un;
	char err[HS_ERR_MAX] = "", dir[64], size[32], hex[2 * HSR_SHA256_LEN + 1];
	uint8_t sum[HSR_SHA256_LEN];
	struct hsr_sha256 h;
	unsigned char *img = NULL;
	size_t len = 0, cap = 0;
	int32_t code = -1, st = HS_E_IO;

	e->runner[0] = '\0';
	if (!local || !local[0] || uname(&un) < 0)
		return;
	FILE *f = fopen(local, "re");
	if (!f) {
		snprintf(err, sizeof(err), "cannot read '%s': %s", local, strerror(errno));
		goto out;
	}
	for (;;) {
		if (len == cap) {
			unsigned char *n = realloc(img, cap ? cap * 2 : 1u << 20);
			if (!n)
				break;
			img = n;
			cap = cap ? cap * 2 : 1u << 20;
		}
		size_t got = fread(img + len, 1, cap - len, f);
		if (!got)
			break;
		len += got;
	}
	int bad = ferror(f) || !feof(f);
	fclose(f);
	if (bad || !len) {
		snprintf(err, sizeof(err), "cannot read '%s'", local);
		goto out;
	}
	hsr_sha256_init(&h);
	hsr_sha256_update(&h, img, len);
	hsr_sha256_final(&h, sum);
	for (size_t i = 0; i < sizeof(sum); i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
	snprintf(dir, sizeof(dir), "/tmp/.hs-runner-%.16s", hex);
	snprintf(size, sizeof(size), "%zu", len);
	const char *argv[] = { "/bin/sh", "-c", PUT_RUNNER, "hs", un.machine, dir, size, hex, "check" };
	st = run_stdin(e, argv, 9, "", 0, &code, err);
	if (st == HS_OK && code == 8) {
		argv[8] = "put";
		st = run_stdin(e, argv, 9, img, len, &code, err);
	}
	if (st == HS_OK && code == 3) {
		e->st->host->log(e->st->host->ctx, HS_LOG_INFO,
		                 "modal sandbox %s is not %s: no one-shot runner, a deadline or cancel kills "
		                 "the command's process group only", e->sandbox_id, un.machine);
		goto out;
	}
	if (st == HS_OK && code != 0) {
		snprintf(err, sizeof(err), "placing it in %s failed (exit %d)", dir, code);
		st = HS_E_IO;
	}
	if (st == HS_OK)
		snprintf(e->runner, sizeof(e->runner), "%s/hs-runner", dir);
out:
	free(img);
	if (st != HS_OK)
		e->st->host->log(e->st->host->ctx, HS_LOG_WARN,
		                 "no one-shot runner in modal sandbox %s (%s): a deadline or cancel kills "
		                 "the command's process group only", e->sandbox_id, err);
}

static int32_t
md_open(void *state, const struct hs_env_spec *spec, void **envp, struct hs_env_props *props,
        char *err)
{
	struct md_state *st = state;
	struct md_env *e = calloc(1, sizeof(*e));
	int32_t rc;

	*envp = NULL;
	if (!e) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	e->st = st;
	if ((rc = st->host->resolve_credentials(st->host->ctx, "modal", &e->cred, err)) != HS_OK)
		goto fail;
	e->managed = strcmp(e->cred.mode, "managed") == 0;
	snprintf(e->env_name, sizeof(e->env_name), "%s",
	         spec->env_name && spec->env_name[0] ? spec->env_name : "default");
	if (strchr(e->env_name, '/') || e->env_name[0] == '.') {
		snprintf(err, HS_ERR_MAX, "invalid environment name '%s'", e->env_name);
		rc = HS_E_INVALID;
		goto fail;
	}
	snprintf(e->app_name, sizeof(e->app_name), "%s", conf_str(st, "app", "hermes-sandbox"));
	snprintf(e->environment, sizeof(e->environment), "%s", conf_str(st, "environment", ""));
	snprintf(e->image, sizeof(e->image), "%s",
	         spec->image && spec->image[0] ? spec->image : conf_str(st, "image", "debian:bookworm-slim"));
	int64_t t = 0;
	e->timeout_secs = st->host->config_int(st->host->ctx, "timeout", &t) == HS_OK && t > 0 && t < 86400 * 7
	                      ? (uint32_t)t : 3600;
	e->block_network = !spec->network || !spec->network[0] || strcmp(spec->network, "none") == 0;
	/* An allow list the core mapped onto ranges: Modal's CIDR allow list (none: blocked). */
	if (spec->struct_size >= offsetof(struct hs_env_spec, reserved1) && spec->egress_cidrs) {
		e->cidrs = spec->egress_cidrs;
		e->n_cidrs = spec->n_egress_cidrs;
		e->block_network = e->n_cidrs == 0;
	}
	if (spec->memory_bytes > 0)
		e->memory_mb = (uint32_t)((spec->memory_bytes + (1 << 20) - 1) >> 20);
	if (spec->cpus_milli > 0)
		e->milli_cpu = (uint32_t)spec->cpus_milli;
	snprintf(e->record, sizeof(e->record), "%s/%s", st->host->state_dir, e->env_name);
	e->attach_only = !!(spec->flags & HS_SPEC_ATTACH);
	if (spec->flags & (HS_SPEC_PERSISTENT | HS_SPEC_ATTACH))
		record_load(e);
	int reattach = e->sandbox_id[0] != '\0';
	if (e->attach_only && !reattach) {
		snprintf(err, HS_ERR_MAX, "modal environment '%s' has no recorded sandbox", e->env_name);
		rc = HS_E_NOTFOUND;
		goto fail;
	}

	if (e->managed) {
		rc = md_managed_open(e, reattach, err);
	} else {
		const char *u = server_url(st, err);
		if (!u) {
			rc = HS_E_CONFIG;
			goto fail;
		}
		snprintf(e->g.base, sizeof(e->g.base), "%s", u);
		size_t l = strlen(e->g.base);
		while (l && e->g.base[l - 1] == '/')
			e->g.base[--l] = '\0';
		snprintf(e->g.token_id, sizeof(e->g.token_id), "%s", e->cred.id);
		snprintf(e->g.token_secret, sizeof(e->g.token_secret), "%s", e->cred.secret);
		e->g.cancel = &e->cancel;
		e->g.now_ms = st->host->now_ms;
		e->g.now_ctx = st->host->ctx;
		rc = md_direct_open(e, reattach, err);
	}
	if (rc != HS_OK)
		goto fail;
	if (e->cidrs)
		props->env_flags |= HS_ENVP_EGRESS_CIDRS;
	if (spec->flags & HS_SPEC_PERSISTENT)
		record_save(e);
	place_runner(e);
	props->host_access = 0;
	props->runner = 0;
	snprintf(props->isolation, sizeof(props->isolation), "remote");
	snprintf(props->runner_reason, sizeof(props->runner_reason),
	         "modal sandboxes are reached by exec only (no attach stream)");
	snprintf(props->shell, sizeof(props->shell), "/bin/sh");
	snprintf(props->note, sizeof(props->note), "%s sandbox %s (%s)%s", reattach ? "re-attached" : "new",
	         e->sandbox_id, e->cred.mode,
	         e->block_network ? ", network blocked" : e->cidrs ? ", network limited to address ranges" : "");
	e->cidrs = NULL;
	e->n_cidrs = 0;
	*envp = e;
	return HS_OK;
fail:
	explicit_bzero(&e->cred, sizeof(e->cred));
	explicit_bzero(&e->g, sizeof(e->g));
	explicit_bzero(&e->r, sizeof(e->r));
	free(e);
	return rc;
}

int32_t
md_attach_gone(struct md_env *e, int32_t st, char *err)
{
	if (st != HS_E_NOTFOUND && st != HS_E_LOST)
		return st;
	snprintf(err, HS_ERR_MAX, "modal sandbox '%s' of environment '%s' is gone", e->sandbox_id,
	         e->env_name);
	return HS_E_NOTFOUND;
}

char *
md_env_script(const struct hs_exec_req *req, size_t *len, char *err)
{
	size_t cap = 1;
	for (uint32_t i = 0; i < req->n_env; i++)
		cap += 16 + 4 * strlen(req->envp[i]);
	char *s = malloc(cap), *o = s;
	if (!s) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return NULL;
	}
	for (uint32_t i = 0; i < req->n_env; i++) {
		const char *kv = req->envp[i], *eq = strchr(kv, '=');
		int ok = eq && eq > kv && !(kv[0] >= '0' && kv[0] <= '9');
		for (const char *p = kv; ok && p < eq; p++)
			ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			     *p == '_';
		if (!ok) {
			snprintf(err, HS_ERR_MAX, "exec: variable '%.*s' is not a shell name",
			         (int)(eq ? eq - kv : (ptrdiff_t)strlen(kv)), kv);
			free(s);
			return NULL;
		}
		o += sprintf(o, "export %.*s='", (int)(eq - kv), kv);
		for (const char *p = eq + 1; *p; p++) {
			if (*p == '\'') {
				memcpy(o, "'\\''", 4);
				o += 4;
			} else {
				*o++ = *p;
			}
		}
		*o++ = '\'';
		*o++ = '\n';
	}
	*o = '\0';
	*len = (size_t)(o - s);
	return s;
}

static int32_t
md_exec(void *env, const struct hs_exec_req *req, struct hs_exec_result *res, char *err)
{
	struct md_env *e = env;
	memset(res, 0, sizeof(*res));
	if (!req->argc || !req->argv || !req->argv[0]) {
		snprintf(err, HS_ERR_MAX, "exec: empty argv");
		return HS_E_INVALID;
	}
	__atomic_store_n(&e->cancel, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&e->cur_exec, req->exec_id, __ATOMIC_SEQ_CST);
	int32_t st = e->managed ? md_managed_exec(e, req, res, err) : md_direct_exec(e, req, res, err);
	__atomic_store_n(&e->cur_exec, 0, __ATOMIC_SEQ_CST);
	/* A cancel that came after the end must not stop the next call. */
	__atomic_store_n(&e->cancel, 0, __ATOMIC_SEQ_CST);
	return st;
}

static int32_t
md_cancel(void *env, uint64_t exec_id)
{
	struct md_env *e = env;
	if (exec_id && __atomic_load_n(&e->cur_exec, __ATOMIC_SEQ_CST) == exec_id)
		__atomic_store_n(&e->cancel, 1, __ATOMIC_SEQ_CST);
	return HS_OK;
}

static int32_t
md_close(void *env, uint32_t flags, char *err)
{
	struct md_env *e = env;
	int32_t st = HS_OK;
	if (!e)
		return HS_OK;
	if (!(flags & HS_CLOSE_KEEP)) {
		st = e->managed ? md_managed_terminate(e, err) : md_direct_terminate(e, err);
		if (st == HS_OK)
			unlink(e->record);
	}
	explicit_bzero(&e->cred, sizeof(e->cred));
	explicit_bzero(&e->g, sizeof(e->g));
	explicit_bzero(&e->r, sizeof(e->r));
	free(e);
	return st;
}

HS_BACKEND_EXPORT const struct hs_backend_v1 hs_backend_v1 = {
	HS_BACKEND_V1_HEADER,
	.name = "modal",
	.version = PACKAGE_VERSION,
	.summary = "Modal Sandboxes, direct (gRPC) or through a managed gateway",
	.caps = HS_CAP_EXEC | HS_CAP_IMAGE | HS_CAP_NETWORK | HS_CAP_LIMITS | HS_CAP_PERSIST |
	        HS_CAP_ISOLATED,
	.config_keys = md_keys,
	.config_rules = md_rules,
	.init = md_init,
	.fini = md_fini,
	.probe = md_probe,
	.open = md_open,
	.exec = md_exec,
	.cancel = md_cancel,
	.close = md_close,
};
