/* SPDX-License-Identifier: MIT */
/*
 * fakehost.c - the fake core used by plugin unit tests (see hs/fakehost.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hs/fakehost.h>

#define FH_MAX_KEYS 64
#define FH_MAX_LIST 32

struct fh_kv {
	char *key;
	char *value;
	const char *list[FH_MAX_LIST];
	uint32_t n_list;
	char *list_buf;
};

struct hs_fakehost {
	struct hs_host_v1 host;
	char *name;
	char root[64];
	char state[96], cache[96], run[96];
	char *runner;
	struct fh_kv kv[FH_MAX_KEYS];
	unsigned n_kv;
	char *log;
	size_t log_len;
	int32_t approval;
	unsigned approvals;
};

static struct fh_kv *
fh_find(struct hs_fakehost *fh, const char *key)
{
	for (unsigned i = 0; i < fh->n_kv; i++)
		if (strcmp(fh->kv[i].key, key) == 0)
			return &fh->kv[i];
	return NULL;
}

static void
fh_log(void *ctx, int32_t level, const char *fmt, ...)
{
	static const char *names[] = { "error", "warn", "info", "debug" };
	struct hs_fakehost *fh = ctx;
	char line[1024];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "%s ", (level >= 0 && level <= 3) ? names[level] : "?");
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	size_t len = strlen(line);
	char *nl = realloc(fh->log, fh->log_len + len + 1);
	if (!nl)
		return;
	memcpy(nl + fh->log_len, line, len + 1);
	fh->log = nl;
	fh->log_len += len;
}

static int32_t
fh_config_string(void *ctx, const char *key, const char **out)
{
	struct fh_kv *kv = fh_find(ctx, key);
	if (!kv)
		return HS_E_NOTFOUND;
	*out = kv->value;
	return HS_OK;
}

static int32_t
fh_config_int(void *ctx, const char *key, int64_t *out)
{
	struct fh_kv *kv = fh_find(ctx, key);
	char *end;
	if (!kv)
		return HS_E_NOTFOUND;
	errno = 0;
	long long v = strtoll(kv->value, &end, 10);
	if (errno || end == kv->value || *end)
		return HS_E_CONFIG;
	*out = v;
	return HS_OK;
}

static int32_t
fh_config_bool(void *ctx, const char *key, int32_t *out)
{
	struct fh_kv *kv = fh_find(ctx, key);
	if (!kv)
		return HS_E_NOTFOUND;
	if (strcmp(kv->value, "true") == 0)
		*out = 1;
	else if (strcmp(kv->value, "false") == 0)
		*out = 0;
	else
		return HS_E_CONFIG;
	return HS_OK;
}

static int32_t
fh_config_strings(void *ctx, const char *key, const char *const **out, uint32_t *n)
{
	struct fh_kv *kv = fh_find(ctx, key);
	if (!kv)
		return HS_E_NOTFOUND;
	*out = kv->list;
	*n = kv->n_list;
	return HS_OK;
}

/* The fake host classifies only the simplest forms; plugins' own tests need no more. */
static int32_t
fh_assess_mount(void *ctx, const char *spec, struct hs_mount *out, char *err)
{
	const char *colon = strchr(spec, ':');
	memset(out, 0, sizeof(*out));
	if (!colon) {
		out->kind = HS_MOUNT_ANONYMOUS;
		snprintf(out->target, sizeof(out->target), "%s", spec);
		return HS_OK;
	}
	snprintf(out->source, sizeof(out->source), "%.*s", (int)(colon - spec), spec);
	snprintf(out->target, sizeof(out->target), "%s", colon + 1);
	if (spec[0] == '/' || spec[0] == '.' || spec[0] == '~') {
		out->kind = HS_MOUNT_HOST;
		out->host_access = 1;
		snprintf(out->reason, sizeof(out->reason), "host path '%s'", out->source);
	} else {
		out->kind = HS_MOUNT_VOLUME;
	}
	return HS_OK;
}

static int32_t
fh_approve(void *ctx, const char *session, const struct hs_risk *risk, char *err)
{
	struct hs_fakehost *fh = ctx;
	fh->approvals++;
	if (fh->approval != HS_OK || risk->hardline || risk->critical) {
		snprintf(err, HS_ERR_MAX, "'%s' denied by the fake host", risk->rule_id);
		return HS_E_DENIED;
	}
	return HS_OK;
}

static int32_t
fh_resolve_credentials(void *ctx, const char *provider, struct hs_credentials *out, char *err)
{
	snprintf(err, HS_ERR_MAX, "the fake host has no credentials for '%s'", provider);
	return HS_E_UNAVAILABLE;
}

static uint64_t
fh_now_ms(void *ctx)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct hs_fakehost *
hs_fakehost_new(const char *name, const char *runner_path)
{
	struct hs_fakehost *fh = calloc(1, sizeof(*fh));
	if (!fh)
		return NULL;
	strcpy(fh->root, "/tmp/hs-fakehost.XXXXXX");
	if (!mkdtemp(fh->root)) {
		free(fh);
		return NULL;
	}
	snprintf(fh->state, sizeof(fh->state), "%s/state", fh->root);
	snprintf(fh->cache, sizeof(fh->cache), "%s/cache", fh->root);
	snprintf(fh->run, sizeof(fh->run), "%s/run", fh->root);
	if (mkdir(fh->state, 0700) < 0 || mkdir(fh->cache, 0700) < 0 || mkdir(fh->run, 0700) < 0)
		goto fail;
	fh->name = strdup(name);
	fh->runner = runner_path ? strdup(runner_path) : NULL;
	if (!fh->name || (runner_path && !fh->runner))
		goto fail;
	fh->approval = HS_E_DENIED;
	fh->host = (struct hs_host_v1){
		.abi_major = HS_ABI_MAJOR,
		.abi_minor = HS_ABI_MINOR,
		.struct_size = sizeof(struct hs_host_v1),
		.ctx = fh,
		.log = fh_log,
		.config_string = fh_config_string,
		.config_int = fh_config_int,
		.config_bool = fh_config_bool,
		.config_strings = fh_config_strings,
		.assess_mount = fh_assess_mount,
		.approve = fh_approve,
		.resolve_credentials = fh_resolve_credentials,
		.state_dir = fh->state,
		.cache_dir = fh->cache,
		.runtime_dir = fh->run,
		.runner_path = fh->runner,
		.now_ms = fh_now_ms,
	};
	return fh;
fail:
	hs_fakehost_free(fh);
	return NULL;
}

static int
fh_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

void
hs_fakehost_free(struct hs_fakehost *fh)
{
	if (!fh)
		return;
	nftw(fh->root, fh_rm, 16, FTW_DEPTH | FTW_PHYS);
	for (unsigned i = 0; i < fh->n_kv; i++) {
		free(fh->kv[i].key);
		free(fh->kv[i].value);
		free(fh->kv[i].list_buf);
	}
	free(fh->name);
	free(fh->runner);
	free(fh->log);
	free(fh);
}

const struct hs_host_v1 *
hs_fakehost_host(struct hs_fakehost *fh)
{
	return &fh->host;
}

int
hs_fakehost_set(struct hs_fakehost *fh, const char *key, const char *value)
{
	struct fh_kv *kv = fh_find(fh, key);
	if (!kv) {
		if (fh->n_kv == FH_MAX_KEYS)
			return -1;
		kv = &fh->kv[fh->n_kv++];
		memset(kv, 0, sizeof(*kv));
		kv->key = strdup(key);
	} else {
		free(kv->value);
		free(kv->list_buf);
	}
	kv->value = strdup(value);
	kv->list_buf = strdup(value);
	if (!kv->key || !kv->value || !kv->list_buf)
		return -1;
	kv->n_list = 0;
	for (char *save = NULL, *tok = strtok_r(kv->list_buf, ",", &save);
	     tok && kv->n_list < FH_MAX_LIST; tok = strtok_r(NULL, ",", &save))
		kv->list[kv->n_list++] = tok;
	return 0;
}

void
hs_fakehost_set_approval(struct hs_fakehost *fh, int32_t answer)
{
	fh->approval = answer;
}

const char *
hs_fakehost_log(const struct hs_fakehost *fh)
{
	return fh->log ? fh->log : "";
}

unsigned
hs_fakehost_approvals(const struct hs_fakehost *fh)
{
	return fh->approvals;
}

const char *
hs_fakehost_root(const struct hs_fakehost *fh)
{
	return fh->root;
}
