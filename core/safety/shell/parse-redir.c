/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * parse-redir.c - redirections and heredocs: the operators, their
 * targets, and heredoc bodies, which are read at the newline after the
 * command that asked for them (parse.c calls hs_sh_eat_newline there).
 */
#include <ctype.h>
#include <string.h>

#include "core/safety/shell/shparse.h"

/* A heredoc whose body is still to be read. */
struct hs_sh_heredoc {
	struct hs_sh_redir *r;
	const char *delim;
	size_t dlen;
	int strip;
	int quoted;
	struct hs_sh_heredoc *next;
};

static void
read_heredoc(struct hs_sh_parser *p, struct hs_sh_heredoc *h)
{
	size_t ls, le, next, cap = 0, len = 0;
	char *body = NULL, *nb;

	/* Cleared when the delimiter line is found: bash keeps reading until then. */
	p->hd_open = 1;
	while (p->i < p->n) {
		ls = p->i;
		le = ls;
		while (le < p->n && p->s[le] != '\n')
			le++;
		next = le < p->n ? le + 1 : le;
		if (h->strip)
			while (ls < le && p->s[ls] == '\t')
				ls++;
		p->i = next;
		if (le - ls == h->dlen && !memcmp(p->s + ls, h->delim, h->dlen)) {
			p->hd_open = 0;
			break;
		}
		if (len + (le - ls) + 2 > cap) {
			cap = (len + (le - ls) + 2) * 2;
			nb = hs_arena_alloc(p->a, cap);
			if (!nb) {
				hs_sh_fail(p, "input too large");
				return;
			}
			if (len)
				memcpy(nb, body, len);
			body = nb;
		}
		memcpy(body + len, p->s + ls, le - ls);
		len += le - ls;
		body[len++] = '\n';
	}
	if (h->quoted)
		h->r->body = hs_sh_word_lit(p->a, body ? body : "", len);
	else
		h->r->body = hs_sh_lex_heredoc(p, body ? body : "", len);
	if (!h->r->body)
		hs_sh_fail(p, "input too large");
}

/* Consume a newline; heredoc bodies start on the line after their operator. */
void
hs_sh_eat_newline(struct hs_sh_parser *p)
{
	struct hs_sh_heredoc *h;

	p->i++;
	while ((h = p->hd_head) && !p->err) {
		p->hd_head = h->next;
		if (!p->hd_head)
			p->hd_tail = &p->hd_head;
		read_heredoc(p, h);
	}
}

/* {name}>file: bash opens a new descriptor and stores it in name.  The end of "{name}", or p->i. */
static size_t
brace_fd_end(const struct hs_sh_parser *p)
{
	size_t j = p->i + 1;

	if (p->i >= p->n || p->s[p->i] != '{' || j >= p->n || !(isalpha((unsigned char)p->s[j]) || p->s[j] == '_'))
		return p->i;
	while (j < p->n && (isalnum((unsigned char)p->s[j]) || p->s[j] == '_'))
		j++;
	return j < p->n && p->s[j] == '}' ? j + 1 : p->i;
}

int
hs_sh_is_redir_start(struct hs_sh_parser *p)
{
	size_t j = brace_fd_end(p);

	if (j > p->i)
		return j < p->n && (p->s[j] == '<' || p->s[j] == '>');
	while (j < p->n && isdigit((unsigned char)p->s[j]))
		j++;
	if (j >= p->n)
		return 0;
	if (p->s[j] == '&')
		return j == p->i && j + 1 < p->n && p->s[j + 1] == '>';
	if (p->s[j] != '<' && p->s[j] != '>')
		return 0;
	/* <( and >( without a descriptor are process substitutions, not redirections. */
	if (j == p->i && j + 1 < p->n && p->s[j + 1] == '(')
		return 0;
	return 1;
}

static int
is_fd_word(const struct hs_sh_word *w)
{
	size_t i;

	if (w->len == 1 && w->s[0] == '-')
		return 1;
	for (i = 0; i < w->len; i++)
		if (!isdigit((unsigned char)w->s[i]))
			return 0;
	return w->len > 0;
}

void
hs_sh_parse_redirect(struct hs_sh_parser *p, struct hs_sh_redir ***tail)
{
	struct hs_sh_redir *r = hs_arena_zalloc(p->a, sizeof(*r));
	struct hs_sh_heredoc *h;
	int fd = -1, strip = 0;
	const char *s = p->s;

	if (!r) {
		hs_sh_fail(p, "input too large");
		return;
	}
	if (brace_fd_end(p) > p->i) {
		p->i = brace_fd_end(p);
		fd = 10; /* bash allocates a descriptor of 10 or more */
	}
	while (p->i < p->n && isdigit((unsigned char)s[p->i])) {
		fd = (fd < 0 ? 0 : fd) * 10 + (s[p->i] - '0');
		if (fd > 99999)
			fd = 99999;
		p->i++;
	}
	if (s[p->i] == '&') {
		p->i += 2;
		r->op = HS_R_ALL;
		if (p->i < p->n && s[p->i] == '>') {
			r->op = HS_R_ALL_APPEND;
			p->i++;
		}
	} else if (s[p->i] == '<') {
		p->i++;
		r->op = HS_R_IN;
		if (p->i < p->n && s[p->i] == '<') {
			p->i++;
			if (p->i < p->n && s[p->i] == '<') {
				r->op = HS_R_HERESTR;
				p->i++;
			} else {
				r->op = HS_R_HEREDOC;
				if (p->i < p->n && s[p->i] == '-') {
					strip = 1;
					p->i++;
				}
			}
		} else if (p->i < p->n && s[p->i] == '>') {
			r->op = HS_R_RW;
			p->i++;
		} else if (p->i < p->n && s[p->i] == '&') {
			r->op = HS_R_DUP_IN;
			p->i++;
		}
	} else {
		p->i++;
		r->op = HS_R_OUT;
		if (p->i < p->n && s[p->i] == '>') {
			r->op = HS_R_APPEND;
			p->i++;
		} else if (p->i < p->n && s[p->i] == '|') {
			r->op = HS_R_CLOBBER;
			p->i++;
		} else if (p->i < p->n && s[p->i] == '&') {
			r->op = HS_R_DUP_OUT;
			p->i++;
		}
	}
	r->fd = fd;
	hs_sh_skip_blanks(p);
	if (p->i >= p->n || (hs_sh_is_meta((unsigned char)s[p->i]) &&
	    !((s[p->i] == '<' || s[p->i] == '>') && p->i + 1 < p->n && s[p->i + 1] == '('))) {
		hs_sh_fail(p, "missing redirection target");
		return;
	}
	r->target = hs_sh_lex_word(p);
	if (!r->target)
		return;
	r->target->next = NULL;
	/* ">& file" (no descriptor) sends both streams to the file, like &>. */
	if (r->op == HS_R_DUP_OUT && !is_fd_word(r->target) && (fd == -1 || fd == 1))
		r->op = HS_R_ALL;
	if (r->op == HS_R_HEREDOC) {
		h = hs_arena_zalloc(p->a, sizeof(*h));
		if (!h) {
			hs_sh_fail(p, "input too large");
			return;
		}
		h->r = r;
		h->delim = r->target->s;
		h->dlen = r->target->len;
		h->strip = strip;
		h->quoted = !!(r->target->flags & HS_W_QUOTED);
		*p->hd_tail = h;
		p->hd_tail = &h->next;
	}
	**tail = r;
	*tail = &r->next;
}

void
hs_sh_parse_trailing_redirs(struct hs_sh_parser *p, struct hs_sh_node *n)
{
	struct hs_sh_redir **rt = &n->redirs;

	while (*rt)
		rt = &(*rt)->next;
	for (;;) {
		hs_sh_skip_blanks(p);
		if (p->err || p->i >= p->n || !hs_sh_is_redir_start(p))
			return;
		hs_sh_parse_redirect(p, &rt);
	}
}
