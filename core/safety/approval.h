/* SPDX-License-Identifier: MIT */
/*
 * approval.h - deciding whether a command runs: the analyser's verdict, the
 * approval mode, grants already given, and (in ask mode) a person's answer.
 */
#ifndef HS_APPROVAL_H
#define HS_APPROVAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/safety/prompt.h"
#include "core/safety/safety.h"

#include <hs/backend.h>

struct hs_core;
struct hs_redactor;

enum hs_approval_mode { HS_APPROVAL_DENY = 0, HS_APPROVAL_ASK = 1, HS_APPROVAL_APPROVE = 2 };

/* The approver's answer: the safety engine's enum hs_answer, by construction. */
enum hs_decision {
	HS_DECIDE_ONCE = HS_ANSWER_ONCE,
	HS_DECIDE_SESSION = HS_ANSWER_SESSION,
	HS_DECIDE_ALWAYS = HS_ANSWER_ALWAYS,
	HS_DECIDE_DENY = HS_ANSWER_DENY,
};

/* Parse "deny", "ask" or "approve".  Returns the mode or -1. */
int hs_approval_mode_parse(const char *s);
const char *hs_approval_mode_name(int mode);
/* Parse "once", "session", "always" or "deny".  Returns the decision or -1. */
int hs_decision_parse(const char *s);

/* Someone who can answer: a tty, or a serve client.  Returns an hs_decision. */
struct hs_asker {
	void *ctx;
	int (*ask)(void *ctx, const char *command, const struct hs_analysis *a);
	const char *name; /* for the audit log: "tty", "client" */
};

/* Approvals of "session" scope, kept in memory for one session. */
struct hs_grants {
	char **keys; /* "rule_id\x1fargv_norm" */
	size_t n;
};
void hs_grants_free(struct hs_grants *g);

/* The outcome of a decision, for the caller's message and the audit log. */
struct hs_approval_out {
	const char *decision; /* "auto", "once", "session", "always", "approve", "deny", "invalid",
	                         "error" (the audit record could not be written) */
	const char *approver; /* "policy", "grant", "allowlist", "mode:approve", "tty", "client", ... */
	char why[1024];       /* when denied: one line saying why and how to allow it */
};

/*
 * Decide whether command (analysed into a) may run under mode.  Findings
 * covered by session grants or the persistent allow list need no question;
 * "always" answers are added to the allow list.  asker may be NULL (nobody
 * can answer: ask behaves as deny).  Approve mode never grants an opaque
 * command (rule "opaque"): it is denied, unless a grant covers it.
 * Returns 1 to run, 0 denied.
 */
int hs_approval_decide(struct hs_core *c, int mode, const char *command, const struct hs_analysis *a,
                       struct hs_grants *grants, const struct hs_asker *asker,
                       struct hs_approval_out *out);

/* One command put to the gate. */
struct hs_gate {
	const char *session;         /* NULL for an ephemeral run */
	const char *backend;
	const char *command;
	int host;                    /* the environment counts as the host */
	int mode;                    /* enum hs_approval_mode */
	struct hs_grants *grants;
	const struct hs_asker *asker;
	struct hs_redactor *redact;  /* secrets to keep out of the audit log; may be NULL */
	/* Already judged (a stdin write, hs_stdin_analyse): command is then what is shown. */
	const struct hs_analysis *judged;
	const char *kind;            /* audit "kind": NULL for a command, "stdin" */
	const char *job;             /* audit "job" of a stdin write, or NULL */
};

/*
 * Analyse g->command in the right context (or take g->judged), decide, and write a denial to the
 * audit log.  Returns 1 to run (then call hs_approval_audit_exit), 0 denied
 * (out->why says why).  An allowed command is recorded in the audit log
 * before it runs; when that fails it is refused with decision "error".
 */
int hs_approval_gate(struct hs_core *c, const struct hs_policy *p, const struct hs_gate *g,
                     struct hs_analysis *an, struct hs_approval_out *out);

/* Write the record of a command's exit to the audit log (a failure is warned about). */
void hs_approval_audit(struct hs_core *c, const struct hs_gate *g, const struct hs_analysis *an,
                       const struct hs_approval_out *out, int has_exit, int exit_code,
                       int64_t duration_ms);

/*
 * Put the host access of mounts (docker-syntax specs) to approval before an
 * environment is created: a host path other than the configured workspace
 * needs approval like a dangerous command (rule "mount.host"); the host root
 * and the docker socket ("mount.host-critical") are never granted by approve
 * mode.  An invalid spec is refused (decision "invalid").  Returns 1 to go on,
 * 0 refused (out->why).
 */
int hs_approval_mounts(struct hs_core *c, const struct hs_gate *g, const char *const *mounts,
                       size_t n, struct hs_approval_out *out);

/*
 * Put a risk only a backend can see (a privileged container, host pid) to
 * the same decision as a host mount, under g's mode, grants and asker:
 * hardline is never granted; a critical risk never by approve mode alone.
 * The decision is audited.  Returns 1 to go on, 0 refused (out->why).
 */
int hs_approval_risk(struct hs_core *c, const struct hs_gate *g, const struct hs_risk *risk,
                     struct hs_approval_out *out);

/*
 * The effective approval mode: requested (NULL: the configured one, else
 * ask), never looser than a locked admin setting nor than ceiling (-1:
 * none).  Returns the mode, or -1 when requested is not a mode.
 */
int hs_approval_mode_resolve(struct hs_core *c, const char *requested, int ceiling);

/* The tty asker (reads /dev/tty); NULL when there is no controlling terminal. */
const struct hs_asker *hs_approval_tty(void);

#endif /* HS_APPROVAL_H */
