/* SPDX-License-Identifier: MIT */
/*
 * env.h - the environment a command gets: hs's own, scrubbed of credentials
 * and of every HS_* variable, plus what the caller sets.
 */
#ifndef HS_ENV_H
#define HS_ENV_H

#include <stddef.h>

struct hs_envlist {
	char **v;        /* "K=V", NULL-terminated */
	size_t n;
	char **secrets;  /* values that were scrubbed (for redaction), NULL-terminated */
	size_t n_secrets;
};

/* 1 when s[0..len) is a shell identifier (a name a variable can have), else 0. */
int hs_env_valid_name(const char *s, size_t len);

/* 1 when a variable of this name is a credential or an HS_* setting. */
int hs_env_is_secret_name(const char *name, size_t len);

/* At most this many variables in hs_env_noninteractive's list. */
#define HS_ENV_NONINTERACTIVE_MAX 20

/*
 * The non-interactive defaults (hs(1), NON-INTERACTIVE DEFAULTS): editors
 * that fail at once with a message, pagers that are cat, prompts turned off,
 * and CI=ci when ci is not NULL.  Fills out ("K=V" each, static or the ci
 * string's own storage until *ci_buf is freed) and returns how many;
 * *ci_buf is malloc'd or NULL (free it after use).
 */
size_t hs_env_noninteractive(const char *ci, const char **out, char **ci_buf);

/*
 * Build the command environment from base (NULL-terminated "K=V"): drop
 * HS_* always, and credentials unless listed in passthrough; then lay the
 * defaults ("K=V" each) over it, except a variable that passthrough lists
 * and base has (the user's own value wins); then apply sets ("K=V" each,
 * later wins).  With only_listed (a sandbox, whose own environment is the
 * base inside it), only the passthrough names of base are taken; the others
 * still feed the secrets list.  Returns 0 or -1 (out of memory, or a set
 * that is not K=V with a valid name, or names an HS_* variable: *bad points at it).
 */
int hs_env_build(struct hs_envlist *out, char *const *base, const char *const *passthrough,
                 size_t n_pass, const char *const *defaults, size_t n_defaults,
                 const char *const *sets, size_t n_sets, int only_listed, const char **bad);
void hs_env_free(struct hs_envlist *e);

/*
 * The text put to the approval gate for command run with the per-command
 * variables sets ("K=V" each): "K='V' ... :; COMMAND", so a variable that
 * runs code (BASH_ENV, LD_PRELOAD) is judged like an assignment the
 * command made itself.  Returns a malloc'd string, or NULL (no memory).
 */
char *hs_env_gate_command(const char *const *sets, size_t n_sets, const char *command);

/*
 * Move the value of every credential and HS_* variable of envp (the
 * process's environ) to a heap copy, then overwrite the original bytes,
 * which /proc/PID/environ shows to any process of the same uid.  getenv()
 * is unchanged.  Call it before any thread starts.  Returns 0, or -1 when a
 * value could not be moved (left as it was).
 */
int hs_env_hide_secrets(char **envp);

#endif /* HS_ENV_H */
