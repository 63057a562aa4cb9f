/* SPDX-License-Identifier: MIT */
/*
 * audit.h - the audit log: one JSON object per line.
 */
#ifndef HS_SAFETY_AUDIT_H
#define HS_SAFETY_AUDIT_H

#include <stddef.h>
#include <stdint.h>

struct hs_audit_record {
	int64_t ts_ms;            /* wall-clock time, milliseconds since the epoch */
	const char *session;      /* NULL: null */
	const char *backend;
	const char *command;
	const char *verdict;      /* "allow", "ask", "deny" */
	const char *const *rules; /* rule ids that matched */
	size_t n_rules;
	const char *decision;     /* "once", "session", "always", "deny", "auto", ... */
	const char *approver;     /* "tty", "client", "mode:approve", "allowlist", ... */
	int has_exit;             /* exit_code and duration_ms are known */
	int exit_code;
	int64_t duration_ms;
	const char *kind;         /* NULL: a command; "stdin": bytes written to a job's terminal */
	const char *job;          /* the job written to, or NULL */
};

/*
 * Open (create 0600) path for appending, refusing a symlink, anything but a
 * regular file (without blocking on a FIFO), a file of another owner and a
 * file others can write.  Returns an fd, or -1 with err.
 */
int hs_audit_open(const char *path, char *err, size_t errlen);
/*
 * Format r as one JSON line (with its newline) into a malloc'd buffer.
 * Bytes that are not UTF-8 become U+FFFD.  Returns the length, or -1.
 */
long hs_audit_format(const struct hs_audit_record *r, char **out);
/* Append r to fd with a single write().  Returns 0, or -1 with err. */
int hs_audit_append(int fd, const struct hs_audit_record *r, char *err, size_t errlen);

#endif
