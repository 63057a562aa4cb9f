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

#include "plugins/slurm/slurm.h"

static int64_t
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
take(char *buf, size_t cap, size_t *len, const char *p, size_t n)
{
	if (*len + 1 >= cap)
		return;
	if (n > cap - 1 - *len)
		n = cap - 1 - *len;
	memcpy(buf + *len, p, n);
	*len += n;
	buf[*len] = '\0';
}

int
sl_cmd(const struct sl_state *st, const char *const *argv, const char *in, size_t inlen,
       int timeout_ms, struct sl_out *o)
{
	posix_spawn_file_actions_t fa;
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	size_t olen = 0, elen = 0, done_in = 0;
	pid_t pid;
	int status = 0;

	memset(o, 0, sizeof(*o));
	o->status = -1;
	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
		snprintf(o->err, sizeof(o->err), "cannot create a pipe: %s", strerror(errno));
		goto fail;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
	posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
	posix_spawn_file_actions_adddup2(&fa, perr[1], 2);
	int e = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, (char *const *)st->envv);
	posix_spawn_file_actions_destroy(&fa);
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	pin[0] = pout[1] = perr[1] = -1;
	if (e != 0) {
		snprintf(o->err, sizeof(o->err), "cannot run '%s': %s", argv[0], strerror(e));
		goto fail;
	}
	if (!in || inlen == 0) {
		close(pin[1]);
		pin[1] = -1;
	} else {
		fcntl(pin[1], F_SETFL, O_NONBLOCK);
	}
	int64_t end = mono_ms() + timeout_ms;
	while (pout[0] >= 0 || perr[0] >= 0) {
		struct pollfd pf[3] = { { pout[0], POLLIN, 0 }, { perr[0], POLLIN, 0 },
		                        { pin[1], POLLOUT, 0 } };
		int64_t left = end - mono_ms();
		if (left <= 0) {
			kill(pid, SIGKILL);
			o->timed_out = 1;
			break;
		}
		int n = poll(pf, 3, (int)(left > 1000 ? 1000 : left));
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0)
			continue;
		if (pin[1] >= 0 && (pf[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(pin[1], in + done_in, inlen - done_in);
			if (w > 0)
				done_in += (size_t)w;
			if (w < 0 && errno != EAGAIN && errno != EINTR)
				done_in = inlen;
			if (done_in >= inlen) {
				close(pin[1]);
				pin[1] = -1;
			}
		}
		for (int i = 0; i < 2; i++) {
			int *fd = i ? &perr[0] : &pout[0];
			if (*fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char buf[4096];
			ssize_t r = read(*fd, buf, sizeof(buf));
			if (r > 0) {
				if (i)
					take(o->err, sizeof(o->err), &elen, buf, (size_t)r);
				else
					take(o->out, sizeof(o->out), &olen, buf, (size_t)r);
			} else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
				close(*fd);
				*fd = -1;
			}
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	o->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	for (int i = 0; i < 2; i++) {
		int fd = i ? perr[0] : pout[0];
		if (fd >= 0)
			close(fd);
	}
	if (pin[1] >= 0)
		close(pin[1]);
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (pin[i] >= 0)
			close(pin[i]);
		if (pout[i] >= 0)
			close(pout[i]);
		if (perr[i] >= 0)
			close(perr[i]);
	}
	return -1;
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
