/* SPDX-License-Identifier: MIT */
/*
 * stdin-views.c - the views a line typed to a terminal is judged in.
 *
 * stdin.c follows the line editor and decides which lines a program
 * would read; this file judges a line as each program it could be: a
 * shell command, interpreter and SQL code, a shell reached through an
 * escape ("!cmd", "shell cmd"), and the string literals in it.  Each view
 * adds its findings to one analysis; work is bounded per write.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/internal.h"
#include "core/safety/stdin-views.h"

static void
merge(struct hs_stdin_judge *j, const struct hs_analysis *a)
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
void
hs_stdin_judge_text(struct hs_stdin_judge *j, const char *text, int opacity)
{
	struct hs_analysis a;

	j->spent += 1 + strlen(text) / 64;
	if (j->spent > HS_STDIN_MAX_WORK)
		return;
	hs_analyse(j->p, text, j->ctx, &a);
	merge(j, &a);
	if (opacity && a.opaque && !j->out->opaque) {
		j->out->opaque = 1;
		snprintf(j->out->opaque_reason, sizeof(j->out->opaque_reason), "%s", a.opaque_reason);
	}
}

void
hs_stdin_set_opaque(struct hs_stdin_judge *j, const char *why)
{
	if (!j->out->opaque) {
		j->out->opaque = 1;
		snprintf(j->out->opaque_reason, sizeof(j->out->opaque_reason), "%s", why);
	}
}

/* s single-quoted for a shell at o (4 * strlen(s) + 2 bytes); returns the end. */
static char *
put_quoted(char *o, const char *s)
{
	*o++ = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *s;
		}
	}
	*o++ = '\'';
	return o;
}

void
hs_stdin_judge_code(struct hs_stdin_judge *j, const char *text, int opacity)
{
	static const char *const runs[] = { "python3 -c ", " ; perl -e ", " ; ruby -e ", " ; node -e ",
		" ; php -r ", " ; psql -c " };
	size_t k, n = strlen(text), cap = 1;
	char *b, *o;

	for (k = 0; k < sizeof(runs) / sizeof(runs[0]); k++)
		cap += strlen(runs[k]) + 4 * n + 2;
	b = malloc(cap);
	if (!b) {
		hs_stdin_set_opaque(j, "out of memory");
		return;
	}
	for (o = b, k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		memcpy(o, runs[k], strlen(runs[k]));
		o = put_quoted(o + strlen(runs[k]), text);
	}
	*o = '\0';
	hs_stdin_judge_text(j, b, opacity);
	free(b);
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
void
hs_stdin_judge_unparsed(struct hs_stdin_judge *j, const char *text, const char *why)
{
	char msg[160];
	char *alt = extglob_as_star(text);

	if (alt) {
		hs_stdin_judge_text(j, alt, 0);
		free(alt);
	}
	/* fish and rc substitute "(cmd)": judged as bash's "$(cmd)" would be. */
	alt = paren_as_subst(text);
	if (alt) {
		hs_stdin_judge_text(j, alt, 0);
		free(alt);
	}
	if (known_program(j->p, text) || !strcmp(why, "input too large") || !strcmp(why, "nesting too deep")) {
		snprintf(msg, sizeof(msg), "cannot parse command: %s", why);
		hs_stdin_set_opaque(j, msg);
	}
}

/*
 * Shells reached through an escape: what follows each '!' (":!cmd" in vim,
 * "!cmd" in less, gdb, ipython, psql's "\!") or ':' (bind -x), what
 * follows the first word ("shell cmd", ".system cmd", "%sx cmd") and, when
 * the quoting the line starts in is unknown, what follows each quote.
 */
void
hs_stdin_escape_views(struct hs_stdin_judge *j, const char *line, int quotes)
{
	const char *s = line + strspn(line, " \t"), *w;

	w = s + strcspn(s, " \t");
	if (*w)
		hs_stdin_judge_text(j, w, 0);
	/* Every one: padding must not push an escape out of sight (the work bound holds). */
	for (s = line; *s; s++)
		if ((*s == '!' || *s == ':' || (quotes && (*s == '\'' || *s == '"' || *s == '`'))) && s[1])
			hs_stdin_judge_text(j, s + 1, 0);
}

/*
 * String literals of the line, judged as commands and as code: a REPL can
 * run a string through paths no scanner follows (an alias of os.system,
 * getattr, a key binding's macro, vim's :execute).  Each quote starts one,
 * up to the next like it, so nesting and unknown quoting are covered;
 * backslash escapes are decoded (\n is a newline in a macro or a literal).
 */
void
hs_stdin_literal_views(struct hs_stdin_judge *j, const char *line)
{
	const char *s, *e, *r;

	for (s = line; *s && j->spent <= HS_STDIN_MAX_WORK; s++) {
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
			hs_stdin_set_opaque(j, "out of memory");
			return;
		}
		for (o = lit, r = s + 1; r < e;)
			if (*r == '\\')
				r += hs_unescape(r, (size_t)(e - r), o++);
			else
				*o++ = *r++;
		*o = '\0';
		hs_stdin_judge_text(j, lit, 0);
		hs_stdin_judge_code(j, lit, 0);
		hs_stdin_escape_views(j, lit, 0);
		free(lit);
	}
}

/*
 * Bash's history expansion ("!!", "!-2", "!$", "^a^b", fc -s) replays
 * earlier input the guard does not keep.
 */
int
hs_stdin_history_expansion(const char *line)
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
int
hs_stdin_reconfigures_editor(const char *line)
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
void
hs_stdin_judge_views(struct hs_stdin_judge *j, const char *text, int quotes)
{
	hs_stdin_judge_text(j, text, 0);
	hs_stdin_judge_code(j, text, 0);
	hs_stdin_escape_views(j, text, quotes);
	hs_stdin_literal_views(j, text);
}

/* The typed bytes without control bytes and escape sequences (keys), or NULL. */
char *
hs_stdin_strip_keys(const char *s)
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
