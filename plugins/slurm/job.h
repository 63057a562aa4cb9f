/* SPDX-License-Identifier: MIT */
/*
 * job.h - the batch job behind a slurm environment (job.c).
 */
#ifndef HS_SLURM_JOB_H
#define HS_SLURM_JOB_H

#include "plugins/slurm/slurm.h"

/* Submit the job (sbatch), record it before returning. */
int32_t sl_job_submit(struct sl_env *env, const struct sl_opts *op, char *err);
/* The job's state: HS_OK with ji filled (GONE when unknown), or an error. */
int32_t sl_job_query(struct sl_env *env, struct sl_jobinfo *ji, char *err);
/* Wait (bounded) until it runs: HS_OK, HS_E_TIMEOUT (still pending, recorded) or why it ended. */
int32_t sl_job_wait(struct sl_env *env, const struct sl_opts *op, struct sl_jobinfo *ji,
                    const char *session, char *err);
/* Copy the runner into the job's node. */
int32_t sl_job_sbcast(struct sl_env *env, const char *src, char *err);
/* Report (and renew, where allowed) a job near its time limit. */
void sl_job_time_check(struct sl_env *env, const struct sl_opts *op, const struct sl_jobinfo *ji,
                       char *note, size_t notelen);
/* scancel; a job that is already gone is fine. */
int32_t sl_job_cancel(struct sl_env *env, char *err);

/* 16 random hex digits naming the node-side directory. */
void sl_nonce(char *out, size_t len);

/* A pending reason that no wait will cure (the request exceeds the partition). */
int sl_never_starts(const char *reason);

/* Waiting states (pending and the like); and why an ended state ended. */
int sl_job_waiting(const char *state);
const char *sl_job_ended_why(const char *state);
/* A failed client run as one line in err; returns the status to give. */
int32_t sl_fail(const char *prog, struct sl_out *o, char *err);
int sl_unreachable(const struct sl_out *o);

#endif
