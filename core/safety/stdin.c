/* SPDX-License-Identifier: MIT */
/*
 * stdin.c - what bytes written to a program's terminal would make it run.
 *
 * A write into a shell or an interpreter's REPL is a command in disguise:
 * "rm -rf /\n" typed into bash runs rm.  The guard models the program as a
 * line editor (the terminal's canonical mode, or readline) feeding an
 * interpreter it cannot name: the program name a sandbox reports is chosen
 * by the sandboxed process, so every submitted line is judged as each of
 * the programs it could be - a shell (incomplete constructs accumulate, as
 * bash reads continuation lines), the interpreters the scanner of interp.c
 * knows, and a shell reached through an escape ("!cmd", ":!cmd",
 * "shell cmd", ".system cmd").  The most severe verdict wins.
 *
 * Editing the model knows exactly is applied (erase, kill line, erase
 * word where every program agrees, interrupt).  Anything else - cursor and
 * meta keys, completion, history, bytes a locale may read as meta keys,
 * NUL - could rebuild the line into something unseen, so from there on the
 * input is opaque, like a command the analyser cannot read, until an
 * interrupt (^C) discards what is pending.  Opaque text is still searched
 * as typed and as edited, so a hardline match in it still denies.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/internal.h"

/* Longest line, and longest unfinished construct, that is analysed. */
#define LINE_MAX_BYTES ((size_t)16 << 10)
#define BLOCK_MAX_BYTES ((size_t)16 << 10)

struct gbuf {
	char *s;
	size_t len, cap;
};

enum esc_state { ESC_NONE = 0, ESC_SEEN, ESC_CSI, ESC_SS3 };

struct hs_stdin_guard {
	struct gbuf line;  /* the line being typed, with the edits applied */
	struct gbuf typed; /* the same line as typed: every byte, no edits (survives ^C) */
	struct gbuf block; /* shell: earlier lines of an unfinished construct */
	struct gbuf iblock; /* interpreters: earlier lines inside open brackets */
	struct gbuf kill;  /* readline's last kill (^U, ^W), which ^Y yanks back */
	struct gbuf sql;   /* SQL: earlier lines of a statement not yet ended by ';' */
	int killed;        /* the last key was a kill: the next one adds to it */
	int esc;           /* enum esc_state across writes */
	int opaque;        /* unmodelled input was delivered; reset by ^C */
	int overlong;      /* the line passed LINE_MAX_BYTES */
	char why[160];
};

/* What one analysis collects. */
struct judge {
	const struct hs_policy *p;
	enum hs_context ctx;
	struct hs_analysis *out;
	char why[160]; /* the first reason the input is opaque, or "" */
	size_t spent; /* work done (analyses, and bytes analysed / 64); bounded per write */
};

/* Most work one write may cost (about a second); past it the write is refused as too long. */
#define MAX_WORK ((size_t)300000)

static int
gbuf_put(struct gbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *ns;

		while (cap < b->len + n + 1)
			cap *= 2;
		ns = realloc(b->s, cap);
		if (!ns)
			return -1;
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

static void
gbuf_clear(struct gbuf *b)
{
	b->len = 0;
	if (b->s)
		b->s[0] = '\0';
}

static int
gbuf_copy(struct gbuf *dst, const struct gbuf *src)
{
	memset(dst, 0, sizeof(*dst));
	return src->len ? gbuf_put(dst, src->s, src->len) : 0;
}

struct hs_stdin_guard *
hs_stdin_guard_new(void)
{
	return calloc(1, sizeof(struct hs_stdin_guard));
}

static void
free_parts(struct hs_stdin_guard *g)
{
	free(g->line.s);
	free(g->typed.s);
	free(g->block.s);
	free(g->iblock.s);
	free(g->kill.s);
	free(g->sql.s);
}

void
hs_stdin_guard_free(struct hs_stdin_guard *g)
{
	if (!g)
		return;
	free_parts(g);
	free(g);
}

/* The write is opaque for the guard's reason (the first one counts). */
static void
note_opaque(const struct hs_stdin_guard *g, struct judge *j)
{
	if (j && !j->why[0])
		snprintf(j->why, sizeof(j->why), "%s", g->why);
}

static void
taint(struct hs_stdin_guard *g, struct judge *j, const char *why)
{
	if (!g->opaque) {
		g->opaque = 1;
		snprintf(g->why, sizeof(g->why), "%s", why);
	}
	note_opaque(g, j);
}

/*
 * ^C: discard what is pending.  The typed view stays: written to a pipe
 * rather than a terminal, ^C and the text before it are plain bytes of the
 * line.
 */
static void
reset(struct hs_stdin_guard *g)
{
	gbuf_clear(&g->line);
	gbuf_clear(&g->block);
	gbuf_clear(&g->iblock);
	gbuf_clear(&g->sql);
	g->esc = ESC_NONE;
	g->killed = 0;
	g->opaque = 0;
	g->overlong = 0;
	g->why[0] = '\0';
}

/* ---- judging ---- */

static void
merge(struct judge *j, const struct hs_analysis *a)
{
	struct hs_analysis *o = j->out;

	for (size_t i = 0; i < a->n_findings; i++) {
		const struct hs_finding *f = &a->findings[i];
		size_t k;

		/* Opacity is decided here, once, for the whole write. */
		if (!strcmp(f->rule_id, "opaque"))
			continue;
		for (k = 0; k < o->n_findings; k++)
			if (!strcmp(o->findings[k].rule_id, f->rule_id) &&
			    !strcmp(o->findings[k].argv_norm, f->argv_norm))
				break;
		if (k < o->n_findings)
			continue;
		if (o->n_findings < HS_MAX_FINDINGS) {
			o->findings[o->n_findings++] = *f;
		} else if (f->hardline) {
			/* Full: a hardline finding takes the place of a dangerous one, so it still denies. */
			for (k = 0; k < o->n_findings && o->findings[k].hardline; k++)
				;
			if (k < o->n_findings)
				o->findings[k] = *f;
		}
	}
}

/* Judge text as a shell command: findings always, opacity only when counts. */
static void
judge_text(struct judge *j, const char *text, int opacity)
{
	struct hs_analysis a;

	j->spent += 1 + strlen(text) / 64;
	if (j->spent > MAX_WORK)
		return;
	hs_analyse(j->p, text, j->ctx, &a);
	merge(j, &a);
	if (opacity && a.opaque && !j->out->opaque) {
		j->out->opaque = 1;
		snprintf(j->out->opaque_reason, sizeof(j->out->opaque_reason), "%s", a.opaque_reason);
	}
}

static void
set_opaque(struct judge *j, const char *why)
{
	if (!j->out->opaque) {
		j->out->opaque = 1;
		snprintf(j->out->opaque_reason, sizeof(j->out->opaque_reason), "%s", why);
	}
}

/* s[0..n) single-quoted for a shell, appended to b. */
static int
put_quoted(struct gbuf *b, const char *s, size_t n)
{
	size_t i, from = 0;

	if (gbuf_put(b, "'", 1) < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (s[i] == '\'') {
			if (gbuf_put(b, s + from, i - from) < 0 || gbuf_put(b, "'\\''", 4) < 0)
				return -1;
			from = i + 1;
		}
	return gbuf_put(b, s + from, n - from) < 0 || gbuf_put(b, "'", 1) < 0 ? -1 : 0;
}

/* Judge text as the code of every interpreter the scanner knows, and as SQL, at once. */
static void
judge_code(struct judge *j, const char *text, int opacity)
{
	static const char *const runs[] = { "python3 -c ", " ; perl -e ", " ; ruby -e ", " ; node -e ",
		" ; php -r ", " ; psql -c " };
	struct gbuf b = { 0 };
	size_t k, n = strlen(text);

	for (k = 0; k < sizeof(runs) / sizeof(runs[0]); k++)
		if (gbuf_put(&b, runs[k], strlen(runs[k])) < 0 || put_quoted(&b, text, n) < 0) {
			free(b.s);
			set_opaque(j, "out of memory");
			return;
		}
	judge_text(j, b.s, opacity);
	free(b.s);
}

/* The policy knows this word as a program: a line starting with it was meant for a shell. */
static int
known_program(const struct hs_policy *p, const char *text)
{
	char word[128];
	size_t n;

	text += strspn(text, " \t\n");
	n = strcspn(text, " \t\n;&|<>()");
	if (!n || n >= sizeof(word))
		return 0;
	memcpy(word, text, n);
	word[n] = '\0';
	return hs_policy_prog(p, hs_basename(word)) != NULL;
}

/*
 * Bash's extended globs (!(x), @(x), ...) are on in most interactive
 * shells but not in the parser; read as "*" they match at least as much.
 */
static char *
extglob_as_star(const char *text)
{
	size_t n = strlen(text), i, o = 0;
	char *s = malloc(n + 1);
	int changed = 0;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++) {
		if (strchr("!@?*+", text[i]) && text[i + 1] == '(') {
			const char *close = strchr(text + i + 2, ')');

			if (close) {
				s[o++] = '*';
				i = (size_t)(close - text);
				changed = 1;
				continue;
			}
		}
		s[o++] = text[i];
	}
	s[o] = '\0';
	if (!changed) {
		free(s);
		return NULL;
	}
	return s;
}

/* text with each "(" not after '$', '<' or '>' made "$(", or NULL when there is none. */
static char *
paren_as_subst(const char *text)
{
	size_t n = strlen(text), i, o = 0;
	char *s;

	if (!strchr(text, '('))
		return NULL;
	s = malloc(2 * n + 1);
	if (!s)
		return NULL;
	for (i = 0; i < n; i++) {
		if (text[i] == '(' && (i == 0 || !strchr("$<>", text[i - 1])))
			s[o++] = '$';
		s[o++] = text[i];
	}
	s[o] = '\0';
	return s;
}

/* A shell line that bash would not parse either runs nothing; one we cannot parse is opaque. */
static void
judge_unparsed(struct judge *j, const char *text, const char *why)
{
	char msg[160];
	char *alt = extglob_as_star(text);

	if (alt) {
		judge_text(j, alt, 0);
		free(alt);
	}
	/* fish and rc substitute "(cmd)": judged as bash's "$(cmd)" would be. */
	alt = paren_as_subst(text);
	if (alt) {
		judge_text(j, alt, 0);
		free(alt);
	}
	if (known_program(j->p, text) || !strcmp(why, "input too large") || !strcmp(why, "nesting too deep")) {
		snprintf(msg, sizeof(msg), "cannot parse command: %s", why);
		set_opaque(j, msg);
	}
}

/* The shell view of a complete line: an unfinished construct waits for more. */
static void
shell_line(struct hs_stdin_guard *g, struct judge *j, const char *line, size_t n)
{
	char stackmem[8192];
	struct hs_arena a;
	const char *why = "syntax error";
	int st;

	/*
	 * A continuation line is judged alone as well: where bash and the
	 * parser disagree on what is unfinished, bash may run it by itself.
	 */
	if (g->block.len && j)
		judge_text(j, line, 0);
	if (g->block.len && gbuf_put(&g->block, "\n", 1) < 0)
		goto nomem;
	if (gbuf_put(&g->block, line, n) < 0)
		goto nomem;
	hs_arena_init(&a, stackmem, sizeof(stackmem), (size_t)16 << 20);
	st = hs_sh_parse_state(&a, g->block.s, g->block.len, &why);
	hs_arena_free(&a);
	if (st == 1) {
		if (g->block.len <= BLOCK_MAX_BYTES)
			return;
		/* Judged as it stands; what follows may still belong to it. */
		if (j)
			judge_text(j, g->block.s, 0);
		taint(g, j, "unfinished shell construct over 16 KiB");
	} else if (j && st == 0) {
		judge_text(j, g->block.s, 1);
	} else if (j) {
		judge_unparsed(j, g->block.s, why);
	}
	gbuf_clear(&g->block);
	return;
nomem:
	gbuf_clear(&g->block);
	taint(g, j, "out of memory");
}

/* Brackets still open at the end of code (strings and '#' comments skipped; a guess across languages). */
static int
code_open(const char *s, size_t n)
{
	int depth = 0;
	char q = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (q) {
			if (c == '\\')
				i++;
			else if (c == q)
				q = 0;
		} else if (c == '\'' || c == '"' || c == '`') {
			q = c;
		} else if (c == '#') {
			while (i < n && s[i] != '\n')
				i++;
		} else if (c == '(' || c == '[' || c == '{') {
			depth++;
		} else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
			depth--;
		}
	}
	return depth > 0 || q || (n && s[n - 1] == '\\');
}

/*
 * The interpreter view: the line alone, and with the earlier lines of a
 * call or literal it continues ("os.system(\n'rm -rf /')").
 */
static void
code_line(struct hs_stdin_guard *g, struct judge *j, const char *line, size_t n)
{
	int open;

	if (j)
		judge_code(j, line, 1);
	if (!g->iblock.len && !code_open(line, n))
		return;
	if ((g->iblock.len && gbuf_put(&g->iblock, "\n", 1) < 0) || gbuf_put(&g->iblock, line, n) < 0) {
		gbuf_clear(&g->iblock);
		taint(g, j, "out of memory");
		return;
	}
	open = code_open(g->iblock.s, g->iblock.len);
	if (j)
		judge_code(j, g->iblock.s, !open);
	if (!open)
		gbuf_clear(&g->iblock);
	else if (g->iblock.len > BLOCK_MAX_BYTES) {
		gbuf_clear(&g->iblock);
		taint(g, j, "unfinished code over 16 KiB");
	}
}

/* SQL REPLs (psql, mysql, sqlite3) run a statement at its ';', however many lines it took. */
static void
sql_line(struct hs_stdin_guard *g, struct judge *j, const char *line, size_t n)
{
	if (!g->sql.len && memchr(line, ';', n))
		return; /* judged alone by judge_code() */
	if ((g->sql.len && gbuf_put(&g->sql, "\n", 1) < 0) || gbuf_put(&g->sql, line, n) < 0 ||
	    g->sql.len > BLOCK_MAX_BYTES) {
		gbuf_clear(&g->sql);
		return;
	}
	if (!memchr(line, ';', n))
		return;
	if (j)
		judge_code(j, g->sql.s, 0);
	gbuf_clear(&g->sql);
}

/*
 * Shells reached through an escape: what follows each '!' (":!cmd" in vim,
 * "!cmd" in less, gdb, ipython, psql's "\!") or ':' (bind -x), what
 * follows the first word ("shell cmd", ".system cmd", "%sx cmd") and, when
 * the quoting the line starts in is unknown, what follows each quote.
 */
static void
escape_views(struct judge *j, const char *line, int quotes)
{
	const char *s = line + strspn(line, " \t"), *w;

	w = s + strcspn(s, " \t");
	if (*w)
		judge_text(j, w, 0);
	/* Every one: padding must not push an escape out of sight (the work bound holds). */
	for (s = line; *s; s++)
		if ((*s == '!' || *s == ':' || (quotes && (*s == '\'' || *s == '"' || *s == '`'))) && s[1])
			judge_text(j, s + 1, 0);
}

/*
 * String literals of the line, judged as commands and as code: a REPL can
 * run a string through paths no scanner follows (an alias of os.system,
 * getattr, a key binding's macro, vim's :execute).  Each quote starts one,
 * up to the next like it, so nesting and unknown quoting are covered;
 * backslash escapes are decoded (\n is a newline in a macro or a literal).
 */
static void
literal_views(struct judge *j, const char *line)
{
	const char *s, *e, *r;

	for (s = line; *s && j->spent <= MAX_WORK; s++) {
		char q = *s, *lit, *o;

		if (q != '\'' && q != '"' && q != '`')
			continue;
		for (e = s + 1; *e && *e != q; e++)
			if (*e == '\\' && e[1])
				e++;
		if (e == s + 1)
			continue;
		lit = malloc((size_t)(e - s));
		if (!lit) {
			set_opaque(j, "out of memory");
			return;
		}
		for (o = lit, r = s + 1; r < e;)
			if (*r == '\\')
				r += hs_unescape(r, (size_t)(e - r), o++);
			else
				*o++ = *r++;
		*o = '\0';
		judge_text(j, lit, 0);
		judge_code(j, lit, 0);
		escape_views(j, lit, 0);
		free(lit);
	}
}

/*
 * Bash's history expansion ("!!", "!-2", "!$", "^a^b", fc -s) replays
 * earlier input the guard does not keep.
 */
static int
history_expansion(const char *line)
{
	const char *s;
	int sq = 0;

	if (line[strspn(line, " \t")] == '^')
		return 1;
	for (s = line; *s; s++) {
		if (*s == '\'')
			sq = !sq;
		else if (*s == '!' && !sq && s[1] && !strchr(" \t=(\"", s[1]))
			return 1;
		else if (!strncmp(s, "fc", 2) && (s == line || strchr(" \t;&|(", s[-1])) &&
			 (!s[2] || s[2] == ' ' || s[2] == '\t'))
			return 1;
	}
	return 0;
}

/* Where word w starts in s as a whole word (after a blank or an operator), or NULL. */
static const char *
find_word(const char *s, const char *w)
{
	size_t n = strlen(w);
	const char *p;

	for (p = s; (p = strstr(p, w)); p++)
		if ((p == s || strchr(" \t;&|(`", p[-1])) && (!p[n] || p[n] == ' ' || p[n] == '\t'))
			return p;
	return NULL;
}

/* Do the words after w in s all belong to the list (options that only query)? */
static int
only_queries(const char *s, const char *const *ok)
{
	for (;;) {
		size_t n, k;

		s += strspn(s, " \t");
		n = strcspn(s, " \t;&|)");
		if (!n)
			return 1;
		for (k = 0; ok[k]; k++)
			if (strlen(ok[k]) == n && !memcmp(s, ok[k], n))
				break;
		if (!ok[k])
			return 0;
		s += n;
	}
}

/*
 * A line that changes how input is edited (stty erase z, bind, set -o vi,
 * an inputrc, Python's readline.parse_and_bind) leaves the model behind:
 * from there on the input is opaque.
 */
static int
reconfigures_editor(const char *line)
{
	static const char *const stty_ok[] = { "size", "-a", "--all", "-g", "--save", NULL };
	static const char *const bind_ok[] = { "-p", "-P", "-l", "-v", "-V", "-s", "-S", NULL };
	const char *w;

	if (strstr(line, "inputrc") || strstr(line, "parse_and_bind") || strstr(line, "read_init_file") ||
	    strstr(line, "editing-mode"))
		return 1;
	if ((w = find_word(line, "stty")) && !only_queries(w + 4, stty_ok))
		return 1;
	if ((w = find_word(line, "bind")) && !only_queries(w + 4, bind_ok))
		return 1;
	return (w = find_word(line, "set")) && (strstr(w, "-o vi") || strstr(w, "-o emacs") ||
						strstr(w, "+o vi") || strstr(w, "+o emacs"));
}

/* Every view of one text, for its findings: command, code, escapes, literals. */
static void
judge_views(struct judge *j, const char *text, int quotes)
{
	judge_text(j, text, 0);
	judge_code(j, text, 0);
	escape_views(j, text, quotes);
	literal_views(j, text);
}

/* The typed bytes without control bytes and escape sequences (keys), or NULL. */
static char *
strip_keys(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		if (*s == 0x1b) {
			/* ESC x, ESC [ params final, ESC O x */
			if (s[1] == '[') {
				for (s += 2; *s && !(*s >= 0x40 && *s <= 0x7e); s++)
					;
			} else if (s[1]) {
				s += s[1] == 'O' && s[2] ? 2 : 1;
			}
			if (!*s)
				break;
			continue;
		}
		if ((unsigned char)*s >= 0x20 && *s != 0x7f)
			*o++ = *s;
	}
	*o = '\0';
	return out;
}

/*
 * What was typed, unedited: written to a pipe (no terminal) nothing edits
 * it, and where the editing is not known (opaque) the keys may have done
 * anything, so the text without them is judged too.
 */
static void
judge_unedited(const struct hs_stdin_guard *g, struct judge *j, const char *line)
{
	char *bare;

	if (!g->typed.len)
		return;
	if (strcmp(g->typed.s, line))
		judge_views(j, g->typed.s, g->opaque);
	if (!g->opaque)
		return;
	bare = strip_keys(g->typed.s);
	if (!bare) {
		set_opaque(j, "out of memory");
		return;
	}
	if (strcmp(bare, line) && strcmp(bare, g->typed.s))
		judge_views(j, bare, 1);
	free(bare);
}

/* A line the program would now read, judged as each program it could be. */
static void
submit(struct hs_stdin_guard *g, struct judge *j)
{
	const char *line = g->line.s ? g->line.s : "";

	if (j) {
		if (history_expansion(line))
			set_opaque(j, "'!' or '^' may expand the shell's history into an earlier command");
		escape_views(j, line, g->opaque);
		literal_views(j, line);
		judge_unedited(g, j, line);
	}
	shell_line(g, j, line, g->line.len);
	code_line(g, j, line, g->line.len);
	sql_line(g, j, line, g->line.len);
	if (reconfigures_editor(line))
		taint(g, j, "the input changes how the terminal or readline edits lines");
	gbuf_clear(&g->line);
	gbuf_clear(&g->typed);
}

/* ---- the line editor ---- */

static void
add_char(struct hs_stdin_guard *g, struct judge *j, char c)
{
	if (g->line.len >= LINE_MAX_BYTES) {
		g->overlong = 1;
		return;
	}
	if (gbuf_put(&g->line, &c, 1) < 0)
		taint(g, j, "out of memory");
}

static int
is_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/*
 * Cut the line at n.  Readline keeps what it cut for ^Y (consecutive kills
 * gather, backward kills in front), even across lines.
 */
static void
kill_from(struct hs_stdin_guard *g, struct judge *j, size_t n)
{
	struct gbuf k = { 0 };
	size_t len = g->line.len - n;

	if (len && (gbuf_put(&k, g->line.s + n, len) < 0 ||
		    (g->killed && g->kill.len && gbuf_put(&k, g->kill.s, g->kill.len) < 0))) {
		free(k.s);
		taint(g, j, "out of memory");
	} else if (len) {
		if (k.len > LINE_MAX_BYTES)
			k.len = LINE_MAX_BYTES;
		free(g->kill.s);
		g->kill = k;
	}
	g->line.len = n;
	if (g->line.s)
		g->line.s[n] = '\0';
}

/*
 * ^W: the terminal and readline erase back to a blank, vim and others to
 * a non-word character.  Exact only where the two agree.
 */
static void
erase_word(struct hs_stdin_guard *g, struct judge *j)
{
	size_t n = g->line.len;

	while (n && (g->line.s[n - 1] == ' ' || g->line.s[n - 1] == '\t'))
		n--;
	while (n && g->line.s[n - 1] != ' ' && g->line.s[n - 1] != '\t') {
		if (!is_word_char(g->line.s[n - 1]))
			taint(g, j, "^W erases a different word in different programs");
		n--;
	}
	kill_from(g, j, n);
}

static void
feed_byte(struct hs_stdin_guard *g, struct judge *j, unsigned char c)
{
	/*
	 * The typed view keeps every byte of the line, keys included, as a
	 * program reading a pipe gets them: there nothing edits.
	 */
	if (c != '\n' && c != '\r' && c != 0) {
		if (g->typed.len >= LINE_MAX_BYTES)
			g->overlong = 1;
		else if (gbuf_put(&g->typed, (const char *)&c, 1) < 0)
			taint(g, j, "out of memory");
	}
	if (c == 0x03) {
		/* Interrupt: the terminal, readline and the REPLs discard what is pending. */
		reset(g);
		return;
	}
	/*
	 * Escape sequences (ESC x, ESC [ ... final, ESC O x) are keys, not text
	 * of the edited line.  A control byte ends one and counts as itself.
	 */
	if (g->esc != ESC_NONE && c >= 0x20 && c != 0x7f) {
		if (g->esc == ESC_SEEN)
			g->esc = c == '[' ? ESC_CSI : c == 'O' ? ESC_SS3 : ESC_NONE;
		else if (g->esc == ESC_SS3 || (c >= 0x40 && c <= 0x7e))
			g->esc = ESC_NONE;
		return;
	}
	g->esc = ESC_NONE;
	if (g->opaque)
		note_opaque(g, j);
	if (c != 0x15 && c != 0x17)
		g->killed = 0;
	switch (c) {
	case '\n':
	case '\r':
		if (g->overlong)
			return;
		submit(g, j);
		return;
	case 0x08:
		/* Readline erases with ^H; a terminal erases with DEL only, unless stty says otherwise. */
		taint(g, j, "^H erases in readline but is a character to a terminal");
		/* FALLTHROUGH */
	case 0x7f:
		if (g->line.len) {
			if ((unsigned char)g->line.s[g->line.len - 1] >= 0x80)
				taint(g, j, "erasing a multibyte character depends on the terminal's settings");
			g->line.s[--g->line.len] = '\0';
		}
		return;
	case 0x15: /* ^U: kill line (the cursor is at its end while nothing moved it) */
		kill_from(g, j, 0);
		g->killed = 1;
		return;
	case 0x17:
		erase_word(g, j);
		g->killed = 1;
		return;
	case 0x19:
		/* ^Y: readline yanks the last kill back (a terminal takes it as a character). */
		taint(g, j, "^Y yanks killed text back into the line");
		if (g->kill.len && gbuf_put(&g->line, g->kill.s, g->kill.len) < 0)
			taint(g, j, "out of memory");
		break;
	case 0x1b:
		g->esc = ESC_SEEN;
		taint(g, j, "escape sequences (cursor or meta keys) can rebuild the line");
		return;
	case 0x00:
		taint(g, j, "a NUL byte");
		return;
	}
	if (c < 0x20) {
		/* Tab completes, ^R searches, ^Y yanks, ^V quotes, ^D ends input or erases: not modelled. */
		char msg[80];

		snprintf(msg, sizeof(msg), "control character ^%c can change the line", c + '@');
		taint(g, j, msg);
		return;
	}
	if (c >= 0x80)
		taint(g, j, "a byte over 0x7f is a meta key to readline outside a UTF-8 locale");
	add_char(g, j, (char)c);
}

static void
feed(struct hs_stdin_guard *g, struct judge *j, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		feed_byte(g, j, b[i]);
}

/*
 * The end of input: a shell or interpreter reading a pipe runs its last
 * line without a newline, and what is unfinished is judged as it stands.
 */
static void
end_input(struct hs_stdin_guard *g, struct judge *j)
{
	if (g->opaque)
		note_opaque(g, j);
	if (g->line.len || g->typed.len)
		submit(g, j);
	if (j && g->block.len)
		judge_text(j, g->block.s, 0);
	if (j && g->iblock.len)
		judge_code(j, g->iblock.s, 0);
	reset(g);
	gbuf_clear(&g->typed);
}

static int
guard_copy(struct hs_stdin_guard *dst, const struct hs_stdin_guard *src)
{
	*dst = *src;
	memset(&dst->line, 0, sizeof(dst->line));
	memset(&dst->typed, 0, sizeof(dst->typed));
	memset(&dst->block, 0, sizeof(dst->block));
	memset(&dst->iblock, 0, sizeof(dst->iblock));
	memset(&dst->kill, 0, sizeof(dst->kill));
	memset(&dst->sql, 0, sizeof(dst->sql));
	if (gbuf_copy(&dst->line, &src->line) < 0 || gbuf_copy(&dst->typed, &src->typed) < 0 ||
	    gbuf_copy(&dst->block, &src->block) < 0 || gbuf_copy(&dst->iblock, &src->iblock) < 0 ||
	    gbuf_copy(&dst->kill, &src->kill) < 0 || gbuf_copy(&dst->sql, &src->sql) < 0)
		return -1;
	return 0;
}

/* Unknown keys may submit the line (readline binds any key to accept-line): judge what is pending. */
static void
judge_pending(const struct hs_stdin_guard *g, struct judge *j)
{
	const char *line = g->line.s ? g->line.s : "";

	if (g->block.len)
		judge_text(j, g->block.s, 0);
	if (*line)
		judge_views(j, line, 1);
	judge_unedited(g, j, line);
}

static void
deny_finding(struct hs_analysis *out, const char *id, const char *desc)
{
	struct hs_finding *f;

	if (out->n_findings >= HS_MAX_FINDINGS)
		out->n_findings = HS_MAX_FINDINGS - 1;
	f = &out->findings[out->n_findings++];
	memset(f, 0, sizeof(*f));
	snprintf(f->rule_id, sizeof(f->rule_id), "%s", id);
	f->hardline = 1;
	f->host_scope = 1;
	snprintf(f->description, sizeof(f->description), "%s", desc);
}

int
hs_stdin_analyse(const struct hs_stdin_guard *g, const struct hs_policy *p, enum hs_context ctx,
		 const void *buf, size_t n, struct hs_analysis *out)
{
	struct hs_stdin_guard w;
	struct judge j = { .p = p, .ctx = ctx, .out = out };
	char shown[200];

	if (!out)
		return -1;
	out->verdict = HS_VERDICT_ALLOW;
	out->n_findings = 0;
	out->opaque = 0;
	out->opaque_reason[0] = '\0';
	if (!g || !p || (!buf && n))
		return -1;
	if (n > HS_STDIN_MAX_WRITE) {
		deny_finding(out, "stdin.too-long", "a write to a terminal over 64 KiB is not analysed: split it");
		hs_analysis_finish(out, ctx, "");
		return 0;
	}
	if (guard_copy(&w, g) < 0) {
		set_opaque(&j, "out of memory");
	} else {
		if (buf)
			feed(&w, &j, buf, n);
		else
			end_input(&w, &j);
		if (w.opaque)
			judge_pending(&w, &j);
		if (w.overlong)
			deny_finding(out, "stdin.too-long", "a line over 16 KiB typed to a terminal is not analysed: "
				     "write it to a file, or send ^C to discard it");
		if (j.spent > MAX_WORK)
			deny_finding(out, "stdin.too-long", "a write to a terminal too large to analyse at once: "
				     "split it into smaller writes");
		if (j.why[0])
			set_opaque(&j, j.why);
	}
	free_parts(&w);
	if (buf)
		hs_stdin_shown(buf, n, shown, sizeof(shown));
	else
		snprintf(shown, sizeof(shown), "(end of input)");
	hs_analysis_finish(out, ctx, shown);
	return 0;
}

size_t
hs_stdin_shown(const void *buf, size_t n, char *out, size_t outlen)
{
	size_t i, k = 0;

	if (!outlen)
		return 0;
	for (i = 0; i < n && k + 5 < outlen; i++) {
		unsigned char c = ((const unsigned char *)buf)[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[k++] = (char)c;
		else
			k += (size_t)snprintf(out + k, outlen - k, "\\x%02x", c);
	}
	out[k] = '\0';
	return k;
}

void
hs_stdin_guard_commit(struct hs_stdin_guard *g, const void *buf, size_t n)
{
	if (g && buf)
		feed(g, NULL, buf, n);
	else if (g)
		end_input(g, NULL);
}
