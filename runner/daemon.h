/* SPDX-License-Identifier: MIT */
/* The daemon's state, shared by daemon.c, cmd.c and files.c. */
#ifndef HSR_DAEMON_H
#define HSR_DAEMON_H

#include <poll.h>

#include "hmac.h"
#include "runner.h"

struct hsr_conn;

struct hsr_cmd {
	struct hsr_cmd *next;
	uint64_t id;
	struct hsr_conn *owner; /* the stream output goes to; NULL while detached */
	pid_t shim;
	int pipe_fd[4];         /* read ends by stream (1 stdout, 2 stderr, 3 state); -1 closed */
	int stdin_fd;           /* write end, -1 when closed or /dev/null */
	int ctl_fd;             /* control pipe to the shim */
	int status_fd;          /* status pipe from the shim */
	struct hsr_buf stdin_buf;
	size_t stdin_pos;       /* bytes of stdin_buf already written */
	struct hsr_conn *stdin_conn; /* the stream STDIN frames last came from */
	int64_t stdin_moved_at; /* when the pipe last took bytes */
	int stdin_eof;
	struct hsr_spool sp[4];
	uint64_t credit;
	int done;               /* the shim reported the top process's exit */
	int64_t drain_until;    /* after done: detach pipes idle past this */
	struct hsr_shim_status st;
	int exit_sent;          /* EXIT queued on the current owner */
	int64_t grace_ms;       /* from the EXEC */
	int watch_shim;         /* shutdown: poll ctl_fd to see the shim exit */
	/* A command of the session shell (shell.c) instead of a shim. */
	int session;
	struct hsr_exec_req *req; /* until it has been fed to the shell */
	int hold_fd;            /* the stdin FIFO held open until the shell opened it */
	int sync_fd;            /* readable once the shell opened its stdin */
	uint8_t restarted;      /* the shell lost its state during this command */
	char reason[200];
	uint32_t jobs_left;     /* processes the command left running */
	int report_wait;        /* the EXEC asked for WAITING frames */
	int waiting;            /* the last WAITING sent said 1 */
	int64_t stop_at;        /* one-shot: its deadline (0: none), or when it was told to
	                           stop; from then on what WAITING said stands */
	/* A command on a pseudo-terminal (HSR_EXEC_PTY, pty.c). */
	int pty;
	int pty_fd;             /* the master, for RESIZE, SIGNAL and WAITING; -1 none yet */
	unsigned long pty_rdev; /* the slave's device number */
	uint16_t rows, cols;    /* the window size, also before the terminal exists */
	int64_t pty_deadline_ms;/* relative, from the EXEC */
	int pty_ready;          /* session: the state dump for its shell was taken */
	char *pty_cmd;          /* session: the command itself (req->argv[1] runs the dump) */
	char *pty_feed;         /* session: the dump command fed to the session shell */
	int keep;               /* HSR_EXEC_KEEP: its output is kept after it (keep.c) */
	int spilled;            /* SPILL wrote its output to files */
};

/* The kept output of a command whose EXIT was acknowledged (keep.c). */
struct hsr_kept {
	struct hsr_kept *next;  /* newer */
	uint64_t id;
	struct hsr_spool sp[3]; /* stdout, stderr */
	int spilled;
};

struct hsr_put {
	struct hsr_put *next;
	uint64_t id;
	int fd;
	int dirfd; /* the target's directory: the temporary file and rename are relative to it */
	char *tmp; /* the temporary file's name in dirfd */
	char *path;
	int failed;
};

struct hsr_get {
	struct hsr_get *next;
	uint64_t id;
	int fd;
	uint64_t offset;
};

struct hsr_conn {
	struct hsr_conn *next;
	int fd;
	int hello;      /* handshake done */
	int closing;    /* close once out is flushed */
	int want_stop;  /* sent SHUTDOWN: answer OK when everything is dead */
	int challenged; /* a CHALLENGE arrived; nonce_c and nonce_d are set */
	int authed;     /* the peer proved the session key (hs-runner(7)) */
	uint8_t nonce_c[HSR_NONCE_LEN], nonce_d[HSR_NONCE_LEN];
	struct hsr_decoder dec;
	struct hsr_buf out;
	struct hsr_put *puts;
	struct hsr_get *gets;
	struct hsr_cmd *rr; /* where the output round robin resumes */
};

struct hsr_daemon {
	struct hsr_rundir *rd;
	int listen_fd;
	int idle_s;
	int64_t idle_since;
	struct hsr_conn *conns;
	struct hsr_cmd *cmds;
	unsigned seq;
	int stopping;          /* a SHUTDOWN arrived */
	int64_t stop_deadline; /* give up waiting for shims after this */
	int keyed;             /* key holds the session key */
	int sealed;            /* a stream authenticated: no KEY is taken any more */
	uint8_t key[HSR_KEY_LEN];
	struct hsr_shell *shell; /* the session shell, once a session command came */
	int sigfd;               /* SIGCHLD */
	int64_t next_wait_check; /* when one-shot commands are next checked for waiting input */
	struct hsr_egress *egress; /* the egress endpoint, once EGRESS_LISTEN came (egress.c) */
	struct hsr_kept *kept;   /* kept output of finished commands, oldest first */
	uint64_t keep_max;       /* the budget for kept output, from the last EXEC with KEEP */
};

/* daemon.c */
void hsr_conn_error(struct hsr_conn *c, uint64_t id, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* cmd.c */
struct hsr_cmd *hsr_cmd_find(struct hsr_daemon *d, uint64_t id);
void hsr_cmd_exec(struct hsr_daemon *d, struct hsr_conn *c, const uint8_t *p, size_t len);
void hsr_cmd_stdin(struct hsr_cmd *cmd, struct hsr_conn *c, const void *p, size_t n, int eof);
/* Writes stdin kept while a session-shell command waited to start. */
void hsr_cmd_stdin_kick(struct hsr_cmd *cmd);
void hsr_cmd_control(struct hsr_daemon *d, struct hsr_cmd *cmd, uint8_t op, uint32_t arg);
/* Shutdown: cancels the command (grace in ms, or HSR_GRACE_DEFAULT) also
 * when its top process has exited, and watches for its shim to exit. */
void hsr_cmd_stop(struct hsr_daemon *d, struct hsr_cmd *cmd, uint32_t grace);
/* Returns 1 once the command's shim (and so all its processes) is gone. */
int hsr_cmd_dead(const struct hsr_cmd *cmd);
void hsr_cmd_ack(struct hsr_daemon *d, struct hsr_cmd *cmd, int stream, uint64_t off);
void hsr_cmd_attach(struct hsr_daemon *d, struct hsr_conn *c, uint64_t credit);
/* Returns the time until which the command's pending stdin holds back
 * reading c (HSR_STDIN_SOFT, HSR_STDIN_STALL_MS), or -1 when it does not. */
int64_t hsr_cmd_stdin_hold(const struct hsr_cmd *cmd, const struct hsr_conn *c, int64_t now);
/* Adds the command's descriptors that need polling; returns how many. */
int hsr_cmd_pollfds(struct hsr_cmd *cmd, struct pollfd *pfd, int max);
/* Handles readiness on the command's descriptors and timers. */
void hsr_cmd_io(struct hsr_daemon *d, struct hsr_cmd *cmd, const struct pollfd *pfd, int n);
/* Queues output and EXIT frames for a connection within its limits. */
void hsr_cmd_pump(struct hsr_daemon *d, struct hsr_conn *c);
/* Returns the next time (ms) a command needs attention, or -1. */
int64_t hsr_cmd_wake(const struct hsr_cmd *cmd);
void hsr_cmd_free(struct hsr_cmd *cmd);

/* shell.c: the session shell (hs-runner(7), "Session shell"). */
struct hsr_shell;
/* Queues cmd (calloc'd, linked, streams unset) to run req in the shell;
 * takes req. */
void hsr_shell_exec(struct hsr_daemon *d, struct hsr_conn *c, struct hsr_exec_req *req,
		    struct hsr_cmd *cmd);
void hsr_shell_control(struct hsr_daemon *d, struct hsr_cmd *cmd, uint8_t op, uint32_t arg);
/* After a finished command's output drained: keep reading what its
 * background jobs write into a log instead of closing the pipe. */
void hsr_shell_keep_pipe(struct hsr_daemon *d, struct hsr_cmd *cmd, int s);
int hsr_shell_npoll(struct hsr_daemon *d);
int hsr_shell_pollfds(struct hsr_daemon *d, struct pollfd *pfd, int max);
void hsr_shell_io(struct hsr_daemon *d, const struct pollfd *pfd, int n);
/* A child was reaped. */
void hsr_shell_reaped(struct hsr_daemon *d, pid_t pid, int status);
/* Deadlines and checks; returns the next time to look, or -1. */
int64_t hsr_shell_tick(struct hsr_daemon *d);
/* Sends WAITING for one-shot commands that asked for it; returns when to
 * look again, or -1 when none asked. */
int64_t hsr_waiting_tick(struct hsr_daemon *d);
/* Returns 1 while the shell or any of its processes lives. */
int hsr_shell_alive(struct hsr_daemon *d);
/* Session close: sig to the shell and every process it started. */
void hsr_shell_stop(struct hsr_daemon *d, int sig);
void hsr_shell_free(struct hsr_daemon *d);
/* JOBS: the background jobs completed commands left, answered on c. */
void hsr_shell_jobs(struct hsr_daemon *d, struct hsr_conn *c, uint64_t token);
/* SIGNAL to a background job's processes (TERM: then KILL after the
 * grace); answers OK, or ERROR 4 when no such job lives. */
void hsr_shell_job_signal(struct hsr_daemon *d, struct hsr_conn *c, uint64_t id, int sig);

/* egress.c: the egress endpoint (hs-runner(7), "Egress"). */
struct hsr_egress;
struct hsr_msg;
/* EGRESS_LISTEN from c: listen (once) on 127.0.0.1 and make c the stream
 * connections are tunnelled to; answers with the port. */
void hsr_egress_listen(struct hsr_daemon *d, struct hsr_conn *c, uint64_t token);
/* EGRESS_DATA, EGRESS_EOF or EGRESS_CLOSE from c. */
void hsr_egress_frame(struct hsr_daemon *d, struct hsr_conn *c, const struct hsr_msg *m);
/* CREDIT for a tunnelled connection (id with HSR_EGRESS_ID_BIT) from c. */
void hsr_egress_credit(struct hsr_daemon *d, struct hsr_conn *c, uint64_t id, uint64_t bytes);
/* The time until which a connection's backlog holds back reading c, or -1. */
int64_t hsr_egress_hold(const struct hsr_daemon *d, const struct hsr_conn *c, int64_t now);
int hsr_egress_npoll(const struct hsr_daemon *d);
int hsr_egress_pollfds(struct hsr_daemon *d, struct pollfd *pfd, int max);
void hsr_egress_io(struct hsr_daemon *d, const struct pollfd *pfd, int n);
/* The stream c is closing: its connections go with it. */
void hsr_egress_conn_gone(struct hsr_daemon *d, struct hsr_conn *c);
void hsr_egress_free(struct hsr_daemon *d);

/* pty.c: commands on a pseudo-terminal. */
/* Starts argv on a new terminal of cmd's size under a shim; cmd gets its
 * descriptors (the master as stream 1 and as stdin).  Returns 0, or -1
 * with a one-line message in err. */
int hsr_pty_spawn(struct hsr_daemon *d, struct hsr_cmd *cmd, char **argv, char **envp,
		  int merge_env, const char *cwd, char *err, size_t errlen);
void hsr_pty_resize(struct hsr_cmd *cmd, uint16_t rows, uint16_t cols);
/* Sends sig to the terminal's foreground process group; returns 0, or -1
 * when there is none (the caller signals the command instead). */
int hsr_pty_signal(struct hsr_cmd *cmd, int sig);
/* The terminal's end-of-file character (VEOF). */
uint8_t hsr_pty_veof(const struct hsr_cmd *cmd);
/* 1 when the foreground process group blocks reading the terminal with
 * nothing of ours pending. */
int hsr_pty_waiting(const struct hsr_cmd *cmd);
/* Session: the PTY command, now that its shell's state is dumped into
 * RUNDIR/sh.pty, runs as `SHELL -c '. FILE'` on its terminal (a one-shot
 * command from here on).  On failure the command ends with the reason. */
void hsr_pty_from_session(struct hsr_daemon *d, struct hsr_cmd *cmd, const char *shell,
			  char **envp, const char *agent_trap);
/* Removes a session PTY command's files. */
void hsr_pty_cleanup(struct hsr_daemon *d, struct hsr_cmd *cmd);

/* shell.c: append s single-quoted for the shell / as it is. */
void hsr_put_sq(struct hsr_buf *b, const char *s);
void hsr_put_s(struct hsr_buf *b, const char *s);
/* shell.c: 1 when process pid is blocked in read() on a descriptor whose
 * file has inode ino (ino 0: any) or, rdev non-zero, is that device. */
int hsr_proc_reading(pid_t pid, unsigned long ino, unsigned long rdev);

/* keep.c: kept output (HSR_EXEC_KEEP, READ, SPILL). */
/* A finished command's EXIT was acknowledged: its kept output joins the list. */
void hsr_keep_adopt(struct hsr_daemon *d, struct hsr_cmd *cmd);
/* Evicts or trims kept output until it fits the budget. */
void hsr_keep_enforce(struct hsr_daemon *d);
void hsr_keep_read(struct hsr_daemon *d, struct hsr_conn *c, const struct hsr_msg *m);
void hsr_keep_spill(struct hsr_daemon *d, struct hsr_conn *c, const struct hsr_msg *m);
void hsr_keep_free_all(struct hsr_daemon *d);

/* files.c */
void hsr_files_put(struct hsr_daemon *d, struct hsr_conn *c, const struct hsr_msg *m);
void hsr_files_get(struct hsr_conn *c, const struct hsr_msg *m);
void hsr_files_pump(struct hsr_conn *c);
void hsr_files_drop(struct hsr_conn *c);

#endif
