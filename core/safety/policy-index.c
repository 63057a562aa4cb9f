/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * policy-index.c - the tables that make matching cheap, built once the
 * rule files are read (policy.c loads them).
 *
 * Rules naming programs exactly are found through a hash of program names,
 * which also holds each program's declaration; rules with a glob program
 * or none are tried for every command.  Path set patterns get their
 * literal prefix measured, so most paths are turned away without fnmatch().
 */
#include <stdlib.h>
#include <string.h>

#include "core/safety/internal.h"

void *
hs_grow(void *arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *na;

	if (n < *cap)
		return arr;
	ncap = *cap ? *cap * 2 : 16;
	na = realloc(arr, ncap * elem);
	if (na)
		*cap = ncap;
	return na;
}

size_t
hs_glob_litlen(const char *pat)
{
	size_t n = 0;

	/* Only plain ASCII counts: it compares the same in any locale. */
	while (pat[n] && pat[n] != '*' && pat[n] != '?' && pat[n] != '[' && pat[n] != '\\' &&
	       !((unsigned char)pat[n] & 0x80))
		n++;
	return n;
}

/*
 * Is a program-list entry a glob?  As the matcher always compares names
 * exactly first, an entry needs fnmatch() only when it holds * or ?, a
 * bracket expression ([ with a ] after it), or a [ next to an escape or
 * a non-ASCII byte; a lone "[" or "[[" matches only itself.
 */
static int
entry_is_glob(const char *v)
{
	const char *b;

	if (!strpbrk(v, "*?["))
		return 0;
	if (strpbrk(v, "*?\\"))
		return 1;
	for (b = v; *b; b++)
		if ((unsigned char)*b & 0x80)
			return 1;
	b = strchr(v, '[');
	return strchr(b, ']') != NULL;
}

int
hs_strlist_glob(struct hs_arena *a, struct hs_strlist *l)
{
	unsigned char *g;
	size_t *ll, k;
	int any = 0;

	l->glob = NULL;
	l->litlen = NULL;
	memset(l->first, 0, sizeof(l->first));
	for (k = 0; k < l->n; k++) {
		unsigned char c = (unsigned char)l->v[k][0];

		if (entry_is_glob(l->v[k])) {
			any = 1;
			if (!hs_glob_litlen(l->v[k]))
				c = 0, memset(l->first, 0xff, sizeof(l->first)); /* may match anything */
		}
		l->first[c >> 3] |= (unsigned char)(1u << (c & 7));
	}
	if (!any)
		return 0;
	g = hs_arena_alloc(a, l->n);
	ll = hs_arena_alloc(a, sizeof(*ll) * l->n);
	if (!g || !ll)
		return -1;
	for (k = 0; k < l->n; k++) {
		g[k] = (unsigned char)entry_is_glob(l->v[k]);
		ll[k] = hs_glob_litlen(l->v[k]);
	}
	l->glob = g;
	l->litlen = ll;
	return 0;
}

static size_t
hash(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static struct hs_pidx *
idx_slot(struct hs_policy *p, const char *name)
{
	size_t h = hash(name) & (p->idx_cap - 1);

	while (p->idx[h].name && strcmp(p->idx[h].name, name))
		h = (h + 1) & (p->idx_cap - 1);
	return &p->idx[h];
}

static int
index_sets(struct hs_policy *p)
{
	size_t k, j;

	for (k = 0; k < p->n_sets; k++) {
		struct hs_pathset *s = &p->sets[k];

		s->litlen = hs_arena_alloc(&p->mem, sizeof(*s->litlen) * (s->n ? s->n : 1));
		s->literal = hs_arena_alloc(&p->mem, s->n ? s->n : 1);
		if (!s->litlen || !s->literal)
			return -1;
		for (j = 0; j < s->n; j++) {
			const char *pat = s->pats[j] + (s->pats[j][0] == '!');

			s->litlen[j] = hs_glob_litlen(pat);
			s->literal[j] = !pat[s->litlen[j]];
		}
	}
	return 0;
}

int
hs_policy_index(struct hs_policy *p)
{
	size_t k, j, total = 0;
	struct hs_pidx *e;
	size_t *nr;

	if (index_sets(p))
		return -1;
	for (k = 0; k < p->n_rules; k++)
		total += p->rules[k].programs.n;
	for (k = 0; k < p->n_decls; k++)
		total += p->decls[k].names.n * 2; /* "docker exec" also marks "docker" */
	for (p->idx_cap = 64; p->idx_cap < total * 2 + 1; p->idx_cap *= 2)
		;
	p->idx = calloc(p->idx_cap, sizeof(*p->idx));
	p->generic = calloc(p->n_rules + 1, sizeof(*p->generic));
	if (!p->idx || !p->generic)
		return -1;
	for (k = 0; k < p->n_rules; k++) {
		const struct hs_rule *r = &p->rules[k];
		int glob = r->programs.n == 0;

		for (j = 0; j < r->programs.n; j++)
			if (strpbrk(r->programs.v[j], "*?["))
				glob = 1;
		if (glob) {
			p->generic[p->n_generic++] = k;
			continue;
		}
		for (j = 0; j < r->programs.n; j++) {
			e = idx_slot(p, r->programs.v[j]);
			e->name = r->programs.v[j];
			if (e->n && e->rules[e->n - 1] == k)
				continue;
			nr = hs_grow(e->rules, &e->cap, e->n, sizeof(*e->rules));
			if (!nr)
				return -1;
			e->rules = nr;
			e->rules[e->n++] = k;
		}
	}
	/* The last declaration of a name wins, so admins can redeclare. */
	for (k = 0; k < p->n_decls; k++) {
		for (j = 0; j < p->decls[k].names.n; j++) {
			const char *v = p->decls[k].names.v[j], *sp = strchr(v, ' ');

			e = idx_slot(p, v);
			e->name = v;
			e->decl = &p->decls[k];
			if (sp) {
				/* The grammar of a subcommand: the program's entry says to look for it. */
				const char *first = hs_arena_strndup(&p->mem, v, (size_t)(sp - v));

				if (!first)
					return -1;
				e = idx_slot(p, first);
				if (!e->name)
					e->name = first;
				e->has_sub = 1;
			}
		}
	}
	return 0;
}

void
hs_policy_index_free(struct hs_policy *p)
{
	size_t k;

	if (p->idx)
		for (k = 0; k < p->idx_cap; k++)
			free(p->idx[k].rules);
	free(p->idx);
	free(p->generic);
	p->idx = NULL;
	p->generic = NULL;
}

const struct hs_pidx *
hs_policy_prog(const struct hs_policy *p, const char *prog)
{
	size_t h;

	if (!prog[0] || !p->idx)
		return NULL;
	h = hash(prog) & (p->idx_cap - 1);
	while (p->idx[h].name) {
		if (!strcmp(p->idx[h].name, prog))
			return &p->idx[h];
		h = (h + 1) & (p->idx_cap - 1);
	}
	return NULL;
}

const struct hs_progdecl *
hs_policy_decl(const struct hs_policy *p, const char *prog)
{
	const struct hs_pidx *e = hs_policy_prog(p, prog);

	return e ? e->decl : NULL;
}

size_t
hs_policy_rule_count(const struct hs_policy *p)
{
	return p ? p->n_rules : 0;
}
