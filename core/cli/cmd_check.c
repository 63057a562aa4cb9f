/* SPDX-License-Identifier: MIT */
/*
 * cmd_check.c - `hs check` (the safety verdict without running anything)
 * and `hs mounts` (host-access assessment of mount specs).
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/approval.h"
#include "core/cli/cmds.h"
#include "core/core.h"
#include "core/config/hsconf.h"
#include "core/json.h"
#include "core/pipeline.h"
#include "core/safety/mounts.h"
#include "core/safety/safety.h"

static char *
join_words(int argc, char **argv)
{
	size_t len = 1;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *s = malloc(len), *o = s;
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);
		if (i)
			*o++ = ' ';
		memcpy(o, argv[i], n);
		o += n;
	}
	*o = '\0';
	return s;
}

/* The verdict a as JSON fields, with what mode m would do with nobody to answer. */
static int
check_json(struct hs_core *c, const char *command, const struct hs_analysis *a, int m, yajl_gen g)
{
	struct hs_approval_out dec;

	/* The decision hs run makes, allow list included, minus the prompt. */
	int runs = hs_approval_decide(c, m, command, a, NULL, NULL, &dec);
	hs_json_kstr(g, "verdict", hs_verdict_name(a->verdict));
	hs_rules_json(g, a);
	if (a->opaque)
		hs_json_kstr(g, "opaque", a->opaque_reason);
	hs_json_kstr(g, "approval", hs_approval_mode_name(m));
	hs_json_kbool(g, "runs", runs);
	if (!runs)
		hs_json_kstr(g, "why", dec.why);
	return (int)a->verdict;
}

int
hs_check_gen(struct hs_core *c, const char *command, int context, const char *mode, yajl_gen g)
{
	char err[1024];
	struct hs_policy *pol = hs_core_policy(c, err, sizeof(err));
	int m = hs_approval_mode_resolve(c, mode, -1);
	struct hs_analysis a;

	if (!pol || m < 0)
		return -1;
	hs_analyse(pol, command, (enum hs_context)context, &a);
	return check_json(c, command, &a, m, g);
}

/*
 * Read all of stdin (at most one byte past the longest write judged, so a
 * longer one is still refused as too long).  Returns the buffer, or NULL.
 */
static char *
read_typed(size_t *n)
{
	size_t cap = HS_STDIN_MAX_WRITE + 1, len = 0, r;
	char *buf = malloc(cap);

	if (!buf)
		return NULL;
	while (len < cap && (r = fread(buf + len, 1, cap - len, stdin)) > 0)
		len += r;
	if (ferror(stdin)) {
		free(buf);
		return NULL;
	}
	*n = len;
	return buf;
}

/* Analyse what the caller asked about: COMMAND, or (typed) the bytes on stdin. */
static int
check_analyse(struct hs_policy *pol, int typed, int argc, char **argv, enum hs_context ctx,
              struct hs_analysis *a, char **shown)
{
	if (!typed) {
		*shown = join_words(argc, argv);
		return *shown ? hs_analyse(pol, *shown, ctx, a) : -1;
	}
	size_t n = 0;
	char *buf = read_typed(&n);
	struct hs_stdin_guard *gd = buf ? hs_stdin_guard_new() : NULL;
	*shown = gd ? malloc(4 * n + 1) : NULL;
	int rc = -1;
	if (*shown) {
		hs_stdin_shown(buf, n, *shown, 4 * n + 1);
		rc = hs_stdin_analyse(gd, pol, ctx, buf, n, a);
	}
	hs_stdin_guard_free(gd);
	free(buf);
	return rc;
}

int
hs_cmd_check(struct hs_core *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "context", required_argument, NULL, 'c' },
		{ "approval", required_argument, NULL, 'A' },
		{ "typed", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum hs_context ctx = HS_CONTEXT_HOST;
	int json = 0, o, show_mode = 0, typed = 0;
	char err[1024];

	optind = 1;
	while ((o = getopt_long(argc, argv, "+jc:A:th", opts, NULL)) != -1) {
		switch (o) {
		case 'j': json = 1; break;
		case 't': typed = 1; break;
		case 'A':
			/* Through the config layers, so a locked admin mode is what is reported. */
			if (hs_conf_set_cli(c->conf, "approval", optarg, err, sizeof(err)) < 0) {
				hs_die_msg("--approval: %s", err);
				return HS_EXIT_USAGE;
			}
			show_mode = 1;
			break;
		case 'c':
			if (strcmp(optarg, "host") == 0)
				ctx = HS_CONTEXT_HOST;
			else if (strcmp(optarg, "sandbox") == 0)
				ctx = HS_CONTEXT_SANDBOX;
			else {
				hs_die_msg("--context must be host or sandbox (got '%s')", optarg);
				return HS_EXIT_USAGE;
			}
			break;
		case 'h':
			printf("usage: hs check [--json] [--context host|sandbox] [--approval MODE] -- COMMAND\n"
			       "       hs check --typed [--json] [--context host|sandbox] [--approval MODE] < BYTES\n\n"
			       "Print the safety verdict for COMMAND without running it: allow, ask (needs\n"
			       "approval) or deny (never runs).  The words of COMMAND are joined with spaces\n"
			       "and read as one shell string.  --typed: judge the bytes read from stdin as\n"
			       "if written to a program's terminal (a shell, a REPL): every line they end is\n"
			       "judged as a shell command, as interpreter code and through shell escapes\n"
			       "(\"!cmd\"); editing keys that cannot be followed make them opaque.\n"
			       "--context sandbox: as if inside a sandbox\n"
			       "without host access (rules of sandbox scope do not apply); default host.\n"
			       "--approval ask|deny|approve: also say whether hs run in that mode would run\n"
			       "it with nobody to answer (--json always reports \"runs\" for the configured\n"
			       "mode).\n\n"
			       "exit status: 0 allow, 1 ask, 2 deny, 125 error\n");
			return 0;
		default:
			return HS_EXIT_USAGE;
		}
	}
	if (typed ? optind < argc : optind >= argc) {
		hs_die_msg(typed ? "check --typed reads the bytes from stdin and takes no COMMAND (see hs check --help)"
		                 : "check needs a COMMAND (see hs check --help)");
		return HS_EXIT_USAGE;
	}
	struct hs_policy *pol = hs_core_policy(c, err, sizeof(err));
	if (!pol) {
		hs_die_msg("%s", err);
		return HS_EXIT_FAIL;
	}
	struct hs_analysis a;
	char *command = NULL;
	if (check_analyse(pol, typed, argc - optind, argv + optind, ctx, &a, &command) < 0) {
		hs_die_msg(typed ? "cannot read the typed bytes from stdin" : "out of memory");
		free(command);
		return HS_EXIT_FAIL;
	}
	const char *mode_s = "ask";
	hs_conf_string(c->conf, "approval", &mode_s);
	int verdict = (int)a.verdict;
	if (json) {
		int m = hs_approval_mode_resolve(c, mode_s, -1);
		if (m < 0) {
			hs_die_msg("unknown approval mode '%s' (deny, ask or approve)", mode_s);
			free(command);
			return HS_EXIT_FAIL;
		}
		yajl_gen g = hs_json_new();
		yajl_gen_map_open(g);
		check_json(c, command, &a, m, g);
		yajl_gen_map_close(g);
		hs_json_emit(g, 1);
	} else {
		struct hs_approval_out dec;
		printf("%s\n", hs_verdict_name(a.verdict));
		for (size_t i = 0; i < a.n_findings; i++)
			printf("  %s (%s): %s\n", a.findings[i].rule_id,
			       a.findings[i].hardline ? "hardline" : "dangerous", a.findings[i].description);
		if (show_mode) {
			int runs = hs_approval_decide(c, hs_approval_mode_resolve(c, mode_s, -1), command, &a, NULL, NULL, &dec);
			printf("approval %s: %s%s%s\n", mode_s, runs ? "runs" : "does not run",
			       runs ? "" : " - ", runs ? "" : dec.why);
		}
	}
	free(command);
	return verdict == HS_VERDICT_ALLOW ? 0 : verdict == HS_VERDICT_ASK ? 1 : 2;
}

int
hs_cmd_mounts(struct hs_core *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int json = 0, o, any_host = 0, any_bad = 0;

	optind = 1;
	while ((o = getopt_long(argc, argv, "+jh", opts, NULL)) != -1) {
		switch (o) {
		case 'j': json = 1; break;
		case 'h':
			printf("usage: hs mounts [--json] SPEC...\n\n"
			       "Classify docker-syntax mount specs (-v forms and --mount key=value forms) as\n"
			       "host path, named volume, anonymous volume, tmpfs or invalid, and say whether\n"
			       "each gives the sandbox access to the host.\n\n"
			       "exit status: 0 none has host access, 1 some have, 2 some are invalid\n");
			return 0;
		default:
			return HS_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		hs_die_msg("mounts needs at least one SPEC (see hs mounts --help)");
		return HS_EXIT_USAGE;
	}
	const char *ws = NULL;
	hs_conf_string(c->conf, "workspace", &ws);
	yajl_gen g = json ? hs_json_new() : NULL;
	if (g)
		yajl_gen_array_open(g);
	for (int i = optind; i < argc; i++) {
		struct hs_mount m;
		hs_mount_assess(argv[i], c->paths.home, ws, &m);
		any_host |= m.host_access && !m.workspace;
		any_bad |= m.kind == HS_MOUNT_INVALID;
		if (g) {
			yajl_gen_map_open(g);
			hs_json_kstr(g, "spec", argv[i]);
			hs_json_kstr(g, "kind", hs_mount_kind_name(m.kind));
			hs_json_kstr(g, "source", m.source[0] ? m.source : NULL);
			hs_json_kstr(g, "target", m.target[0] ? m.target : NULL);
			hs_json_kbool(g, "host_access", m.host_access);
			hs_json_kbool(g, "read_only", m.read_only);
			if (m.workspace)
				hs_json_kbool(g, "workspace", 1);
			if (m.reason[0])
				hs_json_kstr(g, "reason", m.reason);
			yajl_gen_map_close(g);
		} else {
			printf("%s\t%s%s\t%s -> %s%s%s\n", argv[i], hs_mount_kind_name(m.kind),
			       m.host_access ? " (host access)" : "", m.source[0] ? m.source : "-",
			       m.target[0] ? m.target : "-", m.reason[0] ? "\t" : "", m.reason);
		}
	}
	if (g) {
		yajl_gen_array_close(g);
		hs_json_emit(g, 1);
	}
	return any_bad ? 2 : any_host ? 1 : 0;
}
