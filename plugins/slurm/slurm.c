/* SPDX-License-Identifier: MIT */
/*
 * slurm.c - the slurm backend: a session is a batch job whose script runs
 * the hs-runner daemon on the allocated node; every stream is a short
 * `srun --overlap` step running `hs-runner --attach`.  See hs-slurm(7).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hs/hsb.h>
#include "plugins/slurm/slurm.h"
#include "plugins/slurm/job.h"

static const struct hs_config_key sl_keys[] = {
	{ "partition", HS_CONF_STRING, "partition to submit to (default: the cluster's default)" },
	{ "account", HS_CONF_STRING, "account to charge" },
	{ "qos", HS_CONF_STRING, "quality of service" },
	{ "time_limit", HS_CONF_STRING, "job time limit in Slurm's format, e.g. \"8:00:00\"" },
	{ "cpus", HS_CONF_INT, "CPUs per session (default: from --cpus, else 1)" },
	{ "memory", HS_CONF_STRING, "memory per session in Slurm's format, e.g. \"4G\"" },
	{ "gres", HS_CONF_STRING, "generic resources, e.g. \"gpu:1\"" },
	{ "constraint", HS_CONF_STRING, "node features" },
	{ "extra_args", HS_CONF_STRINGS, "further sbatch options, each starting with --" },
	{ "runner_path", HS_CONF_STRING, "hs-runner's path on the nodes (default: copy it with sbcast)" },
	{ "node_tmp", HS_CONF_STRING, "node-local directory for runtime dirs (default /tmp)" },
	{ "container", HS_CONF_STRING, "an Apptainer image the daemon runs in" },
	{ "container_cmd", HS_CONF_STRING, "apptainer or singularity (default apptainer)" },
	{ "wait_timeout", HS_CONF_INT, "seconds to wait for a pending job (default 300)" },
	{ "warn_left", HS_CONF_INT, "report a job with less than this many seconds left (default 600)" },
	{ "renew", HS_CONF_INT, "minutes to extend a job near its limit with scontrol (default 0: no)" },
	{ "shell", HS_CONF_STRING, "the session shell on the nodes (default /bin/bash)" },
	{ "bin_dir", HS_CONF_STRING, "directory of sbatch, srun, squeue, ... (default: PATH)" },
	{ NULL, 0, NULL },
};

/* Under an admin's lock: sbatch options may only be dropped. */
static const struct hs_config_rule sl_rules[] = {
	{ .name = "extra_args", .order = HS_CORDER_SUBSET },
	{ .name = NULL },
};

static const char *const sl_prog_names[SL_NPROGS] = { "sbatch", "srun", "squeue", "scancel",
	                                                   "sbcast", "scontrol" };

static const char *
cfg_str(const struct sl_state *st, const char *key)
{
	const char *v = NULL;
	if (st->host->config_string(st->host->ctx, key, &v) != HS_OK || !v || !*v)
		return NULL;
	return v;
}

static int64_t
cfg_int(const struct sl_state *st, const char *key, int64_t def)
{
	int64_t v;
	return st->host->config_int(st->host->ctx, key, &v) == HS_OK ? v : def;
}

static void
find_prog(struct sl_state *st, int i, const char *bindir, const char *path)
{
	char cand[512];
	st->prog[i][0] = '\0';
	if (bindir) {
		snprintf(cand, sizeof(cand), "%s/%s", bindir, sl_prog_names[i]);
		if (access(cand, X_OK) == 0)
			snprintf(st->prog[i], sizeof(st->prog[i]), "%s", cand);
		return;
	}
	for (const char *p = path; p && *p;) {
		size_t n = strcspn(p, ":");
		if (n && n < 400 && p[0] == '/') {
			snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, p, sl_prog_names[i]);
			if (access(cand, X_OK) == 0) {
				snprintf(st->prog[i], sizeof(st->prog[i]), "%s", cand);
				return;
			}
		}
		p += n;
		if (*p == ':')
			p++;
	}
}

static int32_t
sl_init(const struct hs_host_v1 *host, void **state, char *err)
{
	static const char *const pass[] = { "HOME", "USER", "LOGNAME", "TZ", "SLURM_CONF",
		                                "SLURM_CLUSTERS" };
	struct sl_state *st = calloc(1, sizeof(*st));
	int e = 0, b = 0;
	if (!st) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	st->host = host;
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	snprintf(st->envbuf[b], sizeof(st->envbuf[b]), "PATH=%s", path);
	st->envv[e++] = st->envbuf[b++];
	for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
		const char *v = getenv(pass[i]);
		if (!v || strlen(v) + strlen(pass[i]) + 2 > sizeof(st->envbuf[0]))
			continue;
		snprintf(st->envbuf[b], sizeof(st->envbuf[b]), "%s=%s", pass[i], v);
		st->envv[e++] = st->envbuf[b++];
	}
	st->envv[e++] = "LC_ALL=C";
	st->envv[e] = NULL;
	const char *bindir = cfg_str(st, "bin_dir");
	for (int i = 0; i < SL_NPROGS; i++)
		find_prog(st, i, bindir, path);
	*state = st;
	return HS_OK;
}

static void
sl_fini(void *state)
{
	free(state);
}

static int
missing(const struct sl_state *st, char *out, size_t len)
{
	for (int i = 0; i <= SL_SCANCEL; i++)
		if (!st->prog[i][0]) {
			snprintf(out, len, "'%s' not found%s%s (install Slurm's client commands, e.g. "
			         "apt-get install slurm-client, or set slurm.bin_dir)", sl_prog_names[i],
			         cfg_str(st, "bin_dir") ? " in " : " on PATH",
			         cfg_str(st, "bin_dir") ? cfg_str(st, "bin_dir") : "");
			return 1;
		}
	return 0;
}

static int32_t
sl_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
	struct sl_state *st = state;
	const char *nr = cfg_str(st, "runner_path");
	r->ready = !missing(st, r->reason, sizeof(r->reason));
	if (r->ready && !nr && !st->prog[SL_SBCAST][0]) {
		r->ready = 0;
		snprintf(r->reason, sizeof(r->reason), "slurm.runner_path is not set and sbcast is not "
		         "installed: set slurm.runner_path to hs-runner's path on the nodes");
	}
	if (r->ready && !nr && (!st->host->runner_path || access(st->host->runner_path, R_OK) != 0)) {
		r->ready = 0;
		snprintf(r->reason, sizeof(r->reason), "no local hs-runner to copy with sbcast (set "
		         "runner_path or HS_RUNNER), or set slurm.runner_path for the nodes");
	}
	if (r->ready && (flags & HS_PROBE_DEEP) && st->prog[SL_SCONTROL][0]) {
		struct sl_out o;
		const char *argv[] = { st->prog[SL_SCONTROL], "ping", NULL };
		if (sl_cmd(st, argv, NULL, 0, 20000, &o) < 0 || o.status != 0 || !strstr(o.out, "UP")) {
			r->ready = 0;
			sl_fail("scontrol ping", &o, r->reason);
		}
	}
	r->runner = r->ready;
	const char *conf = getenv("SLURM_CONF");
	snprintf(r->detail, sizeof(r->detail), "sbatch=%s\npartition=%s\nrunner=%s\ncontainer=%s\n"
	         "slurm_conf=%s", st->prog[SL_SBATCH], cfg_str(st, "partition") ? cfg_str(st, "partition") : "(default)",
	         nr ? nr : "sbcast", cfg_str(st, "container") ? cfg_str(st, "container") : "none",
	         conf ? conf : "(default)");
	return HS_OK;
}

/* "--NAME=VALUE" into the options. */
static int
add_arg(struct sl_opts *op, int *nb, const char *name, const char *v)
{
	if (*nb >= 8 || op->n_args >= 38)
		return -1;
	snprintf(op->argbuf[*nb], sizeof(op->argbuf[0]), "--%s=%s", name, v);
	op->args[op->n_args++] = op->argbuf[(*nb)++];
	return 0;
}

/* Settings from config and spec, each checked before anything is submitted. */
static int32_t
opts(struct sl_state *st, const struct hs_env_spec *spec, struct sl_opts *op, char *err)
{
	static const struct { const char *key, *opt; } strs[] = {
		{ "partition", "partition" }, { "account", "account" }, { "qos", "qos" },
		{ "time_limit", "time" }, { "memory", "mem" }, { "gres", "gres" },
		{ "constraint", "constraint" },
	};
	int nb = 0;
	char num[64];
	memset(op, 0, sizeof(*op));
	const char *t = cfg_str(st, "node_tmp");
	snprintf(op->node_tmp, sizeof(op->node_tmp), "%s", t ? t : "/tmp");
	if (op->node_tmp[0] != '/' || !sl_safe_word(op->node_tmp)) {
		snprintf(err, HS_ERR_MAX, "slurm.node_tmp '%s' must be an absolute path of plain characters",
		         op->node_tmp);
		return HS_E_CONFIG;
	}
	snprintf(op->base, sizeof(op->base), "%s/hs-slurm-%u", op->node_tmp, (unsigned)geteuid());
	const char *nr = cfg_str(st, "runner_path");
	if (nr) {
		if (nr[0] != '/' || !sl_safe_word(nr)) {
			snprintf(err, HS_ERR_MAX, "slurm.runner_path '%s' must be an absolute path of plain "
			         "characters", nr);
			return HS_E_CONFIG;
		}
		snprintf(op->node_runner, sizeof(op->node_runner), "%s", nr);
	} else {
		struct stat sb;
		if (!st->host->runner_path || stat(st->host->runner_path, &sb) < 0 || sb.st_size <= 0) {
			snprintf(err, HS_ERR_MAX, "no hs-runner to copy to the nodes (set runner_path or "
			         "HS_RUNNER), or set slurm.runner_path to its path on the nodes");
			return HS_E_UNAVAILABLE;
		}
		op->sbcast_size = sb.st_size;
	}
	op->container = spec->image && *spec->image ? spec->image : cfg_str(st, "container");
	op->container_cmd = cfg_str(st, "container_cmd") ? cfg_str(st, "container_cmd") : "apptainer";
	if (op->container && (!sl_safe_word(op->container) || !sl_safe_word(op->container_cmd))) {
		snprintf(err, HS_ERR_MAX, "the container image '%s' must be a path or URI of plain "
		         "characters", op->container);
		return HS_E_CONFIG;
	}
	op->idle_s = spec->runner_idle_s > 0 ? spec->runner_idle_s : 600;
	op->wait_s = cfg_int(st, "wait_timeout", 300);
	op->warn_left_s = cfg_int(st, "warn_left", 600);
	op->renew_min = cfg_int(st, "renew", 0);
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		const char *v = cfg_str(st, strs[i].key);
		if (!v)
			continue;
		if (!sl_safe_word(v)) {
			snprintf(err, HS_ERR_MAX, "slurm.%s '%s' has characters Slurm does not take", strs[i].key, v);
			return HS_E_CONFIG;
		}
		add_arg(op, &nb, strs[i].opt, v);
	}
	int64_t cpus = cfg_int(st, "cpus", 0);
	if (spec->cpus_milli > 0)
		cpus = (spec->cpus_milli + 999) / 1000;
	if (cpus > 0) {
		snprintf(num, sizeof(num), "%lld", (long long)cpus);
		add_arg(op, &nb, "cpus-per-task", num);
	}
	if (spec->memory_bytes > 0) {
		snprintf(num, sizeof(num), "%lldM", (long long)((spec->memory_bytes + (1 << 20) - 1) >> 20));
		add_arg(op, &nb, "mem", num);
	}
	const char *const *extra = NULL;
	uint32_t n_extra = 0;
	if (st->host->config_strings(st->host->ctx, "extra_args", &extra, &n_extra) == HS_OK) {
		for (uint32_t i = 0; i < n_extra; i++) {
			if (strncmp(extra[i], "--", 2) != 0 || strncmp(extra[i], "--export", 8) == 0 ||
			    strncmp(extra[i], "--wrap", 6) == 0 || op->n_args >= 38) {
				snprintf(err, HS_ERR_MAX, "slurm.extra_args '%s' is not allowed (each must be one "
				         "--option=value; not --export or --wrap)", extra[i]);
				return HS_E_CONFIG;
			}
			op->args[op->n_args++] = extra[i];
		}
	}
	return HS_OK;
}

static int
valid_name(const char *s)
{
	if (!s || !*s || strlen(s) > 100 || s[0] == '.')
		return 0;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *s))
			return 0;
	return 1;
}

/* The job must be running for a step; otherwise say why not, in one line. */
static int32_t
running(struct sl_env *env, char *err)
{
	struct sl_jobinfo ji;
	int32_t rc = sl_job_query(env, &ji, err);
	if (rc != HS_OK)
		return rc;
	if (strcmp(ji.state, "RUNNING") == 0)
		return HS_OK;
	if (sl_job_waiting(ji.state)) {
		snprintf(err, HS_ERR_MAX, "slurm job %s is %s again (%s)", env->rec.job, ji.state, ji.reason);
		return HS_E_BUSY;
	}
	snprintf(err, HS_ERR_MAX, "slurm job %s ended (%s): %s; a command that was running has no "
	         "known outcome; the next command submits a new job", env->rec.job, ji.state,
	         sl_job_ended_why(ji.state));
	sl_record_remove(env->recpath);
	return HS_E_LOST;
}

static int32_t
sl_open(void *state, const struct hs_env_spec *spec, void **envp, struct hs_env_props *props,
        char *err)
{
	struct sl_state *st = state;
	struct sl_jobinfo ji;
	struct sl_env *env;
	int32_t rc;

	if (missing(st, err, HS_ERR_MAX))
		return HS_E_UNAVAILABLE;
	if (!valid_name(spec->env_name)) {
		snprintf(err, HS_ERR_MAX, "environment name '%s' is not usable here",
		         spec->env_name ? spec->env_name : "");
		return HS_E_INVALID;
	}
	if (spec->n_mounts) {
		snprintf(err, HS_ERR_MAX, "the slurm backend cannot mount '%s': jobs see the cluster's "
		         "own file systems", spec->mounts[0]);
		return HS_E_INVALID;
	}
	if (spec->network && *spec->network) {
		snprintf(err, HS_ERR_MAX, "the slurm backend cannot set the network ('%s'): jobs use "
		         "their node's network", spec->network);
		return HS_E_INVALID;
	}
	if ((spec->flags & HS_SPEC_ISOLATE)) {
		snprintf(err, HS_ERR_MAX, "the slurm backend has no namespace isolation; use "
		         "slurm.container for an Apptainer image");
		return HS_E_UNSUPPORTED;
	}
	env = calloc(1, sizeof(*env));
	if (!env) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	rc = opts(st, spec, &env->op, err);
	if (rc != HS_OK)
		goto fail;
	env->st = st;
	env->persistent = !!(spec->flags & HS_SPEC_PERSISTENT);
	snprintf(env->name, sizeof(env->name), "%s", spec->env_name);
	snprintf(env->session, sizeof(env->session), "%s", spec->session ? spec->session : spec->env_name);
	snprintf(env->recpath, sizeof(env->recpath), "%s/%s.job", st->host->state_dir, env->name);
	snprintf(env->logpath, sizeof(env->logpath), "%s/%s.log", st->host->state_dir, env->name);

	/*
	 * Only the record is looked at here: the job is submitted, and waited
	 * for, when the first stream is asked for.  So closing a session whose
	 * job has ended never submits a new one just to cancel it.
	 */
	int have = sl_record_load(env->recpath, &env->rec, err);
	if (have < 0) {
		rc = HS_E_IO;
		goto fail;
	}
	if (have == 0) {
		rc = sl_job_query(env, &ji, err);
		if (rc != HS_OK)
			goto fail;
		if (strcmp(ji.state, "RUNNING") != 0 && !sl_job_waiting(ji.state)) {
			snprintf(props->note, sizeof(props->note), "slurm job %s had ended (%s): %s; a new "
			         "one is submitted", env->rec.job, ji.state, sl_job_ended_why(ji.state));
			st->host->log(st->host->ctx, HS_LOG_INFO, "%s", props->note);
			sl_record_remove(env->recpath);
			memset(&env->rec, 0, sizeof(env->rec));
		} else {
			snprintf(props->note, sizeof(props->note), "re-attached to slurm job %s (%s)",
			         env->rec.job, ji.state);
		}
	}
	if ((spec->flags & HS_SPEC_ATTACH) && !env->rec.job[0]) {
		/* Attach only: no live job to attach to (and none will be submitted). */
		snprintf(err, HS_ERR_MAX, "slurm environment '%s' has no running job", env->name);
		rc = HS_E_NOTFOUND;
		goto fail;
	}
	props->host_access = 1;
	snprintf(props->host_reason, sizeof(props->host_reason),
	         "jobs run as this user on cluster nodes, which usually share this machine's file "
	         "systems");
	snprintf(props->isolation, sizeof(props->isolation), env->op.container ? "container" : "remote");
	props->runner = 1;
	const char *sh = cfg_str(st, "shell");
	snprintf(props->shell, sizeof(props->shell), "%s", sh && sh[0] == '/' ? sh : "/bin/bash");
	/* The runtime dir is named when the job is submitted; the core's snapshot path needs it now. */
	if (!env->rec.job[0]) {
		char n[40];
		sl_nonce(n, sizeof(n));
		snprintf(env->rec.nonce, sizeof(env->rec.nonce), "%s", n);
	}
	snprintf(props->runtime_dir, sizeof(props->runtime_dir), "%s/%s", env->op.base, env->rec.nonce);
	*envp = env;
	return HS_OK;
fail:
	free(env);
	return rc;
}

/* Submit when there is no job yet, wait (bounded) while it pends, put the runner in place. */
static int32_t
ensure_job(struct sl_env *env, char *err)
{
	struct sl_jobinfo ji;
	char note[256] = "";
	int32_t rc;

	if (env->ready)
		return running(env, err);
	if (!env->rec.job[0]) {
		rc = sl_job_submit(env, &env->op, err);
		if (rc != HS_OK)
			return rc;
	}
	rc = sl_job_wait(env, &env->op, &ji, env->session, err);
	if (rc != HS_OK)
		return rc;
	/*
	 * The copy is made by whichever hs first sees the job run, and noted in
	 * the record: the hs that submitted the job may have given up (or died)
	 * while it pended.
	 */
	if (env->op.sbcast_size > 0 && !env->rec.copied) {
		rc = sl_job_sbcast(env, env->st->host->runner_path, err);
		if (rc != HS_OK) {
			char e2[HS_ERR_MAX];
			sl_job_cancel(env, e2);
			sl_record_remove(env->recpath);
			memset(&env->rec, 0, sizeof(env->rec));
			return rc;
		}
		env->rec.copied = 1;
		if (sl_record_save(env->recpath, &env->rec, err) < 0)
			return HS_E_IO;
	}
	sl_job_time_check(env, &env->op, &ji, note, sizeof(note));
	env->ready = 1;
	return HS_OK;
}

/*
 * The attach step waits (bounded) for the daemon's socket, since the job
 * script may still be starting it, then writes one byte, R, and becomes
 * hs-runner --attach; if the job script failed it writes E and the reason
 * instead.  runner_stream reads that first byte, so a failure is reported
 * with its reason instead of as a silent end of stream.  Positional
 * arguments keep paths out of the shell text.
 */
static const char attach_sh[] =
	"i=0; while [ ! -S \"$1/sock\" ]; do "
	"if [ -s \"$1.err\" ]; then printf E; cat \"$1.err\"; rm -f \"$1.err\"; exit 1; fi; "
	"i=$((i+1)); if [ $i -gt 300 ]; then echo \"Eno hs-runner daemon in $1 on $(hostname) after 30s\"; exit 1; fi; "
	"sleep 0.1; done; printf R; exec \"$2\" --attach --dir \"$1\"";

/* The last line of the session's srun log, for a stream that ended at once. */
static void
log_tail(const char *path, char *out, size_t len)
{
	char buf[2048];
	out[0] = '\0';
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	off_t from = end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, from);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	snprintf(out, len, "%s", sl_lastline(buf));
}

/* Wait for the attach step's first byte (see attach_sh). */
static int32_t
step_ready(struct sl_env *env, int fd, char *err)
{
	const struct hs_host_v1 *h = env->st->host;
	uint64_t end = h->now_ms(h->ctx) + 45000;
	char c = 0, msg[400] = "";
	size_t mlen = 0;
	for (;;) {
		int64_t left = (int64_t)(end - h->now_ms(h->ctx));
		struct pollfd pf = { fd, POLLIN, 0 };
		if (left <= 0) {
			snprintf(err, HS_ERR_MAX, "the attach step of slurm job %s did not answer in 45s",
			         env->rec.job);
			return HS_E_TIMEOUT;
		}
		int r = poll(&pf, 1, (int)left);
		if (r <= 0)
			continue;
		if (!c) {
			ssize_t n = read(fd, &c, 1);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0)
				break;
			if (c == 'R')
				return HS_OK;
			if (c != 'E') {
				snprintf(err, HS_ERR_MAX, "the attach step of slurm job %s answered 0x%02x, "
				         "not R", env->rec.job, (unsigned char)c);
				return HS_E_PROTOCOL;
			}
			continue;
		}
		ssize_t n = read(fd, msg + mlen, sizeof(msg) - 1 - mlen);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		mlen += (size_t)n;
		if (mlen >= sizeof(msg) - 1 || memchr(msg, '\n', mlen))
			break;
	}
	msg[mlen] = '\0';
	if (c == 'E' && msg[0]) {
		snprintf(err, HS_ERR_MAX, "slurm job %s: %s", env->rec.job, sl_lastline(msg));
		return HS_E_UNAVAILABLE;
	}
	/* The step ended without a word: the job's state, else srun's own message. */
	int32_t rc = running(env, err);
	if (rc != HS_OK)
		return rc;
	char tail[300];
	log_tail(env->logpath, tail, sizeof(tail));
	snprintf(err, HS_ERR_MAX, "the attach step of slurm job %s ended at once%s%s", env->rec.job,
	         tail[0] ? ": " : "", tail);
	return HS_E_IO;
}

static int32_t
spawn_step(struct sl_env *env, const char *const *tail, int32_t *fd, pid_t *pidp, char *err)
{
	char jobarg[64];
	const char *argv[24];
	int a = 0;

	snprintf(jobarg, sizeof(jobarg), "--jobid=%s", env->rec.job);
	argv[a++] = env->st->prog[SL_SRUN];
	argv[a++] = jobarg;
	argv[a++] = "--overlap";
	argv[a++] = "--nodes=1";
	argv[a++] = "--ntasks=1";
	argv[a++] = "--quiet";
	/* Bytes as they come: without it slurmstepd holds output back until a newline. */
	argv[a++] = "--unbuffered";
	for (int i = 0; tail[i] && a < 23; i++)
		argv[a++] = tail[i];
	argv[a] = NULL;
	/* srun's own messages go to a private log next to the record, not into
	 * hs's output; its own process group: a Ctrl-C meant for hs is a cancel,
	 * not srun's. */
	struct hsb_attach_spawn sp = { .argv = argv, .envp = (const char *const *)env->st->envv,
	                              .stderr_path = env->logpath, .new_pgroup = 1 };
	if (hsb_attach_start(&sp, pidp, fd, err) != 0)
		return HS_E_UNAVAILABLE;
	return HS_OK;
}

static int32_t
sl_runner_stream(void *envp, int32_t *fd, char *err)
{
	struct sl_env *env = envp;
	int slot = -1;
	hsb_attach_reap(env->streams, SL_MAX_STREAMS, 0);
	for (int i = 0; i < SL_MAX_STREAMS && slot < 0; i++)
		if (env->streams[i] == 0)
			slot = i;
	if (slot < 0) {
		snprintf(err, HS_ERR_MAX, "too many runner streams for slurm job %s", env->rec.job);
		return HS_E_BUSY;
	}
	int32_t rc = ensure_job(env, err);
	if (rc != HS_OK)
		return rc;
	const char *tail[] = { "/bin/sh", "-c", attach_sh, "hs-attach", env->rec.dir, env->rec.runner,
		               NULL };
	rc = spawn_step(env, tail, fd, &env->streams[slot], err);
	if (rc != HS_OK)
		return rc;
	rc = step_ready(env, *fd, err);
	if (rc != HS_OK) {
		close(*fd);
		*fd = -1;
		hsb_attach_reap(env->streams, SL_MAX_STREAMS, 5000);
	}
	return rc;
}

/* Stop the daemon through a step (every command killed, TERM/grace/KILL),
 * so nothing of the session survives on the node; the job then ends. */
static void
stop_daemon(struct sl_env *env)
{
	const struct hs_host_v1 *h = env->st->host;
	char jobarg[64];
	struct sl_out o;
	snprintf(jobarg, sizeof(jobarg), "--jobid=%s", env->rec.job);
	const char *argv[] = { env->st->prog[SL_SRUN], jobarg, "--overlap", "--nodes=1", "--ntasks=1",
		               "--quiet", env->rec.runner, "--stop", "--dir", env->rec.dir, NULL };
	if (sl_cmd(env->st, argv, NULL, 0, 60000, &o) < 0 || o.status != 0)
		h->log(h->ctx, HS_LOG_DEBUG, "stopping the runner of job %s: %s", env->rec.job,
		       sl_lastline(o.err));
}

static int32_t
sl_close(void *envp, uint32_t flags, char *err)
{
	struct sl_env *env = envp;
	int32_t rc = HS_OK;
	if (!env)
		return HS_OK;
	hsb_attach_reap(env->streams, SL_MAX_STREAMS, 5000);
	/* A one-off environment is never kept: nobody could re-attach to it. */
	if (env->rec.job[0] && (!(flags & HS_CLOSE_KEEP) || !env->persistent)) {
		struct sl_jobinfo ji;
		char e2[HS_ERR_MAX];
		if (sl_job_query(env, &ji, e2) == HS_OK && strcmp(ji.state, "RUNNING") == 0)
			stop_daemon(env);
		rc = sl_job_cancel(env, err);
		if (rc == HS_OK) {
			/* Wait until the controller has let the job go, so squeue no longer lists it. */
			const struct hs_host_v1 *h = env->st->host;
			uint64_t end = h->now_ms(h->ctx) + 20000;
			while (h->now_ms(h->ctx) < end && sl_job_query(env, &ji, e2) == HS_OK &&
			       (strcmp(ji.state, "RUNNING") == 0 || strcmp(ji.state, "COMPLETING") == 0 ||
			        sl_job_waiting(ji.state))) {
				struct timespec ts = { 0, 200 * 1000 * 1000 };
				nanosleep(&ts, NULL);
			}
			sl_record_remove(env->recpath);
			unlink(env->logpath);
		}
	}
	free(env);
	return rc;
}

HS_BACKEND_EXPORT const struct hs_backend_v1 hs_backend_v1 = {
	HS_BACKEND_V1_HEADER,
	.name = "slurm",
	.version = PACKAGE_VERSION,
	.summary = "run commands in Slurm batch jobs on an HPC cluster, through hs-runner",
	.caps = HS_CAP_RUNNER | HS_CAP_PERSIST | HS_CAP_FILES | HS_CAP_LIMITS | HS_CAP_IMAGE,
	.config_keys = sl_keys,
	.config_rules = sl_rules,
	.init = sl_init,
	.fini = sl_fini,
	.probe = sl_probe,
	.open = sl_open,
	.runner_stream = sl_runner_stream,
	.close = sl_close,
};
