/* SPDX-License-Identifier: MIT */
/*
 * slurm.h - the slurm backend's internal interface (see hs-slurm(7)).
 */
#ifndef HS_SLURM_H
#define HS_SLURM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hs/backend.h>

#define SL_MAX_STREAMS 16

/* The Slurm client programs, resolved once at init. */
enum sl_prog { SL_SBATCH, SL_SRUN, SL_SQUEUE, SL_SCANCEL, SL_SBCAST, SL_SCONTROL, SL_NPROGS };

struct sl_state {
	const struct hs_host_v1 *host;
	char prog[SL_NPROGS][512];  /* absolute paths; "" when not found */
	char *envv[16];             /* the minimal environment for Slurm's clients */
	char envbuf[8][1024];
};

/* The record of one environment's job: ids and paths, never a secret. */
struct sl_record {
	char job[32];      /* the Slurm job id */
	char nonce[40];    /* names the runtime dir on the node */
	char dir[256];     /* the runner's runtime dir on the node */
	char runner[512];  /* the runner's path on the node */
	int copied;        /* sbcast put the runner there */
};

/* Settings for one open(), from the config section and the spec. */
struct sl_opts {
	char node_tmp[256];      /* node-local parent of the runtime dirs */
	char base[300];          /* node_tmp/hs-slurm-UID */
	char node_runner[512];   /* slurm.runner_path, when the nodes have hs-runner */
	int64_t sbcast_size;     /* > 0: copy the local runner (this many bytes) with sbcast */
	const char *container;   /* an Apptainer image, or NULL */
	const char *container_cmd;
	int idle_s;
	int64_t wait_s;
	int64_t warn_left_s;
	int64_t renew_min;
	const char *args[40];    /* sbatch options from config and spec */
	int n_args;
	char argbuf[8][300];
};

struct sl_jobinfo {
	char state[32];     /* squeue's %T, or GONE */
	char reason[128];   /* squeue's %r */
	int64_t left_s;     /* time left, -1 unlimited or unknown */
	int waited;         /* sl_job_wait saw it pending first */
};

struct sl_env {
	struct sl_state *st;
	char name[128];          /* the environment's name */
	char recpath[1024];      /* state_dir/NAME.job */
	char logpath[1024];      /* state_dir/NAME.log: srun's messages */
	struct sl_record rec;      /* rec.job empty: no job yet */
	struct sl_opts op;
	int persistent;          /* a named session: close(KEEP) keeps the job */
	int ready;               /* the job ran and the runner is in place */
	char session[128];
	pid_t streams[SL_MAX_STREAMS]; /* our srun processes, reaped by us */
};

/* Output of one Slurm client run. */
struct sl_out {
	int status;        /* exit status, 128+N after signal N, -1 not started */
	int timed_out;
	char out[4096];    /* stdout, truncated, NUL-terminated */
	char err[1024];    /* stderr, truncated, NUL-terminated */
};

/*
 * Run argv (argv[0] an absolute path) with the minimal environment, feeding
 * in (may be NULL) to its stdin and capturing its output; kill it after
 * timeout_ms.  Returns 0 when it ran (see o->status), -1 when it could not
 * start (o->err says why).
 */
int sl_cmd(const struct sl_state *st, const char *const *argv, const char *in, size_t inlen,
           int timeout_ms, struct sl_out *o);

/* The last line of s without its newline, for one-line messages. */
const char *sl_lastline(char *s);

/* Read the record at path: 0 read, 1 none, -1 unusable (err says why). */
int sl_record_load(const char *path, struct sl_record *r, char *err);
/* Write it atomically (0600, O_NOFOLLOW, fsync, rename): 0 or -1 (err). */
int sl_record_save(const char *path, const struct sl_record *r, char *err);
/* Remove it; a missing record is fine. */
void sl_record_remove(const char *path);

/* Whether s is non-empty and only of characters safe in a job script. */
int sl_safe_word(const char *s);

#endif
