/* SPDX-License-Identifier: MIT */
/*
 * policy.h - network "allowlist" for a session: which backends can enforce
 * it, and the session's rules under the administrator's ceiling.
 */
#ifndef HS_EGRESS_POLICY_H
#define HS_EGRESS_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "core/egress/egress.h"

struct hs_conf;

/* The network value that asks for egress by allowlist. */
#define HS_NETWORK_ALLOWLIST "allowlist"

/*
 * Can backend (isolate: local's --isolate) confine a sandbox to the egress
 * endpoint?  Returns 1, or 0 with a one-line reason (what the backend
 * would need, or what its own controls give and why that is not enough).
 */
int hs_egress_backend_can(const char *backend, int isolate, char *why, size_t whylen);

/*
 * The allow rules of a session: asked (NULL: none asked, use the
 * configured "allow"), each within the configured list when an admin
 * locked "allow".  Returns 0 with out set (free it), or -1 with a reason.
 */
int hs_egress_session_rules(const struct hs_conf *conf, const char *const *asked, size_t n_asked,
                            struct hs_egress_rules *out, char *err, size_t errlen);

/*
 * The egress decision of a session being opened on backend: asked entries
 * without a network make *network "allowlist"; with another network they
 * are an error; network "allowlist" on a backend that cannot enforce it is
 * refused with the reason.  Returns 0 with out filled (empty unless the
 * network is "allowlist"; free it), or -1 with a one-line reason.
 */
int hs_egress_session_check(const struct hs_conf *conf, const char *backend, int isolate,
                            const char **network, const char *const *asked, size_t n_asked,
                            struct hs_egress_rules *out, char *err, size_t errlen);

/*
 * `hs session show`: the egress attempts of session since since_ms (the
 * session's creation), from the audit log: lines on stdout, or an "egress"
 * array into g when g is not NULL.
 */
struct hs_core;
typedef struct yajl_gen_t *yajl_gen;
void hs_egress_show(struct hs_core *c, const char *session, int64_t since_ms, yajl_gen g);

#endif /* HS_EGRESS_POLICY_H */
