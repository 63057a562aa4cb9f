/* SPDX-License-Identifier: MIT */
/*
 * resolve.c - see through wrappers to the commands they run.
 *
 * sudo, env, timeout, nice, xargs, find -exec, sh -c, eval, source and
 * friends run another command (or a script) that matters more than they
 * do.  How each of them reads its argv (its option grammar) and what it
 * runs (the "runs" key) are policy data, in policy/wrappers.rules; how
 * each kind of running is followed is here.  A wrapper whose grammar is
 * complete and which meets an option outside it is opaque: that option
 * might take the command as its operand.
 */
#include "config.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/internal.h"

void
hs_analyse_tail(struct hs_actx *x, const struct hs_cmd *c, int from, struct hs_progset *produced)
{
	struct hs_cmd in;
	const char *av, *slash;

	if (from >= c->argc)
		return;
	if (++x->steps > HS_ANALYSE_MAX_STEPS || x->depth >= HS_ANALYSE_MAX_DEPTH) {
		hs_actx_opaque(x, "command nested too deeply to analyse");
		return;
	}
	in = *c;
	in.argv = c->argv + from;
	in.aflags = c->aflags + from;
	in.aprod = c->aprod ? c->aprod + from : NULL;
	in.argc = c->argc - from;
	in.script_from.n = 0;
	av = in.argv[0];
	if ((in.aflags[0] & HS_W_GLOB) && hs_is_glob(av)) {
		hs_actx_opaque(x, "program name is a glob pattern");
		return;
	}
	if (in.aflags[0] & HS_W_DYN) {
		slash = strrchr(av, '/');
		if (!slash || !slash[1] || strchr(slash, HS_SH_DYN_CHAR)) {
			hs_actx_opaque(x, "program name known only at run time");
			return;
		}
	}
	in.prog = hs_basename(av);
	x->depth++;
	hs_resolve_wrapper(x, &in, produced);
	hs_match_cmd(x, &in);
	x->depth--;
	hs_progset_add(produced, in.prog);
}

void
hs_analyse_argv(struct hs_actx *x, const char **argv, const unsigned *aflags, int argc,
		const struct hs_cmd *ctxcmd, struct hs_progset *produced)
{
	struct hs_cmd c = *ctxcmd;

	c.argv = argv;
	c.aflags = aflags;
	c.aprod = NULL;
	c.argc = argc;
	hs_analyse_tail(x, &c, 0, produced);
}

/* A word that is exactly one command substitution, e.g. "$(curl ...)". */
static int
only_subst(const struct hs_cmd *c, int i)
{
	return c->aprod && c->aprod[i] && !strcmp(c->argv[i], "\x01");
}

/*
 * Code that arrives as text (sh -c, eval): analyse it when it is static;
 * when it is the output of a substitution, record its producers so rules
 * such as "download piped to a shell" can match; otherwise it is opaque.
 */
static void
run_code_words(struct hs_actx *x, struct hs_cmd *c, int from, int to, struct hs_progset *produced)
{
	size_t len = 1, pos = 0, l;
	int i, dyn = 0;
	char *text;

	for (i = from; i < to; i++) {
		if (only_subst(c, i)) {
			/* The code is what the substitution prints; rules judge its producers. */
			hs_progset_merge(&c->script_from, c->aprod[i]);
			continue;
		}
		if (c->aflags[i] & HS_W_DYN) {
			dyn = 1;
			if (c->aprod && c->aprod[i])
				hs_progset_merge(&c->script_from, c->aprod[i]);
		}
		len += strlen(c->argv[i]) + 1;
	}
	if (dyn && !c->script_from.n) {
		hs_actx_opaque(x, "code known only at run time");
		return;
	}
	text = hs_arena_alloc(x->a, len);
	if (!text) {
		hs_actx_opaque(x, "command too large to analyse");
		return;
	}
	for (i = from; i < to; i++) {
		if (only_subst(c, i))
			continue;
		if (pos)
			text[pos++] = ' ';
		l = strlen(c->argv[i]);
		memcpy(text + pos, c->argv[i], l);
		pos += l;
	}
	text[pos] = '\0';
	if (pos)
		hs_analyse_script(x, text, pos, &c->stdin_from, produced);
}

/* The script comes from stdin: a pipe, a heredoc or a here-string. */
static void
run_stdin(struct hs_actx *x, struct hs_cmd *c, const char *lang, struct hs_progset *produced)
{
	hs_progset_merge(&c->script_from, &c->stdin_from);
	if (c->stdin_text) {
		if (lang)
			hs_interp_scan(x, lang, c->stdin_text, c, produced);
		else
			hs_analyse_script(x, c->stdin_text, strlen(c->stdin_text), NULL, produced);
	}
}

static void
do_shell(struct hs_actx *x, struct hs_cmd *c, struct hs_progset *produced)
{
	int i = 1, cflag = 0, sflag = 0;
	const char *a;

	while (i < c->argc) {
		a = c->argv[i];
		if (!strcmp(a, "--") || !strcmp(a, "-")) {
			i++;
			break;
		}
		if ((a[0] != '-' && a[0] != '+') || !a[1])
			break;
		if (a[0] == '-' && a[1] == '-') {
			i += (!strcmp(a, "--rcfile") || !strcmp(a, "--init-file")) ? 2 : 1;
			continue;
		}
		i++;
		for (a++; *a; a++) {
			if (*a == 'c')
				cflag = 1;
			else if (*a == 's')
				sflag = 1;
			else if (*a == 'o' || *a == 'O')
				i++;
		}
	}
	if (cflag) {
		if (i < c->argc)
			run_code_words(x, c, i, i + 1, produced);
		return;
	}
	if (i < c->argc && !sflag) {
		/* A script file: unknown to us unless it is a process substitution. */
		if (c->aflags[i] & HS_W_PROC) {
			if (c->aprod && c->aprod[i])
				hs_progset_merge(&c->script_from, c->aprod[i]);
		} else if (c->aflags[i] & HS_W_DYN && !(c->aflags[i] & HS_W_SUBST)) {
			return;
		}
		return;
	}
	run_stdin(x, c, NULL, produced);
}

static void
do_source(struct hs_actx *x, struct hs_cmd *c, struct hs_progset *produced)
{
	if (c->argc < 2)
		return;
	if (c->aprod && c->aprod[1]) {
		hs_progset_merge(&c->script_from, c->aprod[1]);
		return;
	}
	if (!strcmp(c->argv[1], "/dev/stdin") || !strcmp(c->argv[1], "-"))
		run_stdin(x, c, NULL, produced);
}

static const char *
interp_lang(const char *p)
{
	if (p[0] != 'p' && p[0] != 'r' && p[0] != 'n' && p[0] != 'b' && p[0] != 'd')
		return NULL;
	if (!strncmp(p, "python", 6) || !strncmp(p, "pypy", 4))
		return "python";
	if (!strncmp(p, "perl", 4))
		return "perl";
	if (!strncmp(p, "ruby", 4))
		return "ruby";
	if (!strcmp(p, "node") || !strcmp(p, "nodejs") || !strcmp(p, "bun") || !strcmp(p, "deno"))
		return "node";
	if (!strncmp(p, "php", 3))
		return "php";
	return NULL;
}

static void
do_interp(struct hs_actx *x, struct hs_cmd *c, const char *lang, struct hs_progset *produced)
{
	/* Options that carry code, and options that take some other argument. */
	const char *code_opts = !strcmp(lang, "python") ? "c" : !strcmp(lang, "php") ? "r" : "eE";
	const char *arg_opts = !strcmp(lang, "python") ? "mWXQ" : !strcmp(lang, "perl") ? "IMmlx" :
		!strcmp(lang, "ruby") ? "IrCE" : !strcmp(lang, "node") ? "rp" : "dcfz";
	int i = 1, code = -1;
	const char *a, *l;
	struct hs_cmd tmp;

	if (!strcmp(lang, "node") && c->argc > 1 && !strcmp(c->argv[1], "eval"))
		code = 2; /* deno eval CODE */
	while (code < 0 && i < c->argc) {
		a = c->argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (a[1] == '-') {
			if (!strcmp(a, "--eval") || !strcmp(a, "--print"))
				code = i + 1;
			else if (!strncmp(a, "--eval=", 7))
				return; /* rare; treated as plain code below would need splitting */
			i++;
			continue;
		}
		for (l = a + 1; *l; l++) {
			if (strchr(code_opts, *l)) {
				code = l[1] ? -2 : i + 1;
				break;
			}
			if (strchr(arg_opts, *l)) {
				if (*l == 'm' && !strcmp(lang, "python"))
					return; /* python -m module: runs a module, not stdin */
				if (!l[1])
					i++;
				break;
			}
		}
		if (code == -2) {
			/* Code attached to the option: -c'...' */
			const char *body = strchr(a, *l) + 1;

			hs_interp_scan(x, lang, body, c, produced);
			return;
		}
		i++;
	}
	if (code >= 0) {
		if (code >= c->argc)
			return;
		if (c->aflags[code] & HS_W_DYN) {
			if (c->aprod && c->aprod[code]) {
				hs_progset_merge(&c->script_from, c->aprod[code]);
				return;
			}
			tmp = *c;
			(void)tmp;
			hs_actx_opaque(x, "interpreter code known only at run time");
			return;
		}
		hs_interp_scan(x, lang, c->argv[code], c, produced);
		return;
	}
	if (i < c->argc && strcmp(c->argv[i], "-")) {
		if (c->aflags[i] & HS_W_PROC && c->aprod && c->aprod[i])
			hs_progset_merge(&c->script_from, c->aprod[i]);
		return;
	}
	run_stdin(x, c, lang, produced);
}

/* Does s start with one of the words in l (then a blank or the end)? */
static size_t
word_in(const char *s, const char *const *l)
{
	for (; *l; l++) {
		size_t n = strlen(*l);

		if (!strncmp(s, *l, n) && (!s[n] || s[n] == ' ' || s[n] == '\t' || s[n] == '!' || s[n] == '('))
			return n;
	}
	return 0;
}

/*
 * One Ex command given to an editor (vim -c CMD, +CMD): ":!CMD", ":r !CMD"
 * and ":w !CMD" run CMD in a shell; system(), :terminal, :execute and the
 * script interfaces run code that cannot be read here.
 */
static void
ex_command(struct hs_actx *x, struct hs_cmd *c, const char *s, struct hs_progset *produced)
{
	static const char *const mods[] = { "silent!", "silent", "sil!", "sil", "keepalt", "noautocmd", NULL };
	static const char *const reads[] = { "read", "rea", "re", "r", NULL };
	static const char *const writes[] = { "write", "writ", "wri", "wr", "w", NULL };
	static const char *const code[] = { "terminal", "term", "execute", "exe", "call", "py3", "python3", "python",
		"py", "pyx", "lua", "luado", "perl", "ruby", "rubydo", "tcl", "mzscheme", "normal", "norm", NULL };
	size_t n;

	for (;;) {
		s += strspn(s, " \t:");
		if (!(n = word_in(s, mods)))
			break;
		s += n;
	}
	if (*s == '!') {
		hs_analyse_script(x, s + 1, strlen(s + 1), NULL, produced);
		return;
	}
	if ((n = word_in(s, reads)) && s[n + strspn(s + n, " \t")] == '!') {
		s += n + strspn(s + n, " \t") + 1;
		hs_analyse_script(x, s, strlen(s), NULL, produced);
		return;
	}
	if ((n = word_in(s, writes)) && (s[n] == ' ' || s[n] == '\t') && s[n + strspn(s + n, " \t")] == '!') {
		s += n + strspn(s + n, " \t") + 1;
		hs_analyse_script(x, s, strlen(s), NULL, produced);
		return;
	}
	if (word_in(s, code) || strstr(s, "system(") || strstr(s, "systemlist(") || strstr(s, "jobstart("))
		hs_actx_opaque(x, "editor command runs code");
	(void)c;
}

/* vi, vim, nvim, ex, view: -c CMD, --cmd CMD and +CMD are Ex commands run at start. */
static void
do_editor(struct hs_actx *x, struct hs_cmd *c, struct hs_progset *produced)
{
	for (int i = 1; i < c->argc; i++) {
		const char *a = c->argv[i];

		if (!strcmp(a, "--"))
			break;
		if ((!strcmp(a, "-c") || !strcmp(a, "--cmd")) && i + 1 < c->argc) {
			if (c->aflags[i + 1] & HS_W_DYN)
				hs_actx_opaque(x, "editor command known only at run time");
			else
				ex_command(x, c, c->argv[i + 1], produced);
			i++;
		} else if (a[0] == '+' && a[1] && !(a[1] >= '0' && a[1] <= '9') && a[1] != '/') {
			if (c->aflags[i] & HS_W_DYN)
				hs_actx_opaque(x, "editor command known only at run time");
			else
				ex_command(x, c, a + 1, produced);
		}
	}
}

/* awk [-F FS] [-v V=X] [-f FILE | -e/--source CODE | 'PROGRAM'] FILE...: the program's system() and pipes. */
static void
do_awk(struct hs_actx *x, struct hs_cmd *c, struct hs_progset *produced)
{
	int i = 1, from_file = 0, code = -1;
	const char *a;

	while (i < c->argc) {
		a = c->argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1] || (c->aflags[i] & HS_W_DYN))
			break;
		if (!strcmp(a, "-e") || !strcmp(a, "--source")) {
			if (i + 1 < c->argc)
				code = i + 1;
			i += 2;
			continue;
		}
		if (!strncmp(a, "--source=", 9)) {
			hs_interp_scan(x, "awk", a + 9, c, produced);
			i++;
			continue;
		}
		if (!strcmp(a, "-f") || !strcmp(a, "--file") || !strcmp(a, "-E") || !strcmp(a, "--exec") ||
		    !strncmp(a, "--file=", 7) || !strncmp(a, "--exec=", 7) || (a[1] == 'f' && a[2]))
			from_file = 1;
		/* -F FS, -v V=X, -f FILE take the next word unless attached. */
		if ((a[1] == 'F' || a[1] == 'v' || a[1] == 'f' || a[1] == 'E' || a[1] == 'e') && !a[2])
			i++;
		else if (!strcmp(a, "--file") || !strcmp(a, "--exec") || !strcmp(a, "--assign") ||
			 !strcmp(a, "--field-separator"))
			i++;
		i++;
	}
	if (code < 0 && !from_file && i < c->argc)
		code = i;
	if (code < 0 || code >= c->argc)
		return;
	if (c->aflags[code] & HS_W_DYN) {
		hs_actx_opaque(x, "awk program known only at run time");
		return;
	}
	hs_interp_scan(x, "awk", c->argv[code], c, produced);
}

static void
do_find(struct hs_actx *x, struct hs_cmd *c, struct hs_progset *produced)
{
	const char *roots[16], *argv[256];
	unsigned flags[256], rflags[16];
	int nroots = 0, i = 1, j, k, n;

	while (i < c->argc && (!strcmp(c->argv[i], "-H") || !strcmp(c->argv[i], "-L") ||
			       !strcmp(c->argv[i], "-P") || !strncmp(c->argv[i], "-O", 2)))
		i++;
	if (i < c->argc && !strcmp(c->argv[i], "-D"))
		i += 2;
	for (; i < c->argc && c->argv[i][0] != '-' && strcmp(c->argv[i], "(") && strcmp(c->argv[i], "!"); i++) {
		if (nroots < 16) {
			rflags[nroots] = c->aflags[i];
			roots[nroots++] = c->argv[i];
		}
	}
	if (!nroots) {
		rflags[0] = 0;
		roots[nroots++] = ".";
	}
	for (j = i; j < c->argc; j++) {
		const char *a = c->argv[j];

		if (!strcmp(a, "-exec") || !strcmp(a, "-execdir") || !strcmp(a, "-ok") || !strcmp(a, "-okdir")) {
			n = 0;
			for (k = j + 1; k < c->argc && strcmp(c->argv[k], ";") && strcmp(c->argv[k], "+") && n < 256; k++) {
				/* {} is each file found, somewhere under the roots: the root stands for it. */
				if (!strcmp(c->argv[k], "{}")) {
					argv[n] = roots[0];
					flags[n++] = rflags[0];
				} else {
					argv[n] = c->argv[k];
					flags[n++] = c->aflags[k];
				}
			}
			if (n)
				hs_analyse_argv(x, argv, flags, n, c, produced);
			j = k;
		} else if (!strcmp(a, "-delete")) {
			argv[0] = "rm";
			argv[1] = "-r";
			argv[2] = "-f";
			flags[0] = flags[1] = flags[2] = 0;
			for (k = 0; k < nroots; k++) {
				argv[3 + k] = roots[k];
				flags[3 + k] = rflags[k];
			}
			hs_analyse_argv(x, argv, flags, 3 + nroots, c, produced);
		}
	}
}

static void
do_xargs(struct hs_actx *x, struct hs_cmd *c, int start, struct hs_progset *produced)
{
	const char *argv[256], *repl = NULL;
	unsigned flags[256];
	int i, n = 0;

	for (i = 1; i < start; i++) {
		if (!strcmp(c->argv[i], "-I") && i + 1 < start)
			repl = c->argv[i + 1];
		else if (!strncmp(c->argv[i], "-I", 2) && c->argv[i][2])
			repl = c->argv[i] + 2;
		else if (!strncmp(c->argv[i], "--replace=", 10))
			repl = c->argv[i] + 10;
		else if (!strcmp(c->argv[i], "-i") || !strcmp(c->argv[i], "--replace"))
			repl = "{}";
	}
	if (start >= c->argc) {
		return; /* plain xargs runs echo */
	}
	for (i = start; i < c->argc && n < 255; i++) {
		argv[n] = c->argv[i];
		flags[n] = c->aflags[i];
		/* Items read from stdin are run-time values. */
		if (repl && strstr(argv[n], repl)) {
			argv[n] = "\x01";
			flags[n] |= HS_W_DYN;
		}
		n++;
	}
	if (!repl && c->stdin_text) {
		/* echo a b | xargs cmd: the items are known. */
		char *t = hs_arena_strndup(x->a, c->stdin_text, strlen(c->stdin_text)), *tok, *save = NULL;

		for (tok = t ? strtok_r(t, " \t\n", &save) : NULL; tok && n < 255; tok = strtok_r(NULL, " \t\n", &save)) {
			argv[n] = tok;
			flags[n++] = strchr(tok, HS_SH_DYN_CHAR) ? HS_W_DYN : 0;
		}
	} else if (!repl) {
		argv[n] = "\x01";
		flags[n++] = HS_W_DYN;
	}
	hs_analyse_argv(x, argv, flags, n, c, produced);
}

static void
opaque_opt(struct hs_actx *x, const struct hs_cmd *c, const struct hs_opt *o, const char *why)
{
	char msg[160];
	size_t n = o->is_long ? strcspn(o->word, "=:") : 1;

	snprintf(msg, sizeof(msg), "%s option '%s%.*s' of %s", why, o->is_long ? "" : "-",
		 (int)(n > 40 ? 40 : n), o->is_long ? o->word : o->name, c->prog);
	hs_actx_opaque(x, msg);
}

/* Shell code given as an option's operand (su -c, man -P, git -c core.pager=...). */
static void
run_code(struct hs_actx *x, struct hs_cmd *c, const char *code, struct hs_progset *produced)
{
	if (*code)
		hs_analyse_script(x, code, strlen(code), &c->stdin_from, produced);
}

/*
 * env -S STRING: split as GNU env does (quotes, \_ for a blank, \c ends the
 * string, # starts a comment at a word) into words put where STRING was.
 * Returns the number of words, -1 when it cannot be split here, -2 when
 * env itself refuses the string.
 */
static int
env_split(struct hs_actx *x, const char *s, const char **out, unsigned *flags, int max)
{
	char *buf = hs_arena_alloc(x->a, strlen(s) + 1), *o;
	int n = 0, inword = 0;
	char q = 0;

	if (!buf)
		return -1;
	o = buf;
	for (; *s; s++) {
		if (!q && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\v' || *s == '\f' || *s == '\r')) {
			if (inword) {
				*o++ = '\0';
				inword = 0;
			}
			continue;
		}
		if (!q && !inword && *s == '#')
			break;
		if (!inword) {
			if (n >= max)
				return -1;
			flags[n] = 0;
			out[n++] = o;
			inword = 1;
		}
		if (*s == q) {
			q = 0;
		} else if (!q && (*s == '\'' || *s == '"')) {
			q = *s;
		} else if (*s == '\\' && q != '\'' && s[1]) {
			s++;
			if (*s == 'c')
				break;
			if (*s == '_') {
				if (q) {
					*o++ = ' ';
				} else {
					*o++ = '\0';
					inword = 0;
				}
			} else {
				*o++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s == 'r' ? '\r' : *s == 'f' ? '\f' :
					*s == 'v' ? '\v' : *s;
			}
		} else if (*s == '$' && q != '\'') {
			/* Only ${VAR} is expanded (from the environment: a run-time value); env refuses any other $. */
			if (s[1] != '{' || !strchr(s, '}'))
				return -2;
			*o++ = HS_SH_DYN_CHAR;
			flags[n - 1] |= HS_W_DYN;
			s = strchr(s, '}');
		} else {
			*o++ = *s;
		}
	}
	if (q)
		return -1;
	*o = '\0';
	return n;
}

/* env -S: the split words replace the option, and env reads its argv again. */
static void
run_split(struct hs_actx *x, struct hs_cmd *c, const char *str, int rest, struct hs_progset *produced)
{
	const char *argv[256];
	unsigned flags[256];
	int n, i;

	argv[0] = c->argv[0];
	flags[0] = 0;
	n = strchr(str, HS_SH_DYN_CHAR) ? -1 : env_split(x, str, argv + 1, flags + 1, 200);
	if (n == -2)
		return; /* env stops with an error: nothing runs */
	if (n < 0) {
		hs_actx_opaque(x, "env -S string that cannot be split");
		return;
	}
	n++;
	for (i = rest; i < c->argc && n < 256; i++) {
		argv[n] = c->argv[i];
		flags[n++] = c->aflags[i];
	}
	hs_analyse_argv(x, argv, flags, n, c, produced);
}

/* An integer as nice -n reads one; a run-time value may be one. */
static int
is_int(const char *v)
{
	if (!v)
		return 0;
	if (strchr(v, HS_SH_DYN_CHAR))
		return 1;
	v += *v == '-' || *v == '+';
	return *v && strspn(v, "0123456789") == strlen(v);
}

/*
 * Read a wrapper's options from st->i.  Returns 0 with st->i at the first
 * operand (or past "--"), 1 when an option says nothing is run or the
 * command became opaque, 2 when an option asks for argv mode (watch -x).
 * Operands are collected in ops[] when permuting (GNU getopt order).
 */
static int
read_options(struct hs_actx *x, struct hs_cmd *c, const struct hs_progdecl *d, struct hs_optstate *st,
	     int *ops, int *nops, int maxops, struct hs_progset *produced)
{
	struct hs_opt o;
	const char *code, *last = NULL;
	int argv_mode = 0;

	st->unknown_last = 0;
	for (;;) {
		if (!hs_opt_next(d, c->argv, c->argc, st, &o)) {
			if (!ops || st->dashdash || st->i >= c->argc) {
				if (ops && st->dashdash)
					while (st->i < c->argc && *nops < maxops)
						ops[(*nops)++] = st->i++;
				if (last)
					run_code(x, c, last, produced);
				return argv_mode ? 2 : 0;
			}
			if (*nops < maxops)
				ops[(*nops)++] = st->i;
			st->i++;
			continue;
		}
		/* An unknown option of a partial grammar may take the next word as its operand. */
		st->unknown_last = o.kind == HS_OK_UNKNOWN && !st->cl && !(o.is_long && strchr(o.word, '='));
		switch (o.kind) {
		case HS_OK_UNKNOWN:
			if (d->complete) {
				opaque_opt(x, c, &o, "unknown");
				return 1;
			}
			break;
		case HS_OK_CODE:
			if ((code = hs_opt_code(&o)) && d->last_wins)
				last = code;
			else if (code)
				run_code(x, c, code, produced);
			break;
		case HS_OK_SPLIT:
			if (o.value)
				run_split(x, c, o.value, st->i, produced);
			return 1;
		case HS_OK_STOP:
			return 1;
		case HS_OK_OPAQUE:
			opaque_opt(x, c, &o, "run-time code in");
			return 1;
		case HS_OK_ARGV:
			argv_mode = 1;
			break;
		case HS_OK_INT:
			if (!is_int(o.value))
				return 1; /* "invalid adjustment": the program stops */
			break;
		case HS_OK_CHDIR:
			/* The command runs there: relative paths are judged from it. */
			if (o.value)
				c->cwd = hs_cwd_enter(x, c->cwd, o.value, strchr(o.value, HS_SH_DYN_CHAR) ? HS_W_DYN : 0,
				                      NULL);
			break;
		}
	}
}

/*
 * valgrind --tool memcheck ./a: with a partial grammar, the word after an
 * unknown option is either its operand or the command.  The command was
 * analysed as the word at i; analyse the other reading too, by reading
 * the wrapper again without that word.
 */
static void
other_reading(struct hs_actx *x, struct hs_cmd *c, int i, struct hs_progset *produced)
{
	const char **argv;
	unsigned *flags;
	int n = 0, k;

	if (i >= c->argc)
		return;
	argv = hs_arena_alloc(x->a, sizeof(*argv) * (size_t)c->argc);
	flags = hs_arena_alloc(x->a, sizeof(*flags) * (size_t)c->argc);
	if (!argv || !flags) {
		hs_actx_opaque(x, "command too large to analyse");
		return;
	}
	for (k = 0; k < c->argc; k++) {
		if (k == i)
			continue;
		argv[n] = c->argv[k];
		flags[n++] = c->aflags[k];
	}
	hs_analyse_argv(x, argv, flags, n, c, produced);
}

/* A copy of c with env extended by the NAME=VALUE words argv[from..to). */
static void
add_env(struct hs_actx *x, const struct hs_cmd *c, struct hs_cmd *in, int from, int to)
{
	const char **env;
	int j, n = 0;

	*in = *c;
	if (from >= to)
		return;
	env = hs_arena_alloc(x->a, sizeof(*env) * (size_t)(c->nenv + to - from));
	if (!env)
		return;
	for (j = 0; j < c->nenv; j++)
		env[n++] = c->env[j];
	for (j = from; j < to; j++)
		env[n++] = c->argv[j];
	in->env = env;
	in->nenv = n;
}

/* Is word spelled as one of d's code options (flock FILE -c CMD)? */
static int
is_code_word(const struct hs_progdecl *d, const char *a)
{
	struct hs_optstate st = { .i = 0 };
	struct hs_opt o;

	return a[0] == '-' && hs_opt_next(d, &a, 1, &st, &o) && o.kind == HS_OK_CODE && !st.cl;
}

/* sudo, env, timeout, nice, chroot, flock...: options, NAME=VALUE words, operands, the command. */
static void
do_command(struct hs_actx *x, struct hs_cmd *c, const struct hs_progdecl *d, struct hs_progset *produced)
{
	struct hs_optstate st = { .i = 1 };
	struct hs_cmd in;
	int k, a0, r;

	if (d->sub) {
		if (c->argc < 2 || strcmp(c->argv[1], d->sub))
			return;
		st.i = 2;
	}
	r = read_options(x, c, d, &st, NULL, NULL, 0, produced);
	if (r == 1)
		return;
	if (st.unknown_last && !st.dashdash)
		other_reading(x, c, st.i, produced);
	/* GNU env reads a lone "-" as -i. */
	if (!strcmp(c->prog, "env") && st.i < c->argc && !strcmp(c->argv[st.i], "-"))
		st.i++;
	a0 = st.i;
	/* GNU env and sudo take every word holding '=' before the command as an assignment. */
	while (d->assigns && st.i < c->argc && strchr(c->argv[st.i], '=') && c->argv[st.i][0] != '=' &&
	       !(c->aflags[st.i] & HS_W_DYN && c->argv[st.i][0] == HS_SH_DYN_CHAR))
		st.i++;
	add_env(x, c, &in, a0, st.i);
	hs_analyse_env_code(x, c->argv + a0, st.i - a0);
	if (!strcmp(c->prog, "xargs")) {
		do_xargs(x, c, st.i, produced);
		return;
	}
	/* timeout echo sh -c x: "echo" is no duration, so timeout stops and nothing runs. */
	if (d->operand_glob && st.i < c->argc && !strchr(c->argv[st.i], HS_SH_DYN_CHAR) &&
	    fnmatch(d->operand_glob, c->argv[st.i], 0))
		return;
	for (k = 0; k < d->operands && st.i < c->argc; k++)
		st.i++;
	if (st.i + 1 < c->argc && is_code_word(d, c->argv[st.i])) {
		run_code_words(x, c, st.i + 1, st.i + 2, produced);
		return;
	}
	hs_analyse_tail(x, &in, st.i, produced);
}

/* su, runuser: -c code (every one given: whichever wins is seen), [-] USER, then arguments for the shell. */
static void
do_su(struct hs_actx *x, struct hs_cmd *c, const struct hs_progdecl *d, struct hs_progset *produced)
{
	struct hs_optstate st = { .i = 1 };
	const char *argv[130], *shell = "sh";
	unsigned flags[130];
	int ops[128], nops = 0, k = 0, n = 0, i, command_mode = 0, has_code = 0;
	struct hs_optstate s2 = { .i = 1 };
	struct hs_opt o;

	/* The shell (-s) and command mode (runuser -u USER CMD) are read first. */
	while ((s2.i < c->argc || s2.cl) && !s2.dashdash) {
		if (!hs_opt_next(d, c->argv, c->argc, &s2, &o)) {
			s2.i++;
			continue;
		}
		if (o.kind == HS_OK_CODE)
			has_code = 1;
		if (o.value && o.len == 5 && !memcmp(o.name, "shell", 5))
			shell = o.value;
		else if (o.value && o.len == 1 && o.name[0] == 's')
			shell = o.value;
		else if (((o.len == 1 && o.name[0] == 'u') || (o.len == 4 && !memcmp(o.name, "user", 4))) &&
			 !strcmp(c->prog, "runuser"))
			command_mode = 1;
	}
	/* runuser: -u and -c/--command/--session-command exclude each other, and runuser stops. */
	if (command_mode && has_code)
		return;
	if (read_options(x, c, d, &st, ops, &nops, 128, produced) == 1)
		return;
	if (command_mode) {
		for (i = 0; i < nops && n < 128; i++) {
			argv[n] = c->argv[ops[i]];
			flags[n++] = c->aflags[ops[i]];
		}
		if (n)
			hs_analyse_argv(x, argv, flags, n, c, produced);
		return;
	}
	if (k < nops && !strcmp(c->argv[ops[k]], "-"))
		k++;
	k++; /* the user */
	if (k >= nops)
		return;
	argv[n] = shell;
	flags[n++] = 0;
	for (; k < nops && n < 128; k++) {
		argv[n] = c->argv[ops[k]];
		flags[n++] = c->aflags[ops[k]];
	}
	hs_analyse_argv(x, argv, flags, n, c, produced);
}

/* man, ag, rg, sort, tar, git, script: only code in option operands runs. */
static void
do_options(struct hs_actx *x, struct hs_cmd *c, const struct hs_progdecl *d, struct hs_progset *produced)
{
	struct hs_optstate st = { .i = 1 };
	struct hs_opt o;

	while (st.i < c->argc || st.cl) {
		if (!hs_opt_next(d, c->argv, c->argc, &st, &o)) {
			if (st.dashdash)
				return;
			if (d->single_dash && st.i < c->argc) {
				/* pwsh Remove-Item -Recurse x: the words from the first operand on are the command. */
				run_code_words(x, c, st.i, c->argc, produced);
				return;
			}
			st.i++;
			continue;
		}
		if (o.kind == HS_OK_CODE && hs_opt_code(&o))
			run_code(x, c, hs_opt_code(&o), produced);
		else if (o.kind == HS_OK_OPAQUE)
			opaque_opt(x, c, &o, "run-time code in");
		else if (o.kind == HS_OK_UNKNOWN && d->complete)
			opaque_opt(x, c, &o, "unknown");
	}
}

/* ssh [opts] HOST [opts] [COMMAND...]: the command, or stdin, is shell code run there. */
static void
do_ssh(struct hs_actx *x, struct hs_cmd *c, const struct hs_progdecl *d, struct hs_progset *produced)
{
	struct hs_optstate st = { .i = 1 };

	if (read_options(x, c, d, &st, NULL, NULL, 0, produced) == 1 || st.i >= c->argc)
		return;
	st.i++;
	st.dashdash = 0;
	if (read_options(x, c, d, &st, NULL, NULL, 0, produced) == 1)
		return;
	if (st.i < c->argc)
		run_code_words(x, c, st.i, c->argc, produced);
	else
		run_stdin(x, c, NULL, produced);
}

/* watch [opts] COMMAND: run by sh -c, or as argv with -x. */
static void
do_watch(struct hs_actx *x, struct hs_cmd *c, const struct hs_progdecl *d, struct hs_progset *produced)
{
	struct hs_optstate st = { .i = 1 };
	int r = read_options(x, c, d, &st, NULL, NULL, 0, produced);

	if (r == 1 || st.i >= c->argc)
		return;
	if (r == 2)
		hs_analyse_tail(x, c, st.i, produced);
	else
		run_code_words(x, c, st.i, c->argc, produced);
}

/* kubectl exec POD -- COMMAND. */
static void
do_dashdash(struct hs_actx *x, struct hs_cmd *c, const struct hs_progdecl *d, struct hs_progset *produced)
{
	int i;

	if (d->sub && (c->argc < 2 || strcmp(c->argv[1], d->sub)))
		return;
	for (i = 1; i < c->argc; i++)
		if (!strcmp(c->argv[i], "--")) {
			hs_analyse_tail(x, c, i + 1, produced);
			return;
		}
}

/*
 * parallel [opts] COMMAND ::: ARGS: each argument, quoted, replaces {} (or
 * is appended), and the line is run by a shell.  With no ::: the
 * arguments come from stdin: run-time values.  With no COMMAND the
 * arguments (or the lines of stdin) are the commands.
 */
static void
do_parallel(struct hs_actx *x, struct hs_cmd *c, const struct hs_progdecl *d, struct hs_progset *produced)
{
	struct hs_optstate st = { .i = 1 };
	int end, i, j, runs = 0, replaced;
	size_t nrepl = 1;
	size_t len = 16, pos;
	char *buf;
	const char *arg, *p;

	if (read_options(x, c, d, &st, NULL, NULL, 0, produced) == 1)
		return;
	if (st.unknown_last && !st.dashdash)
		other_reading(x, c, st.i, produced);
	for (end = st.i; end < c->argc && strncmp(c->argv[end], ":::", 3); end++) {
		len += strlen(c->argv[end]) + 1;
		for (p = c->argv[end]; (p = strchr(p, '{')); p++)
			nrepl++;
	}
	if (end == st.i) {
		/* No command: each argument (after :::, else each line of stdin) is one. */
		if (end >= c->argc)
			run_stdin(x, c, NULL, produced);
		for (j = end + 1; j < c->argc; j++)
			if (strncmp(c->argv[j], ":::", 3))
				run_code_words(x, c, j, j + 1, produced);
		return;
	}
	for (j = end + 1; runs < 8; j++) {
		if (end < c->argc && !strncmp(c->argv[end], "::::", 4))
			j = c->argc; /* arguments from files */
		arg = j < c->argc && end < c->argc ? c->argv[j] : "\x01";
		if (j < c->argc && !strncmp(arg, ":::", 3))
			continue;
		buf = hs_arena_alloc(x->a, len + nrepl * (strlen(arg) + 3) + 8);
		if (!buf)
			return;
		pos = 0;
		replaced = 0;
		for (i = st.i; i < end; i++) {
			if (pos)
				buf[pos++] = ' ';
			for (p = c->argv[i]; *p; p++) {
				if (p[0] == '{' && strchr(p, '}') && strchr(p, '}') - p < 8) {
					pos += (size_t)sprintf(buf + pos, *arg == HS_SH_DYN_CHAR ? "%s" : "'%s'", arg);
					p = strchr(p, '}');
					replaced = 1;
				} else {
					buf[pos++] = *p;
				}
			}
		}
		buf[pos] = '\0';
		if (!replaced)
			pos += (size_t)sprintf(buf + pos, *arg == HS_SH_DYN_CHAR ? " %s" : " '%s'", arg);
		hs_analyse_script(x, buf, pos, &c->stdin_from, produced);
		runs++;
		if (j >= c->argc)
			break;
	}
}

/* trap 'CODE' SIGNAL...: the first operand is code the shell runs later. */
static void
do_code_operand(struct hs_actx *x, struct hs_cmd *c, const struct hs_progdecl *d, struct hs_progset *produced)
{
	struct hs_optstate st = { .i = 1 };

	if (read_options(x, c, d, &st, NULL, NULL, 0, produced) == 1 || st.i >= c->argc)
		return;
	run_code_words(x, c, st.i, st.i + 1, produced);
}

int
hs_resolve_wrapper(struct hs_actx *x, struct hs_cmd *c, struct hs_progset *produced)
{
	const struct hs_pidx *e = hs_policy_prog(x->pol, c->prog);
	const struct hs_progdecl *d = e ? e->decl : NULL, *sd;
	const char *lang;
	char key[128];

	if (e && e->has_sub && c->argc > 1 && !(c->aflags[1] & HS_W_DYN) &&
	    (size_t)snprintf(key, sizeof(key), "%s %s", c->prog, c->argv[1]) < sizeof(key) &&
	    (sd = hs_policy_decl(x->pol, key)) && sd->runs)
		d = sd; /* docker exec: the subcommand has a grammar of its own */
	if (!d || !d->runs) {
		if (!strcmp(c->prog, "awk") || !strcmp(c->prog, "gawk") || !strcmp(c->prog, "mawk") ||
		    !strcmp(c->prog, "nawk")) {
			do_awk(x, c, produced);
			return 1;
		}
		if (!strcmp(c->prog, "vi") || !strcmp(c->prog, "vim") || !strcmp(c->prog, "nvim") ||
		    !strcmp(c->prog, "ex") || !strcmp(c->prog, "view") || !strcmp(c->prog, "vimdiff") ||
		    !strcmp(c->prog, "gvim") || !strcmp(c->prog, "rvim")) {
			do_editor(x, c, produced);
			return 1;
		}
		if ((lang = interp_lang(c->prog))) {
			do_interp(x, c, lang, produced);
			return 1;
		}
		return 0;
	}
	switch (d->runs) {
	case HS_RUN_SHELL:
		do_shell(x, c, produced);
		break;
	case HS_RUN_EVAL:
		run_code_words(x, c, 1, c->argc, produced);
		break;
	case HS_RUN_SOURCE:
		do_source(x, c, produced);
		break;
	case HS_RUN_FIND:
		do_find(x, c, produced);
		break;
	case HS_RUN_WATCH:
		do_watch(x, c, d, produced);
		break;
	case HS_RUN_SU:
		do_su(x, c, d, produced);
		break;
	case HS_RUN_SSH:
		do_ssh(x, c, d, produced);
		break;
	case HS_RUN_PARALLEL:
		do_parallel(x, c, d, produced);
		break;
	case HS_RUN_STDIN:
		do_options(x, c, d, produced);
		run_stdin(x, c, NULL, produced);
		break;
	case HS_RUN_OPTIONS:
		do_options(x, c, d, produced);
		break;
	case HS_RUN_DASHDASH:
		do_dashdash(x, c, d, produced);
		break;
	case HS_RUN_CODE_OPERAND:
		do_code_operand(x, c, d, produced);
		break;
	default:
		do_command(x, c, d, produced);
		break;
	}
	return 1;
}
