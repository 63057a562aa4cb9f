/* SPDX-License-Identifier: MIT */
/*
 * sl_cmd.c - running Slurm's client programs, and the job record.
 *
 * The clients get a minimal environment (PATH, HOME, USER, LOGNAME, TZ and
 * the SLURM_CONF/SLURM_CLUSTERS that say which cluster to talk to), never
 * hs's own: sbatch and srun send environment variables to slurmctld, which
 * keeps them, so nothing of the user's environment may reach them.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hs/hsb.h>

#include "plugins/slurm/slurm.h"

int
sl_cmd(const struct sl_state *st, const char *const *argv, const char *in, size_t inlen,
       int timeout_ms, struct sl_out *o)
{
	char err[HSB_ERR_MAX];
	struct hsb_run r = {
		.argv = argv, .envp = (const char *const *)st->envv,
		.in = in && inlen ? in : "", .in_len = in ? inlen : 0, .timeout_ms = timeout_ms,
		.out = o->out, .out_cap = sizeof(o->out), .err = o->err, .err_cap = sizeof(o->err),
	};

	memset(o, 0, sizeof(*o));
	o->status = -1;
	if (hsb_run(&r, err) < 0) {
		snprintf(o->err, sizeof(o->err), "%s", err);
		return -1;
	}
	o->status = r.status;
	o->timed_out = r.timed_out;
	return 0;
}

const char *
sl_lastline(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		s[--n] = '\0';
	char *nl = strrchr(s, '\n');
	return nl ? nl + 1 : s;
}

int
sl_safe_word(const char *s)
{
	if (!s || !*s)
		return 0;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@,=",
		            *s))
			return 0;
	return 1;
}

int
sl_record_load(const char *path, struct sl_record *r, char *err)
{
	struct stat sb;
	char buf[2048];
	memset(r, 0, sizeof(*r));
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 1;
		snprintf(err, HS_ERR_MAX, "cannot open the job record '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
	    (sb.st_mode & 077)) {
		close(fd);
		snprintf(err, HS_ERR_MAX, "the job record '%s' is not a private file of this user "
		         "(want mode 0600); remove it", path);
		return -1;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		snprintf(err, HS_ERR_MAX, "cannot read the job record '%s': %s", path, strerror(errno));
		return -1;
	}
	buf[n] = '\0';
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq++ = '\0';
		if (strcmp(line, "job") == 0)
			snprintf(r->job, sizeof(r->job), "%s", eq);
		else if (strcmp(line, "nonce") == 0)
			snprintf(r->nonce, sizeof(r->nonce), "%s", eq);
		else if (strcmp(line, "dir") == 0)
			snprintf(r->dir, sizeof(r->dir), "%s", eq);
		else if (strcmp(line, "runner") == 0)
			snprintf(r->runner, sizeof(r->runner), "%s", eq);
		else if (strcmp(line, "copied") == 0)
			r->copied = strcmp(eq, "1") == 0;
	}
	if (!r->job[0] || strspn(r->job, "0123456789") != strlen(r->job) || !sl_safe_word(r->dir) ||
	    !sl_safe_word(r->runner)) {
		snprintf(err, HS_ERR_MAX, "the job record '%s' is damaged; cancel its job by hand "
		         "(squeue --me) and remove the file", path);
		return -1;
	}
	return 0;
}

int
sl_record_save(const char *path, const struct sl_record *r, char *err)
{
	char tmp[1100], buf[2048];
	int n = snprintf(buf, sizeof(buf), "job=%s\nnonce=%s\ndir=%s\nrunner=%s\ncopied=%d\n", r->job,
	                 r->nonce, r->dir, r->runner, r->copied);
	snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, HS_ERR_MAX, "cannot write the job record '%s': %s", tmp, strerror(errno));
		return -1;
	}
	if (write(fd, buf, (size_t)n) != n || fsync(fd) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot write the job record '%s': %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot rename the job record to '%s': %s", path,
		         strerror(errno));
		unlink(tmp);
		return -1;
	}
	/* The directory entry too: a crash right after sbatch must not lose the job id. */
	char dir[1100];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	return 0;
}

void
sl_record_remove(const char *path)
{
	unlink(path);
}
