# SPDX-License-Identifier: MIT
# hs-runner: built with RUNNER_CC (musl-gcc, static) by an explicit rule,
# since automake cannot switch compilers per target.  proto.c and client.c
# also go into libhsrclient.a, built with the normal CC, for the core, and so
# does dirchain.c, the one directory-chain check of the core and the runner.

RUNNER_SRCS = runner/main.c runner/attach.c runner/daemon.c runner/cmd.c \
	runner/shim.c runner/spool.c runner/keep.c runner/files.c runner/rundir.c runner/proto.c \
	runner/stop.c runner/hmac.c runner/dirchain.c runner/shell.c runner/proctab.c \
	runner/egress.c runner/pty.c
RUNNER_HDRS = runner/runner.h runner/daemon.h runner/proto.h runner/hmac.h runner/dirchain.h
RUNNER_DEFS = -D_GNU_SOURCE -DHSR_VERSION='"$(PACKAGE_VERSION)"'

runnerexecdir = $(runnerdir)
runnerexec_SCRIPTS = runner/hs-runner
EXTRA_DIST += $(RUNNER_SRCS) $(RUNNER_HDRS) runner/fuzz-frames.c
CLEANFILES += runner/hs-runner runner/fuzz-frames

runner/hs-runner: $(RUNNER_SRCS:%=$(srcdir)/%) $(RUNNER_HDRS:%=$(srcdir)/%)
	@$(MKDIR_P) runner
	$(AM_V_CCLD)$(RUNNER_CC) -std=gnu11 $(RUNNER_DEFS) $(WARN_CFLAGS) $(CFLAGS) \
		$(RUNNER_CFLAGS) -I$(srcdir)/runner -o $@ \
		$(RUNNER_SRCS:%=$(srcdir)/%) $(RUNNER_LDFLAGS)

noinst_LIBRARIES += runner/libhsrclient.a
runner_libhsrclient_a_SOURCES = runner/proto.c runner/proto.h runner/client.c runner/client.h \
	runner/hmac.c runner/hmac.h runner/dirchain.c runner/dirchain.h
runner_libhsrclient_a_CPPFLAGS = $(AM_CPPFLAGS) -DHSR_VERSION='"$(PACKAGE_VERSION)"'

# libFuzzer target for the frame decoder (clang), built and run by `make fuzz`.
fuzz-runner: $(srcdir)/runner/fuzz-frames.c $(srcdir)/runner/proto.c $(srcdir)/runner/proto.h
	@$(MKDIR_P) runner
	$(FUZZ_CC) -std=gnu11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-I$(srcdir)/runner -o runner/fuzz-frames \
		$(srcdir)/runner/fuzz-frames.c $(srcdir)/runner/proto.c
	$(FUZZ_RUN) frames runner/fuzz-frames $(top_srcdir)/tests/fuzz/corpus/frames

# Tests: unit tests of the protocol (with the fuzz smoke), end-to-end tests
# of the built binary through the client library, and shell tests.
HSR_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runner $(CMOCKA_CFLAGS) \
	-DHSR_VERSION='"$(PACKAGE_VERSION)"'
check_PROGRAMS += tests/runner/test-proto tests/runner/test-runner tests/runner/test-lifecycle \
	tests/runner/hsr-run tests/runner/test-hmac tests/runner/test-dirchain
tests_runner_test_hmac_SOURCES = tests/runner/test-hmac.c
tests_runner_test_hmac_CPPFLAGS = $(HSR_TEST_CPPFLAGS)
tests_runner_test_hmac_LDADD = runner/libhsrclient.a $(CMOCKA_LIBS)
tests_runner_test_proto_SOURCES = tests/runner/test-proto.c runner/fuzz-frames.c
tests_runner_test_proto_CPPFLAGS = $(HSR_TEST_CPPFLAGS)
tests_runner_test_proto_LDADD = runner/libhsrclient.a $(CMOCKA_LIBS) $(PTHREAD_LIBS)
tests_runner_test_runner_SOURCES = tests/runner/test-runner.c tests/runner/harness.c \
	tests/runner/harness.h
tests_runner_test_runner_CPPFLAGS = $(HSR_TEST_CPPFLAGS)
tests_runner_test_runner_LDADD = runner/libhsrclient.a $(CMOCKA_LIBS) $(PTHREAD_LIBS)
tests_runner_test_lifecycle_SOURCES = tests/runner/test-lifecycle.c tests/runner/harness.c \
	tests/runner/harness.h
tests_runner_test_lifecycle_CPPFLAGS = $(HSR_TEST_CPPFLAGS)
tests_runner_test_lifecycle_LDADD = runner/libhsrclient.a $(CMOCKA_LIBS) $(PTHREAD_LIBS)
tests_runner_hsr_run_SOURCES = tests/runner/hsr-run.c tests/runner/harness.c tests/runner/harness.h
tests_runner_hsr_run_CPPFLAGS = $(HSR_TEST_CPPFLAGS)
tests_runner_hsr_run_LDADD = runner/libhsrclient.a $(PTHREAD_LIBS)
tests_runner_test_dirchain_SOURCES = tests/runner/test-dirchain.c runner/dirchain.c
tests_runner_test_dirchain_CPPFLAGS = $(HSR_TEST_CPPFLAGS)
tests_runner_test_dirchain_LDADD = $(CMOCKA_LIBS)
# The spool alone (issue 25): memory ring, file, kept ranges, bounds.
check_PROGRAMS += tests/runner/test-spool
tests_runner_test_spool_SOURCES = tests/runner/test-spool.c runner/spool.c
tests_runner_test_spool_CPPFLAGS = $(HSR_TEST_CPPFLAGS) -D_GNU_SOURCE
tests_runner_test_spool_LDADD = $(CMOCKA_LIBS)
TESTS += tests/runner/test-spool

HSR_SH_TESTS = tests/runner/cli.test tests/runner/session-shell.test tests/runner/rundir.test tests/runner/chroot.test \
	tests/runner/oneshot.test \
	tests/runner/runchan.test
TESTS += tests/runner/test-proto tests/runner/test-runner tests/runner/test-lifecycle \
	tests/runner/test-hmac tests/runner/test-dirchain \
	$(HSR_SH_TESTS)
EXTRA_DIST += $(HSR_SH_TESTS) tests/runner/lib.sh tests/runner/runchan-client.py

dist_man_MANS += man/hs-runner.7

# Benchmark: `make bench-runner`.
noinst_PROGRAMS += bench/runner-bench
bench_runner_bench_SOURCES = bench/runner-bench.c
bench_runner_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runner
bench_runner_bench_LDADD = runner/libhsrclient.a $(PTHREAD_LIBS)

bench-runner: bench/runner-bench$(EXEEXT) runner/hs-runner
	bench/runner-bench runner/hs-runner

.PHONY: fuzz-runner bench-runner
