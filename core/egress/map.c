/* SPDX-License-Identifier: MIT */
/*
 * map.c - network "allowlist" on a backend that cannot host the runner's
 * endpoint but has an address filter of its own (modal's CIDR allow list,
 * daytona's network allow list): the allow rules become address ranges,
 * decided here once, at open.  The names are resolved on this host and
 * every address is held to the endpoint's own rule (filter.c): public, or
 * inside an explicit CIDR rule.  What this cannot do -- limit ports, see
 * each connection, follow a name that moves, match a wildcard -- is said
 * in the note, which the caller shows and audits.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <hs/backend.h>

#include "core/core.h"
#include "core/safety/audit.h"
#include "core/egress/egress.h"
#include "core/egress/policy.h"
#include "core/egress/relay.h"

/* The most ranges a map holds (every address of 64 rules would not fit the record anyway). */
#define MAP_MAX 256

/* Add range text to m unless it is there already.  0, or -1 when full. */
static int
map_add(struct hs_egress_map *m, const char *text)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->cidrs[i], text) == 0)
			return 0;
	if (m->n == MAP_MAX)
		return -1;
	if (!m->cidrs && !(m->cidrs = calloc(MAP_MAX, sizeof(*m->cidrs))))
		return -1;
	if (!(m->cidrs[m->n] = strdup(text)))
		return -1;
	m->n++;
	return 0;
}

/* The range of n address bytes a with prefix len as text. */
static void
range_text(int family, const uint8_t *a, int prefix, char *out, size_t len)
{
	char t[INET6_ADDRSTRLEN] = "?";
	inet_ntop(family, a, t, sizeof(t));
	snprintf(out, len, "%s/%d", t, prefix);
}

/* One name rule: every address it resolves to, each held to the filter. */
static int
map_name(const struct hs_egress_rules *rs, const struct hs_egress_names *names,
         const struct hs_egress_rule *r, int v4_only, struct hs_egress_map *m, char *err,
         size_t errlen)
{
	struct sockaddr_storage addrs[16];
	char why[256];
	int trusted = 0, port = r->port == HS_EGRESS_PORT_WEB ? 443 : r->port, used = 0;
	/* The test map only stands in for DNS here: its addresses are classified too. */
	int n = hs_egress_resolve(names, r->host, port, addrs, 16, &trusted, why, sizeof(why));
	if (n < 0) {
		snprintf(err, errlen, "allow entry '%s': %s", r->text, why);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const struct sockaddr *sa = (const struct sockaddr *)&addrs[i];
		const uint8_t *a;
		int family = sa->sa_family, prefix;
		if (family == AF_INET) {
			a = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
			prefix = 32;
		} else if (family == AF_INET6) {
			a = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
			prefix = 128;
		} else {
			continue;
		}
		if (family == AF_INET6 && v4_only)
			continue; /* narrower: the backend's filter takes IPv4 only */
		struct hs_egress_verdict v = { .allow = 1, .rule = r };
		if (!hs_egress_check_addr(rs, sa, port, &v)) {
			snprintf(err, errlen, "allow entry '%s' resolves to a refused address (%s); the "
			         "backend's address filter would admit it on every port; allow it with "
			         "an explicit CIDR rule, or drop the entry", r->text, v.reason);
			return -1;
		}
		char text[INET6_ADDRSTRLEN + 8];
		range_text(family, a, prefix, text, sizeof(text));
		if (map_add(m, text) < 0) {
			snprintf(err, errlen, "allow entries resolve to more than %d addresses", MAP_MAX);
			return -1;
		}
		used++;
	}
	if (!used) {
		snprintf(err, errlen, "allow entry '%s' has no %saddress", r->text, v4_only ? "IPv4 " : "");
		return -1;
	}
	return 0;
}

int
hs_egress_map_rules(const struct hs_egress_rules *rs, const struct hs_egress_names *names, int how,
                    const char *backend, const char *weaker, struct hs_egress_map *out, char *err,
                    size_t errlen)
{
	int v4_only = how == HS_EGRESS_MAPPED_V4;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < rs->n; i++) {
		const struct hs_egress_rule *r = &rs->r[i];
		if (r->kind == HS_EGRESS_SUFFIX) {
			snprintf(err, errlen, "allow entry '%s' cannot be mapped onto backend '%s' (a "
			         "wildcard names no fixed addresses); list the names it needs", r->text,
			         backend);
			goto fail;
		}
		if (r->kind == HS_EGRESS_CIDR) {
			if (r->family == AF_INET6 && v4_only) {
				snprintf(err, errlen, "allow entry '%s': backend '%s' takes IPv4 ranges only",
				         r->text, backend);
				goto fail;
			}
			char text[INET6_ADDRSTRLEN + 8];
			range_text(r->family, r->net, r->prefix, text, sizeof(text));
			if (map_add(out, text) < 0) {
				snprintf(err, errlen, "out of memory mapping the allow list");
				goto fail;
			}
			continue;
		}
		if (map_name(rs, names, r, v4_only, out, err, errlen) < 0)
			goto fail;
	}
	/* One line: the ranges (as many as fit) and how much weaker this is. */
	char list[512] = "";
	size_t off = 0;
	for (size_t i = 0; i < out->n; i++) {
		size_t l = strlen(out->cidrs[i]);
		if (off + l + 6 >= sizeof(list)) {
			snprintf(list + off, sizeof(list) - off, "%s...", i ? "," : "");
			break;
		}
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? "," : "", out->cidrs[i]);
	}
	snprintf(out->note, sizeof(out->note), "network allowlist on backend '%s' is mapped onto its "
	         "own address filter (%zu range%s: %s): %s", backend, out->n, out->n == 1 ? "" : "s",
	         out->n ? list : "none, no network", weaker);
	return 0;
fail:
	hs_egress_map_free(out);
	return -1;
}

void
hs_egress_map_free(struct hs_egress_map *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->cidrs[i]);
	free(m->cidrs);
	m->cidrs = NULL;
	m->n = 0;
}

int
hs_egress_map_prepare(const struct hs_egress_rules *rs, const struct hs_egress_names *names,
                      int how, const char *backend, int isolate, const char *rec_allow,
                      struct hs_env_spec *spec, struct hs_egress_map *m, char *err, size_t errlen)
{
	char text[4096], weaker[512];

	if (rec_allow) {
		/* The sandbox may already exist: its filter is what it was created with. */
		if (hs_egress_rules_text(rs, text, sizeof(text)) < 0 || strcmp(text, rec_allow) != 0) {
			snprintf(err, errlen, "session '%s' keeps the network it was opened with (%s%s); "
			         "close it to change the allow list", spec->session ? spec->session : "?",
			         rec_allow[0] ? "allow " : "no allow list", rec_allow);
			return -1;
		}
	}
	hs_egress_backend_can(backend, isolate, weaker, sizeof(weaker));
	if (hs_egress_map_rules(rs, names, how, backend, weaker, m, err, errlen) < 0)
		return -1;
	spec->egress_cidrs = (const char *const *)m->cidrs;
	spec->n_egress_cidrs = (uint32_t)m->n;
	return 0;
}

int
hs_egress_map_opened(struct hs_core *c, const char *session, const char *backend,
                     uint32_t env_flags, const struct hs_egress_map *m, char *note,
                     size_t note_len, char *err, size_t errlen)
{
	if (!(env_flags & HS_ENVP_EGRESS_CIDRS)) {
		snprintf(err, errlen, "backend '%s' did not apply the allow list's address ranges "
		         "(a plugin older than this hs?); the sandbox was closed; use --network none",
		         backend);
		return -1;
	}
	struct timespec ts;
	char aerr[256];
	clock_gettime(CLOCK_REALTIME, &ts);
	struct hs_audit_egress e = { .kind = "map", .reason = m->note };
	struct hs_audit_record r = {
		.ts_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
		.session = session,
		.backend = backend,
		.verdict = "allow",
		.decision = "egress",
		.approver = "allowlist",
		.egress = &e,
	};
	/* The whole list, not only what fits the note. */
	size_t len = 1;
	for (size_t i = 0; i < m->n; i++)
		len += strlen(m->cidrs[i]) + 1;
	char *all = malloc(len);
	if (all) {
		all[0] = '\0';
		for (size_t i = 0; i < m->n; i++) {
			if (i)
				strcat(all, ",");
			strcat(all, m->cidrs[i]);
		}
		e.address = all;
	}
	int rc = hs_core_audit(c, &r, aerr, sizeof(aerr));
	free(all);
	if (rc < 0) {
		snprintf(err, errlen, "audit: %s", aerr);
		return -1;
	}
	if (note)
		snprintf(note, note_len, "%s", m->note);
	return 0;
}
