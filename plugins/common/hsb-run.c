/* SPDX-License-Identifier: MIT */
/*
 * hsb-run.c - libhsb: run a program and capture its output (sdk/hs/hsb.h),
 * the one spawn-and-capture of the local, singularity and slurm backends.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hs/hsb.h>

#include "plugins/common/hsb-int.h"

/* Adds n bytes to buf (cap bytes with the NUL, *used so far): the first
 * that fit, or with tail the last. */
static void
keep(char *buf, size_t cap, size_t *used, int tail, const char *p, size_t n)
{
	if (!buf || cap < 2)
		return;
	size_t room = cap - 1;
	if (!tail) {
		if (n > room - *used)
			n = room - *used;
	} else if (n >= room) {
		p += n - room;
		n = room;
		*used = 0;
	} else if (*used + n > room) {
		size_t drop = *used + n - room;
		memmove(buf, buf + drop, *used - drop);
		*used -= drop;
	}
	memcpy(buf + *used, p, n);
	*used += n;
	buf[*used] = '\0';
}

static void
close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

int
hsb_run(struct hsb_run *r, char *err)
{
	static const char *const noenv[] = { NULL };
	const char *path = r->path ? r->path : r->argv[0];
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 }, status = 0, e;
	size_t used[2] = { 0, 0 }, done_in = 0;
	posix_spawn_file_actions_t fa;
	pid_t pid;

	r->status = -1;
	r->timed_out = 0;
	if (r->out && r->out_cap)
		r->out[0] = '\0';
	if (r->err && r->err_cap)
		r->err[0] = '\0';
	if ((r->in && pipe2(pin, O_CLOEXEC) < 0) || pipe2(pout, O_CLOEXEC) < 0 ||
	    (r->err && pipe2(perr, O_CLOEXEC) < 0)) {
		snprintf(err, HSB_ERR_MAX, "cannot create a pipe: %s", strerror(errno));
		close_pair(pin);
		close_pair(pout);
		close_pair(perr);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	if (r->in)
		posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
	posix_spawn_file_actions_adddup2(&fa, r->err ? perr[1] : pout[1], 2);
	e = posix_spawn(&pid, path, &fa, NULL, (char *const *)r->argv,
	                (char *const *)(r->envp ? r->envp : noenv));
	posix_spawn_file_actions_destroy(&fa);
	/* Our copies of the child's ends go, so its exit ends our reads. */
	if (pin[0] >= 0)
		close(pin[0]);
	close(pout[1]);
	if (perr[1] >= 0)
		close(perr[1]);
	pin[0] = pout[1] = perr[1] = -1;
	if (e != 0) {
		close_pair(pin);
		close_pair(pout);
		close_pair(perr);
		snprintf(err, HSB_ERR_MAX, "cannot start '%s': %s", path, strerror(e));
		return -1;
	}
	if (pin[1] >= 0 && r->in_len == 0) {
		close(pin[1]);
		pin[1] = -1;
	} else if (pin[1] >= 0) {
		fcntl(pin[1], F_SETFL, O_NONBLOCK);
	}
	int64_t end = r->timeout_ms > 0 ? hsb_mono_ms() + r->timeout_ms : 0;
	while (pout[0] >= 0 || perr[0] >= 0) {
		struct pollfd pf[3] = { { pout[0], POLLIN, 0 }, { perr[0], POLLIN, 0 },
		                        { pin[1], POLLOUT, 0 } };
		int64_t left = end ? end - hsb_mono_ms() : 1000;
		if (end && left <= 0) {
			kill(pid, SIGKILL);
			r->timed_out = 1;
			break;
		}
		int n = poll(pf, 3, (int)(left > 1000 ? 1000 : left));
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0)
			continue;
		if (pin[1] >= 0 && (pf[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(pin[1], (const char *)r->in + done_in, r->in_len - done_in);
			if (w > 0)
				done_in += (size_t)w;
			if ((w < 0 && errno != EAGAIN && errno != EINTR) || done_in >= r->in_len) {
				close(pin[1]);
				pin[1] = -1;
			}
		}
		for (int i = 0; i < 2; i++) {
			int *fd = i ? &perr[0] : &pout[0];
			if (*fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char buf[4096];
			ssize_t got = read(*fd, buf, sizeof(buf));
			if (got > 0) {
				if (i)
					keep(r->err, r->err_cap, &used[1], r->keep_tail, buf, (size_t)got);
				else
					keep(r->out, r->out_cap, &used[0], r->keep_tail, buf, (size_t)got);
			} else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
				close(*fd);
				*fd = -1;
			}
		}
	}
	close_pair(pin);
	close_pair(pout);
	close_pair(perr);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return 0;
}
