/* SPDX-License-Identifier: MIT */
/*
 * test-fuzz-smoke - the libFuzzer entry points of the serve reader and the
 * mount-spec parser, the Modal protobuf decoder, the egress request parser and the screen
 * renderer run over their seed corpora and over mutations of every
 * seed (truncations, single-byte flips), so `make check` exercises them
 * under the sanitizer job even where clang's libFuzzer is not used.
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

int hs_fuzz_serve(const uint8_t *data, size_t size);
int hs_fuzz_mounts(const uint8_t *data, size_t size);
int hs_fuzz_pb(const uint8_t *data, size_t size);
int hs_fuzz_egress(const uint8_t *data, size_t size);
int hs_fuzz_screen(const uint8_t *data, size_t size);

static size_t
run_corpus(const char *name, int (*fn)(const uint8_t *, size_t))
{
	char dir[4096], path[8192];
	const char *src = getenv("top_srcdir");
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", src ? src : ".", name);
	DIR *d = opendir(dir);
	assert_non_null(d);
	size_t runs = 0, seeds = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		uint8_t buf[65536];
		size_t n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		seeds++;
		assert_int_equal(fn(buf, n), 0);
		runs++;
		for (size_t cut = 0; cut < n; cut++, runs++)
			assert_int_equal(fn(buf, cut), 0);
		for (size_t i = 0; i < n; i++) {
			static const uint8_t flips[] = { 0x00, 0xff, '"', '\\', '{', '}', ',', ':', '[', '$' };
			uint8_t saved = buf[i];
			for (size_t k = 0; k < sizeof(flips); k++, runs++) {
				buf[i] = flips[k];
				assert_int_equal(fn(buf, n), 0);
			}
			buf[i] = saved;
		}
	}
	closedir(d);
	assert_true(seeds >= 10);
	return runs;
}

static void
test_serve_corpus(void **state)
{
	(void)state;
	printf("serve reader: %zu inputs\n", run_corpus("serve", hs_fuzz_serve));
}

static void
test_mounts_corpus(void **state)
{
	(void)state;
	printf("mount parser: %zu inputs\n", run_corpus("mounts", hs_fuzz_mounts));
}

static void
test_pb_corpus(void **state)
{
	(void)state;
	printf("protobuf decoder: %zu inputs\n", run_corpus("pb", hs_fuzz_pb));
}

static void
test_egress_corpus(void **state)
{
	(void)state;
	printf("egress request parser: %zu inputs\n", run_corpus("egress", hs_fuzz_egress));
}

static void
test_screen_corpus(void **state)
{
	(void)state;
	printf("screen renderer: %zu inputs\n", run_corpus("screen", hs_fuzz_screen));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve_corpus),
		cmocka_unit_test(test_mounts_corpus),
		cmocka_unit_test(test_pb_corpus),
		cmocka_unit_test(test_egress_corpus),
		cmocka_unit_test(test_screen_corpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
