# SPDX-License-Identifier: MIT
# Network egress by allowlist (issue 26): the filter and the proxy request
# parser (pure, unit tested and fuzzed).  Included from core/local.mk.
noinst_LIBRARIES += core/egress/libhsegress.a
core_egress_libhsegress_a_SOURCES = core/egress/filter.c core/egress/request.c
noinst_HEADERS += core/egress/egress.h core/egress/policy.h
# The session side (config, backends) is part of hs itself.
core_hs_SOURCES += core/egress/policy.c core/egress/show.c core/egress/relay.c core/egress/relay.h \
	core/egress/map.c
core_hs_LDADD += core/egress/libhsegress.a

check_PROGRAMS += tests/egress/test-egress
TESTS += tests/egress/test-egress
tests_egress_test_egress_SOURCES = tests/egress/test-egress.c
tests_egress_test_egress_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_egress_test_egress_LDADD = core/egress/libhsegress.a $(CMOCKA_LIBS)

FUZZ_TARGETS += fuzz-egress
fuzz-egress: core/egress/fuzz-request.c core/egress/request.c core/egress/filter.c
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o tests/fuzz/fuzz-egress $(addprefix $(top_srcdir)/,$^)
	$(FUZZ_RUN) egress tests/fuzz/fuzz-egress $(top_srcdir)/tests/fuzz/corpus/egress
CLEANFILES += tests/fuzz/fuzz-egress
.PHONY: fuzz-egress

# The surface: refusals where it cannot be enforced, entries, ceilings, hs backends.
TESTS += tests/egress/refusals.test
EXTRA_DIST += tests/egress/refusals.test tests/fuzz/corpus/egress

# Enforcement by construction on hs run --isolate, docker and singularity, on loopback test servers.
TESTS += tests/egress/isolate.test tests/egress/docker.test tests/egress/background.test \
	tests/egress/singularity.test
EXTRA_DIST += tests/egress/isolate.test tests/egress/docker.test tests/egress/background.test tests/egress/lib.sh \
	tests/egress/singularity.test
