/* SPDX-License-Identifier: MIT */
/*
 * policy.c - which backends can enforce network "allowlist", and the allow
 * rules of one session: the entries a caller asked for (hs run
 * --allow-host, serve open{network:{allow}}), else the configured "allow",
 * always within an administrator's locked list.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config/hsconf.h"
#include "core/egress/egress.h"
#include "core/egress/policy.h"

/*
 * What each backend this project ships can do.  "Enforced by construction"
 * means the sandbox's only network is its own loopback, where the runner's
 * endpoint listens: a backend qualifies only when it hosts the runner in a
 * network namespace of its own.
 */
static const struct {
	const char *name;
	int isolated_only; /* enforceable only with --isolate (local) */
	const char *why;   /* NULL: enforceable (or mapped) */
	const char *mapped; /* non-NULL: mapped onto the backend's own address filter; how much weaker */
	int v4_only;        /* the backend's filter takes IPv4 ranges only */
} support[] = {
	{ "local", 1, "plain local runs commands on the host's own network, where nothing can "
	              "enforce an allow list; use --isolate (a network namespace with only "
	              "loopback)", NULL, 0 },
	{ "ssh", 0, "commands run on the remote host's own network, where hs cannot enforce an "
	            "allow list; use a sandboxing backend", NULL, 0 },
	{ "slurm", 0, "jobs use their node's own network, where hs cannot enforce an allow list; "
	              "use a sandboxing backend", NULL, 0 },
	{ "modal", 0, NULL, "weaker than the endpoint: names are resolved on this host when hs "
	              "opens a new sandbox, into addresses that Modal's CIDR allow list then admits "
	              "on every port and protocol, and never re-resolved; no per-connection filter "
	              "or audit; wildcards refused", 0 },
	{ "daytona", 0, NULL, "weaker than the endpoint: names are resolved on this host when hs "
	                "opens a new sandbox, into IPv4 addresses that Daytona's network allow list "
	                "then admits on every port and protocol, and never re-resolved; no "
	                "per-connection filter or audit; wildcards refused", 1 },
	{ "docker", 0, NULL, NULL, 0 }, /* network "none" and the runner inside the container */
	/* instance start --net --network none, the runner inside the instance */
	{ "singularity", 0, NULL, NULL, 0 },
};

int
hs_egress_backend_can(const char *backend, int isolate, char *why, size_t whylen)
{
	for (size_t i = 0; i < sizeof(support) / sizeof(support[0]); i++) {
		if (strcmp(support[i].name, backend) != 0)
			continue;
		/* Isolated local: a network namespace with only loopback. */
		if (support[i].isolated_only && isolate)
			return 1;
		if (support[i].mapped) {
			snprintf(why, whylen, "%s", support[i].mapped);
			return support[i].v4_only ? HS_EGRESS_MAPPED_V4 : HS_EGRESS_MAPPED_ANY;
		}
		if (!support[i].why)
			return 1;
		snprintf(why, whylen, "%s", support[i].why);
		return 0;
	}
	if (strcmp(backend, "local") == 0) {
		snprintf(why, whylen, "the local backend's isolated mode does not start the egress "
		         "endpoint yet; use --network none");
		return 0;
	}
	snprintf(why, whylen, "backend '%s' cannot confine a sandbox to the runner's egress endpoint",
	         backend);
	return 0;
}

/* The configured allow list as rules (empty when unset). */
static int
configured(const struct hs_conf *conf, struct hs_egress_rules *out, char *err, size_t errlen)
{
	const char *const *list = NULL;
	size_t n = 0;
	char why[512];

	hs_conf_strings(conf, "allow", &list, &n);
	if (hs_egress_rules_parse(list, n, out, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "config 'allow' (%s): %s", hs_conf_origin(conf, "allow"), why);
		return -1;
	}
	return 0;
}

int
hs_egress_session_rules(const struct hs_conf *conf, const char *const *asked, size_t n_asked,
                        struct hs_egress_rules *out, char *err, size_t errlen)
{
	struct hs_egress_rules conf_rules;

	memset(out, 0, sizeof(*out));
	if (configured(conf, &conf_rules, err, errlen) < 0)
		return -1;
	if (!asked) {
		*out = conf_rules;
		return 0;
	}
	if (hs_egress_rules_parse(asked, n_asked, out, err, errlen) < 0) {
		hs_egress_rules_free(&conf_rules);
		return -1;
	}
	/* A locked list is a ceiling: asked entries may only narrow it. */
	int rc = 0;
	if (hs_conf_locked(conf, "allow"))
		rc = hs_egress_rules_within(&conf_rules, out, err, errlen);
	hs_egress_rules_free(&conf_rules);
	if (rc < 0)
		hs_egress_rules_free(out);
	return rc;
}

int
hs_egress_session_check(const struct hs_conf *conf, const char *backend, int isolate,
                        const char **network, const char *const *asked, size_t n_asked,
                        struct hs_egress_rules *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	/* --allow-host alone means network "allowlist". */
	if (asked && (!*network || !**network))
		*network = HS_NETWORK_ALLOWLIST;
	if (!*network || strcmp(*network, HS_NETWORK_ALLOWLIST) != 0) {
		if (asked) {
			snprintf(err, errlen, "allow entries need network \"allowlist\", not '%s'", *network);
			return -1;
		}
		return 0;
	}
	/* The rules first: a wrong or too wide entry is named whatever the backend. */
	if (hs_egress_session_rules(conf, asked, n_asked, out, err, errlen) < 0)
		return -1;
	char why[768];
	int can = hs_egress_backend_can(backend, isolate, why, sizeof(why));
	if (!can) {
		snprintf(err, errlen, "network \"allowlist\" is refused on backend '%s': %s", backend, why);
		hs_egress_rules_free(out);
		return -1;
	}
	return can == 1 ? 0 : can;
}
