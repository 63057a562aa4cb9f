/* SPDX-License-Identifier: MIT */
/*
 * main.c - the hs command line: global options and subcommand dispatch.
 */
#include "config.h"

#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli/cmds.h"
#include "core/core.h"
#include "core/env.h"
#include "core/screen.h"

extern char **environ;

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: hs [--config FILE] COMMAND [ARGS]\n"
	        "\n"
	        "Run shell commands for AI agents inside a sandbox of your choice.\n"
	        "\n"
	        "commands:\n"
	        "  run [OPTIONS] -- COMMAND...   run one command (in a session with -s)\n"
	        "  serve                         JSON lines on stdin/stdout for agent runtimes\n"
	        "  mcp                           Model Context Protocol server on stdin/stdout\n"
	        "  backends [--json] [--deep]    list backends: ready, unavailable or refused\n"
	        "  check [--json] [--context host|sandbox] -- COMMAND\n"
	        "                                the safety verdict, without running anything\n"
	        "  check --typed [--json] [--context host|sandbox] < BYTES\n"
	        "                                the verdict for bytes typed to a program's terminal\n"
	        "  mounts [--json] SPEC...       classify mount specs for host access\n"
	        "  session list|show|close|gc [NAME]\n"
	        "                                manage sessions\n"
	        "  plugin-check [--live] FILE    run the conformance checks on a backend plugin\n"
	        "\n"
	        "global options:\n"
	        "  --config FILE   add FILE as a config layer (also HS_CONFIG)\n"
	        "  --help          show this help\n"
	        "  --version       show the version\n"
	        "\n"
	        "Run 'hs COMMAND --help' for a command's options; see hs(1).\n");
}

static const struct {
	const char *name;
	int (*fn)(struct hs_core *, int, char **);
} commands[] = {
	{ "run", hs_cmd_run },
	{ "serve", hs_cmd_serve },
	{ "mcp", hs_cmd_mcp },
	{ "backends", hs_cmd_backends },
	{ "check", hs_cmd_check },
	{ "mounts", hs_cmd_mounts },
	{ "session", hs_cmd_session },
	{ "plugin-check", hs_cmd_plugin_check },
};

int
main(int argc, char **argv)
{
	const char *config_file = NULL;
	struct hs_core core;
	char err[1024];
	int i = 1, rc;

	/* The contained screen render hs serve and hs mcp spawn (core/screen-box.c). */
	if (argc > 1 && strcmp(argv[1], "__screen") == 0)
		return hs_screen_child_main(argc, argv);
	/* hs holds credentials it scrubs from commands: a process of the same
	 * uid must not read them back through /proc or ptrace. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (hs_env_hide_secrets(environ) < 0)
		hs_warn("a credential's value could not be hidden from /proc (out of memory)");
	/* A vanished reader is an error to report, never a silent death. */
	signal(SIGPIPE, SIG_IGN);
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("hs (hermes-sandbox) %s\nbackend ABI %d.%d, build signature %s\n",
			       PACKAGE_VERSION, HS_ABI_MAJOR, HS_ABI_MINOR, HS_BUILD_SIG);
			return 0;
		} else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			config_file = argv[++i];
		} else if (strncmp(argv[i], "--config=", 9) == 0) {
			config_file = argv[i] + 9;
		} else {
			hs_die_msg("unknown option '%s' (see hs --help)", argv[i]);
			return HS_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return HS_EXIT_USAGE;
	}
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++) {
		if (strcmp(argv[i], commands[k].name) != 0)
			continue;
		/* hs mcp also takes --config among its own options (an MCP
		 * client's config names one command line): the layer is added
		 * before the core reads the config. */
		if (strcmp(argv[i], "mcp") == 0) {
			for (int j = i + 1; j < argc && strcmp(argv[j], "--"); j++) {
				const char *f = strcmp(argv[j], "--config") == 0 && j + 1 < argc ? argv[j + 1]
				              : strncmp(argv[j], "--config=", 9) == 0 ? argv[j] + 9 : NULL;
				if (!f)
					continue;
				if (config_file && strcmp(config_file, f)) {
					hs_die_msg("--config given twice (before and after 'mcp')");
					return HS_EXIT_USAGE;
				}
				config_file = f;
			}
		}
		if (hs_core_init(&core, config_file, err, sizeof(err)) < 0) {
			hs_die_msg("%s", err);
			return HS_EXIT_FAIL;
		}
		rc = commands[k].fn(&core, argc - i, argv + i);
		hs_core_free(&core);
		return rc;
	}
	hs_die_msg("unknown command '%s' (see hs --help)", argv[i]);
	return HS_EXIT_USAGE;
}
