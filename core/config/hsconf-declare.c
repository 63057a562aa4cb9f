/* SPDX-License-Identifier: MIT */
/*
 * hsconf-declare.c - keys a plugin declares (ABI 1.1 config_rules): their
 * type, checks and tightening order join the core's schema, so an admin's
 * lock on a plugin key is a ceiling with the same meaning as on the core's.
 *
 * The configuration is read before any plugin is loaded, so until its
 * plugin declares a key, a lock on it holds as "fixed" (any other value is
 * refused, the strictest reading).  The declaration then checks the value
 * and reconsiders the last refused one under the declared order: a user may
 * tighten a locked plugin key, never loosen it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config/hsconf-int.h"

/* The core's enums are the ABI's: a plugin rule is used as it is. */
_Static_assert((int)HS_ORDER_FIXED == (int)HS_CORDER_FIXED && (int)HS_ORDER_ENUM == (int)HS_CORDER_ENUM &&
               (int)HS_ORDER_LESS == (int)HS_CORDER_LESS &&
               (int)HS_ORDER_LESS_ZERO_MAX == (int)HS_CORDER_LESS_ZERO_MAX &&
               (int)HS_ORDER_BOOL == (int)HS_CORDER_BOOL && (int)HS_ORDER_SUBSET == (int)HS_CORDER_SUBSET &&
               (int)HS_ORDER_SUPERSET == (int)HS_CORDER_SUPERSET, "hs_conf_order differs from the ABI");
_Static_assert(HS_CHECK_ABSPATH == HS_CCHECK_ABSPATH && HS_CHECK_ENVNAME == HS_CCHECK_ENVNAME &&
               HS_CHECK_POSITIVE == HS_CCHECK_POSITIVE && HS_CHECK_NONEMPTY == HS_CCHECK_NONEMPTY,
               "HS_CHECK_* differ from the ABI");

static struct hs_conf_decl *
first_decl(const struct hs_conf *c)
{
	return __atomic_load_n(&c->decls, __ATOMIC_ACQUIRE);
}

const struct hs_conf_schema *
hs_conf_schema_of(const struct hs_conf *c, const char *key)
{
	const struct hs_conf_schema *sc = hs_conf_schema_find(key);

	for (const struct hs_conf_decl *d = first_decl(c); !sc && d; d = d->next)
		for (size_t k = 0; k < d->n; k++)
			if (strcmp(d->keys[k].name, key) == 0)
				return &d->keys[k];
	return sc;
}

static struct hs_conf_decl *
decl_of(const struct hs_conf *c, const char *section)
{
	for (struct hs_conf_decl *d = first_decl(c); d; d = d->next)
		if (strcmp(d->section, section) == 0)
			return d;
	return NULL;
}

int
hs_conf_declared(const struct hs_conf *c, const char *section)
{
	return decl_of(c, section) != NULL;
}

static const struct hs_config_key *
key_named(const struct hs_config_key *keys, const char *name)
{
	for (const struct hs_config_key *k = keys; k && k->name; k++)
		if (strcmp(k->name, name) == 0)
			return k;
	return NULL;
}

int
hs_conf_rules_check(const char *section, const struct hs_config_key *keys,
                    const struct hs_config_rule *rules, char *err, size_t errlen)
{
	static const char *const types[] = { "string", "integer", "boolean", "list" };

	for (const struct hs_config_key *k = keys; k && k->name; k++)
		if (k->type < HS_CONF_STRING || k->type > HS_CONF_STRINGS) {
			snprintf(err, errlen, "backend '%s' declares config key '%s' of unknown type %d",
			         section, k->name, (int)k->type);
			return -1;
		}
	for (const struct hs_config_rule *r = rules; r && r->name; r++) {
		const struct hs_config_key *k = key_named(keys, r->name);
		int t = k ? k->type : -1, o = r->order;
		int fits = o == HS_CORDER_FIXED ||
		           (o == HS_CORDER_ENUM && t == HS_CONF_STRING && r->values && r->values[0]) ||
		           ((o == HS_CORDER_LESS || o == HS_CORDER_LESS_ZERO_MAX) && t == HS_CONF_INT) ||
		           (o == HS_CORDER_BOOL && t == HS_CONF_BOOL && (r->strict_bool & ~1) == 0) ||
		           ((o == HS_CORDER_SUBSET || o == HS_CORDER_SUPERSET) && t == HS_CONF_STRINGS);
		if (!k) {
			snprintf(err, errlen, "backend '%s' has a config rule for '%s', which is not one of "
			         "its config_keys", section, r->name);
			return -1;
		}
		if (!fits || (r->checks & ~(uint32_t)0xf)) {
			snprintf(err, errlen, "backend '%s' declares config key '%s' (a %s) with order %d "
			         "or checks 0x%x its type cannot have (see hs-backend(7))", section, r->name,
			         types[t], o, r->checks);
			return -1;
		}
	}
	return 0;
}

/* Give a text value (HS_* or the command line) the declared type; -1 with a reason. */
static int
typed(const struct hs_conf_schema *sc, struct hs_conf_value *v, char *why, size_t len)
{
	struct hs_conf_value t;

	if (v->type != HS_VT_TEXT)
		return 0;
	if (sc->type == HS_CONF_STRING) {
		v->type = HS_CONF_STRING;
		return 0;
	}
	if (hs_conf_parse_text(sc->type, v->s, &t, why, len) < 0)
		return -1;
	hs_conf_value_clear(v);
	*v = t;
	return 0;
}

/* Check and type e's value under sc; then admit a refused tightening of a lock. */
static int
settle(struct hs_conf *c, struct hs_conf_entry *e, const struct hs_conf_schema *sc, char *err,
       size_t errlen)
{
	char why[1024];

	if (e->v.type != HS_VT_UNSET &&
	    (typed(sc, &e->v, why, sizeof(why)) < 0 || hs_conf_check_value(sc, &e->v, why, sizeof(why)) < 0)) {
		snprintf(err, errlen, "%s: %s", e->origin ? e->origin : "default", why);
		return -1;
	}
	if (!e->locked || !e->n_pend)
		return 0;
	/* The ceiling comes from admin files, typed already; text only from a default. */
	if (typed(sc, &e->ceiling, why, sizeof(why)) < 0)
		e->ceiling.type = HS_VT_UNSET;
	/* Replay the refused values in layer order: each one within the ceiling holds. */
	struct hs_conf_pending *took = NULL;
	for (size_t k = 0; k < e->n_pend; k++) {
		struct hs_conf_pending *p = &e->pend[k];
		if (typed(sc, &p->v, why, sizeof(why)) == 0 &&
		    hs_conf_check_value(sc, &p->v, why, sizeof(why)) == 0 &&
		    hs_conf_within_ceiling(sc, &e->ceiling, &p->v))
			took = p;
	}
	if (took) {
		hs_conf_value_clear(&e->v);
		e->v = took->v;
		memset(&took->v, 0, sizeof(took->v));
		took->v.type = HS_VT_UNSET;
		free(e->origin);
		e->origin = took->origin;
		took->origin = NULL;
		hs_conf_warnf(c, "'%s' is locked by %s; %s from %s is within it and now holds", e->key,
		              e->ceiling_origin, sc->type == HS_CONF_STRINGS ? "the list" : "the value",
		              e->origin);
	}
	hs_conf_pending_clear(e);
	return 0;
}

void
hs_conf_pending_clear(struct hs_conf_entry *e)
{
	for (size_t k = 0; k < e->n_pend; k++) {
		hs_conf_value_clear(&e->pend[k].v);
		free(e->pend[k].origin);
	}
	free(e->pend);
	e->pend = NULL;
	e->n_pend = 0;
}

static void
decl_free(struct hs_conf_decl *d)
{
	for (size_t k = 0; k < d->n; k++)
		free((char *)d->keys[k].name);
	free(d->section);
	free(d->error);
	free(d);
}

void
hs_conf_decls_free(struct hs_conf *c)
{
	for (struct hs_conf_decl *d = c->decls, *next; d; d = next) {
		next = d->next;
		decl_free(d);
	}
	c->decls = NULL;
}

int
hs_conf_declare(struct hs_conf *c, const char *section, const struct hs_config_key *keys,
                const struct hs_config_rule *rules, char *err, size_t errlen)
{
	struct hs_conf_decl *had = decl_of(c, section);
	size_t nk = 0;

	/* Once per section; a section that failed keeps failing. */
	if (had) {
		if (had->error)
			snprintf(err, errlen, "%s", had->error);
		return had->error ? -1 : 0;
	}
	if (hs_conf_rules_check(section, keys, rules, err, errlen) < 0)
		return -1;
	for (const struct hs_config_key *k = keys; k && k->name; k++)
		nk++;
	struct hs_conf_decl *d = calloc(1, sizeof(*d) + nk * sizeof(d->keys[0]));
	if (!d || !(d->section = strdup(section)))
		goto nomem;
	for (const struct hs_config_key *k = keys; k && k->name; k++) {
		char name[256];
		snprintf(name, sizeof(name), "%s.%s", section, k->name);
		/* The core's own keys keep the core's rule. */
		if (hs_conf_schema_find(name))
			continue;
		struct hs_conf_schema *sc = &d->keys[d->n];
		if (!(sc->name = strdup(name)))
			goto nomem;
		d->n++;
		sc->type = k->type;
		sc->order = HS_ORDER_FIXED;
		sc->doc = k->doc;
		for (const struct hs_config_rule *r = rules; r && r->name; r++)
			if (strcmp(r->name, k->name) == 0) {
				sc->order = r->order;
				sc->enums = r->values;
				sc->strict_bool = r->strict_bool;
				sc->checks = r->checks;
			}
	}
	d->next = c->decls;
	__atomic_store_n(&c->decls, d, __ATOMIC_RELEASE);
	for (size_t k = 0; k < d->n; k++) {
		struct hs_conf_entry *e = hs_conf_find(c, d->keys[k].name);
		if (e && settle(c, e, &d->keys[k], err, errlen) < 0) {
			d->error = strdup(err);
			return -1;
		}
	}
	return 0;
nomem:
	if (d)
		decl_free(d);
	snprintf(err, errlen, "cannot declare the keys of backend '%s': out of memory", section);
	return -1;
}
