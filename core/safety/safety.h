/* SPDX-License-Identifier: MIT */
/*
 * safety.h - command analysis against the rule policy.
 *
 * hs_analyse() parses a shell command line the way bash would, looks
 * through wrappers (sudo, env, sh -c, eval, xargs, find -exec, interpreter
 * one-liners, ...) and matches every command that would run against the
 * rules loaded from the policy rule files.  It is pure: no I/O, no globals, safe to
 * call from any number of threads on one policy.  See hs-policy(5).
 */
#ifndef HS_SAFETY_H
#define HS_SAFETY_H

#include <stddef.h>

struct hs_policy;

/* Paths the core protects as hs's own (config, allow list, policy and plugin dirs). */
struct hs_policy_paths {
	const char *const *protected_paths; /* added to the "hs-self" path set */
	size_t n_protected;
	const char *home; /* the user's home; paths under it match "~/..." rules */
};

/*
 * Load every ".rules" file of each directory in order (files sorted by
 * name; a missing directory is skipped).  A rule whose id was already
 * loaded replaces the earlier one, so /etc/hs/policy.d can override a
 * shipped rule.  A file or directory writable by group or others, or owned
 * by a user other than root and the caller, is refused.  Returns 0, or -1
 * with a one-line message naming the file in err.
 */
int hs_policy_load(struct hs_policy **out, const char *const *dirs, size_t n_dirs,
		   const struct hs_policy_paths *paths, char *err, size_t errlen);
/*
 * hs_policy_load() with user layers: dirs[user_from ..] may only add rules
 * and program declarations; a rule id or program name already loaded, or
 * "disabled = true", there is refused with a message naming file, line and
 * rule.  user_from 0 (or >= n_dirs): every directory is trusted.
 */
int hs_policy_load_layers(struct hs_policy **out, const char *const *dirs, size_t n_dirs,
			  size_t user_from, const struct hs_policy_paths *paths, char *err,
			  size_t errlen);
/* Free a policy from hs_policy_load(); NULL is fine. */
void hs_policy_free(struct hs_policy *p);
/* Number of rules loaded. */
size_t hs_policy_rule_count(const struct hs_policy *p);

enum hs_verdict { HS_VERDICT_ALLOW = 0, HS_VERDICT_ASK = 1, HS_VERDICT_DENY = 2 };
enum hs_context { HS_CONTEXT_HOST = 0, HS_CONTEXT_SANDBOX = 1 };

#define HS_MAX_FINDINGS 16

struct hs_finding {
	char rule_id[64];
	int hardline;
	int host_scope;
	char description[256];
	char argv_norm[512]; /* normalised argv of the matched command, for "always" approvals */
};

struct hs_analysis {
	enum hs_verdict verdict;
	size_t n_findings;
	struct hs_finding findings[HS_MAX_FINDINGS];
	int opaque;
	char opaque_reason[256];
};

/*
 * Analyse command in ctx.  Fills out and returns 0; -1 only for invalid
 * arguments.  Any hardline finding gives DENY; a dangerous finding, or an
 * opaque command in host context (rule id "opaque"), gives ASK; otherwise
 * ALLOW.  In sandbox context rules of scope "sandbox" are skipped and
 * opaque commands are allowed: the sandbox contains them.
 */
int hs_analyse(const struct hs_policy *p, const char *command, enum hs_context ctx,
	       struct hs_analysis *out);

/*
 * Input written to a program's terminal (a PTY job, a REPL), judged before
 * it is delivered.  A guard keeps one job's pending input - the line being
 * typed, an unfinished shell construct - across writes.
 */
struct hs_stdin_guard;

/* The longest single write hs_stdin_analyse() judges; longer ones are denied. */
#define HS_STDIN_MAX_WRITE ((size_t)64 << 10)

/* A guard with nothing pending, or NULL when out of memory. */
struct hs_stdin_guard *hs_stdin_guard_new(void);
/* Free a guard; NULL is fine. */
void hs_stdin_guard_free(struct hs_stdin_guard *g);
/*
 * What buf[0..n) would make the program behind the terminal run, given
 * what g holds pending; g is not changed.  Every line the bytes complete
 * is judged as a shell command (unfinished constructs wait for their
 * end), as interpreter code (Python, Perl, Ruby, Node, PHP) and through
 * shell escapes ("!cmd", ":!cmd", "shell cmd"); the most severe verdict
 * wins.  Line editing it cannot follow (cursor and meta keys, completion,
 * history, non-ASCII bytes, NUL) makes the input opaque (rule "opaque" in
 * host context, as in hs_analyse()) until a ^C discards it, but a hardline
 * match in the text, edited or as typed, still denies.  A write over
 * HS_STDIN_MAX_WRITE, or a line over 16 KiB, is denied (rule
 * "stdin.too-long").  buf NULL (n 0) is the end of input (stdin closed):
 * a program reading a pipe runs its last line without a newline, so the
 * pending input is judged as complete.  Fills out and returns 0; -1 for
 * invalid arguments.
 */
int hs_stdin_analyse(const struct hs_stdin_guard *g, const struct hs_policy *p, enum hs_context ctx,
		     const void *buf, size_t n, struct hs_analysis *out);
/*
 * buf[0..n) as one line of text to show a person or an audit log: bytes
 * other than printable ASCII, and backslash, as \xHH.  Stops early rather
 * than overflow out (4 * n + 1 bytes always fit).  Returns the length.
 */
size_t hs_stdin_shown(const void *buf, size_t n, char *out, size_t outlen);
/* Record that buf[0..n) was delivered (buf NULL: stdin was closed): the pending input moves on. */
void hs_stdin_guard_commit(struct hs_stdin_guard *g, const void *buf, size_t n);

/* "allow", "ask" or "deny". */
const char *hs_verdict_name(enum hs_verdict v);

/*
 * Check every rule's examples (each must match that rule in host context)
 * and counterexamples (none may).  Returns the number of failures, with
 * the first described in err.
 */
int hs_policy_verify_examples(const struct hs_policy *p, char *err, size_t errlen);

#endif
