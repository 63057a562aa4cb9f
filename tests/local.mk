# SPDX-License-Identifier: MIT
# Loader, SDK and end-to-end tests.
TESTS += tests/abi/loader.test tests/abi/minor.test tests/abi/rules.test tests/abi/example.test \
	tests/abi/sdk-install.test tests/core/run.test tests/core/serve.test tests/core/exec-mode.test \
	tests/core/approval-floor.test tests/core/run-faults.test tests/core/install.test tests/core/spdx.test \
	tests/core/shell-jobs.test tests/core/noninteractive.test tests/core/waiting-input.test \
	tests/core/screen.test tests/core/check-typed.test \
	tests/core/screen-box.test tests/core/serve-stream.test tests/core/serve-output.test
# PTY commands and jobs, resize and stdin writes (issue 24).
TESTS += tests/core/pty.test tests/core/run-pty.test tests/core/exec-stdin.test
EXTRA_DIST += tests/core/pty.test tests/core/run-pty.test tests/ptycases.py
EXTRA_DIST += tests/abi/fixture.c tests/abi/loader.test tests/abi/minor.test tests/abi/rules.test tests/abi/example.test \
	tests/abi/sdk-install.test \
	tests/core/run.test tests/core/serve.test tests/core/exec-mode.test tests/core/approval-floor.test \
	tests/core/run-faults.test tests/core/install.test tests/core/spdx.test tests/hsserve.py \
	tests/core/shell-jobs.test tests/core/noninteractive.test tests/core/waiting-input.test \
	tests/core/screen.test tests/core/check-typed.test tests/core/screen-box.test \
	tests/core/serve-stream.test tests/core/serve-output.test tests/core/exec-stdin.test
# The ABI layout (every v1 field's offset, every struct's size) is pinned at
# compile time: building tests/abi/layout fails on an accidental reorder.
check_PROGRAMS += tests/abi/layout
TESTS += tests/abi/layout
tests_abi_layout_SOURCES = tests/abi/layout.c
tests_abi_layout_CPPFLAGS = -I$(top_srcdir)/sdk
# The build tree's plugin directories are found by scanning what was built.
check_PROGRAMS += tests/core/test-paths
TESTS += tests/core/test-paths
tests_core_test_paths_SOURCES = tests/core/test-paths.c core/paths.c
TESTS_ENVIRONMENT = CC='$(CC)' SAN_CFLAGS='$(SAN_CFLAGS)'; export CC SAN_CFLAGS;

# The session and exec pipeline (core/pipeline.c) against the built-in local
# backend and the real runner, linked with hs's own objects (all but main).
check_PROGRAMS += tests/core/test-pipeline
TESTS += tests/core/test-pipeline
tests_core_test_pipeline_SOURCES = tests/core/test-pipeline.c
tests_core_test_pipeline_CFLAGS = $(AM_CFLAGS) $(YAJL_CFLAGS) $(LIBCONFIG_CFLAGS) $(CMOCKA_CFLAGS)
tests_core_test_pipeline_LDADD = $(filter-out core/core_hs-main.$(OBJEXT) core/hs-main.$(OBJEXT),$(core_hs_OBJECTS)) \
	$(core_hs_LDADD) $(CMOCKA_LIBS)
EXTRA_tests_core_test_pipeline_DEPENDENCIES = core/hs$(EXEEXT)

# The screen renderer (core/screen.c) over libvterm, and its serve surface.
check_PROGRAMS += tests/core/test-screen
TESTS += tests/core/test-screen
tests_core_test_screen_SOURCES = tests/core/test-screen.c core/screen.c core/capture.c core/json.c
tests_core_test_screen_CFLAGS = $(AM_CFLAGS) $(YAJL_CFLAGS) $(VTERM_CFLAGS) $(CMOCKA_CFLAGS)
tests_core_test_screen_LDADD = $(YAJL_LIBS) $(VTERM_LIBS) $(CMOCKA_LIBS)
# serve's streamed output events (issue 25): offsets, gaps, UTF-8 cuts.
check_PROGRAMS += tests/core/test-serve-stream
TESTS += tests/core/test-serve-stream
tests_core_test_serve_stream_SOURCES = tests/core/test-serve-stream.c core/serve/serve-stream.c core/json.c
tests_core_test_serve_stream_CFLAGS = $(AM_CFLAGS) $(YAJL_CFLAGS) $(CMOCKA_CFLAGS)
tests_core_test_serve_stream_LDADD = $(YAJL_LIBS) $(CMOCKA_LIBS)
EXTRA_DIST += docs/architecture.md

# Ceilings and hs's own files (issue 18): user policy only adds, locks hold for
# flags and HS_* variables, the guard puts back what a host command changed,
# per-command variables that run code need approval, secrets stay out of /proc.
TESTS += tests/security/ceilings.test tests/security/secrets.test
EXTRA_DIST += tests/security/ceilings.test tests/security/secrets.test docs/security.md

# Fault injection: garbage input, vanishing clients, hanging and stream-cutting
# backends (tests/faults/faulty.c, built at test time), SIGKILL, full disks.
TESTS += tests/faults/serve-faults.test tests/faults/disk-full.test tests/faults/serve-limits.test
EXTRA_DIST += tests/faults/serve-faults.test tests/faults/disk-full.test tests/faults/faulty.c \
	tests/faults/serve-limits.test

# The unit tests under valgrind memcheck: no invalid access, no leak
# (definite or indirect).  .ci/run runs it; backends append their unit tests.
VALGRIND_TESTS = tests/safety/test-analyse tests/safety/test-stdin tests/safety/test-mounts tests/safety/test-approval tests/core/test-pipeline \
	tests/core/test-screen tests/core/test-serve-stream \
	tests/config/test-hsconf tests/runner/test-proto tests/runner/test-runner tests/runner/test-hmac \
	tests/runner/test-dirchain tests/egress/test-egress tests/runner/test-spool \
	tests/fuzz/test-fuzz-smoke tests/safety/test-credentials tests/daytona/test-json \
	tests/docker/test-demux tests/singularity/test-sifcache tests/ssh/test-unit
VALGRIND = valgrind -q --leak-check=full --show-leak-kinds=definite,indirect \
	--errors-for-leak-kinds=definite,indirect --error-exitcode=99
check-valgrind: $(VALGRIND_TESTS) runner/hs-runner$(EXEEXT)
	@fail=0; for t in $(VALGRIND_TESTS); do \
	  if top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' \
	     $(VALGRIND) ./$$t >$$t.vg.log 2>&1; then echo "valgrind ok: $$t"; \
	  else echo "valgrind FAIL: $$t (see $$t.vg.log)"; tail -n 30 $$t.vg.log; fail=1; fi; \
	done; exit $$fail
CLEANFILES += tests/*/*.vg.log
.PHONY: check-valgrind

# Directory chains (runner/dirchain.c): pre-created, foreign, linked or
# writable runtime directories refused, as root with two throwaway users.
TESTS += tests/security/dirs.test
EXTRA_DIST += tests/security/dirs.test

# The Python client of hs serve (python/, issue 23), run by pytest against the
# built hs; packaged as python3-hermes-sandbox.
TESTS += tests/python/pytest.test tests/python/docker.test
EXTRA_DIST += tests/python/pytest.test tests/python/docker.test python/README.md python/pyproject.toml \
	python/hermes_sandbox/__init__.py python/hermes_sandbox/aio.py python/hermes_sandbox/client.py \
	python/hermes_sandbox/errors.py python/hermes_sandbox/hermes.py python/hermes_sandbox/py.typed \
	python/tests/conftest.py python/tests/test_client.py python/tests/test_async.py \
	python/tests/test_hermes.py python/tests/test_docker.py python/tests/test_pty.py \
	python/tests/test_output.py
