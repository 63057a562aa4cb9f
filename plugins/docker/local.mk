# SPDX-License-Identifier: MIT
# plugins/docker: the docker backend (see man/hs-docker.7).
DK_SRCS = plugins/docker/docker.c plugins/docker/docker.h plugins/docker/api.c \
	plugins/docker/api.h plugins/docker/demux.c plugins/docker/demux.h \
	plugins/docker/hijack.c plugins/docker/hijack.h plugins/docker/container.c \
	plugins/docker/upload.c plugins/docker/risks.c plugins/docker/elf.c plugins/docker/exec.c

plugin_LTLIBRARIES += plugins/docker/docker.la
plugins_docker_docker_la_SOURCES = $(DK_SRCS)
plugins_docker_docker_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(CURL_CFLAGS) $(YAJL_CFLAGS) \
	$(LIBARCHIVE_CFLAGS) $(PTHREAD_CFLAGS)
plugins_docker_docker_la_LDFLAGS = -module -avoid-version -shared -export-symbols-regex '^hs_backend_v1$$'
plugins_docker_docker_la_LIBADD = $(CURL_LIBS) $(YAJL_LIBS) $(LIBARCHIVE_LIBS) $(PTHREAD_LIBS)
EXTRA_DIST += plugins/docker/fuzz-demux.c

# Unit test of the demultiplexer, with the fuzz target run on seeds.
check_PROGRAMS += tests/docker/test-demux
tests_docker_test_demux_SOURCES = tests/docker/test-demux.c plugins/docker/demux.c \
	plugins/docker/fuzz-demux.c
tests_docker_test_demux_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_docker_test_demux_LDADD = $(CMOCKA_LIBS)

# The plugin's ops against the fake host and a private dockerd (exec mode, approval).
check_PROGRAMS += tests/docker/test-exec
tests_docker_test_exec_SOURCES = tests/docker/test-exec.c $(DK_SRCS)
tests_docker_test_exec_CFLAGS = $(AM_CFLAGS) $(CURL_CFLAGS) $(YAJL_CFLAGS) $(LIBARCHIVE_CFLAGS) \
	$(PTHREAD_CFLAGS)
tests_docker_test_exec_LDADD = sdk/libhsfakehost.a $(CURL_LIBS) $(YAJL_LIBS) $(LIBARCHIVE_LIBS) \
	$(PTHREAD_LIBS)
TESTS += tests/docker/test-demux tests/docker/docker.test tests/docker/serve.test \
	tests/docker/exec.test tests/docker/runchan.test tests/docker/close.test tests/docker/risk-approval.test
EXTRA_DIST += tests/docker/docker.test tests/docker/serve.test tests/docker/exec.test \
	tests/docker/runchan.test tests/docker/close.test tests/docker/risk-approval.test \
	tests/docker/lib.sh tests/docker/pty.test
# PTY commands and jobs on docker (issue 24).
TESTS += tests/docker/pty.test

# libFuzzer target (clang), built and run by `make fuzz` (tests/fuzz/local.mk).
fuzz-docker: $(srcdir)/plugins/docker/fuzz-demux.c $(srcdir)/plugins/docker/demux.c
	@$(MKDIR_P) plugins/docker
	clang -std=gnu11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-I$(top_builddir) -I$(top_srcdir) -o plugins/docker/fuzz-demux \
		-include config.h $(srcdir)/plugins/docker/fuzz-demux.c $(srcdir)/plugins/docker/demux.c
	$(FUZZ_RUN) docker-demux plugins/docker/fuzz-demux $(top_srcdir)/tests/fuzz/corpus/demux
FUZZ_TARGETS += fuzz-docker
CLEANFILES += plugins/docker/fuzz-demux

dist_man_MANS += man/hs-docker.7
dist_confd_DATA += conf/conf.d/docker.conf

# A `true` through hs serve against `docker exec CONTAINER true`, as a ratio.
bench-docker: core/hs$(EXEEXT) runner/hs-runner$(EXEEXT) plugins/docker/docker.la
	HS=$(abs_top_builddir)/core/hs$(EXEEXT) HS_RUNNER=$(abs_top_builddir)/runner/hs-runner$(EXEEXT) \
	  bash $(top_srcdir)/bench/docker-bench.sh
BENCH_EXTRA += bench-docker
EXTRA_DIST += bench/docker-bench.sh bench/docker-bench.py
.PHONY: bench-docker fuzz-docker
