/* SPDX-License-Identifier: MIT */
/* hs-runner internals shared between the daemon's files. */
#ifndef HSR_RUNNER_H
#define HSR_RUNNER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

/* Lossless spool: stop reading a command's pipe when this many bytes are
 * spooled but not yet sent, or this many not yet acknowledged. */
#define HSR_UNSENT_MAX (4u * 1024u * 1024u)
#define HSR_UNACKED_MAX (64u * 1024u * 1024u)
/* Stop generating data frames for a connection above this much queued. */
#define HSR_OUT_HIGH (256u * 1024u)
/* Stdin backpressure: above this much pending stdin the daemon stops
 * reading the sending stream for as long as the command's pipe keeps
 * taking bytes (it took some within the stall time). */
#define HSR_STDIN_SOFT (1024u * 1024u)
#define HSR_STDIN_STALL_MS 200
/* How long pipes are drained after the command's top process exited. */
#define HSR_DRAIN_MS 100
#define HSR_DEFAULT_GRACE_MS 2000
#define HSR_DEFAULT_IDLE_S 600

int64_t hsr_now_ms(void);
/* Writes "hs-runner: MESSAGE" to stderr. */
void hsr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* proctab.c: a process as /proc shows it (start: in clock ticks since boot). */
struct hsr_proc {
	pid_t pid, ppid;
	unsigned long long start;
};
/* Every process's pid, parent and start time: the count, the table
 * malloc'd in *out (the caller frees it), or -1. */
int hsr_proc_table(struct hsr_proc **out);
struct hsr_proc *hsr_proc_find(struct hsr_proc *t, int n, pid_t pid);

/* rundir.c: the runtime directory. */
struct hsr_rundir {
	char path[4096];
	char sock[108]; /* fits sun_path by construction */
	int dirfd;
};

/* Creates the directory (0700) when missing and checks it and its whole
 * chain from "/" (dirchain.h): a directory, not a symlink, owned by the
 * effective uid, mode exactly 0700, no ancestor others can write or own,
 * not on a network file system, with room for the socket path.  Returns 0
 * or -1 with a one-line message in err. */
int hsr_rundir_open(struct hsr_rundir *rd, const char *path, char *err, size_t errlen);
void hsr_rundir_close(struct hsr_rundir *rd);
/* Opens and exclusively locks DIR/lock (blocking).  Returns the fd or -1. */
int hsr_rundir_lock(const struct hsr_rundir *rd, char *err, size_t errlen);
/* Removes stray spool files (a daemon killed between creating and
 * unlinking one leaves it behind) and the session shell's files; call
 * only while no daemon runs (or as one exits). */
void hsr_rundir_sweep(const struct hsr_rundir *rd);
/* The address of DIR/sock through the directory's descriptor
 * (/proc/self/fd/N/sock), or its path where /proc does not show it. */
struct sockaddr_un;
void hsr_rundir_sun(const struct hsr_rundir *rd, struct sockaddr_un *sun);
/* Connects to DIR/sock.  Returns the fd or -1 with errno. */
int hsr_rundir_connect(const struct hsr_rundir *rd);
/* Opens /dev/null, or an empty pipe's read end where there is no
 * /dev/null (a bare chroot).  Returns the fd or -1. */
int hsr_open_null(int flags);

/* spool.c: the output of one stream.  The newest bytes, [ring_lo, end),
 * are in a memory ring (at most HSR_RING_MAX); older ones that are still
 * needed were written to the file, offset o at position o; the bytes in
 * [hole_lo, punched) were freed.  Without keep, freed are the
 * bytes that can no longer be sent (acknowledged, or outside the head and
 * tail bounds); with keep (recoverable output, HSR_EXEC_KEEP), everything
 * stays until the daemon's budget trims it (hsr_spool_trim). */
struct hsr_spool {
	int fd;            /* -1 until the first byte */
	uint64_t head, tail; /* bounds of what is sent; both 0 means lossless */
	uint64_t end;      /* bytes produced */
	uint64_t sent;     /* next offset to send */
	uint64_t sent_max; /* highest offset ever sent */
	uint64_t acked;
	uint64_t dropped;  /* bytes discarded without ever being sent */
	uint64_t hole_lo;  /* freed space starts here (head: the head is kept) */
	uint64_t punched;  /* freed space ends here (>= hole_lo) */
	int keep;          /* keep what was sent until trimmed */
	uint8_t *ring;     /* NULL until the first byte */
	size_t ring_cap;
	uint64_t ring_lo;  /* the oldest offset in the ring */
};

/* The memory ring of a spool: output sent and acknowledged while it is in
 * the ring never touches the file. */
#define HSR_RING_MAX (2u * 1024u * 1024u)
/* A stream past this many bytes counts as bulk output: a small read of it
 * is followed by a pause of HSR_BULK_PAUSE_US (cmd.c, read_pipe). */
#define HSR_BULK_BYTES (4u * 1024u * 1024u)
#define HSR_BULK_PAUSE_US 200
/* The size asked for a command's stdout and stderr pipes. */
#define HSR_PIPE_SIZE (1024u * 1024u)

void hsr_spool_init(struct hsr_spool *sp, uint64_t head, uint64_t tail);
void hsr_spool_close(struct hsr_spool *sp);
/* Appends bytes produced by the command.  Returns 0 or -1 with errno. */
int hsr_spool_append(struct hsr_spool *sp, int dirfd, const void *p, size_t n);
/* Returns the number of bytes ready to send (after skipping discarded ones). */
uint64_t hsr_spool_unsent(struct hsr_spool *sp);
/* Reads up to max unsent bytes at *off and advances.  Returns the count
 * (0 when nothing is ready) or -1 with errno. */
ssize_t hsr_spool_take(struct hsr_spool *sp, void *buf, size_t max, uint64_t *off);
void hsr_spool_ack(struct hsr_spool *sp, uint64_t off);
/* Restarts sending from the acknowledged offset (a new attach). */
void hsr_spool_rewind(struct hsr_spool *sp);
/* Returns 1 when the command must not be read from until bytes go out. */
int hsr_spool_full(const struct hsr_spool *sp);
/* Bytes the spool's file holds. */
uint64_t hsr_spool_stored(const struct hsr_spool *sp);
/* Frees up to want bytes of kept output that can no longer be sent,
 * oldest first after the head; returns how many were freed. */
uint64_t hsr_spool_trim(struct hsr_spool *sp, uint64_t want);
/* The first offset >= off still held (the end when none). */
uint64_t hsr_spool_kept_from(const struct hsr_spool *sp, uint64_t off);
/* Reads up to max held bytes from hsr_spool_kept_from(off), which is
 * stored in *at.  Returns the count (0 at the end) or -1 with errno. */
ssize_t hsr_spool_read(const struct hsr_spool *sp, uint64_t off, void *buf, size_t max,
		       uint64_t *at);

/* shim.c: the per-command supervisor. */
struct hsr_shim_spec {
	char **argv;
	char **envp;
	int merge_env;   /* envp overrides the daemon's environ */
	const char *cwd;
	int fd_in, fd_out, fd_err, fd_state; /* child ends; fd_state -1 for none */
	int pty;         /* fd_in is a terminal's slave: the child makes it its
	                    controlling terminal */
	int ctl_fd;      /* read end of the daemon's control pipe */
	int status_fd;   /* write end of the status pipe */
	int64_t deadline; /* absolute monotonic ms, 0 for none */
	int64_t grace_ms;
};

/* Control messages from the daemon to a shim: an op byte and a u32.
 * CANCEL's u32 is a grace in ms that may shorten the command's own, or
 * HSR_GRACE_DEFAULT; SIGNAL's is the signal number. */
#define HSR_SHIM_CANCEL 'C'
#define HSR_SHIM_SIGNAL 'S'

/* The status a shim reports when the command's top process exits. */
struct hsr_shim_status {
	int32_t exit_code;
	uint8_t timed_out;
	uint8_t cancelled;
	uint8_t pad[2];
};

/* Closes every descriptor above 2 except the (at most 8) in keep. */
void hsr_close_others(const int *keep, int nkeep);

/* Runs in the freshly forked shim; never returns. */
void hsr_shim_run(const struct hsr_shim_spec *s) __attribute__((noreturn));
/* The one-shot runner (`--exec`): this process supervises the command the
 * way a shim does (ctl_fd and status_fd -1), and also kills the command's
 * tree on SIGTERM, SIGINT or SIGHUP to itself.  Returns once no process of
 * the command is left: the command's exit status (128+N for a signal),
 * 124 when the deadline stopped it, 128+N when stop signal N did. */
int hsr_shim_oneshot(const struct hsr_shim_spec *s);

/* daemon.c */
struct hsr_daemon_opts {
	const char *dir;
	int idle_s;
	int foreground;
	uint8_t *key; /* HSR_KEY_LEN bytes, wiped once the daemon took them; NULL: the
	                 first stream brings the key */
};

/* Forks the daemon (detached unless foreground), which binds DIR/sock.
 * lockfd is the caller's lock on DIR/lock, held until the socket exists.
 * Returns 0 once the daemon listens, or -1 with a message in err. */
int hsr_daemon_start(const struct hsr_daemon_opts *o, struct hsr_rundir *rd, int lockfd,
		     char *err, size_t errlen);

/* attach.c */
int hsr_attach_main(const char *dir, int start, int idle_s, int handoff);
/* stop.c: `--stop`.  grace_ms < 0 means each command's own grace. */
int hsr_stop_main(const char *dir, int64_t grace_ms);

#endif
