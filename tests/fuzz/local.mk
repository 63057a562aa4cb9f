# SPDX-License-Identifier: MIT
# tests/fuzz: the seed corpora of every fuzz target (corpus/NAME), the rules
# of the core's targets (core/serve/fuzz-serve.c, core/safety/fuzz-mounts.c),
# the smoke test that runs them under `make check`, and `make fuzz`, which builds every target in FUZZ_TARGETS with clang and runs
# each for FUZZ_TIME seconds (not part of CI).
check_PROGRAMS += tests/fuzz/test-fuzz-smoke
TESTS += tests/fuzz/test-fuzz-smoke
tests_fuzz_test_fuzz_smoke_SOURCES = tests/fuzz/test-fuzz-smoke.c core/serve/fuzz-serve.c \
	core/safety/fuzz-mounts.c core/serve/serve-req.c core/serve/serve-req.h core/json.c core/json.h \
	plugins/modal/fuzz-pb.c plugins/modal/pb.c plugins/modal/pb.h core/egress/fuzz-request.c \
	core/fuzz-screen.c core/screen.c core/screen.h core/capture.c
tests_fuzz_test_fuzz_smoke_CPPFLAGS = $(AM_CPPFLAGS) -DHS_FUZZ_SMOKE
tests_fuzz_test_fuzz_smoke_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(YAJL_CFLAGS) $(VTERM_CFLAGS)
tests_fuzz_test_fuzz_smoke_LDADD = core/egress/libhsegress.a $(HS_SAFETY_LIBS) $(YAJL_LIBS) $(VTERM_LIBS) $(CMOCKA_LIBS)
EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/corpus

FUZZ_CC = clang
FUZZ_TIME = 60
FUZZ_FLAGS = -g -O1 -fsanitize=fuzzer,address,undefined $(DEFS) $(AM_CPPFLAGS) $(CPPFLAGS)
FUZZ_RUN = FUZZ_TIME=$(FUZZ_TIME) FUZZ_WORK=$(abs_top_builddir)/fuzz-work $(SHELL) $(top_srcdir)/tests/fuzz/run.sh

FUZZ_TARGETS += fuzz-serve fuzz-mounts fuzz-analyse fuzz-runner fuzz-modal-pb
fuzz-serve: core/serve/fuzz-serve.c core/serve/serve-req.c core/json.c
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) $(YAJL_CFLAGS) -o tests/fuzz/fuzz-serve \
		$(addprefix $(top_srcdir)/,$^) $(YAJL_LIBS)
	$(FUZZ_RUN) serve tests/fuzz/fuzz-serve $(top_srcdir)/tests/fuzz/corpus/serve
fuzz-mounts: core/safety/fuzz-mounts.c core/safety/mounts.c
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o tests/fuzz/fuzz-mounts $(addprefix $(top_srcdir)/,$^)
	$(FUZZ_RUN) mounts tests/fuzz/fuzz-mounts $(top_srcdir)/tests/fuzz/corpus/mounts

fuzz-modal-pb: plugins/modal/fuzz-pb.c plugins/modal/pb.c
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o tests/fuzz/fuzz-modal-pb $(addprefix $(top_srcdir)/,$^)
	$(FUZZ_RUN) modal-pb tests/fuzz/fuzz-modal-pb $(top_srcdir)/tests/fuzz/corpus/pb

# The screen renderer over libvterm (linked as installed, not instrumented:
# what it reads is written by the sandboxed command).
FUZZ_TARGETS += fuzz-screen
fuzz-screen: core/fuzz-screen.c core/screen.c core/capture.c core/json.c
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) $(YAJL_CFLAGS) $(VTERM_CFLAGS) -o tests/fuzz/fuzz-screen \
		$(addprefix $(top_srcdir)/,$^) $(VTERM_LIBS) $(YAJL_LIBS)
	$(FUZZ_RUN) screen tests/fuzz/fuzz-screen $(top_srcdir)/tests/fuzz/corpus/screen

fuzz: $(FUZZ_TARGETS)
CLEANFILES += tests/fuzz/fuzz-serve tests/fuzz/fuzz-mounts tests/fuzz/fuzz-modal-pb tests/fuzz/fuzz-screen
.PHONY: fuzz fuzz-serve fuzz-mounts fuzz-modal-pb fuzz-screen

clean-local: clean-local-fuzz
clean-local-fuzz:
	rm -rf fuzz-work
.PHONY: clean-local-fuzz
