/* SPDX-License-Identifier: MIT */
/*
 * interp.c - shell commands inside interpreter one-liners.
 *
 * "python3 -c 'import os; os.system(\"rm -rf /\")'" runs a shell command
 * that no shell parser sees.  This scanner is not a Python (or Perl, Ruby,
 * Node, PHP, awk) parser: it tokenises enough (identifiers, string literals,
 * brackets, comments) to find calls of the functions that run programs,
 * and hands their literal arguments to the shell analyser.  Recursive
 * deletions and file writes through the standard library become the
 * equivalent rm/tee commands, so the same rules judge them.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>

#include "core/safety/internal.h"

enum lang { L_PY, L_PERL, L_RUBY, L_NODE, L_PHP, L_AWK };

struct scan {
	const char *s;
	size_t n, i;
	enum lang lang;
};

#define MAX_LITS 32

struct call {
	const char *lits[MAX_LITS];
	int nlits;
	int nonlit;      /* a non-literal argument (variable, expression) */
	int list;        /* arguments given as a list/array */
	int recursive;   /* "recursive" appears (fs.rmSync(x, {recursive: true})) */
};

static const char *const shell_calls[][16] = {
	[L_PY] = { "system", "popen", "check_output", "check_call", "getoutput", "getstatusoutput", "Popen",
		"subprocess.run", "subprocess.call", "sp.run", "sp.call", "spawn", "execv", "execvp", "execl",
		"execlp" },
	[L_PERL] = { "system", "exec", NULL },
	[L_RUBY] = { "system", "exec", "spawn", "popen", "capture2", "capture2e", "capture3", "popen3", NULL },
	[L_NODE] = { "exec", "execSync", "spawn", "spawnSync", "execFile", "execFileSync", NULL },
	[L_PHP] = { "system", "exec", "shell_exec", "passthru", "popen", "proc_open", "pcntl_exec", NULL },
	[L_AWK] = { "system", NULL },
};

static const char *const rm_calls[] = { "rmtree", "rm_rf", "rm_r", "remove_tree", "rmSync", "rmdirSync",
	"FileUtils.rm_rf", NULL };
static const char *const write_calls[] = { "writeFileSync", "appendFileSync", "File.write", "file_put_contents",
	"write_text", NULL };

static int
name_is(const char *id, size_t len, const char *want)
{
	size_t wl = strlen(want);
	const char *last;

	if (strchr(want, '.'))
		return len >= wl && !memcmp(id + len - wl, want, wl) && (len == wl || id[len - wl - 1] == '.');
	last = id + len;
	while (last > id && last[-1] != '.')
		last--;
	return (size_t)(id + len - last) == wl && !memcmp(last, want, wl);
}

static int
in_names(const char *id, size_t len, const char *const *l, size_t max)
{
	size_t k;

	for (k = 0; k < max && l[k]; k++)
		if (name_is(id, len, l[k]))
			return 1;
	return 0;
}

static int
hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

size_t
hs_unescape(const char *s, size_t n, char *out)
{
	static const char simple[] = "n\nt\tr\r0\0a\ab\bf\fv\ve\033";
	unsigned long v = 0;
	size_t i = 1, max = 0;
	const char *p;

	if (n < 2) {
		*out = s[0];
		return 1;
	}
	if (s[1] == 'x')
		max = 2;
	else if (s[1] == 'u')
		max = 4;
	else if (s[1] == 'U')
		max = 8;
	if (max) {
		/* \xHH, \uHHHH, \u{H...} (JavaScript), \UHHHHHHHH (Python). */
		int brace = s[1] == 'u' && n > 2 && s[2] == '{';

		i = brace ? 3 : 2;
		for (; i < n && (brace || i < 2 + max) && hexval(s[i]) >= 0; i++)
			v = v * 16 + (unsigned long)hexval(s[i]);
		if (brace && i < n && s[i] == '}')
			i++;
		if (i == 2 || (brace && i == 3)) {
			*out = s[1];
			return 2;
		}
		/* Past ASCII it names no program or option: one stand-in byte. */
		*out = v < 0x80 ? (char)v : '?';
		return i;
	}
	if (s[1] >= '0' && s[1] <= '7' && n > 2 && s[2] >= '0' && s[2] <= '7') {
		/* Octal \NNN (Perl, Ruby, PHP, Python, old JavaScript). */
		for (; i < n && i < 4 && s[i] >= '0' && s[i] <= '7'; i++)
			v = v * 8 + (unsigned long)(s[i] - '0');
		*out = v < 0x80 ? (char)v : '?';
		return i;
	}
	for (p = simple; *p; p += 2)
		if (*p == s[1]) {
			*out = p[1];
			return 2;
		}
	*out = s[1];
	return 2;
}

/* Decode a string literal at sc->i into buf; returns 1 when one was read. */
static int
read_literal(struct hs_actx *x, struct scan *sc, const char **out)
{
	char q = sc->s[sc->i], *buf;
	size_t start, cap, len = 0;
	int triple = 0;

	if (q != '\'' && q != '"' && q != '`')
		return 0;
	if (sc->lang == L_PY && sc->i + 2 < sc->n && sc->s[sc->i + 1] == q && sc->s[sc->i + 2] == q) {
		triple = 1;
		sc->i += 2;
	}
	start = ++sc->i;
	cap = sc->n - start + 1;
	buf = hs_arena_alloc(x->a, cap);
	if (!buf)
		return 0;
	while (sc->i < sc->n) {
		char c = sc->s[sc->i];

		if (c == '\\' && sc->i + 1 < sc->n) {
			sc->i += hs_unescape(sc->s + sc->i, sc->n - sc->i, buf + len++);
			continue;
		}
		if (c == q) {
			if (!triple) {
				sc->i++;
				break;
			}
			if (sc->i + 2 < sc->n && sc->s[sc->i + 1] == q && sc->s[sc->i + 2] == q) {
				sc->i += 3;
				break;
			}
		}
		buf[len++] = c;
		sc->i++;
	}
	buf[len] = '\0';
	*out = buf;
	return 1;
}

static void
skip_comment(struct scan *sc)
{
	char c = sc->s[sc->i];

	if (c == '#' && sc->lang != L_NODE) {
		while (sc->i < sc->n && sc->s[sc->i] != '\n')
			sc->i++;
	} else if (c == '/' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '/' && (sc->lang == L_NODE || sc->lang == L_PHP)) {
		while (sc->i < sc->n && sc->s[sc->i] != '\n')
			sc->i++;
	}
}

/* Collect the arguments of a call: in (...) or, for Perl and Ruby, up to the end of the statement. */
static void
read_call(struct hs_actx *x, struct scan *sc, struct call *cl)
{
	int depth = 0, paren;
	const char *lit;

	memset(cl, 0, sizeof(*cl));
	while (sc->i < sc->n && (sc->s[sc->i] == ' ' || sc->s[sc->i] == '\t'))
		sc->i++;
	/* "f\n(...)" inside brackets is still a call; a bare newline ends a Perl or Ruby one. */
	for (size_t j = sc->i; j < sc->n && strchr(" \t\r\n", sc->s[j]); j++)
		if (sc->s[j + 1] == '(')
			sc->i = j + 1;
	paren = sc->i < sc->n && sc->s[sc->i] == '(';
	if (paren) {
		sc->i++;
		depth = 1;
	}
	while (sc->i < sc->n) {
		char c = sc->s[sc->i];

		if (c == '\'' || c == '"' || (c == '`' && sc->lang == L_NODE)) {
			if (read_literal(x, sc, &lit) && cl->nlits < MAX_LITS)
				cl->lits[cl->nlits++] = lit;
			continue;
		}
		if (c == '(' || c == '[' || c == '{') {
			if (c == '[')
				cl->list = 1;
			depth++;
		} else if (c == ')' || c == ']' || c == '}') {
			if (--depth <= 0 && paren) {
				sc->i++;
				return;
			}
			if (depth < 0)
				return;
		} else if (!paren && depth == 0 && (c == ';' || c == '\n')) {
			return;
		} else if (isalpha((unsigned char)c) || c == '_' || c == '$') {
			size_t st = sc->i;

			while (sc->i < sc->n && (isalnum((unsigned char)sc->s[sc->i]) || sc->s[sc->i] == '_' || sc->s[sc->i] == '.' || sc->s[sc->i] == '$'))
				sc->i++;
			if (sc->i - st == 9 && !memcmp(sc->s + st, "recursive", 9))
				cl->recursive = 1;
			else if (!(sc->i - st == 5 && !memcmp(sc->s + st, "shell", 5)) &&
				 !(sc->i - st == 4 && (!memcmp(sc->s + st, "True", 4) || !memcmp(sc->s + st, "true", 4))) &&
				 !(sc->i - st == 5 && !memcmp(sc->s + st, "check", 5)))
				cl->nonlit = 1;
			continue;
		}
		sc->i++;
	}
}

static void
run_synthetic(struct hs_actx *x, const struct hs_cmd *c, const char *prog, const char *flag1,
	      const char *flag2, const char *path, struct hs_progset *produced)
{
	const char *argv[4];
	unsigned flags[4] = { 0, 0, 0, 0 };
	int n = 0;

	argv[n++] = prog;
	if (flag1)
		argv[n++] = flag1;
	if (flag2)
		argv[n++] = flag2;
	argv[n++] = path;
	hs_analyse_argv(x, argv, flags, n, c, produced);
}

/* Literal arguments of a call that runs a program, as shell text. */
static void
run_call(struct hs_actx *x, const struct call *cl, struct hs_progset *produced)
{
	char buf[4096];
	size_t pos = 0, l;
	int k;
	const char *s;

	if (!cl->nlits) {
		hs_actx_opaque(x, "interpreter runs a command built at run time");
		return;
	}
	if (cl->nlits == 1 && !cl->list) {
		hs_analyse_script(x, cl->lits[0], strlen(cl->lits[0]), NULL, produced);
		return;
	}
	if (!cl->list) {
		/* Pieces joined into one command: "rm -rf " "/" or "rm -rf " + "/". */
		for (k = 0; k < cl->nlits; k++)
			for (s = cl->lits[k]; *s && pos + 1 < sizeof(buf); s++)
				buf[pos++] = *s;
		if ((s = hs_arena_strndup(x->a, buf, pos)))
			hs_analyse_script(x, s, pos, NULL, produced);
		pos = 0;
	}
	/* An argv list: quote each element so it stays one word. */
	for (k = 0; k < cl->nlits; k++) {
		if (pos)
			buf[pos++] = ' ';
		buf[pos++] = '\'';
		for (s = cl->lits[k]; *s && pos + 6 < sizeof(buf); s++) {
			if (*s == '\'') {
				memcpy(buf + pos, "'\\''", 4);
				pos += 4;
			} else {
				buf[pos++] = *s;
			}
		}
		buf[pos++] = '\'';
		if (pos + 8 >= sizeof(buf))
			break;
	}
	buf[pos] = '\0';
	l = strlen(buf);
	hs_analyse_script(x, hs_arena_strndup(x->a, buf, l), l, NULL, produced);
}

static size_t
skip_blanks(const struct scan *sc, size_t j)
{
	while (j < sc->n && (sc->s[j] == ' ' || sc->s[j] == '\t'))
		j++;
	return j;
}

/* print | "sh": what awk prints is the code that runs. */
static int
awk_feeds_shell(const char *cmd)
{
	static const char *const shells[] = { "sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox", NULL };
	size_t l, b;

	cmd += strspn(cmd, " \t");
	l = strcspn(cmd, " \t;|&");
	for (b = l; b && cmd[b - 1] != '/'; b--)
		;
	for (int k = 0; shells[k]; k++)
		if (l - b == strlen(shells[k]) && !memcmp(cmd + b, shells[k], l - b))
			return !strstr(cmd + l, "-c");
	return 0;
}

/*
 * awk runs shell commands through pipes as well as system(): print | "CMD",
 * print |& "CMD" (gawk) and "CMD" | getline; print > "FILE" writes FILE.
 * Returns 1 when it consumed something at sc->i.
 */
static int
awk_io(struct hs_actx *x, struct scan *sc, const struct hs_cmd *c, struct hs_progset *produced)
{
	const char *lit;
	char ch = sc->s[sc->i];
	size_t j;

	if (ch == '|' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '|') {
		sc->i += 2;
		return 1;
	}
	if (ch == '|') {
		j = sc->i + 1;
		if (j < sc->n && sc->s[j] == '&')
			j++;
		j = skip_blanks(sc, j);
		if (j < sc->n && sc->s[j] == '"') {
			sc->i = j;
			if (read_literal(x, sc, &lit)) {
				hs_analyse_script(x, lit, strlen(lit), NULL, produced);
				if (awk_feeds_shell(lit))
					hs_actx_opaque(x, "awk prints code into a shell");
			}
			return 1;
		}
		return 0;
	}
	if (ch == '"') {
		if (!read_literal(x, sc, &lit))
			return 0;
		j = skip_blanks(sc, sc->i);
		if (j + 1 < sc->n && sc->s[j] == '|' && sc->s[j + 1] != '|') {
			j = skip_blanks(sc, j + 1 + (sc->s[j + 1] == '&'));
			if (sc->n - j >= 7 && !memcmp(sc->s + j, "getline", 7))
				hs_analyse_script(x, lit, strlen(lit), NULL, produced);
		}
		return 1;
	}
	if (ch == '>') {
		j = skip_blanks(sc, sc->i + 1 + (sc->i + 1 < sc->n && sc->s[sc->i + 1] == '>'));
		if (j < sc->n && sc->s[j] == '"') {
			sc->i = j;
			if (read_literal(x, sc, &lit))
				run_synthetic(x, c, "tee", NULL, NULL, lit, produced);
			return 1;
		}
	}
	return 0;
}

void
hs_interp_scan(struct hs_actx *x, const char *langname, const char *code, const struct hs_cmd *c,
	       struct hs_progset *produced)
{
	struct scan sc = { .s = code, .n = strlen(code), .i = 0 };
	struct call cl;
	const char *lit;
	size_t st, len;
	int guard = 0;

	sc.lang = !strcmp(langname, "python") ? L_PY : !strcmp(langname, "perl") ? L_PERL :
		!strcmp(langname, "ruby") ? L_RUBY : !strcmp(langname, "node") ? L_NODE :
		!strcmp(langname, "awk") ? L_AWK : L_PHP;
	while (sc.i < sc.n && ++guard < 100000) {
		char ch = sc.s[sc.i];

		if (sc.lang == L_AWK && awk_io(x, &sc, c, produced))
			continue;

		if (ch == '#' || ch == '/') {
			size_t before = sc.i;

			skip_comment(&sc);
			if (sc.i != before)
				continue;
		}
		if (ch == '`' && sc.lang != L_NODE && sc.lang != L_PY) {
			/* Backquotes in Perl, Ruby and PHP run a shell command. */
			if (read_literal(x, &sc, &lit))
				hs_analyse_script(x, lit, strlen(lit), NULL, produced);
			continue;
		}
		if (ch == '\'' || ch == '"' || ch == '`') {
			read_literal(x, &sc, &lit);
			continue;
		}
		if ((sc.lang == L_PERL || sc.lang == L_RUBY) && sc.i + 2 < sc.n &&
		    ((ch == 'q' && sc.s[sc.i + 1] == 'x') || (ch == '%' && sc.s[sc.i + 1] == 'x')) &&
		    strchr("({[/|!", sc.s[sc.i + 2]) && (sc.i == 0 || !isalnum((unsigned char)sc.s[sc.i - 1]))) {
			/* qx(...) and %x(...) */
			char open = sc.s[sc.i + 2], close = open == '(' ? ')' : open == '{' ? '}' : open == '[' ? ']' : open;
			const char *end;

			st = sc.i + 3;
			end = memchr(sc.s + st, close, sc.n - st);
			len = end ? (size_t)(end - sc.s) - st : sc.n - st;
			hs_analyse_script(x, sc.s + st, len, NULL, produced);
			sc.i = st + len + (end ? 1 : 0);
			continue;
		}
		if (isalpha((unsigned char)ch) || ch == '_') {
			st = sc.i;
			while (sc.i < sc.n && (isalnum((unsigned char)sc.s[sc.i]) || sc.s[sc.i] == '_' || sc.s[sc.i] == '.'))
				sc.i++;
			len = sc.i - st;
			if (in_names(sc.s + st, len, shell_calls[sc.lang], 16)) {
				size_t save = sc.i;

				/* Inside brackets a call may continue on the next line. */
				while (save < sc.n && strchr(" \t\r\n", sc.s[save]))
					save++;
				if (save < sc.n && (sc.s[save] == '(' ||
				    ((sc.lang == L_PERL || sc.lang == L_RUBY) && (sc.s[save] == '\'' || sc.s[save] == '"')))) {
					read_call(x, &sc, &cl);
					run_call(x, &cl, produced);
				}
			} else if (in_names(sc.s + st, len, rm_calls, 16)) {
				read_call(x, &sc, &cl);
				if (cl.nlits && (cl.recursive || !name_is(sc.s + st, len, "rmSync")))
					run_synthetic(x, c, "rm", "-r", "-f", cl.lits[0], produced);
			} else if (in_names(sc.s + st, len, write_calls, 16) ||
				   (sc.lang == L_PY && len == 4 && !memcmp(sc.s + st, "open", 4))) {
				read_call(x, &sc, &cl);
				/* open(path, "w"): a write, judged as "tee path" would be. */
				if (cl.nlits >= 1 && (len != 4 || (cl.nlits >= 2 && strpbrk(cl.lits[1], "wa+"))))
					run_synthetic(x, c, "tee", NULL, NULL, cl.lits[0], produced);
			} else if ((len == 4 && (!memcmp(sc.s + st, "exec", 4) || !memcmp(sc.s + st, "eval", 4))) &&
				   sc.lang != L_PERL) {
				read_call(x, &sc, &cl);
				if (cl.nonlit)
					hs_actx_opaque(x, "interpreter evaluates code built at run time");
				/* exec("import os; os.system(...)"): the literal is code of the same language. */
				for (int k = 0; k < cl.nlits; k++) {
					if (x->depth >= HS_ANALYSE_MAX_DEPTH) {
						hs_actx_opaque(x, "code nested too deeply to analyse");
						break;
					}
					x->depth++;
					hs_interp_scan(x, langname, cl.lits[k], c, produced);
					x->depth--;
				}
			}
			continue;
		}
		sc.i++;
	}
}
