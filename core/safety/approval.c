/* SPDX-License-Identifier: MIT */
/*
 * approval.c - whether a command runs.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/safety/approval.h"
#include "core/core.h"
#include "core/config/hsconf.h"
#include "core/safety/audit.h"
#include "core/safety/mounts.h"
#include "core/safety/redact.h"

static const char *const mode_names[] = { "deny", "ask", "approve" };

int
hs_approval_mode_parse(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (s && strcmp(s, mode_names[i]) == 0)
			return i;
	return -1;
}

const char *
hs_approval_mode_name(int mode)
{
	return mode >= 0 && mode < 3 ? mode_names[mode] : "?";
}

int
hs_decision_parse(const char *s)
{
	/* The protocol takes the full words only, not the prompt's abbreviations. */
	int d = hs_prompt_parse_answer(s);
	return d != HS_ANSWER_INVALID && s && strcmp(s, hs_answer_name((enum hs_answer)d)) == 0 ? d : -1;
}

void
hs_grants_free(struct hs_grants *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->keys[i]);
	free(g->keys);
	g->keys = NULL;
	g->n = 0;
}

static char *
grant_key(const struct hs_finding *f)
{
	size_t n = strlen(f->rule_id) + strlen(f->argv_norm) + 2;
	char *k = malloc(n);
	if (k)
		snprintf(k, n, "%s\x1f%s", f->rule_id, f->argv_norm);
	return k;
}

static int
granted(const struct hs_grants *g, const struct hs_finding *f)
{
	char *k = grant_key(f);
	int found = 0;
	for (size_t i = 0; k && i < g->n && !found; i++)
		found = strcmp(g->keys[i], k) == 0;
	free(k);
	return found;
}

static void
grant(struct hs_grants *g, const struct hs_finding *f)
{
	char **nk = realloc(g->keys, (g->n + 1) * sizeof(char *));
	if (!nk)
		return;
	g->keys = nk;
	if ((g->keys[g->n] = grant_key(f)))
		g->n++;
}

static void
rules_text(const struct hs_analysis *a, char *out, size_t len)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < a->n_findings && o < len; i++) {
		int n = snprintf(out + o, len - o, "%s%s (%s)", i ? ", " : "", a->findings[i].rule_id,
		                 a->findings[i].description);
		if (n < 0)
			break;
		o += (size_t)n;
	}
}

/*
 * Did the analyser fail to read a command it judged in host context?  Its
 * finding "opaque" says so; a list full of findings may have had no room
 * for it, and then the opaque flag alone decides.
 */
static int
unreadable(const struct hs_analysis *a)
{
	for (size_t i = 0; i < a->n_findings; i++)
		if (strcmp(a->findings[i].rule_id, "opaque") == 0)
			return 1;
	return a->opaque && a->n_findings >= HS_MAX_FINDINGS;
}

int
hs_approval_decide(struct hs_core *c, int mode, const char *command, const struct hs_analysis *a,
                   struct hs_grants *grants, const struct hs_asker *asker,
                   struct hs_approval_out *out)
{
	char rules[768];

	out->why[0] = '\0';
	out->decision = "auto";
	out->approver = "policy";
	rules_text(a, rules, sizeof(rules));
	if (a->verdict == HS_VERDICT_ALLOW)
		return 1;
	if (a->verdict == HS_VERDICT_DENY) {
		out->decision = "deny";
		snprintf(out->why, sizeof(out->why), "denied: %s is never allowed, in any approval mode",
		         rules);
		return 0;
	}
	/* Grants given earlier (this session, or "always") cover every finding? */
	int by_session = 1, covered = a->n_findings > 0;
	for (size_t i = 0; i < a->n_findings && covered; i++) {
		if (grants && granted(grants, &a->findings[i]))
			continue;
		by_session = 0;
		covered = hs_core_allow_check(c, a->findings[i].rule_id, a->findings[i].argv_norm);
	}
	if (covered) {
		out->decision = by_session ? "session" : "always";
		out->approver = by_session ? "grant" : "allowlist";
		return 1;
	}
	/*
	 * The floor under approve mode: it grants what the analyser has read and
	 * judged, never what it could not read.  Approve mode is the unattended
	 * one, so an opaque command is denied; ask mode puts it to a person.
	 */
	if (mode == HS_APPROVAL_APPROVE && unreadable(a)) {
		out->decision = "deny";
		out->approver = "mode:approve";
		snprintf(out->why, sizeof(out->why), "denied: the analyser cannot read this command (%s); "
		         "approve mode never runs what it cannot read (write it plainly, or use --approval ask "
		         "on a terminal)", a->opaque_reason);
		return 0;
	}
	switch (mode) {
	case HS_APPROVAL_APPROVE:
		out->decision = "approve";
		out->approver = "mode:approve";
		return 1;
	case HS_APPROVAL_ASK:
		if (asker) {
			int d = asker->ask(asker->ctx, command, a);
			out->approver = asker->name;
			out->decision = hs_answer_name((enum hs_answer)d);
			if (d == HS_DECIDE_ONCE)
				return 1;
			if (d == HS_DECIDE_SESSION) {
				for (size_t i = 0; grants && i < a->n_findings; i++)
					grant(grants, &a->findings[i]);
				return 1;
			}
			if (d == HS_DECIDE_ALWAYS) {
				char err[512];
				for (size_t i = 0; i < a->n_findings; i++)
					if (hs_core_allow_add(c, a->findings[i].rule_id, a->findings[i].argv_norm,
					                      err, sizeof(err)) < 0) {
						hs_warn("the 'always' approval was not saved: %s", err);
						break;
					}
				return 1;
			}
			out->decision = "deny";
			snprintf(out->why, sizeof(out->why), "denied by the approver: %s", rules);
			return 0;
		}
		out->decision = "deny";
		out->approver = "nobody";
		snprintf(out->why, sizeof(out->why), "denied: %s needs approval and nobody can answer here "
		         "(run it from a terminal, or with --approval approve to allow it)", rules);
		return 0;
	default:
		out->decision = "deny";
		out->approver = "mode:deny";
		snprintf(out->why, sizeof(out->why), "denied: %s needs approval and the approval mode is deny "
		         "(use --approval ask on a terminal, or --approval approve)", rules);
		return 0;
	}
}

/* Write one record; 0, or -1 with err. */
static int
audit(struct hs_core *c, const struct hs_gate *g, const struct hs_analysis *an,
      const struct hs_approval_out *out, int has_exit, int exit_code, int64_t duration_ms,
      char *err, size_t errlen)
{
	const char *rules[HS_MAX_FINDINGS];
	struct timespec ts;
	char *cmd = g->redact ? hs_redact_string(g->redact, g->command) : NULL;

	for (size_t i = 0; i < an->n_findings; i++)
		rules[i] = an->findings[i].rule_id;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct hs_audit_record r = {
		.ts_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
		.session = g->session,
		.backend = g->backend,
		.command = cmd ? cmd : g->command,
		.verdict = hs_verdict_name(an->verdict),
		.rules = rules,
		.n_rules = an->n_findings,
		.decision = out->decision,
		.approver = out->approver,
		.has_exit = has_exit,
		.exit_code = exit_code,
		.duration_ms = duration_ms,
		.kind = g->kind,
		.job = g->job,
	};
	int rc = hs_core_audit(c, &r, err, errlen);
	free(cmd);
	return rc;
}

int
hs_approval_gate(struct hs_core *c, const struct hs_policy *p, const struct hs_gate *g,
                 struct hs_analysis *an, struct hs_approval_out *out)
{
	if (g->judged)
		*an = *g->judged;
	else
		hs_analyse(p, g->command, g->host ? HS_CONTEXT_HOST : HS_CONTEXT_SANDBOX, an);
	char err[512];
	if (!hs_approval_decide(c, g->mode, g->command, an, g->grants, g->asker, out)) {
		if (audit(c, g, an, out, 0, 0, 0, err, sizeof(err)) < 0)
			hs_warn("audit log: %s", err);
		return 0;
	}
	/* Recorded before it runs, and not run when that fails: no command
	 * goes unaudited (its exit is recorded again when it ends). */
	if (audit(c, g, an, out, 0, 0, 0, err, sizeof(err)) < 0) {
		out->decision = "error";
		snprintf(out->why, sizeof(out->why), "the command was not run: %s "
		         "(fix the audit log, or set audit = false)", err);
		return 0;
	}
	return 1;
}

void
hs_approval_audit(struct hs_core *c, const struct hs_gate *g, const struct hs_analysis *an,
                  const struct hs_approval_out *out, int has_exit, int exit_code,
                  int64_t duration_ms)
{
	char err[512];
	if (audit(c, g, an, out, has_exit, exit_code, duration_ms, err, sizeof(err)) < 0)
		hs_warn("audit log: %s; the command's exit was not recorded", err);
}

/*
 * Decide findings only a backend or a mount spec can show (no command was
 * analysed), and audit the decision before anything is created: a critical
 * one (the host root, the docker socket, a privileged container) is never
 * granted by approve mode, only by a person.  Returns 1 to go on, 0 refused.
 */
static int
decide_host_findings(struct hs_core *c, const struct hs_gate *g, struct hs_analysis *an,
                     int critical, struct hs_approval_out *out)
{
	struct hs_gate mg = *g;
	int ok;

	an->verdict = HS_VERDICT_ASK;
	if (critical && mg.mode == HS_APPROVAL_APPROVE && !mg.asker) {
		/* Only a person may hand over the host: approve mode is not enough. */
		ok = 0;
		out->decision = "deny";
		out->approver = "mode:approve";
		snprintf(out->why, sizeof(out->why), "denied: %s (%s); approve mode never grants the host "
		         "root, the docker socket or a privileged container (use --approval ask on a terminal)",
		         an->findings[0].description, an->findings[0].rule_id);
	} else {
		if (critical && mg.mode == HS_APPROVAL_APPROVE)
			mg.mode = HS_APPROVAL_ASK;
		ok = hs_approval_decide(c, mg.mode, mg.command, an, mg.grants, mg.asker, out);
	}
	char err[512];
	if (audit(c, &mg, an, out, 0, 0, 0, err, sizeof(err)) < 0) {
		if (!ok)
			hs_warn("audit log: %s", err);
		else {
			out->decision = "error";
			snprintf(out->why, sizeof(out->why), "not opened: %s "
			         "(fix the audit log, or set audit = false)", err);
			ok = 0;
		}
	}
	return ok;
}

int
hs_approval_mounts(struct hs_core *c, const struct hs_gate *g, const char *const *mounts, size_t n,
                   struct hs_approval_out *out)
{
	struct hs_analysis an;
	const char *ws = NULL;
	int critical = 0;

	memset(&an, 0, sizeof(an));
	out->why[0] = '\0';
	out->decision = "auto";
	out->approver = "policy";
	hs_conf_string(c->conf, "workspace", &ws);
	for (size_t i = 0; i < n; i++) {
		struct hs_mount m;
		hs_mount_assess(mounts[i], c->paths.home, ws, &m);
		if (m.kind == HS_MOUNT_INVALID) {
			out->decision = "invalid";
			snprintf(out->why, sizeof(out->why), "invalid mount '%s': %s", mounts[i], m.reason);
			return 0;
		}
		if (!m.host_access || m.workspace || an.n_findings == HS_MAX_FINDINGS)
			continue;
		struct hs_finding *f = &an.findings[an.n_findings++];
		int crit = hs_mount_critical(&m);
		critical |= crit;
		snprintf(f->rule_id, sizeof(f->rule_id), "%s", crit ? "mount.host-critical" : "mount.host");
		snprintf(f->description, sizeof(f->description), "%s", m.reason);
		snprintf(f->argv_norm, sizeof(f->argv_norm), "mount %s", mounts[i]);
		f->host_scope = 1;
	}
	if (!an.n_findings)
		return 1;
	struct hs_gate mg = *g;
	char joined[1024];
	size_t o = 0;
	joined[0] = '\0';
	for (size_t i = 0; i < n && o < sizeof(joined); i++)
		o += (size_t)snprintf(joined + o, sizeof(joined) - o, "%s-v %s", i ? " " : "", mounts[i]);
	mg.command = joined;
	return decide_host_findings(c, &mg, &an, critical, out);
}

int
hs_approval_risk(struct hs_core *c, const struct hs_gate *g, const struct hs_risk *risk,
                 struct hs_approval_out *out)
{
	struct hs_analysis an;
	const char *desc = risk->description ? risk->description : risk->rule_id;

	memset(&an, 0, sizeof(an));
	out->why[0] = '\0';
	out->decision = "auto";
	out->approver = "policy";
	struct hs_finding *f = &an.findings[an.n_findings++];
	snprintf(f->rule_id, sizeof(f->rule_id), "%s", risk->rule_id ? risk->rule_id : "backend.risk");
	snprintf(f->description, sizeof(f->description), "%s", desc);
	snprintf(f->argv_norm, sizeof(f->argv_norm), "risk %s", f->rule_id);
	f->host_scope = 1;
	f->hardline = risk->hardline != 0;
	struct hs_gate mg = *g;
	mg.command = desc;
	if (risk->hardline) {
		char err[512];
		an.verdict = HS_VERDICT_DENY;
		hs_approval_decide(c, mg.mode, mg.command, &an, NULL, NULL, out);
		if (audit(c, &mg, &an, out, 0, 0, 0, err, sizeof(err)) < 0)
			hs_warn("audit log: %s", err);
		return 0;
	}
	return decide_host_findings(c, &mg, &an, risk->critical != 0, out);
}

int
hs_approval_mode_resolve(struct hs_core *c, const char *requested, int ceiling)
{
	const char *s = requested, *locked = NULL;
	if (!s) {
		s = "ask";
		hs_conf_string(c->conf, "approval", &s);
	}
	int m = hs_approval_mode_parse(s);
	if (m < 0)
		return -1;
	/* A locked admin mode is a ceiling nobody below it can loosen. */
	if (hs_conf_locked(c->conf, "approval") && hs_conf_string(c->conf, "approval", &locked) == 0) {
		int lm = hs_approval_mode_parse(locked);
		if (lm >= 0 && m > lm)
			m = lm;
	}
	if (ceiling >= 0 && m > ceiling)
		m = ceiling;
	return m;
}

static int
tty_ask(void *ctx, const char *command, const struct hs_analysis *a)
{
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return HS_DECIDE_DENY;
	FILE *f = fdopen(fd, "r+");
	if (!f) {
		close(fd);
		return HS_DECIDE_DENY;
	}
	/* Control characters are escaped, so the command shown is the one that runs. */
	size_t clen = strlen(command), elen = 4 * clen + 1;
	char *shown = malloc(elen);
	if (shown)
		hs_prompt_escape(command, clen, shown, elen);
	fprintf(f, "hs: this command needs approval:\n    %s\n", shown ? shown : "(out of memory)");
	free(shown);
	for (size_t i = 0; i < a->n_findings; i++)
		fprintf(f, "  %s: %s\n", a->findings[i].rule_id, a->findings[i].description);
	if (a->opaque)
		fprintf(f, "  (%s)\n", a->opaque_reason);
	int d = HS_DECIDE_DENY;
	for (int tries = 0; tries < 3; tries++) {
		char line[64];
		fputs("run it? [o]nce, [s]ession, [a]lways, [d]eny: ", f);
		fflush(f);
		if (!fgets(line, sizeof(line), f))
			break; /* EOF denies */
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0]) {
			d = HS_DECIDE_DENY; /* an empty answer denies */
			break;
		}
		int ans = hs_prompt_parse_answer(line);
		if (ans == HS_ANSWER_INVALID)
			continue;
		d = ans;
		break;
	}
	fclose(f);
	return d;
}

const struct hs_asker *
hs_approval_tty(void)
{
	static const struct hs_asker tty = { NULL, tty_ask, "tty" };
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return NULL;
	close(fd);
	return &tty;
}
