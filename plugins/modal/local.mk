# SPDX-License-Identifier: MIT
# plugins/modal: the modal backend (see man/hs-modal.7).
plugin_LTLIBRARIES += plugins/modal/modal.la
plugins_modal_modal_la_SOURCES = plugins/modal/modal.c plugins/modal/modal.h \
	plugins/modal/direct.c plugins/modal/router.c plugins/modal/managed.c \
	plugins/modal/grpc.c plugins/modal/grpc.h plugins/modal/pb.c plugins/modal/pb.h \
	runner/hmac.c runner/hmac.h
plugins_modal_modal_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(CURL_CFLAGS) $(YAJL_CFLAGS)
plugins_modal_modal_la_LDFLAGS = -module -avoid-version -shared -export-symbols-regex '^hs_backend_v1$$'
plugins_modal_modal_la_LIBADD = $(CURL_LIBS) $(YAJL_LIBS) $(PTHREAD_LIBS)
dist_confd_DATA += conf/conf.d/modal.conf
EXTRA_DIST += plugins/modal/modal.proto plugins/modal/task_command_router.proto
dist_man_MANS += man/hs-modal.7

# Tests: the encoder against protoc, and the plugin against a local emulator
# of Modal's gRPC API and of the gateway (tests/modal/emulator.py).
check_PROGRAMS += tests/modal/pbcheck tests/modal/drive
tests_modal_pbcheck_SOURCES = tests/modal/pbcheck.c plugins/modal/pb.c plugins/modal/pb.h
tests_modal_drive_SOURCES = tests/modal/drive.c
tests_modal_drive_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/sdk
tests_modal_drive_LDADD = sdk/libhsfakehost.a $(HS_SAFETY_LIBS) $(DL_LIBS) $(PTHREAD_LIBS)
TESTS += tests/modal/pb.test tests/modal/direct.test tests/modal/managed.test tests/modal/backends.test tests/modal/hs.test \
	tests/modal/egress.test \
	tests/modal/shell.test
EXTRA_DIST += tests/modal/pb.test tests/modal/direct.test tests/modal/managed.test tests/modal/backends.test tests/modal/hs.test \
	tests/modal/egress.test \
	tests/modal/shell.test tests/core/snapshot-shell.sh \
	tests/modal/lib.sh tests/modal/emulator.py

# "make bench-modal": per-command ratio to the local backend, against the emulator.
BENCH_EXTRA += bench-modal
EXTRA_DIST += bench/modal-exec.sh
bench-modal: core/hs$(EXEEXT) plugins/modal/modal.la tests/modal/drive$(EXEEXT)
	srcdir=$(srcdir) $(SHELL) $(srcdir)/bench/modal-exec.sh
.PHONY: bench-modal
