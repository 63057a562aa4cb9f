/* SPDX-License-Identifier: MIT */
/*
 * pipeline.c - a session (open, exec, close) and the one exec pipeline
 * behind every front end: environment, approval gate, exec, guard check,
 * exit audit, result.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "core/cli/cmds.h"
#include "core/core.h"
#include "core/env.h"
#include "core/guard.h"
#include "core/safety/audit.h"
#include "core/config/hsconf.h"
#include "core/json.h"
#include "core/pipeline.h"
#include "core/safety/redact.h"
#include "core/shell.h"

extern char **environ;

/* The session whose environment this thread is opening (host_approve asks it). */
static __thread struct hs_session *opening;

struct hs_session *
hs_session_opening(void)
{
	return opening;
}

void
hs_limits_load(struct hs_core *c, struct hs_limits *l)
{
	*l = (struct hs_limits){ .output_limit = 1 << 20, .grace_ms = 2000, .output_keep = 64 << 20 };
	hs_conf_int(c->conf, "timeout", &l->timeout_s);
	hs_conf_int(c->conf, "max_timeout", &l->max_timeout_s);
	hs_conf_int(c->conf, "output_limit", &l->output_limit);
	hs_conf_int(c->conf, "kill_grace_ms", &l->grace_ms);
	hs_conf_int(c->conf, "output_keep", &l->output_keep);
	if (l->output_keep < 0)
		l->output_keep = 0;
}

int64_t
hs_limits_timeout(const struct hs_limits *l, int64_t requested)
{
	int64_t t = requested < 0 ? l->timeout_s : requested;
	if (l->max_timeout_s > 0 && (t <= 0 || t > l->max_timeout_s))
		t = l->max_timeout_s;
	return t;
}

void
hs_session_init(struct hs_session *s, struct hs_core *c, const char *name, int persistent,
                int mode, const struct hs_asker *asker)
{
	memset(s, 0, sizeof(*s));
	s->c = c;
	snprintf(s->name, sizeof(s->name), "%s", name ? name : "");
	s->persistent = persistent;
	s->mode = mode;
	s->asker = asker;
	s->lockfd = -1;
	hs_limits_load(c, &s->lim);
}

/* Where commands start unless told: the backend's directory, else the caller's. */
static void
set_start_dir(struct hs_session *s, const struct hs_env_spec *spec)
{
	const char *ws = spec ? spec->workdir : NULL;
	s->start_dir[0] = '\0';
	if (s->cn.props.start_dir[0] && memchr(s->cn.props.start_dir, 0, sizeof(s->cn.props.start_dir)))
		snprintf(s->start_dir, sizeof(s->start_dir), "%s", s->cn.props.start_dir);
	else if (ws && ws[0] == '/' && (s->cn.props.env_flags & HS_ENVP_CALLER_CWD) &&
	         strlen(ws) < sizeof(s->start_dir))
		snprintf(s->start_dir, sizeof(s->start_dir), "%s", ws);
	else if (s->start_cwd && s->start_cwd[0] == '/' && strlen(s->start_cwd) < sizeof(s->start_dir))
		snprintf(s->start_dir, sizeof(s->start_dir), "%s", s->start_cwd);
	else if (s->caller_cwd && (s->cn.props.env_flags & HS_ENVP_CALLER_CWD) &&
	         !getcwd(s->start_dir, sizeof(s->start_dir)))
		s->start_dir[0] = '\0';
}

/* The gate's view of the session; mode and command are the caller's. */
static struct hs_gate
session_gate(struct hs_session *s, const char *backend, const char *command, int mode)
{
	return (struct hs_gate){
		.session = s->name[0] ? s->name : NULL,
		.backend = backend,
		.command = command,
		.host = s->opened ? s->cn.props.host_access : 0,
		.mode = mode,
		.grants = &s->grants,
		.asker = s->asker,
	};
}

static int
outcome_of(const char *decision)
{
	return !strcmp(decision, "invalid") ? HS_OUTCOME_INVALID
	       : !strcmp(decision, "error") ? HS_OUTCOME_AUDIT : HS_OUTCOME_DENIED;
}

/*
 * Every egress attempt of s, allowed or refused, into the audit log (and to
 * the front end's egress_event).  Runs on the relay's thread; the backend
 * is read from the connection, which outlives the relay.
 */
static void
egress_audit(void *ctx, int allowed, const struct hs_audit_egress *e)
{
	struct hs_session *s = ctx;
	struct timespec ts;
	char err[256];

	clock_gettime(CLOCK_REALTIME, &ts);
	struct hs_audit_record r = {
		.ts_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
		.session = s->name[0] ? s->name : NULL,
		.backend = s->cn.be ? s->cn.be->plugin.name : NULL,
		.verdict = allowed ? "allow" : "deny",
		.decision = "egress",
		.approver = "allowlist",
		.egress = e,
	};
	if (hs_core_audit(s->c, &r, err, sizeof(err)) < 0)
		hs_warn("egress audit: %s", err);
	if (s->egress_event)
		s->egress_event(s->egress_event_ctx, allowed, e);
}

int
hs_session_open(struct hs_session *s, const char *backend, struct hs_env_spec *spec, char *err,
                size_t errlen)
{
	const char *conf_backend = "local";
	hs_conf_string(s->c->conf, "backend", &conf_backend);
	/* Host access through mounts is put to approval before anything is created;
	 * nobody but a person can answer, so the asker counts in ask mode only. */
	struct hs_gate mg = session_gate(s, backend ? backend : conf_backend, NULL, s->mode);
	if (s->mode != HS_APPROVAL_ASK)
		mg.asker = NULL;
	struct hs_approval_out mv;
	if (!hs_approval_mounts(s->c, &mg, spec->mounts, spec->n_mounts, &mv)) {
		snprintf(err, errlen, "%s", mv.why);
		return outcome_of(mv.decision);
	}
	s->egress_opts = (struct hs_egress_relay_opts){ .audit = egress_audit, .audit_ctx = s };
	struct hs_session_req req = { .name = s->name[0] ? s->name : NULL, .backend = backend,
	                              .spec = spec, .persistent = s->persistent,
	                              .allow = s->allow, .n_allow = s->n_allow, .egress = &s->egress,
	                              .egress_opts = &s->egress_opts,
	                              .egress_note = s->egress_note,
	                              .egress_note_len = sizeof(s->egress_note) };
	s->egress_note[0] = '\0';
	hs_egress_rules_free(&s->egress);
	opening = s;
	s->lockfd = hs_session_begin(s->c, &req, &s->cn, &s->rec, err, errlen);
	opening = NULL;
	if (s->lockfd == -1)
		return s->cn.open_status == HS_E_DENIED ? HS_OUTCOME_DENIED : HS_OUTCOME_FAILED;
	s->opened = 1;
	set_start_dir(s, spec);
	return HS_OUTCOME_OK;
}

int
hs_session_close(struct hs_session *s, int keep, char *err, size_t errlen)
{
	int rc = 0;
	if (s->opened) {
		rc = hs_conn_close(&s->cn, keep, err, errlen);
		/* Not kept: forget the record too, unless the teardown failed (so
		 * `hs session close` can try again). */
		if (!keep && rc == 0 && s->name[0])
			hs_record_remove(s->c, s->name);
		if (s->lockfd >= 0)
			close(s->lockfd);
	}
	s->lockfd = -1;
	s->opened = 0;
	return rc;
}

void
hs_session_free(struct hs_session *s)
{
	hs_grants_free(&s->grants);
	hs_egress_rules_free(&s->egress);
}

/* What a command's exit is recorded as. */
static int
audit_code(int rc, const struct hs_exec_out *o)
{
	return rc < 0 ? HS_EXIT_FAIL : o->timed_out ? HS_EXIT_TIMEOUT : o->exit_code;
}

/*
 * The environment of a command of s with the per-command variables sets:
 * hs's scrubbed own (or, in a sandbox, what env_passthrough names), the
 * non-interactive defaults unless the noninteractive setting is off, then
 * sets.  Every front end and backend gets it from here.  Returns 0, or -1
 * (out of memory, or *bad: a set that is not NAME=VALUE).
 */
static int
command_env(struct hs_session *s, const char *const *sets, size_t n_sets, struct hs_envlist *out,
            const char **bad)
{
	const char *const *pass = NULL;
	const char *defaults[HS_ENV_NONINTERACTIVE_MAX + HS_EGRESS_ENV_MAX], *ci = NULL;
	size_t n_pass = 0, n_defaults = 0;
	char *ci_buf = NULL;
	int on = 1;
	hs_conf_strings(s->c->conf, "env_passthrough", &pass, &n_pass);
	hs_conf_bool(s->c->conf, "noninteractive", &on);
	hs_conf_string(s->c->conf, "ci", &ci);
	if (on)
		n_defaults = hs_env_noninteractive(ci, defaults, &ci_buf);
	/* Network "allowlist": well-behaved tools find the endpoint. */
	char proxy_buf[HS_EGRESS_ENV_MAX][64];
	for (size_t i = 0; s->cn.egress_port && i < HS_EGRESS_ENV_MAX; i++) {
		const char *v = hs_egress_env_names[i];
		int no = strcasecmp(v, "NO_PROXY") == 0;
		snprintf(proxy_buf[i], sizeof(proxy_buf[i]), no ? "%s=localhost,127.0.0.1,::1" :
		         "%s=http://127.0.0.1:%d", v, s->cn.egress_port);
		defaults[n_defaults++] = proxy_buf[i];
	}
	*bad = NULL;
	int rc = hs_env_build(out, environ, pass, n_pass, defaults, n_defaults, sets, n_sets,
	                      s->cn.merge_env, bad);
	free(ci_buf);
	return rc;
}

/* One command after approval: guard, exec, guard check.  0, or -1 with res->why. */
static int
run_guarded(struct hs_session *s, const struct hs_cmd_req *rq, const struct hs_exec_opts *eo,
            const struct hs_sink_ops *sink, struct hs_cmd_result *res)
{
	const char *sn = s->name[0] ? s->name : NULL, *be = s->cn.be->plugin.name;
	char gerr[1024];
	if (hs_guard_begin(s->c, sn, be, s->cn.snapshot, res->why, sizeof(res->why)) < 0)
		return -1;
	if (rq->running)
		rq->running(rq->running_ctx, 1);
	int rc = hs_conn_exec(&s->cn, eo, sink, &res->out, res->why, sizeof(res->why));
	if (rq->running)
		rq->running(rq->running_ctx, 0);
	/* hs wrote the session's snapshot itself unless the command was stopped or
	 * goes on as a job. */
	int saved = rc == 0 && eo->keep_state && !res->out.timed_out && !res->out.cancelled &&
	            !res->out.job;
	if (hs_guard_end(s->c, sn, be, s->cn.snapshot, saved, &res->restored, gerr, sizeof(gerr)) < 0 &&
	    rc == 0) {
		snprintf(res->why, sizeof(res->why), "%s", gerr);
		rc = -1;
	}
	return rc;
}

static struct hs_policy *session_policy(struct hs_session *s, struct hs_approval_out *out);
static int session_gate_op(struct hs_session *s, struct hs_policy *pol, const char *command,
                           const struct hs_analysis *judged, const char *kind, const char *job,
                           struct hs_approval_out *out);

/*
 * A command's own stdin (serve's "stdin", hs run's forwarded stdin) is
 * judged like typed input before each piece is sent: a shell or an
 * interpreter may run it.  It may as well be data, so what the analysis
 * cannot judge (binary bytes, long lines, editing keys: "opaque") does not
 * count here; what it finds does, through the same approval as a command.
 * Only the first HS_EXEC_STDIN_JUDGED bytes are judged; more than that for
 * a command that names a shell or an interpreter needs approval.
 */
#define HS_EXEC_STDIN_JUDGED (1u << 20)

struct exec_stdin {
	struct hs_session *s;
	struct hs_stdin_guard *g;
	const char *command;
	uint64_t judged;
	int past;     /* 1: what is past the judged part was decided (allowed) */
	int terminal; /* it goes to a terminal (pty): typed input, edited as typed */
};

/* Whether command names a program that may run its stdin as code. */
static int
names_code_reader(const char *command)
{
	static const char *const readers[] = { "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "csh",
		"tcsh", "fish", "busybox", "python", "pypy", "perl", "ruby", "node", "nodejs", "deno", "bun",
		"php", "lua", "tclsh", "Rscript", "R", "psql", "mysql", "sqlite3", "xargs", "eval", "source",
		".", "env", "sudo", "doas", "su", "ssh", "docker", "podman", "kubectl", "awk", "gawk",
		"nsenter", "chroot", "unshare", "setsid", "nohup", "timeout", "exec", NULL };
	const char *p = command;
	while (*p) {
		while (*p && !((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '.' || *p == '_'))
			p++;
		const char *w = p;
		while (*p && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		              *p == '.' || *p == '_' || *p == '-' || *p == '+'))
			p++;
		size_t n = (size_t)(p - w);
		for (int i = 0; n && readers[i]; i++) {
			size_t rl = strlen(readers[i]);
			/* python3, python3.11, perl5.36: a version after the name counts */
			if (n >= rl && !strncmp(w, readers[i], rl) &&
			    (n == rl || (w[rl] >= '0' && w[rl] <= '9')))
				return 1;
		}
	}
	return 0;
}

static int
exec_stdin_gate(void *ctx, const void *buf, size_t n, char *why, size_t whylen)
{
	struct exec_stdin *x = ctx;
	struct hs_approval_out out = { .decision = NULL };
	struct hs_policy *pol = session_policy(x->s, &out);
	struct hs_analysis an;
	if (!pol) {
		snprintf(why, whylen, "%s", out.why);
		return 0;
	}
	if (x->judged >= HS_EXEC_STDIN_JUDGED) {
		if (x->past || !names_code_reader(x->command))
			return 1;
		memset(&an, 0, sizeof(an));
		an.verdict = HS_VERDICT_ASK;
		an.n_findings = 1;
		snprintf(an.findings[0].rule_id, sizeof(an.findings[0].rule_id), "stdin.unjudged");
		snprintf(an.findings[0].description, sizeof(an.findings[0].description),
		         "more than %u MiB of stdin to a command that names a shell or an interpreter: "
		         "the rest is not judged", HS_EXEC_STDIN_JUDGED >> 20);
		char shown[160];
		snprintf(shown, sizeof(shown), "(stdin of the command beyond %u MiB)", HS_EXEC_STDIN_JUDGED >> 20);
		if (!session_gate_op(x->s, pol, shown, &an, "stdin", "exec", &out)) {
			snprintf(why, whylen, "%s", out.why);
			return 0;
		}
		x->past = 1;
		return 1;
	}
	struct hs_gate gctx = session_gate(x->s, NULL, NULL, x->s->mode);
	if (hs_stdin_analyse(x->g, pol, gctx.host ? HS_CONTEXT_HOST : HS_CONTEXT_SANDBOX, buf, n, &an) < 0) {
		snprintf(why, whylen, "stdin could not be judged");
		return 0;
	}
	/* Data is not code: drop what only says "cannot be analysed".  On a
	 * terminal it is typed input, judged as write_stdin judges it. */
	size_t k = 0;
	int hard = 0;
	for (size_t i = 0; !x->terminal && i < an.n_findings; i++) {
		if (!strcmp(an.findings[i].rule_id, "opaque") || !strncmp(an.findings[i].rule_id, "stdin.", 6))
			continue;
		hard |= an.findings[i].hardline;
		an.findings[k++] = an.findings[i];
	}
	if (!x->terminal) {
		an.n_findings = k;
		an.opaque = 0;
		an.verdict = hard ? HS_VERDICT_DENY : k ? HS_VERDICT_ASK : HS_VERDICT_ALLOW;
	}
	if (an.verdict != HS_VERDICT_ALLOW) {
		char *shown = malloc(4 * n + 64);
		if (!shown) {
			snprintf(why, whylen, "out of memory");
			return 0;
		}
		if (buf)
			hs_stdin_shown(buf, n, shown, 4 * n + 64);
		else
			snprintf(shown, 4 * n + 64, "(end of the command's stdin)");
		int ok = session_gate_op(x->s, pol, shown, &an, "stdin", "exec", &out);
		free(shown);
		if (!ok) {
			snprintf(why, whylen, "%s", out.why);
			return 0;
		}
	}
	hs_stdin_guard_commit(x->g, buf, n);
	x->judged += n;
	return 1;
}

/* The approved command, foreground or as a job; an enum hs_outcome. */
static int
run_approved(struct hs_session *s, const struct hs_cmd_req *rq, const struct hs_envlist *env,
             const struct hs_sink_ops *sink, struct hs_gate *g, struct hs_analysis *an,
             struct hs_approval_out *v, struct hs_cmd_result *res)
{
	uint64_t half = rq->bounded ? (uint64_t)s->lim.output_limit / 2 : 0;
	struct hs_exec_opts eo = {
		.command = rq->command,
		.cwd = rq->cwd,
		.start_dir = s->start_dir[0] ? s->start_dir : NULL,
		.envp = env->v,
		.deadline_ms = res->timeout_s * 1000,
		.grace_ms = s->lim.grace_ms,
		.head_bytes = half,
		.tail_bytes = half,
		.stdin_pipe = rq->stdin_pipe,
		.keep_state = rq->keep_state,
		.secrets = env->secrets,
		.n_secrets = env->n_secrets,
		.handoff_ms = rq->handoff_ms,
		.pty_rows = rq->pty_rows,
		.pty_cols = rq->pty_cols,
		/* Where only head and tail reach the caller, the rest stays readable. */
		.keep_bytes = rq->bounded || rq->keep_output ? (uint64_t)s->lim.output_keep : 0,
	};
	if (rq->background) {
		eo.head_bytes = eo.tail_bytes = 0;
		eo.keep_state = 0;
		eo.stdin_pipe = rq->stdin_open;
		eo.secrets = NULL;
		eo.n_secrets = 0;
		return hs_conn_start_job(&s->cn, &eo, (size_t)s->lim.output_limit, &res->job, res->why,
		                         sizeof(res->why)) < 0 ? HS_OUTCOME_FAILED : HS_OUTCOME_OK;
	}
	/* The session shell keeps the session's environment; per-command
	 * variables travel apart and apply to that command only. */
	struct hs_envlist base = { 0 };
	if (rq->keep_state && s->cn.session_shell && rq->n_sets) {
		const char *bad;
		if (command_env(s, NULL, 0, &base, &bad) < 0) {
			snprintf(res->why, sizeof(res->why), "out of memory");
			return HS_OUTCOME_FAILED;
		}
		eo.envp = base.v;
		eo.sets = rq->sets;
		eo.n_sets = rq->n_sets;
	}
	struct exec_stdin xs = { .s = s, .command = rq->command, .terminal = rq->pty_rows != 0 };
	if (eo.stdin_pipe && !(xs.g = hs_stdin_guard_new())) {
		hs_env_free(&base);
		snprintf(res->why, sizeof(res->why), "out of memory");
		return HS_OUTCOME_FAILED;
	}
	if (xs.g) {
		eo.stdin_gate = exec_stdin_gate;
		eo.stdin_gate_ctx = &xs;
	}
	int rc = run_guarded(s, rq, &eo, sink, res);
	hs_stdin_guard_free(xs.g);
	hs_env_free(&base);
	/* Handed off, it has no exit yet: like a background job, none is audited. */
	if (rc < 0 || !res->out.job)
		hs_approval_audit(s->c, g, an, v, 1, audit_code(rc, &res->out), res->out.duration_ms);
	return rc < 0 ? HS_OUTCOME_FAILED : HS_OUTCOME_OK;
}

/* The environment, judged command and redactor of rq; an enum hs_outcome. */
static int
prepare(struct hs_session *s, const struct hs_cmd_req *rq, struct hs_envlist *env,
        char **gate_cmd, struct hs_redactor **red, struct hs_cmd_result *res)
{
	const char *bad;
	if (command_env(s, rq->sets, rq->n_sets, env, &bad) < 0) {
		snprintf(res->why, sizeof(res->why), bad ? "'%s' is not NAME=VALUE (and HS_* names are "
		         "reserved)" : "out of memory", bad);
		return bad ? HS_OUTCOME_INVALID : HS_OUTCOME_FAILED;
	}
	/* Per-command variables are judged with the command: BASH_ENV=x runs code too. */
	*gate_cmd = hs_env_gate_command(rq->sets, rq->n_sets, rq->command);
	if (!*gate_cmd) {
		snprintf(res->why, sizeof(res->why), "out of memory");
		hs_env_free(env);
		return HS_OUTCOME_FAILED;
	}
	*red = NULL;
	if (env->n_secrets)
		hs_redactor_new(red, (const char *const *)env->secrets, env->n_secrets);
	return HS_OUTCOME_OK;
}

int
hs_session_exec(struct hs_session *s, const struct hs_cmd_req *rq, const struct hs_sink_ops *sink,
                struct hs_cmd_result *res)
{
	memset(res, 0, sizeof(*res));
	res->decision = "auto";
	res->timeout_s = hs_limits_timeout(&s->lim, rq->timeout_s);
	/* A command may only narrow the session's mode. */
	int mode = rq->approval ? hs_approval_mode_resolve(s->c, rq->approval, s->mode) : s->mode;
	if (mode < 0) {
		snprintf(res->why, sizeof(res->why), "approval must be ask, deny or approve");
		return HS_OUTCOME_INVALID;
	}
	struct hs_policy *pol = hs_core_policy(s->c, res->why, sizeof(res->why));
	if (!pol)
		return HS_OUTCOME_FAILED;
	struct hs_envlist env;
	struct hs_redactor *red;
	char *gate_cmd;
	int oc = prepare(s, rq, &env, &gate_cmd, &red, res);
	if (oc != HS_OUTCOME_OK)
		return oc;
	struct hs_gate g = session_gate(s, s->cn.be->plugin.name, gate_cmd, mode);
	g.redact = red;
	struct hs_analysis an;
	struct hs_approval_out v;
	if (hs_approval_gate(s->c, pol, &g, &an, &v))
		oc = run_approved(s, rq, &env, sink, &g, &an, &v, res);
	else {
		snprintf(res->why, sizeof(res->why), "%s", v.why);
		oc = outcome_of(v.decision);
	}
	res->decision = v.decision;
	hs_redactor_free(red);
	hs_env_free(&env);
	free(gate_cmd);
	return oc;
}

/* The policy, or NULL with out saying why. */
static struct hs_policy *
session_policy(struct hs_session *s, struct hs_approval_out *out)
{
	struct hs_policy *pol = hs_core_policy(s->c, out->why, sizeof(out->why));
	if (!pol)
		out->decision = "error";
	return pol;
}

/*
 * The gate of an operation that is not a command run (a file put or get, a
 * stdin write): judged NULL analyses command; else judged is the verdict,
 * command what the approver and the audit log are shown.
 */
static int
session_gate_op(struct hs_session *s, struct hs_policy *pol, const char *command,
                const struct hs_analysis *judged, const char *kind, const char *job,
                struct hs_approval_out *out)
{
	struct hs_gate g = session_gate(s, s->cn.be->plugin.name, command, s->mode);
	g.judged = judged;
	g.kind = kind;
	g.job = job;
	struct hs_analysis an;
	return hs_approval_gate(s->c, pol, &g, &an, out);
}

int
hs_session_gate(struct hs_session *s, const char *command, struct hs_approval_out *out)
{
	struct hs_policy *pol = session_policy(s, out);
	return pol ? session_gate_op(s, pol, command, NULL, NULL, NULL, out) : 0;
}

int
hs_session_stdin_gate(struct hs_session *s, struct hs_stdin_guard *g, const char *job, const void *buf,
                      size_t n, struct hs_approval_out *out)
{
	struct hs_policy *pol = session_policy(s, out);
	if (!pol)
		return 0;
	struct hs_analysis an;
	struct hs_gate ctx = session_gate(s, NULL, NULL, s->mode);
	if (hs_stdin_analyse(g, pol, ctx.host ? HS_CONTEXT_HOST : HS_CONTEXT_SANDBOX, buf, n, &an) < 0) {
		out->decision = "invalid";
		snprintf(out->why, sizeof(out->why), "invalid stdin write");
		return 0;
	}
	/*
	 * What the approver sees and the audit log keeps: the bytes, escaped,
	 * when they need a decision; an allowed write may be a password typed at
	 * a prompt, so only its length is recorded.
	 */
	char *shown = malloc(4 * n + 64);
	if (!shown) {
		out->decision = "error";
		snprintf(out->why, sizeof(out->why), "out of memory");
		return 0;
	}
	if (!buf)
		snprintf(shown, 4 * n + 64, "(end of input)");
	else if (an.verdict == HS_VERDICT_ALLOW)
		snprintf(shown, 4 * n + 64, "(%zu bytes written to the terminal, not recorded)", n);
	else
		hs_stdin_shown(buf, n, shown, 4 * n + 64);
	int ok = session_gate_op(s, pol, shown, &an, "stdin", job, out);
	free(shown);
	if (ok)
		hs_stdin_guard_commit(g, buf, n);
	return ok;
}

int
hs_session_file_gate(struct hs_session *s, const char *path, int put, struct hs_approval_out *out)
{
	/* The same line as for commands: nothing writes hs's own files on the host. */
	if (put && hs_guard_protects(s->c, path)) {
		out->decision = "deny";
		snprintf(out->why, sizeof(out->why), "writing %s refused: it is one of the files that "
		         "decide hs policy (config, allow list, policy, state)", path);
		return 0;
	}
	size_t ql = hs_shell_quote(NULL, path), pl = put ? 6 : 4;
	char *fcmd = malloc(pl + ql + 1);
	if (!fcmd) {
		out->decision = "error";
		snprintf(out->why, sizeof(out->why), "out of memory");
		return 0;
	}
	memcpy(fcmd, put ? "cat > " : "cat ", pl);
	hs_shell_quote(fcmd + pl, path);
	fcmd[pl + ql] = '\0';
	int allowed = hs_session_gate(s, fcmd, out);
	free(fcmd);
	return allowed;
}

void
hs_output_json(yajl_gen g, struct hs_conn *cn, int64_t keep, const struct hs_exec_out *out,
               int with_id, int spill)
{
	char id[32], opath[4200], epath[4200], e[1024] = "";

	hs_json_kint(g, "stdout_bytes", (long long)out->total[1]);
	hs_json_kint(g, "stderr_bytes", (long long)out->total[2]);
	/* Only a runner keeps output, and only when output_keep allows. */
	if (!with_id || cn->exec_mode || keep <= 0 || !out->runner_id)
		return;
	snprintf(id, sizeof(id), "%" PRIu64, out->runner_id);
	hs_json_kstr(g, "output_id", id);
	if (!spill)
		return;
	if (hs_conn_output_spill(cn, out->runner_id, opath, epath, sizeof(opath), e, sizeof(e)) == 0) {
		hs_json_kstr(g, "stdout_file", opath);
		hs_json_kstr(g, "stderr_file", epath);
	} else {
		hs_json_kstr(g, "spill_error", e);
	}
}

void
hs_job_state_json(yajl_gen g, const struct hs_job *j)
{
	hs_json_kbool(g, "running", !j->done);
	if (j->pty)
		hs_json_kbool(g, "pty", 1);
	if (!j->done && j->waiting_input)
		hs_json_kbool(g, "waiting_input", 1);
	if (j->done) {
		hs_json_kint(g, "exit_code", j->timed_out ? HS_EXIT_TIMEOUT : j->exit_code);
		hs_json_kbool(g, "timed_out", j->timed_out);
		hs_json_kbool(g, "cancelled", j->cancelled);
		hs_json_kint(g, "duration_ms", j->duration_ms);
	}
	hs_json_kint(g, "stdout_bytes", (long long)j->cap[1].total);
	hs_json_kint(g, "stderr_bytes", (long long)j->cap[2].total);
	hs_json_kint(g, "stdout_dropped", (long long)j->cap[1].dropped);
	hs_json_kint(g, "stderr_dropped", (long long)j->cap[2].dropped);
}

void
hs_job_left_json(yajl_gen g, const struct hs_exec_out *o)
{
	/* What it left running in the session shell is a job: "s" and its runner id. */
	if (o->jobs_left) {
		char name[32];
		snprintf(name, sizeof(name), "s%llu", (unsigned long long)o->runner_id);
		hs_json_kstr(g, "job", name);
	}
}

void
hs_shell_job_json(yajl_gen g, const struct hs_shell_job *j)
{
	char name[32];
	snprintf(name, sizeof(name), "s%llu", (unsigned long long)j->id);
	hs_json_kstr(g, "job", name);
	hs_json_kbool(g, "running", j->alive);
	hs_json_kint(g, "processes", j->procs);
	hs_json_kstr(g, "command", j->command);
	hs_json_kint(g, "stdout_bytes", (long long)j->log_bytes[1]);
	hs_json_kint(g, "stderr_bytes", (long long)j->log_bytes[2]);
}

void
hs_rules_json(yajl_gen g, const struct hs_analysis *a)
{
	hs_json_key(g, "rules");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < a->n_findings; i++) {
		yajl_gen_map_open(g);
		hs_json_kstr(g, "id", a->findings[i].rule_id);
		hs_json_kstr(g, "severity", a->findings[i].hardline ? "hardline" : "dangerous");
		hs_json_kstr(g, "description", a->findings[i].description);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}
