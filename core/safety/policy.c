/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * policy.c - load rule files (libconfig) and verify their examples.
 *
 * A policy is three kinds of data: path sets (named lists of path
 * patterns), program declarations (how a program's argv reads and what it
 * writes) and rules.  Files are read in directory order, then by name; a
 * later path set of the same name extends the earlier one, a later
 * program declaration adds to the list (the last one for a name wins), a
 * later rule with the same id replaces the earlier rule, and
 * "disabled = true" removes it.  Files of a user layer (a policy_dirs entry
 * the admin did not configure) may only add: a rule or program declaration
 * of a name already loaded, or "disabled", is refused, so a user cannot
 * undo a shipped or admin rule.  See hs-policy(5).  The tables that
 * matching uses are built from the loaded policy in policy-index.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safety/internal.h"

struct load {
	struct hs_policy *p;
	const char *file;
	int user; /* a user layer: may only add rules and declarations */
	char *err;
	size_t errlen;
	/* Predicates naming a set are linked once every file is read. */
	struct pending {
		struct hs_pred *pred;
		const char *file;
		const char *rule;
	} *pend;
	size_t npend, cappend;
};

static int
fail(struct load *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->err, l->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static char *
pstrdup(struct hs_policy *p, const char *s)
{
	return hs_arena_strndup(&p->mem, s, strlen(s));
}

static struct hs_pathset *
find_set(struct hs_policy *p, const char *name)
{
	size_t k;

	for (k = 0; k < p->n_sets; k++)
		if (!strcmp(p->sets[k].name, name))
			return &p->sets[k];
	return NULL;
}

static int
set_add(struct hs_policy *p, const char *name, const char *pat)
{
	struct hs_pathset *s = find_set(p, name), *ns;
	const char **np;

	if (!s) {
		ns = hs_grow(p->sets, &p->cap_sets, p->n_sets, sizeof(*p->sets));
		if (!ns)
			return -1;
		p->sets = ns;
		s = &p->sets[p->n_sets++];
		memset(s, 0, sizeof(*s));
		s->name = pstrdup(p, name);
	}
	np = hs_grow(s->pats, &s->cap, s->n, sizeof(*s->pats));
	if (!np)
		return -1;
	s->pats = np;
	s->pats[s->n] = pstrdup(p, pat);
	if (!s->pats[s->n] || !s->name)
		return -1;
	s->n++;
	return 0;
}

/* A path handed in by the core: spelled with "~" when under home, like rule paths. */
static int
add_protected(struct hs_policy *p, const char *path)
{
	char buf[1100];
	size_t l = strlen(path);

	while (l > 1 && path[l - 1] == '/')
		l--;
	if (p->home && p->home_len > 1 && !strncmp(path, p->home, p->home_len) &&
	    (path[p->home_len] == '/' || !path[p->home_len]))
		snprintf(buf, sizeof(buf), "~%.*s", (int)(l - p->home_len), path + p->home_len);
	else
		snprintf(buf, sizeof(buf), "%.*s", (int)l, path);
	return set_add(p, "hs-self", buf);
}

/* A setting that is a string or a list/array of strings, as a strlist. */
static int
get_strlist(struct load *l, const config_setting_t *s, struct hs_strlist *out, const char *what)
{
	int n, i;
	const char *v;

	memset(out, 0, sizeof(*out));
	if (!s)
		return 0;
	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		out->v = hs_arena_alloc(&l->p->mem, sizeof(*out->v));
		if (!out->v)
			return fail(l, "out of memory");
		out->v[0] = pstrdup(l->p, config_setting_get_string(s));
		out->n = 1;
		if (!out->v[0] || hs_strlist_glob(&l->p->mem, out))
			return fail(l, "out of memory");
		return 0;
	}
	if (!config_setting_is_aggregate(s))
		return fail(l, "%s:%d: '%s' must be a string or a list of strings", l->file,
			    config_setting_source_line(s), what);
	n = config_setting_length(s);
	out->v = hs_arena_alloc(&l->p->mem, sizeof(*out->v) * (size_t)(n ? n : 1));
	if (!out->v)
		return fail(l, "out of memory");
	for (i = 0; i < n; i++) {
		v = config_setting_get_string(config_setting_get_elem(s, (unsigned)i));
		if (!v)
			return fail(l, "%s:%d: '%s' must hold strings only", l->file, config_setting_source_line(s), what);
		out->v[out->n++] = pstrdup(l->p, v);
		if (!out->v[out->n - 1])
			return fail(l, "out of memory");
	}
	if (hs_strlist_glob(&l->p->mem, out))
		return fail(l, "out of memory");
	return 0;
}

static int parse_pred(struct load *l, const char *src, struct hs_pred *pr, const char *rule);

static int
pend_set(struct load *l, struct hs_pred *pr, const char *rule)
{
	struct pending *np = hs_grow(l->pend, &l->cappend, l->npend, sizeof(*l->pend));

	if (!np)
		return fail(l, "out of memory");
	l->pend = np;
	l->pend[l->npend].pred = pr;
	l->pend[l->npend].file = l->file;
	l->pend[l->npend].rule = rule;
	l->npend++;
	return 0;
}

static int
parse_pred(struct load *l, const char *src, struct hs_pred *pr, const char *rule)
{
	static const struct {
		const char *prefix;
		int kind;
	} kinds[] = {
		{ "glob:", HS_P_GLOB }, { "iglob:", HS_P_IGLOB }, { "path:", HS_P_PATH }, { "under:", HS_P_UNDER },
		{ "has:", HS_P_HAS }, { "sql:", HS_P_SQL }, { "mount:", HS_P_MOUNT }, { "value:", HS_P_VALUE },
		{ "unknown:", HS_P_UNKNOWN },
	};
	size_t k, pl;
	const char *arg = src, *eq;

	memset(pr, 0, sizeof(*pr));
	pr->kind = HS_P_GLOB;
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		pl = strlen(kinds[k].prefix);
		if (!strncmp(src, kinds[k].prefix, pl)) {
			pr->kind = kinds[k].kind;
			arg = src + pl;
			break;
		}
	}
	switch (pr->kind) {
	case HS_P_SQL:
		if (strcmp(arg, "destructive"))
			return fail(l, "%s: rule '%s': unknown predicate '%s'", l->file, rule, src);
		break;
	case HS_P_MOUNT:
		pr->inner = hs_arena_zalloc(&l->p->mem, sizeof(*pr->inner));
		if (!pr->inner)
			return fail(l, "out of memory");
		return parse_pred(l, arg, pr->inner, rule);
	case HS_P_VALUE:
		eq = strchr(arg, '=');
		if (!eq || eq == arg)
			return fail(l, "%s: rule '%s': predicate '%s' needs KEY=PREDICATE", l->file, rule, src);
		pr->arg = hs_arena_strndup(&l->p->mem, arg, (size_t)(eq - arg));
		pr->arglen = (size_t)(eq - arg);
		pr->inner = hs_arena_zalloc(&l->p->mem, sizeof(*pr->inner));
		if (!pr->inner || !pr->arg)
			return fail(l, "out of memory");
		return parse_pred(l, eq + 1, pr->inner, rule);
	case HS_P_PATH:
	case HS_P_UNDER:
	case HS_P_UNKNOWN:
		pr->arg = pstrdup(l->p, arg);
		return pend_set(l, pr, rule);
	default:
		break;
	}
	pr->arg = pstrdup(l->p, arg);
	pr->arglen = strlen(arg);
	pr->litlen = hs_glob_litlen(arg);
	pr->literal = !arg[pr->litlen];
	return pr->arg ? 0 : fail(l, "out of memory");
}

static int
get_predlist(struct load *l, const config_setting_t *s, struct hs_predlist *out, const char *what, const char *rule)
{
	struct hs_strlist sl;
	size_t k;

	memset(out, 0, sizeof(*out));
	if (get_strlist(l, s, &sl, what))
		return -1;
	if (!sl.n)
		return 0;
	out->v = hs_arena_zalloc(&l->p->mem, sizeof(*out->v) * sl.n);
	if (!out->v)
		return fail(l, "out of memory");
	for (k = 0; k < sl.n; k++)
		if (parse_pred(l, sl.v[k], &out->v[k], rule))
			return -1;
	out->n = sl.n;
	return 0;
}

/* "r|R|recursive" or "pid=host" or "v|volume=mount:path:hostroot". */
static int
parse_flag(struct load *l, const char *src, struct hs_flagspec *f, const char *rule)
{
	const char *eq = strchr(src, '='), *end = eq ? eq : src + strlen(src), *a = src, *bar;

	memset(f, 0, sizeof(*f));
	while (a < end) {
		bar = memchr(a, '|', (size_t)(end - a));
		if (!bar)
			bar = end;
		if (bar == a || f->n >= 8)
			return fail(l, "%s: rule '%s': bad flag '%s'", l->file, rule, src);
		f->names[f->n++] = hs_arena_strndup(&l->p->mem, a, (size_t)(bar - a));
		a = bar + 1;
	}
	if (!f->n)
		return fail(l, "%s: rule '%s': bad flag '%s'", l->file, rule, src);
	if (eq) {
		f->value = hs_arena_zalloc(&l->p->mem, sizeof(*f->value));
		if (!f->value)
			return fail(l, "out of memory");
		return parse_pred(l, eq + 1, f->value, rule);
	}
	return 0;
}

static int
get_flaglist(struct load *l, const config_setting_t *s, struct hs_flaglist *out, const char *what, const char *rule)
{
	struct hs_strlist sl;
	size_t k;

	memset(out, 0, sizeof(*out));
	if (get_strlist(l, s, &sl, what))
		return -1;
	if (!sl.n)
		return 0;
	out->v = hs_arena_zalloc(&l->p->mem, sizeof(*out->v) * sl.n);
	if (!out->v)
		return fail(l, "out of memory");
	for (k = 0; k < sl.n; k++)
		if (parse_flag(l, sl.v[k], &out->v[k], rule))
			return -1;
	out->n = sl.n;
	return 0;
}

static int
load_pathsets(struct load *l, const config_setting_t *g)
{
	int i, j, n, m;
	const config_setting_t *s;
	const char *v;

	if (!config_setting_is_group(g))
		return fail(l, "%s:%d: 'pathsets' must be a group", l->file, config_setting_source_line(g));
	n = config_setting_length(g);
	for (i = 0; i < n; i++) {
		s = config_setting_get_elem(g, (unsigned)i);
		if (!config_setting_is_aggregate(s))
			return fail(l, "%s:%d: path set '%s' must be a list", l->file, config_setting_source_line(s),
				    config_setting_name(s));
		m = config_setting_length(s);
		for (j = 0; j < m; j++) {
			v = config_setting_get_string(config_setting_get_elem(s, (unsigned)j));
			if (!v)
				return fail(l, "%s:%d: path set '%s' must hold strings", l->file,
					    config_setting_source_line(s), config_setting_name(s));
			if (set_add(l->p, config_setting_name(s), v))
				return fail(l, "out of memory");
		}
	}
	return 0;
}

/* 1 when an earlier declaration names prog. */
static int
declared(const struct hs_policy *p, const char *prog)
{
	for (size_t k = 0; k < p->n_decls; k++)
		for (size_t j = 0; j < p->decls[k].names.n; j++)
			if (!strcmp(p->decls[k].names.v[j], prog))
				return 1;
	return 0;
}

static const char *const runs_names[] = { "", "command", "shell", "eval", "source", "find", "xargs", "watch",
	"su", "ssh", "parallel", "stdin", "options", "dashdash", "code-operand", NULL };
static const char *const tag_names[] = { "", "", "", "", "code", "split", "stop", "opaque", "argv", "int", "chdir", NULL };

/* One "options" entry: -x, -x:, -x::, --name: code KEY=PREFIX..., -x stop (see hs-policy(5)). */
static int
add_option(struct load *l, struct hs_progdecl *d, struct hs_longopt *lo, const char *spec, int legacy)
{
	struct hs_policy *p = l->p;
	const char *s = spec, *t;
	const char **when;
	size_t nl, nw = 0, k;
	int kind = legacy ? HS_OK_ARG : HS_OK_FLAG;

	if (s[0] != '-' || !s[1] || (s[1] == '-' && !s[2]))
		goto bad;
	s += s[1] == '-' ? 2 : 1;
	nl = strcspn(s, ": ");
	if (!nl || (spec[1] != '-' && nl != 1))
		goto bad;
	lo->name = hs_arena_strndup(&p->mem, s, nl);
	lo->len = nl;
	if (!lo->name)
		return fail(l, "out of memory");
	s += nl;
	if (s[0] == ':')
		kind = s[1] == ':' ? HS_OK_OPTARG : HS_OK_ARG;
	s += strspn(s, ":");
	s += strspn(s, " ");
	if (*s) {
		t = s;
		nl = strcspn(s, " ");
		for (k = 4; tag_names[k]; k++)
			if (strlen(tag_names[k]) == nl && !strncmp(tag_names[k], t, nl))
				kind = (int)k;
		if (kind < HS_OK_CODE)
			goto bad;
		s += nl;
		s += strspn(s, " ");
		if (*s) {
			/* KEY=PREFIX conditions of a code option. */
			when = hs_arena_alloc(&p->mem, sizeof(*when) * (strlen(s) / 2 + 2));
			if (!when)
				return fail(l, "out of memory");
			while (*s) {
				nl = strcspn(s, " ");
				if (!memchr(s, '=', nl))
					goto bad;
				if (!(when[nw++] = hs_arena_strndup(&p->mem, s, nl)))
					return fail(l, "out of memory");
				s += nl;
				s += strspn(s, " ");
			}
			when[nw] = NULL;
			lo->when = (const char *const *)when;
		}
	}
	lo->kind = kind;
	return 0;
bad:
	return fail(l, "%s: bad option '%s' in the grammar of '%s' (use -x, -x:, -x::, --name, --name: code ...)",
		    l->file, spec, d->names.v[0]);
}

/* arg_options (operands only), options (the full grammar), runs, operands, assignments, subcommand. */
static int
load_grammar(struct load *l, const config_setting_t *e, struct hs_progdecl *d)
{
	struct hs_strlist args, opts;
	const config_setting_t *s;
	struct hs_longopt *pool;
	const char *w;
	size_t k;
	int v;

	if (get_strlist(l, config_setting_get_member(e, "arg_options"), &args, "arg_options") ||
	    get_strlist(l, config_setting_get_member(e, "options"), &opts, "options"))
		return -1;
	d->complete = config_setting_get_member(e, "options") != NULL;
	if (config_setting_lookup_bool(e, "complete", &v) == CONFIG_TRUE)
		d->complete = v;
	/* Long options fill the pool from the front; short ones are only pointed at by sopt[]. */
	pool = hs_arena_zalloc(&l->p->mem, sizeof(*pool) * (args.n + opts.n + 1) * 2);
	if (!pool)
		return fail(l, "out of memory");
	d->longs = pool;
	for (k = 0; k < args.n + opts.n; k++) {
		const char *spec = k < args.n ? args.v[k] : opts.v[k - args.n];
		int is_short = spec[0] == '-' && spec[1] != '-';
		struct hs_longopt *lo = is_short ? &pool[args.n + opts.n + 1 + k] : &pool[d->nlong];

		size_t j;

		if (add_option(l, d, lo, spec, k < args.n))
			return -1;
		if (is_short) {
			if ((unsigned char)lo->name[0] < 128)
				d->sopt[(unsigned char)lo->name[0]] = lo;
			continue;
		}
		/* Named again (in "options" after "arg_options"): the later entry says what it is. */
		for (j = 0; j < d->nlong && strcmp(d->longs[j].name, lo->name); j++)
			;
		if (j < d->nlong)
			d->longs[j] = *lo;
		else
			d->nlong++;
	}
	s = config_setting_get_member(e, "runs");
	if (s) {
		w = config_setting_get_string(s);
		for (k = 1; w && runs_names[k] && strcmp(runs_names[k], w); k++)
			;
		if (!w || !runs_names[k])
			return fail(l, "%s:%d: unknown 'runs' value '%s'", l->file, config_setting_source_line(s), w ? w : "?");
		d->runs = (int)k;
	}
	if (config_setting_lookup_int(e, "operands", &v) == CONFIG_TRUE)
		d->operands = v;
	if (config_setting_lookup_bool(e, "assignments", &v) == CONFIG_TRUE)
		d->assigns = v;
	if (config_setting_lookup_bool(e, "single_dash_long", &v) == CONFIG_TRUE)
		d->single_dash = v;
	if (config_setting_lookup_bool(e, "last_wins", &v) == CONFIG_TRUE)
		d->last_wins = v;
	if (config_setting_lookup_string(e, "operand_glob", &w) == CONFIG_TRUE && !(d->operand_glob = pstrdup(l->p, w)))
		return fail(l, "out of memory");
	if (config_setting_lookup_string(e, "subcommand", &w) == CONFIG_TRUE && !(d->sub = pstrdup(l->p, w)))
		return fail(l, "out of memory");
	return 0;
}

static int
load_programs(struct load *l, const config_setting_t *list)
{
	struct hs_policy *p = l->p;
	const config_setting_t *e, *s;
	struct hs_progdecl *d, *nd;
	const char *w;
	size_t k;
	int i, n;

	n = config_setting_length(list);
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(list, (unsigned)i);
		nd = hs_grow(p->decls, &p->cap_decls, p->n_decls, sizeof(*p->decls));
		if (!nd)
			return fail(l, "out of memory");
		p->decls = nd;
		d = &p->decls[p->n_decls];
		memset(d, 0, sizeof(*d));
		if (get_strlist(l, config_setting_get_member(e, "names"), &d->names, "names"))
			return -1;
		if (!d->names.n)
			return fail(l, "%s:%d: program declaration without 'names'", l->file, config_setting_source_line(e));
		for (k = 0; l->user && k < d->names.n; k++)
			if (declared(p, d->names.v[k]))
				return fail(l, "%s:%d: program '%s' is already declared: a user policy file may only "
					    "add rules and declarations (see hs-policy(5))", l->file,
					    config_setting_source_line(e), d->names.v[k]);
		if (load_grammar(l, e, d))
			return -1;
		s = config_setting_get_member(e, "writes");
		if (s) {
			w = config_setting_get_string(s);
			if (!w)
				return fail(l, "%s:%d: 'writes' must be a string", l->file, config_setting_source_line(s));
			if (!strcmp(w, "args"))
				d->writes = HS_WR_ARGS;
			else if (!strcmp(w, "last"))
				d->writes = HS_WR_LAST;
			else if (!strncmp(w, "kv:", 3) && w[3])
				d->writes = HS_WR_KV, d->writes_key = pstrdup(p, w + 3);
			else if (strcmp(w, "none"))
				return fail(l, "%s:%d: unknown 'writes' value '%s'", l->file, config_setting_source_line(s), w);
		}
		if (get_flaglist(l, config_setting_get_member(e, "write_options"), &d->write_opts, "write_options", d->names.v[0]) ||
		    get_flaglist(l, config_setting_get_member(e, "writes_if"), &d->writes_if, "writes_if", d->names.v[0]))
			return -1;
		p->n_decls++;
	}
	return 0;
}

static const char *const match_keys[] = { "program", "program_not", "subcommand", "flags_all", "flags_any",
	"flags_none", "args_any", "args_all", "words_any", "words_all", "last_arg", "sources_any", "values_any", "writes_any",
	"reads_any", "redirects_any", "env_any", "stdin_text_any", "stdin_from", "script_from", "min_args", NULL };
static const char *const rule_keys[] = { "id", "severity", "scope", "description", "match", "examples",
	"counterexamples", "disabled", NULL };

static int
known_key(const char *name, const char *const *keys)
{
	for (; *keys; keys++)
		if (!strcmp(name, *keys))
			return 1;
	return 0;
}

static int
load_rule(struct load *l, const config_setting_t *e)
{
	struct hs_policy *p = l->p;
	struct hs_rule r, *nr;
	const config_setting_t *m;
	const char *id = NULL, *sev = NULL, *scope = NULL, *desc = NULL;
	int disabled = 0, i, n, line = config_setting_source_line(e);
	size_t k;

	memset(&r, 0, sizeof(r));
	n = config_setting_length(e);
	for (i = 0; i < n; i++) {
		const char *name = config_setting_name(config_setting_get_elem(e, (unsigned)i));

		if (!name || !known_key(name, rule_keys))
			return fail(l, "%s:%d: unknown rule field '%s'", l->file, line, name ? name : "?");
	}
	if (!config_setting_lookup_string(e, "id", &id) || !*id)
		return fail(l, "%s:%d: rule without 'id'", l->file, line);
	config_setting_lookup_bool(e, "disabled", &disabled);
	for (k = 0; l->user && k < p->n_rules; k++)
		if (!strcmp(p->rules[k].id, id))
			return fail(l, "%s:%d: rule '%s' is already defined: a user policy file may only add "
				    "rules, not %s them (see hs-policy(5))", l->file, line, id,
				    disabled ? "disable" : "replace");
	if (disabled && l->user)
		return fail(l, "%s:%d: rule '%s': a user policy file cannot disable rules (see hs-policy(5))",
			    l->file, line, id);
	if (disabled) {
		for (k = 0; k < p->n_rules; k++) {
			if (!strcmp(p->rules[k].id, id)) {
				memmove(&p->rules[k], &p->rules[k + 1], (p->n_rules - k - 1) * sizeof(r));
				p->n_rules--;
				break;
			}
		}
		return 0;
	}
	if (!config_setting_lookup_string(e, "severity", &sev) || (strcmp(sev, "hardline") && strcmp(sev, "dangerous")))
		return fail(l, "%s:%d: rule '%s': 'severity' must be \"hardline\" or \"dangerous\"", l->file, line, id);
	if (!config_setting_lookup_string(e, "scope", &scope) || (strcmp(scope, "host") && strcmp(scope, "sandbox")))
		return fail(l, "%s:%d: rule '%s': 'scope' must be \"host\" or \"sandbox\"", l->file, line, id);
	if (!config_setting_lookup_string(e, "description", &desc))
		return fail(l, "%s:%d: rule '%s': missing 'description'", l->file, line, id);
	if (strlen(id) >= 64)
		return fail(l, "%s:%d: rule id '%s' is longer than 63 characters", l->file, line, id);
	r.id = pstrdup(p, id);
	r.hardline = !strcmp(sev, "hardline");
	r.host_scope = !strcmp(scope, "host");
	r.description = pstrdup(p, desc);
	r.file = pstrdup(p, l->file);
	m = config_setting_get_member(e, "match");
	if (!m || !config_setting_is_group(m))
		return fail(l, "%s:%d: rule '%s': missing 'match' group", l->file, line, id);
	n = config_setting_length(m);
	for (i = 0; i < n; i++) {
		const char *name = config_setting_name(config_setting_get_elem(m, (unsigned)i));

		if (!known_key(name, match_keys))
			return fail(l, "%s:%d: rule '%s': unknown match field '%s'", l->file, line, id, name);
	}
	config_setting_lookup_int(m, "min_args", &r.min_args);
	if (get_strlist(l, config_setting_get_member(m, "program"), &r.programs, "program") ||
	    get_strlist(l, config_setting_get_member(m, "program_not"), &r.programs_not, "program_not") ||
	    get_strlist(l, config_setting_get_member(m, "subcommand"), &r.subcommands, "subcommand") ||
	    get_flaglist(l, config_setting_get_member(m, "flags_all"), &r.flags_all, "flags_all", id) ||
	    get_flaglist(l, config_setting_get_member(m, "flags_any"), &r.flags_any, "flags_any", id) ||
	    get_flaglist(l, config_setting_get_member(m, "flags_none"), &r.flags_none, "flags_none", id) ||
	    get_predlist(l, config_setting_get_member(m, "args_any"), &r.args_any, "args_any", id) ||
	    get_predlist(l, config_setting_get_member(m, "args_all"), &r.args_all, "args_all", id) ||
	    get_predlist(l, config_setting_get_member(m, "words_any"), &r.words_any, "words_any", id) ||
	    get_predlist(l, config_setting_get_member(m, "words_all"), &r.words_all, "words_all", id) ||
	    get_predlist(l, config_setting_get_member(m, "last_arg"), &r.last_arg, "last_arg", id) ||
	    get_predlist(l, config_setting_get_member(m, "sources_any"), &r.sources_any, "sources_any", id) ||
	    get_predlist(l, config_setting_get_member(m, "values_any"), &r.values_any, "values_any", id) ||
	    get_predlist(l, config_setting_get_member(m, "writes_any"), &r.writes_any, "writes_any", id) ||
	    get_predlist(l, config_setting_get_member(m, "reads_any"), &r.reads_any, "reads_any", id) ||
	    get_predlist(l, config_setting_get_member(m, "redirects_any"), &r.redirs_any, "redirects_any", id) ||
	    get_predlist(l, config_setting_get_member(m, "env_any"), &r.env_any, "env_any", id) ||
	    get_predlist(l, config_setting_get_member(m, "stdin_text_any"), &r.stdin_text_any, "stdin_text_any", id) ||
	    get_strlist(l, config_setting_get_member(m, "stdin_from"), &r.stdin_from, "stdin_from") ||
	    get_strlist(l, config_setting_get_member(m, "script_from"), &r.script_from, "script_from") ||
	    get_strlist(l, config_setting_get_member(e, "examples"), &r.examples, "examples") ||
	    get_strlist(l, config_setting_get_member(e, "counterexamples"), &r.counterexamples, "counterexamples"))
		return -1;
	r.any_program = r.programs.n == 0;
	for (k = 0; k < p->n_rules; k++) {
		if (!strcmp(p->rules[k].id, r.id)) {
			p->rules[k] = r; /* a later file overrides */
			return 0;
		}
	}
	nr = hs_grow(p->rules, &p->cap_rules, p->n_rules, sizeof(*p->rules));
	if (!nr)
		return fail(l, "out of memory");
	p->rules = nr;
	p->rules[p->n_rules++] = r;
	return 0;
}

static int
check_owner(struct load *l, const struct stat *st, const char *path)
{
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return fail(l, "refusing policy '%s': owned by uid %u, not root or the user", path, (unsigned)st->st_uid);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return fail(l, "refusing policy '%s': writable by group or others", path);
	return 0;
}

static int
load_file(struct load *l, const char *path)
{
	config_t cfg;
	const config_setting_t *s;
	struct stat st;
	FILE *fp = NULL;
	int fd, rc = -1, i, n;

	config_init(&cfg);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fail(l, "cannot open policy '%s': %s", path, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		fail(l, "refusing policy '%s': not a regular file", path);
		close(fd);
		goto out;
	}
	if (check_owner(l, &st, path)) {
		close(fd);
		goto out;
	}
	fp = fdopen(fd, "r");
	if (!fp) {
		close(fd);
		fail(l, "cannot read policy '%s': %s", path, strerror(errno));
		goto out;
	}
	l->file = pstrdup(l->p, path);
	if (!config_read(&cfg, fp)) {
		fail(l, "%s:%d: %s", path, config_error_line(&cfg), config_error_text(&cfg));
		goto out;
	}
	if ((s = config_lookup(&cfg, "pathsets")) && load_pathsets(l, s))
		goto out;
	if ((s = config_lookup(&cfg, "programs")) && load_programs(l, s))
		goto out;
	if ((s = config_lookup(&cfg, "rules"))) {
		n = config_setting_length(s);
		for (i = 0; i < n; i++)
			if (load_rule(l, config_setting_get_elem(s, (unsigned)i)))
				goto out;
	}
	rc = 0;
out:
	if (fp)
		fclose(fp);
	config_destroy(&cfg);
	return rc;
}

static int
rules_filter(const struct dirent *d)
{
	size_t l = strlen(d->d_name);

	return d->d_name[0] != '.' && l > 6 && !strcmp(d->d_name + l - 6, ".rules");
}

static int
load_dir(struct load *l, const char *dir)
{
	struct dirent **ents = NULL;
	struct stat st;
	char path[4096];
	int n, i, rc = 0;

	if (stat(dir, &st)) {
		if (errno == ENOENT)
			return 0;
		return fail(l, "cannot read policy directory '%s': %s", dir, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return fail(l, "policy directory '%s' is not a directory", dir);
	if (check_owner(l, &st, dir))
		return -1;
	n = scandir(dir, &ents, rules_filter, alphasort);
	if (n < 0)
		return fail(l, "cannot read policy directory '%s': %s", dir, strerror(errno));
	for (i = 0; i < n; i++) {
		if (!rc) {
			snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
			rc = load_file(l, path);
		}
		free(ents[i]);
	}
	free(ents);
	return rc;
}

void
hs_policy_free(struct hs_policy *p)
{
	size_t k;

	if (!p)
		return;
	for (k = 0; k < p->n_sets; k++)
		free(p->sets[k].pats);
	free(p->sets);
	hs_policy_index_free(p);
	free(p->rules);
	free(p->decls);
	hs_arena_free(&p->mem);
	free(p);
}

int
hs_policy_load(struct hs_policy **out, const char *const *dirs, size_t n_dirs,
	       const struct hs_policy_paths *paths, char *err, size_t errlen)
{
	return hs_policy_load_layers(out, dirs, n_dirs, 0, paths, err, errlen);
}

int
hs_policy_load_layers(struct hs_policy **out, const char *const *dirs, size_t n_dirs,
		      size_t user_from, const struct hs_policy_paths *paths, char *err, size_t errlen)
{
	struct hs_policy *p;
	struct load l;
	size_t k;
	int rc = -1;

	memset(&l, 0, sizeof(l));
	l.err = err;
	l.errlen = errlen;
	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return fail(&l, "out of memory");
	hs_arena_init(&p->mem, NULL, 0, (size_t)1 << 30);
	l.p = p;
	if (paths && paths->home && paths->home[0] == '/') {
		p->home = pstrdup(p, paths->home);
		p->home_len = strlen(p->home);
		while (p->home_len > 1 && p->home[p->home_len - 1] == '/')
			p->home_len--;
	}
	for (k = 0; paths && k < paths->n_protected; k++)
		if (paths->protected_paths[k] && paths->protected_paths[k][0] && add_protected(p, paths->protected_paths[k]))
			goto out;
	for (k = 0; k < n_dirs; k++) {
		l.user = user_from && k >= user_from;
		if (load_dir(&l, dirs[k]))
			goto out;
	}
	for (k = 0; k < l.npend; k++) {
		struct hs_pred *pr = l.pend[k].pred;

		pr->set = find_set(p, pr->arg);
		if (!pr->set) {
			fail(&l, "%s: rule '%s': unknown path set '%s'", l.pend[k].file, l.pend[k].rule, pr->arg);
			goto out;
		}
	}
	if (hs_policy_index(p)) {
		fail(&l, "out of memory");
		goto out;
	}
	*out = p;
	p = NULL;
	rc = 0;
out:
	free(l.pend);
	hs_policy_free(p);
	return rc;
}

int
hs_policy_verify_examples(const struct hs_policy *p, char *err, size_t errlen)
{
	struct hs_analysis an;
	size_t k, j, f;
	int failures = 0, hit;

	if (err && errlen)
		err[0] = '\0';
	for (k = 0; k < p->n_rules; k++) {
		const struct hs_rule *r = &p->rules[k];

		for (j = 0; j < r->examples.n + r->counterexamples.n; j++) {
			int is_ex = j < r->examples.n;
			const char *cmd = is_ex ? r->examples.v[j] : r->counterexamples.v[j - r->examples.n];

			hs_analyse(p, cmd, HS_CONTEXT_HOST, &an);
			hit = 0;
			for (f = 0; f < an.n_findings; f++)
				if (!strcmp(an.findings[f].rule_id, r->id))
					hit = 1;
			if (hit != is_ex) {
				if (!failures && err && errlen)
					snprintf(err, errlen, "rule '%s': %s '%s' %s", r->id,
						 is_ex ? "example" : "counterexample", cmd,
						 is_ex ? "does not match" : "matches");
				failures++;
			}
		}
	}
	return failures;
}
