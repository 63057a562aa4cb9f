# SPDX-License-Identifier: MIT
# The hs binary.
include core/config/hsconf.mk

bin_PROGRAMS += core/hs
core_hs_SOURCES = \
	core/main.c core/core.c core/core.h core/cli/cmds.h core/guard.c core/guard.h \
	core/paths.c core/paths.h core/pathsec.c core/pathsec.h \
	core/loader.c core/loader.h core/json.c core/json.h \
	core/cli/cmd_backends.c core/cli/cmd_plugin_check.c \
	core/session.c core/session.h core/shell.c core/shell.h \
	core/exec.c core/exec-direct.c core/exec.h core/runkey.c core/runkey.h core/env.c core/env.h \
	core/safety/approval.c core/safety/approval.h core/pipeline.c core/pipeline.h core/capture.c core/capture.h \
	core/cli/cmd_run.c core/serve/cmd_serve.c core/serve/serve.h core/serve/serve-out.c core/serve/serve-sess.c core/serve/serve-stream.c core/serve/serve-output.c \
	core/serve/serve-req.c core/serve/serve-req.h core/cli/cmd_check.c core/cli/cmd_session.c \
	core/screen.c core/screen.h core/screen-box.c core/job-ops.c core/job-ops.h \
	plugins/local/local.c \
	core/serve/serve-pty.c core/cli/run-pty.c core/cli/run-pty.h
dist_man_MANS += man/hs.1
core_hs_CFLAGS = $(AM_CFLAGS) $(YAJL_CFLAGS) $(LIBCONFIG_CFLAGS) $(VTERM_CFLAGS) $(LIBSECCOMP_CFLAGS)
core_hs_LDADD = core/config/libhsconf.a $(HS_SAFETY_LIBS) runner/libhsrclient.a plugins/common/libhsb.a \
	sdk/libhsfakehost.a $(YAJL_LIBS) $(LIBCONFIG_LIBS) $(VTERM_LIBS) $(LIBSECCOMP_LIBS) $(DL_LIBS) $(PTHREAD_LIBS)
include core/mcp/local.mk
include core/egress/local.mk
