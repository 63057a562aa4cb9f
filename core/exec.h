/* SPDX-License-Identifier: MIT */
/*
 * exec.h - running commands of a session through its runner stream.
 */
#ifndef HS_EXEC_H
#define HS_EXEC_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <hs/backend.h>

#include "core/capture.h"

struct hs_backend;
struct hs_redactor;
struct hsr_client;

/* An open environment with its runner stream. */
struct hs_conn {
	struct hs_backend *be;
	void *env;
	struct hs_env_props props;
	struct hsr_client *rc;   /* the runner stream; NULL in exec mode */
	int exec_mode;           /* no runner: every command is one backend exec */
	int session_shell;       /* the runner keeps one persistent bash for the session */
	int merge_env;           /* a sandbox: envp holds only the per-command variables,
	                            laid over the sandbox's own environment */
	int32_t open_status;     /* the backend's status when open failed (HS_E_DENIED, ...) */
	char runner_instance[40]; /* the daemon's instance at the last connect */
	int runner_restarted;    /* the last re-attach met another daemon */
	uint8_t runner_key[32];  /* the session's runner key (core/runkey.h); memory only */
	char runner_key_env[128]; /* the environment whose key file holds it ("": none) */
	char snapshot[600];      /* the shell snapshot path inside the sandbox */
	uint64_t next_id;
	pthread_mutex_t lock;    /* guards next_id and the job table */
	struct hs_job *jobs;
	/* Network "allowlist": the relay of the runner's egress endpoint, started
	 * again with every new stream (core/egress/relay.h). */
	const struct hs_egress_relay_opts *egress_opts; /* NULL: no egress */
	struct hs_egress_relay *egress;
	int egress_port;         /* the endpoint's port on 127.0.0.1 inside; 0: none */
};

struct hs_egress_relay_opts;
/*
 * Make the runner listen for egress and relay its connections through the
 * filter of o (kept by pointer: it must outlive cn), now and after every
 * re-attach.  Returns 0 with cn->egress_port set, or -1 with a reason.
 */
int hs_conn_egress(struct hs_conn *cn, const struct hs_egress_relay_opts *o, char *err,
                   size_t errlen);

/* Where output goes while a command runs. */
struct hs_sink_ops {
	void *ctx;
	/* Take len bytes of stream (1 stdout, 2 stderr); return 0, or -1 to cancel. */
	int (*output)(void *ctx, int stream, const void *buf, size_t len);
	/* Fill buf with stdin; return bytes, 0 at EOF, -1 when none is ready (non-blocking). */
	long (*input)(void *ctx, void *buf, size_t len);
	int input_fd; /* poll()ed for input; -1: no stdin */
	/* Polled for a cancel request; non-zero: cancel now. */
	int (*cancelled)(void *ctx);
	int cancel_fd; /* poll()ed: readable when a cancel may be pending; -1: none */
	/* Optional: the command is blocked reading its stdin with nothing
	 * pending; prompt is the last line of its output (redacted).  Called
	 * once per wait. */
	void (*waiting)(void *ctx, const char *prompt);
	/* Optional, for a PTY command: resize_fd is poll()ed (only when resize is
	 * set); once readable, resize says whether the window changed and to what. */
	int (*resize)(void *ctx, uint16_t *rows, uint16_t *cols);
	int resize_fd;
	/* Optional: bytes of stream (1, 2) were dropped before reaching the sink
	 * (a bounded runner spool, or output lost with an adopted command); the
	 * next output of that stream comes after them. */
	void (*gap)(void *ctx, int stream, uint64_t bytes);
};

/* A sink behind a redactor: hs_redact_sink_emit passes redacted bytes on. */
struct hs_redact_sink {
	const struct hs_sink_ops *sink;
	int stream;
	int failed;
};
void hs_redact_sink_emit(void *ctx, const char *data, size_t len);

struct hs_exec_opts {
	const char *command;       /* shell string */
	const char *cwd;           /* -C: overrides the session's cwd; NULL: keep it */
	const char *start_dir;     /* where a new session starts; NULL: the runner's default */
	char *const *envp;         /* complete environment */
	int64_t deadline_ms;       /* relative; 0: none */
	int64_t grace_ms;          /* -1: default */
	uint64_t head_bytes, tail_bytes; /* 0,0: lossless (hs run) */
	int stdin_pipe;
	int keep_state;            /* write the shell snapshot back (foreground commands); with a
	                              session shell: run in it */
	const char *const *sets;   /* session shell: "K=V" for this command only (envp is the
	                              session's environment without them) */
	size_t n_sets;
	char *const *secrets;      /* values replaced by [REDACTED] in the output; may be NULL */
	size_t n_secrets;
	int64_t handoff_ms;        /* bounded output only: a command still running after this
	                              long becomes a background job (hs_exec_out.job); 0: never */
	uint16_t pty_rows, pty_cols; /* both set: run on a pseudo-terminal of this size (its
	                              stream is stdout; with a session shell, a shell of its own
	                              started from the session's state); 0: no terminal */
	uint64_t keep_bytes;       /* the runner keeps the whole output to read back, within this
	                              budget for the session (hs_conn_output_read); 0: not kept */
	/* Optional: judges each piece of the command's stdin before it is sent,
	 * and its end (buf NULL, n 0); returning 0 refuses it: nothing of that
	 * piece is sent, the command is cancelled instead of reading on, and
	 * hs_exec_out.stdin_refused says why (why, whylen). */
	int (*stdin_gate)(void *ctx, const void *buf, size_t n, char *why, size_t whylen);
	void *stdin_gate_ctx;
};

/* The default PTY window size. */
#define HS_PTY_ROWS 24
#define HS_PTY_COLS 80

struct hs_exec_out {
	int exit_code;
	int timed_out;
	int cancelled;
	uint64_t dropped[3];
	uint64_t total[3];
	int64_t duration_ms;
	unsigned jobs_left;        /* background processes the command left running */
	uint64_t runner_id;        /* the command's id in the runner (names its background job) */
	int shell_restarted;       /* the session shell lost its state during the command */
	char restart_reason[200];
	int waiting_input;         /* it was waiting for input when it ended (see
	                              hs_sink_ops.waiting); prompt says for what */
	char prompt[256];
	char stdin_refused[512];   /* non-empty: stdin_gate refused part of its stdin, why */
	struct hs_job *job;        /* handed off (handoff_ms): the job it goes on as; the
	                              other fields hold what was known then */
};

/*
 * Open (or re-attach) the environment of spec on backend be and connect to
 * its runner.  Returns 0, or an hs_status with a one-line reason.
 */
int hs_conn_open(struct hs_conn *cn, struct hs_backend *be, const struct hs_env_spec *spec,
                 char *err, size_t errlen);
/* Connect (again) to the runner of an open environment. */
int hs_conn_stream(struct hs_conn *cn, char *err, size_t errlen);
/*
 * Close the stream and the environment (keep: leave it for a later
 * re-attach).  Returns 0, or -1 when the backend failed to close it, with
 * the reason in err (or, err NULL, as a warning on stderr).
 */
int hs_conn_close(struct hs_conn *cn, int keep, char *err, size_t errlen);

/*
 * Run one command in the session shell, streaming output to sink, until it
 * exits.  Returns 0 with out filled, or -1 with a one-line reason (the
 * stream broke and could not be re-attached, the runner refused, ...).
 */
int hs_conn_exec(struct hs_conn *cn, const struct hs_exec_opts *o, const struct hs_sink_ops *sink,
                 struct hs_exec_out *out, char *err, size_t errlen);

/*
 * A background job: a command that runs while the session goes on.  Its
 * output is kept bounded (head and tail), it writes no shell state, and its
 * events are taken whenever the session reads its runner stream.
 */
struct hs_job {
	uint64_t id;            /* the runner's exec id */
	unsigned number;        /* "j<number>" to the client */
	struct hs_capture cap[3];
	uint64_t taken[3];      /* bytes of each stream taken so far (offsets) */
	int done;
	int exit_code, timed_out, cancelled;
	int64_t start_ms, duration_ms;
	char command[256];      /* the command line (cut when longer) */
	int holds_shell;        /* a session-shell command handed off: the shell is busy until done */
	int pty;                /* it runs on a pseudo-terminal */
	unsigned pty_rows, pty_cols; /* that terminal's window size, as last set */
	int stdin_open;         /* its stdin takes writes (a terminal, or a pipe left open) */
	int waiting_input;      /* the runner said it waits for input (a terminal's read) */
	struct hs_redactor *red[3]; /* a handed-off command's redactors, per stream; NULL: none */
	struct hs_job *next;
};

/* Finished jobs a session keeps for polling; starting a job frees older ones. */
#define HS_JOBS_DONE_MAX 64

/*
 * Start o->command as a background job, output bounded to limit bytes per
 * stream.  Of the finished jobs, the newest HS_JOBS_DONE_MAX are kept.
 */
int hs_conn_start_job(struct hs_conn *cn, const struct hs_exec_opts *o, size_t limit,
                      struct hs_job **job, char *err, size_t errlen);
/*
 * Take over the commands the session's runner still has from an hs process
 * that is gone (killed mid-command): each becomes a job numbered from
 * *first (*count of them), its output and exit read like a background
 * job's.  Returns 0 (nothing to adopt in exec mode), or -1 with err.
 */
int hs_conn_adopt(struct hs_conn *cn, size_t limit, unsigned *first, unsigned *count, char *err,
                  size_t errlen);
/* Take whatever events are waiting (at most timeout_ms for the first), for jobs. */
int hs_conn_pump(struct hs_conn *cn, int timeout_ms, char *err, size_t errlen);
/* The job numbered n, or NULL. */
struct hs_job *hs_conn_job(struct hs_conn *cn, unsigned n);
/* 1 when some job is still running. */
int hs_conn_jobs_running(const struct hs_conn *cn);
/* The running job that holds the session shell (a handed-off command), or NULL. */
struct hs_job *hs_conn_shell_holder(struct hs_conn *cn);
/* Ask the runner to stop a job (TERM, grace, KILL, like a deadline). */
int hs_conn_job_kill(struct hs_conn *cn, struct hs_job *job);
/* Why a connection in exec mode cannot run a PTY command: one line into why. */
void hs_conn_pty_unsupported(const struct hs_conn *cn, char *why, size_t len);
/* Set a PTY job's window size.  0, or -1 with a one-line reason. */
int hs_conn_resize(struct hs_conn *cn, struct hs_job *job, unsigned rows, unsigned cols, char *err,
                   size_t errlen);
/*
 * Write len bytes into a job's stdin (its terminal, or its open pipe), then
 * with eof its end (a terminal gets its EOF character; a pipe is closed).
 * The bytes must have passed the stdin gate.  0, or -1 with a reason.
 */
int hs_conn_write_stdin(struct hs_conn *cn, struct hs_job *job, const void *buf, size_t len,
                        int eof, char *err, size_t errlen);

/* A background job of the session shell: what a completed command left running. */
struct hs_shell_job {
	uint64_t id;               /* the command's runner id */
	int alive;
	unsigned procs;
	uint64_t log_bytes[3];     /* its later output kept in the runner, by stream 1, 2 */
	char command[256];
};
/* The session shell's background jobs, newest first (at most max); the count, or -1 with err. */
int hs_conn_shell_jobs(struct hs_conn *cn, struct hs_shell_job *out, size_t max, char *err,
                       size_t errlen);
/* Send sig to a background job's processes (TERM: KILL after the grace).  0, 1 when
 * no process of it runs, -1 with err. */
int hs_conn_shell_job_signal(struct hs_conn *cn, uint64_t id, int sig, char *err, size_t errlen);
/* The path, inside the sandbox, of a background job's output log (stream 1 or 2). */
void hs_conn_shell_job_log(const struct hs_conn *cn, uint64_t id, int stream, char *path,
                           size_t len);
/* At most limit bytes of a background job's log (stream 1 or 2) from offset off: *buf (free
 * it; NULL when empty) holds the whole log read (*total bytes), the bytes are *buf + *from,
 * *take long.  0, or -1 with err. */
int hs_conn_shell_job_read(struct hs_conn *cn, const struct hs_shell_job *j, int stream,
                           uint64_t off, size_t limit, void **buf, size_t *from, size_t *take,
                           size_t *total, char *err, size_t errlen);

/* A range of a command's kept output (hs_exec_opts.keep_bytes). */
struct hs_output_range {
	char *data;      /* malloc'd (free it) */
	size_t len;
	uint64_t offset; /* of data's first byte: the asked offset, or the next one still kept */
	uint64_t total;  /* bytes the stream produced (so far, unless ended) */
	int ended;       /* the command has ended */
};
/*
 * Read at most max bytes of stream (1, 2) of the command with runner id id
 * (hs_exec_out.runner_id) from offset off, from what the session's runner
 * kept.  0 with *r filled (r->len 0: off is at or past the end), 1 when the
 * runner keeps no output of that command (evicted, or never kept), -1 with
 * err.
 */
int hs_conn_output_read(struct hs_conn *cn, uint64_t id, int stream, uint64_t off, size_t max,
                        struct hs_output_range *r, char *err, size_t errlen);
/*
 * Have the runner write the command's whole kept output to files in its
 * runtime directory (inside the sandbox); their paths go to out_path and
 * err_path (len bytes each).  0, or -1 with err (not kept, partly evicted,
 * still running).
 */
int hs_conn_output_spill(struct hs_conn *cn, uint64_t id, char *out_path, char *err_path, size_t len,
                         char *err, size_t errlen);

/* A command's stdin given whole in memory (serve's and mcp's "stdin"). */
struct hs_mem_input {
	const char *data;
	size_t len, off;
};
/* The next bytes of in, copied into buf: a sink's input callback's work (0 at the end). */
long hs_mem_input_read(struct hs_mem_input *in, void *buf, size_t len);

/* Put a whole file into the sandbox / get one out (len bounded by max). */
int hs_conn_put(struct hs_conn *cn, const char *path, uint32_t mode, const void *buf, size_t len,
                int durable, char *err, size_t errlen);
int hs_conn_get(struct hs_conn *cn, const char *path, size_t max, void **buf, size_t *len,
                char *err, size_t errlen);

/* exec-direct.c: the same, for environments without a runner (exec mode). */
int hs_conn_exec_direct(struct hs_conn *cn, const struct hs_exec_opts *o,
                        const struct hs_sink_ops *sink, struct hs_exec_out *out, char *err,
                        size_t errlen);
int hs_conn_put_direct(struct hs_conn *cn, const char *path, uint32_t mode, const void *buf,
                       size_t len, char *err, size_t errlen);
int hs_conn_get_direct(struct hs_conn *cn, const char *path, size_t max, void **buf, size_t *len,
                       char *err, size_t errlen);

#endif /* HS_EXEC_H */
