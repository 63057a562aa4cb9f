/* SPDX-License-Identifier: MIT */
/*
 * cmd_backends.c - `hs backends`: every plugin found, loaded, refused or
 * unavailable, with the reason.  Each plugin file is loaded and probed in a
 * forked child, so a plugin whose constructor crashes is reported, not fatal.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cli/cmds.h"
#include "core/core.h"
#include "core/config/hsconf.h"
#include "core/json.h"
#include "core/egress/policy.h"

struct row {
	struct hs_plugin p;
	int status; /* 0 ready, 1 unavailable, 2 refused */
	struct hs_probe_report rep;
	char why[1024];
};

static const char *const status_names[] = { "ready", "unavailable", "refused" };

static const struct hs_host_v1 *
make_host(const struct hs_backend_v1 *desc, void *ctx, char *err)
{
	struct hs_core *c = ctx;
	/* In the checking child only: the table lives until the child exits. */
	struct hs_backend *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return NULL;
	}
	/* The probe reads its keys as open would: under the plugin's own rules. */
	if (hs_conf_declare(c->conf, desc->name, desc->config_keys, desc->config_rules, err,
	                    HS_ERR_MAX) < 0)
		return NULL;
	return hs_core_host_for(c, b, desc->name);
}

static void
fill_from_probe(struct row *r, int32_t st, const char *err)
{
	if (st != HS_OK) {
		r->status = 1;
		snprintf(r->why, sizeof(r->why), "%s", err[0] ? err : hs_strerror(st));
	} else if (!r->rep.ready) {
		r->status = 1;
		snprintf(r->why, sizeof(r->why), "%s",
		         r->rep.reason[0] ? r->rep.reason : "not usable here (the plugin gave no reason)");
	} else {
		r->status = 0;
		if (!r->rep.runner)
			snprintf(r->why, sizeof(r->why), "no runner: an exec per command%s%s",
			         r->rep.reason[0] ? ": " : "", r->rep.reason);
	}
}

static void
probe_builtin(struct hs_core *c, struct row *r, int deep)
{
	char err[HS_ERR_MAX] = "";
	struct hs_backend *b = hs_core_backend(c, "local", err, sizeof(err));

	r->p.builtin = 1;
	snprintf(r->p.name, sizeof(r->p.name), "local");
	snprintf(r->p.path, sizeof(r->p.path), "(built-in)");
	snprintf(r->p.version, sizeof(r->p.version), "%s", hs_builtin_local.version);
	snprintf(r->p.summary, sizeof(r->p.summary), "%s", hs_builtin_local.summary);
	r->p.runner_stream = hs_builtin_local.runner_stream != NULL;
	if (!b) {
		fill_from_probe(r, HS_E_UNAVAILABLE, err);
		return;
	}
	int32_t st = b->plugin.desc.probe(b->state, deep ? HS_PROBE_DEEP : 0, &r->rep, err);
	fill_from_probe(r, st, err);
}

/*
 * The session shell a backend gives: "persistent" (one shell kept by the
 * runner) when it hosts the runner, "snapshot" (a shell per command that
 * restores the state from a file) in exec mode.  A ready backend's probe
 * says which it is here (docker.runner = false, a sandbox of another
 * architecture); an unavailable one is judged by what it can do.
 */
static const char *
shell_model(const struct row *r)
{
	int runner = r->p.runner_stream && (r->status != 0 || r->rep.runner);
	return runner ? "persistent" : "snapshot";
}

/* "key=value" lines of a probe detail, as JSON members. */
static void
json_detail(yajl_gen g, const char *detail)
{
	char *copy = strdup(detail), *save = NULL;
	hs_json_key(g, "detail");
	yajl_gen_map_open(g);
	for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		hs_json_kstr(g, line, eq + 1);
	}
	yajl_gen_map_close(g);
	free(copy);
}

/*
 * Every backend: the built-in one, then each plugin file in plugin-path
 * order, loaded and probed in a child.  Returns the rows (*n set), or NULL.
 */
static struct row *
collect(struct hs_core *c, int deep, size_t *n_out)
{
	struct hs_plugin *found = NULL;
	size_t n_found = 0;

	if (hs_loader_scan((const char *const *)c->plugin_dirs, c->n_plugin_dirs, &found, &n_found) < 0)
		return NULL;
	struct row *rows = calloc(n_found + 1, sizeof(*rows));
	if (!rows) {
		free(found);
		return NULL;
	}
	probe_builtin(c, &rows[0], deep);
	size_t n = 1;
	for (size_t i = 0; i < n_found; i++) {
		struct row *r = &rows[n++];
		r->p = found[i];
		if (r->p.refused) {
			r->status = 2;
			snprintf(r->why, sizeof(r->why), "%s", r->p.reason);
			continue;
		}
		/* The first of a name wins; the loser is listed as refused. */
		const struct row *winner = NULL;
		for (size_t k = 0; k + 1 < n; k++)
			if (rows[k].status != 2 && strcmp(rows[k].p.name, r->p.name) == 0) {
				winner = &rows[k];
				break;
			}
		if (winner) {
			r->status = 2;
			snprintf(r->why, sizeof(r->why), "duplicate backend name '%s': '%s' comes first",
			         r->p.name, winner->p.path);
			continue;
		}
		int32_t st = HS_OK;
		char err[HS_ERR_MAX] = "";
		if (hs_loader_check_forked(&r->p, &r->rep, &st, err, make_host, c,
		                           deep ? HS_PROBE_DEEP : 0) < 0) {
			r->status = 2;
			snprintf(r->why, sizeof(r->why), "%s", r->p.reason);
			continue;
		}
		fill_from_probe(r, st, err);
	}
	free(found);
	*n_out = n;
	return rows;
}

/*
 * Can the backend enforce network "allowlist" (hs_egress_backend_can)?
 * "egress": {"allowlist": bool, "reason": why not, "mode": "endpoint" or
 * "mapped", "weaker": how much weaker a mapped list is} and, for local,
 * the same for its isolated mode ("isolate": {...}).
 */
static void
json_egress(yajl_gen g, const char *name)
{
	char why[512];
	hs_json_key(g, "egress");
	yajl_gen_map_open(g);
	for (int iso = 0; iso < 2; iso++) {
		if (iso) {
			if (strcmp(name, "local") != 0)
				break;
			hs_json_key(g, "isolate");
			yajl_gen_map_open(g);
		}
		why[0] = '\0';
		int can = hs_egress_backend_can(name, iso, why, sizeof(why));
		hs_json_kbool(g, "allowlist", can);
		hs_json_kstr(g, "reason", can ? NULL : why);
		/* "endpoint": enforced by the runner's endpoint; "mapped": onto the
		 * backend's own address filter, with how much weaker that is. */
		hs_json_kstr(g, "mode", !can ? NULL : can == 1 ? "endpoint" : "mapped");
		hs_json_kstr(g, "weaker", can > 1 ? why : NULL);
		if (iso)
			yajl_gen_map_close(g);
	}
	yajl_gen_map_close(g);
}

static void
gen_rows(yajl_gen g, const struct row *rows, size_t n)
{
	hs_json_key(g, "backends");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		yajl_gen_map_open(g);
		hs_json_kstr(g, "name", r->p.name);
		hs_json_kstr(g, "file", r->p.path);
		hs_json_kstr(g, "version", r->status == 2 ? NULL : r->p.version);
		hs_json_kstr(g, "summary", r->status == 2 ? NULL : r->p.summary);
		hs_json_kstr(g, "status", status_names[r->status]);
		hs_json_kstr(g, "reason", r->why[0] ? r->why : NULL);
		if (r->status != 2) {
			hs_json_kbool(g, "runner", r->rep.runner);
			hs_json_kstr(g, "shell", shell_model(r));
			json_egress(g, r->p.name);
			/* A terminal (pty) is the runner's: exec mode has none. */
			hs_json_kbool(g, "pty", !strcmp(shell_model(r), "persistent"));
			json_detail(g, r->rep.detail);
		}
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

int
hs_backends_gen(struct hs_core *c, int deep, yajl_gen g)
{
	size_t n;
	struct row *rows = collect(c, deep, &n);
	if (!rows)
		return -1;
	gen_rows(g, rows, n);
	free(rows);
	return 0;
}

int
hs_cmd_backends(struct hs_core *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "deep", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int json = 0, deep = 0, o;

	optind = 1;
	while ((o = getopt_long(argc, argv, "+jdh", opts, NULL)) != -1) {
		switch (o) {
		case 'j': json = 1; break;
		case 'd': deep = 1; break;
		case 'h':
			printf("usage: hs backends [--json] [--deep]\n\n"
			       "List every backend: the built-in local one and each plugin found on the\n"
			       "plugin path, as ready, unavailable (and why) or refused (and why).\n"
			       "Each plugin is loaded and probed in a separate process.\n\n"
			       "  --json   print {\"backends\": [...]} instead of a table\n"
			       "  --deep   let probes use the network (e.g. reach the API)\n");
			return 0;
		default:
			return HS_EXIT_USAGE;
		}
	}
	size_t n;
	struct row *rows = collect(c, deep, &n);
	if (!rows) {
		hs_die_msg("out of memory");
		return HS_EXIT_FAIL;
	}
	if (json) {
		yajl_gen g = hs_json_new();
		yajl_gen_map_open(g);
		gen_rows(g, rows, n);
		yajl_gen_map_close(g);
		hs_json_emit(g, 1);
	} else {
		/* One line per backend, so the name and the reason grep together. */
		for (size_t i = 0; i < n; i++) {
			struct row *r = &rows[i];
			if (r->status == 2)
				printf("%-12s %-11s %s: %s\n", r->p.name, status_names[r->status], r->p.path,
				       r->why);
			else
				printf("%-12s %-11s %s %s: %s%s%s\n", r->p.name, status_names[r->status],
				       r->p.path, r->p.version, r->p.summary, r->why[0] ? "; " : "", r->why);
		}
		fflush(stdout);
	}
	free(rows);
	return 0;
}
