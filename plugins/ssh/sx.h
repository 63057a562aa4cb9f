/* SPDX-License-Identifier: MIT */
/*
 * sx.h - internals of the ssh backend: the state of an environment, its
 * streams and its I/O thread, shared by the connection (ssh-conn.c), the
 * runner's install (ssh-install.c), exec per channel (ssh-exec.c) and the
 * I/O thread and ops (ssh.c).  Nothing here is exported: the plugin is
 * built with -fvisibility=hidden and exports only hs_backend_v1.
 */
#ifndef HS_SX_H
#define HS_SX_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <libssh2.h>
#include <libssh2_sftp.h>

#include <hs/backend.h>

#define SX_MAX_STREAMS 16
#define SX_BUF (128 * 1024)
#define SX_RETRIES 5

struct sx_state {
	const struct hs_host_v1 *host;
};

struct sx_stream {
	int used;
	int fd;            /* our end of the socketpair (stdin+stdout) */
	int errfd;         /* exec mode: where the channel's stderr goes; -1 otherwise */
	LIBSSH2_CHANNEL *ch;
	char out[SX_BUF];  /* channel -> fd, not yet written */
	size_t outlen, outoff;
	char eout[SX_BUF]; /* channel stderr -> errfd, not yet written */
	size_t eoutlen, eoutoff;
	char in[SX_BUF];   /* fd -> channel, not yet sent */
	size_t inlen, inoff;
	int fd_eof, eof_sent, ch_eof, closing;
	int is_exec;
	int exited, exit_code; /* exec mode: filled once the channel closed (-1: lost) */
	char errline[256]; /* last line the remote wrote on stderr (runner mode) */
	size_t errfill;
};

struct sx_env;
typedef int32_t (*sx_job_fn)(struct sx_env *env, void *arg, char *err);

struct sx_env {
	struct sx_state *st;
	/* configuration */
	char host[256], user[128], identity[1024], known_hosts[1024], policy[16];
	int port, connect_timeout_s, keepalive_s, use_runner;
	int64_t idle;
	char env_name[128];
	/* what the connection found out */
	char arch[64], rshell[64], rdir[512], rrunner[1024], rhome[1024], rtimeout[8];
	char runner_hex[65];
	long ruid;
	int runner_ok, uploaded, ever_connected, no_sftp;
	int oneshot_ok; /* exec mode under the uploaded `hs-runner --exec` (rrunner) */
	int attach_only; /* HS_SPEC_ATTACH: the remote directory must exist; create nothing */
	/* the thread and its job slot */
	pthread_t thr;
	int thr_started, quit;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int wake[2];
	sx_job_fn job;
	void *job_arg;
	int job_done;
	int32_t job_rc;
	char job_err[HS_ERR_MAX];
	/* owned by the thread */
	int sock;
	LIBSSH2_SESSION *s;
	LIBSSH2_SFTP *sftp;
	struct sx_stream streams[SX_MAX_STREAMS];
	uint64_t moved; /* bytes-moved events, for the pump loop */
	/* cancel() of exec */
	pthread_mutex_t cmu;
	uint64_t cur_exec, early_cancel_id;
	int early_cancel;
	int cancel_fd; /* write end: wakes the exec waiter */
};

/* helpers (ssh-conn.c) */
/* Log through the host. */
void sx_log(struct sx_env *env, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* libssh2's last error message for s, never NULL. */
const char *sx_lasterr(LIBSSH2_SESSION *s);
/* Nonzero when the session's last error is a transport failure (the connection is gone). */
int sx_transport_err(LIBSSH2_SESSION *s);
/* Single-quote s for a POSIX shell; its length, or -1 when it does not fit in cap. */
int sx_quote(char *out, size_t cap, const char *s);
/* Nonzero when the key at path (or its .pub) is an RSA key. */
int sx_is_rsa_key(const char *path);
/* Milliseconds on the monotonic clock. */
uint64_t sx_now(void);
/* Sleep ms milliseconds (through signals). */
void sx_sleep_ms(long ms);

/* the connection (ssh-conn.c) */
/* Drop the connection: every stream's socket is closed. */
void sx_drop(struct sx_env *env, int graceful);
/* Run one short command over its own channel (blocking mode): send in (may
 * be NULL), collect stdout into out and the last stderr line into eout. */
int32_t sx_run_in(struct sx_env *env, const char *cmd, const void *in, size_t inlen, char *out,
                  size_t cap, char *eout, size_t ecap, int *code, char *err);
int32_t sx_run(struct sx_env *env, const char *cmd, char *out, size_t cap, int *code, char *err);
/* Connect, verify the host key, authenticate, find the architecture and
 * install the runner.  On failure the connection is dropped. */
int32_t sx_connect(struct sx_env *env, char *err);
/* Connected, or reconnect with bounded retries and backoff (transport errors only). */
int32_t sx_ensure(struct sx_env *env, char *err);

/* installing the runner (ssh-install.c) */
/* Check one remote directory over SFTP (create: mkdir it first): a real
 * directory of ours (or root's), not writable by group or others. */
int32_t sx_check_dir(struct sx_env *env, const char *path, int create, int exact0700, char *err);
/* The runner in ~/.cache/hs/runner/<sha256>, over SFTP. */
int32_t sx_install_runner(struct sx_env *env, char *err);
/* The same without the sftp subsystem, through sh. */
int32_t sx_install_shell(struct sx_env *env, char *err);

/* the I/O thread and ops (ssh.c) */
/* Free a used stream slot: its fds closed, its channel freed. */
void sx_stream_free(struct sx_env *env, struct sx_stream *sm);
/* Hand a job to the I/O thread and wait for it. */
int32_t sx_call(struct sx_env *env, sx_job_fn fn, void *arg, char *err);
/* Open a channel running cmd in a free stream slot. */
int32_t sx_open_channel(struct sx_env *env, const char *cmd, struct sx_stream **out, char *err);

/* exec per channel (ssh-exec.c): the exec and cancel ops */
int32_t sx_exec(void *envp, const struct hs_exec_req *req, struct hs_exec_result *res, char *err);
int32_t sx_cancel(void *envp, uint64_t exec_id);

#endif
