/* SPDX-License-Identifier: MIT */
/*
 * cmds.h - the hs subcommands.
 */
#ifndef HS_CMDS_H
#define HS_CMDS_H

#include <yajl/yajl_gen.h>

struct hs_core;

/* Exit codes of hs (see hs(1)). */
#define HS_EXIT_TIMEOUT 124 /* the command timed out */
#define HS_EXIT_FAIL 125    /* hs or the backend failed; a one-line reason on stderr */
#define HS_EXIT_USAGE 125   /* bad command line: an hs failure too */
#define HS_EXIT_DENIED 77   /* denied by approval */

/* The "backends" member of hs backends --json (a key and an array), for serve too. */
int hs_backends_gen(struct hs_core *c, int deep, yajl_gen g);

/*
 * The members of a check answer (hs check --json, serve's check) into the
 * open map g: verdict, rules, opaque, approval (mode, "deny"/"ask"/"approve"),
 * runs (would hs run in that mode, with nobody to answer, run it?) and why.
 * Returns the verdict (enum hs_verdict); -1 for an unknown mode (nothing written).
 */
int hs_check_gen(struct hs_core *c, const char *command, int context, const char *mode, yajl_gen g);

int hs_cmd_backends(struct hs_core *c, int argc, char **argv);
int hs_cmd_plugin_check(struct hs_core *c, int argc, char **argv);
int hs_cmd_run(struct hs_core *c, int argc, char **argv);
int hs_cmd_serve(struct hs_core *c, int argc, char **argv);
int hs_cmd_mcp(struct hs_core *c, int argc, char **argv);
int hs_cmd_check(struct hs_core *c, int argc, char **argv);
int hs_cmd_mounts(struct hs_core *c, int argc, char **argv);
int hs_cmd_session(struct hs_core *c, int argc, char **argv);

#endif /* HS_CMDS_H */
