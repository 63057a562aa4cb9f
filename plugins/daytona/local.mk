# SPDX-License-Identifier: MIT
# plugins/daytona: the daytona backend (see man/hs-daytona.7).
plugin_LTLIBRARIES += plugins/daytona/daytona.la
DT_SRCS = plugins/daytona/daytona.c plugins/daytona/dt-exec.c plugins/daytona/dt-http.c \
	plugins/daytona/dt-json.c plugins/daytona/dt.h
plugins_daytona_daytona_la_SOURCES = $(DT_SRCS)
plugins_daytona_daytona_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(CURL_CFLAGS) $(YAJL_CFLAGS)
plugins_daytona_daytona_la_LDFLAGS = -module -avoid-version -shared -export-symbols-regex '^hs_backend_v1$$'
plugins_daytona_daytona_la_LIBADD = $(CURL_LIBS) $(YAJL_LIBS) $(PTHREAD_LIBS)

# Tests: the response readers with the fuzz entry point over seeds (unit),
# the backend through the fake host against the loopback emulator.
check_PROGRAMS += tests/daytona/test-json tests/daytona/test-daytona
tests_daytona_test_json_SOURCES = tests/daytona/test-json.c plugins/daytona/fuzz-json.c \
	plugins/daytona/dt-json.c plugins/daytona/dt.h
tests_daytona_test_json_CFLAGS = $(AM_CFLAGS) $(YAJL_CFLAGS) $(CMOCKA_CFLAGS)
tests_daytona_test_json_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugins/daytona \
	-DDT_SEEDS='"$(abs_top_srcdir)/tests/fuzz/corpus/daytona"'
tests_daytona_test_json_LDADD = $(YAJL_LIBS) $(CMOCKA_LIBS)
tests_daytona_test_daytona_SOURCES = tests/daytona/test-daytona.c
tests_daytona_test_daytona_LDADD = sdk/libhsfakehost.a $(DL_LIBS) $(PTHREAD_LIBS)
TESTS += tests/daytona/test-json tests/daytona/daytona.test tests/daytona/e2e.test tests/daytona/shell.test \
	tests/daytona/egress.test
EXTRA_DIST += tests/daytona/emulator.py tests/daytona/lib.sh tests/daytona/daytona.test tests/daytona/e2e.test \
	tests/daytona/egress.test \
	tests/daytona/shell.test \
	tests/fuzz/corpus/daytona plugins/daytona/fuzz-json.c

# libFuzzer target (clang), run by `make fuzz` (tests/fuzz/run.sh) over tests/fuzz/corpus/daytona.
FUZZ_TARGETS += fuzz-daytona
fuzz-daytona: plugins/daytona/fuzz-json.c plugins/daytona/dt-json.c
	@$(MKDIR_P) plugins/daytona
	$(FUZZ_CC) -std=gnu11 $(FUZZ_FLAGS) -DDT_FUZZ_MAIN -I$(top_srcdir)/plugins/daytona $(YAJL_CFLAGS) \
		-o plugins/daytona/fuzz-json $(addprefix $(top_srcdir)/,$^) $(YAJL_LIBS)
	$(FUZZ_RUN) daytona plugins/daytona/fuzz-json $(top_srcdir)/tests/fuzz/corpus/daytona
CLEANFILES += plugins/daytona/fuzz-json
.PHONY: fuzz-daytona

dist_man_MANS += man/hs-daytona.7
dist_confd_DATA += conf/conf.d/daytona.conf
EXTRA_DIST += docs/daytona.md

# Benchmark: `make bench-daytona` (against the emulator; see the script).
BENCH_EXTRA += bench-daytona
EXTRA_DIST += bench/daytona-exec.sh
bench-daytona: core/hs$(EXEEXT) plugins/daytona/daytona.la
	top_srcdir=$(abs_top_srcdir) top_builddir=$(abs_top_builddir) bash $(top_srcdir)/bench/daytona-exec.sh
.PHONY: bench-daytona
