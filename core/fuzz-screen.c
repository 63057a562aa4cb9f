/* SPDX-License-Identifier: MIT */
/*
 * fuzz-screen.c - libFuzzer target for the screen renderer (core/screen.c):
 * a terminal stream, as a sandboxed command may write it, fed in pieces to
 * a screen of a size the input picks, then read back.  The rows must be
 * valid UTF-8 and the cursor on the screen; libvterm must neither crash nor
 * hang.  Built by `make fuzz-screen` (clang); the same entry point runs over
 * the seed corpus in tests/fuzz/test-fuzz-smoke under `make check`.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/json.h"
#include "core/screen.h"

int hs_fuzz_screen(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
hs_fuzz_screen(const uint8_t *data, size_t size)
{
	struct hs_screen s;
	if (size < 3)
		return 0;
	/* Byte 0: rows 1..40; byte 1: columns 2..121; byte 2: the piece size. */
	if (hs_screen_init(&s, 1 + data[0] % 40, 2 + data[1] % 120) < 0)
		abort();
	size_t piece = 1 + data[2] % 64;
	for (size_t p = 3; p < size; p += piece)
		hs_screen_feed(&s, data + p, size - p < piece ? size - p : piece);
	int r, c;
	hs_screen_cursor(&s, &r, &c);
	if (r < 0 || r >= s.rows || c < 0 || c >= s.cols)
		abort();
	for (int i = 0; i < s.rows; i++) {
		size_t n = 0;
		char *row = hs_screen_row(&s, i, &n);
		if (!row || !hs_utf8_valid(row, n))
			abort();
		free(row);
	}
	/* What a render child sends back, hs must take; and any bytes as an
	 * answer are parsed without harm. */
	struct hs_screen_shot shot;
	char err[256], *wire;
	size_t len;
	if (hs_screen_snap(&s, &shot) < 0 || !(wire = hs_screen_shot_encode(&shot, &len)))
		abort();
	hs_screen_shot_free(&shot);
	if (hs_screen_shot_parse(wire, len, s.rows, s.cols, &shot, err, sizeof(err)) < 0)
		abort();
	hs_screen_shot_free(&shot);
	free(wire);
	if (hs_screen_shot_parse(data + 3, size - 3, s.rows, s.cols, &shot, err, sizeof(err)) == 0)
		hs_screen_shot_free(&shot);
	hs_screen_free(&s);
	return 0;
}

#ifndef HS_FUZZ_SMOKE
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return hs_fuzz_screen(data, size);
}
#endif
