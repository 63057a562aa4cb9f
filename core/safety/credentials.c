/* SPDX-License-Identifier: MIT */
/*
 * credentials.c - credential-mode resolution (see credentials.h).
 *
 * Direct mode follows Modal's own clients: MODAL_TOKEN_ID/MODAL_TOKEN_SECRET
 * win key by key over the profile in the token file (MODAL_CONFIG_PATH, else
 * ~/.modal.toml); the profile is MODAL_PROFILE, else the one with
 * active = true, else [default].  The file must belong to the user (or
 * root) and not be writable by group or others: whoever can change it
 * chooses whose account the commands run in.  Readable by others is a
 * warning, not an error, since the tokens are already exposed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safety/credentials.h"
#include "core/safety/toml.h"

#define MAXMSG 512

static const char *
env(const struct hs_cred_query *q, const char *name)
{
	const char *v = q->getenv ? q->getenv(q->env_ctx, name) : getenv(name);
	return v && v[0] ? v : NULL;
}

static void
append(char *buf, size_t len, const char *sep, const char *s)
{
	size_t n = strlen(buf);
	if (n < len)
		snprintf(buf + n, len - n, "%s%s", n ? sep : "", s);
}

void
hs_cred_wipe(struct hs_credentials *c)
{
	explicit_bzero(c, sizeof(*c));
}

/*
 * Tokens travel in HTTP headers: a control character or a space would let a
 * planted value add headers of its own, so such a value is refused.
 */
static int
header_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s == 0x7f)
			return 0;
	return 1;
}

/* Copy a value that must fit; a token that does not is an error, not a truncation. */
static int
fits(char *dst, size_t len, const char *src)
{
	if (strlen(src) >= len)
		return -1;
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

/*
 * Is url acceptable for sending a token to?  https anywhere; http only to
 * loopback, where nothing crosses the network.
 */
static int
url_ok(const char *url)
{
	if (strncmp(url, "https://", 8) == 0)
		return url[8] != '\0';
	if (strncmp(url, "http://", 7) != 0)
		return 0;
	const char *h = url + 7;
	static const char *const loop[] = { "127.0.0.1", "localhost", "[::1]" };
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(loop[i]);
		if (strncmp(h, loop[i], n) == 0 && (h[n] == '\0' || h[n] == ':' || h[n] == '/'))
			return 1;
	}
	return 0;
}

/* ---- managed ---- */

/*
 * 1 usable (out filled), 0 missing (why says what), -1 error (err set).
 */
static int
try_managed(const struct hs_cred_query *q, struct hs_credentials *out, char *why, size_t whylen,
            char *err, size_t errlen)
{
	char uvar[64], tvar[64], up[32];
	size_t i;
	for (i = 0; q->provider[i] && i + 1 < sizeof(up); i++)
		up[i] = (char)((q->provider[i] >= 'a' && q->provider[i] <= 'z') ? q->provider[i] - 32
		                                                                  : q->provider[i]);
	up[i] = '\0';
	snprintf(uvar, sizeof(uvar), "HS_%s_GATEWAY_URL", up);
	snprintf(tvar, sizeof(tvar), "HS_%s_GATEWAY_TOKEN", up);

	const char *url = env(q, uvar), *tok = env(q, tvar);
	const char *usrc = uvar, *tsrc = tvar;
	if (!url && q->gateway_url && q->gateway_url[0]) {
		url = q->gateway_url;
		usrc = "config";
	}
	if (!tok && q->gateway_token && q->gateway_token[0]) {
		tok = q->gateway_token;
		tsrc = "config";
	}
	if (!url || !tok) {
		if (!url && !tok)
			snprintf(why, whylen, "mode managed: no gateway URL or token (set %s and %s, or "
			         "%s.gateway_url and %s.gateway_token)", uvar, tvar, q->provider, q->provider);
		else
			snprintf(why, whylen, "mode managed: no gateway %s (set %s or %s.gateway_%s)",
			         !url ? "URL" : "token", !url ? uvar : tvar, q->provider, !url ? "url" : "token");
		return 0;
	}
	if (!header_safe(tok)) {
		snprintf(err, errlen, "mode managed: the gateway token from %s contains spaces or control "
		         "characters", tsrc);
		return -1;
	}
	if (!url_ok(url)) {
		snprintf(err, errlen, "mode managed: gateway URL '%.200s' (from %s) must be https:// "
		         "(http:// only to loopback)", url, usrc);
		return -1;
	}
	if (fits(out->id, sizeof(out->id), url) < 0 || fits(out->secret, sizeof(out->secret), tok) < 0) {
		snprintf(err, errlen, "mode managed: gateway URL or token from %s is too long",
		         fits(out->id, sizeof(out->id), url) < 0 ? usrc : tsrc);
		hs_cred_wipe(out);
		return -1;
	}
	snprintf(out->mode, sizeof(out->mode), "managed");
	/* usrc/tsrc are "config" or the variable's name. */
	snprintf(out->source, sizeof(out->source), "gateway URL from %s%s, token from %s%s",
	         strcmp(usrc, "config") == 0 ? "" : "env ", usrc,
	         strcmp(tsrc, "config") == 0 ? "" : "env ", tsrc);
	return 1;
}

/* ---- direct ---- */

struct tokfile {
	char path[1024];
	int exists;
	int readable_by_others;
	struct hs_toml t;
};

/* Read and parse the token file; a missing file is not an error.  0 / -1. */
static int
read_tokfile(const struct hs_cred_query *q, struct tokfile *f, char *err, size_t errlen)
{
	const char *p = env(q, "MODAL_CONFIG_PATH");
	char buf[HS_TOML_MAX_BYTES + 1];
	char perr[256];

	memset(f, 0, sizeof(*f));
	if (p)
		snprintf(f->path, sizeof(f->path), "%s", p);
	else if (q->home && q->home[0])
		snprintf(f->path, sizeof(f->path), "%s/.modal.toml", q->home);
	else
		return 0;
	int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "mode direct: cannot open '%s': %s", f->path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "mode direct: '%s' is not a regular file", f->path);
		close(fd);
		return -1;
	}
	if (st.st_uid != q->uid && st.st_uid != 0) {
		snprintf(err, errlen, "mode direct: '%s' belongs to uid %u, not to you: whoever owns it "
		         "chooses the account; remove it or set MODAL_CONFIG_PATH", f->path,
		         (unsigned)st.st_uid);
		close(fd);
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "mode direct: '%s' is writable by group or others; chmod 600 '%s'",
		         f->path, f->path);
		close(fd);
		return -1;
	}
	f->readable_by_others = (st.st_mode & (S_IRGRP | S_IROTH)) != 0;
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, sizeof(buf) - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "mode direct: cannot read '%s': %s", f->path, strerror(errno));
			close(fd);
			explicit_bzero(buf, n);
			return -1;
		}
		if (r == 0 || (n += (size_t)r) == sizeof(buf))
			break;
	}
	close(fd);
	if (n > HS_TOML_MAX_BYTES) {
		snprintf(err, errlen, "mode direct: '%s' is larger than %u bytes", f->path, HS_TOML_MAX_BYTES);
		explicit_bzero(buf, n);
		return -1;
	}
	int rc = hs_toml_parse(&f->t, buf, n, perr, sizeof(perr));
	explicit_bzero(buf, n);
	if (rc < 0) {
		snprintf(err, errlen, "mode direct: cannot parse '%s': %s; fix it or set MODAL_CONFIG_PATH",
		         f->path, perr);
		return -1;
	}
	f->exists = 1;
	return 0;
}

/* The profile to use: MODAL_PROFILE, the active one, or "default".  NULL with err on error. */
static const char *
pick_profile(const struct hs_cred_query *q, struct tokfile *f, char *err, size_t errlen)
{
	const char *p = env(q, "MODAL_PROFILE");
	if (p)
		return p;
	const char *active = NULL;
	for (size_t i = 0; i < f->t.n; i++) {
		const struct hs_toml_entry *e = &f->t.e[i];
		if (strcmp(e->key, "active") != 0 || !e->section[0])
			continue;
		if (e->type != HS_TOML_BOOL) {
			snprintf(err, errlen, "mode direct: '%s' [%s]: active must be true or false", f->path,
			         e->section);
			return NULL;
		}
		if (strcmp(e->value, "true") != 0)
			continue;
		if (active) {
			snprintf(err, errlen, "mode direct: '%s' has two active profiles ([%s] and [%s]); "
			         "keep one or set MODAL_PROFILE", f->path, active, e->section);
			return NULL;
		}
		active = e->section;
	}
	return active ? active : "default";
}

/* A string key of the profile, or NULL; -1 with err when it is not a string. */
static int
prof_str(struct tokfile *f, const char *prof, const char *key, const char **out, char *err,
         size_t errlen)
{
	const struct hs_toml_entry *e = f->exists ? hs_toml_get(&f->t, prof, key) : NULL;
	*out = NULL;
	if (!e)
		return 0;
	if (e->type != HS_TOML_STRING) {
		snprintf(err, errlen, "mode direct: '%s' [%s]: %s must be a string", f->path, prof, key);
		return -1;
	}
	*out = e->value[0] ? e->value : NULL;
	return 0;
}

static int
try_direct(const struct hs_cred_query *q, struct hs_credentials *out, char *why, size_t whylen,
           char *err, size_t errlen)
{
	struct tokfile *f = calloc(1, sizeof(*f));
	const char *eid = env(q, "MODAL_TOKEN_ID"), *esec = env(q, "MODAL_TOKEN_SECRET");
	const char *fid = NULL, *fsec = NULL, *prof = NULL;
	int rc = -1;

	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (read_tokfile(q, f, err, errlen) < 0)
		goto out;
	if (f->exists) {
		if (!(prof = pick_profile(q, f, err, errlen)))
			goto out;
		if (prof_str(f, prof, "token_id", &fid, err, errlen) < 0 ||
		    prof_str(f, prof, "token_secret", &fsec, err, errlen) < 0)
			goto out;
	}
	const char *id = eid ? eid : fid, *sec = esec ? esec : fsec;
	if (!id || !sec) {
		char where[1200];
		if (!f->path[0])
			snprintf(where, sizeof(where), "no token file (HOME is unset)");
		else if (!f->exists)
			snprintf(where, sizeof(where), "no token file '%s'", f->path);
		else if (!hs_toml_get(&f->t, prof, "token_id") && !hs_toml_get(&f->t, prof, "token_secret"))
			snprintf(where, sizeof(where), "no profile [%s] with tokens in '%s'", prof, f->path);
		else
			snprintf(where, sizeof(where), "profile [%s] in '%s' lacks %s", prof, f->path,
			         !fid ? "token_id" : "token_secret");
		snprintf(why, whylen, "mode direct: %s%s%s %s unset and %s (run 'modal token new' or set both)",
		         !id ? "MODAL_TOKEN_ID" : "", !id && !sec ? " and " : "",
		         !sec ? "MODAL_TOKEN_SECRET" : "", !id && !sec ? "are" : "is", where);
		rc = 0;
		goto out;
	}
	if (!header_safe(id) || !header_safe(sec)) {
		snprintf(err, errlen, "mode direct: the token %s from %s contains spaces or control characters",
		         !header_safe(id) ? "id" : "secret",
		         (!header_safe(id) ? eid : esec) ? "the environment" : f->path);
		goto out;
	}
	if (fits(out->id, sizeof(out->id), id) < 0 || fits(out->secret, sizeof(out->secret), sec) < 0) {
		snprintf(err, errlen, "mode direct: token id or secret is too long");
		hs_cred_wipe(out);
		goto out;
	}
	snprintf(out->mode, sizeof(out->mode), "direct");
	if (eid && esec)
		snprintf(out->source, sizeof(out->source), "env MODAL_TOKEN_ID, MODAL_TOKEN_SECRET");
	else if (!eid && !esec)
		snprintf(out->source, sizeof(out->source), "%.200s [%.40s]", f->path, prof);
	else
		snprintf(out->source, sizeof(out->source), "env %s, %.180s [%.40s] %s",
		         eid ? "MODAL_TOKEN_ID" : "MODAL_TOKEN_SECRET", f->path, prof,
		         eid ? "token_secret" : "token_id");
	if ((eid && fid && strcmp(eid, fid) != 0) || (esec && fsec && strcmp(esec, fsec) != 0)) {
		char w[256];
		snprintf(w, sizeof(w), "the environment's token (MODAL_TOKEN_*) differs from %.100s [%.30s]; "
		         "the environment's is used", f->path, prof);
		append(out->warning, sizeof(out->warning), "; ", w);
	}
	if (f->readable_by_others && (fid || fsec)) {
		char w[256];
		snprintf(w, sizeof(w), "%.100s is readable by others: chmod 600 %.100s", f->path, f->path);
		append(out->warning, sizeof(out->warning), "; ", w);
	}
	rc = 1;
out:
	hs_toml_free(&f->t);
	explicit_bzero(f, sizeof(*f));
	free(f);
	return rc;
}

int32_t
hs_cred_resolve(const struct hs_cred_query *q, struct hs_credentials *out, char *err, size_t errlen)
{
	char why_m[MAXMSG] = "", why_d[MAXMSG] = "";
	int r;

	memset(out, 0, sizeof(*out));
	err[0] = '\0';
	if (!q->provider || strcmp(q->provider, "modal") != 0) {
		snprintf(err, errlen, "no credential resolution for provider '%s'",
		         q->provider ? q->provider : "(null)");
		return HS_E_UNSUPPORTED;
	}
	const char *mode = q->mode && q->mode[0] ? q->mode : "auto";
	int want_m = strcmp(mode, "managed") == 0, want_d = strcmp(mode, "direct") == 0;
	int aut = strcmp(mode, "auto") == 0;
	if (!want_m && !want_d && !aut) {
		snprintf(err, errlen, "%s.mode '%.64s' is not auto, direct or managed (set HS_MODAL_MODE or %s.mode)",
		         q->provider, mode, q->provider);
		return HS_E_CONFIG;
	}
	if (want_m || aut) {
		r = try_managed(q, out, why_m, sizeof(why_m), err, errlen);
		if (r < 0)
			goto error;
		if (r > 0)
			return HS_OK;
	}
	if (want_d || aut) {
		r = try_direct(q, out, why_d, sizeof(why_d), err, errlen);
		if (r < 0)
			goto error;
		if (r > 0)
			return HS_OK;
	}
	hs_cred_wipe(out);
	snprintf(err, errlen, "no usable %s credentials: %s%s%s", q->provider, why_m,
	         why_m[0] && why_d[0] ? "; " : "", why_d);
	return HS_E_UNAVAILABLE;
error:
	hs_cred_wipe(out);
	return strstr(err, "by group or others") || strstr(err, "not to you") ? HS_E_PERM : HS_E_CONFIG;
}
