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
 *
 * This file is the guard and the line editor; stdin-views.c judges a
 * line in each of its views.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/internal.h"
#include "core/safety/stdin-views.h"

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
note_opaque(const struct hs_stdin_guard *g, struct hs_stdin_judge *j)
{
	if (j && !j->why[0])
		snprintf(j->why, sizeof(j->why), "%s", g->why);
}

static void
taint(struct hs_stdin_guard *g, struct hs_stdin_judge *j, const char *why)
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

/* The shell view of a complete line: an unfinished construct waits for more. */
static void
shell_line(struct hs_stdin_guard *g, struct hs_stdin_judge *j, const char *line, size_t n)
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
		hs_stdin_judge_text(j, line, 0);
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
			hs_stdin_judge_text(j, g->block.s, 0);
		taint(g, j, "unfinished shell construct over 16 KiB");
	} else if (j && st == 0) {
		hs_stdin_judge_text(j, g->block.s, 1);
	} else if (j) {
		hs_stdin_judge_unparsed(j, g->block.s, why);
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
code_line(struct hs_stdin_guard *g, struct hs_stdin_judge *j, const char *line, size_t n)
{
	int open;

	if (j)
		hs_stdin_judge_code(j, line, 1);
	if (!g->iblock.len && !code_open(line, n))
		return;
	if ((g->iblock.len && gbuf_put(&g->iblock, "\n", 1) < 0) || gbuf_put(&g->iblock, line, n) < 0) {
		gbuf_clear(&g->iblock);
		taint(g, j, "out of memory");
		return;
	}
	open = code_open(g->iblock.s, g->iblock.len);
	if (j)
		hs_stdin_judge_code(j, g->iblock.s, !open);
	if (!open)
		gbuf_clear(&g->iblock);
	else if (g->iblock.len > BLOCK_MAX_BYTES) {
		gbuf_clear(&g->iblock);
		taint(g, j, "unfinished code over 16 KiB");
	}
}

/* SQL REPLs (psql, mysql, sqlite3) run a statement at its ';', however many lines it took. */
static void
sql_line(struct hs_stdin_guard *g, struct hs_stdin_judge *j, const char *line, size_t n)
{
	if (!g->sql.len && memchr(line, ';', n))
		return; /* judged alone by hs_stdin_judge_code() */
	if ((g->sql.len && gbuf_put(&g->sql, "\n", 1) < 0) || gbuf_put(&g->sql, line, n) < 0 ||
	    g->sql.len > BLOCK_MAX_BYTES) {
		gbuf_clear(&g->sql);
		return;
	}
	if (!memchr(line, ';', n))
		return;
	if (j)
		hs_stdin_judge_code(j, g->sql.s, 0);
	gbuf_clear(&g->sql);
}

/*
 * What was typed, unedited: written to a pipe (no terminal) nothing edits
 * it, and where the editing is not known (opaque) the keys may have done
 * anything, so the text without them is judged too.
 */
static void
judge_unedited(const struct hs_stdin_guard *g, struct hs_stdin_judge *j, const char *line)
{
	char *bare;

	if (!g->typed.len)
		return;
	if (strcmp(g->typed.s, line))
		hs_stdin_judge_views(j, g->typed.s, g->opaque);
	if (!g->opaque)
		return;
	bare = hs_stdin_strip_keys(g->typed.s);
	if (!bare) {
		hs_stdin_set_opaque(j, "out of memory");
		return;
	}
	if (strcmp(bare, line) && strcmp(bare, g->typed.s))
		hs_stdin_judge_views(j, bare, 1);
	free(bare);
}

/* A line the program would now read, judged as each program it could be. */
static void
submit(struct hs_stdin_guard *g, struct hs_stdin_judge *j)
{
	const char *line = g->line.s ? g->line.s : "";

	if (j) {
		if (hs_stdin_history_expansion(line))
			hs_stdin_set_opaque(j, "'!' or '^' may expand the shell's history into an earlier command");
		hs_stdin_escape_views(j, line, g->opaque);
		hs_stdin_literal_views(j, line);
		judge_unedited(g, j, line);
	}
	shell_line(g, j, line, g->line.len);
	code_line(g, j, line, g->line.len);
	sql_line(g, j, line, g->line.len);
	if (hs_stdin_reconfigures_editor(line))
		taint(g, j, "the input changes how the terminal or readline edits lines");
	gbuf_clear(&g->line);
	gbuf_clear(&g->typed);
}

/* ---- the line editor ---- */

static void
add_char(struct hs_stdin_guard *g, struct hs_stdin_judge *j, char c)
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
kill_from(struct hs_stdin_guard *g, struct hs_stdin_judge *j, size_t n)
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
erase_word(struct hs_stdin_guard *g, struct hs_stdin_judge *j)
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
feed_byte(struct hs_stdin_guard *g, struct hs_stdin_judge *j, unsigned char c)
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
feed(struct hs_stdin_guard *g, struct hs_stdin_judge *j, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		feed_byte(g, j, b[i]);
}

/*
 * The end of input: a shell or interpreter reading a pipe runs its last
 * line without a newline, and what is unfinished is judged as it stands.
 */
static void
end_input(struct hs_stdin_guard *g, struct hs_stdin_judge *j)
{
	if (g->opaque)
		note_opaque(g, j);
	if (g->line.len || g->typed.len)
		submit(g, j);
	if (j && g->block.len)
		hs_stdin_judge_text(j, g->block.s, 0);
	if (j && g->iblock.len)
		hs_stdin_judge_code(j, g->iblock.s, 0);
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
judge_pending(const struct hs_stdin_guard *g, struct hs_stdin_judge *j)
{
	const char *line = g->line.s ? g->line.s : "";

	if (g->block.len)
		hs_stdin_judge_text(j, g->block.s, 0);
	if (*line)
		hs_stdin_judge_views(j, line, 1);
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
	struct hs_stdin_judge j = { .p = p, .ctx = ctx, .out = out };
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
		hs_stdin_set_opaque(&j, "out of memory");
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
		if (j.spent > HS_STDIN_MAX_WORK)
			deny_finding(out, "stdin.too-long", "a write to a terminal too large to analyse at once: "
				     "split it into smaller writes");
		if (j.why[0])
			hs_stdin_set_opaque(&j, j.why);
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
