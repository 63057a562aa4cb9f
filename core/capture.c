/* SPDX-License-Identifier: MIT */
/*
 * capture.c - bounded head/tail output capture.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/capture.h"
#include "core/cli/cmds.h"
#include "core/exec.h"
#include "core/json.h"

int
hs_capture_init(struct hs_capture *c, size_t limit)
{
	memset(c, 0, sizeof(*c));
	c->head_max = limit / 2;
	c->tail_max = limit - c->head_max;
	c->head = malloc(c->head_max ? c->head_max : 1);
	c->tail = malloc(c->tail_max ? c->tail_max : 1);
	if (!c->head || !c->tail) {
		hs_capture_free(c);
		return -1;
	}
	return 0;
}

void
hs_capture_add(struct hs_capture *c, const void *buf, size_t len)
{
	const char *p = buf;
	c->total += len;
	size_t h = c->head_max - c->head_len;
	if (h > len)
		h = len;
	memcpy(c->head + c->head_len, p, h);
	c->head_len += h;
	p += h;
	len -= h;
	if (!len || !c->tail_max) {
		c->dropped += len;
		return;
	}
	/* Whatever falls out of the tail ring is dropped. */
	if (len >= c->tail_max) {
		c->dropped += c->tail_len + (len - c->tail_max);
		memcpy(c->tail, p + len - c->tail_max, c->tail_max);
		c->tail_len = c->tail_max;
		c->tail_pos = 0;
		return;
	}
	size_t over = c->tail_len + len > c->tail_max ? c->tail_len + len - c->tail_max : 0;
	c->dropped += over;
	c->tail_pos = (c->tail_pos + over) % c->tail_max;
	c->tail_len -= over;
	size_t end = (c->tail_pos + c->tail_len) % c->tail_max;
	size_t first = c->tail_max - end < len ? c->tail_max - end : len;
	memcpy(c->tail + end, p, first);
	memcpy(c->tail, p + first, len - first);
	c->tail_len += len;
}

void
hs_capture_gap(struct hs_capture *c, uint64_t n)
{
	c->dropped += n;
	c->total += n;
}

char *
hs_capture_join(const struct hs_capture *c, size_t *len)
{
	char *out = malloc(c->head_len + c->tail_len + 1);
	if (!out)
		return NULL;
	memcpy(out, c->head, c->head_len);
	size_t first = c->tail_max - c->tail_pos;
	if (first > c->tail_len)
		first = c->tail_len;
	memcpy(out + c->head_len, c->tail + c->tail_pos, first);
	memcpy(out + c->head_len + first, c->tail, c->tail_len - first);
	*len = c->head_len + c->tail_len;
	out[*len] = '\0';
	return out;
}

char *
hs_capture_from(const struct hs_capture *c, uint64_t offset, size_t *len, uint64_t *next, int *gap)
{
	size_t all;
	char *kept = hs_capture_join(c, &all);
	uint64_t tail_start = c->total - c->tail_len;
	size_t from, to;

	if (!kept)
		return NULL;
	*gap = 0;
	if (c->dropped == 0) {
		/* Nothing dropped: head and tail are one contiguous run. */
		from = offset < all ? (size_t)offset : all;
		to = all;
		*next = all;
	} else if (offset < c->head_len) {
		from = (size_t)offset;
		to = c->head_len;
		*next = tail_start;
	} else if (offset < tail_start) {
		*gap = 1;
		from = to = c->head_len;
		*next = tail_start;
	} else {
		from = c->head_len + (size_t)(offset - tail_start);
		if (from > all)
			from = all;
		to = all;
		*next = c->total;
	}
	memmove(kept, kept + from, to - from);
	*len = to - from;
	kept[*len] = '\0';
	return kept;
}

void
hs_capture_free(struct hs_capture *c)
{
	free(c->head);
	free(c->tail);
	c->head = c->tail = NULL;
}

void
hs_capture_json_result(yajl_gen g, const struct hs_exec_out *res, struct hs_capture cap[3],
                       unsigned restored)
{
	int trunc = 0;
	hs_json_kint(g, "exit_code", res->timed_out ? HS_EXIT_TIMEOUT : res->exit_code);
	for (int i = 1; i <= 2; i++) {
		size_t n;
		hs_capture_gap(&cap[i], res->dropped[i]);
		char *b = hs_capture_join(&cap[i], &n);
		hs_json_kbytes(g, i == 1 ? "stdout" : "stderr", b ? b : "", b ? n : 0);
		free(b);
		trunc |= cap[i].dropped > 0;
	}
	hs_json_kbool(g, "timed_out", res->timed_out);
	hs_json_kbool(g, "cancelled", res->cancelled);
	hs_json_kbool(g, "truncated", trunc);
	hs_json_kint(g, "stdout_dropped", (long long)cap[1].dropped);
	hs_json_kint(g, "stderr_dropped", (long long)cap[2].dropped);
	hs_json_kint(g, "duration_ms", res->duration_ms);
	hs_json_kint(g, "hs_files_restored", restored);
	/* Background jobs the command left running in the session shell. */
	hs_json_kint(g, "jobs_left", res->jobs_left);
	if (res->shell_restarted) {
		hs_json_kbool(g, "shell_restarted", 1);
		hs_json_kstr(g, "shell_restarted_reason", res->restart_reason);
	}
	/* Part of its stdin was refused (judged like typed input): it was stopped. */
	if (res->stdin_refused[0])
		hs_json_kstr(g, "stdin_refused", res->stdin_refused);
	/* Stopped while it waited for input: what it asked, as far as known. */
	if (res->waiting_input) {
		hs_json_kbool(g, "waiting_input", 1);
		hs_json_kbytes(g, "prompt", res->prompt, strlen(res->prompt));
	}
}
