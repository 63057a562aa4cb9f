# SPDX-License-Identifier: MIT
# hs mcp: the Model Context Protocol server (stdio).
core_hs_SOURCES += core/mcp/cmd_mcp.c core/mcp/mcp-tools.c core/mcp/mcp-jobs.c core/mcp/mcp.h
dist_man_MANS += man/hs-mcp.1
TESTS += tests/mcp/client.test tests/mcp/docker.test tests/mcp/jobs.test tests/mcp/async.test \
	tests/mcp/inspector.test tests/mcp/pty.test
EXTRA_DIST += tests/mcp/client.test tests/mcp/client.mjs tests/mcp/docker.test tests/mcp/docker.mjs \
	tests/mcp/jobs.test tests/mcp/jobs.mjs tests/mcp/lib.mjs tests/mcp/async.test tests/mcp/async.mjs \
	tests/mcp/inspector.test tests/mcp/pty.test tests/mcp/pty.mjs tests/mcp/package.json tests/mcp/package-lock.json
