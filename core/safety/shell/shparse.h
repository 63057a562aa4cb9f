/* SPDX-License-Identifier: MIT */
/*
 * shparse.h - the syntax tree of a shell command line (internal).
 *
 * The parser keeps only what the analysis needs: for every simple command
 * its assignments, words (after quote removal, with run-time expansions
 * marked) and redirections; the command substitutions inside each word;
 * how commands are joined (lists, pipelines, blocks, functions).
 */
#ifndef HS_SAFETY_SHPARSE_H
#define HS_SAFETY_SHPARSE_H

#include <stddef.h>

#include "core/safety/arena.h"

/* Stands in a word's text for a value known only at run time. */
#define HS_SH_DYN_CHAR '\x01'

/* Word flags. */
#define HS_W_DYN    0x01u /* contains a run-time expansion */
#define HS_W_GLOB   0x02u /* contains an unquoted glob character */
#define HS_W_QUOTED 0x04u /* some part was quoted or escaped */
#define HS_W_SUBST  0x08u /* contains a command or process substitution */
#define HS_W_ASSIGN 0x10u /* NAME=value at an assignment position */
#define HS_W_PROC   0x20u /* the whole word is a process substitution */
#define HS_W_BRACE  0x40u /* unquoted brace markers present (lexer internal) */
#define HS_W_HOME   0x80u /* began with ~, $HOME or ${HOME} */
#define HS_W_OPAQUE 0x100u /* split by a modified IFS, or holds a reserved byte: unknowable */

enum hs_sh_subst_kind {
	HS_SUB_CMD = 0,   /* $(...) or `...` */
	HS_SUB_PROC_IN,   /* <(...) */
	HS_SUB_PROC_OUT,  /* >(...) */
};

struct hs_sh_node;

struct hs_sh_subst {
	int kind;
	struct hs_sh_node *body;
	struct hs_sh_subst *next;
};

struct hs_sh_word {
	char *s;      /* text after quote removal; HS_SH_DYN_CHAR marks expansions */
	size_t len;
	unsigned flags;
	struct hs_sh_subst *subs;
	struct hs_sh_word *next;
};

enum hs_sh_redir_op {
	HS_R_IN = 0,    /* <   */
	HS_R_OUT,       /* >   */
	HS_R_APPEND,    /* >>  */
	HS_R_CLOBBER,   /* >|  */
	HS_R_RW,        /* <>  */
	HS_R_DUP_IN,    /* <&  */
	HS_R_DUP_OUT,   /* >& n, or >&file which is &> */
	HS_R_ALL,       /* &>  */
	HS_R_ALL_APPEND,/* &>> */
	HS_R_HEREDOC,   /* << and <<- */
	HS_R_HERESTR,   /* <<< */
};

struct hs_sh_redir {
	int fd;       /* -1 when not given */
	int op;
	struct hs_sh_word *target; /* file, fd, delimiter or here-string word */
	struct hs_sh_word *body;   /* heredoc body (expanded unless quoted) */
	struct hs_sh_redir *next;
};

enum hs_sh_kind {
	HS_SH_CMD = 0,  /* simple command */
	HS_SH_LIST,     /* commands run one after another (; && || newline) */
	HS_SH_PIPE,     /* children joined by | */
	HS_SH_BLOCK,    /* subshell, group, if/while/for/case: children + header words */
	HS_SH_FUNC,     /* function definition: name, child is the body */
};

struct hs_sh_node {
	int kind;
	int bg;                      /* followed by & */
	struct hs_sh_node *next;     /* sibling */
	struct hs_sh_node *child;    /* first child */
	struct hs_sh_word *assigns;  /* CMD: prefix assignments */
	struct hs_sh_word *words;    /* CMD: words; BLOCK: for/case header words */
	struct hs_sh_redir *redirs;
	const char *name;            /* FUNC: the name */
};

/* Limits that keep hostile input from exhausting the stack or memory. */
#define HS_SH_MAX_DEPTH 48
#define HS_SH_MAX_BRACE_WORDS 128

struct hs_sh_heredoc;

/*
 * A variable given a literal value by a bare assignment earlier in the
 * same command line ("X=/; rm -rf $X").  value is NULL once the variable is
 * assigned again or named as a word (read X, for X in, unset X): then its
 * value is no longer known.
 */
struct hs_sh_var {
	const char *name;
	size_t nlen;
	const char *value;
	struct hs_sh_var *next;
};

struct hs_sh_parser {
	const char *s;
	size_t n;
	size_t i;
	struct hs_arena *a;
	int depth;
	int err;                 /* non-zero once parsing failed */
	const char *errmsg;      /* static string */
	struct hs_sh_heredoc *hd_head;
	struct hs_sh_heredoc **hd_tail;
	struct hs_sh_var *vars;  /* literal assignments seen so far */
	int ifs_set;             /* IFS assigned: word splitting is unknown */
	int hd_open;             /* a heredoc's delimiter line was not reached */
};

/*
 * Parse src[0..len) as a bash script.  Returns the root (an HS_SH_LIST), or
 * NULL with *errmsg set to a static reason when the input is not a complete,
 * well-formed script or exceeds the limits.
 */
struct hs_sh_node *hs_sh_parse(struct hs_arena *a, const char *src, size_t len, int depth, const char **errmsg);
/*
 * How far src[0..len) is from a complete script, as an interactive bash
 * reads it line by line: 0 complete, 1 unfinished (an open quote, compound
 * command, substitution, heredoc, or a trailing '|', '&&', '||' or
 * backslash: bash reads another line), -1 a syntax error (with *errmsg).
 */
int hs_sh_parse_state(struct hs_arena *a, const char *src, size_t len, const char **errmsg);

/* parse.c, parse-redir.c and lex.c share these. */
void hs_sh_parser_init(struct hs_sh_parser *p, struct hs_arena *a, const char *s, size_t n, int depth);
struct hs_sh_node *hs_sh_parse_list(struct hs_sh_parser *p, unsigned stop);
void hs_sh_fail(struct hs_sh_parser *p, const char *msg);
/* Consume the newline at p->i, then read the heredoc bodies it ends the line of (parse-redir.c). */
void hs_sh_eat_newline(struct hs_sh_parser *p);
/* Does a redirection operator (with an optional descriptor) start at p->i? */
int hs_sh_is_redir_start(struct hs_sh_parser *p);
/* Parse the redirection at p->i and append it at **tail. */
void hs_sh_parse_redirect(struct hs_sh_parser *p, struct hs_sh_redir ***tail);
/* Redirections after a compound command, appended to n->redirs. */
void hs_sh_parse_trailing_redirs(struct hs_sh_parser *p, struct hs_sh_node *n);

/* Blank, newline, ; & | < > ( ): a character that ends an unquoted word. */
static inline int
hs_sh_is_meta(int c)
{
	switch (c) {
	case ' ': case '\t': case '\n': case ';': case '&': case '|': case '<': case '>': case '(': case ')':
		return 1;
	}
	return 0;
}

/* Skip blanks, escaped newlines and a comment (not the newline ending it). */
static inline void
hs_sh_skip_blanks(struct hs_sh_parser *p)
{
	while (p->i < p->n) {
		char c = p->s[p->i];

		if (c == ' ' || c == '\t' || c == '\r') {
			p->i++;
		} else if (c == '\\' && p->i + 1 < p->n && p->s[p->i + 1] == '\n') {
			p->i += 2;
		} else if (c == '#') {
			while (p->i < p->n && p->s[p->i] != '\n')
				p->i++;
		} else {
			break;
		}
	}
}

/* Lex one word at p->i; returns a list (brace expansion may give several) or NULL. */
struct hs_sh_word *hs_sh_lex_word(struct hs_sh_parser *p);
/* Lex s[0..n) as the body of an unquoted heredoc (expansions, no quotes). */
struct hs_sh_word *hs_sh_lex_heredoc(struct hs_sh_parser *p, const char *s, size_t n);
/* Record the assignments of a finished simple command (parse.c). */
void hs_sh_note_assigns(struct hs_sh_parser *p, const struct hs_sh_word *assigns, const struct hs_sh_word *words);
/* A run-time word holding the substitutions of the arithmetic text p->s[from..to). */
struct hs_sh_word *hs_sh_lex_arith_body(struct hs_sh_parser *p, size_t from, size_t to);
/* A word holding s[0..n) literally. */
struct hs_sh_word *hs_sh_word_lit(struct hs_arena *a, const char *s, size_t n);

#endif
