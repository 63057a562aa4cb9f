/* SPDX-License-Identifier: MIT */
/*
 * stdin-views.h - what stdin.c and stdin-views.c share (not installed).
 */
#ifndef HS_SAFETY_STDIN_VIEWS_H
#define HS_SAFETY_STDIN_VIEWS_H

#include <stddef.h>

#include "core/safety/safety.h"

/* What one analysis of a write collects. */
struct hs_stdin_judge {
	const struct hs_policy *p;
	enum hs_context ctx;
	struct hs_analysis *out;
	char why[160]; /* the first reason the input is opaque, or "" */
	size_t spent;  /* work done (analyses, and bytes analysed / 64); bounded per write */
};

/* Most work one write may cost (about a second); past it the write is refused as too long. */
#define HS_STDIN_MAX_WORK ((size_t)300000)

/* Judge text as a shell command: its findings always, its opacity when opacity is set. */
void hs_stdin_judge_text(struct hs_stdin_judge *j, const char *text, int opacity);
/* Judge text as Python, Perl, Ruby, Node and PHP code and as SQL (psql -c), at once. */
void hs_stdin_judge_code(struct hs_stdin_judge *j, const char *text, int opacity);
/* Mark the write opaque for why, unless it already is. */
void hs_stdin_set_opaque(struct hs_stdin_judge *j, const char *why);
/* A line the shell parser rejects (why): extended globs and fish's (cmd) read as bash; opaque
 * when it starts with a program the policy knows. */
void hs_stdin_judge_unparsed(struct hs_stdin_judge *j, const char *text, const char *why);
/* Shells reached through an escape: after each '!' and ':', after the first word, and (quotes)
 * after each quote. */
void hs_stdin_escape_views(struct hs_stdin_judge *j, const char *line, int quotes);
/* Each string literal of the line, escapes decoded, as a command and as code. */
void hs_stdin_literal_views(struct hs_stdin_judge *j, const char *line);
/* All of the above for one text, findings only. */
void hs_stdin_judge_views(struct hs_stdin_judge *j, const char *text, int quotes);
/* 1 when bash's history expansion ("!!", "!$", "^a^b", fc) may replay earlier input. */
int hs_stdin_history_expansion(const char *line);
/* 1 when the line changes how input is edited (stty, bind, set -o vi, an inputrc). */
int hs_stdin_reconfigures_editor(const char *line);
/* s without control bytes and escape sequences (keys), malloc'ed; NULL when out of memory. */
char *hs_stdin_strip_keys(const char *s);

#endif
