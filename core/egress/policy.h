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

/* hs_egress_backend_can: mapped onto the backend's own address filter (any family, IPv4 only). */
#define HS_EGRESS_MAPPED_ANY 2
#define HS_EGRESS_MAPPED_V4 3

/*
 * Can backend (isolate: local's --isolate) confine a sandbox to the egress
 * endpoint?  Returns 1; HS_EGRESS_MAPPED_ANY or HS_EGRESS_MAPPED_V4 when
 * the backend maps an allow list onto its own address filter instead, with
 * how much weaker that is in why (one line); or 0 with a one-line reason
 * (what the backend would need, or what its own controls give and why that
 * is not enough).
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
 * network is "allowlist"; free it), HS_EGRESS_MAPPED_ANY or _V4 likewise
 * when the backend maps the list (hs_egress_map), or -1 with a one-line
 * reason.
 */
int hs_egress_session_check(const struct hs_conf *conf, const char *backend, int isolate,
                            const char **network, const char *const *asked, size_t n_asked,
                            struct hs_egress_rules *out, char *err, size_t errlen);

/* An allow list mapped onto a backend's address filter (map.c). */
struct hs_egress_map {
	char **cidrs;      /* "a.b.c.d/len", "v6::/len" (deduplicated) */
	size_t n;
	char note[1024];   /* one line: what was mapped and how much weaker that is */
};

struct hs_egress_names;
/*
 * Map rules onto address ranges for a backend's own filter (how:
 * HS_EGRESS_MAPPED_ANY or _V4; weaker: hs_egress_backend_can's text): a
 * CIDR rule is its range; a name is resolved here and now (through names,
 * the admin's test map, else DNS) and every address must be public or lie
 * in a CIDR rule, as the endpoint's filter demands (filter.c); a wildcard
 * names no fixed addresses and is refused.  Returns 0 with out filled
 * (free with hs_egress_map_free), or -1 with a one-line reason.
 */
int hs_egress_map_rules(const struct hs_egress_rules *rs, const struct hs_egress_names *names,
                        int how, const char *backend, const char *weaker,
                        struct hs_egress_map *out, char *err, size_t errlen);
void hs_egress_map_free(struct hs_egress_map *m);

/*
 * Before a session's environment is opened on a backend that maps (how):
 * map rules into m and point spec at the ranges.  rec_allow: the session
 * record's rules when it exists (a sandbox keeps the ranges it was created
 * with, so other rules, or a list where it had none, are refused).
 * Returns 0, or -1 with a one-line reason.
 */
struct hs_env_spec;
int hs_egress_map_prepare(const struct hs_egress_rules *rs, const struct hs_egress_names *names,
                          int how, const char *backend, int isolate, const char *rec_allow,
                          struct hs_env_spec *spec, struct hs_egress_map *m, char *err,
                          size_t errlen);

/*
 * After it opened: refused unless the plugin says it applied the ranges
 * (env_flags HS_ENVP_EGRESS_CIDRS); else the mapping goes to the audit log
 * and its note into note (NULL: not wanted).  Returns 0, or -1 with a
 * reason (the caller closes the environment).
 */
struct hs_core;
int hs_egress_map_opened(struct hs_core *c, const char *session, const char *backend,
                         uint32_t env_flags, const struct hs_egress_map *m, char *note,
                         size_t note_len, char *err, size_t errlen);

/*
 * `hs session show`: the egress attempts of session since since_ms (the
 * session's creation), from the audit log: lines on stdout, or an "egress"
 * array into g when g is not NULL.
 */
struct hs_core;
typedef struct yajl_gen_t *yajl_gen;
void hs_egress_show(struct hs_core *c, const char *session, int64_t since_ms, yajl_gen g);

#endif /* HS_EGRESS_POLICY_H */
