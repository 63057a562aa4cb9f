/* SPDX-License-Identifier: MIT */
/*
 * analyse.c - walk the syntax tree and find every command that would run.
 *
 * Each simple command is reduced to a struct hs_cmd: its program (through
 * aliases, functions and wrappers), argv, redirections, environment
 * assignments, and where its input and code come from (pipelines and
 * substitutions).  Those are what the rules match.  Substitutions are
 * analysed first because they run first; function and alias bodies are
 * analysed where they are defined, so a dangerous definition is flagged
 * even if it is never called (calling it is then flagged as well).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "core/safety/internal.h"

void
hs_progset_add(struct hs_progset *s, const char *prog)
{
	int i;

	if (!prog || !*prog)
		return;
	for (i = 0; i < s->n; i++)
		if (!strcmp(s->p[i], prog))
			return;
	if (s->n < HS_PROGSET_MAX)
		s->p[s->n++] = prog;
}

void
hs_progset_merge(struct hs_progset *s, const struct hs_progset *o)
{
	int i;

	if (!o)
		return;
	for (i = 0; i < o->n; i++)
		hs_progset_add(s, o->p[i]);
}

int
hs_is_glob(const char *s)
{
	const char *b;

	if (strpbrk(s, "*?"))
		return 1;
	/* "[" alone (test) or "\e[31m" is no pattern: a bracket expression needs its "]". */
	return (b = strchr(s, '[')) && strchr(b + 1, ']');
}

const char *
hs_basename(const char *s)
{
	const char *b = strrchr(s, '/');

	return b && b[1] ? b + 1 : s;
}

void
hs_actx_opaque(struct hs_actx *x, const char *reason)
{
	if (!x->out->opaque) {
		x->out->opaque = 1;
		snprintf(x->out->opaque_reason, sizeof(x->out->opaque_reason), "%s", reason);
	}
}

static void walk(struct hs_actx *x, const struct hs_sh_node *n, const struct hs_progset *in,
		 const char *in_text, struct hs_progset *produced);

static int
enter(struct hs_actx *x)
{
	if (++x->steps > HS_ANALYSE_MAX_STEPS) {
		hs_actx_opaque(x, "command too complex to analyse");
		return 0;
	}
	if (x->depth >= HS_ANALYSE_MAX_DEPTH) {
		hs_actx_opaque(x, "command nested too deeply to analyse");
		return 0;
	}
	return 1;
}

void
hs_analyse_script(struct hs_actx *x, const char *text, size_t len,
		  const struct hs_progset *stdin_from, struct hs_progset *produced)
{
	const struct hs_sh_node *root;
	const char *why = "syntax error";
	char msg[128];

	if (!enter(x))
		return;
	root = hs_sh_parse(x->a, text, len, x->depth * 2, &why);
	if (!root) {
		snprintf(msg, sizeof(msg), "cannot parse command: %s", why);
		hs_actx_opaque(x, msg);
		return;
	}
	x->depth++;
	walk(x, root, stdin_from, NULL, produced);
	x->depth--;
}

static void
walk_word_subs(struct hs_actx *x, const struct hs_sh_word *w, struct hs_progset *prod)
{
	const struct hs_sh_subst *s;

	for (; w; w = w->next)
		for (s = w->subs; s; s = s->next)
			walk(x, s->body, NULL, NULL, prod);
}

/* Redirections and assignments of a command with no program, or of a block. */
static void
match_bare(struct hs_actx *x, const struct hs_sh_redir *r, const char **env, int nenv)
{
	struct hs_cmd c;
	static const char *none[1] = { "" };
	static const unsigned noflags[1] = { 0 };

	memset(&c, 0, sizeof(c));
	c.prog = "";
	c.argv = none;
	c.aflags = noflags;
	c.argc = 0;
	c.redirs = r;
	c.env = env;
	c.nenv = nenv;
	c.cwd = x->cwd;
	hs_match_cmd(x, &c);
}

/* Does body call name inside a pipeline or in the background? Then it multiplies. */
static int
self_spawning(const struct hs_sh_node *n, const char *name, int spawning, int depth)
{
	const struct hs_sh_node *c;

	if (!n || depth > 32)
		return 0;
	spawning = spawning || n->bg;
	if (n->kind == HS_SH_CMD)
		return spawning && n->words && !(n->words->flags & HS_W_DYN) && !strcmp(n->words->s, name);
	for (c = n->child; c; c = c->next)
		if (self_spawning(c, name, spawning || n->kind == HS_SH_PIPE, depth + 1))
			return 1;
	return 0;
}

static void
walk_func(struct hs_actx *x, const struct hs_sh_node *n)
{
	struct hs_func *f = hs_arena_zalloc(x->a, sizeof(*f));
	struct hs_progset ignored = { .n = 0 };
	const char *argv[2];
	unsigned flags[2] = { 0, 0 };
	struct hs_cmd ctx;

	if (!f) {
		hs_actx_opaque(x, "command too large to analyse");
		return;
	}
	f->name = n->name;
	f->body = n->child;
	f->next = x->funcs;
	x->funcs = f;
	if (self_spawning(n->child, n->name, 0, 0)) {
		/* The analyser reports the shape; the rule that matches "@fork-bomb" lives in policy. */
		memset(&ctx, 0, sizeof(ctx));
		argv[0] = "@fork-bomb";
		argv[1] = n->name;
		hs_analyse_argv(x, argv, flags, 2, &ctx, &ignored);
	}
	x->depth++;
	walk(x, n->child, NULL, NULL, &ignored);
	x->depth--;
}

static const char *
alias_value(struct hs_actx *x, const char *name)
{
	struct hs_alias *a;

	for (a = x->aliases; a; a = a->next)
		if (!strcmp(a->name, name))
			return a->value;
	return NULL;
}

static int
is_func(struct hs_actx *x, const char *name)
{
	struct hs_func *f;

	for (f = x->funcs; f; f = f->next)
		if (!strcmp(f->name, name))
			return 1;
	return 0;
}

/* Append s to buf single-quoted, so it is read back as exactly one word. */
static size_t
put_quoted(char *buf, size_t pos, size_t cap, const char *s)
{
	if (pos + 1 < cap)
		buf[pos++] = '\'';
	for (; *s && pos + 5 < cap; s++) {
		if (*s == '\'') {
			memcpy(buf + pos, "'\\''", 4);
			pos += 4;
		} else {
			buf[pos++] = *s;
		}
	}
	if (pos + 1 < cap)
		buf[pos++] = '\'';
	buf[pos < cap ? pos : cap - 1] = '\0';
	return pos;
}

static void
expand_alias(struct hs_actx *x, const char *value, const char **argv, int argc,
	     const struct hs_progset *in, struct hs_progset *produced)
{
	size_t cap = strlen(value) + 2, pos;
	char *buf;
	int i;

	for (i = 1; i < argc; i++)
		cap += strlen(argv[i]) * 4 + 3;
	buf = hs_arena_alloc(x->a, cap + 1);
	if (!buf) {
		hs_actx_opaque(x, "command too large to analyse");
		return;
	}
	pos = (size_t)snprintf(buf, cap, "%s", value);
	for (i = 1; i < argc && pos + 1 < cap; i++) {
		buf[pos++] = ' ';
		pos = put_quoted(buf, pos, cap, argv[i]);
	}
	buf[pos < cap ? pos : cap - 1] = '\0';
	hs_analyse_script(x, buf, strlen(buf), in, produced);
}

static void
define_alias(struct hs_actx *x, const char *arg)
{
	const char *eq = strchr(arg, '=');
	struct hs_alias *a;
	struct hs_progset ignored = { .n = 0 };

	if (!eq || eq == arg)
		return;
	a = hs_arena_zalloc(x->a, sizeof(*a));
	if (!a || !(a->name = hs_arena_strndup(x->a, arg, (size_t)(eq - arg)))) {
		hs_actx_opaque(x, "command too large to analyse");
		return;
	}
	a->value = eq + 1;
	a->next = x->aliases;
	x->aliases = a;
	/* Analysed where defined: the body is what will run. */
	hs_analyse_script(x, a->value, strlen(a->value), NULL, &ignored);
}

const char hs_cwd_unknown[] = { HS_SH_DYN_CHAR, 0 };

int
hs_cwd_is_unknown(const char *cwd)
{
	return cwd && cwd[0] == HS_SH_DYN_CHAR;
}

const char *
hs_cwd_enter(struct hs_actx *x, const char *cwd, const char *dir, unsigned flags, int *depth)
{
	char buf[1024];
	int partial = 0, d = depth ? *depth : 0;
	size_t l;

	if ((flags & HS_W_DYN) || dir[0] == '-' || hs_cwd_is_unknown(cwd))
		return hs_cwd_unknown;
	/* Below the start directory it stays "somewhere in the project"; above it, unknown. */
	if (!cwd && dir[0] != '/' && dir[0] != '~') {
		for (const char *s = dir; *s; s += l) {
			s += strspn(s, "/");
			l = strcspn(s, "/");
			if (l == 2 && s[0] == '.' && s[1] == '.') {
				if (--d < 0)
					return hs_cwd_unknown;
			} else if (l && !(l == 1 && s[0] == '.')) {
				d++;
			}
		}
		if (depth)
			*depth = d;
		return NULL;
	}
	if (hs_path_norm(x->pol, dir, cwd, buf, sizeof(buf), &partial) && !partial)
		return hs_arena_strndup(x->a, buf, strlen(buf));
	return hs_cwd_unknown;
}

/* A directory from "cd DIR", kept so relative paths after it can be judged. */
static void
track_cd(struct hs_actx *x, const char *prog, const char **argv, const unsigned *flags, int argc)
{
	int i = 1;

	while (i < argc && !(flags[i] & HS_W_DYN) && (!strcmp(argv[i], "-L") || !strcmp(argv[i], "-P")))
		i++;
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (!strcmp(prog, "popd") || (!strcmp(prog, "pushd") && i >= argc))
		x->cwd = hs_cwd_unknown; /* the stack's top is not followed */
	else if (i >= argc)
		x->cwd = "~"; /* plain cd goes home */
	else
		x->cwd = hs_cwd_enter(x, x->cwd, argv[i], flags[i], &x->cwd_depth);
}

/* echo/printf with static arguments: the text a following "| sh" would run. */
static const char *
static_echo_text(struct hs_actx *x, const struct hs_sh_node *n)
{
	const struct hs_sh_word *w;
	size_t len = 0;
	char *buf, *o;
	int is_printf;

	/*
	 * Run-time parts stay marked in the text, so a shell reading it meets a
	 * value it cannot know ("echo "$CODE" | sh" is opaque, not harmless).
	 */
	if (n->kind != HS_SH_CMD || !n->words || (n->words->flags & HS_W_DYN))
		return NULL;
	if (!strcmp(n->words->s, "cat") && !n->words->next && n->redirs && !n->redirs->next) {
		/* cat <<EOF ... EOF | sh: the heredoc is the script. */
		const struct hs_sh_redir *r = n->redirs;

		if (r->op == HS_R_HEREDOC && r->body)
			return r->body->s;
		if (r->op == HS_R_HERESTR && r->target)
			return r->target->s;
		return NULL;
	}
	if (n->redirs)
		return NULL;
	is_printf = !strcmp(n->words->s, "printf");
	if (!is_printf && strcmp(n->words->s, "echo"))
		return NULL;
	for (w = n->words->next; w; w = w->next)
		len += w->len + 1;
	buf = hs_arena_alloc(x->a, len + 1);
	if (!buf)
		return NULL;
	o = buf;
	for (w = n->words->next; w; w = w->next) {
		const char *s = w->s;

		if (!is_printf && o == buf && s[0] == '-' && strspn(s + 1, "neE") == strlen(s + 1) && s[1])
			continue;
		if (o != buf)
			*o++ = ' ';
		for (; *s; s++) {
			if (s[0] == '\\' && s[1] == 'n') {
				*o++ = '\n';
				s++;
			} else {
				*o++ = *s;
			}
		}
	}
	*o = '\0';
	return buf;
}

static void
walk_pipe(struct hs_actx *x, const struct hs_sh_node *n, const struct hs_progset *in,
	  const char *in_text, struct hs_progset *produced)
{
	struct hs_progset up = { .n = 0 }, prod;
	const struct hs_sh_node *c;
	const char *text = in_text;

	if (in)
		hs_progset_merge(&up, in);
	for (c = n->child; c; c = c->next) {
		prod.n = 0;
		walk(x, c, up.n ? &up : NULL, text, &prod);
		hs_progset_merge(&up, &prod);
		hs_progset_merge(produced, &prod);
		text = static_echo_text(x, c);
	}
}

static int
count_words(const struct hs_sh_word *w)
{
	int n = 0;

	for (; w; w = w->next)
		n++;
	return n;
}

/*
 * Variables whose value a shell or another program runs (PROMPT_COMMAND,
 * GIT_SSH_COMMAND, PAGER, EDITOR, LESSOPEN...) or expands with command
 * substitution (PS0/PS1/PS2/PS4 for prompts and xtrace, BASH_ENV and ENV
 * for start-up files): the code is analysed where it is assigned.
 */
void
hs_analyse_env_code(struct hs_actx *x, const char *const *env, int n)
{
	static const char *const expanded[] = { "PS0=", "PS1=", "PS2=", "PS4=", "BASH_ENV=", "ENV=", NULL };
	/* Commands other programs run: git and ssh helpers, pagers, editors, less's input filter. */
	static const char *const code[] = { "PROMPT_COMMAND=", "GIT_SSH_COMMAND=", "GIT_SSH=", "GIT_PAGER=", "PAGER=",
		"MANPAGER=", "SYSTEMD_PAGER=", "GIT_EDITOR=", "EDITOR=", "VISUAL=", "GIT_EXTERNAL_DIFF=", "GIT_ASKPASS=",
		"SSH_ASKPASS=", "SUDO_ASKPASS=", "RSYNC_RSH=", "BROWSER=", "LESSOPEN=", "LESSCLOSE=",
		"GIT_PROXY_COMMAND=", NULL };
	static const char delim[] = "__HS_EXPANDED_VALUE__";
	struct hs_progset ignored = { .n = 0 };
	const char *const *k;
	const char *v;
	char *text;
	size_t l;
	int i;

	for (i = 0; i < n; i++) {
		v = env[i];
		if (!strchr("PBEGMSVRL", v[0]))
			continue;
		for (k = code; *k && strncmp(v, *k, strlen(*k)); k++)
			;
		if (*k) {
			v += strlen(*k);
			v += strspn(v, "|"); /* LESSOPEN="|filter %s" */
			hs_analyse_script(x, v, strlen(v), NULL, &ignored);
			continue;
		}
		for (k = expanded; *k && strncmp(v, *k, strlen(*k)); k++)
			;
		if (!*k || !strpbrk(v, "$`"))
			continue;
		/* Expanded as a heredoc body would be: only the substitutions run. */
		v += strlen(*k);
		l = strlen(v) + 2 * sizeof(delim) + 16;
		text = hs_arena_alloc(x->a, l);
		if (!text) {
			hs_actx_opaque(x, "command too large to analyse");
			return;
		}
		snprintf(text, l, ": <<%s\n%s\n%s\n", delim, v, delim);
		hs_analyse_script(x, text, strlen(text), NULL, &ignored);
	}
}

/* Prefix assignments and export-style builtins put NAME=VALUE in the environment. */
static const char **
collect_env(struct hs_actx *x, const struct hs_sh_node *n, int *nenv)
{
	const struct hs_sh_word *w;
	const char **env;
	int cnt = count_words(n->assigns), i = 0;
	int exporting = n->words && !(n->words->flags & HS_W_DYN) &&
		(!strcmp(n->words->s, "export") || !strcmp(n->words->s, "declare") ||
		 !strcmp(n->words->s, "typeset") || !strcmp(n->words->s, "local") ||
		 !strcmp(n->words->s, "readonly"));

	if (exporting)
		cnt += count_words(n->words);
	*nenv = 0;
	if (!cnt)
		return NULL;
	env = hs_arena_alloc(x->a, sizeof(*env) * (size_t)cnt);
	if (!env)
		return NULL;
	for (w = n->assigns; w; w = w->next)
		env[i++] = w->s;
	if (exporting)
		for (w = n->words->next; w; w = w->next)
			if (strchr(w->s, '='))
				env[i++] = w->s;
	*nenv = i;
	return env;
}

static void
walk_cmd(struct hs_actx *x, const struct hs_sh_node *n, const struct hs_progset *in,
	 const char *in_text, struct hs_progset *produced)
{
	const struct hs_sh_word *w;
	const struct hs_sh_redir *r;
	struct hs_progset subprod = { .n = 0 }, **aprod = NULL;
	const char **argv;
	unsigned *aflags;
	struct hs_cmd c;
	const char *av, *slash, *prog, *val;
	int argc, i, nenv = 0;
	const char **env;

	/* Substitutions run before the command does. */
	walk_word_subs(x, n->assigns, &subprod);
	for (r = n->redirs; r; r = r->next) {
		walk_word_subs(x, r->target, &subprod);
		walk_word_subs(x, r->body, &subprod);
	}
	argc = count_words(n->words);
	argv = hs_arena_alloc(x->a, sizeof(*argv) * (size_t)(argc + 1));
	aflags = hs_arena_alloc(x->a, sizeof(*aflags) * (size_t)(argc + 1));
	aprod = hs_arena_zalloc(x->a, sizeof(*aprod) * (size_t)(argc + 1));
	if (!argv || !aflags || !aprod) {
		hs_actx_opaque(x, "command too large to analyse");
		return;
	}
	for (i = 0, w = n->words; w; w = w->next, i++) {
		argv[i] = w->s;
		aflags[i] = w->flags;
		if (w->flags & HS_W_OPAQUE)
			hs_actx_opaque(x, "word split by a changed IFS");
		if (w->subs) {
			struct hs_progset *ps = hs_arena_zalloc(x->a, sizeof(*ps));
			const struct hs_sh_subst *s;

			if (!ps) {
				hs_actx_opaque(x, "command too large to analyse");
				return;
			}
			for (s = w->subs; s; s = s->next)
				walk(x, s->body, NULL, NULL, ps);
			aprod[i] = ps;
			hs_progset_merge(&subprod, ps);
		}
	}
	argv[argc] = NULL;
	env = collect_env(x, n, &nenv);
	if (nenv)
		hs_analyse_env_code(x, env, nenv);
	if (argc == 0) {
		match_bare(x, n->redirs, env, nenv);
		return;
	}

	av = argv[0];
	if (aflags[0] & HS_W_DYN) {
		/* "$VENV/bin/python": only the directory is run-time; the program is not. */
		slash = strrchr(av, '/');
		if (!slash || !slash[1] || strchr(slash, HS_SH_DYN_CHAR)) {
			hs_actx_opaque(x, "program name known only at run time");
			return;
		}
	}
	if ((aflags[0] & HS_W_GLOB) && hs_is_glob(av)) {
		/* /usr/bin/r? becomes whatever file matches: rm, perhaps. */
		hs_actx_opaque(x, "program name is a glob pattern");
		return;
	}
	prog = hs_basename(av);

	if (!(aflags[0] & (HS_W_QUOTED | HS_W_DYN)) && (val = alias_value(x, av))) {
		expand_alias(x, val, argv, argc, in, produced);
		return;
	}
	if (!strcmp(prog, "alias")) {
		for (i = 1; i < argc; i++)
			if (!(aflags[i] & HS_W_DYN))
				define_alias(x, argv[i]);
		return;
	}
	if (is_func(x, av)) {
		/* The body was analysed at its definition. */
		hs_progset_add(produced, av);
		return;
	}
	if (!strcmp(prog, "cd") || !strcmp(prog, "pushd") || !strcmp(prog, "popd"))
		track_cd(x, prog, argv, aflags, argc);

	memset(&c, 0, sizeof(c));
	c.prog = prog;
	c.argv = argv;
	c.aflags = aflags;
	c.argc = argc;
	c.redirs = n->redirs;
	c.env = env;
	c.nenv = nenv;
	c.cwd = x->cwd;
	if (in)
		hs_progset_merge(&c.stdin_from, in);
	hs_progset_merge(&c.stdin_from, &subprod);
	c.stdin_text = in_text;
	for (r = n->redirs; r; r = r->next) {
		/* A run-time part stays marked: code read from an unset variable is opaque. */
		if (r->op == HS_R_HEREDOC && r->body)
			c.stdin_text = r->body->s;
		else if (r->op == HS_R_HERESTR && r->target)
			c.stdin_text = r->target->s;
		else if (r->op == HS_R_IN && r->target && r->target->subs)
			walk_word_subs(x, r->target, &c.stdin_from);
		if ((r->op == HS_R_HEREDOC && r->body && r->body->subs) ||
		    (r->op == HS_R_HERESTR && r->target && r->target->subs)) {
			/* Code fed to a shell from a substitution: its producers made the script. */
			walk_word_subs(x, r->op == HS_R_HEREDOC ? r->body : r->target, &c.stdin_from);
		}
	}
	c.argv = argv;
	c.aprod = (const struct hs_progset *const *)aprod;
	hs_resolve_wrapper(x, &c, produced);
	hs_match_cmd(x, &c);
	hs_progset_add(produced, prog);
}

static void
walk(struct hs_actx *x, const struct hs_sh_node *n, const struct hs_progset *in,
     const char *in_text, struct hs_progset *produced)
{
	const struct hs_sh_node *c;
	const struct hs_sh_redir *r;
	struct hs_progset local = { .n = 0 }, blockin = { .n = 0 };

	if (!n || !enter(x))
		return;
	if (!produced)
		produced = &local;
	switch (n->kind) {
	case HS_SH_CMD:
		walk_cmd(x, n, in, in_text, produced);
		break;
	case HS_SH_PIPE:
		walk_pipe(x, n, in, in_text, produced);
		break;
	case HS_SH_FUNC:
		walk_func(x, n);
		break;
	case HS_SH_BLOCK:
		walk_word_subs(x, n->words, produced);
		if (in)
			hs_progset_merge(&blockin, in);
		for (r = n->redirs; r; r = r->next) {
			walk_word_subs(x, r->target, &blockin);
			walk_word_subs(x, r->body, &blockin);
		}
		if (n->redirs)
			match_bare(x, n->redirs, NULL, 0);
		/* FALLTHROUGH */
	case HS_SH_LIST:
		for (c = n->child; c; c = c->next)
			walk(x, c, blockin.n ? &blockin : in, in_text, produced);
		break;
	}
}

const char *
hs_verdict_name(enum hs_verdict v)
{
	switch (v) {
	case HS_VERDICT_ALLOW: return "allow";
	case HS_VERDICT_ASK: return "ask";
	case HS_VERDICT_DENY: return "deny";
	}
	return "deny";
}

int
hs_analyse(const struct hs_policy *p, const char *command, enum hs_context ctx,
	   struct hs_analysis *out)
{
	/* Most commands fit in this; the arena only goes to the heap for big ones. */
	char stackmem[16384];
	struct hs_arena a;
	struct hs_actx x;

	if (!out)
		return -1;
	/* findings[] is large; only the entries counted by n_findings are meaningful. */
	out->verdict = HS_VERDICT_ALLOW;
	out->n_findings = 0;
	out->opaque = 0;
	out->opaque_reason[0] = '\0';
	if (!p || !command)
		return -1;
	hs_arena_init(&a, stackmem, sizeof(stackmem), (size_t)64 << 20);
	memset(&x, 0, sizeof(x));
	x.pol = p;
	x.ctx = ctx;
	x.out = out;
	x.a = &a;
	x.home = p->home;
	if (strlen(command) > ((size_t)1 << 20))
		hs_actx_opaque(&x, "command too long to analyse");
	else
		hs_analyse_script(&x, command, strlen(command), NULL, NULL);
	if (a.failed)
		hs_actx_opaque(&x, "command too large to analyse");
	hs_arena_free(&a);

	hs_analysis_finish(out, ctx, command);
	return 0;
}

void
hs_analysis_finish(struct hs_analysis *out, enum hs_context ctx, const char *shown)
{
	struct hs_finding *f;
	size_t i;

	if (out->opaque && ctx == HS_CONTEXT_HOST && out->n_findings < HS_MAX_FINDINGS) {
		f = &out->findings[out->n_findings++];
		memset(f, 0, sizeof(*f));
		snprintf(f->rule_id, sizeof(f->rule_id), "opaque");
		f->host_scope = 1;
		snprintf(f->description, sizeof(f->description), "cannot be analysed: %.200s", out->opaque_reason);
		snprintf(f->argv_norm, sizeof(f->argv_norm), "%s", shown);
	}
	out->verdict = HS_VERDICT_ALLOW;
	for (i = 0; i < out->n_findings; i++) {
		if (out->findings[i].hardline)
			out->verdict = HS_VERDICT_DENY;
		else if (out->verdict == HS_VERDICT_ALLOW)
			out->verdict = HS_VERDICT_ASK;
	}
}
