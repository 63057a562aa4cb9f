/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * match.c - judge one resolved command against the rules.
 *
 * The argv is split once into options (short letters, combined or not,
 * long names with =values; which options take an argument comes from the
 * program declarations in policy) and positional arguments.  Every rule
 * that could apply to the program is then checked field by field; all
 * fields of a rule must hold (see hs-policy(5)).
 */
#include <fnmatch.h>
#include <string.h>

#include "core/safety/internal.h"

/* Bounds of one command's parsed argv; a command past them is opaque (see hs_match_cmd). */
#define MAX_OPTS 256
#define MAX_POS 512
#define MAX_TARGETS (MAX_POS + 128) /* every positional may be a written file, plus redirections */

struct opt {
	const char *name;
	size_t len;
	int is_long;
	int known;      /* in the program's grammar, so spelled out in full */
	const char *value;
};

struct parsed {
	struct opt opts[MAX_OPTS];
	int nopt;
	const char *pos[MAX_POS];
	int npos;
	const char *writes[MAX_TARGETS];
	int nwrites;
	const char *reads[MAX_TARGETS];
	int nreads;
	const char *redirs[MAX_TARGETS];
	int nredirs;
	int overflow; /* a word did not fit: the rules did not see all of it */
};

struct mctx {
	struct hs_actx *x;
	const struct hs_cmd *c;
	const struct hs_progdecl *decl;
	struct parsed pa;
};

static void
add_opt(struct parsed *pa, const char *name, size_t len, int is_long, const char *value, int known)
{
	if (pa->nopt >= MAX_OPTS) {
		pa->overflow = 1;
		return;
	}
	pa->opts[pa->nopt].known = known;
	pa->opts[pa->nopt].name = name;
	pa->opts[pa->nopt].len = len;
	pa->opts[pa->nopt].is_long = is_long;
	pa->opts[pa->nopt].value = value;
	pa->nopt++;
}

static void
parse_argv(struct mctx *m)
{
	const struct hs_cmd *c = m->c;
	struct parsed *pa = &m->pa;
	struct hs_optstate st = { .i = 1 };
	struct hs_opt o;
	const char *dyn;

	/* GNU getopt order: options may follow operands, until "--". */
	while (st.i < c->argc || st.cl) {
		/*
		 * -rf${Z}/: an unquoted run-time value may split the word, so
		 * what follows it may be a word of its own.
		 */
		if (!st.cl && !st.dashdash && c->argv[st.i][0] == '-' && (c->aflags[st.i] & HS_W_DYN) &&
		    (dyn = strrchr(c->argv[st.i], HS_SH_DYN_CHAR)) && dyn[1] && pa->npos < MAX_POS)
			pa->pos[pa->npos++] = dyn + 1;
		if (!st.dashdash && (st.cl || c->argv[st.i][0] != HS_SH_DYN_CHAR) &&
		    hs_opt_next(m->decl, c->argv, c->argc, &st, &o)) {
			add_opt(pa, o.name, o.len, o.is_long, o.value, o.kind != HS_OK_UNKNOWN);
			continue;
		}
		if (st.i < c->argc) {
			if (pa->npos < MAX_POS)
				pa->pos[pa->npos++] = c->argv[st.i];
			else
				pa->overflow = 1;
		}
		st.i++;
	}
}

static int
spec_matches_opt(const struct mctx *m, const struct hs_flagspec *f, const struct opt *o)
{
	size_t k, nl;

	for (k = 0; k < f->n; k++) {
		nl = strlen(f->names[k]);
		/*
		 * A long option the grammar does not know may be an abbreviation
		 * (git reset --har): any prefix of the rule's name matches.
		 */
		if (!o->len || o->is_long != (nl > 1) || (nl != o->len && (o->known || !o->is_long || o->len > nl)) ||
		    strncmp(f->names[k], o->name, o->len))
			continue;
		if (!f->value)
			return 1;
		if (o->value && hs_pred_match(m->x->pol, f->value, o->value, m->c->cwd))
			return 1;
	}
	return 0;
}

static int
has_flag(const struct mctx *m, const struct hs_flagspec *f)
{
	int i;

	for (i = 0; i < m->pa.nopt; i++)
		if (spec_matches_opt(m, f, &m->pa.opts[i]))
			return 1;
	return 0;
}

/* mv/cp -t DIR: every operand is a source. */
static const struct hs_flagspec target_dir = { .names = { "t", "target-directory" }, .n = 2 };

static int
any_flag(const struct mctx *m, const struct hs_flaglist *l)
{
	size_t k;

	for (k = 0; k < l->n; k++)
		if (has_flag(m, &l->v[k]))
			return 1;
	return 0;
}

static int
pred_any(const struct mctx *m, const struct hs_predlist *pl, const char *const *words, int n)
{
	size_t k;
	int i;

	for (i = 0; i < n; i++)
		for (k = 0; k < pl->n; k++)
			if (hs_pred_match(m->x->pol, &pl->v[k], words[i], m->c->cwd))
				return 1;
	return 0;
}

static int
pred_all(const struct mctx *m, const struct hs_predlist *pl, const char *const *words, int n)
{
	size_t k;
	int i, ok;

	for (k = 0; k < pl->n; k++) {
		ok = 0;
		for (i = 0; i < n && !ok; i++)
			ok = hs_pred_match(m->x->pol, &pl->v[k], words[i], m->c->cwd);
		if (!ok)
			return 0;
	}
	return 1;
}

/*
 * prog equals an entry of l, or matches one that is a glob.  Entries that
 * differ in their literal prefix cannot match, so fnmatch() is rarely run.
 */
static int
prog_in(const struct hs_strlist *l, const char *prog)
{
	size_t k;
	const char *v;

	if (!(l->first[(unsigned char)prog[0] >> 3] & (1u << ((unsigned char)prog[0] & 7))))
		return 0;
	for (k = 0; k < l->n; k++) {
		v = l->v[k];
		if (v[0] == prog[0] && !strcmp(v, prog))
			return 1;
		if (l->glob && l->glob[k] && hs_prefix_eq(v, prog, l->litlen[k]) && !fnmatch(v, prog, 0))
			return 1;
	}
	return 0;
}

static int
progset_in(const struct hs_strlist *l, const struct hs_progset *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (prog_in(l, s->p[i]))
			return 1;
	return 0;
}

static void
add_target(struct parsed *pa, const char **arr, int *n, const char *t)
{
	if (!t || !*t)
		return;
	if (*n < MAX_TARGETS)
		arr[(*n)++] = t;
	else
		pa->overflow = 1;
}

/* Where does this command write and read?  Redirections, plus what its declaration says. */
static void
compute_targets(struct mctx *m)
{
	const struct hs_sh_redir *r;
	const struct hs_progdecl *d = m->decl;
	struct parsed *pa = &m->pa;
	size_t k;
	int i;

	for (r = m->c->redirs; r; r = r->next) {
		const char *t = r->target ? r->target->s : NULL;

		if (!t || r->op == HS_R_HEREDOC || r->op == HS_R_HERESTR)
			continue;
		if (r->op == HS_R_DUP_IN || (r->op == HS_R_DUP_OUT))
			continue;
		add_target(pa, pa->redirs, &pa->nredirs, t);
		if (r->op == HS_R_IN || r->op == HS_R_RW)
			add_target(pa, pa->reads, &pa->nreads, t);
		if (r->op != HS_R_IN)
			add_target(pa, pa->writes, &pa->nwrites, t);
	}
	if (!d || (d->writes == HS_WR_NONE && !d->write_opts.n))
		return;
	if (d->writes_if.n && !any_flag(m, &d->writes_if))
		return;
	switch (d->writes) {
	case HS_WR_ARGS:
		for (i = 0; i < pa->npos; i++)
			add_target(pa, pa->writes, &pa->nwrites, pa->pos[i]);
		break;
	case HS_WR_LAST:
		if (pa->npos)
			add_target(pa, pa->writes, &pa->nwrites, pa->pos[pa->npos - 1]);
		break;
	case HS_WR_KV:
		for (i = 1; i < m->c->argc; i++) {
			size_t kl = strlen(d->writes_key);

			if (!strncmp(m->c->argv[i], d->writes_key, kl) && m->c->argv[i][kl] == '=')
				add_target(pa, pa->writes, &pa->nwrites, m->c->argv[i] + kl + 1);
		}
		break;
	}
	for (k = 0; k < d->write_opts.n; k++)
		for (i = 0; i < pa->nopt; i++)
			if (pa->opts[i].value && spec_matches_opt(m, &d->write_opts.v[k], &pa->opts[i]))
				add_target(pa, pa->writes, &pa->nwrites, pa->opts[i].value);
}

/* indexed: r came from the program index, so it names c->prog exactly. */
static int
rule_matches(struct mctx *m, const struct hs_rule *r, int indexed)
{
	const struct hs_cmd *c = m->c;
	struct parsed *pa = &m->pa;
	const char *const *args = pa->pos;
	int nargs = pa->npos, i;
	size_t k;
	const char *vals[MAX_OPTS];
	int nvals = 0;

	if (!indexed && r->programs.n && !prog_in(&r->programs, c->prog))
		return 0;
	if (r->programs_not.n && prog_in(&r->programs_not, c->prog))
		return 0;
	if (r->min_args && c->argc - 1 < r->min_args)
		return 0;
	if (r->subcommands.n) {
		if (!nargs || !prog_in(&r->subcommands, args[0]))
			return 0;
		args++;
		nargs--;
	}
	for (k = 0; k < r->flags_all.n; k++)
		if (!has_flag(m, &r->flags_all.v[k]))
			return 0;
	if (r->flags_any.n && !any_flag(m, &r->flags_any))
		return 0;
	if (r->flags_none.n && any_flag(m, &r->flags_none))
		return 0;
	if (r->args_any.n && !pred_any(m, &r->args_any, args, nargs))
		return 0;
	if (r->args_all.n && !pred_all(m, &r->args_all, args, nargs))
		return 0;
	if (r->words_any.n && !pred_any(m, &r->words_any, c->argv + 1, c->argc - 1))
		return 0;
	if (r->words_all.n && !pred_all(m, &r->words_all, c->argv + 1, c->argc - 1))
		return 0;
	if (r->last_arg.n && (c->argc < 2 || !pred_any(m, &r->last_arg, c->argv + c->argc - 1, 1)))
		return 0;
	if (r->sources_any.n && !pred_any(m, &r->sources_any, args, has_flag(m, &target_dir) ? nargs : nargs - 1))
		return 0;
	if (r->values_any.n) {
		for (i = 0; i < pa->nopt; i++)
			if (pa->opts[i].value)
				vals[nvals++] = pa->opts[i].value;
		if (!pred_any(m, &r->values_any, vals, nvals))
			return 0;
	}
	if (r->writes_any.n && !pred_any(m, &r->writes_any, pa->writes, pa->nwrites))
		return 0;
	if (r->reads_any.n && !pred_any(m, &r->reads_any, pa->reads, pa->nreads))
		return 0;
	if (r->redirs_any.n && !pred_any(m, &r->redirs_any, pa->redirs, pa->nredirs))
		return 0;
	if (r->env_any.n && !pred_any(m, &r->env_any, c->env, c->nenv))
		return 0;
	if (r->stdin_text_any.n && (!c->stdin_text || !pred_any(m, &r->stdin_text_any, &c->stdin_text, 1)))
		return 0;
	if (r->stdin_from.n && !progset_in(&r->stdin_from, &c->stdin_from))
		return 0;
	if (r->script_from.n && !progset_in(&r->script_from, &c->script_from))
		return 0;
	return 1;
}

static void
try_rule(struct mctx *m, size_t ri, int indexed)
{
	const struct hs_rule *r = &m->x->pol->rules[ri];

	if (m->x->ctx == HS_CONTEXT_SANDBOX && !r->host_scope)
		return;
	if (rule_matches(m, r, indexed))
		hs_add_finding(m->x, r, m->c);
}

void
hs_match_cmd(struct hs_actx *x, const struct hs_cmd *c)
{
	const struct hs_policy *p = x->pol;
	const struct hs_pidx *e = hs_policy_prog(p, c->prog);
	struct mctx m;
	size_t k;

	m.x = x;
	m.c = c;
	m.decl = e ? e->decl : NULL;
	m.pa.nopt = m.pa.npos = m.pa.nwrites = m.pa.nreads = m.pa.nredirs = m.pa.overflow = 0;
	parse_argv(&m);
	compute_targets(&m);
	/* Padding a command with words must not push a flag or a target out of sight. */
	if (m.pa.overflow)
		hs_actx_opaque(x, "command has too many words to analyse");
	/* Rules indexed under the program name first, then the generic ones. */
	if (e)
		for (k = 0; k < e->n; k++)
			try_rule(&m, e->rules[k], 1);
	for (k = 0; k < p->n_generic; k++)
		try_rule(&m, p->generic[k], 0);
}

static size_t
put_arg(char *buf, size_t pos, size_t cap, const char *s)
{
	const char *p;
	int plain = *s != '\0';

	for (p = s; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:@%+,-~", *p))
			plain = 0;
	if (plain) {
		for (; *s && pos + 1 < cap; s++)
			buf[pos++] = *s;
		return pos;
	}
	if (pos + 1 < cap)
		buf[pos++] = '\'';
	for (; *s && pos + 6 < cap; s++) {
		if (*s == '\'') {
			memcpy(buf + pos, "'\\''", 4);
			pos += 4;
		} else if (*s == HS_SH_DYN_CHAR) {
			memcpy(buf + pos, "${}", 3);
			pos += 3;
		} else {
			buf[pos++] = *s;
		}
	}
	if (pos + 1 < cap)
		buf[pos++] = '\'';
	return pos;
}

/* snprintf(dst, cap, "%s", s) without the formatting machinery. */
static void
copy_str(char *dst, size_t cap, const char *s)
{
	size_t l = strlen(s);

	if (l >= cap)
		l = cap - 1;
	memcpy(dst, s, l);
	dst[l] = '\0';
}

void
hs_add_finding(struct hs_actx *x, const struct hs_rule *r, const struct hs_cmd *c)
{
	struct hs_analysis *out = x->out;
	struct hs_finding *f;
	size_t i, pos = 0, cap;
	int k;

	for (i = 0; i < out->n_findings; i++)
		if (!strcmp(out->findings[i].rule_id, r->id))
			return;
	if (out->n_findings >= HS_MAX_FINDINGS)
		return;
	f = &out->findings[out->n_findings++];
	copy_str(f->rule_id, sizeof(f->rule_id), r->id);
	f->hardline = r->hardline;
	f->host_scope = r->host_scope;
	copy_str(f->description, sizeof(f->description), r->description);
	cap = sizeof(f->argv_norm);
	if (c->prog[0])
		pos = put_arg(f->argv_norm, pos, cap, c->prog);
	for (k = 1; k < c->argc && pos + 2 < cap; k++) {
		f->argv_norm[pos++] = ' ';
		pos = put_arg(f->argv_norm, pos, cap, c->argv[k]);
	}
	f->argv_norm[pos < cap ? pos : cap - 1] = '\0';
}
