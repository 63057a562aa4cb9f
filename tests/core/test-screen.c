/* SPDX-License-Identifier: MIT */
/* Unit tests of the screen renderer (core/screen.c): cursor addressing,
 * clearing, wrapping, scrolling, the alternate screen, wide and combining
 * characters, sequences cut between feeds, invalid UTF-8, trimming, the
 * JSON shape, the bound on a huge stream, and the wire form a contained
 * render answers in, parsed as hostile input. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/capture.h"
#include "core/json.h"
#include "core/screen.h"

static void
feed(struct hs_screen *s, const char *str)
{
	hs_screen_feed(s, str, strlen(str));
}

/* Row r must read exactly want. */
static void
check_row(const struct hs_screen *s, int r, const char *want)
{
	size_t n = 0;
	char *row = hs_screen_row(s, r, &n);
	assert_non_null(row);
	if (strcmp(row, want))
		fail_msg("row %d: got '%s', want '%s'", r, row, want);
	assert_int_equal(n, strlen(want));
	free(row);
}

static void
check_cursor(const struct hs_screen *s, int row, int col)
{
	int r = -1, c = -1;
	hs_screen_cursor(s, &r, &c);
	assert_int_equal(r, row);
	assert_int_equal(c, col);
}

static void
test_size_bounds(void **state)
{
	struct hs_screen s;
	assert_int_equal(hs_screen_init(&s, 0, 80), -1);
	assert_int_equal(hs_screen_init(&s, 24, 0), -1);
	assert_int_equal(hs_screen_init(&s, 24, HS_SCREEN_SIZE_MAX + 1), -1);
	assert_int_equal(hs_screen_init(&s, -5, 80), -1);
	hs_screen_free(&s);
	/* One column is refused: libvterm 0.1.4 writes past a one-column row. */
	assert_int_equal(hs_screen_init(&s, 5, 1), -1);
	assert_int_equal(hs_screen_init(&s, 1, 2), 0);
	assert_null(hs_screen_row(&s, 1, &(size_t){ 0 }));
	assert_null(hs_screen_row(&s, -1, &(size_t){ 0 }));
	hs_screen_free(&s);
}

static void
test_cursor_addressing(void **state)
{
	struct hs_screen s;
	assert_int_equal(hs_screen_init(&s, 24, 80), 0);
	feed(&s, "\033[5;10HHello");
	check_row(&s, 4, "         Hello");
	check_row(&s, 0, "");
	check_cursor(&s, 4, 14);
	/* Absolute moves in both directions, and a relative one. */
	feed(&s, "\033[1;1Htop\033[24;78Hend\033[2;1H\033[3Cx");
	check_row(&s, 0, "top");
	check_row(&s, 23, "                                                                             end");
	check_row(&s, 1, "   x");
	check_cursor(&s, 1, 4);
	hs_screen_free(&s);
}

static void
test_clear_screen(void **state)
{
	struct hs_screen s;
	assert_int_equal(hs_screen_init(&s, 5, 20), 0);
	feed(&s, "first\r\nsecond\r\nthird");
	check_row(&s, 1, "second");
	feed(&s, "\033[H\033[2JX");
	check_row(&s, 0, "X");
	for (int r = 1; r < 5; r++)
		check_row(&s, r, "");
	check_cursor(&s, 0, 1);
	/* Erase to the end of the line. */
	feed(&s, "\r\nabcdef\033[3D\033[K");
	check_row(&s, 1, "abc");
	hs_screen_free(&s);
}

static void
test_wrap(void **state)
{
	struct hs_screen s;
	assert_int_equal(hs_screen_init(&s, 5, 10), 0);
	feed(&s, "abcdefghijKLM");
	check_row(&s, 0, "abcdefghij");
	check_row(&s, 1, "KLM");
	check_cursor(&s, 1, 3);
	/* Exactly full: the cursor waits at the last column until more comes. */
	feed(&s, "\r\n0123456789");
	check_row(&s, 2, "0123456789");
	check_row(&s, 3, "");
	check_cursor(&s, 2, 9);
	hs_screen_free(&s);
}

static void
test_scroll(void **state)
{
	struct hs_screen s;
	assert_int_equal(hs_screen_init(&s, 3, 10), 0);
	feed(&s, "1\r\n2\r\n3\r\n4\r\n5");
	check_row(&s, 0, "3");
	check_row(&s, 1, "4");
	check_row(&s, 2, "5");
	check_cursor(&s, 2, 1);
	/* A bare line feed keeps the column, as on a terminal without onlcr. */
	feed(&s, "\nx");
	check_row(&s, 1, "5");
	check_row(&s, 2, " x");
	hs_screen_free(&s);
}

static void
test_alternate(void **state)
{
	struct hs_screen s;
	assert_int_equal(hs_screen_init(&s, 4, 20), 0);
	feed(&s, "shell prompt $ ");
	assert_false(s.alternate);
	feed(&s, "\033[?1049h\033[H\033[2Jeditor\r\n~\r\n~");
	assert_true(s.alternate);
	check_row(&s, 0, "editor");
	check_row(&s, 1, "~");
	check_row(&s, 2, "~");
	feed(&s, "\033[?1049l");
	assert_false(s.alternate);
	/* Back on the main screen, as it was, with the cursor where it was. */
	check_row(&s, 0, "shell prompt $");
	check_row(&s, 1, "");
	check_cursor(&s, 0, 15);
	hs_screen_free(&s);
}

static void
test_wide_and_combining(void **state)
{
	struct hs_screen s;
	assert_int_equal(hs_screen_init(&s, 3, 10), 0);
	/* U+4E2D U+6587 take two cells each, written once. */
	feed(&s, "\xe4\xb8\xad\xe6\x96\x87|");
	check_row(&s, 0, "\xe4\xb8\xad\xe6\x96\x87|");
	check_cursor(&s, 0, 5);
	/* e + U+0301 is one cell. */
	feed(&s, "\r\ne\xcc\x81x");
	check_row(&s, 1, "e\xcc\x81x");
	check_cursor(&s, 1, 2);
	/* A wide character that does not fit in the last column wraps whole
	 * (here to a new bottom row). */
	feed(&s, "\r\n123456789\xe4\xb8\xad");
	check_row(&s, 0, "e\xcc\x81x");
	check_row(&s, 1, "123456789");
	check_row(&s, 2, "\xe4\xb8\xad");
	check_cursor(&s, 2, 2);
	hs_screen_free(&s);
	/* Two columns: room for exactly one. */
	assert_int_equal(hs_screen_init(&s, 2, 2), 0);
	feed(&s, "\xe4\xb8\xad\xe4\xb8\xad");
	check_row(&s, 0, "\xe4\xb8\xad");
	check_row(&s, 1, "\xe4\xb8\xad");
	hs_screen_free(&s);
}

static void
test_split_feeds(void **state)
{
	struct hs_screen s;
	assert_int_equal(hs_screen_init(&s, 5, 20), 0);
	feed(&s, "\033[3");
	feed(&s, ";4Hx");
	check_row(&s, 2, "   x");
	/* A UTF-8 character cut in the middle, then a sequence cut after ESC. */
	feed(&s, "\xe4\xb8");
	feed(&s, "\xad\033");
	feed(&s, "[1;1Hy");
	check_row(&s, 2, "   x\xe4\xb8\xad");
	check_row(&s, 0, "y");
	/* A private mode cut between feeds still switches screens. */
	feed(&s, "\033[?10");
	feed(&s, "49h");
	assert_true(s.alternate);
	hs_screen_free(&s);
}

/* Every row valid UTF-8, the cursor on the screen. */
static void
check_sane(const struct hs_screen *s)
{
	int r = -1, c = -1;
	hs_screen_cursor(s, &r, &c);
	if (r < 0 || r >= s->rows || c < 0 || c >= s->cols)
		fail_msg("cursor %d,%d off a %dx%d screen", r, c, s->rows, s->cols);
	for (int i = 0; i < s->rows; i++) {
		size_t n = 0;
		char *row = hs_screen_row(s, i, &n);
		assert_non_null(row);
		assert_true(hs_utf8_valid(row, n));
		free(row);
	}
}

static void
test_invalid_utf8(void **state)
{
	struct hs_screen s;
	assert_int_equal(hs_screen_init(&s, 3, 20), 0);
	/* Bad bytes show as U+FFFD; C0 and C1 controls (raw or encoded) as nothing. */
	feed(&s, "a\xff" "b\xc3(c\xed\xa0\x80" "d\x01\x7f\xc2\x9b" "e\xc0\x81" "f");
	check_row(&s, 0, "a\xef\xbf\xbd" "b\xef\xbf\xbd(c\xef\xbf\xbd" "de\xef\xbf\xbd\xef\xbf\xbd" "f");
	check_sane(&s);
	/* libvterm 0.1.4 moves the cursor left for each C1 character. */
	feed(&s, "\r\n");
	for (int i = 0; i < 50; i++)
		feed(&s, "\xc2\x85");
	feed(&s, "xyz");
	check_row(&s, 1, "xyz");
	check_cursor(&s, 1, 3);
	/* A C1 character whose bytes an escape sequence splits crashed it in
	 * insert mode. */
	feed(&s, "\033W\xc2\033[4h\033r\x85Q");
	check_sane(&s);
	/* A character cut short by the end of a feed and a new start. */
	feed(&s, "\033[3;1H\xe4\xb8");
	feed(&s, "Z");
	check_row(&s, 2, "\xef\xbf\xbdZ");
	check_sane(&s);
	hs_screen_free(&s);

	/* Many sub-parameters overflowed its argument array; huge counts. */
	assert_int_equal(hs_screen_init(&s, 3, 20), 0);
	feed(&s, "\033[::::::::::::::::::::::::::::::::::::::::1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18m");
	feed(&s, "\033[2;1H\033[99999999999999999999999Cz\033[99999999999999999999999Dy");
	check_sane(&s);
	check_row(&s, 1, "y                  z");
	/* An odd DECRQSS made it format its answer from a bad argument (seen
	 * under AddressSanitizer); DCS and OSC strings leave the screen alone. */
	feed(&s, "\033P$qx\033\\\033P$q#;0\033\\\033]0;title\007\033Pq#0\033\\");
	check_sane(&s);
	check_row(&s, 0, "");
	check_row(&s, 1, "y                  z");
	hs_screen_free(&s);
}

static void
test_repeat(void **state)
{
	struct hs_screen s;
	assert_int_equal(hs_screen_init(&s, 4, 10), 0);
	/* REP with nothing to repeat, and after a lone combining mark or a
	 * zero-width space: libvterm 0.1.4 loops for ever on each. */
	feed(&s, "\033[b\033[5b");
	feed(&s, "\r\xcc\x81\033[3b");
	feed(&s, "\r\n\xe2\x80\x8b\033[b");
	check_sane(&s);
	/* What curses sends for a run of one character: it and "CSI n-1 b". */
	feed(&s, "\033[3;1H-\033[4bX\033[4;1H\xe4\xb8\xad\033[1b|\033[100b");
	check_row(&s, 2, "-----X");
	check_row(&s, 3, "\xe4\xb8\xad\xe4\xb8\xad||||||");
	/* A REP cut between feeds, and ones with a leader or intermediate,
	 * which are not REP. */
	feed(&s, "\033[1;1Hab\033[");
	feed(&s, "2");
	feed(&s, "b\033[?3b\033[3 b\033[2;5b");
	check_row(&s, 0, "abbbbb");
	hs_screen_free(&s);
}

/* Random streams of escape sequences, text and bytes, fed in random pieces:
 * no crash, no hang, the cursor on the screen, the rows valid UTF-8. */
static void
test_random_streams(void **state)
{
	static const char *const tok[] = {
		"\033[", "\033]", "\033P", "\033(0", "\033(B", ";", "?", "1049h", "1049l", "\033c",
		"\r", "\n", "\t", "\b", "\xc2", "\xe4\xb8\xad", "\xcc\x81", "\033[?6h", "\033[5;10r",
		"\033#8", "\033[4h", "\033[?3h", "\033[L", "\033[M", "\033[P", "\033[@", "\033[X",
		"\033[10b", "\033[b", "\033[S", "\033[T", "\033[?69h", "\033[3;8s", "\033[20D", "\033D",
		"\033M", "\033[Z", "\033[3g", "\033H", "\033[?5W", "\033#6", "\033#3", "\033[1K",
		"\033[2K", "\033[J", "\033[1J", "\xe2\x80\x8b", "\xf0\x9f\x98\x80", "\x85", "\033\\",
	};
	uint64_t x = 88172645463325252ull;
	char buf[4096];
	for (int it = 0; it < 200; it++) {
		struct hs_screen s;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		assert_int_equal(hs_screen_init(&s, 1 + (int)(x % 30), 2 + (int)((x >> 8) % 90)), 0);
		size_t o = 0;
		while (o < sizeof(buf) - 16) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			unsigned k = (unsigned)(x % 100);
			if (k < 40) {
				const char *t = tok[(x >> 8) % (sizeof(tok) / sizeof(tok[0]))];
				memcpy(buf + o, t, strlen(t));
				o += strlen(t);
			} else if (k < 60) {
				buf[o++] = (char)('0' + (x >> 8) % 10);
			} else if (k < 80) {
				buf[o++] = (char)('A' + (x >> 8) % 58);
			} else {
				buf[o++] = (char)(x >> 8);
			}
		}
		for (size_t p = 0; p < o;) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t n = 1 + (size_t)(x % 64);
			if (n > o - p)
				n = o - p;
			hs_screen_feed(&s, buf + p, n);
			p += n;
		}
		check_sane(&s);
		hs_screen_free(&s);
	}
}

static void
test_trailing_trimmed(void **state)
{
	struct hs_screen s;
	assert_int_equal(hs_screen_init(&s, 3, 20), 0);
	feed(&s, "abc        \r\n  x  y   \r\n\t\t");
	check_row(&s, 0, "abc");
	check_row(&s, 1, "  x  y");
	check_row(&s, 2, "");
	/* Line-drawing characters (DEC special graphics), as curses draws boxes. */
	feed(&s, "\r\033(0lqqk\033(B ok");
	check_row(&s, 2, "\xe2\x94\x8c\xe2\x94\x80\xe2\x94\x80\xe2\x94\x90 ok");
	hs_screen_free(&s);
}

static void
test_json(void **state)
{
	struct hs_screen s;
	const unsigned char *buf;
	size_t n;
	assert_int_equal(hs_screen_init(&s, 3, 8), 0);
	feed(&s, "hi \"x\"\r\n\033[3;4H\xe4\xb8\xad");
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	hs_screen_json(g, &s);
	yajl_gen_map_close(g);
	assert_int_equal(yajl_gen_get_buf(g, &buf, &n), yajl_gen_status_ok);
	const char *want = "{\"screen\":{\"rows\":[\"hi \\\"x\\\"\",\"\",\"   \xe4\xb8\xad\"],"
	                   "\"cursor\":{\"row\":2,\"col\":5},\"size\":{\"rows\":3,\"cols\":8},"
	                   "\"alternate\":false,\"partial\":false}}";
	if (n != strlen(want) || memcmp(buf, want, n))
		fail_msg("got %.*s", (int)n, buf);
	yajl_gen_free(g);
	hs_screen_free(&s);
}

/* The JSON text hs_screen_capture_json makes of capture c (a new string). */
static char *
capture_json(const struct hs_capture *c, int rows, int cols, int newline)
{
	const unsigned char *buf;
	size_t n;
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	hs_screen_capture_json(g, c, rows, cols, newline);
	yajl_gen_map_close(g);
	assert_int_equal(yajl_gen_get_buf(g, &buf, &n), yajl_gen_status_ok);
	char *out = strndup((const char *)buf, n);
	yajl_gen_free(g);
	return out;
}

static void
test_capture(void **state)
{
	struct hs_capture c;
	char *j;
	/* All kept: the whole stream, not partial. */
	assert_int_equal(hs_capture_init(&c, 1 << 16), 0);
	hs_capture_add(&c, "one\r\ntwo", strlen("one\r\ntwo"));
	j = capture_json(&c, 2, 10, 0);
	assert_string_equal(j, "{\"screen\":{\"rows\":[\"one\",\"two\"],\"cursor\":{\"row\":1,\"col\":3},"
	                       "\"size\":{\"rows\":2,\"cols\":10},\"alternate\":false,\"partial\":false}}");
	free(j);
	/* Pipe output: bare line feeds start new lines. */
	hs_capture_add(&c, "\nthree\nfour", strlen("\nthree\nfour"));
	j = capture_json(&c, 2, 10, 1);
	assert_string_equal(j, "{\"screen\":{\"rows\":[\"three\",\"four\"],\"cursor\":{\"row\":1,\"col\":4},"
	                       "\"size\":{\"rows\":2,\"cols\":10},\"alternate\":false,\"partial\":false}}");
	free(j);
	/* A bad size: null. */
	j = capture_json(&c, 2, 1, 0);
	assert_string_equal(j, "{\"screen\":null}");
	free(j);
	hs_capture_free(&c);
	/* The middle dropped: from the tail's last clear, with the alternate
	 * screen the head entered. */
	assert_int_equal(hs_capture_init(&c, 64), 0);
	static const char *const parts[] = { "\033[?1049h\033[Hold screen", "\033[2;1Hmiddle",
	                                     "\033[H\033[2Jnew screen\r\n~" };
	hs_capture_add(&c, parts[0], strlen(parts[0]));
	for (int i = 0; i < 100; i++)
		hs_capture_add(&c, parts[1], strlen(parts[1]));
	hs_capture_add(&c, parts[2], strlen(parts[2]));
	assert_true(c.dropped > 0);
	j = capture_json(&c, 3, 20, 0);
	assert_string_equal(j, "{\"screen\":{\"rows\":[\"new screen\",\"~\",\"\"],\"cursor\":{\"row\":1,\"col\":1},"
	                       "\"size\":{\"rows\":3,\"cols\":20},\"alternate\":true,\"partial\":true}}");
	free(j);
	hs_capture_free(&c);
}

/* A stream of n bytes: numbered lines, then tail. */
static char *
big_stream(size_t n, const char *head, const char *tail, size_t *len)
{
	char *b = malloc(n + strlen(head) + strlen(tail) + 64);
	size_t o = 0;
	assert_non_null(b);
	o += (size_t)sprintf(b, "%s", head);
	for (unsigned i = 0; o < n; i++)
		o += (size_t)sprintf(b + o, "line %u\r\n", i);
	o += (size_t)sprintf(b + o, "%s", tail);
	*len = o;
	return b;
}

static void
test_huge_bounded(void **state)
{
	struct hs_screen s;
	size_t len;
	char *b = big_stream(8u << 20, "", "last\r\nEND", &len);
	assert_int_equal(hs_screen_init(&s, 4, 40), 0);
	hs_screen_feed_tail(&s, b, len, HS_SCREEN_FEED_MAX, 0);
	assert_true(s.partial);
	assert_true(s.fed <= HS_SCREEN_FEED_MAX);
	assert_true(s.fed > 0);
	check_row(&s, 2, "last");
	check_row(&s, 3, "END");
	check_cursor(&s, 3, 3);
	assert_false(s.alternate);
	hs_screen_free(&s);
	free(b);

	/* A bigger screen is fed fewer bytes: 1 MiB of line feeds, each a scroll
	 * of the whole screen, stays within the work bound. */
	assert_int_equal(hs_screen_init(&s, 24, 80), 0);
	assert_true(hs_screen_feed_bound(&s) >= 256u << 10);
	hs_screen_free(&s);
	assert_int_equal(hs_screen_init(&s, HS_SCREEN_SIZE_MAX, HS_SCREEN_SIZE_MAX), 0);
	size_t bound = hs_screen_feed_bound(&s);
	assert_true(bound > 0 && bound * HS_SCREEN_SIZE_MAX * HS_SCREEN_SIZE_MAX <= HS_SCREEN_WORK);
	b = malloc(1u << 20);
	assert_non_null(b);
	memset(b, '\n', 1u << 20);
	memcpy(b + (1u << 20) - 4, "last", 4);
	hs_screen_feed_tail(&s, b, 1u << 20, bound, 0);
	assert_true(s.partial);
	assert_true(s.fed <= bound);
	int row = -1, col = -1;
	hs_screen_cursor(&s, &row, &col);
	assert_int_equal(row, (int)s.fed - 4);
	check_row(&s, row, "last");
	hs_screen_free(&s);
	free(b);

	/* Short streams are fed whole and are not partial. */
	assert_int_equal(hs_screen_init(&s, 4, 40), 0);
	hs_screen_feed_tail(&s, "short", 5, HS_SCREEN_FEED_MAX, 0);
	assert_false(s.partial);
	assert_int_equal(s.fed, 5);
	check_row(&s, 0, "short");
	hs_screen_free(&s);

	/* The alternate screen entered long before the cut is still on, and the
	 * render starts at the last screen clear: nothing from before it shows. */
	b = big_stream(3u << 20, "\033[?1049h",
	               "\033[H\033[2Jtop\033[4;1Hbottom", &len);
	assert_int_equal(hs_screen_init(&s, 4, 40), 0);
	hs_screen_feed_tail(&s, b, len, 64 << 10, 0);
	assert_true(s.partial);
	assert_true(s.alternate);
	assert_true(s.fed <= 64 << 10);
	check_row(&s, 0, "top");
	check_row(&s, 1, "");
	check_row(&s, 2, "");
	check_row(&s, 3, "bottom");
	hs_screen_free(&s);
	free(b);

	/* A capture that dropped its middle: the head (which entered the
	 * alternate screen) and the tail, fed from the tail's last clear. */
	static const char head[] = "\033[?1049hHEAD", tail[] = "ail of a line\r\n\033[2J\033[Hnew";
	char cap[sizeof(head) + sizeof(tail)];
	memcpy(cap, head, strlen(head));
	memcpy(cap + strlen(head), tail, strlen(tail));
	assert_int_equal(hs_screen_init(&s, 4, 40), 0);
	hs_screen_feed_tail(&s, cap, strlen(head) + strlen(tail), strlen(tail), 1);
	assert_true(s.partial);
	assert_true(s.alternate);
	check_row(&s, 0, "new");
	check_row(&s, 1, "");
	hs_screen_free(&s);

	/* Left again before the cut: the main screen. */
	b = big_stream(2u << 20, "\033[?1049hx\033[?1049l", "z", &len);
	assert_int_equal(hs_screen_init(&s, 4, 40), 0);
	hs_screen_feed_tail(&s, b, len, 4096, 0);
	assert_true(s.partial);
	assert_false(s.alternate);
	check_row(&s, 3, "z");
	hs_screen_free(&s);
	free(b);

	/* A cut inside a long escape sequence or UTF-8 character starts at the
	 * next sequence, not in the middle of one. */
	size_t m = 10000;
	b = malloc(m + 16);
	assert_non_null(b);
	for (size_t i = 0; i < m; i += 3)
		memcpy(b + i, "\xe4\xb8\xad", 3);
	len = m - m % 3;
	assert_int_equal(hs_screen_init(&s, 4, 10), 0);
	hs_screen_feed_tail(&s, b, len, 100, 0);
	/* 99 bytes from the first whole character: 33 of them, 5 to a row. */
	assert_int_equal(s.fed, 99);
	for (int r = 0; r < 3; r++)
		check_row(&s, r, "\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad");
	check_row(&s, 3, "\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad");
	hs_screen_free(&s);
	free(b);
}

/* A 3x8 screen's wire form, as a render child sends it (*len set). */
static char *
wire_of(const char *stream, size_t *len)
{
	struct hs_screen s;
	struct hs_screen_shot shot;
	assert_int_equal(hs_screen_init(&s, 3, 8), 0);
	feed(&s, stream);
	assert_int_equal(hs_screen_snap(&s, &shot), 0);
	char *w = hs_screen_shot_encode(&shot, len);
	assert_non_null(w);
	assert_true(*len <= hs_screen_shot_max(3, 8));
	hs_screen_shot_free(&shot);
	hs_screen_free(&s);
	return w;
}

/* Parsing wire[0..len) as a 3x8 screen must fail with a reason naming why. */
static void
refused(const char *wire, size_t len, const char *why)
{
	struct hs_screen_shot shot;
	char err[256] = "";
	assert_int_equal(hs_screen_shot_parse(wire, len, 3, 8, &shot, err, sizeof(err)), -1);
	if (!strstr(err, why))
		fail_msg("reason '%s', want '%s'", err, why);
	assert_null(shot.row);
}

static void
test_shot_wire(void **state)
{
	(void)state;
	struct hs_screen_shot shot;
	char err[256];
	size_t len;
	char *w = wire_of("hi\r\n\033[3;4H\xe4\xb8\xad\033[?1049h", &len);

	/* What was sent comes back: rows, cursor, flags (the alternate screen
	 * blank, the cursor where it was). */
	assert_int_equal(hs_screen_shot_parse(w, len, 3, 8, &shot, err, sizeof(err)), 0);
	assert_int_equal(shot.crow, 2);
	assert_int_equal(shot.ccol, 5);
	assert_int_equal(shot.alternate, 1);
	assert_int_equal(shot.partial, 0);
	for (int r = 0; r < 3; r++)
		assert_string_equal(shot.row[r], "");
	hs_screen_shot_free(&shot);
	free(w);
	w = wire_of("hi\r\n\033[3;4H\xe4\xb8\xad", &len);
	assert_int_equal(hs_screen_shot_parse(w, len, 3, 8, &shot, err, sizeof(err)), 0);
	assert_string_equal(shot.row[0], "hi");
	assert_string_equal(shot.row[2], "   \xe4\xb8\xad");
	assert_int_equal(shot.len[2], 6);
	assert_int_equal(shot.crow, 2);
	assert_int_equal(shot.ccol, 5);
	hs_screen_shot_free(&shot);

	/* Every truncation, a byte more, another size: refused. */
	for (size_t n = 0; n < len; n++)
		refused(w, n, n < 28 ? "not a screen" : "malformed row");
	char *longer = malloc(len + 1);
	assert_non_null(longer);
	memcpy(longer, w, len);
	longer[len] = 'x';
	refused(longer, len + 1, "malformed row");
	free(longer);
	assert_int_equal(hs_screen_shot_parse(w, len, 4, 8, &shot, err, sizeof(err)), -1);
	assert_int_equal(hs_screen_shot_parse(w, len, 3, 9, &shot, err, sizeof(err)), -1);

	/* Header fields out of range: cursor off the screen, a flag of 2. */
	uint32_t v;
	static const struct { size_t at; uint32_t v; } bad[] = {
		{ 0, 0 }, { 12, 3 }, { 16, 9 }, { 20, 2 }, { 24, 2 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *c = malloc(len);
		assert_non_null(c);
		memcpy(c, w, len);
		v = bad[i].v;
		memcpy(c + bad[i].at, &v, sizeof(v));
		refused(c, len, bad[i].at ? "bad size, cursor or flag" : "not a screen");
		free(c);
	}

	/* A row's length beyond any 8-column row, and beyond the buffer. */
	char *c = malloc(len);
	assert_non_null(c);
	memcpy(c, w, len);
	v = 0xffffffffu;
	memcpy(c + 28, &v, sizeof(v));
	refused(c, len, "malformed row");
	/* Row 0 ("hi"): invalid UTF-8, then a control character. */
	memcpy(c, w, len);
	memcpy(c + 32, "\xff", 1);
	refused(c, len, "malformed row");
	memcpy(c, w, len);
	memcpy(c + 32, "\033", 1);
	refused(c, len, "malformed row");
	free(c);
	free(w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_bounds),
		cmocka_unit_test(test_cursor_addressing),
		cmocka_unit_test(test_clear_screen),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_scroll),
		cmocka_unit_test(test_alternate),
		cmocka_unit_test(test_wide_and_combining),
		cmocka_unit_test(test_split_feeds),
		cmocka_unit_test(test_invalid_utf8),
		cmocka_unit_test(test_repeat),
		cmocka_unit_test(test_random_streams),
		cmocka_unit_test(test_trailing_trimmed),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_huge_bounded),
		cmocka_unit_test(test_capture),
		cmocka_unit_test(test_shot_wire),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
