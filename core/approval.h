/*
 * approval.h - deciding whether a command runs: the analyser's verdict, the
 * approval mode, grants already given, and (in ask mode) a person's answer.
 */
#ifndef HS_APPROVAL_H
#define HS_APPROVAL_H

#include <stddef.h>

#include "core/safety/prompt.h"
#include "core/safety/safety.h"

struct hs_core;

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
};

/* Approvals of "session" scope, kept in memory for one session. */
struct hs_grants {
	char **keys; /* "rule_id\x1fargv_norm" */
	size_t n;
};
void hs_grants_free(struct hs_grants *g);

/*
 * Decide whether command (analysed into a) may run under mode.  asker may
 * be NULL (nobody can answer: ask behaves as deny).  Returns 1 to run, 0
 * denied with a one-line reason in why (saying how to allow it).
 */
int hs_approval_decide(struct hs_core *c, int mode, const char *command, const struct hs_analysis *a,
                       struct hs_grants *grants, const struct hs_asker *asker, char *why,
                       size_t whylen);

/* The tty asker (reads /dev/tty); NULL when there is no controlling terminal. */
const struct hs_asker *hs_approval_tty(void);

#endif /* HS_APPROVAL_H */
