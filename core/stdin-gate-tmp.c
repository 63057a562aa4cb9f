/* SPDX-License-Identifier: MIT */
/*
 * stdin-gate-tmp.c - TEMPORARY stand-in for the stdin gate (issue 24 item 3).
 *
 * TEMPORARY: the real gate (core/safety/stdin.c with hs_session_stdin_gate()
 * in core/pipeline.c) is written on another branch; the lead deletes this
 * file when merging.  This one judges each complete line written (ended by
 * a newline or a carriage return) with hs_session_gate(), as a command of
 * the session, and keeps an unfinished line until the next write.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pipeline.h"

struct hs_stdin_guard {
	char *line;   /* the unfinished line written so far */
	size_t len;
};

struct hs_stdin_guard *
hs_stdin_guard_new(void)
{
	return calloc(1, sizeof(struct hs_stdin_guard));
}

void
hs_stdin_guard_free(struct hs_stdin_guard *g)
{
	if (!g)
		return;
	free(g->line);
	free(g);
}

int
hs_session_stdin_gate(struct hs_session *s, struct hs_stdin_guard *g, const void *buf, size_t n,
                      struct hs_approval_out *out)
{
	const char *p = buf;
	char *all = malloc(g->len + n + 1);
	size_t len = 0, start = 0;

	if (!all) {
		out->decision = "error";
		snprintf(out->why, sizeof(out->why), "out of memory");
		return 0;
	}
	if (g->len)
		memcpy(all, g->line, g->len);
	memcpy(all + g->len, p, n);
	len = g->len + n;
	all[len] = '\0';
	for (size_t i = 0; i < len; i++) {
		/* ^C and ^U throw the line away (as a terminal's line editing does). */
		if (all[i] == 3 || all[i] == 21) {
			start = i + 1;
			continue;
		}
		if (all[i] != '\n' && all[i] != '\r' && all[i] != 4)
			continue;
		all[i] = '\0';
		if (i > start && !hs_session_gate(s, all + start, out)) {
			free(all);
			return 0; /* nothing of this write is delivered; the old rest is kept */
		}
		start = i + 1;
	}
	/* Allowed: what follows the last line end waits for the rest of its line. */
	free(g->line);
	g->line = NULL;
	g->len = len - start;
	if (g->len) {
		g->line = malloc(g->len);
		if (g->line)
			memcpy(g->line, all + start, g->len);
		else
			g->len = 0;
	}
	free(all);
	return 1;
}
