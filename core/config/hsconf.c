/* SPDX-License-Identifier: MIT */
/*
 * hsconf.c - the merged configuration: defaults, layers, locked ceilings,
 * HS_* variables, the command line and the getters.  Files are read by
 * core/config/hsconf-file.c.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config/hsconf-int.h"

extern char **environ;

/* HS_* variables.  There is no generic HS_SECTION_KEY mapping: names such
 * as HS_DOCKER_HOST_PATH would be ambiguous, and HS_CONFIG or HS_SYSCONFDIR
 * would collide; a backend key gets a variable by being listed here. */
static const struct {
	const char *var, *key;
	int prepend; /* a colon-separated list put before the configured one */
} env_map[] = {
	{ "HS_BACKEND", "backend", 0 },
	{ "HS_APPROVAL", "approval", 0 },
	{ "HS_TIMEOUT", "timeout", 0 },
	{ "HS_SESSION_TTL", "session_ttl", 0 },
	{ "HS_WORKSPACE", "workspace", 0 },
	{ "HS_PLUGIN_DIR", "plugin_dirs", 1 },
	{ "HS_OUTPUT_LIMIT", "output_limit", 0 },
	{ "HS_OUTPUT_KEEP", "output_keep", 0 },
	{ "HS_NONINTERACTIVE", "noninteractive", 0 },
	{ "HS_AUDIT_LOG", "audit_log", 0 },
	{ "HS_RUNNER", "runner_path", 0 },
	{ "HS_MODAL_MODE", "modal.mode", 0 },
};

static void
default_warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "hs: warning: %s\n", msg);
}

void
hs_conf_warnf(struct hs_conf *c, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->warn(c->warn_ctx, msg);
}

void
hs_conf_value_clear(struct hs_conf_value *v)
{
	free(v->s);
	if (v->list)
		for (size_t i = 0; i < v->n; i++)
			free(v->list[i]);
	free(v->list);
	memset(v, 0, sizeof(*v));
	v->type = HS_VT_UNSET;
}

int
hs_conf_value_list(struct hs_conf_value *v, char **list, size_t n)
{
	memset(v, 0, sizeof(*v));
	v->type = HS_CONF_STRINGS;
	v->list = list;
	v->n = n;
	return 0;
}

int
hs_conf_value_copy(struct hs_conf_value *dst, const struct hs_conf_value *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->type = src->type;
	dst->i = src->i;
	if (src->s && !(dst->s = strdup(src->s)))
		goto fail;
	if (src->type == HS_CONF_STRINGS) {
		dst->list = calloc(src->n + 1, sizeof(*dst->list));
		if (!dst->list)
			goto fail;
		for (size_t k = 0; k < src->n; k++) {
			if (!(dst->list[k] = strdup(src->list[k])))
				goto fail;
			dst->n = k + 1;
		}
	}
	return 0;
fail:
	hs_conf_value_clear(dst);
	return -1;
}

/* Text for messages and listings: strings quoted, lists libconfig-style. */
void
hs_conf_value_format(const struct hs_conf_value *v, char *buf, size_t len)
{
	size_t off = 0;

	switch (v->type) {
	case HS_CONF_STRING:
	case HS_VT_TEXT:
		snprintf(buf, len, "\"%s\"", v->s);
		return;
	case HS_CONF_INT:
		snprintf(buf, len, "%lld", (long long)v->i);
		return;
	case HS_CONF_BOOL:
		snprintf(buf, len, "%s", v->i ? "true" : "false");
		return;
	case HS_CONF_STRINGS:
		off = (size_t)snprintf(buf, len, "[");
		for (size_t k = 0; k < v->n && off < len; k++)
			off += (size_t)snprintf(buf + off, len - off, "%s\"%s\"", k ? ", " : " ",
			                        v->list[k]);
		if (off < len)
			snprintf(buf + off, len - off, "%s]", v->n ? " " : "");
		return;
	default:
		snprintf(buf, len, "unset");
	}
}

void
hs_conf_src_describe(const struct hs_conf_src *src, char *buf, size_t len)
{
	if (src->file)
		snprintf(buf, len, "'%s': line %d", src->file, src->line);
	else
		snprintf(buf, len, "%s", src->name);
}

static char *
src_origin(const struct hs_conf_src *src)
{
	char buf[4200];

	if (src->file)
		snprintf(buf, sizeof(buf), "%s:%d", src->file, src->line);
	else
		snprintf(buf, sizeof(buf), "%s", src->name);
	return strdup(buf);
}

struct hs_conf_entry *
hs_conf_find(const struct hs_conf *c, const char *key)
{
	for (size_t k = 0; k < c->n; k++)
		if (strcmp(c->e[k].key, key) == 0)
			return &c->e[k];
	return NULL;
}

static struct hs_conf_entry *
find_or_add(struct hs_conf *c, const char *key)
{
	struct hs_conf_entry *e = hs_conf_find(c, key);

	if (e)
		return e;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		struct hs_conf_entry *ne = realloc(c->e, cap * sizeof(*ne));
		if (!ne)
			return NULL;
		c->e = ne;
		c->cap = cap;
	}
	e = &c->e[c->n];
	memset(e, 0, sizeof(*e));
	e->v.type = HS_VT_UNSET;
	e->ceiling.type = HS_VT_UNSET;
	e->admin.type = HS_VT_UNSET;
	if (!(e->key = strdup(key)))
		return NULL;
	c->n++;
	return e;
}

static int
in_list(const struct hs_conf_value *v, const char *s)
{
	for (size_t k = 0; v->type == HS_CONF_STRINGS && k < v->n; k++)
		if (strcmp(v->list[k], s) == 0)
			return 1;
	return 0;
}

static int
enum_index(const char *const *enums, const char *s)
{
	for (int k = 0; enums[k]; k++)
		if (strcmp(enums[k], s) == 0)
			return k;
	return -1;
}

static int
values_equal(const struct hs_conf_value *a, const struct hs_conf_value *b)
{
	char x[4096], y[4096];

	if (a->type == HS_VT_UNSET || b->type == HS_VT_UNSET)
		return a->type == b->type;
	/* Text against a string: the words themselves (formatting would quote one). */
	if ((a->type == HS_VT_TEXT || a->type == HS_CONF_STRING) &&
	    (b->type == HS_VT_TEXT || b->type == HS_CONF_STRING))
		return strcmp(a->s, b->s) == 0;
	hs_conf_value_format(a, x, sizeof(x));
	hs_conf_value_format(b, y, sizeof(y));
	return a->type == b->type ? strcmp(x, y) == 0 :
	       /* Text from HS_* or the command line against a typed file value. */
	       (a->type == HS_VT_TEXT || b->type == HS_VT_TEXT) &&
	       strcmp(a->type == HS_VT_TEXT ? a->s : x, b->type == HS_VT_TEXT ? b->s : y) == 0;
}

/* May v replace a locked key whose admin value is ceil?  1 yes, 0 it loosens. */
int
hs_conf_within_ceiling(const struct hs_conf_schema *sc, const struct hs_conf_value *ceil,
               const struct hs_conf_value *v)
{
	if (!sc || sc->order == HS_ORDER_FIXED || ceil->type == HS_VT_UNSET)
		return values_equal(ceil, v);
	switch (sc->order) {
	case HS_ORDER_ENUM:
		return enum_index(sc->enums, v->s) <= enum_index(sc->enums, ceil->s);
	case HS_ORDER_LESS:
		return v->i <= ceil->i;
	case HS_ORDER_LESS_ZERO_MAX:
		return ceil->i == 0 || (v->i != 0 && v->i <= ceil->i);
	case HS_ORDER_BOOL:
		return v->i == ceil->i || v->i == sc->strict_bool;
	case HS_ORDER_SUBSET:
		for (size_t k = 0; k < v->n; k++)
			if (!in_list(ceil, v->list[k]))
				return 0;
		return 1;
	case HS_ORDER_SUPERSET:
		for (size_t k = 0; k < ceil->n; k++)
			if (!in_list(v, ceil->list[k]))
				return 0;
		return 1;
	default:
		return 0;
	}
}

static int
env_name_ok(const char *s)
{
	if (!*s || isdigit((unsigned char)*s))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

/* The schema's checks beyond the type; -1 with "'key' must ..." in err. */
int
hs_conf_check_value(const struct hs_conf_schema *sc, const struct hs_conf_value *v, char *err,
             size_t errlen)
{
	if (v->type != sc->type) {
		static const char *const names[] = { "a string", "an integer", "a boolean",
		                                     "a list of strings" };
		snprintf(err, errlen, "'%s' must be %s", sc->name, names[sc->type]);
		return -1;
	}
	if (sc->enums && enum_index(sc->enums, v->s) < 0) {
		char all[256] = "";
		for (int k = 0; sc->enums[k]; k++)
			snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s",
			         k ? ", " : "", sc->enums[k]);
		snprintf(err, errlen, "'%s' must be one of %s (got '%s')", sc->name, all, v->s);
		return -1;
	}
	if (sc->type == HS_CONF_INT && (v->i < 0 || (v->i == 0 && (sc->checks & HS_CHECK_POSITIVE)))) {
		snprintf(err, errlen, "'%s' must be %s (got %lld)", sc->name,
		         (sc->checks & HS_CHECK_POSITIVE) ? "positive" : "zero or positive",
		         (long long)v->i);
		return -1;
	}
	if ((sc->checks & HS_CHECK_NONEMPTY) && v->type == HS_CONF_STRING && !*v->s) {
		snprintf(err, errlen, "'%s' must not be empty", sc->name);
		return -1;
	}
	if (sc->checks & HS_CHECK_ABSPATH) {
		if (v->type == HS_CONF_STRING && v->s[0] != '/') {
			snprintf(err, errlen, "'%s' must be an absolute path (got '%s')", sc->name, v->s);
			return -1;
		}
		for (size_t k = 0; v->type == HS_CONF_STRINGS && k < v->n; k++)
			if (v->list[k][0] != '/') {
				snprintf(err, errlen, "'%s' must hold absolute paths (got '%s')",
				         sc->name, v->list[k]);
				return -1;
			}
	}
	for (size_t k = 0; (sc->checks & HS_CHECK_ENVNAME) && k < v->n; k++)
		if (!env_name_ok(v->list[k])) {
			snprintf(err, errlen, "'%s' must hold variable names (got '%s')", sc->name,
			         v->list[k]);
			return -1;
		}
	return 0;
}

int
hs_conf_apply(struct hs_conf *c, const char *key, struct hs_conf_value *v,
              const struct hs_conf_src *src, char *err, size_t errlen)
{
	const struct hs_conf_schema *sc = hs_conf_schema_of(c, key);
	struct hs_conf_entry *e;
	char where[4200], why[1024];
	int rc = -1;

	hs_conf_src_describe(src, where, sizeof(where));
	if (sc && hs_conf_check_value(sc, v, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s", where, why);
		goto out;
	}
	if (!(e = find_or_add(c, key)))
		goto nomem;
	if (e->locked && !hs_conf_within_ceiling(sc, &e->ceiling, v)) {
		char have[512], want[512];
		hs_conf_value_format(&e->ceiling, have, sizeof(have));
		hs_conf_value_format(v, want, sizeof(want));
		snprintf(where, sizeof(where), "%s", src->name ? src->name : "");
		if (src->file)
			snprintf(where, sizeof(where), "%s:%d", src->file, src->line);
		hs_conf_warnf(c, "'%s' is locked to %s by %s; ignoring %s from %s", key, have,
		              e->ceiling_origin, want, where);
		rc = 0;
		struct hs_conf_pending *np;
		if (!sc && (np = realloc(e->pend, (e->n_pend + 1) * sizeof(*np)))) {
			/* No rule yet: refused as fixed; its plugin's rule may admit it later. */
			e->pend = np;
			if ((np[e->n_pend].origin = src_origin(src))) {
				np[e->n_pend++].v = *v;
				memset(v, 0, sizeof(*v));
				v->type = HS_VT_UNSET;
			}
		}
		goto out;
	}
	hs_conf_pending_clear(e);
	free(e->origin);
	if (!(e->origin = src_origin(src)))
		goto nomem;
	hs_conf_value_clear(&e->v);
	e->v = *v;
	memset(v, 0, sizeof(*v));
	v->type = HS_VT_UNSET;
	e->warned = 0;
	return 0;
nomem:
	snprintf(err, errlen, "%s: out of memory", where);
out:
	hs_conf_value_clear(v);
	return rc;
}

int
hs_conf_add_lock(struct hs_conf *c, const char *name, const struct hs_conf_src *src,
                 char *err, size_t errlen)
{
	struct hs_conf_entry *e = find_or_add(c, "locked");
	char **nl;

	if (!e)
		goto nomem;
	free(e->origin);
	if (!(e->origin = src_origin(src)))
		goto nomem;
	if (in_list(&e->v, name))
		return 0;
	nl = realloc(e->v.list, (e->v.n + 2) * sizeof(*nl));
	if (!nl)
		goto nomem;
	e->v.list = nl;
	if (!(nl[e->v.n] = strdup(name)))
		goto nomem;
	nl[++e->v.n] = NULL;
	return 0;
nomem:
	snprintf(err, errlen, "cannot lock '%s': out of memory", name);
	return -1;
}

/* After the admin layers: each locked key keeps its value as its ceiling. */
static int
seal_locks(struct hs_conf *c, char *err, size_t errlen)
{
	const struct hs_conf_entry *lk = hs_conf_find(c, "locked");
	size_t nlocks = lk ? lk->v.n : 0;

	/* What the admin layers said of every key (trusted policy_dirs, say). */
	for (size_t k = 0; k < c->n; k++)
		if (hs_conf_value_copy(&c->e[k].admin, &c->e[k].v) < 0) {
			snprintf(err, errlen, "cannot load the configuration: out of memory");
			return -1;
		}
	for (size_t k = 0; k < nlocks; k++) {
		/* find_or_add may move the array: look "locked" up again each time. */
		const char *name = hs_conf_find(c, "locked")->v.list[k];
		struct hs_conf_entry *e = find_or_add(c, name);

		if (!e || hs_conf_value_copy(&e->ceiling, &e->v) < 0 ||
		    !(e->ceiling_origin = strdup(e->origin ? e->origin : "default"))) {
			snprintf(err, errlen, "cannot lock '%s': out of memory", name);
			return -1;
		}
		e->locked = 1;
	}
	return 0;
}

int
hs_conf_parse_bool(const char *s, int *b)
{
	static const char *const yes[] = { "true", "yes", "on", "1", NULL };
	static const char *const no[] = { "false", "no", "off", "0", NULL };

	for (int k = 0; yes[k]; k++)
		if (strcasecmp(s, yes[k]) == 0)
			return *b = 1, 0;
	for (int k = 0; no[k]; k++)
		if (strcasecmp(s, no[k]) == 0)
			return *b = 0, 0;
	return -1;
}

int
hs_conf_parse_int(const char *s, int64_t *out)
{
	char *end;
	long long n;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = n;
	return 0;
}

/* Split a colon-separated list, dropping empty items; 0 or -1 (no memory). */
static int
split_list(const char *s, struct hs_conf_value *v)
{
	size_t n = 0, cap = 1;
	char **list;

	for (const char *p = s; *p; p++)
		cap += *p == ':';
	if (!(list = calloc(cap + 1, sizeof(*list))))
		return -1;
	for (const char *p = s; *p;) {
		size_t len = strcspn(p, ":");
		if (len && !(list[n++] = strndup(p, len))) {
			for (size_t k = 0; k + 1 < n; k++)
				free(list[k]);
			free(list);
			return -1;
		}
		p += len + (p[len] == ':');
	}
	return hs_conf_value_list(v, list, n);
}

/* Text (HS_*, command line) to a value of type; -1 with "expected ..." in err. */
int
hs_conf_parse_text(int type, const char *text, struct hs_conf_value *v, char *err, size_t errlen)
{
	int b;

	memset(v, 0, sizeof(*v));
	v->type = type;
	switch (type) {
	case HS_CONF_INT:
		if (hs_conf_parse_int(text, &v->i) == 0)
			return 0;
		snprintf(err, errlen, "expected a non-negative integer");
		return -1;
	case HS_CONF_BOOL:
		if (hs_conf_parse_bool(text, &b) == 0)
			return v->i = b, 0;
		snprintf(err, errlen, "expected true or false");
		return -1;
	case HS_CONF_STRINGS:
		if (split_list(text, v) == 0)
			return 0;
		break;
	default:
		if ((v->s = strdup(text)))
			return 0;
	}
	v->type = HS_VT_UNSET;
	snprintf(err, errlen, "out of memory");
	return -1;
}

static const char *
env_get(const struct hs_conf *c, const char *name)
{
	size_t n = strlen(name);

	for (char *const *p = c->env; p && *p; p++)
		if (strncmp(*p, name, n) == 0 && (*p)[n] == '=')
			return *p + n + 1;
	return NULL;
}

/* One setting in text form, from an HS_* variable or the command line. */
static int
set_text(struct hs_conf *c, const char *key, const char *text, int prepend,
         const struct hs_conf_src *src, char *err, size_t errlen)
{
	const struct hs_conf_schema *sc = hs_conf_schema_of(c, key);
	struct hs_conf_value v;
	char why[256];

	if (!sc) {
		/* Section keys the core does not know stay text until a plugin says their type. */
		memset(&v, 0, sizeof(v));
		v.type = HS_VT_TEXT;
		if (!(v.s = strdup(text))) {
			snprintf(err, errlen, "%s: out of memory", src->name);
			return -1;
		}
		return hs_conf_apply(c, key, &v, src, err, errlen);
	}
	if (hs_conf_parse_text(sc->type, text, &v, why, sizeof(why)) < 0) {
		if (src->file || strcmp(src->name, "command line") != 0)
			snprintf(err, errlen, "invalid %s='%s': %s", src->name, text, why);
		else
			snprintf(err, errlen, "invalid value '%s' for '%s': %s", text, key, why);
		return -1;
	}
	if (prepend) {
		const struct hs_conf_entry *e = hs_conf_find(c, key);
		for (size_t k = 0; e && e->v.type == HS_CONF_STRINGS && k < e->v.n; k++) {
			char **nl = realloc(v.list, (v.n + 2) * sizeof(*nl));
			if (!nl || !(nl[v.n] = strdup(e->v.list[k]))) {
				if (nl)
					v.list = nl;
				hs_conf_value_clear(&v);
				snprintf(err, errlen, "%s: out of memory", src->name);
				return -1;
			}
			v.list = nl;
			nl[++v.n] = NULL;
		}
	}
	return hs_conf_apply(c, key, &v, src, err, errlen);
}

static int
read_env(struct hs_conf *c, char *err, size_t errlen)
{
	for (size_t k = 0; k < sizeof(env_map) / sizeof(env_map[0]); k++) {
		struct hs_conf_src src = { .name = env_map[k].var };
		const char *val = env_get(c, env_map[k].var);

		/* An empty variable is treated as unset, as shells make unsetting awkward. */
		if (!val || !*val)
			continue;
		if (set_text(c, env_map[k].key, val, env_map[k].prepend, &src, err, errlen) < 0)
			return -1;
	}
	return 0;
}

static int
set_default(struct hs_conf *c, const char *key, int type, const char *s, int64_t i)
{
	struct hs_conf_src src = { .name = "default" };
	struct hs_conf_value v = { .type = type, .i = i };
	char err[256];

	if (s && !(v.s = strdup(s)))
		return -1;
	if (type == HS_CONF_STRINGS && !(v.list = calloc(1, sizeof(*v.list))))
		return -1;
	return hs_conf_apply(c, key, &v, &src, err, sizeof(err));
}

static int
load_defaults(struct hs_conf *c)
{
	const char *state = env_get(c, "XDG_STATE_HOME"), *home = env_get(c, "HOME");
	char path[4096];

	for (const struct hs_conf_schema *sc = hs_conf_schema_table; sc->name; sc++) {
		if (!sc->def_string && !sc->has_default)
			continue;
		if (set_default(c, sc->name, sc->type, sc->def_string, sc->def_int) < 0)
			return -1;
	}
	/* The audit log default depends on the environment, so it is computed here. */
	if (state && state[0] == '/')
		snprintf(path, sizeof(path), "%s/hs/audit.log", state);
	else if (home && home[0] == '/')
		snprintf(path, sizeof(path), "%s/.local/state/hs/audit.log", home);
	else
		return 0;
	return set_default(c, "audit_log", HS_CONF_STRING, path, 0);
}

int
hs_conf_load(struct hs_conf **out, const struct hs_conf_opts *o, char *err, size_t errlen)
{
	static const struct hs_conf_opts none;
	struct hs_conf *c = calloc(1, sizeof(*c));
	const char *home, *extra;
	char path[4096];

	*out = NULL;
	if (!o)
		o = &none;
	if (!c) {
		snprintf(err, errlen, "cannot load the configuration: out of memory");
		return -1;
	}
	c->env = o->environ_ ? o->environ_ : environ;
	c->warn = o->warn ? o->warn : default_warn;
	c->warn_ctx = o->warn_ctx;
	if (load_defaults(c) < 0) {
		snprintf(err, errlen, "cannot load the configuration: out of memory");
		goto fail;
	}
	if (o->sysconfdir) {
		snprintf(path, sizeof(path), "%s/hs.conf", o->sysconfdir);
		if (hs_conf_read_file(c, path, 1, 0, err, errlen) < 0)
			goto fail;
		snprintf(path, sizeof(path), "%s/conf.d", o->sysconfdir);
		if (hs_conf_read_dir(c, path, err, errlen) < 0)
			goto fail;
	}
	if (seal_locks(c, err, errlen) < 0)
		goto fail;

	home = o->user_config_home ? o->user_config_home : env_get(c, "XDG_CONFIG_HOME");
	if (home && home[0] == '/')
		snprintf(path, sizeof(path), "%s/hs/hs.conf", home);
	else if ((home = env_get(c, "HOME")) && home[0] == '/')
		snprintf(path, sizeof(path), "%s/.config/hs/hs.conf", home);
	else
		path[0] = '\0';
	if (path[0] && hs_conf_read_file(c, path, 0, 0, err, errlen) < 0)
		goto fail;

	if (read_env(c, err, errlen) < 0)
		goto fail;

	/* Asked for by name, so it must exist; a user layer all the same. */
	extra = o->extra_file ? o->extra_file : env_get(c, "HS_CONFIG");
	if (extra && *extra && hs_conf_read_file(c, extra, 0, 1, err, errlen) < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	hs_conf_free(c);
	return -1;
}

void
hs_conf_free(struct hs_conf *c)
{
	if (!c)
		return;
	for (size_t k = 0; k < c->n; k++) {
		free(c->e[k].key);
		free(c->e[k].origin);
		free(c->e[k].ceiling_origin);
		hs_conf_value_clear(&c->e[k].v);
		hs_conf_value_clear(&c->e[k].ceiling);
		hs_conf_value_clear(&c->e[k].admin);
		hs_conf_pending_clear(&c->e[k]);
	}
	hs_conf_decls_free(c);
	free(c->e);
	free(c);
}

int
hs_conf_allows(const struct hs_conf *c, const char *key, const char *text, char *err, size_t errlen)
{
	const struct hs_conf_entry *e = hs_conf_find(c, key);
	const struct hs_conf_schema *sc = hs_conf_schema_of(c, key);
	struct hs_conf_value v = { .type = HS_VT_TEXT, .s = (char *)text };
	char have[512], why[256];
	int ok;

	if (!text || !e || !e->locked)
		return 1;
	/* An ordered number, flag or list is compared as such, not as text. */
	if (sc && sc->type != HS_CONF_STRING) {
		ok = hs_conf_parse_text(sc->type, text, &v, why, sizeof(why)) == 0 &&
		     hs_conf_within_ceiling(sc, &e->ceiling, &v);
		hs_conf_value_clear(&v);
	} else {
		ok = hs_conf_within_ceiling(sc, &e->ceiling, &v);
	}
	if (ok)
		return 1;
	hs_conf_value_format(&e->ceiling, have, sizeof(have));
	snprintf(err, errlen, "'%s' is locked to %s by %s; '%s' is not allowed (ask the admin)", key,
	         have, e->ceiling_origin, text);
	return 0;
}

int
hs_conf_set_cli(struct hs_conf *c, const char *key, const char *value, char *err,
                size_t errlen)
{
	struct hs_conf_src src = { .name = "command line" };

	if (!hs_conf_schema_of(c, key) && (!strchr(key, '.') || hs_conf_schema_known_section(
	        strndupa(key, strcspn(key, "."))) || hs_conf_declared(c, strndupa(key, strcspn(key, "."))))) {
		snprintf(err, errlen, "unknown setting '%s'", key);
		return -1;
	}
	if (strcmp(key, "locked") == 0) {
		snprintf(err, errlen, "'locked' can be set only in admin files");
		return -1;
	}
	return set_text(c, key, value, 0, &src, err, errlen);
}
