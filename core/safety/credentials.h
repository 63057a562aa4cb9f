/* SPDX-License-Identifier: MIT */
/*
 * credentials.h - credential-mode resolution for cloud backends (Modal
 * first): mode auto|direct|managed, direct tokens from the environment or
 * ~/.modal.toml, managed from a gateway URL and token.  Fails closed: an
 * error while checking never enables a mode, and nothing found is a
 * precise list of what is missing per mode.  See hs-modal(7).
 */
#ifndef HS_SAFETY_CREDENTIALS_H
#define HS_SAFETY_CREDENTIALS_H

#include <stddef.h>
#include <sys/types.h>

#include <hs/backend.h>

struct hs_cred_query {
	const char *provider;      /* "modal" (the only one so far) */
	const char *mode;          /* config <provider>.mode ("auto" when NULL or "") */
	const char *gateway_url;   /* config <provider>.gateway_url, or NULL */
	const char *gateway_token; /* config <provider>.gateway_token, or NULL */
	const char *home;          /* for ~/.modal.toml */
	/* Environment lookup; NULL: getenv(3).  Returns NULL when unset. */
	const char *(*getenv)(void *ctx, const char *name);
	void *env_ctx;
	uid_t uid;                 /* who must own the token file (or root) */
};

/*
 * Resolve into out (mode, source, id, secret, warning).  Returns HS_OK;
 * HS_E_UNAVAILABLE when no mode has what it needs (err lists, per mode,
 * exactly what is missing); HS_E_CONFIG for a bad mode, URL or token file;
 * HS_E_PERM for a token file others could change; HS_E_UNSUPPORTED for an
 * unknown provider.  On failure out holds no secret.
 */
int32_t hs_cred_resolve(const struct hs_cred_query *q, struct hs_credentials *out, char *err,
                        size_t errlen);

/* Wipe a resolved struct (it holds a secret). */
void hs_cred_wipe(struct hs_credentials *c);

#endif
