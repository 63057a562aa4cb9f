/* SPDX-License-Identifier: MIT */
/*
 * test-json.c - unit tests of the daytona response readers, and the fuzz
 * entry point (plugins/daytona/fuzz-json.c) over the seed corpus in
 * tests/fuzz/corpus/daytona, with truncations and byte flips of each seed.
 */
#include "config.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dt.h"

static void
test_sandbox(void **unused)
{
	(void)unused;
	struct dt_sandbox sb;
	char err[128];
	const char *ok = "{\"id\":\"abc-1\",\"name\":\"n\",\"state\":\"build_failed\",\"errorReason\":\"bad\\nimage\"}";
	assert_int_equal(dt_json_sandbox(ok, strlen(ok), &sb, err, sizeof(err)), 0);
	assert_string_equal(sb.id, "abc-1");
	assert_string_equal(sb.state, "build_failed");
	assert_string_equal(sb.error_reason, "bad image");
	const char *noid = "{\"state\":\"started\"}";
	assert_int_equal(dt_json_sandbox(noid, strlen(noid), &sb, err, sizeof(err)), -1);
	const char *badid = "{\"id\":\"../x\"}";
	assert_int_equal(dt_json_sandbox(badid, strlen(badid), &sb, err, sizeof(err)), -1);
	assert_int_equal(dt_json_sandbox("{", 1, &sb, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not json"));
}

static void
test_list(void **unused)
{
	(void)unused;
	struct dt_sandbox l[2];
	int n;
	const char *a = "[{\"id\":\"a\"},{\"id\":\"b c\"},{\"id\":\"c\"},{\"id\":\"d\"}]";
	assert_int_equal(dt_json_sandbox_list(a, strlen(a), l, 2, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(l[1].id, "c");
	const char *o = "{\"items\":[{\"id\":\"p\",\"state\":\"archived\"}]}";
	assert_int_equal(dt_json_sandbox_list(o, strlen(o), l, 2, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(l[0].state, "archived");
	assert_int_equal(dt_json_sandbox_list("{}", 2, l, 2, &n), -1);
}

static void
test_exec_command(void **unused)
{
	(void)unused;
	char id[64];
	int h, code = -1;
	const char *a = "{\"cmdId\":\"c1\",\"exitCode\":null}";
	assert_int_equal(dt_json_exec(a, strlen(a), id, sizeof(id), &h, &code), 0);
	assert_string_equal(id, "c1");
	assert_int_equal(h, 0);
	const char *s = "{\"cmdId\":\"c2\",\"exitCode\":3}";
	assert_int_equal(dt_json_exec(s, strlen(s), id, sizeof(id), &h, &code), 0);
	assert_int_equal(h, 1);
	assert_int_equal(code, 3);
	const char *bad = "{\"cmdId\":\"c/../2\"}";
	assert_int_equal(dt_json_exec(bad, strlen(bad), id, sizeof(id), &h, &code), -1);
	const char *c = "{\"id\":\"c1\",\"exitCode\":0}";
	assert_int_equal(dt_json_command(c, strlen(c), &h, &code), 0);
	assert_int_equal(h, 1);
	assert_int_equal(code, 0);
	const char *r = "{\"id\":\"c1\"}";
	assert_int_equal(dt_json_command(r, strlen(r), &h, &code), 0);
	assert_int_equal(h, 0);
	const char *f = "{\"exitCode\":\"x\"}";
	assert_int_equal(dt_json_command(f, strlen(f), &h, &code), -1);
}

static void
test_logs(void **unused)
{
	(void)unused;
	struct dt_buf o = { 0 }, e = { 0 };
	const char *j = "{\"output\":\"x\",\"stdout\":\"a\\n\",\"stderr\":\"b\\n\"}";
	assert_int_equal(dt_json_logs(j, strlen(j), 1, &o, &e), 0);
	assert_string_equal(o.data, "a\n");
	assert_string_equal(e.data, "b\n");
	dt_buf_free(&o);
	dt_buf_free(&e);
	const char p[] = "pre\001\001\001out\002\002\002err\001\001\001more";
	assert_int_equal(dt_json_logs(p, sizeof(p) - 1, 0, &o, &e), 0);
	assert_string_equal(o.data, "preoutmore");
	assert_string_equal(e.data, "err");
	dt_buf_free(&o);
	dt_buf_free(&e);
	const char *old = "{\"output\":\"only\"}";
	assert_int_equal(dt_json_logs(old, strlen(old), 1, &o, &e), 0);
	assert_string_equal(o.data, "only");
	assert_null(e.data);
	dt_buf_free(&o);
	dt_buf_free(&e);
}

static void
test_message(void **unused)
{
	(void)unused;
	char m[64];
	const char *a = "{\"message\":[\"first\\nline\",\"second\"]}";
	dt_json_message(a, strlen(a), m, sizeof(m));
	assert_string_equal(m, "first line");
	const char *b = "{\"error\":\"Forbidden\"}";
	dt_json_message(b, strlen(b), m, sizeof(m));
	assert_string_equal(m, "Forbidden");
	dt_json_message("<html>", 6, m, sizeof(m));
	assert_string_equal(m, "");
}

static void
test_fuzz_seeds(void **unused)
{
	(void)unused;
	DIR *d = opendir(DT_SEEDS);
	struct dirent *de;
	int seeds = 0;
	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[1024];
		static uint8_t buf[65536];
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", DT_SEEDS, de->d_name);
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		size_t n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		seeds++;
		assert_int_equal(dt_fuzz_json(buf, n), 0);
		for (size_t cut = 0; cut < n; cut++)
			assert_int_equal(dt_fuzz_json(buf, cut), 0);
		srand(seeds);
		for (int i = 0; i < 500 && n > 0; i++) {
			uint8_t m[65536];
			memcpy(m, buf, n);
			for (int k = 0; k < 3; k++)
				m[(size_t)rand() % n] = (uint8_t)rand();
			assert_int_equal(dt_fuzz_json(m, n), 0);
		}
	}
	closedir(d);
	assert_true(seeds >= 5);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sandbox),     cmocka_unit_test(test_list),
		cmocka_unit_test(test_exec_command), cmocka_unit_test(test_logs),
		cmocka_unit_test(test_message),     cmocka_unit_test(test_fuzz_seeds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
