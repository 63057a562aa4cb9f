/* SPDX-License-Identifier: MIT */
/*
 * redact.h - replace secret values with [REDACTED], also across chunks.
 */
#ifndef HS_SAFETY_REDACT_H
#define HS_SAFETY_REDACT_H

#include <stddef.h>

#define HS_REDACTED "[REDACTED]"
/* Secrets shorter than this are ignored: they would redact ordinary text. */
#define HS_REDACT_MIN_LEN 6

struct hs_redactor;

typedef void (*hs_redact_emit)(void *ctx, const char *data, size_t len);

/* Copy the secrets (shorter ones ignored).  Returns 0, or -1 when out of memory. */
int hs_redactor_new(struct hs_redactor **out, const char *const *secrets, size_t n);
void hs_redactor_free(struct hs_redactor *r);
/*
 * Feed one chunk of a stream; redacted output goes to emit.  Up to the
 * longest secret minus one byte is held back until the next chunk (or
 * flush) shows whether a secret continues there.  Returns 0 or -1.
 */
int hs_redact_feed(struct hs_redactor *r, const char *buf, size_t len, hs_redact_emit emit, void *ctx);
/* Emit what is held back, at the end of the stream. */
int hs_redact_flush(struct hs_redactor *r, hs_redact_emit emit, void *ctx);
/* Redact a whole string; returns a malloc'd copy, or NULL when out of memory. */
char *hs_redact_string(struct hs_redactor *r, const char *s);

#endif
