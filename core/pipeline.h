/* SPDX-License-Identifier: MIT */
/*
 * pipeline.h - a session and the one exec pipeline every front end uses.
 *
 * `hs run`, `hs serve` (and the front ends to come) are thin adapters:
 * they fill a request from their own input, give a sink for output and an
 * asker for approvals, and turn the result into their own output.  What
 * happens to a command is decided here, once:
 *
 *   environment -> approval gate (decision audited first; no audit, no run)
 *   -> exec -> guard check of hs's own files -> exit audited -> result
 *
 * See docs/architecture.md for the flows.
 */
#ifndef HS_PIPELINE_H
#define HS_PIPELINE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_gen.h>

#include "core/safety/approval.h"
#include "core/capture.h"
#include "core/exec.h"
#include "core/session.h"
#include "core/egress/egress.h"
#include "core/egress/relay.h"

struct hs_core;
struct hs_policy;
struct hs_job_guard;

/* The configured limits of a command (config timeout, max_timeout, output_limit, kill_grace_ms). */
struct hs_limits {
	int64_t timeout_s;     /* 0: none */
	int64_t max_timeout_s; /* 0: none; a ceiling on any timeout asked for */
	int64_t output_limit;  /* bytes kept per stream where output is bounded */
	int64_t grace_ms;      /* TERM to KILL */
	int64_t output_keep;   /* bytes of whole output the runner keeps to read back (0: none) */
};

/* Outcomes of hs_session_open and hs_session_exec; front ends map them to exit codes or errors. */
enum hs_outcome {
	HS_OUTCOME_OK = 0,
	HS_OUTCOME_INVALID,  /* the request itself is wrong (bad mount spec, env name, mode) */
	HS_OUTCOME_DENIED,   /* the approval gate (or a backend's risk) refused */
	HS_OUTCOME_AUDIT,    /* not run: the decision could not be audited */
	HS_OUTCOME_FAILED,   /* hs or the backend failed */
};

/* One open session: its record and lock, connection, grants, approval mode and asker, limits. */
struct hs_session {
	struct hs_core *c;
	char name[65];                /* "": ephemeral (torn down on close) */
	int persistent;
	int mode;                     /* effective enum hs_approval_mode */
	const struct hs_asker *asker; /* who answers in ask mode; NULL: nobody */
	int caller_cwd;               /* the front end has a caller whose cwd means something */
	const char *start_cwd;        /* where the caller asks the session to start (serve's
	                                 open{cwd}); read during hs_session_open only */
	const char *const *allow;     /* egress allow entries asked for (hs run --allow-host,
	                                 serve open{network:{allow}}); NULL: the configured;
	                                 read during hs_session_open only */
	size_t n_allow;
	struct hs_egress_rules egress; /* the session's allow rules (network "allowlist") */
	struct hs_egress_relay_opts egress_opts; /* the relay's options (audit into this session) */
	/* Optional: told of every egress attempt (serve's events); from the relay's thread. */
	void (*egress_event)(void *ctx, int allowed, const struct hs_audit_egress *e);
	void *egress_event_ctx;
	/* Network "allowlist" mapped onto the backend's own filter (modal,
	 * daytona): the one-line warning of how much weaker that is; "" else. */
	char egress_note[1024];
	struct hs_grants grants;
	struct hs_limits lim;
	struct hs_record rec;
	int lockfd;                   /* -1: none held */
	int opened;
	struct hs_conn cn;
	char start_dir[PATH_MAX];     /* where commands start; "": the sandbox's default */
	struct hs_job_guard *guards;  /* the stdin gate state of its jobs (core/job-ops.c) */
};

/* Read the configured limits. */
void hs_limits_load(struct hs_core *c, struct hs_limits *l);
/* The timeout to use for a requested one (<0: the configured), under max_timeout. */
int64_t hs_limits_timeout(const struct hs_limits *l, int64_t requested);

/*
 * Prepare s for front end use (no environment yet): name NULL for an
 * ephemeral session.  mode is the resolved approval mode
 * (hs_approval_mode_resolve); asker may be NULL.
 */
void hs_session_init(struct hs_session *s, struct hs_core *c, const char *name, int persistent,
                     int mode, const struct hs_asker *asker);

/*
 * Open (or re-attach) the session's environment on backend (NULL: the
 * session's, else the configured one): host mounts of spec are put to
 * approval first, then the session is locked, its record loaded and the
 * environment opened.  A risk only the backend can see (host_approve) is
 * decided the same way, with the session's mode and asker.  Returns an
 * enum hs_outcome, with a one-line reason in err unless OK.
 */
int hs_session_open(struct hs_session *s, const char *backend, struct hs_env_spec *spec,
                    char *err, size_t errlen);

/* Close the session: keep its environment (keep) or tear it down; release the lock. */
int hs_session_close(struct hs_session *s, int keep, char *err, size_t errlen);

/* Free what init allocated (grants); the session must be closed. */
void hs_session_free(struct hs_session *s);

/* One command put through the pipeline. */
struct hs_cmd_req {
	const char *command;          /* shell string */
	const char *const *sets;      /* per-command "K=V" (judged with the command) */
	size_t n_sets;
	const char *cwd;              /* NULL: keep the session's */
	const char *approval;         /* a narrower mode for this command; NULL: the session's */
	int64_t timeout_s;            /* <0: the configured timeout */
	int bounded;                  /* keep head and tail of output_limit (else lossless) */
	int keep_output;              /* lossless too: the runner keeps the whole output to read
	                                 back (bounded: always, within output_keep) */
	int stdin_pipe;               /* the sink gives stdin */
	int keep_state;               /* write the shell's state back (foreground in a session) */
	int background;               /* start a job instead (serve) */
	int stdin_open;               /* background: stdin a pipe left open for write_stdin */
	uint16_t pty_rows, pty_cols;  /* both set: on a pseudo-terminal of this size */
	int64_t handoff_ms;           /* bounded: still running after this long, it goes on as a
	                                 job (res->out.job); 0: never */
	/* Called just before the command starts (1) and when it ended (0), after approval. */
	void (*running)(void *ctx, int on);
	void *running_ctx;
};

/* What became of it. */
struct hs_cmd_result {
	struct hs_exec_out out;       /* filled when OK and not background */
	struct hs_job *job;           /* background: the job started */
	unsigned restored;            /* hs's own files the command changed and hs put back */
	int64_t timeout_s;            /* the timeout applied */
	const char *decision;         /* the approval decision ("auto", "once", ...) */
	char why[1024];               /* unless OK: one line saying why */
};

/*
 * Run one command of an open session through the pipeline, output to sink.
 * Returns an enum hs_outcome; res->why says why unless OK.
 */
int hs_session_exec(struct hs_session *s, const struct hs_cmd_req *rq,
                    const struct hs_sink_ops *sink, struct hs_cmd_result *res);

/*
 * Only the gate, for an operation that is not a command (a file put or
 * get, judged as `cat > PATH` / `cat PATH`): decided and audited like one.
 * Returns 1 to go on, 0 refused (out->why).
 */
int hs_session_gate(struct hs_session *s, const char *command, struct hs_approval_out *out);

/*
 * The gate for bytes written to a job's terminal or stdin (job: its id for
 * the audit log, or NULL), through the same decision as a command (mode,
 * grants, allow list, audit): judged by hs_stdin_analyse() against what g
 * holds pending, in host context when the environment has host access.
 * On allow the bytes are committed to g: deliver them, and nothing else,
 * next.  Closing stdin is gated too: buf NULL, n 0 (a shell reading a
 * pipe runs its last line at EOF).  Returns 1 to deliver, 0 refused
 * (out->why).
 */
int hs_session_stdin_gate(struct hs_session *s, struct hs_stdin_guard *g, const char *job,
                          const void *buf, size_t n, struct hs_approval_out *out);

/*
 * The gate for a file operation on path, judged as `cat > PATH` (put) or
 * `cat PATH` (get); a put to one of hs's own files is refused first.
 * Returns 1 to go on, 0 refused (out->why).
 */
int hs_session_file_gate(struct hs_session *s, const char *path, int put,
                         struct hs_approval_out *out);

/*
 * The fields about a command's whole output into an open map: stdout_bytes
 * and stderr_bytes; with with_id, when the session's runner keeps it (keep:
 * the output_keep budget), output_id to read it back by range; with spill,
 * stdout_file and stderr_file (files inside the sandbox holding all of it),
 * or spill_error saying why not.
 */
void hs_output_json(yajl_gen g, struct hs_conn *cn, int64_t keep, const struct hs_exec_out *out,
                    int with_id, int spill);

/* A job's state as JSON fields into an open map: running, exit (once done), byte counts. */
void hs_job_state_json(yajl_gen g, const struct hs_job *j);
/* "job": "sID" when the command o left processes running in the session shell. */
void hs_job_left_json(yajl_gen g, const struct hs_exec_out *o);
/* A session-shell job's fields (job "sID", running, processes, command, byte counts). */
void hs_shell_job_json(yajl_gen g, const struct hs_shell_job *j);

/*
 * The session of this thread whose environment is being opened, or NULL:
 * host_approve puts a backend's risk to it.
 */
struct hs_session *hs_session_opening(void);

/* The findings of a verdict as a JSON "rules" array (key written too): check, approval events. */
void hs_rules_json(yajl_gen g, const struct hs_analysis *a);

#endif /* HS_PIPELINE_H */
