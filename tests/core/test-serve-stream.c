/* SPDX-License-Identifier: MIT */
/*
 * Streamed output events of hs serve (core/serve/serve-stream.c): offsets,
 * honest gaps, UTF-8 characters never cut, base64 only per event.  The
 * events are taken where the writer would queue them (srv_emit_stream).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <yajl/yajl_tree.h>

#include "core/json.h"
#include "core/serve/serve.h"

#define MAX_EV 64
static yajl_val ev[MAX_EV];
static int nev;

/* The writer, stubbed: every event is parsed and kept. */
void
srv_emit_stream(struct sess *ss, yajl_gen g)
{
	(void)ss;
	size_t len;
	char *buf = hs_json_take(g, &len);
	assert_non_null(buf);
	assert_true(nev < MAX_EV);
	char *line = strndup(buf, len); /* the writer's line is not terminated */
	assert_non_null(line);
	ev[nev] = yajl_tree_parse(line, NULL, 0);
	free(line);
	assert_non_null(ev[nev]);
	nev++;
	free(buf);
}

/* The writer's queue, stubbed: full when the test says so. */
static int queue_full;

int
srv_stream_full(struct sess *ss)
{
	(void)ss;
	return queue_full;
}

void
srv_gen_id(yajl_gen g, yajl_val id)
{
	(void)id;
	hs_json_key(g, "id");
	yajl_gen_integer(g, 7);
}

static void
reset(void)
{
	for (int i = 0; i < nev; i++)
		yajl_tree_free(ev[i]);
	nev = 0;
}

static long long
num(yajl_val v, const char *a, const char *b)
{
	const char *path[] = { a, b, NULL };
	yajl_val x = yajl_tree_get(v, path, yajl_t_number);
	return x ? YAJL_GET_INTEGER(x) : -1;
}

static const char *
str(yajl_val v, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val x = yajl_tree_get(v, path, yajl_t_string);
	return x ? YAJL_GET_STRING(x) : NULL;
}

/* A character cut between two chunks goes whole into the second event. */
static void
test_utf8_cut(void **state)
{
	(void)state;
	struct srv_stream st = { 0 };
	const char *text = "ab\xc3\xa9" "cd\xe2\x82\xac";
	srv_stream_output(&st, 1, text, 3);      /* "ab" and half of é */
	srv_stream_output(&st, 1, text + 3, 5);  /* the rest of é, "cd", two thirds of € */
	srv_stream_output(&st, 1, text + 8, 1);  /* the last byte of € */
	srv_stream_flush(&st);
	assert_int_equal(nev, 3);
	assert_string_equal(str(ev[0], "data"), "ab");
	assert_int_equal(num(ev[0], "offset", NULL), 0);
	assert_string_equal(str(ev[1], "data"), "\xc3\xa9" "cd");
	assert_int_equal(num(ev[1], "offset", NULL), 2);
	assert_string_equal(str(ev[2], "data"), "\xe2\x82\xac");
	assert_int_equal(num(ev[2], "offset", NULL), 6);
	assert_int_equal(st.dropped, 0);
	reset();
}

/* Bytes that are not UTF-8 go base64 in their own event only. */
static void
test_binary_per_event(void **state)
{
	(void)state;
	struct srv_stream st = { 0 };
	srv_stream_output(&st, 2, "ok\n", 3);
	srv_stream_output(&st, 2, "\xff\xfe", 2);
	srv_stream_output(&st, 2, "\xc3", 1);  /* a lead byte ... */
	srv_stream_output(&st, 2, "x", 1);     /* ... broken by a byte that cannot continue it */
	srv_stream_output(&st, 2, "\xe2\x82", 2); /* cut at the end of the stream */
	srv_stream_flush(&st);
	assert_int_equal(nev, 5);
	assert_string_equal(str(ev[0], "data"), "ok\n");
	assert_string_equal(str(ev[0], "stream"), "stderr");
	assert_null(str(ev[1], "data"));
	assert_string_equal(str(ev[1], "data_b64"), "//4=");
	assert_int_equal(num(ev[1], "offset", NULL), 3);
	assert_string_equal(str(ev[2], "data_b64"), "ww==");
	assert_int_equal(num(ev[2], "offset", NULL), 5);
	assert_string_equal(str(ev[3], "data"), "x");
	assert_int_equal(num(ev[3], "offset", NULL), 6);
	assert_string_equal(str(ev[4], "data_b64"), "4oI=");
	assert_int_equal(num(ev[4], "offset", NULL), 7);
	reset();
}

/* A gap is said in the next event of its stream, offsets go on after it,
 * and the count is the sum of the gaps. */
static void
test_gap_honest(void **state)
{
	(void)state;
	struct srv_stream st = { 0 };
	srv_stream_output(&st, 1, "head", 4);
	srv_stream_gap(&st, 1, 1000);
	srv_stream_gap(&st, 1, 24);
	srv_stream_output(&st, 2, "e", 1);
	srv_stream_output(&st, 1, "tail", 4);
	srv_stream_output(&st, 1, "\xc3", 1);
	srv_stream_gap(&st, 1, 5); /* a held-back byte before a gap goes out first */
	srv_stream_flush(&st);     /* a gap at the end still gets its event */
	assert_int_equal(nev, 5);
	assert_int_equal(num(ev[0], "offset", NULL), 0);
	assert_int_equal(num(ev[0], "gap", "bytes"), -1);
	assert_string_equal(str(ev[1], "stream"), "stderr");
	assert_int_equal(num(ev[1], "offset", NULL), 0);
	assert_int_equal(num(ev[1], "gap", "bytes"), -1);
	assert_string_equal(str(ev[2], "data"), "tail");
	assert_int_equal(num(ev[2], "gap", "offset"), 4);
	assert_int_equal(num(ev[2], "gap", "bytes"), 1024);
	assert_int_equal(num(ev[2], "offset", NULL), 1028);
	assert_string_equal(str(ev[3], "data_b64"), "ww==");
	assert_int_equal(num(ev[3], "offset", NULL), 1032);
	assert_string_equal(str(ev[4], "data"), "");
	assert_int_equal(num(ev[4], "gap", "offset"), 1033);
	assert_int_equal(num(ev[4], "gap", "bytes"), 5);
	assert_int_equal(num(ev[4], "offset", NULL), 1038);
	assert_int_equal(st.dropped, 1029);
	reset();
}

/* Cancelled while the client does not read: events that would wait become
 * a gap, said in the next event that goes out. */
static void
test_cancel_gap(void **state)
{
	(void)state;
	struct srv_stream st = { 0 };
	srv_stream_output(&st, 1, "first", 5);
	st.stopping = 1;
	queue_full = 1;
	srv_stream_output(&st, 1, "lost", 4);
	srv_stream_output(&st, 1, "more", 4);
	queue_full = 0;
	srv_stream_output(&st, 1, "last", 4);
	/* Bytes held back at the end, dropped at the flush, still get said. */
	queue_full = 1;
	srv_stream_output(&st, 1, "\xc3", 1);
	srv_stream_flush(&st);
	queue_full = 0;
	assert_int_equal(nev, 3);
	assert_int_equal(num(ev[2], "gap", "offset"), 17);
	assert_int_equal(num(ev[2], "gap", "bytes"), 1);
	assert_string_equal(str(ev[2], "data"), "");
	assert_int_equal(st.dropped, 9);
	assert_string_equal(str(ev[1], "data"), "last");
	assert_int_equal(num(ev[1], "gap", "offset"), 5);
	assert_int_equal(num(ev[1], "gap", "bytes"), 8);
	assert_int_equal(num(ev[1], "offset", NULL), 13);
	reset();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_cut),
		cmocka_unit_test(test_binary_per_event),
		cmocka_unit_test(test_gap_honest),
		cmocka_unit_test(test_cancel_gap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
