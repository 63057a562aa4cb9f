/*
 * attach.h - starting the process that carries a runner stream (an
 * `hs-runner --attach`, or a front door such as `apptainer exec` or
 * `srun --overlap` running one) with a socket pair on its stdin and stdout,
 * and reaping those processes.  Shared by the backends that host the runner
 * through a local child process (local, singularity, slurm); linked into
 * each, so plugins still link nothing from the core.
 */
#ifndef HS_PLUGIN_ATTACH_H
#define HS_PLUGIN_ATTACH_H

#include <stdint.h>
#include <sys/types.h>

struct hs_attach_spawn {
	const char *const *argv;   /* argv[0] is the program's path */
	const char *const *envp;   /* its whole environment (NULL: empty) */
	const char *stderr_path;   /* its stderr, appended (0600, O_NOFOLLOW); NULL: inherited */
	int new_pgroup;            /* its own process group (a Ctrl-C for hs is not for it) */
};

/*
 * Start s->argv with one end of a new socket pair as stdin and stdout.
 * Returns 0 with *pid and *fd (the other end, close-on-exec) set, or an
 * errno value with a one-line reason in err (HS_ERR_MAX bytes).
 */
int hs_attach_start(const struct hs_attach_spawn *s, pid_t *pid, int32_t *fd, char *err);

/*
 * Forget the attach processes in pids[0..n) that have exited (pids[i] = 0;
 * 0 marks a free slot).  With block_ms > 0 wait up to that long for each,
 * then kill what is left with SIGKILL and reap it.
 */
void hs_attach_reap(pid_t *pids, int n, int block_ms);

/* Reap what has exited, then the index of a free slot, or -1 when all are busy. */
int hs_attach_slot(pid_t *pids, int n);

/*
 * The session's runtime directory on this host (the runner's socket and
 * spool): created 0700 if missing, its whole chain from "/" checked
 * (runner/dirchain.h): the leaf this user's with mode 0700, no ancestor
 * others can write or own.  HS_OK, or HS_E_IO (cannot create or open) /
 * HS_E_PERM (refused) with a one-line reason in err (HS_ERR_MAX bytes).
 */
int32_t hs_attach_private_dir(const char *dir, char *err);

/*
 * The same check with HS_DIRCHAIN_* flags and the hint that ends the fix
 * in a refusal ("set singularity.scratch"): HS_OK, HS_E_IO or HS_E_PERM.
 */
int32_t hs_attach_dir_check(const char *dir, int flags, const char *hint, char *err);

#endif
