/* SPDX-License-Identifier: MIT */
/*
 * arena.c - bump allocation for the analyser (see arena.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/arena.h"

struct hs_arena_block {
	struct hs_arena_block *next;
	size_t size;
	max_align_t data[];
};

#define ALIGN(n) (((n) + (sizeof(max_align_t) - 1)) & ~(sizeof(max_align_t) - 1))

void
hs_arena_init(struct hs_arena *a, void *buf, size_t len, size_t limit)
{
	uintptr_t p = (uintptr_t)buf, q;

	memset(a, 0, sizeof(*a));
	a->limit = limit;
	if (buf && len > sizeof(max_align_t)) {
		/* The caller's buffer may be unaligned; start at the first aligned byte. */
		q = ALIGN(p);
		a->cur = (char *)q;
		a->end = (char *)buf + len;
	}
}

void *
hs_arena_alloc(struct hs_arena *a, size_t n)
{
	struct hs_arena_block *b;
	size_t want, sz;
	char *r;

	n = ALIGN(n ? n : 1);
	if (n > a->limit || a->used > a->limit - n) {
		a->failed = 1;
		return NULL;
	}
	if (!a->cur || (size_t)(a->end - a->cur) < n) {
		/* Blocks double so a large input costs few mallocs. */
		sz = a->blocks ? a->blocks->size * 2 : 16384;
		want = n + 64;
		if (sz < want)
			sz = want;
		b = malloc(sizeof(*b) + sz);
		if (!b) {
			a->failed = 1;
			return NULL;
		}
		b->next = a->blocks;
		b->size = sz;
		a->blocks = b;
		a->cur = (char *)b->data;
		a->end = a->cur + sz;
	}
	r = a->cur;
	a->cur += n;
	a->used += n;
	return r;
}

void *
hs_arena_zalloc(struct hs_arena *a, size_t n)
{
	void *p = hs_arena_alloc(a, n);

	if (p)
		memset(p, 0, n);
	return p;
}

char *
hs_arena_strndup(struct hs_arena *a, const char *s, size_t n)
{
	char *p = hs_arena_alloc(a, n + 1);

	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void
hs_arena_free(struct hs_arena *a)
{
	struct hs_arena_block *b, *next;

	for (b = a->blocks; b; b = next) {
		next = b->next;
		free(b);
	}
	a->blocks = NULL;
	a->cur = a->end = NULL;
}
