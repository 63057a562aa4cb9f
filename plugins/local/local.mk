# SPDX-License-Identifier: MIT
# The local backend is compiled into hs (core/local.mk); its isolated mode
# needs hs-isolate, a small single-threaded launcher installed next to
# hs-runner (docs/isolation.md says why it is a separate program).
runnerexec_PROGRAMS = plugins/local/hs-isolate
plugins_local_hs_isolate_SOURCES = plugins/local/hs-isolate.c plugins/local/isolate-root.c \
	plugins/local/isolate-seccomp.c plugins/local/iso.h plugins/local/isolate.h
plugins_local_hs_isolate_CFLAGS = $(AM_CFLAGS) $(LIBSECCOMP_CFLAGS)
plugins_local_hs_isolate_LDADD = $(LIBSECCOMP_LIBS)
dist_man_MANS += man/hs-local.7
EXTRA_DIST += docs/isolation.md
TESTS += tests/isolation/isolation.test tests/isolation/escape.test
EXTRA_DIST += tests/isolation/isolation.test tests/isolation/escape.test

# Isolated `true` vs plain local vs docker exec (bench/isolation-bench.sh).
bench-isolation: core/hs$(EXEEXT) runner/hs-runner$(EXEEXT) plugins/local/hs-isolate$(EXEEXT)
	HS=$(abs_top_builddir)/core/hs$(EXEEXT) bash $(top_srcdir)/bench/isolation-bench.sh
BENCH_EXTRA += bench-isolation
EXTRA_DIST += bench/isolation-bench.sh
.PHONY: bench-isolation
