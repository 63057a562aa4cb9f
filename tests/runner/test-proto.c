/* SPDX-License-Identifier: MIT */
/* Unit tests of the hs-runner frame layer, with the fuzz smoke test. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto.h"

int hsr_fuzz_frames(const uint8_t *data, size_t size);

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Encodes one random message of every type the generic encoder knows. */
static void random_msg(struct hsr_msg *m, uint8_t type, uint8_t *data, size_t cap)
{
	static const uint8_t streams[] = { 1, 2 };

	memset(m, 0, sizeof(*m));
	m->type = type;
	switch (type) {
	case HSR_F_HELLO:
		m->vmin = (uint32_t)rnd();
		m->vmax = (uint32_t)rnd();
		m->str = "1.2.3";
		m->str_len = 5;
		break;
	case HSR_F_ERROR:
		m->id = rnd();
		m->code = (uint32_t)rnd();
		m->str = "some error";
		m->str_len = 10;
		break;
	case HSR_F_STDIN:
	case HSR_F_OUTPUT:
	case HSR_F_STATE:
	case HSR_F_FILE_DATA:
	case HSR_F_PUT:
		m->id = rnd();
		m->len = rnd() % cap;
		for (size_t i = 0; i < m->len; i++)
			data[i] = (uint8_t)rnd();
		m->data = data;
		if (type == HSR_F_OUTPUT) {
			m->stream = streams[rnd() % 2];
			m->offset = rnd();
		} else if (type == HSR_F_STATE) {
			m->stream = 3;
			m->offset = rnd();
		} else if (type == HSR_F_FILE_DATA) {
			m->final = (uint8_t)(rnd() % 2);
			m->offset = rnd();
		} else if (type == HSR_F_PUT) {
			m->flags = (uint32_t)rnd();
			m->mode = (uint32_t)rnd();
			m->str = "/tmp/x";
			m->str_len = 6;
		}
		break;
	case HSR_F_STDIN_EOF:
	case HSR_F_CANCEL:
	case HSR_F_OK:
	case HSR_F_EGRESS_CONN:
	case HSR_F_EGRESS_EOF:
	case HSR_F_EGRESS_CLOSE:
		m->id = rnd();
		break;
	case HSR_F_EGRESS_LISTEN:
		m->value = rnd();
		break;
	case HSR_F_EGRESS_DATA:
		m->id = rnd();
		m->len = rnd() % cap;
		for (size_t i = 0; i < m->len; i++)
			data[i] = (uint8_t)rnd();
		m->data = data;
		break;
	case HSR_F_KEY:
	case HSR_F_CHALLENGE:
	case HSR_F_AUTH:
		/* 64 bytes: a nonce or key in data, a proof after it. */
		for (size_t i = 0; i < 64; i++)
			data[i] = (uint8_t)rnd();
		m->data = data;
		m->len = type == HSR_F_AUTH ? 0 : 32;
		m->proof = data + 32;
		break;
	case HSR_F_SIGNAL:
		m->id = rnd();
		m->signo = (uint32_t)rnd();
		break;
	case HSR_F_EXIT:
		m->id = rnd();
		m->exit_code = (int32_t)rnd();
		m->timed_out = 1;
		m->cancelled = 0;
		m->dropped[1] = rnd();
		m->dropped[2] = rnd();
		m->total[1] = rnd();
		m->total[2] = rnd();
		m->total[3] = rnd();
		break;
	case HSR_F_GET:
		m->id = rnd();
		m->str = "/etc/hostname";
		m->str_len = 13;
		break;
	case HSR_F_ACK:
		m->id = rnd();
		m->stream = (uint8_t)(rnd() % 4);
		m->offset = rnd();
		break;
	case HSR_F_CREDIT:
		m->id = rnd();
		m->value = rnd();
		break;
	case HSR_F_ATTACH:
	case HSR_F_PING:
	case HSR_F_PONG:
		m->value = rnd();
		break;
	case HSR_F_SHUTDOWN:
		m->value = (uint32_t)rnd();
		break;
	case HSR_F_RESIZE:
		m->id = rnd();
		m->rows = (uint16_t)(1 + rnd() % HSR_PTY_MAX);
		m->cols = (uint16_t)(1 + rnd() % HSR_PTY_MAX);
		break;
	case HSR_F_READ:
		m->id = rnd();
		m->value = rnd();
		m->stream = streams[rnd() % 2];
		m->offset = rnd();
		m->mode = (uint32_t)rnd();
		break;
	case HSR_F_RANGE:
		m->id = rnd();
		m->value = rnd();
		m->stream = streams[rnd() % 2];
		m->offset = rnd();
		m->final = (uint8_t)(rnd() % 2);
		m->len = rnd() % cap;
		for (size_t i = 0; i < m->len; i++)
			data[i] = (uint8_t)rnd();
		m->data = data;
		break;
	case HSR_F_SPILL:
		m->id = rnd();
		m->value = rnd();
		break;
	}
}

static int is_data_type(uint8_t t)
{
	return t == HSR_F_STDIN || t == HSR_F_OUTPUT || t == HSR_F_STATE ||
	       t == HSR_F_FILE_DATA || t == HSR_F_PUT || t == HSR_F_EGRESS_DATA || t == HSR_F_RANGE;
}

/* Every type survives encode/decode with all fields intact, also when
 * the bytes arrive one at a time. */
static void test_roundtrip(void **state)
{
	static uint8_t data[128][3000];
	struct hsr_buf b;
	struct hsr_decoder d;
	struct hsr_msg want[128];
	size_t nwant = 0;

	(void)state;
	hsr_buf_init(&b);
	for (int round = 0; round < 3; round++)
		for (uint8_t t = 1; t <= HSR_F_MAX_TYPE; t++) {
			if (t == HSR_F_EXEC)
				continue;
			random_msg(&want[nwant], t, data[nwant], is_data_type(t) ? sizeof(data[0]) : 1);
			hsr_msg_encode(&b, &want[nwant], 0);
			nwant++;
		}
	assert_false(b.failed);
	hsr_decoder_init(&d, 0);
	for (size_t i = 0, got = 0; i < b.len; i++) {
		struct hsr_frame f;
		struct hsr_msg m;

		assert_int_equal(hsr_decoder_feed(&d, b.data + i, 1), 0);
		while (hsr_decoder_next(&d, &f) == 1) {
			const struct hsr_msg *w = &want[got++];

			assert_int_equal(hsr_msg_decode(&f, 0, &m), 0);
			assert_int_equal(m.type, w->type);
			assert_true(m.id == w->id);
			assert_true(m.offset == w->offset);
			assert_true(m.value == w->value);
			assert_int_equal(m.stream, w->stream);
			assert_int_equal(m.code, w->code);
			assert_int_equal(m.exit_code, w->exit_code);
			assert_int_equal(m.len, w->len);
			assert_int_equal(m.str_len, w->str_len);
			assert_true(m.total[3] == w->total[3]);
			if (w->type == HSR_F_OUTPUT || w->type == HSR_F_PUT)
				assert_memory_equal(m.data, w->data, m.len);
		}
		if (i + 1 == b.len)
			assert_int_equal(got, nwant);
	}
	hsr_decoder_free(&d);
	hsr_buf_free(&b);
}

static struct hsr_exec_req *exec_roundtrip(const char *const *argv, const char *const *envp)
{
	struct hsr_buf b;
	struct hsr_decoder d;
	struct hsr_frame f;
	struct hsr_msg m;
	struct hsr_exec_req *q = NULL;

	hsr_buf_init(&b);
	hsr_exec_encode(&b, 42, HSR_EXEC_STDIN_PIPE, 1500, 2000, 10, 20, 30, 0, "/tmp", argv, envp);
	hsr_decoder_init(&d, 0);
	assert_int_equal(hsr_decoder_feed(&d, b.data, b.len), 0);
	assert_int_equal(hsr_decoder_next(&d, &f), 1);
	assert_int_equal(hsr_msg_decode(&f, 0, &m), 0);
	q = hsr_exec_decode(m.data, m.len);
	hsr_decoder_free(&d);
	hsr_buf_free(&b);
	return q;
}

static void test_exec(void **state)
{
	const char *argv[] = { "sh", "-c", "echo 'a b'", "", NULL };
	const char *envp[] = { "A=1", "B=x=y", "EMPTY=", NULL };
	const char *bad_env[] = { "NOEQUALS", NULL };
	const char *bad_env2[] = { "=x", NULL };
	const char *no_argv[] = { NULL };
	struct hsr_exec_req *q = exec_roundtrip(argv, envp);

	(void)state;
	assert_non_null(q);
	assert_true(q->id == 42);
	assert_int_equal(q->flags, HSR_EXEC_STDIN_PIPE);
	assert_true(q->deadline_ms == 1500 && q->grace_ms == 2000);
	assert_true(q->head == 10 && q->tail == 20 && q->credit == 30);
	assert_string_equal(q->cwd, "/tmp");
	for (int i = 0; i < 4; i++)
		assert_string_equal(q->argv[i], argv[i]);
	assert_null(q->argv[4]);
	for (int i = 0; i < 3; i++)
		assert_string_equal(q->envp[i], envp[i]);
	assert_null(q->envp[3]);
	free(q);
	assert_null(exec_roundtrip(argv, bad_env));
	assert_null(exec_roundtrip(argv, bad_env2));
	assert_null(exec_roundtrip(no_argv, envp));
}

/* Decodes the one frame in b into m (and an EXEC into *q when q is not
 * NULL); returns hsr_msg_decode's answer. */
static int decode_one(struct hsr_buf *b, struct hsr_msg *m, struct hsr_exec_req **q)
{
	struct hsr_decoder d;
	struct hsr_frame f;
	int rc = -1;

	hsr_decoder_init(&d, 0);
	if (hsr_decoder_feed(&d, b->data, b->len) == 0 && hsr_decoder_next(&d, &f) == 1)
		rc = hsr_msg_decode(&f, 0, m);
	if (q)
		*q = rc == 0 ? hsr_exec_decode(m->data, m->len) : NULL;
	hsr_decoder_free(&d);
	return rc;
}

/* HSR_EXEC_PTY appends the window size; RESIZE carries one; sizes outside
 * 1..HSR_PTY_MAX are refused. */
static void test_pty(void **state)
{
	const char *argv[] = { "bash", NULL };
	const char *envp[] = { "A=1", NULL };
	struct hsr_buf b;
	struct hsr_msg m;
	struct hsr_exec_req *q;
	struct hsr_msg rs = { .type = HSR_F_RESIZE, .id = 9, .rows = 30, .cols = 100 };

	(void)state;
	hsr_buf_init(&b);
	hsr_exec_encode_pty(&b, 5, HSR_EXEC_PTY, 0, 2000, 0, 0, 1, 0, "/", argv, envp, 24, 80);
	assert_int_equal(decode_one(&b, &m, &q), 0);
	assert_non_null(q);
	assert_true(q->flags == HSR_EXEC_PTY && q->rows == 24 && q->cols == 80);
	assert_string_equal(q->argv[0], "bash");
	assert_string_equal(q->envp[0], "A=1");
	free(q);
	b.len = 0;
	hsr_exec_encode_pty(&b, 5, HSR_EXEC_PTY, 0, 2000, 0, 0, 1, 0, "/", argv, envp, 0, 80);
	assert_int_equal(decode_one(&b, &m, NULL), -1);
	b.len = 0;
	hsr_exec_encode_pty(&b, 5, HSR_EXEC_PTY, 0, 2000, 0, 0, 1, 0, "/", argv, envp, 24,
			    HSR_PTY_MAX + 1);
	assert_int_equal(decode_one(&b, &m, NULL), -1);
	/* Without the flag no size travels: the old layout. */
	b.len = 0;
	hsr_exec_encode(&b, 5, 0, 0, 2000, 0, 0, 1, 0, "/", argv, envp);
	assert_int_equal(decode_one(&b, &m, &q), 0);
	assert_non_null(q);
	assert_true(q->rows == 0 && q->cols == 0);
	free(q);

	b.len = 0;
	hsr_msg_encode(&b, &rs, 0);
	assert_int_equal(decode_one(&b, &m, NULL), 0);
	assert_true(m.type == HSR_F_RESIZE && m.id == 9 && m.rows == 30 && m.cols == 100);
	b.len = 0;
	rs.cols = 0;
	hsr_msg_encode(&b, &rs, 0);
	assert_int_equal(decode_one(&b, &m, NULL), -1);
	assert_string_equal(hsr_frame_name(HSR_F_RESIZE), "RESIZE");
	hsr_buf_free(&b);
}

/* Lengths of zero or above the limit poison the decoder for good, and a
 * truncated payload or trailing garbage is a decode error. */
static void test_limits(void **state)
{
	static const uint8_t zero[] = { 0, 0, 0, 0, 1 };
	static const uint8_t big[] = { 0x01, 0x00, 0x01, 0x00, 1 };
	static const uint8_t ping_short[] = { 5, 0, 0, 0, HSR_F_PING, 1, 2, 3, 4 };
	static const uint8_t ping_long[] = { 10, 0, 0, 0, HSR_F_PING, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	static const uint8_t unknown[] = { 1, 0, 0, 0, 200 };
	struct hsr_decoder d;
	struct hsr_frame f;
	struct hsr_msg m;

	(void)state;
	hsr_decoder_init(&d, 0);
	assert_int_equal(hsr_decoder_feed(&d, zero, sizeof(zero)), 0);
	assert_int_equal(hsr_decoder_next(&d, &f), -1);
	assert_int_equal(hsr_decoder_next(&d, &f), -1);
	hsr_decoder_free(&d);

	hsr_decoder_init(&d, 65536);
	assert_int_equal(hsr_decoder_feed(&d, big, sizeof(big)), 0);
	assert_int_equal(hsr_decoder_next(&d, &f), -1);
	hsr_decoder_free(&d);

	hsr_decoder_init(&d, 0);
	assert_int_equal(hsr_decoder_feed(&d, ping_short, sizeof(ping_short)), 0);
	assert_int_equal(hsr_decoder_next(&d, &f), 1);
	assert_int_equal(hsr_msg_decode(&f, 0, &m), -1);
	assert_int_equal(hsr_decoder_feed(&d, ping_long, sizeof(ping_long)), 0);
	assert_int_equal(hsr_decoder_next(&d, &f), 1);
	assert_int_equal(hsr_msg_decode(&f, 0, &m), -1);
	assert_int_equal(hsr_decoder_feed(&d, unknown, sizeof(unknown)), 0);
	assert_int_equal(hsr_decoder_next(&d, &f), 1);
	assert_int_equal(hsr_msg_decode(&f, 0, &m), -1);
	assert_int_equal(hsr_decoder_next(&d, &f), 0);
	hsr_decoder_free(&d);
}

static void test_attach_entries(void **state)
{
	struct hsr_buf list, b;
	struct hsr_decoder d;
	struct hsr_frame f;
	struct hsr_msg m = { .type = HSR_F_ATTACH, .count = 3 };

	(void)state;
	hsr_buf_init(&list);
	hsr_buf_init(&b);
	for (uint64_t i = 0; i < 3; i++) {
		struct hsr_attach_entry e = { .id = 100 + i, .finished = (int)(i & 1) };

		for (int s = 1; s <= 3; s++) {
			e.acked[s] = i * 10 + (uint64_t)s;
			e.end[s] = i * 100 + (uint64_t)s;
		}
		hsr_attach_entry_encode(&list, &e);
	}
	m.data = list.data;
	m.len = list.len;
	hsr_msg_encode(&b, &m, 1);
	hsr_decoder_init(&d, 0);
	assert_int_equal(hsr_decoder_feed(&d, b.data, b.len), 0);
	assert_int_equal(hsr_decoder_next(&d, &f), 1);
	assert_int_equal(hsr_msg_decode(&f, 1, &m), 0);
	assert_int_equal(m.count, 3);
	for (uint32_t i = 0; i < 3; i++) {
		struct hsr_attach_entry e;

		hsr_attach_entry_decode(&m, i, &e);
		assert_true(e.id == 100 + i);
		assert_int_equal(e.finished, (int)(i & 1));
		assert_true(e.acked[2] == i * 10 + 2);
		assert_true(e.end[3] == i * 100 + 3);
	}
	hsr_decoder_free(&d);
	hsr_buf_free(&b);
	hsr_buf_free(&list);
}

/* Fuzz smoke: random bytes, and valid streams with random mutations, go
 * through the same entry point as the libFuzzer target, which aborts on
 * a round-trip mismatch; sanitizer builds also catch over-reads. */
static void test_fuzz_smoke(void **state)
{
	static uint8_t buf[8192];
	struct hsr_buf valid;
	const char *argv[] = { "sh", "-c", "true", NULL };
	const char *envp[] = { "PATH=/bin", NULL };

	(void)state;
	hsr_buf_init(&valid);
	for (uint8_t t = 1; t <= HSR_F_MAX_TYPE; t++) {
		struct hsr_msg m;
		static uint8_t data[100];

		if (t == HSR_F_EXEC) {
			hsr_exec_encode(&valid, 7, 3, 1, 2, 3, 4, 5, 0, "/", argv, envp);
			continue;
		}
		random_msg(&m, t, data, sizeof(data));
		hsr_msg_encode(&valid, &m, t == HSR_F_ATTACH);
	}
	for (int i = 0; i < 3000; i++) {
		size_t n = rnd() % sizeof(buf);

		if (i % 2) {
			for (size_t k = 0; k < n; k++)
				buf[k] = (uint8_t)rnd();
			/* Small lengths make random bytes form frames more often. */
			if (n > 4)
				buf[1] = buf[2] = buf[3] = buf[4] = 0;
		} else {
			n = valid.len < sizeof(buf) ? valid.len : sizeof(buf);
			memcpy(buf, valid.data, n);
			for (int k = 0; k < 1 + (int)(rnd() % 8); k++)
				buf[rnd() % n] = (uint8_t)rnd();
		}
		assert_int_equal(hsr_fuzz_frames(buf, n), 0);
	}
	/* The unmutated stream decodes completely. */
	assert_int_equal(hsr_fuzz_frames(valid.data, valid.len), 0);
	hsr_buf_free(&valid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_exec),
		cmocka_unit_test(test_pty),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_attach_entries),
		cmocka_unit_test(test_fuzz_smoke),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
