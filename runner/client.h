/* SPDX-License-Identifier: MIT */
/* hs-runner client: the core's side of one runner stream.
 *
 * A stream is a file descriptor connected to `hs-runner --attach` (through
 * whatever transport a backend uses) or directly to the daemon's socket.
 * Sending functions may be called from any thread; they serialise on an
 * internal mutex and block until the frame is written.  Events are read by
 * one thread with hsr_client_next().  Every function returns 0 on success
 * and -1 on failure with errno set, unless its comment says otherwise.
 * The protocol is described in hs-runner(7).
 */
#ifndef HSR_CLIENT_H
#define HSR_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "hmac.h"
#include "proto.h"

struct hsr_client;

/* hsr_client_open() flag: fd leads to an `hs-runner --attach`, which takes
 * the key before anything else (never set it for a direct connection to a
 * daemon's socket: whatever listens there would get the key). */
#define HSR_CLIENT_PROXY 0x1u

/* Takes ownership of fd (it is closed by hsr_client_free(), also when this
 * call fails) and performs the handshake: HELLO, offering protocol versions
 * HSR_PROTO_MIN..HSR_PROTO_MAX, and the mutual challenge-response over the
 * session key (HSR_KEY_LEN bytes), so that both sides know the other holds
 * it; a daemon started without a key is given this one.  On failure a
 * one-line message is written to err.  Returns 0 and sets *out, or -1. */
int hsr_client_open(int fd, const uint8_t key[HSR_KEY_LEN], unsigned flags,
		    struct hsr_client **out, char *err, size_t errlen);
/* Closes the stream's descriptor and frees the client.  NULL is allowed. */
void hsr_client_free(struct hsr_client *c);
/* Returns the descriptor, for poll(); readable means hsr_client_next() has
 * something to read (buffered events may also be pending: see
 * hsr_client_pending()). */
int hsr_client_fd(const struct hsr_client *c);
/* Returns 1 when a whole event is already buffered, so that a caller
 * polling hsr_client_fd() must not sleep. */
int hsr_client_pending(struct hsr_client *c);
/* Returns the protocol version agreed in the handshake. */
uint32_t hsr_client_version(const struct hsr_client *c);
/* Returns the daemon's software version string from its HELLO. */
const char *hsr_client_peer_version(const struct hsr_client *c);
/* The daemon instance from its HELLO ("" if it names none): a different
 * instance after a re-attach means the daemon was restarted. */
const char *hsr_client_instance(const struct hsr_client *c);

/* One command to run.  argv[0] is looked up in the PATH of envp; envp is
 * the command's complete environment (NULL means empty); cwd NULL or ""
 * means "/".  deadline_ms is relative to the daemon receiving the EXEC, 0
 * means none; grace_ms is the time between TERM and KILL, negative means
 * the default of 2000.  head_bytes/tail_bytes bound each output stream
 * (keep the first head and the last tail bytes); both 0 means lossless,
 * where the command is throttled instead.  initial_credit is how many
 * output bytes the daemon may send before the first CREDIT
 * (HSR_CREDIT_UNLIMITED: never throttle on credit). */
struct hsr_exec_spec {
	uint64_t id;
	const char *const *argv;
	const char *const *envp;
	const char *cwd;
	int64_t deadline_ms;
	int64_t grace_ms;
	int stdin_pipe;
	int want_state;
	int merge_env;  /* envp overrides the daemon's environment (HSR_EXEC_MERGE_ENV) */
	int session;    /* run in the session shell (HSR_EXEC_SESSION; argv as documented there) */
	int report_wait; /* ask for WAITING frames (HSR_EXEC_REPORT_WAIT) */
	uint16_t pty_rows, pty_cols; /* both non-zero: run on a pseudo-terminal of this size
	                                (HSR_EXEC_PTY; needs protocol HSR_PROTO_PTY) */
	uint64_t head_bytes, tail_bytes;
	uint64_t initial_credit;
	uint64_t keep_bytes; /* non-zero: keep the whole output for READ and SPILL after the
	                        command (HSR_EXEC_KEEP), within this budget for the daemon */
};

/* Starts a command.  The id is the caller's and must not be in use by a
 * running or unacknowledged command; a refusal arrives as an ERROR event
 * carrying the id. */
int hsr_client_exec(struct hsr_client *c, const struct hsr_exec_spec *spec);
/* Sends stdin bytes (chunked internally) to a command started with
 * stdin_pipe. */
int hsr_client_stdin(struct hsr_client *c, uint64_t id, const void *buf, size_t len);
/* Closes the command's stdin once the buffered bytes are written. */
int hsr_client_stdin_eof(struct hsr_client *c, uint64_t id);
/* Sets a PTY command's window size (RESIZE; protocol HSR_PROTO_PTY). */
int hsr_client_resize(struct hsr_client *c, uint64_t id, uint16_t rows, uint16_t cols);
/* Sends signal signo to the command's process group. */
int hsr_client_signal(struct hsr_client *c, uint64_t id, int signo);
/* Cancels a command: TERM, the grace period, KILL, as at the deadline.
 * The EXIT then has cancelled set. */
int hsr_client_cancel(struct hsr_client *c, uint64_t id);
/* Acknowledges that the caller has durably taken stream's bytes below
 * offset (stream 1 stdout, 2 stderr, 3 state), so the daemon may forget
 * them; stream 0 acknowledges the EXIT and forgets the command. */
int hsr_client_ack(struct hsr_client *c, uint64_t id, int stream, uint64_t offset);
/* hsr_client_ack() for every stream s (1..3) with a non-zero offset[s],
 * and hsr_client_credit() when credit is non-zero, in one write: what a
 * reader that batches its acknowledgements sends. */
int hsr_client_taken(struct hsr_client *c, uint64_t id, const uint64_t offset[4], uint64_t credit);
/* Allows the daemon to send bytes more bytes of output of command id
 * (adds to the remaining credit; HSR_CREDIT_UNLIMITED lifts the limit). */
int hsr_client_credit(struct hsr_client *c, uint64_t id, uint64_t bytes);
/* Takes over every command of the daemon.  The reply is an HSR_EV_ATTACH
 * event listing them; each command's credit is reset to zero, so the
 * caller grants credit for those it wants resent. */
int hsr_client_attach(struct hsr_client *c);
/* As hsr_client_attach(), but every command gets credit bytes of credit. */
int hsr_client_attach_credit(struct hsr_client *c, uint64_t credit);
/* Writes a whole file at the absolute path (through a temporary file and a
 * rename, so readers never see a partial file).  The result arrives as an
 * HSR_EV_OK or HSR_EV_ERROR event with this id. */
int hsr_client_put_file(struct hsr_client *c, uint64_t id, const char *path,
			uint32_t mode, const void *buf, size_t len);
/* As hsr_client_put_file(), with HSR_PUT_NOSYNC in flags_final to skip the
 * fsyncs: the file still appears atomically but may not survive a crash. */
int hsr_client_put_file_flags(struct hsr_client *c, uint64_t id, const char *path,
			      uint32_t mode, const void *buf, size_t len, uint32_t flags_final);
/* Reads the regular file at the absolute path; it arrives as
 * HSR_EV_FILE_DATA events, the last with final set, or an HSR_EV_ERROR. */
int hsr_client_get_file(struct hsr_client *c, uint64_t id, const char *path);
/* Asks for the session shell's background jobs; the daemon answers with an
 * HSR_EV_JOBS carrying token. */
int hsr_client_jobs(struct hsr_client *c, uint64_t token);
/* Reads back at most max bytes of kept output of command id (HSR_EXEC_KEEP)
 * from offset; the daemon answers with an HSR_EV_RANGE carrying token as
 * its id, or an HSR_EV_ERROR (HSR_E_NOENT: not kept, or evicted). */
int hsr_client_read(struct hsr_client *c, uint64_t token, uint64_t id, int stream,
		    uint64_t offset, uint32_t max);
/* Asks the daemon to write command id's kept output to out/ID.stdout and
 * out/ID.stderr in its runtime directory; answered by HSR_EV_OK or
 * HSR_EV_ERROR with token as the id. */
int hsr_client_spill(struct hsr_client *c, uint64_t token, uint64_t id);
/* Sends a PING; the daemon answers with an HSR_EV_PONG carrying token. */
int hsr_client_ping(struct hsr_client *c, uint64_t token);

/* Shuts the daemon down: every command is cancelled as at its deadline,
 * with grace_ms between TERM and KILL (negative: each command's own
 * grace), and once no process of any command is left the daemon removes
 * its socket and lock, answers, and exits.  Blocks until that answer
 * (at most the grace plus 30 s), reading the stream itself: call it from
 * the thread that reads events; events arriving meanwhile are discarded,
 * and no PUT with id 0 may be in flight.  Returns 0 once the daemon is
 * gone, or -1 with errno ENOTSUP (an older daemon without SHUTDOWN; it
 * keeps running), EIO (the daemon answered with an error: processes
 * outlived the grace period by 5 s; it exited anyway), ETIMEDOUT, or that
 * of a broken stream (EPIPE: closed without an answer). */
int hsr_client_shutdown(struct hsr_client *c, int64_t grace_ms);

/* The egress endpoint (hs-runner(7), "Egress").  Asks the daemon to listen
 * on 127.0.0.1 in the sandbox and tunnel each connection to this stream;
 * the answer is an HSR_EV_EGRESS event with token and the port. */
int hsr_client_egress_listen(struct hsr_client *c, uint64_t token);
/* Tunnelled connections: EGRESS_CONN, EGRESS_DATA, EGRESS_EOF and
 * EGRESS_CLOSE frames are handed to fn (type, conn id, bytes) by whichever
 * thread calls hsr_client_next(), instead of being returned as events.  fn
 * must not block and must not call hsr_client_next(). */
struct hsr_egress_ops {
	void *ctx;
	void (*fn)(void *ctx, int type, uint64_t conn, const void *data, size_t len);
};
void hsr_client_set_egress(struct hsr_client *c, const struct hsr_egress_ops *ops);
/*
 * For the handler's own thread, so that tunnelled connections move while
 * nobody calls hsr_client_next() (between commands): when the caller has
 * left the stream alone for idle_ms, hands the egress frames already there
 * to fn without blocking, and stops at the first other frame, which stays
 * for hsr_client_next().  Returns 1 when the caller of this should poll
 * hsr_client_fd() for more and call again, 0 when not (the stream is in
 * use, holds another frame or ended): call again in a while.
 */
int hsr_client_pump(struct hsr_client *c, int idle_ms);
/* Bytes for a tunnelled connection (chunked), from any thread. */
int hsr_client_egress_data(struct hsr_client *c, uint64_t conn, const void *buf, size_t len);
/* len bytes waiting in the pipe pipe_fd for conn, as one EGRESS_DATA frame
 * moved by splice(2) (no copy through this process where the stream allows
 * it); from any thread.  On -1 the pipe may still hold some of them. */
int hsr_client_egress_splice(struct hsr_client *c, uint64_t conn, int pipe_fd, size_t len);
/* No more bytes for conn (EGRESS_EOF), or close it (close_it: EGRESS_CLOSE). */
int hsr_client_egress_end(struct hsr_client *c, uint64_t conn, int close_it);

enum hsr_event_type {
	HSR_EV_OUTPUT = 1, /* id, stream (1 or 2), offset, data/len */
	HSR_EV_STATE,      /* id, stream 3, offset, data/len */
	HSR_EV_EXIT,       /* id, exit_code, timed_out, cancelled, dropped, total */
	HSR_EV_ERROR,      /* id (0: not about a command), code, message */
	HSR_EV_ATTACH,     /* attach, nattach */
	HSR_EV_FILE_DATA,  /* id, offset, data/len, final */
	HSR_EV_OK,         /* id: a PUT completed */
	HSR_EV_PONG,       /* token */
	HSR_EV_JOBS,       /* token, data/len: njobs entries (hsr_jobs_entry_next()) */
	HSR_EV_WAITING,    /* id, final: 1 blocked reading stdin, 0 no longer */
	HSR_EV_EGRESS,     /* token, port: the egress endpoint listens (EGRESS_LISTEN) */
	HSR_EV_RANGE       /* id (the READ's token), stream, offset, data/len, token: the
	                      stream's total so far, final: the command has ended */
};

struct hsr_event {
	int type;
	uint64_t id;
	int stream;
	uint64_t offset;
	const void *data;
	size_t len;
	int exit_code;       /* the exit status, or 128+N after signal N */
	int timed_out;
	int cancelled;
	int final;           /* FILE_DATA: the last chunk; WAITING: waiting (1) or not (0) */
	uint64_t dropped[3]; /* indexed by stream: bytes dropped by head/tail bounds */
	uint64_t total[4];   /* indexed by stream: bytes the command produced */
	const struct hsr_attach_entry *attach;
	size_t nattach;
	uint64_t token;      /* PONG, JOBS */
	uint32_t njobs;      /* JOBS */
	int shell_restarted; /* EXIT: the session shell lost its state (reason says why) */
	unsigned jobs_left;  /* EXIT: processes the command left running (session shell) */
	char reason[200];
	uint32_t port;       /* EGRESS: the endpoint's port on 127.0.0.1 inside */
	int code;            /* ERROR: an enum hsr_error_code */
	char message[256];   /* ERROR */
};

/* Reads the next event, waiting at most timeout_ms (-1: forever).
 * Returns 1 with *ev filled (its pointers stay valid until the next call),
 * 0 on timeout, or -1 on end of stream or error with a message in err. */
int hsr_client_next(struct hsr_client *c, struct hsr_event *ev, int timeout_ms,
		    char *err, size_t errlen);

#endif
