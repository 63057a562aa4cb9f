/* SPDX-License-Identifier: MIT */
/*
 * guard.h - hs's own files, kept as they were around every command.
 *
 * The analyser sees most writes to hs's configuration, allow list, policy,
 * plugins and session state, but not all (a python one-liner, awk's print
 * redirection, an editor's ex command).  So before every command the core
 * records what those files are (identity, and the content of small ones),
 * and after it puts back whatever changed: content restored; in the
 * configuration and policy directories also removed files recreated and
 * added files removed.  In the state and runtime directories a removal is
 * taken as it is, because hs itself closes sessions while others run.
 * What cannot be put back fails closed: the command reports an hs failure
 * and no later command of this process runs.
 */
#ifndef HS_GUARD_H
#define HS_GUARD_H

#include <stddef.h>

struct hs_core;

#define HS_GUARD_SHOWN 4

/* What one check put back. */
struct hs_guard_report {
	unsigned restored;                 /* entries restored or removed */
	char paths[HS_GUARD_SHOWN][512];   /* the first few, for messages and the audit log */
};

/*
 * Before a host command: record hs's files the first time, else check them
 * (putting back what changed since, into r).  Returns 0, or -1 with a reason
 * when a change could not be undone (the command must not run).
 */
int hs_guard_before(struct hs_core *c, struct hs_guard_report *r, char *err, size_t errlen);

/*
 * After a host command: put back what it changed (counted in r).  Returns 0,
 * or -1 with a reason when something could not be put back; the guard then
 * refuses every later command of this process.
 */
int hs_guard_after(struct hs_core *c, struct hs_guard_report *r, char *err, size_t errlen);

/* hs itself just wrote path (a session's snapshot or record): take it as it is now. */
void hs_guard_rebase(struct hs_core *c, const char *path);

/*
 * 1 when path (absolute, resolved as far as it exists) is one of hs's own
 * files or lies under one of its directories: a file transfer must not
 * write there.  0 otherwise.
 */
int hs_guard_protects(struct hs_core *c, const char *path);

/*
 * Around one command: hs_guard_begin before it runs, hs_guard_end after it.
 * snapshot is the session's shell snapshot (or NULL): while the command
 * runs, other sessions' checks leave it to this session's hs, which writes
 * it at the end (written 1: take it as it is then; 0, a stopped command:
 * check it like any other file).
 * Every backend gets them, not only those with host access: an isolated
 * sandbox may bind a workspace that holds hs's config, and a cluster job
 * may share the home directory.  What was put back goes to the audit log
 * and into *restored.  Each returns 0, or -1 with a reason: the command
 * must not run, or its result is an hs failure.
 */
int hs_guard_begin(struct hs_core *c, const char *session, const char *backend,
                   const char *snapshot, char *err, size_t errlen);
int hs_guard_end(struct hs_core *c, const char *session, const char *backend,
                 const char *snapshot, int written, unsigned *restored, char *err,
                 size_t errlen);

void hs_guard_free(struct hs_core *c);

#endif /* HS_GUARD_H */
