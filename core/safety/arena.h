/* SPDX-License-Identifier: MIT */
/*
 * arena.h - a bump allocator for one analysis.
 *
 * The analyser allocates many small, short-lived objects (words, nodes,
 * strings).  Taking them from an arena, whose first block normally lives on
 * the caller's stack, keeps analysis free of malloc storms and makes
 * cleanup a single call.
 */
#ifndef HS_SAFETY_ARENA_H
#define HS_SAFETY_ARENA_H

#include <stddef.h>

struct hs_arena_block;

struct hs_arena {
	char *cur;
	char *end;
	struct hs_arena_block *blocks; /* heap blocks, newest first */
	size_t used;                   /* bytes handed out, for the limit */
	size_t limit;                  /* refuse to grow past this */
	int failed;                    /* an allocation was refused */
};

/* Start an arena on buf (may be NULL) that never hands out more than limit bytes. */
void hs_arena_init(struct hs_arena *a, void *buf, size_t len, size_t limit);
/* Memory aligned for any object, or NULL (and a->failed set) past the limit. */
void *hs_arena_alloc(struct hs_arena *a, size_t n);
/* Zeroed memory, or NULL past the limit. */
void *hs_arena_zalloc(struct hs_arena *a, size_t n);
/* A NUL-terminated copy of s[0..n), or NULL past the limit. */
char *hs_arena_strndup(struct hs_arena *a, const char *s, size_t n);
/* Release every heap block; the arena may be initialised again. */
void hs_arena_free(struct hs_arena *a);

#endif
