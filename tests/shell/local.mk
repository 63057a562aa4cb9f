# SPDX-License-Identifier: MIT
# tests/shell: the session shell against one persistent bash (issue 21 item
# 8).  tests/shell/difftest.py feeds the case files to an hs session and to a
# reference `bash --norc --noprofile` and compares every command's stdout,
# stderr, exit code and cwd; one test per backend, and one through hs run -s.
SHELL_DIFF_TESTS = tests/shell/diff-local.test tests/shell/diff-run.test tests/shell/diff-isolate.test tests/shell/diff-docker.test \
	tests/shell/diff-ssh.test
TESTS += tests/shell/diff-self.test $(SHELL_DIFF_TESTS)
EXTRA_DIST += tests/shell/difftest.py tests/shell/diff-self.test $(SHELL_DIFF_TESTS) \
	tests/shell/cases/state.txt tests/shell/cases/hygiene.txt tests/shell/cases/jobs.txt \
	tests/shell/cases/survive.txt
