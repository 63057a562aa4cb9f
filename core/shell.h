/* SPDX-License-Identifier: MIT */
/*
 * shell.h - the session shell wrapper.  Each command runs as
 *     SHELL -c WRAPPER hs SNAPSHOT CWD COMMAND
 * where WRAPPER restores the session's snapshot (cwd, exported variables,
 * and with bash functions and aliases), evaluates COMMAND in that same
 * shell, and on exit writes the new snapshot to fd 3 — never to stdout, so
 * the command's output is never touched.  The core puts the snapshot back
 * into the sandbox (through the runner, atomically); it never stores it.
 */
#ifndef HS_SHELL_H
#define HS_SHELL_H

#include <stddef.h>

/* 1 when shell is bash (functions and aliases persist), else 0 (POSIX sh). */
int hs_shell_is_bash(const char *shell);

/* The wrapper script for this shell. */
const char *hs_shell_wrapper(const char *shell);

/*
 * The wrapper for backends without a runner (one exec per command):
 *     SHELL -c FILE_WRAPPER hs SNAPSHOT CWD COMMAND KEEP [NAME...]
 * writes the snapshot itself, to SNAPSHOT inside the sandbox (through a
 * temporary file and a rename), when KEEP is "1".  CWD (-C) applies to this
 * command only, unless no snapshot exists yet (the session starts there);
 * each NAME is a variable the exec set for this command only (shell
 * identifiers only: they are expanded through eval); umask 022 to start.
 */
const char *hs_shell_file_wrapper(const char *shell);

/*
 * Clean a snapshot received on fd 3 in place: drop readonly variables and
 * hs's own helpers, so replaying it never fails, and every HS_* variable,
 * so an `export HS_CONFIG=...` never reaches the session's next command (a
 * nested hs would take it as its configuration).  Returns the new length.
 */
size_t hs_shell_filter_snapshot(char *buf, size_t len);

/*
 * Write s single-quoted for a POSIX shell ('it'\''s') to out (no NUL added)
 * and return its length; with out NULL only the length is returned.
 */
size_t hs_shell_quote(char *out, const char *s);

#endif /* HS_SHELL_H */
