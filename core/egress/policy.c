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
	const char *why;   /* NULL: enforceable */
} support[] = {
	{ "local", 1, "plain local runs commands on the host's own network, where nothing can "
	              "enforce an allow list; use --isolate (a network namespace with only "
	              "loopback)" },
	{ "ssh", 0, "commands run on the remote host's own network, where hs cannot enforce an "
	            "allow list; use a sandboxing backend" },
	{ "slurm", 0, "jobs use their node's own network, where hs cannot enforce an allow list; "
	              "use a sandboxing backend" },
	{ "modal", 0, "the modal backend runs commands through Modal's exec API without the "
	              "runner, so the egress endpoint cannot run there, and it does not map allow "
	              "lists onto Modal's own network controls (which filter by address, or at best "
	              "by TLS name, not through hs's filter and audit); use --network none" },
	{ "daytona", 0, "the daytona backend runs commands through Daytona's exec API without the "
	                "runner, so the egress endpoint cannot run there, and Daytona's own network "
	                "allow list (address ranges) is not mapped by this backend; use --network "
	                "none" },
	{ "docker", 0, NULL }, /* network "none" and the runner inside the container */
	{ "singularity", 0, "the singularity backend does not start the egress endpoint yet; use "
	                    "--network none" },
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
	if (!hs_egress_backend_can(backend, isolate, err, errlen)) {
		char why[768];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "network \"allowlist\" is refused on backend '%s': %s", backend, why);
		hs_egress_rules_free(out);
		return -1;
	}
	return 0;
}
