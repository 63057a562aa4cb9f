# SPDX-License-Identifier: MIT
# plugins/ssh: the ssh backend (see man/hs-ssh.7).
plugin_LTLIBRARIES += plugins/ssh/ssh.la
SX_SRCS = plugins/ssh/ssh.c plugins/ssh/ssh-conn.c plugins/ssh/ssh-install.c \
	plugins/ssh/ssh-exec.c plugins/ssh/sx.h plugins/ssh/sha256.c plugins/ssh/sha256.h \
	runner/hmac.c runner/hmac.h
plugins_ssh_ssh_la_SOURCES = $(SX_SRCS)
plugins_ssh_ssh_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(LIBSSH2_CFLAGS)
plugins_ssh_ssh_la_LDFLAGS = -module -avoid-version -shared -export-symbols-regex '^hs_backend_v1$$'
plugins_ssh_ssh_la_LIBADD = $(LIBSSH2_LIBS) $(PTHREAD_LIBS)
TESTS += tests/ssh/ssh.test tests/ssh/resume.test
EXTRA_DIST += tests/ssh/ssh.test tests/ssh/resume.test tests/ssh/lib.sh tests/ssh/relay.py
EXTRA_DIST += bench/ssh-bench.sh

# `true` through hs serve vs `ssh host true` and multiplexed ssh, as ratios.
bench-ssh: core/hs$(EXEEXT) runner/hs-runner$(EXEEXT) plugins/ssh/ssh.la
	HS=$(abs_top_builddir)/core/hs$(EXEEXT) bash $(top_srcdir)/bench/ssh-bench.sh
BENCH_EXTRA += bench-ssh
.PHONY: bench-ssh
dist_man_MANS += man/hs-ssh.7
dist_confd_DATA += conf/conf.d/ssh.conf

check_PROGRAMS += tests/ssh/test-unit
TESTS += tests/ssh/test-unit
# test-unit.c includes the backend's .c files (for their static helpers).
tests_ssh_test_unit_SOURCES = tests/ssh/test-unit.c plugins/ssh/sha256.c plugins/ssh/sha256.h runner/hmac.c \
	plugins/ssh/sx.h
tests_ssh_test_unit_CFLAGS = $(AM_CFLAGS) $(LIBSSH2_CFLAGS) $(CMOCKA_CFLAGS) -I$(top_srcdir)/sdk -I$(top_srcdir)/plugins/ssh
tests_ssh_test_unit_LDADD = sdk/libhsfakehost.a $(LIBSSH2_LIBS) $(CMOCKA_LIBS) $(PTHREAD_LIBS)
EXTRA_DIST += tests/ssh/test-unit.c
