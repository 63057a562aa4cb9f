/* SPDX-License-Identifier: MIT */
/*
 * parse.c - the shell grammar: lists, pipelines, compound commands,
 * function definitions, redirections and heredocs.
 *
 * The grammar follows bash closely enough that every command which would
 * run is found; where the input is not valid shell the parse fails and the
 * caller treats the command as opaque.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>

#include "core/safety/shell/shparse.h"

enum kw {
	KW_NONE = 0, KW_IF, KW_THEN, KW_ELIF, KW_ELSE, KW_FI, KW_WHILE, KW_UNTIL,
	KW_DO, KW_DONE, KW_FOR, KW_SELECT, KW_IN, KW_CASE, KW_ESAC, KW_FUNCTION,
	KW_LBRACE, KW_RBRACE, KW_BANG, KW_DBRACKET, KW_TIME,
};

#define STOP(k) (1u << (k))

static const struct {
	const char *word;
	size_t len;
	enum kw kw;
} keywords[] = {
	{ "if", 2, KW_IF }, { "then", 4, KW_THEN }, { "elif", 4, KW_ELIF }, { "else", 4, KW_ELSE },
	{ "fi", 2, KW_FI }, { "while", 5, KW_WHILE }, { "until", 5, KW_UNTIL }, { "do", 2, KW_DO },
	{ "done", 4, KW_DONE }, { "for", 3, KW_FOR }, { "select", 6, KW_SELECT }, { "in", 2, KW_IN },
	{ "case", 4, KW_CASE }, { "esac", 4, KW_ESAC }, { "function", 8, KW_FUNCTION },
	{ "{", 1, KW_LBRACE }, { "}", 1, KW_RBRACE }, { "!", 1, KW_BANG }, { "[[", 2, KW_DBRACKET },
	{ "time", 4, KW_TIME },
};

/* The longest keyword, and the characters keywords start with. */
#define KW_MAXLEN 8
#define KW_FIRST "itefwudsc{}!["

void
hs_sh_fail(struct hs_sh_parser *p, const char *msg)
{
	if (!p->err) {
		p->err = 1;
		p->errmsg = msg;
	}
}

void
hs_sh_parser_init(struct hs_sh_parser *p, struct hs_arena *a, const char *s, size_t n, int depth)
{
	memset(p, 0, sizeof(*p));
	p->s = s;
	p->n = n;
	p->a = a;
	p->depth = depth;
	p->hd_tail = &p->hd_head;
	if (depth > HS_SH_MAX_DEPTH)
		hs_sh_fail(p, "nesting too deep");
}

static struct hs_sh_node *
new_node(struct hs_sh_parser *p, int kind)
{
	struct hs_sh_node *n = hs_arena_zalloc(p->a, sizeof(*n));

	if (!n)
		hs_sh_fail(p, "input too large");
	else
		n->kind = kind;
	return n;
}

/* A reserved word at p->i, recognised only when it stands alone and unquoted. */
static enum kw
peek_kw(struct hs_sh_parser *p, size_t *len)
{
	size_t j = p->i, k, l;
	char c;

	/* Most words start with no keyword's first letter (and a NUL is none either). */
	if (j >= p->n || !p->s[j] || !strchr(KW_FIRST, p->s[j]))
		return KW_NONE;
	while (j < p->n) {
		c = p->s[j];
		if (hs_sh_is_meta((unsigned char)c))
			break;
		if (c == '\'' || c == '"' || c == '\\' || c == '$' || c == '`')
			return KW_NONE;
		if (++j - p->i > KW_MAXLEN)
			return KW_NONE; /* too long for a keyword */
	}
	l = j - p->i;
	for (k = 0; k < sizeof(keywords) / sizeof(keywords[0]); k++) {
		if (keywords[k].len == l && !memcmp(keywords[k].word, p->s + p->i, l)) {
			*len = l;
			return keywords[k].kw;
		}
	}
	return KW_NONE;
}

static void
skip_ws_nl(struct hs_sh_parser *p)
{
	for (;;) {
		hs_sh_skip_blanks(p);
		if (p->i < p->n && p->s[p->i] == '\n' && !p->err)
			hs_sh_eat_newline(p);
		else
			break;
	}
}

static struct hs_sh_node *parse_command(struct hs_sh_parser *p);

static void
append(struct hs_sh_node *parent, struct hs_sh_node ***tail, struct hs_sh_node *c)
{
	(void)parent;
	**tail = c;
	*tail = &c->next;
}

static int
expect_kw(struct hs_sh_parser *p, enum kw want, const char *msg)
{
	size_t len = 0;

	skip_ws_nl(p);
	if (p->err)
		return 0;
	if (peek_kw(p, &len) != want) {
		hs_sh_fail(p, msg);
		return 0;
	}
	p->i += len;
	return 1;
}

/* ((...)): skipped, but the substitutions in it run; returns a word holding them. */
static struct hs_sh_word *
skip_arith(struct hs_sh_parser *p)
{
	size_t start = p->i;
	int depth = 0;

	for (; p->i < p->n; p->i++) {
		if (p->s[p->i] == '(') {
			depth++;
		} else if (p->s[p->i] == ')') {
			if (--depth == 0) {
				p->i++;
				return hs_sh_lex_arith_body(p, start + 2, p->i - 2 > start + 2 ? p->i - 2 : start + 2);
			}
		}
	}
	hs_sh_fail(p, "unterminated ((...))");
	return NULL;
}

static void
add_words(struct hs_sh_parser *p, struct hs_sh_word ***tail, struct hs_sh_word *w)
{
	(void)p;
	**tail = w;
	while (w->next)
		w = w->next;
	*tail = &w->next;
}

static struct hs_sh_node *
parse_if(struct hs_sh_parser *p, struct hs_sh_node *b)
{
	struct hs_sh_node **t = &b->child, *c;
	size_t len = 0;
	enum kw k;

	c = hs_sh_parse_list(p, STOP(KW_THEN));
	if (c)
		append(b, &t, c);
	if (!expect_kw(p, KW_THEN, "missing 'then'"))
		return NULL;
	for (;;) {
		c = hs_sh_parse_list(p, STOP(KW_ELIF) | STOP(KW_ELSE) | STOP(KW_FI));
		if (p->err)
			return NULL;
		if (c)
			append(b, &t, c);
		skip_ws_nl(p);
		k = peek_kw(p, &len);
		if (k == KW_FI) {
			p->i += len;
			return b;
		}
		if (k == KW_ELSE) {
			p->i += len;
			c = hs_sh_parse_list(p, STOP(KW_FI));
			if (c)
				append(b, &t, c);
			return expect_kw(p, KW_FI, "missing 'fi'") ? b : NULL;
		}
		if (k != KW_ELIF) {
			hs_sh_fail(p, "missing 'fi'");
			return NULL;
		}
		p->i += len;
		c = hs_sh_parse_list(p, STOP(KW_THEN));
		if (c)
			append(b, &t, c);
		if (!expect_kw(p, KW_THEN, "missing 'then'"))
			return NULL;
	}
}

static struct hs_sh_node *
parse_loop_body(struct hs_sh_parser *p, struct hs_sh_node *b, struct hs_sh_node **t)
{
	struct hs_sh_node *c;
	size_t len = 0;

	skip_ws_nl(p);
	if (peek_kw(p, &len) == KW_LBRACE) {
		/* bash also accepts "for x in y; { ...; }". */
		p->i += len;
		c = hs_sh_parse_list(p, STOP(KW_RBRACE));
		if (c)
			*t = c;
		return expect_kw(p, KW_RBRACE, "missing '}'") ? b : NULL;
	}
	if (!expect_kw(p, KW_DO, "missing 'do'"))
		return NULL;
	c = hs_sh_parse_list(p, STOP(KW_DONE));
	if (c)
		*t = c;
	return expect_kw(p, KW_DONE, "missing 'done'") ? b : NULL;
}

static struct hs_sh_node *
parse_for(struct hs_sh_parser *p, struct hs_sh_node *b)
{
	struct hs_sh_word **wt = &b->words, *w;
	size_t len = 0;

	hs_sh_skip_blanks(p);
	if (p->i + 1 < p->n && p->s[p->i] == '(' && p->s[p->i + 1] == '(') {
		b->words = skip_arith(p);
		hs_sh_skip_blanks(p);
		if (p->i < p->n && p->s[p->i] == ';')
			p->i++;
		return p->err ? NULL : parse_loop_body(p, b, &b->child);
	}
	w = hs_sh_lex_word(p);
	if (!w)
		return NULL;
	{
		/* The loop variable takes values we do not follow. */
		struct hs_sh_word kw = { .s = (char *)"for", .len = 3, .next = w };

		hs_sh_note_assigns(p, NULL, &kw);
	}
	hs_sh_skip_blanks(p);
	if (p->i < p->n && p->s[p->i] == ';')
		p->i++;
	skip_ws_nl(p);
	if (peek_kw(p, &len) == KW_IN) {
		p->i += len;
		for (;;) {
			hs_sh_skip_blanks(p);
			if (p->err || p->i >= p->n || p->s[p->i] == ';' || p->s[p->i] == '\n')
				break;
			if (hs_sh_is_meta((unsigned char)p->s[p->i]) &&
			    !((p->s[p->i] == '<' || p->s[p->i] == '>') && p->i + 1 < p->n && p->s[p->i + 1] == '(')) {
				hs_sh_fail(p, "unexpected character in for list");
				return NULL;
			}
			w = hs_sh_lex_word(p);
			if (!w)
				return NULL;
			add_words(p, &wt, w);
		}
		if (p->i < p->n && p->s[p->i] == ';')
			p->i++;
	}
	return p->err ? NULL : parse_loop_body(p, b, &b->child);
}

static struct hs_sh_node *
parse_case(struct hs_sh_parser *p, struct hs_sh_node *b)
{
	struct hs_sh_node **t = &b->child, *c;
	struct hs_sh_word *w;
	size_t len = 0, start;

	hs_sh_skip_blanks(p);
	w = hs_sh_lex_word(p);
	if (!w)
		return NULL;
	b->words = w;
	if (!expect_kw(p, KW_IN, "missing 'in'"))
		return NULL;
	for (;;) {
		skip_ws_nl(p);
		if (p->err)
			return NULL;
		if (p->i >= p->n) {
			hs_sh_fail(p, "missing 'esac'");
			return NULL;
		}
		if (peek_kw(p, &len) == KW_ESAC) {
			p->i += len;
			return b;
		}
		start = p->i;
		if (p->s[p->i] == '(')
			p->i++;
		for (;;) {
			hs_sh_skip_blanks(p);
			if (p->i >= p->n) {
				hs_sh_fail(p, "missing ')' in case pattern");
				return NULL;
			}
			if (p->s[p->i] == ')') {
				p->i++;
				break;
			}
			if (p->s[p->i] == '|') {
				p->i++;
				continue;
			}
			if (hs_sh_is_meta((unsigned char)p->s[p->i])) {
				hs_sh_fail(p, "bad case pattern");
				return NULL;
			}
			if (!hs_sh_lex_word(p))
				return NULL;
		}
		c = hs_sh_parse_list(p, STOP(KW_ESAC));
		if (p->err)
			return NULL;
		if (c)
			append(b, &t, c);
		skip_ws_nl(p);
		if (p->i + 2 < p->n + 1 && p->i + 1 < p->n && p->s[p->i] == ';' && (p->s[p->i + 1] == ';' || p->s[p->i + 1] == '&')) {
			p->i += 2;
			if (p->i < p->n && p->s[p->i] == '&')
				p->i++;
		}
		if (p->i == start) {
			hs_sh_fail(p, "bad case item");
			return NULL;
		}
	}
}

/* [[ ... ]]: < > && || ( ) are operators of the test, not of the shell. */
static struct hs_sh_node *
parse_dbracket(struct hs_sh_parser *p, struct hs_sh_node *n)
{
	struct hs_sh_word **wt = &n->words, *w;
	char c;

	w = hs_sh_word_lit(p->a, "[[", 2);
	if (!w) {
		hs_sh_fail(p, "input too large");
		return NULL;
	}
	add_words(p, &wt, w);
	for (;;) {
		hs_sh_skip_blanks(p);
		if (p->i >= p->n || p->s[p->i] == '\n') {
			hs_sh_fail(p, "missing ']]'");
			return NULL;
		}
		if (p->i + 1 < p->n && p->s[p->i] == ']' && p->s[p->i + 1] == ']' &&
		    (p->i + 2 >= p->n || hs_sh_is_meta((unsigned char)p->s[p->i + 2]))) {
			p->i += 2;
			return n;
		}
		c = p->s[p->i];
		if (w->len == 2 && !memcmp(w->s, "=~", 2)) {
			/* The regex after =~ is one word, parentheses (and a # after them) included. */
			size_t start = p->i;
			int depth = 0;

			for (; p->i < p->n; p->i++) {
				c = p->s[p->i];
				if (depth == 0 && (c == ' ' || c == '\t' || c == '\n'))
					break;
				if (c == '\\' && p->i + 1 < p->n) {
					p->i++;
				} else if (c == '\'' || c == '"') {
					const char *q = memchr(p->s + p->i + 1, c, p->n - p->i - 1);

					if (!q) {
						hs_sh_fail(p, "unterminated quote in [[ ]]");
						return NULL;
					}
					p->i = (size_t)(q - p->s);
				} else if (c == '(') {
					depth++;
				} else if (c == ')' && depth > 0) {
					depth--;
				}
			}
			w = hs_sh_lex_arith_body(p, start, p->i);
			if (!w)
				return NULL;
			add_words(p, &wt, w);
			continue;
		}
		if (hs_sh_is_meta((unsigned char)c)) {
			size_t l = (p->i + 1 < p->n && (c == '&' || c == '|') && p->s[p->i + 1] == c) ? 2 : 1;

			w = hs_sh_word_lit(p->a, p->s + p->i, l);
			p->i += l;
		} else {
			w = hs_sh_lex_word(p);
		}
		if (!w) {
			hs_sh_fail(p, "input too large");
			return NULL;
		}
		add_words(p, &wt, w);
	}
}

static struct hs_sh_node *
parse_simple(struct hs_sh_parser *p)
{
	struct hs_sh_node *n = new_node(p, HS_SH_CMD), *f, *body;
	struct hs_sh_word **wt, **at, *w, *nx;
	struct hs_sh_redir **rt;
	char c;

	if (!n)
		return NULL;
	wt = &n->words;
	at = &n->assigns;
	rt = &n->redirs;
	for (;;) {
		hs_sh_skip_blanks(p);
		if (p->err || p->i >= p->n)
			break;
		c = p->s[p->i];
		if (c == '\n' || c == ';' || c == '|' || c == ')')
			break;
		if (c == '&' && !(p->i + 1 < p->n && p->s[p->i + 1] == '>'))
			break;
		if (hs_sh_is_redir_start(p)) {
			hs_sh_parse_redirect(p, &rt);
			continue;
		}
		if (c == '(') {
			if (n->words && !n->words->next && !n->assigns) {
				/* name () compound-command */
				p->i++;
				hs_sh_skip_blanks(p);
				if (p->i >= p->n || p->s[p->i] != ')') {
					hs_sh_fail(p, "bad function definition");
					return NULL;
				}
				p->i++;
				skip_ws_nl(p);
				body = parse_command(p);
				if (!body) {
					hs_sh_fail(p, "missing function body");
					return NULL;
				}
				f = new_node(p, HS_SH_FUNC);
				if (!f)
					return NULL;
				f->name = n->words->s;
				f->child = body;
				return f;
			}
			hs_sh_fail(p, "unexpected '('");
			return NULL;
		}
		if (c == '<' || c == '>') {
			/* A process substitution word. */
		}
		w = hs_sh_lex_word(p);
		if (!w)
			return NULL;
		for (; w; w = nx) {
			nx = w->next;
			w->next = NULL;
			if (!n->words && (w->flags & HS_W_ASSIGN)) {
				*at = w;
				at = &w->next;
			} else {
				*wt = w;
				wt = &w->next;
			}
		}
	}
	if (!n->words && !n->assigns && !n->redirs)
		return NULL;
	hs_sh_note_assigns(p, n->assigns, n->words);
	return n;
}

static struct hs_sh_node *
parse_compound(struct hs_sh_parser *p, enum kw kw, size_t klen)
{
	struct hs_sh_node *b = new_node(p, HS_SH_BLOCK), *c, *f;
	struct hs_sh_word *name;
	size_t len = 0;

	if (!b)
		return NULL;
	p->i += klen;
	switch (kw) {
	case KW_LBRACE:
		c = hs_sh_parse_list(p, STOP(KW_RBRACE));
		b->child = c;
		if (!expect_kw(p, KW_RBRACE, "missing '}'"))
			return NULL;
		break;
	case KW_IF:
		if (!parse_if(p, b))
			return NULL;
		break;
	case KW_WHILE:
	case KW_UNTIL:
		c = hs_sh_parse_list(p, STOP(KW_DO));
		b->child = c;
		if (!expect_kw(p, KW_DO, "missing 'do'"))
			return NULL;
		c = hs_sh_parse_list(p, STOP(KW_DONE));
		if (c) {
			if (b->child)
				b->child->next = c;
			else
				b->child = c;
		}
		if (!expect_kw(p, KW_DONE, "missing 'done'"))
			return NULL;
		break;
	case KW_FOR:
	case KW_SELECT:
		if (!parse_for(p, b))
			return NULL;
		break;
	case KW_CASE:
		if (!parse_case(p, b))
			return NULL;
		break;
	case KW_FUNCTION:
		hs_sh_skip_blanks(p);
		name = hs_sh_lex_word(p);
		if (!name)
			return NULL;
		hs_sh_skip_blanks(p);
		if (p->i + 1 < p->n && p->s[p->i] == '(') {
			p->i++;
			hs_sh_skip_blanks(p);
			if (p->i >= p->n || p->s[p->i] != ')') {
				hs_sh_fail(p, "bad function definition");
				return NULL;
			}
			p->i++;
		}
		skip_ws_nl(p);
		c = parse_command(p);
		if (!c) {
			hs_sh_fail(p, "missing function body");
			return NULL;
		}
		f = new_node(p, HS_SH_FUNC);
		if (!f)
			return NULL;
		f->name = name->s;
		f->child = c;
		return f;
	case KW_DBRACKET:
		b->kind = HS_SH_CMD;
		if (!parse_dbracket(p, b))
			return NULL;
		break;
	default:
		hs_sh_fail(p, "unexpected keyword");
		return NULL;
	}
	(void)len;
	hs_sh_parse_trailing_redirs(p, b);
	return p->err ? NULL : b;
}

/* At "coproc": step over it, and over a NAME that a compound command follows. */
static int
is_coproc(struct hs_sh_parser *p)
{
	size_t j = p->i + 6, k;

	if (p->n - p->i < 7 || memcmp(p->s + p->i, "coproc", 6) || (p->s[j] != ' ' && p->s[j] != '\t'))
		return 0;
	while (j < p->n && (p->s[j] == ' ' || p->s[j] == '\t'))
		j++;
	for (k = j; k < p->n && (isalnum((unsigned char)p->s[k]) || p->s[k] == '_'); k++)
		;
	if (k > j) {
		size_t m = k;

		while (m < p->n && (p->s[m] == ' ' || p->s[m] == '\t'))
			m++;
		if (m > k && m < p->n && (p->s[m] == '{' || p->s[m] == '('))
			j = m;
	}
	p->i = j;
	return 1;
}

static struct hs_sh_node *
parse_command(struct hs_sh_parser *p)
{
	struct hs_sh_node *n = NULL;
	size_t klen = 0;
	enum kw kw;

	if (++p->depth > HS_SH_MAX_DEPTH) {
		hs_sh_fail(p, "nesting too deep");
		return NULL;
	}
	hs_sh_skip_blanks(p);
	kw = peek_kw(p, &klen);
	switch (kw) {
	case KW_LBRACE: case KW_IF: case KW_WHILE: case KW_UNTIL: case KW_FOR:
	case KW_SELECT: case KW_CASE: case KW_FUNCTION: case KW_DBRACKET:
		n = parse_compound(p, kw, klen);
		break;
	default:
		if (p->i < p->n && p->s[p->i] == '(') {
			if (p->i + 1 < p->n && p->s[p->i + 1] == '(') {
				struct hs_sh_word *aw = skip_arith(p);

				/* A block whose header word carries the substitutions of the arithmetic. */
				n = p->err ? NULL : new_node(p, HS_SH_BLOCK);
				if (n) {
					n->words = aw;
					hs_sh_parse_trailing_redirs(p, n);
				}
				break;
			}
			p->i++;
			n = new_node(p, HS_SH_BLOCK);
			if (!n)
				break;
			n->child = hs_sh_parse_list(p, 0);
			skip_ws_nl(p);
			if (p->err)
				break;
			if (p->i >= p->n || p->s[p->i] != ')') {
				hs_sh_fail(p, "missing ')'");
				break;
			}
			p->i++;
			hs_sh_parse_trailing_redirs(p, n);
			break;
		}
		if (is_coproc(p)) {
			/* coproc [NAME] COMMAND: the command runs, in the background. */
			n = parse_command(p);
			break;
		}
		n = parse_simple(p);
	}
	p->depth--;
	return p->err ? NULL : n;
}

static struct hs_sh_node *
parse_pipeline(struct hs_sh_parser *p)
{
	struct hs_sh_node *first, *pipe = NULL, **t = NULL, *c;
	size_t klen = 0;
	enum kw kw;

	hs_sh_skip_blanks(p);
	kw = peek_kw(p, &klen);
	if (kw == KW_BANG || kw == KW_TIME) {
		p->i += klen;
		hs_sh_skip_blanks(p);
		if (kw == KW_TIME && p->i + 1 < p->n && p->s[p->i] == '-' && p->s[p->i + 1] == 'p' &&
		    (p->i + 2 >= p->n || hs_sh_is_meta((unsigned char)p->s[p->i + 2])))
			p->i += 2;
	}
	first = parse_command(p);
	if (!first)
		return NULL;
	for (;;) {
		hs_sh_skip_blanks(p);
		if (p->err || p->i >= p->n || p->s[p->i] != '|' || (p->i + 1 < p->n && p->s[p->i + 1] == '|'))
			break;
		p->i++;
		if (p->i < p->n && p->s[p->i] == '&')
			p->i++;
		skip_ws_nl(p);
		c = parse_command(p);
		if (!c) {
			hs_sh_fail(p, "missing command after '|'");
			return NULL;
		}
		if (!pipe) {
			pipe = new_node(p, HS_SH_PIPE);
			if (!pipe)
				return NULL;
			pipe->child = first;
			t = &first->next;
		}
		*t = c;
		t = &c->next;
	}
	return pipe ? pipe : first;
}

static struct hs_sh_node *
parse_andor(struct hs_sh_parser *p)
{
	struct hs_sh_node *first, *list = NULL, **t = NULL, *c;

	first = parse_pipeline(p);
	if (!first)
		return NULL;
	for (;;) {
		hs_sh_skip_blanks(p);
		if (p->err || p->i + 1 >= p->n)
			break;
		if (!((p->s[p->i] == '&' && p->s[p->i + 1] == '&') || (p->s[p->i] == '|' && p->s[p->i + 1] == '|')))
			break;
		p->i += 2;
		skip_ws_nl(p);
		c = parse_pipeline(p);
		if (!c) {
			hs_sh_fail(p, "missing command after '&&' or '||'");
			return NULL;
		}
		if (!list) {
			list = new_node(p, HS_SH_LIST);
			if (!list)
				return NULL;
			list->child = first;
			t = &first->next;
		}
		*t = c;
		t = &c->next;
	}
	return list ? list : first;
}

struct hs_sh_node *
hs_sh_parse_list(struct hs_sh_parser *p, unsigned stop)
{
	struct hs_sh_node *list = new_node(p, HS_SH_LIST), **t, *c;
	size_t start, klen = 0;
	enum kw kw;

	if (!list)
		return NULL;
	t = &list->child;
	for (;;) {
		skip_ws_nl(p);
		if (p->err || p->i >= p->n)
			break;
		if (p->s[p->i] == ')')
			break;
		if (p->s[p->i] == ';' && p->i + 1 < p->n && (p->s[p->i + 1] == ';' || p->s[p->i + 1] == '&'))
			break;
		kw = peek_kw(p, &klen);
		if (kw != KW_NONE && (stop & STOP(kw)))
			break;
		start = p->i;
		c = parse_andor(p);
		if (p->err)
			break;
		if (c) {
			*t = c;
			t = &c->next;
		}
		hs_sh_skip_blanks(p);
		if (p->i < p->n) {
			char ch = p->s[p->i], nx = p->i + 1 < p->n ? p->s[p->i + 1] : '\0';

			if (ch == ';' && nx != ';' && nx != '&') {
				p->i++;
			} else if (ch == '&' && nx != '&' && nx != '>') {
				if (c)
					c->bg = 1;
				p->i++;
			} else if (ch == '\n') {
				hs_sh_eat_newline(p);
			}
		}
		if (p->i == start) {
			hs_sh_fail(p, "unexpected character");
			break;
		}
	}
	return p->err ? NULL : list;
}

struct hs_sh_node *
hs_sh_parse(struct hs_arena *a, const char *src, size_t len, int depth, const char **errmsg)
{
	struct hs_sh_parser p;
	struct hs_sh_node *root;

	hs_sh_parser_init(&p, a, src, len, depth);
	root = p.err ? NULL : hs_sh_parse_list(&p, 0);
	if (!p.err) {
		skip_ws_nl(&p);
		if (p.i < p.n)
			hs_sh_fail(&p, p.s[p.i] == ')' ? "unexpected ')'" : "unexpected ';;'");
	}
	if (p.err) {
		*errmsg = p.errmsg;
		return NULL;
	}
	return root;
}

/* Messages of failures that more input could mend: bash would read another line. */
static int
unfinished(const char *msg)
{
	if (!strncmp(msg, "unterminated ", 13))
		return 1;
	return !strncmp(msg, "missing ", 8) && strcmp(msg, "missing redirection target") != 0;
}

int
hs_sh_parse_state(struct hs_arena *a, const char *src, size_t len, const char **errmsg)
{
	struct hs_sh_parser p;
	size_t bs = 0;

	/* A line ending in an odd number of backslashes continues on the next. */
	while (bs < len && src[len - 1 - bs] == '\\')
		bs++;
	if (bs % 2)
		return 1;
	hs_sh_parser_init(&p, a, src, len, 0);
	if (!p.err)
		hs_sh_parse_list(&p, 0);
	if (!p.err) {
		skip_ws_nl(&p);
		if (p.i < p.n)
			hs_sh_fail(&p, p.s[p.i] == ')' ? "unexpected ')'" : "unexpected ';;'");
	}
	if (p.err) {
		*errmsg = p.errmsg;
		return unfinished(p.errmsg) ? 1 : -1;
	}
	/* A heredoc still waiting for its body (no newline yet) or for its delimiter. */
	return p.hd_head || p.hd_open ? 1 : 0;
}
