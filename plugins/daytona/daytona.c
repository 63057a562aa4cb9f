/* SPDX-License-Identifier: MIT */
/*
 * daytona.c - the daytona backend: sessions run in Daytona sandboxes,
 * driven through Daytona's REST API (libcurl + yajl).  Daytona offers no
 * way to host a long-lived program stream, so this backend implements the
 * exec op (dt-exec.c) on the toolbox's session API; this file holds the
 * configuration, probe, and the sandbox life cycle (create from an image or
 * a snapshot, wait for "started", re-attach by label, start a stopped or
 * archived one, stop or delete on close).  See hs-daytona(7).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <yajl/yajl_gen.h>

#include "dt.h"

#define DT_DEFAULT_URL "https://app.daytona.io/api"
#define DT_LABEL "hermes-sandbox"
#define DT_MAX_LIST 16

static const struct hs_config_key dt_keys[] = {
	{ "api_url", HS_CONF_STRING, "API base URL (default: DAYTONA_API_URL, else " DT_DEFAULT_URL ")" },
	{ "api_key_file", HS_CONF_STRING, "file holding the API key (mode 0600), when DAYTONA_API_KEY is unset" },
	{ "target", HS_CONF_STRING, "region to create sandboxes in (default: DAYTONA_TARGET)" },
	{ "snapshot", HS_CONF_STRING, "snapshot to create sandboxes from" },
	{ "image", HS_CONF_STRING, "image to build sandboxes from (FROM line), when no --image is given" },
	{ "cpu", HS_CONF_INT, "CPUs per sandbox (--cpus wins)" },
	{ "memory", HS_CONF_INT, "memory per sandbox in GiB (--memory wins)" },
	{ "disk", HS_CONF_INT, "disk per sandbox in GiB" },
	{ "start_timeout", HS_CONF_INT, "seconds to wait for a sandbox to reach 'started' (default 300)" },
	{ "auto_stop", HS_CONF_INT, "minutes of inactivity before Daytona stops a sandbox (default 15; 0: never)" },
	{ "poll_ms", HS_CONF_INT, "longest interval between polls of a running command (default 250)" },
	{ "grace", HS_CONF_INT, "seconds between TERM and KILL when a command is killed (default 1)" },
	{ "scratch_dir", HS_CONF_STRING, "directory inside the sandbox for scripts and stdin (default /tmp/hs-daytona)" },
	{ "stop_on_keep", HS_CONF_BOOL, "stop a persistent session's sandbox on close instead of leaving it running" },
	{ NULL, 0, NULL },
};

/* Under an admin's lock: sandboxes may stop sooner (0 is never: the loosest). */
static const struct hs_config_rule dt_rules[] = {
	{ .name = "auto_stop", .order = HS_CORDER_LESS_ZERO_MAX },
	{ .name = NULL },
};

uint64_t
dt_now(const struct dt_env *e)
{
	return e->st->host->now_ms(e->st->host->ctx);
}

void
dt_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

char *
dt_json_body(const char *first_type, ...)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	if (!g)
		return NULL;
	va_list ap;
	va_start(ap, first_type);
	yajl_gen_map_open(g);
	for (const char *t = first_type; t; t = va_arg(ap, const char *)) {
		const char *k = va_arg(ap, const char *);
		yajl_gen_string(g, (const unsigned char *)k, strlen(k));
		if (t[0] == 's') {
			const char *v = va_arg(ap, const char *);
			yajl_gen_string(g, (const unsigned char *)v, strlen(v));
		} else if (t[0] == 'b') {
			yajl_gen_bool(g, va_arg(ap, int));
		} else {
			yajl_gen_integer(g, va_arg(ap, long long));
		}
	}
	va_end(ap);
	yajl_gen_map_close(g);
	const unsigned char *buf;
	size_t len;
	char *out = NULL;
	if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok && (out = malloc(len + 1))) {
		memcpy(out, buf, len);
		out[len] = '\0';
	}
	yajl_gen_free(g);
	return out;
}

static int32_t
dt_init(const struct hs_host_v1 *host, void **state, char *err)
{
	struct dt_state *st = calloc(1, sizeof(*st));
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
dt_fini(void *state)
{
	if (state)
		curl_global_cleanup();
	free(state);
}

static void
dt_conf_str(struct dt_state *st, const char *key, char *out, size_t outlen)
{
	const char *v = NULL;
	if (st->host->config_string(st->host->ctx, key, &v) == HS_OK && v)
		snprintf(out, outlen, "%s", v);
}

static void
dt_conf_int(struct dt_state *st, const char *key, int64_t *out)
{
	int64_t v;
	if (st->host->config_int(st->host->ctx, key, &v) == HS_OK)
		*out = v;
}

/* Read the key from a file the user alone can read; 0, or -1 with reason. */
static int
dt_read_key_file(const char *path, char *key, size_t keylen, char *reason, size_t rlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat sb;
	if (fd < 0) {
		snprintf(reason, rlen, "cannot open daytona.api_key_file '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != getuid() || (sb.st_mode & 077)) {
		close(fd);
		snprintf(reason, rlen,
		         "daytona.api_key_file '%s' must be a regular file owned by you with mode 0600 (chmod 600 it)",
		         path);
		return -1;
	}
	ssize_t n = read(fd, key, keylen - 1);
	close(fd);
	if (n < 0)
		n = 0;
	key[n] = '\0';
	while (n > 0 && (key[n - 1] == '\n' || key[n - 1] == '\r' || key[n - 1] == ' '))
		key[--n] = '\0';
	if (n == 0) {
		snprintf(reason, rlen, "daytona.api_key_file '%s' is empty", path);
		return -1;
	}
	return 0;
}

/* Load the settings; 0, or -1 with a one-line reason saying what is missing and the fix. */
static int
dt_conf_load(struct dt_state *st, struct dt_conf *c, char *reason, size_t rlen)
{
	char keyfile[512] = "";
	const char *v;

	memset(c, 0, sizeof(*c));
	c->start_timeout_s = 300;
	c->auto_stop_min = 15;
	c->poll_ms = 250;
	c->grace_s = 1;
	snprintf(c->scratch, sizeof(c->scratch), "/tmp/hs-daytona");
	snprintf(c->api_url, sizeof(c->api_url), DT_DEFAULT_URL);
	dt_conf_str(st, "api_url", c->api_url, sizeof(c->api_url));
	if ((v = getenv("DAYTONA_API_URL")) && *v)
		snprintf(c->api_url, sizeof(c->api_url), "%s", v);
	dt_conf_str(st, "target", c->target, sizeof(c->target));
	if ((v = getenv("DAYTONA_TARGET")) && *v)
		snprintf(c->target, sizeof(c->target), "%s", v);
	dt_conf_str(st, "snapshot", c->snapshot, sizeof(c->snapshot));
	dt_conf_str(st, "image", c->image, sizeof(c->image));
	dt_conf_str(st, "scratch_dir", c->scratch, sizeof(c->scratch));
	dt_conf_int(st, "cpu", &c->cpu);
	dt_conf_int(st, "memory", &c->memory_gb);
	dt_conf_int(st, "disk", &c->disk_gb);
	dt_conf_int(st, "start_timeout", &c->start_timeout_s);
	dt_conf_int(st, "auto_stop", &c->auto_stop_min);
	dt_conf_int(st, "poll_ms", &c->poll_ms);
	dt_conf_int(st, "grace", &c->grace_s);
	st->host->config_bool(st->host->ctx, "stop_on_keep", &c->stop_on_keep);
	dt_conf_str(st, "api_key_file", keyfile, sizeof(keyfile));

	if (c->poll_ms < 10)
		c->poll_ms = 10;
	if (c->start_timeout_s < 1)
		c->start_timeout_s = 1;
	if (c->grace_s < 0 || c->grace_s > 60)
		c->grace_s = 1;
	if (strncmp(c->api_url, "http://", 7) != 0 && strncmp(c->api_url, "https://", 8) != 0) {
		snprintf(reason, rlen, "daytona api url '%s' is not an http(s) url; fix DAYTONA_API_URL or daytona.api_url",
		         c->api_url);
		return -1;
	}
	if (c->scratch[0] != '/' || strspn(c->scratch, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") !=
	                                    strlen(c->scratch)) {
		snprintf(reason, rlen, "daytona.scratch_dir '%s' must be an absolute path of [A-Za-z0-9/._-]", c->scratch);
		return -1;
	}
	if ((v = getenv("DAYTONA_API_KEY")) && *v) {
		if (strlen(v) >= sizeof(c->key)) {
			snprintf(reason, rlen, "DAYTONA_API_KEY is too long");
			return -1;
		}
		snprintf(c->key, sizeof(c->key), "%s", v);
		snprintf(c->key_source, sizeof(c->key_source), "env DAYTONA_API_KEY");
	} else if (keyfile[0]) {
		if (dt_read_key_file(keyfile, c->key, sizeof(c->key), reason, rlen) < 0)
			return -1;
		snprintf(c->key_source, sizeof(c->key_source), "file %s", keyfile);
	} else {
		snprintf(reason, rlen,
		         "no daytona api key: set DAYTONA_API_KEY (or daytona.api_key_file in hs.conf)");
		return -1;
	}
	if (strpbrk(c->key, "\r\n")) {
		snprintf(reason, rlen, "the daytona api key (%s) contains a line break", c->key_source);
		return -1;
	}
	return 0;
}

static void
dt_conf_wipe(struct dt_conf *c)
{
	explicit_bzero(c->key, sizeof(c->key));
}

static int32_t
dt_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
	struct dt_state *st = state;
	struct dt_conf c;
	r->runner = 0;
	if (dt_conf_load(st, &c, r->reason, sizeof(r->reason)) < 0) {
		r->ready = 0;
		dt_conf_wipe(&c);
		return HS_OK;
	}
	r->ready = 1;
	snprintf(r->detail, sizeof(r->detail), "api_url=%s\ncredentials=%s\ntarget=%s\nexec=toolbox sessions",
	         c.api_url, c.key_source, c.target[0] ? c.target : "(default)");
	if (flags & HS_PROBE_DEEP) {
		struct dt_http *h = dt_http_new(c.api_url, c.key, err);
		struct dt_resp resp = { 0 };
		if (!h) {
			dt_conf_wipe(&c);
			return HS_E_NOMEM;
		}
		char path[256], q[128];
		dt_urlencode("{\"" DT_LABEL "\":\"1\"}", q, sizeof(q));
		snprintf(path, sizeof(path), "/sandbox?labels=%s", q);
		int32_t s = dt_http_req(h, "GET", path, NULL, 15000, 1, &resp, err);
		if (s == HS_OK && (resp.status < 200 || resp.status > 299))
			s = dt_http_status(&resp, "list sandboxes", err);
		if (s != HS_OK) {
			r->ready = 0;
			snprintf(r->reason, sizeof(r->reason), "%s", err);
			err[0] = '\0';
		}
		dt_resp_free(&resp);
		dt_http_free(h);
	}
	dt_conf_wipe(&c);
	return HS_OK;
}

/* GET /sandbox/{id} into sb. */
static int32_t
dt_get_sandbox(struct dt_env *e, struct dt_sandbox *sb, char *err)
{
	char path[256], jerr[128];
	struct dt_resp r = { 0 };
	snprintf(path, sizeof(path), "/sandbox/%s", e->sandbox);
	int32_t s = dt_http_req(e->http, "GET", path, NULL, 30000, 3, &r, err);
	if (s == HS_OK && r.status == 404) {
		snprintf(err, HS_ERR_MAX,
		         "daytona sandbox '%s' is gone (deleted from outside); close the session and run again to get a new one",
		         e->sandbox);
		s = HS_E_LOST;
	} else if (s == HS_OK && (r.status < 200 || r.status > 299)) {
		s = dt_http_status(&r, "get sandbox", err);
	} else if (s == HS_OK && dt_json_sandbox(r.body.data, r.body.len, sb, jerr, sizeof(jerr)) < 0) {
		snprintf(err, HS_ERR_MAX, "daytona answered get sandbox with an unreadable body: %s", jerr);
		s = HS_E_PROTOCOL;
	}
	dt_resp_free(&r);
	return s;
}

int32_t
dt_check_lost(struct dt_env *e, const char *what, char *err)
{
	struct dt_sandbox sb;
	int32_t s = dt_get_sandbox(e, &sb, err);
	if (s != HS_OK)
		return s;
	if (strcmp(sb.state, "started") != 0) {
		snprintf(err, HS_ERR_MAX, "daytona sandbox '%s' is no longer running (state %s%s%s) during %s",
		         e->sandbox, sb.state, sb.error_reason[0] ? ": " : "", sb.error_reason, what);
		return HS_E_LOST;
	}
	snprintf(err, HS_ERR_MAX, "daytona toolbox answered 404 during %s while sandbox '%s' runs", what,
	         e->sandbox);
	return HS_E_IO;
}

static int32_t dt_post_simple(struct dt_env *e, const char *verb, const char *what, char *err);

/* Poll until the sandbox is started; bounded by start_timeout. */
static int32_t
dt_wait_started(struct dt_env *e, char *err)
{
	uint64_t until = dt_now(e) + (uint64_t)e->conf.start_timeout_s * 1000;
	long iv = 100;
	int kicked = 0;
	struct dt_sandbox sb;
	for (;;) {
		int32_t s = dt_get_sandbox(e, &sb, err);
		if (s != HS_OK)
			return s;
		if (strcmp(sb.state, "started") == 0)
			return HS_OK;
		if (strcmp(sb.state, "error") == 0 || strcmp(sb.state, "build_failed") == 0) {
			snprintf(err, HS_ERR_MAX, "daytona sandbox '%s' failed to start (state %s): %s", e->sandbox,
			         sb.state, sb.error_reason[0] ? sb.error_reason : "no reason given");
			return HS_E_UNAVAILABLE;
		}
		if (!kicked && (strcmp(sb.state, "stopped") == 0 || strcmp(sb.state, "archived") == 0)) {
			/* It was stopping or archiving when found: start it once it can be. */
			kicked = 1;
			if ((s = dt_post_simple(e, "start", "start sandbox", err)) != HS_OK)
				return s;
		}
		if (strcmp(sb.state, "destroyed") == 0 || strcmp(sb.state, "destroying") == 0) {
			snprintf(err, HS_ERR_MAX, "daytona sandbox '%s' was deleted while starting", e->sandbox);
			return HS_E_LOST;
		}
		if (dt_now(e) >= until) {
			snprintf(err, HS_ERR_MAX,
			         "daytona sandbox '%s' did not start within %lld s (state %s); raise daytona.start_timeout",
			         e->sandbox, (long long)e->conf.start_timeout_s, sb.state);
			return HS_E_TIMEOUT;
		}
		dt_sleep_ms(iv);
		if (iv < 1000)
			iv *= 2;
	}
}

static int32_t
dt_post_simple(struct dt_env *e, const char *verb, const char *what, char *err)
{
	char path[256];
	struct dt_resp r = { 0 };
	snprintf(path, sizeof(path), "/sandbox/%s/%s", e->sandbox, verb);
	int32_t s = dt_http_req(e->http, "POST", path, NULL, 60000, 0, &r, err);
	if (s == HS_OK && (r.status < 200 || r.status > 299))
		s = dt_http_status(&r, what, err);
	dt_resp_free(&r);
	return s;
}

/* Look for our sandbox of this environment by label; 1 found, 0 none. */
static int32_t
dt_find(struct dt_env *e, const char *env_name, struct dt_sandbox *found, int *nfound, char *err)
{
	char *labels = dt_json_body("s", DT_LABEL ".env", env_name, NULL);
	char q[1024], path[1200];
	struct dt_resp r = { 0 };
	struct dt_sandbox list[DT_MAX_LIST];
	int n = 0;
	*nfound = 0;
	if (!labels) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	dt_urlencode(labels, q, sizeof(q));
	free(labels);
	snprintf(path, sizeof(path), "/sandbox?labels=%s", q);
	int32_t s = dt_http_req(e->http, "GET", path, NULL, 30000, 3, &r, err);
	if (s == HS_OK && (r.status < 200 || r.status > 299))
		s = dt_http_status(&r, "list sandboxes", err);
	else if (s == HS_OK && dt_json_sandbox_list(r.body.data, r.body.len, list, DT_MAX_LIST, &n) < 0) {
		snprintf(err, HS_ERR_MAX, "daytona answered list sandboxes with an unreadable body");
		s = HS_E_PROTOCOL;
	}
	dt_resp_free(&r);
	for (int i = 0; s == HS_OK && i < n; i++) {
		if (strcmp(list[i].state, "destroyed") == 0 || strcmp(list[i].state, "destroying") == 0)
			continue;
		*found = list[i];
		*nfound = 1;
		break;
	}
	return s;
}

/* The ranges of a mapped allow list (hs_env_spec.egress_cidrs, ABI 1.1), or NULL. */
static const char *const *
dt_spec_cidrs(const struct hs_env_spec *spec)
{
	return spec->struct_size >= offsetof(struct hs_env_spec, reserved1) ? spec->egress_cidrs : NULL;
}

/* POST /sandbox for spec. */
static int32_t
dt_create(struct dt_env *e, const struct hs_env_spec *spec, char *err)
{
	const struct dt_conf *c = &e->conf;
	const char *image = spec->image && *spec->image ? spec->image : c->image[0] ? c->image : NULL;
	int none = !spec->network || !*spec->network || strcmp(spec->network, "none") == 0;
	int blocked = none;
	/* An allow list the core mapped onto ranges: Daytona's network allow list (none: blocked). */
	const char *const *cidrs = dt_spec_cidrs(spec);
	if (cidrs)
		blocked = spec->n_egress_cidrs == 0;
	int64_t cpu = spec->cpus_milli > 0 ? (spec->cpus_milli + 999) / 1000 : c->cpu;
	int64_t mem = spec->memory_bytes > 0 ? (spec->memory_bytes + (1LL << 30) - 1) >> 30 : c->memory_gb;

	if (image && strpbrk(image, "\r\n \t")) {
		snprintf(err, HS_ERR_MAX, "image name '%s' has white space", image);
		return HS_E_INVALID;
	}
	if (spec->n_mounts > 0) {
		snprintf(err, HS_ERR_MAX,
		         "the daytona backend cannot mount host paths or volumes (%u mount(s) asked); drop -v/--mount",
		         spec->n_mounts);
		return HS_E_INVALID;
	}
	if (!none && strcmp(spec->network, "bridge") != 0 && strcmp(spec->network, "default") != 0 &&
	    strcmp(spec->network, "internet") != 0) {
		snprintf(err, HS_ERR_MAX,
		         "daytona sandboxes have no named networks ('%s'); use --network none or --network default",
		         spec->network);
		return HS_E_INVALID;
	}

	yajl_gen g = yajl_gen_alloc(NULL);
	if (!g) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
#define GS(s) yajl_gen_string(g, (const unsigned char *)(s), strlen(s))
	yajl_gen_map_open(g);
	GS("name"); GS(spec->env_name);
	GS("labels");
	yajl_gen_map_open(g);
	GS(DT_LABEL); GS("1");
	GS(DT_LABEL ".session"); GS(spec->session ? spec->session : spec->env_name);
	GS(DT_LABEL ".env"); GS(spec->env_name);
	yajl_gen_map_close(g);
	GS("networkBlockAll"); yajl_gen_bool(g, blocked);
	if (cidrs && !blocked) {
		/* Comma-separated, as the API takes it. */
		size_t len = 1;
		for (uint32_t i = 0; i < spec->n_egress_cidrs; i++)
			len += strlen(cidrs[i]) + 1;
		char *list = calloc(1, len);
		if (!list) {
			yajl_gen_free(g);
			snprintf(err, HS_ERR_MAX, "out of memory");
			return HS_E_NOMEM;
		}
		for (uint32_t i = 0; i < spec->n_egress_cidrs; i++) {
			if (i)
				strcat(list, ",");
			strcat(list, cidrs[i]);
		}
		GS("networkAllowList"); GS(list);
		free(list);
	}
	/*
	 * Every sandbox stops after auto_stop idle minutes (the polls of a running
	 * command count as activity); one that is not persistent is then deleted
	 * at once, so an hs that died does not leave it running or kept.
	 */
	GS("autoStopInterval"); yajl_gen_integer(g, c->auto_stop_min);
	if (!(spec->flags & HS_SPEC_PERSISTENT)) {
		GS("autoDeleteInterval"); yajl_gen_integer(g, 0);
	}
	if (c->target[0]) { GS("target"); GS(c->target); }
	if (cpu > 0) { GS("cpu"); yajl_gen_integer(g, cpu); }
	if (mem > 0) { GS("memory"); yajl_gen_integer(g, mem); }
	if (c->disk_gb > 0) { GS("disk"); yajl_gen_integer(g, c->disk_gb); }
	if (image) {
		char df[600];
		snprintf(df, sizeof(df), "FROM %s\n", image);
		GS("buildInfo");
		yajl_gen_map_open(g);
		GS("dockerfileContent"); GS(df);
		yajl_gen_map_close(g);
	} else if (c->snapshot[0]) {
		GS("snapshot"); GS(c->snapshot);
	}
	yajl_gen_map_close(g);
#undef GS
	const unsigned char *buf;
	size_t len;
	char *body = NULL;
	if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok && (body = malloc(len + 1))) {
		memcpy(body, buf, len);
		body[len] = '\0';
	}
	yajl_gen_free(g);
	if (!body) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	struct dt_resp r = { 0 };
	struct dt_sandbox sb;
	char jerr[128];
	int32_t s = dt_http_req(e->http, "POST", "/sandbox", body, 120000, 0, &r, err);
	free(body);
	if (s == HS_OK && (r.status < 200 || r.status > 299))
		s = dt_http_status(&r, "create sandbox", err);
	else if (s == HS_OK && dt_json_sandbox(r.body.data, r.body.len, &sb, jerr, sizeof(jerr)) < 0) {
		snprintf(err, HS_ERR_MAX, "daytona answered create sandbox with an unreadable body: %s", jerr);
		s = HS_E_PROTOCOL;
	}
	if (s == HS_OK)
		snprintf(e->sandbox, sizeof(e->sandbox), "%s", sb.id);
	dt_resp_free(&r);
	return s;
}

int32_t
dt_session_run(struct dt_env *e, const char *sid, const char *cmd, int *exit_code, struct dt_buf *out,
               long timeout_ms, char *err)
{
	char path[512], cid[128];
	struct dt_resp r = { 0 };
	int has_exit = 0;
	char *body = dt_json_body("s", "command", cmd, "b", "runAsync", 0, "b", "async", 0, NULL);
	if (!body) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	snprintf(path, sizeof(path), "/toolbox/%s/toolbox/process/session/%s/exec", e->sandbox, sid);
	int32_t s = dt_http_req(e->http, "POST", path, body, timeout_ms, 0, &r, err);
	free(body);
	if (s == HS_OK && r.status == 404)
		s = dt_check_lost(e, "a session command", err);
	else if (s == HS_OK && (r.status < 200 || r.status > 299))
		s = dt_http_status(&r, "run a session command", err);
	else if (s == HS_OK && (dt_json_exec(r.body.data, r.body.len, cid, sizeof(cid), &has_exit, exit_code) < 0 ||
	                        !has_exit)) {
		snprintf(err, HS_ERR_MAX, "daytona answered a synchronous session command without an exit code");
		s = HS_E_PROTOCOL;
	}
	if (s == HS_OK && out) {
		struct dt_buf eb = { 0 };
		/* The synchronous answer carries "output" (or stdout/stderr). */
		dt_json_logs(r.body.data, r.body.len, 1, out, &eb);
		dt_buf_add(out, eb.data ? eb.data : "", eb.len);
		dt_buf_free(&eb);
	}
	dt_resp_free(&r);
	return s;
}

static int32_t
dt_session_create(struct dt_env *e, const char *sid, char *err)
{
	char path[256];
	struct dt_resp r = { 0 };
	char *body = dt_json_body("s", "sessionId", sid, NULL);
	if (!body) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	snprintf(path, sizeof(path), "/toolbox/%s/toolbox/process/session", e->sandbox);
	int32_t s = dt_http_req(e->http, "POST", path, body, 30000, 0, &r, err);
	free(body);
	if (s == HS_OK && r.status == 404)
		s = dt_check_lost(e, "create toolbox session", err);
	else if (s == HS_OK && r.status != 409 && (r.status < 200 || r.status > 299))
		s = dt_http_status(&r, "create toolbox session", err);
	dt_resp_free(&r);
	return s;
}

static void
dt_session_delete(struct dt_env *e, const char *sid)
{
	char path[256], err[HS_ERR_MAX];
	struct dt_resp r = { 0 };
	snprintf(path, sizeof(path), "/toolbox/%s/toolbox/process/session/%s", e->sandbox, sid);
	dt_http_req(e->http, "DELETE", path, NULL, 10000, 0, &r, err);
	dt_resp_free(&r);
}

/* Make the sandbox's scratch dir and find its shell. */
static int32_t
dt_setup(struct dt_env *e, struct hs_env_props *props, char *err)
{
	char cmd[768];
	struct dt_buf out = { 0 };
	int code = -1;
	snprintf(cmd, sizeof(cmd),
	         "umask 077; mkdir -p '%s' && chmod 700 '%s' && { command -v bash || command -v sh || echo /bin/sh; } &&"
	         " { uname -m || echo unknown; }",
	         e->conf.scratch, e->conf.scratch);
	int32_t s = dt_session_run(e, e->ctl_session, cmd, &code, &out, 60000, err);
	if (s == HS_OK && code != 0) {
		snprintf(err, HS_ERR_MAX, "cannot create '%s' inside daytona sandbox '%s' (exit %d)", e->conf.scratch,
		         e->sandbox, code);
		s = HS_E_IO;
	}
	if (s == HS_OK) {
		const char *sh = "/bin/sh";
		char *line = out.data, arch[64] = "";
		if (line) {
			char *next = line + strcspn(line, "\r\n");
			if (*next)
				sscanf(next + 1, " %63s", arch);
			*next = '\0';
			if (line[0] == '/' && strlen(line) < sizeof(props->shell) && !strpbrk(line, " '\"\\$`"))
				sh = line;
		}
		snprintf(props->shell, sizeof(props->shell), "%s", sh);
		dt_place_runner(e, arch);
	}
	dt_buf_free(&out);
	return s;
}

int32_t
dt_revive(struct dt_env *e, char *err)
{
	struct dt_sandbox sb;
	int32_t s = dt_get_sandbox(e, &sb, err);
	if (s != HS_OK)
		return s;
	if (strcmp(sb.state, "started") == 0)
		return HS_E_BUSY; /* running: the failure was something else */
	if (strcmp(sb.state, "stopped") != 0 && strcmp(sb.state, "archived") != 0 &&
	    strcmp(sb.state, "stopping") != 0 && strcmp(sb.state, "archiving") != 0 &&
	    strcmp(sb.state, "starting") != 0) {
		snprintf(err, HS_ERR_MAX, "daytona sandbox '%s' is no longer usable (state %s%s%s)", e->sandbox,
		         sb.state, sb.error_reason[0] ? ": " : "", sb.error_reason);
		return HS_E_LOST;
	}
	e->st->host->log(e->st->host->ctx, HS_LOG_INFO, "starting daytona sandbox %s again (it was %s)",
	                 e->sandbox, sb.state);
	if ((strcmp(sb.state, "stopped") == 0 || strcmp(sb.state, "archived") == 0) &&
	    (s = dt_post_simple(e, "start", "start sandbox", err)) != HS_OK)
		return s;
	if ((s = dt_wait_started(e, err)) != HS_OK || (s = dt_session_create(e, e->session, err)) != HS_OK ||
	    (s = dt_session_create(e, e->ctl_session, err)) != HS_OK)
		return s;
	struct hs_env_props scratch_props;
	return dt_setup(e, &scratch_props, err);
}

static int32_t
dt_close(void *envp, uint32_t flags, char *err)
{
	struct dt_env *e = envp;
	int32_t s = HS_OK;
	if (!e)
		return HS_OK;
	if (e->http && e->sandbox[0]) {
		if (e->session[0])
			dt_session_delete(e, e->session);
		if (e->ctl_session[0])
			dt_session_delete(e, e->ctl_session);
		if (flags & HS_CLOSE_KEEP) {
			if (e->conf.stop_on_keep)
				s = dt_post_simple(e, "stop", "stop sandbox", err);
		} else {
			char path[256];
			struct dt_resp r = { 0 };
			snprintf(path, sizeof(path), "/sandbox/%s", e->sandbox);
			s = dt_http_req(e->http, "DELETE", path, NULL, 60000, 2, &r, err);
			if (s == HS_OK && r.status != 404 && (r.status < 200 || r.status > 299))
				s = dt_http_status(&r, "delete sandbox", err);
			dt_resp_free(&r);
		}
	}
	dt_http_free(e->http);
	dt_conf_wipe(&e->conf);
	free(e);
	return s;
}

static int32_t
dt_open(void *state, const struct hs_env_spec *spec, void **envp, struct hs_env_props *props, char *err)
{
	struct dt_state *st = state;
	struct dt_env *e = calloc(1, sizeof(*e));
	struct dt_sandbox sb;
	char reason[512];
	int n = 0;
	int32_t s;

	*envp = NULL;
	if (!e) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	e->st = st;
	if (dt_conf_load(st, &e->conf, reason, sizeof(reason)) < 0) {
		snprintf(err, HS_ERR_MAX, "%s", reason);
		dt_close(e, HS_CLOSE_KEEP, reason);
		return HS_E_UNAVAILABLE;
	}
	if (!(e->http = dt_http_new(e->conf.api_url, e->conf.key, err))) {
		dt_close(e, HS_CLOSE_KEEP, reason);
		return HS_E_NOMEM;
	}
	if ((s = dt_find(e, spec->env_name, &sb, &n, err)) != HS_OK)
		goto fail;
	if (n == 1) {
		snprintf(e->sandbox, sizeof(e->sandbox), "%s", sb.id);
		if (strcmp(sb.state, "error") == 0 || strcmp(sb.state, "build_failed") == 0) {
			/* A broken sandbox is replaced rather than kept forever. */
			snprintf(props->note, sizeof(props->note), "replaced sandbox %.80s (it was in state %s: %.100s)",
			         sb.id, sb.state, sb.error_reason);
			char derr[HS_ERR_MAX], path[256];
			struct dt_resp r = { 0 };
			snprintf(path, sizeof(path), "/sandbox/%s", sb.id);
			dt_http_req(e->http, "DELETE", path, NULL, 60000, 1, &r, derr);
			dt_resp_free(&r);
			e->sandbox[0] = '\0';
			n = 0;
		} else if (strcmp(sb.state, "stopped") == 0 || strcmp(sb.state, "archived") == 0) {
			snprintf(props->note, sizeof(props->note), "started %s sandbox %.100s", sb.state, sb.id);
			if ((s = dt_post_simple(e, "start", "start sandbox", err)) != HS_OK)
				goto fail_keep;
		}
	}
	if (n == 0 && (spec->flags & HS_SPEC_ATTACH)) {
		/* Attach only: gone (or broken, and deleted above) is not found; create nothing. */
		snprintf(err, HS_ERR_MAX, "daytona environment '%s' has no sandbox", spec->env_name);
		s = HS_E_NOTFOUND;
		goto fail_keep;
	}
	if (n == 0 && (s = dt_create(e, spec, err)) != HS_OK)
		goto fail_keep;
	if ((s = dt_wait_started(e, err)) != HS_OK)
		goto fail;
	/* Unique per process and open: two hs processes on one sandbox never share a session. */
	snprintf(e->session, sizeof(e->session), "hs-%ld-%lx-%u", (long)getpid(),
	         (unsigned long)(dt_now(e) & 0xffffff), __atomic_add_fetch(&st->opens, 1, __ATOMIC_SEQ_CST));
	snprintf(e->ctl_session, sizeof(e->ctl_session), "%s-ctl", e->session);
	if ((s = dt_session_create(e, e->session, err)) != HS_OK ||
	    (s = dt_session_create(e, e->ctl_session, err)) != HS_OK || (s = dt_setup(e, props, err)) != HS_OK)
		goto fail;
	props->host_access = 0;
	props->runner = 0;
	if (dt_spec_cidrs(spec))
		props->env_flags |= HS_ENVP_EGRESS_CIDRS;
	snprintf(props->isolation, sizeof(props->isolation), "remote");
	snprintf(props->runner_reason, sizeof(props->runner_reason),
	         "daytona has no program stream: commands run through the toolbox session api");
	snprintf(props->runtime_dir, sizeof(props->runtime_dir), "%s", e->conf.scratch);
	st->host->log(st->host->ctx, HS_LOG_DEBUG, "session '%s' uses daytona sandbox %s",
	              spec->session ? spec->session : spec->env_name, e->sandbox);
	*envp = e;
	return HS_OK;
fail:
	/* A sandbox we made for this open and could not use is deleted, not leaked. */
	if (n == 0 && e->sandbox[0] && s != HS_E_LOST && !(spec->flags & HS_SPEC_PERSISTENT)) {
		char derr[HS_ERR_MAX];
		dt_close(e, 0, derr);
		return s;
	}
fail_keep:
	{
		char derr[HS_ERR_MAX];
		dt_close(e, HS_CLOSE_KEEP, derr);
	}
	return s;
}

HS_BACKEND_EXPORT const struct hs_backend_v1 hs_backend_v1 = {
	HS_BACKEND_V1_HEADER,
	.name = "daytona",
	.version = PACKAGE_VERSION,
	.summary = "Daytona cloud sandboxes through the Daytona REST API",
	.caps = HS_CAP_EXEC | HS_CAP_IMAGE | HS_CAP_NETWORK | HS_CAP_LIMITS | HS_CAP_PERSIST | HS_CAP_ISOLATED,
	.config_keys = dt_keys,
	.config_rules = dt_rules,
	.init = dt_init,
	.fini = dt_fini,
	.probe = dt_probe,
	.open = dt_open,
	.exec = dt_exec,
	.cancel = dt_cancel,
	.close = dt_close,
};
