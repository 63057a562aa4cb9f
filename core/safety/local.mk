# SPDX-License-Identifier: MIT
# core/safety: the shared safety logic (libhssafety.a), its tests, bench,
# fuzz target, rule files and man page.

noinst_LIBRARIES += core/safety/libhssafety.a
core_safety_libhssafety_a_SOURCES = \
	core/safety/arena.c core/safety/arena.h \
	core/safety/shell/shparse.h core/safety/shell/lex.c core/safety/shell/parse.c core/safety/shell/parse-redir.c \
	core/safety/internal.h core/safety/safety.h \
	core/safety/analyse.c core/safety/resolve.c core/safety/interp.c core/safety/stdin.c \
	core/safety/stdin-views.c core/safety/stdin-views.h \
	core/safety/match.c core/safety/pred.c core/safety/sql.c core/safety/policy.c \
	core/safety/policy-index.c core/safety/getopt.c \
	core/safety/mounts.c core/safety/mounts.h \
	core/safety/allowlist.c core/safety/allowlist.h \
	core/safety/prompt.c core/safety/prompt.h \
	core/safety/audit.c core/safety/audit.h \
	core/safety/redact.c core/safety/redact.h \
	core/safety/toml.c core/safety/toml.h \
	core/safety/credentials.c core/safety/credentials.h
core_safety_libhssafety_a_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS) $(YAJL_CFLAGS)

# What a program linking the library needs (the core uses this too).
HS_SAFETY_LIBS = core/safety/libhssafety.a $(LIBCONFIG_LIBS) $(YAJL_LIBS)

hs_safety_tests = tests/safety/test-analyse tests/safety/test-corpus \
	tests/safety/test-mounts tests/safety/test-approval tests/safety/test-credentials \
	tests/safety/test-stdin
check_PROGRAMS += $(hs_safety_tests) tests/safety/hs-analyse
TESTS += $(hs_safety_tests)

hs_safety_test_cflags = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(LIBCONFIG_CFLAGS) $(YAJL_CFLAGS)
hs_safety_test_ldadd = $(HS_SAFETY_LIBS) $(CMOCKA_LIBS)

tests_safety_test_analyse_SOURCES = tests/safety/test-analyse.c tests/safety/common.h
tests_safety_test_analyse_CFLAGS = $(hs_safety_test_cflags)
tests_safety_test_analyse_LDADD = $(hs_safety_test_ldadd)
tests_safety_test_corpus_SOURCES = tests/safety/test-corpus.c tests/safety/common.h
tests_safety_test_corpus_CFLAGS = $(hs_safety_test_cflags)
tests_safety_test_corpus_LDADD = $(hs_safety_test_ldadd)
tests_safety_test_stdin_SOURCES = tests/safety/test-stdin.c tests/safety/common.h core/safety/fuzz-stdin.c
tests_safety_test_stdin_CFLAGS = $(hs_safety_test_cflags) -DHS_FUZZ_NO_MAIN \
	-DHS_STDIN_SEEDS='"$(abs_top_srcdir)/tests/fuzz/corpus/stdin"'
tests_safety_test_stdin_LDADD = $(hs_safety_test_ldadd)
tests_safety_test_mounts_SOURCES = tests/safety/test-mounts.c
tests_safety_test_mounts_CFLAGS = $(hs_safety_test_cflags)
tests_safety_test_mounts_LDADD = $(hs_safety_test_ldadd)
tests_safety_test_approval_SOURCES = tests/safety/test-approval.c
tests_safety_test_approval_CFLAGS = $(hs_safety_test_cflags)
tests_safety_test_approval_LDADD = $(hs_safety_test_ldadd)
tests_safety_test_credentials_SOURCES = tests/safety/test-credentials.c core/safety/fuzz-toml.c
tests_safety_test_credentials_CFLAGS = $(hs_safety_test_cflags) -DHS_FUZZ_NO_MAIN \
	-DHS_TOML_SEEDS='"$(abs_top_srcdir)/tests/fuzz/corpus/toml"'
tests_safety_test_credentials_LDADD = $(hs_safety_test_ldadd)
tests_safety_hs_analyse_SOURCES = tests/safety/hs-analyse.c
tests_safety_hs_analyse_CFLAGS = $(hs_safety_test_cflags)
tests_safety_hs_analyse_LDADD = $(HS_SAFETY_LIBS)

# Benchmark: "make bench-analyse" prints commands analysed per second.
EXTRA_PROGRAMS += bench/analyse-bench
bench_analyse_bench_SOURCES = bench/analyse-bench.c
bench_analyse_bench_CFLAGS = $(AM_CFLAGS) -O2
bench_analyse_bench_LDADD = $(HS_SAFETY_LIBS)
CLEANFILES += bench/analyse-bench$(EXEEXT) core/safety/fuzz-analyse
bench-analyse: bench/analyse-bench$(EXEEXT)
	$(AM_V_at)mkdir -p bench/.policy && cp $(top_srcdir)/policy/*.rules bench/.policy/ && chmod 755 bench/.policy && chmod 644 bench/.policy/*.rules
	./bench/analyse-bench$(EXEEXT) bench/.policy $(top_srcdir)/tests/safety/dangerous.txt \
		$(top_srcdir)/tests/safety/everyday.txt $(top_srcdir)/tests/safety/agent.txt
	$(AM_V_at)rm -rf bench/.policy

# libFuzzer targets over the whole analyser (clang), built and run by `make fuzz`
# (tests/fuzz/local.mk): $(call fuzz_safety,NAME) builds core/safety/fuzz-NAME.c
# and runs it over tests/fuzz/corpus/NAME.
fuzz_safety = $(FUZZ_CC) $(FUZZ_FLAGS) \
	-DHS_FUZZ_POLICY_DIR='"$(abs_top_srcdir)/policy"' \
	$(LIBCONFIG_CFLAGS) $(YAJL_CFLAGS) -o core/safety/fuzz-$(1) \
	$(addprefix $(top_srcdir)/,$(filter %.c,$(core_safety_libhssafety_a_SOURCES))) $(top_srcdir)/core/safety/fuzz-$(1).c \
	$(LIBCONFIG_LIBS) $(YAJL_LIBS) && \
	$(FUZZ_RUN) $(1) core/safety/fuzz-$(1) $(top_srcdir)/tests/fuzz/corpus/$(1)
fuzz-analyse: $(core_safety_libhssafety_a_SOURCES) core/safety/fuzz-analyse.c
	$(call fuzz_safety,analyse)

# libFuzzer target for the token-file reader (make fuzz-toml; see tests/fuzz/local.mk).
FUZZ_TARGETS += fuzz-toml
CLEANFILES += core/safety/fuzz-toml
fuzz-toml: core/safety/toml.c core/safety/fuzz-toml.c
	$(FUZZ_CC) $(FUZZ_FLAGS) -o core/safety/fuzz-toml $(addprefix $(top_srcdir)/,$^)
	$(FUZZ_RUN) toml core/safety/fuzz-toml $(top_srcdir)/tests/fuzz/corpus/toml

# libFuzzer target for the terminal input guard (make fuzz-stdin).
FUZZ_TARGETS += fuzz-stdin
CLEANFILES += core/safety/fuzz-stdin
fuzz-stdin: $(core_safety_libhssafety_a_SOURCES) core/safety/fuzz-stdin.c
	$(call fuzz_safety,stdin)

.PHONY: bench-analyse fuzz-analyse fuzz-toml fuzz-stdin

policydir = $(datadir)/hs/policy
dist_policy_DATA = policy/00-common.rules policy/filesystem.rules policy/system.rules \
	policy/network.rules policy/credentials.rules policy/containers.rules policy/vcs.rules \
	policy/database.rules policy/hs-self.rules policy/credential-dirs.rules policy/storage.rules \
	policy/firewall.rules policy/remote.rules policy/deletion.rules policy/services.rules policy/macos.rules \
	policy/wrappers.rules policy/run-time-targets.rules
dist_policy_DATA += policy/env-hooks.rules policy/host-state.rules
dist_man_MANS += man/hs-policy.5
EXTRA_DIST += tests/fuzz/corpus/toml tests/fuzz/corpus/stdin
EXTRA_DIST += core/safety/fuzz-analyse.c core/safety/fuzz-stdin.c core/safety/fuzz-policy.h tests/safety/dangerous.txt tests/safety/everyday.txt \
	tests/safety/agent.txt tests/safety/hermes.txt
