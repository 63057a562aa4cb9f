/* SPDX-License-Identifier: MIT */
/*
 * hs/hsb.h - libhsb, the backend helper library of the plugin SDK.
 *
 * Helpers the in-tree backends share and out-of-tree backends may use:
 * running a program and capturing its output (hsb_run), starting the
 * process that carries a runner stream (hsb_attach_*), and checking or
 * creating a private directory along its whole chain (hsb_dir_*).
 * A static archive (libhsb.a, built position-independent and with hidden
 * visibility, so it links into a plugin without exporting anything):
 * `pkg-config --libs hs-backend` names it.  libc only; it needs nothing
 * from the core.  See hs-backend(7).
 */
#ifndef HS_HSB_H
#define HS_HSB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error messages are written into buffers of this size (as HS_ERR_MAX). */
#define HSB_ERR_MAX 512

/* ---- Running a program and capturing its output ---- */

struct hsb_run {
	const char *path;          /* the executable; NULL: argv[0] */
	const char *const *argv;
	const char *const *envp;   /* its whole environment; NULL: empty */
	const void *in;            /* standard input; NULL: /dev/null */
	size_t in_len;
	int timeout_ms;            /* then SIGKILL and timed_out; <= 0: none */
	char *out;                 /* standard output, NUL-terminated; may be NULL */
	size_t out_cap;
	char *err;                 /* standard error; NULL: into out as well */
	size_t err_cap;
	int keep_tail;             /* keep the last bytes that fit, not the first */
	/* results */
	int status;                /* 0..255, or 128+N for signal N */
	int timed_out;
};

/*
 * Run r->argv with r->in on its standard input and capture its standard
 * output and error (each bounded by its buffer, the rest read and
 * dropped), then wait for it.  Returns 0 with r->status and r->timed_out
 * set, or -1 when it could not be started, with one line in err
 * (HSB_ERR_MAX bytes).  A program that exits without reading all of its
 * input raises SIGPIPE in the caller unless the caller ignores SIGPIPE
 * (hs does).
 */
int hsb_run(struct hsb_run *r, char *err);

/* ---- Runner stream processes ---- */

struct hsb_attach_spawn {
	const char *const *argv;   /* argv[0] is the program's path */
	const char *const *envp;   /* its whole environment (NULL: empty) */
	const char *stderr_path;   /* its stderr, appended (0600, O_NOFOLLOW); NULL: inherited */
	int new_pgroup;            /* its own process group (a Ctrl-C for hs is not for it) */
};

/*
 * Start s->argv with one end of a new socket pair as stdin and stdout.
 * Returns 0 with *pid and *fd (the other end, close-on-exec) set, or an
 * errno value with a one-line reason in err (HSB_ERR_MAX bytes).
 */
int hsb_attach_start(const struct hsb_attach_spawn *s, pid_t *pid, int32_t *fd, char *err);

/*
 * Forget the processes in pids[0..n) that have exited (pids[i] = 0; 0
 * marks a free slot).  With block_ms > 0 wait up to that long for each,
 * then kill what is left with SIGKILL and reap it.
 */
void hsb_attach_reap(pid_t *pids, int n, int block_ms);

/* Reap what has exited, then the index of a free slot, or -1 when all are busy. */
int hsb_attach_slot(pid_t *pids, int n);

/* ---- Private directories ---- */

#define HSB_DIR_CREATE  0x1 /* make missing components, mode 0700 */
#define HSB_DIR_TRUSTED 0x2 /* leaf: root or the user, not writable by others */
#define HSB_DIR_NOWRITE 0x4 /* leaf: the user's, not writable by others */

/*
 * Check the absolute directory dir and every directory above it up to "/"
 * (each owned by root or the user, not writable by others unless sticky;
 * no symbolic link but an ancestor's owned by root or the user; the leaf
 * the user's with mode 0700 unless TRUSTED or NOWRITE says otherwise),
 * creating missing components with HSB_DIR_CREATE.  hint ends the fix in
 * a refusal ("set singularity.scratch"); NULL for none.  Returns HS_OK (0),
 * or HS_E_IO (cannot create or open) / HS_E_PERM (refused) with one line
 * in err (HSB_ERR_MAX bytes).
 */
int32_t hsb_dir_check(const char *dir, int flags, const char *hint, char *err);

/* hsb_dir_check(dir, HSB_DIR_CREATE, "set XDG_RUNTIME_DIR", err): a
 * runtime directory for the runner's socket and spool. */
int32_t hsb_private_dir(const char *dir, char *err);

#ifdef __cplusplus
}
#endif

#endif
