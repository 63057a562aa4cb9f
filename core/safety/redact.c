/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * redact.c - streaming redaction of secret values.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/redact.h"

/* Up to this many distinct first bytes are searched with memchr. */
#define HS_REDACT_FIRST_MAX 4

struct hs_redactor {
	char **sec;
	size_t *len;
	size_t n;
	size_t maxlen;
	char *carry;     /* held-back tail of the previous chunk */
	size_t ncarry;
	char *work;
	size_t workcap;
	/* The distinct first bytes of the secrets: a match can start only at
	 * one of them, so scan() jumps between their occurrences (memchr)
	 * instead of comparing at every byte. */
	unsigned char first[HS_REDACT_FIRST_MAX];
	size_t nfirst;         /* > HS_REDACT_FIRST_MAX: too many, use is_first */
	unsigned char is_first[256];
};

int
hs_redactor_new(struct hs_redactor **out, const char *const *secrets, size_t n)
{
	struct hs_redactor *r = calloc(1, sizeof(*r));
	size_t k, l;

	*out = NULL;
	if (!r)
		return -1;
	r->sec = calloc(n ? n : 1, sizeof(*r->sec));
	r->len = calloc(n ? n : 1, sizeof(*r->len));
	if (!r->sec || !r->len)
		goto fail;
	for (k = 0; k < n; k++) {
		if (!secrets[k] || (l = strlen(secrets[k])) < HS_REDACT_MIN_LEN)
			continue;
		r->sec[r->n] = strdup(secrets[k]);
		if (!r->sec[r->n])
			goto fail;
		r->len[r->n++] = l;
		if (l > r->maxlen)
			r->maxlen = l;
		unsigned char c = (unsigned char)secrets[k][0];
		if (!r->is_first[c]) {
			r->is_first[c] = 1;
			if (r->nfirst < HS_REDACT_FIRST_MAX)
				r->first[r->nfirst] = c;
			r->nfirst++;
		}
	}
	r->carry = malloc(r->maxlen ? r->maxlen : 1);
	if (!r->carry)
		goto fail;
	*out = r;
	return 0;
fail:
	hs_redactor_free(r);
	return -1;
}

void
hs_redactor_free(struct hs_redactor *r)
{
	size_t k;

	if (!r)
		return;
	for (k = 0; k < r->n; k++)
		free(r->sec[k]);
	free(r->sec);
	free(r->len);
	free(r->carry);
	free(r->work);
	free(r);
}

/*
 * Process w[0..n): redact complete matches; when final is 0, stop at the
 * first position where a secret might continue past the end and return it
 * (the caller keeps the rest).  Returns how many bytes were consumed.
 */
/* The first position >= i where a secret may start (n when none).  nxt
 * caches, per first byte, its next position found (SIZE_MAX: not yet), so
 * each byte of w is searched once per first byte. */
static size_t
next_candidate(const struct hs_redactor *r, const char *w, size_t i, size_t n, size_t *nxt)
{
	if (r->nfirst > HS_REDACT_FIRST_MAX) {
		while (i < n && !r->is_first[(unsigned char)w[i]])
			i++;
		return i;
	}
	size_t best = n;
	for (size_t j = 0; j < r->nfirst; j++) {
		if (nxt[j] == SIZE_MAX || nxt[j] < i) {
			const char *p = memchr(w + i, r->first[j], n - i);
			nxt[j] = p ? (size_t)(p - w) : n;
		}
		if (nxt[j] < best)
			best = nxt[j];
	}
	return best;
}

static size_t
scan(struct hs_redactor *r, const char *w, size_t n, int final, hs_redact_emit emit, void *ctx)
{
	size_t i = 0, start = 0, k, avail;
	size_t nxt[HS_REDACT_FIRST_MAX] = { SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX };
	int partial;

	while (i < n) {
		i = next_candidate(r, w, i, n, nxt);
		if (i == n)
			break;
		partial = 0;
		for (k = 0; k < r->n; k++) {
			avail = n - i;
			if (avail >= r->len[k]) {
				if (!memcmp(w + i, r->sec[k], r->len[k]))
					break;
			} else if (!final && !memcmp(w + i, r->sec[k], avail)) {
				partial = 1;
			}
		}
		if (k < r->n) {
			if (i > start)
				emit(ctx, w + start, i - start);
			emit(ctx, HS_REDACTED, strlen(HS_REDACTED));
			i += r->len[k];
			start = i;
			continue;
		}
		if (partial)
			break;
		i++;
	}
	if (i > start)
		emit(ctx, w + start, i - start);
	return i;
}

int
hs_redact_feed(struct hs_redactor *r, const char *buf, size_t len, hs_redact_emit emit, void *ctx)
{
	size_t n = r->ncarry + len, used;
	char *nw;

	if (!r->n) {
		if (len)
			emit(ctx, buf, len);
		return 0;
	}
	if (!len)
		return 0;
	if (n > r->workcap) {
		nw = realloc(r->work, n);
		if (!nw)
			return -1;
		r->work = nw;
		r->workcap = n;
	}
	memcpy(r->work, r->carry, r->ncarry);
	memcpy(r->work + r->ncarry, buf, len);
	used = scan(r, r->work, n, 0, emit, ctx);
	/* What is left is a prefix of some secret, so shorter than maxlen. */
	r->ncarry = n - used;
	memcpy(r->carry, r->work + used, r->ncarry);
	return 0;
}

int
hs_redact_flush(struct hs_redactor *r, hs_redact_emit emit, void *ctx)
{
	if (r->ncarry)
		scan(r, r->carry, r->ncarry, 1, emit, ctx);
	r->ncarry = 0;
	return 0;
}

struct strbuf {
	char *s;
	size_t len, cap;
	int failed;
};

static void
to_strbuf(void *ctx, const char *data, size_t len)
{
	struct strbuf *b = ctx;
	char *ns;

	if (b->failed)
		return;
	if (b->len + len + 1 > b->cap) {
		b->cap = (b->len + len + 1) * 2;
		ns = realloc(b->s, b->cap);
		if (!ns) {
			b->failed = 1;
			return;
		}
		b->s = ns;
	}
	memcpy(b->s + b->len, data, len);
	b->len += len;
	b->s[b->len] = '\0';
}

char *
hs_redact_string(struct hs_redactor *r, const char *s)
{
	struct strbuf b = { NULL, 0, 0, 0 };

	to_strbuf(&b, "", 0);
	if (!r->n) {
		to_strbuf(&b, s, strlen(s));
	} else {
		scan(r, s, strlen(s), 1, to_strbuf, &b);
	}
	if (b.failed) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
