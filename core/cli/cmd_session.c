/* SPDX-License-Identifier: MIT */
/*
 * cmd_session.c - `hs session list|show|close|gc [NAME]`.
 */
#include "config.h"

#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cli/cmds.h"
#include "core/core.h"
#include "core/egress/policy.h"
#include "core/runkey.h"
#include "core/exec.h"
#include "core/config/hsconf.h"
#include "core/json.h"
#include "core/session.h"

static void
usage(FILE *f)
{
	fprintf(f, "usage: hs session [--json] list\n"
	           "       hs session [--json] show NAME\n"
	           "       hs session close NAME\n"
	           "       hs session gc\n\n"
	           "list: every recorded session; show: one record; close: tear the session's\n"
	           "environment down and forget it; gc: close sessions idle longer than session_ttl.\n");
}

/* Tear down a session's environment and remove its record. */
static int
close_session(struct hs_core *c, const char *name, char *err, size_t errlen)
{
	struct hs_record rec;
	int lockfd = hs_session_lock(c, name, 5000, err, errlen);
	if (lockfd < 0)
		return -1;
	int r = hs_record_load(c, name, &rec, err, errlen);
	if (r == 1) {
		snprintf(err, errlen, "no session '%s'", name);
		close(lockfd);
		return -1;
	}
	if (r == 0) {
		struct hs_backend *be = hs_core_backend(c, rec.backend, err, errlen);
		if (be) {
			struct hs_env_spec spec = { .struct_size = sizeof(spec), .session = name,
			                            .env_name = rec.env_name, .flags = HS_SPEC_PERSISTENT };
			struct hs_env_props props;
			void *env = NULL;
			char e[HS_ERR_MAX] = "";
			memset(&props, 0, sizeof(props));
			/* Attach only (ABI 1.1): closing never creates an environment to destroy it.
			 * A 1.0 plugin does not know the flag, so it is not passed one. */
			if (be->plugin.desc.abi_minor >= 1)
				spec.flags |= HS_SPEC_ATTACH;
			int32_t ost = be->plugin.desc.open(be->state, &spec, &env, &props, e);
			if (ost == HS_E_NOTFOUND && (spec.flags & HS_SPEC_ATTACH)) {
				/* Already gone: nothing to tear down; forget the record. */
				be->plugin.desc.close(env, 0, e);
			} else if (ost == HS_OK) {
				int32_t st = be->plugin.desc.close(env, 0, e);
				if (st != HS_OK) {
					/* Its environment may live on: keep the record to try again. */
					snprintf(err, errlen, "cannot close session '%s': backend '%s': %s (the record "
					         "is kept; run 'hs session close %s' again)", name, rec.backend,
					         e[0] ? e : hs_strerror(st), name);
					close(lockfd);
					return -1;
				}
			} else {
				hs_warn("session '%s': %s", name, e);
			}
			hs_runkey_remove(be, rec.env_name);
		} else {
			hs_warn("%s; forgetting the record anyway", err);
		}
	}
	/* A corrupt record (r < 0) is removed too: that is how the user recovers. */
	hs_record_remove(c, name);
	close(lockfd);
	return 0;
}

/*
 * What commands left running in the session shell (its background jobs),
 * asked of the session's runner through an attach-only open: showing never
 * creates an environment.  Returns the count (0 when the backend has no
 * session shell or the environment is gone), or -1.
 */
static int
shell_jobs(struct hs_core *c, const struct hs_record *r, struct hs_shell_job *jobs, size_t max)
{
	char err[1024] = "";
	struct hs_backend *be = hs_core_backend(c, r->backend, err, sizeof(err));
	if (!be || be->plugin.desc.abi_minor < 1)
		return 0;
	struct hs_env_spec spec = { .struct_size = sizeof(spec), .session = r->name,
	                            .env_name = r->env_name,
	                            .flags = (r->persistent ? HS_SPEC_PERSISTENT : 0) | HS_SPEC_ATTACH };
	struct hs_conn cn;
	if (hs_conn_open(&cn, be, &spec, err, sizeof(err)) != HS_OK)
		return cn.open_status == HS_E_NOTFOUND ? 0 : -1;
	int n = hs_conn_shell_jobs(&cn, jobs, max, err, sizeof(err));
	hs_conn_close(&cn, 1, NULL, 0);
	return n;
}

/* One record; with jobs (show), its session shell's jobs too. */
static void
print_record(struct hs_core *c, const struct hs_record *r, int json, yajl_gen g,
             const struct hs_shell_job *jobs, int nj)
{
	if (json) {
		yajl_gen_map_open(g);
		hs_json_kstr(g, "name", r->name);
		hs_json_kstr(g, "backend", r->backend);
		hs_json_kstr(g, "environment", r->env_name);
		if (r->image[0])
			hs_json_kstr(g, "image", r->image);
		hs_json_kint(g, "created", r->created);
		hs_json_kint(g, "used", r->used);
		hs_json_kbool(g, "persistent", r->persistent);
		if (r->allow[0])
			hs_json_kstr(g, "allow", r->allow);
		if (jobs) {
			hs_json_key(g, "jobs");
			yajl_gen_array_open(g);
			for (int k = 0; k < nj; k++) {
				char jn[32];
				snprintf(jn, sizeof(jn), "s%llu", (unsigned long long)jobs[k].id);
				yajl_gen_map_open(g);
				hs_json_kstr(g, "job", jn);
				hs_json_kbool(g, "running", jobs[k].alive);
				hs_json_kint(g, "processes", jobs[k].procs);
				hs_json_kstr(g, "command", jobs[k].command);
				yajl_gen_map_close(g);
			}
			yajl_gen_array_close(g);
			hs_egress_show(c, r->name, r->created * 1000, g);
		}
		yajl_gen_map_close(g);
	} else {
		char when[32];
		time_t t = (time_t)r->used;
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
		printf("%-24s %-10s %-32s used %s\n", r->name, r->backend, r->env_name, when);
		if (jobs && r->allow[0])
			printf("  network allowlist: %s\n", r->allow);
		for (int k = 0; jobs && k < nj; k++)
			printf("  job s%llu %-7s %u process%s  %s\n", (unsigned long long)jobs[k].id,
			       jobs[k].alive ? "running" : "done", jobs[k].procs,
			       jobs[k].procs == 1 ? "" : "es", jobs[k].command);
		if (jobs)
			hs_egress_show(c, r->name, r->created * 1000, NULL);
	}
}

int
hs_cmd_session(struct hs_core *c, int argc, char **argv)
{
	char dir[4096], err[1024];
	int json = 0;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			hs_die_msg("unknown option '%s' (see hs session --help)", argv[i]);
			return HS_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return HS_EXIT_USAGE;
	}
	const char *verb = argv[i++];
	const char *name = i < argc ? argv[i] : NULL;
	int dfd = hs_session_dir(c, dir, sizeof(dir), err, sizeof(err));
	if (dfd < 0) {
		hs_die_msg("%s", err);
		return HS_EXIT_FAIL;
	}
	if (!strcmp(verb, "show") || !strcmp(verb, "close")) {
		close(dfd);
		if (!name) {
			hs_die_msg("session %s needs a NAME", verb);
			return HS_EXIT_USAGE;
		}
		if (!strcmp(verb, "close")) {
			if (close_session(c, name, err, sizeof(err)) < 0) {
				hs_die_msg("%s", err);
				return HS_EXIT_FAIL;
			}
			return 0;
		}
		struct hs_record r;
		int rr = hs_record_load(c, name, &r, err, sizeof(err));
		if (rr != 0) {
			hs_die_msg("%s", rr == 1 ? "no such session" : err);
			return HS_EXIT_FAIL;
		}
		yajl_gen g = json ? hs_json_new() : NULL;
		struct hs_shell_job jobs[64];
		int nj = shell_jobs(c, &r, jobs, 64);
		if (nj < 0)
			hs_warn("session '%s': its runner could not be asked for jobs", name);
		print_record(c, &r, json, g, jobs, nj < 0 ? 0 : nj);
		if (g)
			hs_json_emit(g, 1);
		return 0;
	}
	if (strcmp(verb, "list") && strcmp(verb, "gc")) {
		close(dfd);
		hs_die_msg("unknown session command '%s' (list, show, close, gc)", verb);
		return HS_EXIT_USAGE;
	}
	int gc = !strcmp(verb, "gc");
	int64_t ttl = 86400;
	hs_conf_int(c->conf, "session_ttl", &ttl);
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		hs_die_msg("cannot read '%s'", dir);
		return HS_EXIT_FAIL;
	}
	yajl_gen g = json ? hs_json_new() : NULL;
	if (g) {
		yajl_gen_map_open(g);
		hs_json_key(g, "sessions");
		yajl_gen_array_open(g);
	}
	int removed = 0, rc = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!hs_session_name_valid(e->d_name) || strstr(e->d_name, ".lock") ||
		    strstr(e->d_name, ".tmp."))
			continue;
		struct hs_record r;
		if (hs_record_load(c, e->d_name, &r, err, sizeof(err)) != 0)
			continue;
		if (gc) {
			if (ttl > 0 && time(NULL) - r.used > ttl) {
				if (close_session(c, r.name, err, sizeof(err)) < 0) {
					hs_warn("%s", err);
					rc = HS_EXIT_FAIL;
				} else {
					removed++;
					if (!json)
						printf("closed %s (idle since %lld)\n", r.name, (long long)r.used);
				}
			}
			continue;
		}
		print_record(c, &r, json, g, NULL, 0);
	}
	closedir(d);
	if (g) {
		yajl_gen_array_close(g);
		if (gc)
			hs_json_kint(g, "closed", removed);
		yajl_gen_map_close(g);
		hs_json_emit(g, 1);
	}
	return rc;
}
