/* SPDX-License-Identifier: MIT */
/*
 * hsconf-get.c - reading the merged configuration: typed getters, origins,
 * locks, listings and checking a backend's section against its plugin.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "core/config/hsconf-int.h"

/* The entry of key when it has a value. */
static const struct hs_conf_entry *
get(const struct hs_conf *c, const char *key)
{
	const struct hs_conf_entry *e = hs_conf_find(c, key);

	return e && e->v.type != HS_VT_UNSET ? e : NULL;
}

int
hs_conf_string(const struct hs_conf *c, const char *key, const char **out)
{
	const struct hs_conf_entry *e = get(c, key);

	if (!e)
		return 1;
	if (e->v.type != HS_CONF_STRING && e->v.type != HS_VT_TEXT)
		return -1;
	*out = e->v.s;
	return 0;
}

int
hs_conf_int(const struct hs_conf *c, const char *key, int64_t *out)
{
	const struct hs_conf_entry *e = get(c, key);

	if (!e)
		return 1;
	if (e->v.type == HS_CONF_INT)
		return *out = e->v.i, 0;
	if (e->v.type == HS_VT_TEXT)
		return hs_conf_parse_int(e->v.s, out);
	return -1;
}

int
hs_conf_bool(const struct hs_conf *c, const char *key, int *out)
{
	const struct hs_conf_entry *e = get(c, key);

	if (!e)
		return 1;
	if (e->v.type == HS_CONF_BOOL)
		return *out = (int)e->v.i, 0;
	if (e->v.type == HS_VT_TEXT)
		return hs_conf_parse_bool(e->v.s, out);
	return -1;
}

int
hs_conf_strings(const struct hs_conf *c, const char *key, const char *const **out, size_t *n)
{
	const struct hs_conf_entry *e = get(c, key);

	if (!e)
		return 1;
	if (e->v.type != HS_CONF_STRINGS)
		return -1;
	*out = (const char *const *)e->v.list;
	*n = e->v.n;
	return 0;
}

int
hs_conf_admin_has(const struct hs_conf *c, const char *key, const char *item)
{
	const struct hs_conf_entry *e = hs_conf_find(c, key);

	for (size_t k = 0; e && e->admin.type == HS_CONF_STRINGS && k < e->admin.n; k++)
		if (strcmp(e->admin.list[k], item) == 0)
			return 1;
	return 0;
}

int
hs_conf_check_section(struct hs_conf *c, const char *section,
                      const struct hs_config_key *keys)
{
	size_t len = strlen(section);
	int unknown = 0;

	for (size_t k = 0; k < c->n; k++) {
		struct hs_conf_entry *e = &c->e[k];
		const struct hs_config_key *d = NULL;
		const char *name = e->key + len + 1, *how;

		if (strncmp(e->key, section, len) != 0 || e->key[len] != '.' ||
		    e->v.type == HS_VT_UNSET || hs_conf_schema_find(e->key))
			continue;
		for (const struct hs_config_key *p = keys; p && p->name; p++)
			if (strcmp(p->name, name) == 0)
				d = p;
		/* Files read "in FILE:LINE"; HS_* and the command line read "from ...". */
		how = strcmp(e->origin, "command line") == 0 || strncmp(e->origin, "HS_", 3) == 0 ?
		      "from" : "in";
		if (!d) {
			unknown++;
			if (!e->warned)
				hs_conf_warnf(c, "unknown key '%s' %s %s", e->key, how, e->origin);
			e->warned = 1;
			continue;
		}
		if (e->v.type == HS_VT_TEXT && d->type != HS_CONF_STRING) {
			struct hs_conf_value v;
			char why[256];
			if (hs_conf_parse_text(d->type, e->v.s, &v, why, sizeof(why)) == 0) {
				hs_conf_value_clear(&e->v);
				e->v = v;
			} else if (!e->warned) {
				hs_conf_warnf(c, "invalid value '%s' for '%s' from %s: %s", e->v.s,
				              e->key, e->origin, why);
				e->warned = 1;
			}
		} else if (e->v.type != d->type && e->v.type != HS_VT_TEXT && !e->warned) {
			hs_conf_warnf(c, "'%s' %s %s has the wrong type for backend '%s'", e->key,
			              how, e->origin, section);
			e->warned = 1;
		}
	}
	return unknown;
}

const char *
hs_conf_origin(const struct hs_conf *c, const char *key)
{
	const struct hs_conf_entry *e = get(c, key);

	return e ? e->origin : NULL;
}

int
hs_conf_locked(const struct hs_conf *c, const char *key)
{
	const struct hs_conf_entry *e = hs_conf_find(c, key);

	return e && e->locked;
}

const char *
hs_conf_key_at(const struct hs_conf *c, size_t i)
{
	for (size_t k = 0; k < c->n; k++)
		if (c->e[k].v.type != HS_VT_UNSET && i-- == 0)
			return c->e[k].key;
	return NULL;
}

int
hs_conf_format(const struct hs_conf *c, const char *key, char *buf, size_t len)
{
	const struct hs_conf_entry *e = get(c, key);

	if (!e)
		return 1;
	hs_conf_value_format(&e->v, buf, len);
	return 0;
}
