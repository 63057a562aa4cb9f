/* SPDX-License-Identifier: MIT */
/*
 * job.c - the batch job that holds a session's allocation: the job script,
 * sbatch, the job's state from squeue, the bounded wait while it pends,
 * sbcast of the runner, renewal near the time limit, and cancel.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plugins/slurm/slurm.h"
#include "plugins/slurm/job.h"

/* A message from a Slurm client's stderr, or why it failed. */
static const char *
why(struct sl_out *o)
{
	if (o->timed_out)
		return "no answer in time";
	const char *l = sl_lastline(o->err);
	if (*l)
		return l;
	l = sl_lastline(o->out);
	return *l ? l : "failed without a message";
}

int
sl_unreachable(const struct sl_out *o)
{
	return o->timed_out || strstr(o->err, "Unable to contact slurm controller") ||
	       strstr(o->err, "Connection refused") || strstr(o->err, "Socket timed out") ||
	       strstr(o->err, "Zero Bytes were transmitted") ||
	       strstr(o->err, "Could not establish a configuration source") ||
	       strstr(o->err, "Munge") || strstr(o->err, "munge");
}

int32_t
sl_fail(const char *prog, struct sl_out *o, char *err)
{
	if (o->status < 0) {
		snprintf(err, HS_ERR_MAX, "%s", o->err);
		return HS_E_UNAVAILABLE;
	}
	int down = sl_unreachable(o);
	snprintf(err, HS_ERR_MAX, "%s%s: %s%s", down ? "the Slurm controller is unreachable: " : "",
	         prog, why(o),
	         down ? " (check that slurmctld and munged run and that SLURM_CONF names this "
	                "cluster's slurm.conf)" : "");
	return down ? HS_E_UNAVAILABLE : HS_E_IO;
}

int32_t
sl_job_query(struct sl_env *env, struct sl_jobinfo *ji, char *err)
{
	struct sl_out o;
	const char *argv[] = { env->st->prog[SL_SQUEUE], "-h", "-t", "all", "-j", env->rec.job,
	                       "-o", "%T|%r|%L", NULL };

	memset(ji, 0, sizeof(*ji));
	if (sl_cmd(env->st, argv, NULL, 0, 30000, &o) < 0 || o.timed_out ||
	    (o.status != 0 && !strstr(o.err, "Invalid job id"))) {
		int32_t rc = sl_fail("squeue", &o, err);
		return rc;
	}
	char *line = o.out;
	line[strcspn(line, "\n")] = '\0';
	if (o.status != 0 || !*line) {
		snprintf(ji->state, sizeof(ji->state), "GONE");
		return HS_OK;
	}
	char *r = strchr(line, '|'), *l = r ? strchr(r + 1, '|') : NULL;
	if (r)
		*r++ = '\0';
	if (l)
		*l++ = '\0';
	snprintf(ji->state, sizeof(ji->state), "%s", line);
	snprintf(ji->reason, sizeof(ji->reason), "%s", r ? r : "");
	ji->left_s = -1;
	if (l && isdigit((unsigned char)*l)) {
		/* [D-]HH:MM:SS, MM:SS or M */
		long d = 0, f[3] = { 0, 0, 0 };
		int n = 0;
		char *dash = strchr(l, '-');
		if (dash) {
			d = strtol(l, NULL, 10);
			l = dash + 1;
		}
		for (char *p = l; n < 3 && *p;) {
			f[n++] = strtol(p, &p, 10);
			if (*p == ':')
				p++;
			else
				break;
		}
		long s = n == 3 ? f[0] * 3600 + f[1] * 60 + f[2] : n == 2 ? f[0] * 60 + f[1] : f[0] * 60;
		ji->left_s = d * 86400 + s;
	}
	return HS_OK;
}

int
sl_never_starts(const char *reason)
{
	static const char *const never[] = { "PartitionConfig", "BadConstraints", "PartitionNodeLimit",
		"PartitionTimeLimit", "AccountNotAllowed", "QOSNotAllowed", "InvalidAccount",
		"InvalidQOS", "JobHeldAdmin", "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved" };
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		if (strcmp(reason, never[i]) == 0)
			return 1;
	return 0;
}

int
sl_job_waiting(const char *state)
{
	return strcmp(state, "PENDING") == 0 || strcmp(state, "CONFIGURING") == 0 ||
	       strcmp(state, "REQUEUED") == 0 || strcmp(state, "RESV_DEL_HOLD") == 0 ||
	       strcmp(state, "REQUEUE_HOLD") == 0 || strcmp(state, "REQUEUE_FED") == 0 ||
	       strcmp(state, "SUSPENDED") == 0 || strcmp(state, "RESIZING") == 0;
}

const char *
sl_job_ended_why(const char *state)
{
	if (strcmp(state, "PREEMPTED") == 0)
		return "it was preempted by the scheduler";
	if (strcmp(state, "NODE_FAIL") == 0)
		return "its node failed";
	if (strcmp(state, "TIMEOUT") == 0 || strcmp(state, "DEADLINE") == 0)
		return "it reached its time limit (raise slurm.time_limit)";
	if (strcmp(state, "OUT_OF_MEMORY") == 0)
		return "it ran out of memory (raise slurm.memory)";
	if (strcmp(state, "BOOT_FAIL") == 0)
		return "its node failed to boot";
	if (strcmp(state, "CANCELLED") == 0)
		return "it was cancelled";
	if (strcmp(state, "FAILED") == 0)
		return "its job script failed (is slurm.runner_path right on the nodes?)";
	if (strcmp(state, "GONE") == 0)
		return "the controller no longer knows it";
	return "it ended";
}

/* Random hex for the node-side directory name (not a secret: the directory is private). */
void
sl_nonce(char *out, size_t len)
{
	unsigned char b[8] = { 0 };
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, b, sizeof(b)) != (ssize_t)sizeof(b)) {
		uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		memcpy(b, &t, sizeof(b));
	}
	if (fd >= 0)
		close(fd);
	snprintf(out, len, "%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5],
	         b[6], b[7]);
}

/*
 * The job script.  It holds only paths and numbers chosen here, each
 * checked by sl_safe_word, never a value from the user's environment:
 * slurmctld stores the script.  The runner runs in the foreground, so the
 * job lives while the daemon does and ends when it idles out or is stopped.
 */
static int
script(struct sl_env *env, const struct sl_opts *op, char *buf, size_t len)
{
	const struct sl_record *r = &env->rec;
	char wait_copy[512] = "", ctr[1400] = "";
	if (op->sbcast_size > 0)
		snprintf(wait_copy, sizeof(wait_copy),
		         "i=0\n"
		         "while ! { [ -x \"$r\" ] && [ \"$(wc -c < \"$r\")\" -eq %lld ]; }; do\n"
		         "  i=$((i+1)); [ $i -gt 1200 ] && fail \"the runner was not copied to $r\"\n"
		         "  sleep 0.1\n"
		         "done\n", (long long)op->sbcast_size);
	if (op->container)
		snprintf(ctr, sizeof(ctr), "%s exec --bind \"$b\" %s%s ", op->container_cmd,
		         op->sbcast_size > 0 ? "" : "--bind \"$r\" ", op->container);
	int n = snprintf(buf, len,
	                 "#!/bin/sh\n"
	                 "# hermes-sandbox environment %s: the hs-runner daemon (hs-slurm(7))\n"
	                 "umask 077\n"
	                 "b=%s\n"
	                 "d=%s\n"
	                 "r=%s\n"
	                 "mkdir -p \"$b\" 2>/dev/null\n"
	                 "if [ -L \"$b\" ] || [ ! -d \"$b\" ] || [ ! -O \"$b\" ]; then\n"
	                 "  echo \"hs: $b is not a private directory of this user\" >&2; exit 1\n"
	                 "fi\n"
	                 "chmod 700 \"$b\" || exit 1\n"
	                 "trap 'rm -rf \"$d\"%s' EXIT\n"
	                 "trap 'exit 143' TERM INT HUP\n"
	                 /* Why the job failed, for the attach step to pass on (attach_sh). */
	                 /* It lingers, so the attach step that hs starts next can still pass it on. */
	                 "fail() { echo \"$1\" > \"$d.err\"; sleep 15; exit 1; }\n"
	                 "%s"
	                 "[ -x \"$r\" ] || fail \"'$r' is not executable on $(hostname) (slurm.runner_path)\"\n"
	                 "%s\"$r\" --daemon --foreground --dir \"$d\" --idle %d\n"
	                 "rc=$?\n"
	                 "[ $rc -eq 0 ] || fail \"hs-runner exited with status $rc on $(hostname)\"\n",
	                 env->name, op->base, r->dir, r->runner, op->sbcast_size > 0 ? " \"$r\"" : "",
	                 wait_copy, ctr, op->idle_s);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

int32_t
sl_job_submit(struct sl_env *env, const struct sl_opts *op, char *err)
{
	const struct sl_state *st = env->st;
	char text[4096], jobname[160], chdir[300];
	const char *argv[64];
	int a = 0;
	struct sl_out o;

	char keep[40];
	snprintf(keep, sizeof(keep), "%s", env->rec.nonce);
	memset(&env->rec, 0, sizeof(env->rec));
	if (keep[0])
		snprintf(env->rec.nonce, sizeof(env->rec.nonce), "%s", keep);
	else
		sl_nonce(env->rec.nonce, sizeof(env->rec.nonce));
	snprintf(env->rec.dir, sizeof(env->rec.dir), "%s/%s", op->base, env->rec.nonce);
	if (op->sbcast_size > 0)
		snprintf(env->rec.runner, sizeof(env->rec.runner), "%s/%s.runner", op->base,
		         env->rec.nonce);
	else
		snprintf(env->rec.runner, sizeof(env->rec.runner), "%s", op->node_runner);
	if (script(env, op, text, sizeof(text)) < 0) {
		snprintf(err, HS_ERR_MAX, "the job script for '%s' is too long", env->name);
		return HS_E_INVALID;
	}
	snprintf(jobname, sizeof(jobname), "--job-name=hs-%s", env->name);
	snprintf(chdir, sizeof(chdir), "--chdir=%s", op->node_tmp);
	argv[a++] = st->prog[SL_SBATCH];
	argv[a++] = "--parsable";
	argv[a++] = "--export=NONE";
	argv[a++] = "--nodes=1";
	argv[a++] = "--ntasks=1";
	argv[a++] = "--output=/dev/null";
	argv[a++] = "--error=/dev/null";
	argv[a++] = "--no-requeue";
	argv[a++] = jobname;
	argv[a++] = chdir;
	for (int i = 0; i < op->n_args && a < 60; i++)
		argv[a++] = op->args[i];
	argv[a] = NULL;
	if (sl_cmd(st, argv, text, strlen(text), 60000, &o) < 0)
		return sl_fail("sbatch", &o, err);
	if (o.status != 0) {
		int32_t rc = sl_fail("sbatch", &o, err);
		if (rc == HS_E_IO) {
			char m[HS_ERR_MAX];
			snprintf(m, sizeof(m), "the cluster refused the allocation: %s (check slurm.partition, "
			         "account, time_limit, cpus, memory and gres)", err);
			snprintf(err, HS_ERR_MAX, "%s", m);
			return HS_E_CONFIG;
		}
		return rc;
	}
	/* --parsable: "JOBID" or "JOBID;CLUSTER" */
	char *line = o.out;
	line[strcspn(line, ";\n")] = '\0';
	if (!*line || strspn(line, "0123456789") != strlen(line) || strlen(line) >= sizeof(env->rec.job)) {
		snprintf(err, HS_ERR_MAX, "sbatch answered '%.60s', not a job id", line);
		return HS_E_PROTOCOL;
	}
	snprintf(env->rec.job, sizeof(env->rec.job), "%s", line);
	/* Recorded before any wait, so a crash from here on never leaks the allocation. */
	if (sl_record_save(env->recpath, &env->rec, err) < 0) {
		char e2[HS_ERR_MAX];
		sl_job_cancel(env, e2);
		return HS_E_IO;
	}
	st->host->log(st->host->ctx, HS_LOG_DEBUG, "submitted job %s for '%s'", env->rec.job,
	              env->name);
	return HS_OK;
}

int32_t
sl_job_wait(struct sl_env *env, const struct sl_opts *op, struct sl_jobinfo *ji, const char *session,
            char *err)
{
	const struct hs_host_v1 *h = env->st->host;
	uint64_t start = h->now_ms(h->ctx);
	int logged = 0;

	for (int i = 0;; i++) {
		int32_t rc = sl_job_query(env, ji, err);
		if (rc != HS_OK)
			return rc;
		if (strcmp(ji->state, "RUNNING") == 0) {
			ji->waited = i > 0;
			return HS_OK;
		}
		if (!sl_job_waiting(ji->state)) {
			snprintf(err, HS_ERR_MAX, "slurm job %s ended (%s) before it started: %s", env->rec.job,
			         ji->state, sl_job_ended_why(ji->state));
			sl_record_remove(env->recpath);
			return strcmp(ji->state, "PREEMPTED") == 0 ? HS_E_LOST : HS_E_UNAVAILABLE;
		}
		if (sl_never_starts(ji->reason)) {
			char e2[HS_ERR_MAX];
			sl_job_cancel(env, e2);
			sl_record_remove(env->recpath);
			snprintf(err, HS_ERR_MAX, "the cluster refused the allocation: slurm job %s can never "
			         "start (reason: %s); cancelled it (check slurm.partition, account, qos, "
			         "time_limit, cpus, memory and gres against the partition's limits)",
			         env->rec.job, ji->reason);
			memset(&env->rec, 0, sizeof(env->rec));
			return HS_E_CONFIG;
		}
		uint64_t waited = h->now_ms(h->ctx) - start;
		if (!logged && waited > 3000 && op->wait_s >= 10) {
			h->log(h->ctx, HS_LOG_WARN, "slurm job %s is %s (%s); waiting up to %llds", env->rec.job,
			       ji->state, ji->reason, (long long)op->wait_s);
			logged = 1;
		}
		if ((int64_t)waited >= op->wait_s * 1000) {
			if (!env->persistent) {
				/* A one-off command: nobody could re-attach, so the job goes. */
				char e2[HS_ERR_MAX];
				sl_job_cancel(env, e2);
				sl_record_remove(env->recpath);
				snprintf(err, HS_ERR_MAX, "slurm job %s was still %s after %llds (reason: %s); "
				         "cancelled it (raise slurm.wait_timeout, or use a session: hs run -s NAME)",
				         env->rec.job, ji->state, (long long)op->wait_s,
				         ji->reason[0] ? ji->reason : "none given");
				memset(&env->rec, 0, sizeof(env->rec));
				return HS_E_TIMEOUT;
			}
			snprintf(err, HS_ERR_MAX, "slurm job %s is still %s after %llds (reason: %s); it stays "
			         "queued and recorded: 'hs run -s %s' again re-attaches to it, 'scancel %s' "
			         "cancels it (slurm.wait_timeout sets the wait)", env->rec.job, ji->state,
			         (long long)op->wait_s, ji->reason[0] ? ji->reason : "none given",
			         session ? session : env->name, env->rec.job);
			return HS_E_TIMEOUT;
		}
		struct timespec ts = { 0, (i < 10 ? 300 : 1000) * 1000L * 1000L };
		if (i >= 10)
			ts = (struct timespec){ 1, 0 };
		nanosleep(&ts, NULL);
	}
}

int32_t
sl_job_sbcast(struct sl_env *env, const char *src, char *err)
{
	char jobarg[64];
	struct sl_out o;
	snprintf(jobarg, sizeof(jobarg), "--jobid=%s", env->rec.job);
	const char *argv[] = { env->st->prog[SL_SBCAST], jobarg, "--force", "--preserve", src,
	                       env->rec.runner, NULL };
	if (!env->st->prog[SL_SBCAST][0]) {
		snprintf(err, HS_ERR_MAX, "sbcast not found, and slurm.runner_path is not set: install "
		         "hs-runner on the nodes and set slurm.runner_path, or install sbcast");
		return HS_E_UNAVAILABLE;
	}
	/* The job script makes the private directory first; until then sbcast cannot write. */
	for (int i = 0; i < 20; i++) {
		if (sl_cmd(env->st, argv, NULL, 0, 60000, &o) < 0)
			return sl_fail("sbcast", &o, err);
		/* "Text file busy": an earlier copy is already running as the daemon. */
		if (o.status == 0 || strstr(o.err, "Text file busy"))
			return HS_OK;
		if (sl_unreachable(&o))
			break;
		struct timespec ts = { 0, 250 * 1000L * 1000L };
		nanosleep(&ts, NULL);
	}
	int32_t rc = sl_fail("sbcast", &o, err);
	char m[HS_ERR_MAX];
	snprintf(m, sizeof(m), "cannot copy hs-runner to the job's node: %s (or install it there and "
	         "set slurm.runner_path)", err);
	snprintf(err, HS_ERR_MAX, "%s", m);
	return rc;
}

void
sl_job_time_check(struct sl_env *env, const struct sl_opts *op, const struct sl_jobinfo *ji,
                  char *note, size_t notelen)
{
	const struct hs_host_v1 *h = env->st->host;
	if (ji->left_s < 0 || ji->left_s >= op->warn_left_s)
		return;
	h->log(h->ctx, HS_LOG_WARN, "slurm job %s has %llds left of its time limit", env->rec.job,
	       (long long)ji->left_s);
	snprintf(note, notelen, "slurm job %s has %llds left of its time limit", env->rec.job,
	         (long long)ji->left_s);
	if (op->renew_min <= 0 || !env->st->prog[SL_SCONTROL][0])
		return;
	char id[64], tl[64];
	struct sl_out o;
	snprintf(id, sizeof(id), "JobId=%s", env->rec.job);
	snprintf(tl, sizeof(tl), "TimeLimit=+%lld", (long long)op->renew_min);
	const char *argv[] = { env->st->prog[SL_SCONTROL], "update", id, tl, NULL };
	if (sl_cmd(env->st, argv, NULL, 0, 30000, &o) == 0 && o.status == 0) {
		snprintf(note, notelen, "slurm job %s extended by %lld minutes", env->rec.job,
		         (long long)op->renew_min);
		h->log(h->ctx, HS_LOG_INFO, "%s", note);
	} else {
		h->log(h->ctx, HS_LOG_WARN, "cannot extend slurm job %s (the site may not allow it): %s",
		       env->rec.job, why(&o));
	}
}

int32_t
sl_job_cancel(struct sl_env *env, char *err)
{
	struct sl_out o;
	const char *argv[] = { env->st->prog[SL_SCANCEL], env->rec.job, NULL };
	if (sl_cmd(env->st, argv, NULL, 0, 30000, &o) < 0 ||
	    (o.status != 0 && !strstr(o.err, "Invalid job id") && !strstr(o.err, "already completing") &&
	     !strstr(o.err, "already complete")))
		return sl_fail("scancel", &o, err);
	return HS_OK;
}
