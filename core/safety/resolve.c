/*
 * resolve.c - see through wrappers to the commands they run.
 *
 * sudo, env, timeout, nice, xargs, find -exec, sh -c, eval, source and
 * friends run another command (or a script) that matters more than they
 * do.  How each of them reads its argv is analyser knowledge, kept in the
 * table below; what is dangerous is policy, kept in the rule files.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/internal.h"

/* How the resolver treats a program name. */
enum resolve_kind { R_WRAPPER = 0, R_SHELL, R_EVAL, R_SOURCE, R_FIND, R_XARGS, R_WATCH, R_SU, R_SSH };

struct wrapper {
	const char *name;
	int kind;                     /* enum resolve_kind */
	const char *short_arg;        /* option letters that take an argument */
	const char *const *long_arg;  /* long options that take an argument */
	const char *no_cmd;           /* short options meaning nothing is run */
	int skip_pos;                 /* positional words before the command */
	int assigns;                  /* NAME=VALUE words may precede the command */
	const char *sub;              /* required subcommand ("run" for poetry run) */
};

static const char *const sudo_long[] = { "user", "group", "prompt", "chdir", "chroot", "close-from",
	"host", "role", "type", "command-timeout", "other-user", NULL };
static const char *const env_long[] = { "unset", "chdir", "block-signal", "default-signal", "ignore-signal", NULL };
static const char *const timeout_long[] = { "signal", "kill-after", NULL };
static const char *const nice_long[] = { "adjustment", NULL };
static const char *const time_long[] = { "format", "output", NULL };
static const char *const stdbuf_long[] = { "input", "output", "error", NULL };
static const char *const xargs_long[] = { "arg-file", "delimiter", "eof", "replace", "max-lines", "max-args",
	"max-procs", "max-chars", "process-slot-var", NULL };
static const char *const none_long[] = { NULL };

/*
 * Every program name the resolver knows, kept sorted by strcmp() for bsearch():
 * shells, eval, source, find, xargs, watch, su-likes, ssh and the generic
 * wrappers (short_arg is NULL for names that are not generic wrappers).
 */
static const struct wrapper wrappers[] = {
	{ ".", R_SOURCE, NULL, none_long, "", 0, 0, NULL },
	{ "ash", R_SHELL, NULL, none_long, "", 0, 0, NULL },
	{ "bash", R_SHELL, NULL, none_long, "", 0, 0, NULL },
	{ "builtin", R_WRAPPER, "", none_long, "", 0, 0, NULL },
	{ "bundle", R_WRAPPER, "", none_long, "", 0, 0, "exec" },
	{ "busybox", R_WRAPPER, "", none_long, "", 0, 0, NULL },
	{ "catchsegv", R_WRAPPER, "", none_long, "", 0, 0, NULL },
	{ "chroot", R_WRAPPER, "", none_long, "", 1, 0, NULL },
	{ "chrt", R_WRAPPER, "", none_long, "p", 1, 0, NULL },
	{ "command", R_WRAPPER, "", none_long, "vV", 0, 0, NULL },
	{ "dash", R_SHELL, NULL, none_long, "", 0, 0, NULL },
	{ "dbus-run-session", R_WRAPPER, "", none_long, "", 0, 0, NULL },
	{ "doas", R_WRAPPER, "uC", none_long, "", 0, 0, NULL },
	{ "env", R_WRAPPER, "uC", env_long, "", 0, 1, NULL },
	{ "eval", R_EVAL, NULL, none_long, "", 0, 0, NULL },
	{ "exec", R_WRAPPER, "a", none_long, "", 0, 0, NULL },
	{ "fakeroot", R_WRAPPER, "", none_long, "", 0, 0, NULL },
	{ "find", R_FIND, NULL, none_long, "", 0, 0, NULL },
	{ "fish", R_SHELL, NULL, none_long, "", 0, 0, NULL },
	{ "flock", R_WRAPPER, "wEc", none_long, "", 1, 0, NULL },
	{ "ionice", R_WRAPPER, "cnp", none_long, "", 0, 0, NULL },
	{ "ksh", R_SHELL, NULL, none_long, "", 0, 0, NULL },
	{ "ltrace", R_WRAPPER, "aAeEnoOpsSuX", none_long, "", 0, 0, NULL },
	{ "mksh", R_SHELL, NULL, none_long, "", 0, 0, NULL },
	{ "nice", R_WRAPPER, "n", nice_long, "", 0, 0, NULL },
	{ "nohup", R_WRAPPER, "", none_long, "", 0, 0, NULL },
	{ "nsenter", R_WRAPPER, "tSGwr", none_long, "", 0, 0, NULL },
	{ "pdm", R_WRAPPER, "", none_long, "", 0, 0, "run" },
	{ "pipenv", R_WRAPPER, "", none_long, "", 0, 0, "run" },
	{ "poetry", R_WRAPPER, "", none_long, "", 0, 0, "run" },
	{ "posh", R_SHELL, NULL, none_long, "", 0, 0, NULL },
	{ "proxychains", R_WRAPPER, "f", none_long, "", 0, 0, NULL },
	{ "proxychains4", R_WRAPPER, "f", none_long, "", 0, 0, NULL },
	{ "rbash", R_SHELL, NULL, none_long, "", 0, 0, NULL },
	{ "runuser", R_SU, "ugG", none_long, "", 0, 0, NULL },
	{ "script", R_SU, NULL, none_long, "", 0, 0, NULL },
	{ "setsid", R_WRAPPER, "", none_long, "", 0, 0, NULL },
	{ "sg", R_WRAPPER, "", none_long, "", 1, 0, NULL },
	{ "sh", R_SHELL, NULL, none_long, "", 0, 0, NULL },
	{ "source", R_SOURCE, NULL, none_long, "", 0, 0, NULL },
	{ "ssh", R_SSH, NULL, none_long, "", 0, 0, NULL },
	{ "stdbuf", R_WRAPPER, "ioe", stdbuf_long, "", 0, 0, NULL },
	{ "strace", R_WRAPPER, "abeEIoOpPsSuUX", none_long, "", 0, 0, NULL },
	{ "su", R_SU, NULL, none_long, "", 0, 0, NULL },
	{ "sudo", R_WRAPPER, "CDghpRrtTUu", sudo_long, "lVvK", 0, 1, NULL },
	{ "systemd-run", R_WRAPPER, "pEuMH", none_long, "", 0, 0, NULL },
	{ "taskset", R_WRAPPER, "", none_long, "p", 1, 0, NULL },
	{ "time", R_WRAPPER, "fo", time_long, "", 0, 0, NULL },
	{ "timeout", R_WRAPPER, "sk", timeout_long, "", 1, 0, NULL },
	{ "torsocks", R_WRAPPER, "", none_long, "", 0, 0, NULL },
	{ "unbuffer", R_WRAPPER, "", none_long, "", 0, 0, NULL },
	{ "unshare", R_WRAPPER, "", none_long, "", 0, 0, NULL },
	{ "uv", R_WRAPPER, "", none_long, "", 0, 0, "run" },
	{ "valgrind", R_WRAPPER, "", none_long, "", 0, 0, NULL },
	{ "watch", R_WATCH, NULL, none_long, "", 0, 0, NULL },
	{ "xargs", R_XARGS, "aEdILnPs", xargs_long, "", 0, 0, NULL },
	{ "xvfb-run", R_WRAPPER, "nsef", none_long, "", 0, 0, NULL },
	{ "yash", R_SHELL, NULL, none_long, "", 0, 0, NULL },
	{ "zsh", R_SHELL, NULL, none_long, "", 0, 0, NULL },
};


static int
is_assign(const char *s)
{
	const char *eq = strchr(s, '=');
	const char *p;

	if (!eq || eq == s || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (p = s; p < eq; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return 0;
	return 1;
}

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

/* Join argv[from..] with spaces: the text eval, watch or ssh hand to a shell. */
static char *
join_args(struct hs_actx *x, const struct hs_cmd *c, int from)
{
	size_t len = 1, pos = 0, l;
	char *buf;
	int i;

	for (i = from; i < c->argc; i++)
		len += strlen(c->argv[i]) + 1;
	buf = hs_arena_alloc(x->a, len);
	if (!buf)
		return NULL;
	for (i = from; i < c->argc; i++) {
		if (pos)
			buf[pos++] = ' ';
		l = strlen(c->argv[i]);
		memcpy(buf + pos, c->argv[i], l);
		pos += l;
	}
	buf[pos] = '\0';
	return buf;
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
do_xargs(struct hs_actx *x, struct hs_cmd *c, const struct wrapper *w, int start, struct hs_progset *produced)
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
	(void)w;
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
do_generic(struct hs_actx *x, struct hs_cmd *c, const struct wrapper *w, struct hs_progset *produced)
{
	int i = 1, skip = w->skip_pos, nenv = c->nenv, j;
	const char *a, *split = NULL;
	const char **env = NULL;
	struct hs_cmd in;
	char *text;

	if (w->sub) {
		if (c->argc < 2 || strcmp(c->argv[1], w->sub))
			return;
		i = 2;
	}
	while (i < c->argc) {
		a = c->argv[i];
		if (w->assigns && is_assign(a) && !(c->aflags[i] & HS_W_DYN && a[0] == HS_SH_DYN_CHAR)) {
			if (!env) {
				env = hs_arena_alloc(x->a, sizeof(*env) * (size_t)(c->nenv + c->argc));
				if (!env)
					return;
				for (j = 0; j < c->nenv; j++)
					env[j] = c->env[j];
			}
			env[nenv++] = a;
			i++;
			continue;
		}
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (a[1] == '-') {
			const char *eq = strchr(a, '=');
			size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			int k, takes = 0;

			for (k = 0; w->long_arg[k]; k++)
				if (strlen(w->long_arg[k]) == nl && !strncmp(w->long_arg[k], a + 2, nl))
					takes = 1;
			if (!strcmp(w->name, "env") && !strncmp(a, "--split-string", 14))
				split = eq ? eq + 1 : (i + 1 < c->argc ? c->argv[i + 1] : NULL), takes = !eq;
			i += (takes && !eq) ? 2 : 1;
			continue;
		}
		for (a++; *a; a++) {
			if (strchr(w->no_cmd, *a))
				return;
			if (!strcmp(w->name, "env") && *a == 'S') {
				split = a[1] ? a + 1 : (i + 1 < c->argc ? c->argv[i + 1] : NULL);
				if (!a[1])
					i++;
				break;
			}
			if (strchr(w->short_arg, *a)) {
				if (!a[1])
					i++;
				break;
			}
		}
		i++;
	}
	if (!strcmp(w->name, "xargs")) {
		do_xargs(x, c, w, i, produced);
		return;
	}
	in = *c;
	if (env) {
		in.env = env;
		in.nenv = nenv;
	}
	if (split) {
		/* env -S 'prog args' REST: the string is split into words. */
		in.argc = c->argc;
		text = join_args(x, c, i);
		if (text) {
			size_t l = strlen(split) + strlen(text) + 2;
			char *all = hs_arena_alloc(x->a, l);

			if (all) {
				snprintf(all, l, "%s %s", split, text);
				hs_analyse_script(x, all, strlen(all), &c->stdin_from, produced);
			}
		}
		return;
	}
	while (skip-- > 0 && i < c->argc)
		i++;
	hs_analyse_tail(x, &in, i, produced);
}

/* The value of -L (or --long) in argv, or NULL. */
static int
find_opt(const struct hs_cmd *c, char letter, const char *longname)
{
	int i;
	const char *a;

	for (i = 1; i < c->argc; i++) {
		a = c->argv[i];
		if (!strcmp(a, "--"))
			return -1;
		if (a[0] == '-' && a[1] != '-' && strchr(a + 1, letter) && !a[strchr(a + 1, letter) - a + 1])
			return i + 1 < c->argc ? i + 1 : -1;
		if (longname && a[0] == '-' && a[1] == '-' && !strcmp(a + 2, longname))
			return i + 1 < c->argc ? i + 1 : -1;
	}
	return -1;
}

static int
wrapper_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct wrapper *)elem)->name);
}

int
hs_resolve_table_sorted(void)
{
	for (size_t i = 1; i < sizeof(wrappers) / sizeof(wrappers[0]); i++)
		if (strcmp(wrappers[i - 1].name, wrappers[i].name) >= 0)
			return 0;
	return 1;
}

int
hs_resolve_wrapper(struct hs_actx *x, struct hs_cmd *c, struct hs_progset *produced)
{
	const char *p = c->prog, *lang;
	static const char *const ssh_args = "BbcDEeFIiJLlmOoPpQRSWw";
	const struct wrapper *w;
	int i;

	/* No name in the table starts like an interpreter: the order of the two looks is free. */
	w = bsearch(p, wrappers, sizeof(wrappers) / sizeof(wrappers[0]), sizeof(wrappers[0]), wrapper_cmp);
	if (!w) {
		if ((lang = interp_lang(p))) {
			do_interp(x, c, lang, produced);
			return 1;
		}
		return 0;
	}
	switch (w->kind) {
	case R_SHELL:
		do_shell(x, c, produced);
		return 1;
	case R_EVAL:
		run_code_words(x, c, 1, c->argc, produced);
		return 1;
	case R_SOURCE:
		do_source(x, c, produced);
		return 1;
	case R_FIND:
		do_find(x, c, produced);
		return 1;
	case R_WATCH:
		for (i = 1; i < c->argc && c->argv[i][0] == '-'; i++)
			if (!strcmp(c->argv[i], "-n") || !strcmp(c->argv[i], "--interval"))
				i++;
		if (i < c->argc)
			run_code_words(x, c, i, c->argc, produced);
		return 1;
	case R_SU:
		i = find_opt(c, 'c', "command");
		if (i > 0) {
			run_code_words(x, c, i, i + 1, produced);
			return 1;
		}
		if (!w->short_arg)
			return 0; /* su, script: not wrappers otherwise */
		do_generic(x, c, w, produced); /* runuser */
		return 1;
	case R_SSH:
		/* The remote command is shell text run on the other host. */
		for (i = 1; i < c->argc && c->argv[i][0] == '-'; i++)
			if (!c->argv[i][2] && strchr(ssh_args, c->argv[i][1]))
				i++;
		if (i + 1 < c->argc)
			run_code_words(x, c, i + 1, c->argc, produced);
		return 1;
	case R_XARGS:
	default:
		do_generic(x, c, w, produced);
		return 1;
	}
}
