/* SPDX-License-Identifier: MIT */
/*
 * lex.c - shell words: quoting, escapes, expansions, brace expansion.
 *
 * A word is reduced to the text the shell would pass to the program after
 * quote removal.  Anything only known at run time (parameter expansion,
 * arithmetic, command substitution) becomes HS_SH_DYN_CHAR and sets
 * HS_W_DYN, so later stages can tell a literal "rm" from "$cmd".  Command
 * and process substitutions are parsed here, recursively, because the
 * commands inside them run.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>

#include "core/safety/shell/shparse.h"

/* Unquoted brace characters are kept as markers until brace expansion. */
#define BR_OPEN  '\x02'
#define BR_COMMA '\x03'
#define BR_CLOSE '\x04'
/* Where an unquoted $IFS (or a known value's blank) splits a word. */
#define IFS_MARK '\x05'
/* Lexer-internal word flag: IFS_MARK was put in the word. */
#define W_IFS 0x8000u

struct sb {
	struct hs_arena *a;
	char *s;
	size_t len, cap;
};

static void
sb_put(struct hs_sh_parser *p, struct sb *b, char c)
{
	char *ns;
	size_t ncap;

	if (b->len + 1 >= b->cap) {
		ncap = b->cap ? b->cap * 2 : 32;
		ns = hs_arena_alloc(b->a, ncap);
		if (!ns) {
			hs_sh_fail(p, "input too large");
			return;
		}
		if (b->len)
			memcpy(ns, b->s, b->len);
		b->s = ns;
		b->cap = ncap;
	}
	b->s[b->len++] = c;
	b->s[b->len] = '\0';
}

static void
sb_putn(struct hs_sh_parser *p, struct sb *b, const char *s, size_t n)
{
	while (n-- && !p->err)
		sb_put(p, b, *s++);
}

static void
sb_utf8(struct hs_sh_parser *p, struct sb *b, unsigned long cp)
{
	if (cp < 0x80) {
		sb_put(p, b, (char)cp);
	} else if (cp < 0x800) {
		sb_put(p, b, (char)(0xc0 | (cp >> 6)));
		sb_put(p, b, (char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		sb_put(p, b, (char)(0xe0 | (cp >> 12)));
		sb_put(p, b, (char)(0x80 | ((cp >> 6) & 0x3f)));
		sb_put(p, b, (char)(0x80 | (cp & 0x3f)));
	} else {
		sb_put(p, b, (char)(0xf0 | ((cp >> 18) & 0x07)));
		sb_put(p, b, (char)(0x80 | ((cp >> 12) & 0x3f)));
		sb_put(p, b, (char)(0x80 | ((cp >> 6) & 0x3f)));
		sb_put(p, b, (char)(0x80 | (cp & 0x3f)));
	}
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void
add_subst(struct hs_sh_parser *p, struct hs_sh_word *w, int kind, struct hs_sh_node *body)
{
	struct hs_sh_subst *su = hs_arena_zalloc(p->a, sizeof(*su)), **t;

	if (!su) {
		hs_sh_fail(p, "input too large");
		return;
	}
	su->kind = kind;
	su->body = body;
	for (t = &w->subs; *t; t = &(*t)->next)
		;
	*t = su;
	w->flags |= HS_W_SUBST | HS_W_DYN;
}

/* $'...': the ANSI-C quoting bash offers, decoded the way bash does. */
/* One character of $'...': bash ends the string at a NUL (\0, \x00, \c@), keeping what came before. */
static void
aput(struct hs_sh_parser *p, struct sb *b, int *cut, char c)
{
	if (!c)
		*cut = 1;
	if (!*cut)
		sb_put(p, b, c);
}

static void
lex_ansi(struct hs_sh_parser *p, struct sb *b)
{
	const char *s = p->s;
	size_t n = p->n;
	unsigned long v;
	int k, d, cut = 0;

	p->i += 2;
	while (p->i < n && s[p->i] != '\'' && !p->err) {
		if (s[p->i] != '\\' || p->i + 1 >= n) {
			aput(p, b, &cut, s[p->i++]);
			continue;
		}
		p->i++;
		switch (s[p->i]) {
		case 'a': aput(p, b, &cut, '\a'); p->i++; break;
		case 'b': aput(p, b, &cut, '\b'); p->i++; break;
		case 'e': case 'E': aput(p, b, &cut, '\x1b'); p->i++; break;
		case 'f': aput(p, b, &cut, '\f'); p->i++; break;
		case 'n': aput(p, b, &cut, '\n'); p->i++; break;
		case 'r': aput(p, b, &cut, '\r'); p->i++; break;
		case 't': aput(p, b, &cut, '\t'); p->i++; break;
		case 'v': aput(p, b, &cut, '\v'); p->i++; break;
		case '\\': case '\'': case '"': case '?':
			aput(p, b, &cut, s[p->i++]);
			break;
		case 'c':
			p->i++;
			if (p->i < n)
				aput(p, b, &cut, (char)(s[p->i++] & 0x1f));
			break;
		case 'x': case 'u': case 'U': {
			int max = s[p->i] == 'x' ? 2 : s[p->i] == 'u' ? 4 : 8;
			int is_x = s[p->i] == 'x';

			p->i++;
			v = 0;
			for (k = 0; k < max && p->i < n && (d = hexval((unsigned char)s[p->i])) >= 0; k++, p->i++)
				v = v * 16 + (unsigned long)d;
			if (k == 0) {
				aput(p, b, &cut, '\\');
				aput(p, b, &cut, s[p->i - 1]);
			} else if (is_x) {
				aput(p, b, &cut, (char)v);
			} else if (v == 0) {
				cut = 1;
			} else if (!cut) {
				sb_utf8(p, b, v > 0x10ffff ? 0xfffd : v);
			}
			break;
		}
		default:
			if (s[p->i] >= '0' && s[p->i] <= '7') {
				v = 0;
				for (k = 0; k < 3 && p->i < n && s[p->i] >= '0' && s[p->i] <= '7'; k++, p->i++)
					v = v * 8 + (unsigned long)(s[p->i] - '0');
				aput(p, b, &cut, (char)v);
			} else {
				aput(p, b, &cut, '\\');
				aput(p, b, &cut, s[p->i++]);
			}
		}
	}
	if (p->i >= n) {
		hs_sh_fail(p, "unterminated $'...' quote");
		return;
	}
	p->i++;
}

static void lex_dollar(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w, int in_dq);
static void lex_dq(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w, int heredoc);

/* `...`: the old command substitution; its text is unescaped, then parsed. */
static void
lex_backtick(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w, int in_dq)
{
	struct sb c = { .a = p->a };
	struct hs_sh_node *body;
	const char *why = NULL;
	char d;

	p->i++;
	while (p->i < p->n && p->s[p->i] != '`' && !p->err) {
		if (p->s[p->i] == '\\' && p->i + 1 < p->n) {
			d = p->s[p->i + 1];
			if (d == '`' || d == '\\' || d == '$' || (in_dq && d == '"')) {
				sb_put(p, &c, d);
				p->i += 2;
				continue;
			}
		}
		sb_put(p, &c, p->s[p->i++]);
	}
	if (p->err)
		return;
	if (p->i >= p->n) {
		hs_sh_fail(p, "unterminated backquote");
		return;
	}
	p->i++;
	body = hs_sh_parse(p->a, c.s ? c.s : "", c.len, p->depth + 1, &why);
	if (!body) {
		hs_sh_fail(p, why ? why : "bad command substitution");
		return;
	}
	add_subst(p, w, HS_SUB_CMD, body);
	sb_put(p, b, HS_SH_DYN_CHAR);
}

/* $(...): parsed in place, so quotes and nesting inside it are honoured. */
static void
lex_cmdsubst(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w, int kind)
{
	struct hs_sh_node *body;

	p->i += 2;
	if (++p->depth > HS_SH_MAX_DEPTH) {
		hs_sh_fail(p, "nesting too deep");
		return;
	}
	body = hs_sh_parse_list(p, 0);
	p->depth--;
	if (p->err)
		return;
	while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n'))
		p->i++;
	if (p->i >= p->n || p->s[p->i] != ')') {
		hs_sh_fail(p, "unterminated command substitution");
		return;
	}
	p->i++;
	add_subst(p, w, kind, body);
	sb_put(p, b, HS_SH_DYN_CHAR);
}

/*
 * Arithmetic and array bodies are not words, but bash expands what is in
 * them ($((a[$(cmd)])), x=( $(cmd) )): lex s[from..to) for the
 * substitutions it holds, attaching them to w.
 */
static void
lex_slice_subs(struct hs_sh_parser *p, struct hs_sh_word *w, size_t from, size_t to, int as_words)
{
	struct hs_sh_parser sub;
	struct sb scratch = { .a = p->a };
	struct hs_sh_word *e;
	struct hs_sh_subst **tail;
	size_t at;

	hs_sh_parser_init(&sub, p->a, p->s + from, to - from, p->depth + 1);
	sub.vars = p->vars;
	sub.ifs_set = p->ifs_set;
	if (!as_words) {
		lex_dq(&sub, &scratch, w, 1);
	} else {
		while (sub.i < sub.n && !sub.err) {
			hs_sh_skip_blanks(&sub);
			if (sub.i < sub.n && (sub.s[sub.i] == '\n' || hs_sh_is_meta((unsigned char)sub.s[sub.i]))) {
				sub.i++;
				continue;
			}
			at = sub.i;
			for (e = hs_sh_lex_word(&sub); e; e = e->next) {
				for (tail = &w->subs; *tail; tail = &(*tail)->next)
					;
				*tail = e->subs;
			}
			if (sub.i == at)
				sub.i++;
		}
	}
	if (sub.err)
		hs_sh_fail(p, sub.errmsg);
}

/* $((...)): arithmetic; returns 0 when the text is not arithmetic after all. */
static int
lex_arith(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w)
{
	size_t j = p->i + 3;
	int depth = 0;

	for (; j < p->n; j++) {
		if (p->s[j] == '(') {
			depth++;
		} else if (p->s[j] == ')') {
			if (depth == 0) {
				if (j + 1 < p->n && p->s[j + 1] == ')') {
					lex_slice_subs(p, w, p->i + 3, j, 0);
					p->i = j + 2;
					w->flags |= HS_W_DYN;
					sb_put(p, b, HS_SH_DYN_CHAR);
					return 1;
				}
				return 0;
			}
			depth--;
		}
	}
	return 0;
}

static int
is_name_start(int c)
{
	return isalpha(c) || c == '_';
}

static int
is_name_char(int c)
{
	return isalnum(c) || c == '_';
}

/*
 * A parameter reference.  $HOME and $XDG_CONFIG_HOME at the start of a word
 * are kept symbolically ("~", "~/.config") because rules care about paths
 * under them; everything else is a run-time value.
 */
static struct hs_sh_var *
find_var(const struct hs_sh_parser *p, const char *name, size_t nlen)
{
	struct hs_sh_var *v;

	for (v = p->vars; v; v = v->next)
		if (v->nlen == nlen && !memcmp(v->name, name, nlen))
			return v;
	return NULL;
}

/* A run-time value; unquoted after IFS was assigned, nobody knows how it splits. */
static void
put_dyn(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w, int in_dq)
{
	if (!in_dq && p->ifs_set)
		w->flags |= HS_W_OPAQUE;
	w->flags |= HS_W_DYN;
	sb_put(p, b, HS_SH_DYN_CHAR);
}

static void
put_param(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w, const char *name, size_t nlen,
	  int in_dq)
{
	const struct hs_sh_var *v;
	const char *s;

	if (nlen == 4 && !memcmp(name, "HOME", 4)) {
		sb_put(p, b, '~');
		w->flags |= HS_W_HOME;
		return;
	}
	if (b->len == 0 && nlen == 15 && !memcmp(name, "XDG_CONFIG_HOME", 15)) {
		sb_putn(p, b, "~/.config", 9);
		w->flags |= HS_W_HOME;
		return;
	}
	if (nlen == 3 && !memcmp(name, "IFS", 3) && !p->ifs_set) {
		/* The default IFS: unquoted it splits the word here, quoted it is a blank. */
		sb_put(p, b, in_dq ? ' ' : IFS_MARK);
		w->flags |= in_dq ? 0 : W_IFS;
		return;
	}
	v = p->vars ? find_var(p, name, nlen) : NULL;
	if (v && v->value) {
		/* Assigned a literal earlier in this command line: that is the value.
		 * Unquoted after IFS was assigned, it splits in a way not followed here. */
		if (!in_dq && p->ifs_set)
			w->flags |= HS_W_OPAQUE;
		for (s = v->value; *s; s++) {
			if (!in_dq && (*s == ' ' || *s == '\t' || *s == '\n')) {
				sb_put(p, b, IFS_MARK);
				w->flags |= W_IFS;
				continue;
			}
			if (!in_dq && (*s == '*' || *s == '?' || *s == '['))
				w->flags |= HS_W_GLOB;
			sb_put(p, b, *s);
		}
		return;
	}
	put_dyn(p, b, w, in_dq);
}

/* Digits at s[*i], as a number (capped); -1 when there are none. */
static long
read_num(const struct hs_sh_parser *p, size_t *i)
{
	long v = -1;

	while (*i < p->n && isdigit((unsigned char)p->s[*i]) && v < 100000)
		v = (v < 0 ? 0 : v * 10) + (p->s[(*i)++] - '0');
	return v;
}

/*
 * ${IFS:OFF} and ${IFS:OFF:LEN} with the default IFS (" \t\n") are blanks,
 * so they split the word as $IFS does.  Returns 1 when handled.
 */
static int
ifs_substring(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w, size_t start, size_t nend, int in_dq)
{
	size_t i = nend + 1;
	long off, len = 3;

	if (p->ifs_set || nend - start != 3 || memcmp(p->s + start, "IFS", 3) || nend >= p->n || p->s[nend] != ':')
		return 0;
	off = read_num(p, &i);
	if (off < 0)
		off = 0; /* ${IFS::1} */
	if (i < p->n && p->s[i] == ':') {
		i++;
		len = read_num(p, &i);
		if (len < 0)
			return 0;
	}
	if (i >= p->n || p->s[i] != '}')
		return 0;
	p->i = i + 1;
	if (off < 3 && len > 0) {
		sb_put(p, b, in_dq ? ' ' : IFS_MARK);
		w->flags |= in_dq ? 0 : W_IFS;
	}
	return 1;
}

static void
lex_brace_param(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w, int in_dq)
{
	struct sb scratch = { .a = p->a };
	size_t start, nend;
	int depth = 1;
	char c;

	p->i += 2;
	start = p->i;
	for (nend = start; nend < p->n && is_name_char((unsigned char)p->s[nend]); nend++)
		;
	if (nend < p->n && p->s[nend] == '}') {
		put_param(p, b, w, p->s + start, nend - start, in_dq);
		p->i = nend + 1;
		return;
	}
	if (ifs_substring(p, b, w, start, nend, in_dq))
		return;
	/* Operators such as ${x:-$(cmd)} may hide commands: lex what is inside. */
	while (p->i < p->n && !p->err) {
		c = p->s[p->i];
		if (c == '\\' && p->i + 1 < p->n) {
			p->i += 2;
		} else if (c == '\'') {
			const char *q = memchr(p->s + p->i + 1, '\'', p->n - p->i - 1);

			p->i = q ? (size_t)(q - p->s) + 1 : p->i + 1;
		} else if (c == '"') {
			p->i++;
			lex_dq(p, &scratch, w, 0);
		} else if (c == '$') {
			lex_dollar(p, &scratch, w, 1);
		} else if (c == '`') {
			lex_backtick(p, &scratch, w, 1);
		} else if (c == '{') {
			depth++;
			p->i++;
		} else if (c == '}') {
			p->i++;
			if (--depth == 0)
				break;
		} else {
			p->i++;
		}
	}
	if (depth != 0 && !p->err) {
		hs_sh_fail(p, "unterminated ${...}");
		return;
	}
	/* ${IFS:0:1} and friends: how the word splits is not worth guessing. */
	if (nend - start == 3 && !memcmp(p->s + start, "IFS", 3) && !in_dq)
		w->flags |= HS_W_OPAQUE;
	put_dyn(p, b, w, in_dq);
}

static void
lex_dollar(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w, int in_dq)
{
	size_t st, j = p->i + 1;
	char c1;

	/* $\<newline>'...': a line continuation vanishes before the shell reads the word. */
	while (j + 1 < p->n && p->s[j] == '\\' && p->s[j + 1] == '\n')
		j += 2;
	c1 = j < p->n ? p->s[j] : '\0';
	if (j != p->i + 1 && (c1 == '\'' || c1 == '"' || c1 == '(' || c1 == '{' || is_name_start((unsigned char)c1) ||
			      (c1 && strchr("0123456789@*#?$!-", c1))))
		p->i = j - 1; /* the branches below step over "$" and c1 by offset */

	if (c1 == '\'' && !in_dq) {
		w->flags |= HS_W_QUOTED;
		lex_ansi(p, b);
	} else if (c1 == '"' && !in_dq) {
		w->flags |= HS_W_QUOTED;
		p->i += 2;
		lex_dq(p, b, w, 0);
	} else if (c1 == '(') {
		if (p->i + 2 < p->n && p->s[p->i + 2] == '(' && lex_arith(p, b, w))
			return;
		lex_cmdsubst(p, b, w, HS_SUB_CMD);
	} else if (c1 == '{') {
		lex_brace_param(p, b, w, in_dq);
	} else if (is_name_start((unsigned char)c1)) {
		st = p->i + 1;
		for (p->i = st; p->i < p->n && is_name_char((unsigned char)p->s[p->i]); p->i++)
			;
		put_param(p, b, w, p->s + st, p->i - st, in_dq);
	} else if (c1 && strchr("0123456789@*#?$!-", c1)) {
		p->i += 2;
		put_dyn(p, b, w, in_dq);
	} else {
		sb_put(p, b, '$');
		p->i++;
	}
}

/* Inside "..." (or an unquoted heredoc body, where " is an ordinary character). */
static void
lex_dq(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w, int heredoc)
{
	char c, d;

	while (p->i < p->n && !p->err) {
		c = p->s[p->i];
		if (c == '"' && !heredoc) {
			p->i++;
			return;
		}
		if (c == '\\' && p->i + 1 < p->n) {
			d = p->s[p->i + 1];
			if (d == '\n') {
				p->i += 2;
				continue;
			}
			if (d == '$' || d == '`' || d == '\\' || (d == '"' && !heredoc)) {
				sb_put(p, b, d);
				p->i += 2;
				continue;
			}
			sb_put(p, b, c);
			p->i++;
			continue;
		}
		if (c == '$') {
			lex_dollar(p, b, w, 1);
			continue;
		}
		if (c == '`') {
			lex_backtick(p, b, w, 1);
			continue;
		}
		sb_put(p, b, c);
		p->i++;
	}
	if (!heredoc && !p->err)
		hs_sh_fail(p, "unterminated double quote");
}

struct hs_sh_word *
hs_sh_word_lit(struct hs_arena *a, const char *s, size_t n)
{
	struct hs_sh_word *w = hs_arena_zalloc(a, sizeof(*w));

	if (!w)
		return NULL;
	w->s = hs_arena_strndup(a, s, n);
	if (!w->s)
		return NULL;
	w->len = n;
	return w;
}

static void
unmark(char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] == BR_OPEN)
			s[i] = '{';
		else if (s[i] == BR_COMMA)
			s[i] = ',';
		else if (s[i] == BR_CLOSE)
			s[i] = '}';
	}
}

struct brace_out {
	struct hs_arena *a;
	const struct hs_sh_word *proto;
	struct hs_sh_word *head, **tail;
	int count;
	int failed;
};

static void
brace_emit(struct brace_out *o, const char *s, size_t n)
{
	struct hs_sh_word *w;

	if (o->count >= HS_SH_MAX_BRACE_WORDS)
		return;
	w = hs_sh_word_lit(o->a, s, n);
	if (!w) {
		o->failed = 1;
		return;
	}
	unmark(w->s, n);
	w->flags = o->proto->flags & ~HS_W_BRACE;
	w->subs = o->proto->subs;
	*o->tail = w;
	o->tail = &w->next;
	o->count++;
}

/* Expand the first {a,b,...} group of s and recurse on each result. */
static void
brace_expand(struct brace_out *o, const char *s, size_t n, int level)
{
	size_t i, j, alt, close = 0, k;
	int depth, commas;
	char *buf;

	if (o->failed || o->count >= HS_SH_MAX_BRACE_WORDS)
		return;
	for (i = 0; i < n && level < 32; i++) {
		if (s[i] != BR_OPEN)
			continue;
		depth = 0;
		commas = 0;
		for (j = i; j < n; j++) {
			if (s[j] == BR_OPEN)
				depth++;
			else if (s[j] == BR_CLOSE && --depth == 0)
				break;
			else if (s[j] == BR_COMMA && depth == 1)
				commas++;
		}
		if (j < n && commas) {
			close = j;
			break;
		}
	}
	if (!close) {
		brace_emit(o, s, n);
		return;
	}
	buf = hs_arena_alloc(o->a, n + 1);
	if (!buf) {
		o->failed = 1;
		return;
	}
	depth = 0;
	alt = i + 1;
	for (j = i + 1; j <= close; j++) {
		if (s[j] == BR_OPEN) {
			depth++;
		} else if (s[j] == BR_CLOSE && depth > 0) {
			depth--;
		} else if ((s[j] == BR_COMMA && depth == 0) || j == close) {
			k = 0;
			memcpy(buf, s, i);
			k = i;
			memcpy(buf + k, s + alt, j - alt);
			k += j - alt;
			memcpy(buf + k, s + close + 1, n - close - 1);
			k += n - close - 1;
			brace_expand(o, buf, k, level + 1);
			alt = j + 1;
		}
	}
}

/*
 * Split the words of list at IFS_MARK as bash splits an unquoted $IFS with
 * the default IFS: empty fields vanish.  An assignment is not split.
 */
static struct hs_sh_word *
split_ifs(struct hs_sh_parser *p, struct hs_sh_word *list)
{
	struct hs_sh_word *head = NULL, **tail = &head, *w, *next, *nw;
	size_t i, st;
	int first;

	for (w = list; w; w = next) {
		next = w->next;
		w->next = NULL;
		w->flags &= ~W_IFS;
		if (!memchr(w->s, IFS_MARK, w->len)) {
			*tail = w;
			tail = &w->next;
			continue;
		}
		if (w->flags & HS_W_ASSIGN) {
			for (i = 0; i < w->len; i++)
				if (w->s[i] == IFS_MARK)
					w->s[i] = ' ';
			*tail = w;
			tail = &w->next;
			continue;
		}
		first = 1;
		for (st = i = 0; i <= w->len; i++) {
			if (i < w->len && w->s[i] != IFS_MARK)
				continue;
			if (i > st) {
				nw = hs_sh_word_lit(p->a, w->s + st, i - st);
				if (!nw) {
					hs_sh_fail(p, "input too large");
					return NULL;
				}
				nw->flags = w->flags & ~W_IFS;
				/* The substitutions ran once; the first piece carries them. */
				nw->subs = first ? w->subs : NULL;
				first = 0;
				*tail = nw;
				tail = &nw->next;
			}
			st = i + 1;
		}
		if (first) {
			/* Nothing but blanks: bash drops the word; call that unknowable. */
			w->len = 0;
			w->s[0] = '\0';
			w->flags = (w->flags & ~W_IFS) | HS_W_OPAQUE;
			*tail = w;
			tail = &w->next;
		}
	}
	return head;
}

static struct hs_sh_word *
finish_word1(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w)
{
	struct brace_out o;

	w->s = b->s ? b->s : hs_arena_strndup(p->a, "", 0);
	w->len = b->len;
	if (!w->s) {
		hs_sh_fail(p, "input too large");
		return NULL;
	}
	if (!(w->flags & HS_W_BRACE)) {
		unmark(w->s, w->len);
		return w;
	}
	memset(&o, 0, sizeof(o));
	o.a = p->a;
	o.proto = w;
	o.tail = &o.head;
	brace_expand(&o, w->s, w->len, 0);
	if (o.failed || !o.head) {
		hs_sh_fail(p, "input too large");
		return NULL;
	}
	return o.head;
}

static struct hs_sh_word *
finish_word(struct hs_sh_parser *p, struct sb *b, struct hs_sh_word *w)
{
	struct hs_sh_word *r = finish_word1(p, b, w);

	if (!r || !(w->flags & W_IFS))
		return r;
	return split_ifs(p, r);
}

struct hs_sh_word *
hs_sh_lex_word(struct hs_sh_parser *p)
{
	struct hs_sh_word *w = hs_arena_zalloc(p->a, sizeof(*w));
	struct sb b = { .a = p->a };
	int name_ok = 1, depth;
	char c;

	if (!w) {
		hs_sh_fail(p, "input too large");
		return NULL;
	}
	if (p->i + 1 < p->n && (p->s[p->i] == '<' || p->s[p->i] == '>') && p->s[p->i + 1] == '(') {
		lex_cmdsubst(p, &b, w, p->s[p->i] == '<' ? HS_SUB_PROC_IN : HS_SUB_PROC_OUT);
		w->flags |= HS_W_PROC;
		if (p->err)
			return NULL;
		/* <(cmd)#x is one word: what follows the ')' continues it ('#' included). */
		name_ok = 0;
	}
	while (p->i < p->n && !p->err) {
		c = p->s[p->i];
		if (hs_sh_is_meta((unsigned char)c))
			break;
		switch (c) {
		case '\\':
			w->flags |= HS_W_QUOTED;
			name_ok = 0;
			if (p->i + 1 >= p->n) {
				sb_put(p, &b, '\\');
				p->i++;
			} else if (p->s[p->i + 1] == '\n') {
				p->i += 2;
			} else {
				sb_put(p, &b, p->s[p->i + 1]);
				p->i += 2;
			}
			break;
		case '\'': {
			const char *q = memchr(p->s + p->i + 1, '\'', p->n - p->i - 1);

			if (!q) {
				hs_sh_fail(p, "unterminated single quote");
				return NULL;
			}
			sb_putn(p, &b, p->s + p->i + 1, (size_t)(q - p->s) - p->i - 1);
			p->i = (size_t)(q - p->s) + 1;
			w->flags |= HS_W_QUOTED;
			name_ok = 0;
			break;
		}
		case '"':
			p->i++;
			w->flags |= HS_W_QUOTED;
			name_ok = 0;
			lex_dq(p, &b, w, 0);
			break;
		case '$':
			name_ok = 0;
			lex_dollar(p, &b, w, 0);
			break;
		case '`':
			name_ok = 0;
			lex_backtick(p, &b, w, 0);
			break;
		case '{':
			sb_put(p, &b, BR_OPEN);
			w->flags |= HS_W_BRACE;
			name_ok = 0;
			p->i++;
			break;
		case ',':
			sb_put(p, &b, BR_COMMA);
			name_ok = 0;
			p->i++;
			break;
		case '}':
			sb_put(p, &b, BR_CLOSE);
			name_ok = 0;
			p->i++;
			break;
		case '*': case '?': case '[':
			w->flags |= HS_W_GLOB;
			sb_put(p, &b, c);
			name_ok = 0;
			p->i++;
			break;
		case '~':
			if (b.len == 0)
				w->flags |= HS_W_HOME;
			sb_put(p, &b, c);
			name_ok = 0;
			p->i++;
			break;
		case '=':
			sb_put(p, &b, c);
			p->i++;
			if (name_ok && b.len > 1 && !(w->flags & HS_W_ASSIGN)) {
				w->flags |= HS_W_ASSIGN;
				/* NAME=(a b c): an array assignment; keep it as one word. */
				if (p->i < p->n && p->s[p->i] == '(') {
					size_t open = p->i;

					depth = 0;
					for (; p->i < p->n; p->i++) {
						if (p->s[p->i] == '(')
							depth++;
						else if (p->s[p->i] == ')' && --depth == 0)
							break;
					}
					if (p->i >= p->n) {
						hs_sh_fail(p, "unterminated array assignment");
						return NULL;
					}
					lex_slice_subs(p, w, open + 1, p->i, 1);
					if (p->err)
						return NULL;
					p->i++;
					w->flags |= HS_W_DYN;
					sb_put(p, &b, HS_SH_DYN_CHAR);
				}
			}
			name_ok = 0;
			break;
		default:
			/* A marker smuggled in by an outer expansion stays run-time. */
			if (c == HS_SH_DYN_CHAR)
				w->flags |= HS_W_DYN;
			else if (c == IFS_MARK)
				w->flags |= HS_W_OPAQUE;
			if (name_ok && (!is_name_char((unsigned char)c) || (b.len == 0 && isdigit((unsigned char)c))))
				name_ok = 0;
			sb_put(p, &b, c);
			p->i++;
		}
	}
	if (p->err)
		return NULL;
	return finish_word(p, &b, w);
}

struct hs_sh_word *
hs_sh_lex_heredoc(struct hs_sh_parser *p, const char *s, size_t n)
{
	struct hs_sh_parser sub;
	struct hs_sh_word *w = hs_arena_zalloc(p->a, sizeof(*w));
	struct sb b = { .a = p->a };

	if (!w) {
		hs_sh_fail(p, "input too large");
		return NULL;
	}
	hs_sh_parser_init(&sub, p->a, s, n, p->depth + 1);
	sub.vars = p->vars;
	sub.ifs_set = p->ifs_set;
	lex_dq(&sub, &b, w, 1);
	if (sub.err) {
		hs_sh_fail(p, sub.errmsg);
		return NULL;
	}
	w->flags &= ~HS_W_BRACE;
	w->s = b.s ? b.s : hs_arena_strndup(p->a, "", 0);
	w->len = b.len;
	if (!w->s)
		hs_sh_fail(p, "input too large");
	return w;
}

/* The value of var is no longer known (or, when value is set, known for the first time). */
static void
set_var(struct hs_sh_parser *p, const char *name, size_t nlen, const char *value)
{
	struct hs_sh_var *v = find_var(p, name, nlen);

	if (nlen == 3 && !memcmp(name, "IFS", 3))
		p->ifs_set = 1;
	if (v) {
		v->value = NULL; /* assigned twice, or named: which value holds is not known */
		return;
	}
	if (!value)
		return; /* never known: it stays a run-time value */
	v = hs_arena_zalloc(p->a, sizeof(*v));
	if (!v) {
		hs_sh_fail(p, "input too large");
		return;
	}
	v->name = name;
	v->nlen = nlen;
	v->value = value;
	v->next = p->vars;
	p->vars = v;
}

static size_t
name_len(const char *s)
{
	size_t n = 0;

	if (!is_name_start((unsigned char)s[0]))
		return 0;
	while (is_name_char((unsigned char)s[n]))
		n++;
	return n;
}

/* NAME=VALUE: remember VALUE when it is a plain literal. */
static void
note_assign(struct hs_sh_parser *p, const struct hs_sh_word *w, int bare)
{
	size_t nl = name_len(w->s);
	int lit = bare && !(w->flags & (HS_W_DYN | HS_W_GLOB | HS_W_OPAQUE | HS_W_SUBST));

	if (!nl || (w->s[nl] != '=' && !(w->s[nl] == '+' && w->s[nl + 1] == '=')))
		return;
	set_var(p, w->s, nl, lit && w->s[nl] == '=' ? w->s + nl + 1 : NULL);
}

void
hs_sh_note_assigns(struct hs_sh_parser *p, const struct hs_sh_word *assigns, const struct hs_sh_word *words)
{
	const struct hs_sh_word *w;
	int declaring;
	size_t nl;

	for (w = assigns; w; w = w->next)
		note_assign(p, w, !words);
	if (!words)
		return;
	declaring = !(words->flags & HS_W_DYN) &&
		(!strcmp(words->s, "export") || !strcmp(words->s, "declare") || !strcmp(words->s, "typeset") ||
		 !strcmp(words->s, "local") || !strcmp(words->s, "readonly"));
	for (w = words->next; w; w = w->next) {
		if (declaring && strchr(w->s, '=')) {
			note_assign(p, w, 1);
			continue;
		}
		/* read X, for X, unset X, printf -v X, let X=1: a known name loses its value. */
		nl = name_len(w->s);
		if (nl && (nl == w->len || w->s[nl] == '=') && (p->vars || (nl == 3 && !memcmp(w->s, "IFS", 3))))
			set_var(p, w->s, nl, NULL);
	}
}

struct hs_sh_word *
hs_sh_lex_arith_body(struct hs_sh_parser *p, size_t from, size_t to)
{
	struct hs_sh_word *w = hs_sh_word_lit(p->a, "\x01", 1);

	if (!w) {
		hs_sh_fail(p, "input too large");
		return NULL;
	}
	w->flags |= HS_W_DYN;
	lex_slice_subs(p, w, from, to, 0);
	return p->err ? NULL : w;
}
