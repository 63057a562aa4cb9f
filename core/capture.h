/* SPDX-License-Identifier: MIT */
/*
 * capture.h - bounded output capture: the first head bytes and the last
 * tail bytes of a stream, and how many were dropped in between.
 */
#ifndef HS_CAPTURE_H
#define HS_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_gen.h>

struct hs_capture {
	char *head;
	size_t head_len, head_max;
	char *tail;            /* ring buffer */
	size_t tail_len, tail_pos, tail_max;
	uint64_t total;        /* bytes offered */
	uint64_t dropped;      /* bytes neither in head nor tail (incl. runner-side drops) */
};

int hs_capture_init(struct hs_capture *c, size_t limit); /* head = tail = limit/2 */
void hs_capture_add(struct hs_capture *c, const void *buf, size_t len);
/* Record a gap the runner already dropped. */
void hs_capture_gap(struct hs_capture *c, uint64_t n);
/* The kept bytes, head then tail, in a new buffer (*len set).  NULL on OOM. */
char *hs_capture_join(const struct hs_capture *c, size_t *len);
/*
 * The kept bytes from stream offset on, up to the end of the kept region that
 * holds it, in a new buffer (*len set).  *next is the offset to ask for next.
 * An offset inside the dropped middle yields no bytes, *gap = 1 and *next at
 * the start of the tail.  NULL on OOM.
 */
char *hs_capture_from(const struct hs_capture *c, uint64_t offset, size_t *len, uint64_t *next,
                      int *gap);
void hs_capture_free(struct hs_capture *c);

struct hs_exec_out;
/*
 * An exec's result as JSON fields into an open map, for `hs run --json` and
 * serve's exec reply: exit_code, stdout and stderr (cap[1], cap[2]: head and
 * tail, with the gaps the runner reported recorded first), timed_out,
 * cancelled, truncated, the dropped counts, duration_ms and hs_files_restored
 * (restored: hs's own files the command changed and hs put back).
 */
void hs_capture_json_result(yajl_gen g, const struct hs_exec_out *res, struct hs_capture cap[3],
                            unsigned restored);

struct hs_conn;

#endif /* HS_CAPTURE_H */
