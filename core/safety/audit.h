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
	const struct hs_audit_egress *egress; /* a network connection attempt, or NULL */
	const char *kind;         /* NULL: a command; "stdin": bytes written to a job's terminal */
	const char *job;          /* the job written to, or NULL */
};

/* One connection attempt through the egress endpoint (network "allowlist"). */
struct hs_audit_egress {
	const char *kind;   /* "connect" or "forward"; NULL: the request was unreadable */
	const char *host;   /* as asked; NULL when unreadable */
	int port;
	const char *address; /* the address connected to, or NULL */
	const char *rule;   /* the allow rule that decided, or NULL */
	const char *reason; /* why it was refused or failed, or NULL */
	uint64_t bytes_out; /* from the sandbox to the server */
	uint64_t bytes_in;  /* from the server to the sandbox */
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
