/* SPDX-License-Identifier: MIT */
/*
 * relay.h - the core's side of the egress endpoint: every connection the
 * runner accepted inside the sandbox arrives over the session's runner
 * stream; its request is parsed (request.c), decided (filter.c), the name
 * resolved here on the host and the connection made to the very address
 * that was checked, then bytes relayed both ways.  Every attempt is
 * reported once, when it ends, to the audit callback.
 */
#ifndef HS_EGRESS_RELAY_H
#define HS_EGRESS_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include "core/egress/egress.h"

struct hsr_client;
struct hs_audit_egress;
struct hs_egress_relay;

/* A name the admin's test map resolves ("name=address"; hs.conf(5) egress_test_hosts). */
struct hs_egress_names {
	const char *const *items;
	size_t n;
};

struct hs_egress_relay_opts {
	const struct hs_egress_rules *rules; /* copied */
	struct hs_egress_names names;        /* copied */
	int connect_timeout_ms;              /* 0: 10 s */
	/* Called from the relay's thread once per attempt, when it is decided
	 * (refused) or finished (allowed: with the bytes). */
	void (*audit)(void *ctx, int allowed, const struct hs_audit_egress *e);
	void *audit_ctx;
};

/*
 * Start relaying the connections of stream rc (the caller has made the
 * runner listen: hsr_client_egress_listen).  Installs the frame handler
 * and starts the relay thread.  Returns 0, or -1 with a reason.
 */
int hs_egress_relay_start(struct hs_egress_relay **out, struct hsr_client *rc,
                          const struct hs_egress_relay_opts *o, char *err, size_t errlen);

/* Stop the thread and close every connection; before rc is freed.  NULL is allowed. */
void hs_egress_relay_stop(struct hs_egress_relay *r);

/*
 * Resolve host (not an IP literal) for port: through names (its
 * addresses count as checked by the admin: *trusted set) else the host's
 * resolver.  Fills up to max addresses; returns how many, or -1 with a
 * reason.
 */
int hs_egress_resolve(const struct hs_egress_names *names, const char *host, int port,
                      struct sockaddr_storage *addrs, int max, int *trusted, char *err,
                      size_t errlen);

/* The variables that point commands at the endpoint (hs(1)): the proxy
 * variables of curl, pip, git and most HTTP clients, npm's own, and
 * NO_PROXY for the sandbox's own loopback. */
#define HS_EGRESS_ENV_MAX 12
extern const char *const hs_egress_env_names[HS_EGRESS_ENV_MAX];

#endif /* HS_EGRESS_RELAY_H */
