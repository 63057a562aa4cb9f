/* SPDX-License-Identifier: MIT */
/* The per-command shim: a fork of the daemon that supervises one command.
 *
 * The shim is a child subreaper, so every process the command leaves
 * behind (`cmd &`, `setsid cmd &`, double forks) is re-parented to it and
 * can be found and killed.  The command runs in its own session and
 * process group.  At the deadline or on cancel the shim sends TERM to the
 * group and every descendant, waits the grace period, then sends KILL
 * until no descendant remains.  The command is done when its top process
 * exits: the shim reports the status at once and then removes whatever
 * the command left running (TERM, grace, KILL), so nothing of a finished
 * command survives it and nobody waits for leftovers.  A command stopped
 * at its deadline or by a cancel is reported only once no process of it
 * is left.
 *
 * The one-shot runner (`hs-runner --exec`, exec-mode backends) is the same
 * supervisor run in the runner's own process, with stop signals to it in
 * place of the control pipe, and it returns only when the tree is gone.
 */
#include "runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got_sigchld;

static void on_sigchld(int sig)
{
	(void)sig;
	got_sigchld = 1;
}

/* Closes lo..hi, with close_range(2) where the kernel has it. */
static void close_range_compat(unsigned lo, unsigned hi)
{
	struct rlimit rl;
	unsigned max = 65536;

	if (syscall(SYS_close_range, lo, hi, 0) == 0)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < max)
		max = (unsigned)rl.rlim_cur;
	for (unsigned fd = lo; fd <= hi && fd < max; fd++)
		close((int)fd);
}

/* The shim: the daemon's sockets and other commands' pipes must not live
 * on in this process, or their peers would never see end-of-file.  The
 * detached daemon: what its starter left open (a shell's `9>&1`) would
 * keep the starter's readers waiting as long as the daemon lives. */
void hsr_close_others(const int *keep, int nkeep)
{
	int sorted[8], n = 0;
	unsigned lo = 3;

	for (int i = 0; i < nkeep && n < 8; i++)
		if (keep[i] >= 3)
			sorted[n++] = keep[i];
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
			int t = sorted[j];

			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	for (int i = 0; i < n; i++) {
		if ((unsigned)sorted[i] > lo)
			close_range_compat(lo, (unsigned)sorted[i] - 1);
		if ((unsigned)sorted[i] >= lo)
			lo = (unsigned)sorted[i] + 1;
	}
	close_range_compat(lo, ~0u);
}

static void write_str(int fd, const char *a, const char *b, const char *c, const char *d)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), "hs-runner: %s%s%s%s\n", a, b, c, d);
	if (write(fd, msg, strlen(msg)) < 0) {
		/* Nothing more can be reported. */
	}
}

/* Looks argv[0] up in the PATH of the command's own environment (not the
 * daemon's) and executes it; returns only on failure. */
static void exec_path(char **argv, char **envp)
{
	const char *path = NULL;
	char buf[PATH_MAX];
	int saved = ENOENT;

	if (strchr(argv[0], '/')) {
		execve(argv[0], argv, envp);
		return;
	}
	for (char **e = envp; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t dl = colon ? (size_t)(colon - path) : strlen(path);

		if (dl + strlen(argv[0]) + 2 <= sizeof(buf)) {
			if (dl == 0)
				snprintf(buf, sizeof(buf), "%s", argv[0]);
			else
				snprintf(buf, sizeof(buf), "%.*s/%s", (int)dl, path, argv[0]);
			execve(buf, argv, envp);
			if (errno != ENOENT && errno != ENOTDIR)
				saved = errno;
		}
		path += dl;
		if (*path == ':')
			path++;
	}
	errno = saved;
}

/* The daemon's environment (minus HS_*) with every entry of over put on
 * top, for HSR_EXEC_MERGE_ENV.  Runs in the forked child only. */
static char **merged_env(char **over)
{
	size_t n = 0, m = 0, k = 0;
	char **v;

	while (environ && environ[n])
		n++;
	while (over[m])
		m++;
	v = calloc(n + m + 1, sizeof(*v));
	if (!v)
		return over;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		int replaced = strncmp(environ[i], "HS_", 3) == 0;

		for (size_t j = 0; j < m && !replaced; j++)
			if (strncmp(over[j], environ[i], nl) == 0 && over[j][nl] == '=')
				replaced = 1;
		if (!replaced)
			v[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++)
		v[k++] = over[j];
	v[k] = NULL;
	return v;
}

static void child_exec(const struct hsr_shim_spec *s)
{
	char **envp = s->merge_env ? merged_env(s->envp) : s->envp;

	sigset_t none;

	sigemptyset(&none);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	/* The daemon's own umask (077) is not the command's. */
	umask(022);
	if (dup2(s->fd_in, 0) < 0 || dup2(s->fd_out, 1) < 0 || dup2(s->fd_err, 2) < 0)
		_exit(126);
	if (s->pty && ioctl(0, TIOCSCTTY, 0) < 0) {
		write_str(2, "cannot take the terminal: ", strerror(errno), "", "");
		_exit(126);
	}
	if (s->fd_state >= 0) {
		if (dup2(s->fd_state, 3) < 0)
			_exit(126);
	} else {
		close(3);
	}
	if (chdir(s->cwd && *s->cwd ? s->cwd : "/") < 0) {
		write_str(2, "cannot change directory to '", s->cwd, "': ", strerror(errno));
		_exit(126);
	}
	exec_path(s->argv, envp);
	{
		int e = errno;

		write_str(2, "cannot execute '", s->argv[0], "': ", strerror(e));
		_exit(e == ENOENT ? 127 : 126);
	}
}

/* Sends sig to every process whose parent chain leads to the shim.
 * Returns how many were signalled.  Needs /proc; without it only the
 * process group is reached. */
static int kill_descendants(int sig)
{
	pid_t self = getpid();
	struct hsr_proc *t;
	int n = hsr_proc_table(&t), hits = 0;

	for (int i = 0; i < n; i++) {
		struct hsr_proc *q = &t[i];

		for (int depth = 0; q && depth < 4096; depth++) {
			if (q->ppid == self) {
				if (kill(t[i].pid, sig) == 0)
					hits++;
				break;
			}
			q = hsr_proc_find(t, n, q->ppid);
		}
	}
	free(t);
	return hits;
}

struct shim {
	pid_t child;
	int top_done;
	int status_sent;
	int killing;      /* TERM sent; KILL at kill_at */
	int killed;       /* KILL phase reached */
	int64_t kill_at;
	int64_t grace_ms;
	struct hsr_shim_status st;
};

/* The child makes itself a session and group leader with setsid(); until
 * it has done so the group does not exist, so the child is signalled
 * directly instead. */
static void signal_group(struct shim *sh, int sig)
{
	if (sh->child > 0 && kill(-sh->child, sig) < 0 && errno == ESRCH && !sh->top_done)
		kill(sh->child, sig);
}

static void start_kill(struct shim *sh)
{
	if (sh->killing)
		return;
	sh->killing = 1;
	sh->kill_at = hsr_now_ms() + sh->grace_ms;
	signal_group(sh, SIGTERM);
	kill_descendants(SIGTERM);
	/* A stopped process cannot act on TERM until continued. */
	signal_group(sh, SIGCONT);
	kill_descendants(SIGCONT);
}

static void reap(struct shim *sh, int *none_left)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			*none_left = errno == ECHILD;
			return;
		}
		if (pid == 0)
			return;
		if (pid == sh->child && !sh->top_done) {
			sh->top_done = 1;
			if (WIFEXITED(status))
				sh->st.exit_code = WEXITSTATUS(status);
			else if (WIFSIGNALED(status))
				sh->st.exit_code = 128 + WTERMSIG(status);
		}
	}
}

static void read_ctl(struct shim *sh, int fd, int *ctl_open)
{
	uint8_t msg[5];
	uint32_t arg;
	ssize_t n;

	do
		n = read(fd, msg, sizeof(msg));
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		if (n < 0 && errno == EAGAIN)
			return;
		/* The daemon is gone: nobody can collect the output. */
		*ctl_open = 0;
		if (!sh->top_done)
			sh->st.cancelled = 1;
		start_kill(sh);
		return;
	}
	if (n != 5)
		return;
	arg = (uint32_t)msg[1] | (uint32_t)msg[2] << 8 | (uint32_t)msg[3] << 16 |
	      (uint32_t)msg[4] << 24;
	if (msg[0] == HSR_SHIM_CANCEL) {
		/* A shutdown's grace replaces the command's own; a kill in
		 * progress is only ever hurried, never delayed. */
		if (arg != HSR_GRACE_DEFAULT) {
			int64_t at = hsr_now_ms() + (int64_t)arg;

			sh->grace_ms = (int64_t)arg;
			if (sh->killing && at < sh->kill_at)
				sh->kill_at = at;
		}
		if (!sh->top_done)
			sh->st.cancelled = 1;
		/* After the top process exited this only matters for
		 * leftovers, whose kill is normally already under way. */
		start_kill(sh);
	} else if (msg[0] == HSR_SHIM_SIGNAL && !sh->top_done) {
		signal_group(sh, (int)arg);
	}
}

/* A stop signal to the one-shot runner (`hs-runner --exec`); 0 in the daemon's
 * shims, which take their cancels from the control pipe. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

/* Starts the command under a subreaper and supervises it until no process
 * of it is left: the deadline and cancels (control pipe, or a stop signal
 * when stop_sigs is set) kill the whole tree.  status_fd, when not -1,
 * gets the status as soon as the top process exits (or, after a kill, once
 * the tree is gone).  Fills *st and returns the stop signal that ended the
 * command, or 0. */
static int supervise(const struct hsr_shim_spec *s, int stop_sigs, struct hsr_shim_status *st)
{
	static const int stops[] = { SIGTERM, SIGINT, SIGHUP };
	struct shim sh = { .grace_ms = s->grace_ms };
	struct sigaction sa;
	sigset_t block, waitmask;
	int ctl_open = s->ctl_fd >= 0, stopped_by = 0;

	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	if (stop_sigs) {
		sa.sa_handler = on_stop_signal;
		for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
			sigaction(stops[i], &sa, NULL);
			sigaddset(&block, stops[i]);
		}
	} else {
		signal(SIGTERM, SIG_DFL);
	}
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&block, sig) == 1)
			sigdelset(&waitmask, sig);

	sh.child = fork();
	if (sh.child < 0) {
		hsr_warn("cannot start '%s': %s", s->argv[0], strerror(errno));
		sh.st.exit_code = 126;
		sh.top_done = 1;
	} else if (sh.child == 0) {
		if (s->ctl_fd >= 0)
			close(s->ctl_fd);
		if (s->status_fd >= 0)
			close(s->status_fd);
		child_exec(s);
	}
	/* The one-shot runner keeps its own stdio (the command's are the
	 * same descriptors); a shim holds only the command's ends. */
	if (s->ctl_fd >= 0) {
		close(s->fd_in);
		if (s->fd_out != s->fd_in)
			close(s->fd_out);
		if (s->fd_err != s->fd_in && s->fd_err != s->fd_out)
			close(s->fd_err);
		if (s->fd_state >= 0)
			close(s->fd_state);
		fcntl(s->ctl_fd, F_SETFL, O_NONBLOCK);
	}

	for (;;) {
		struct pollfd pfd = { .fd = ctl_open ? s->ctl_fd : -1, .events = POLLIN };
		int64_t now = hsr_now_ms(), wake = -1;
		int none_left = 0;
		struct timespec ts, *tsp = NULL;

		got_sigchld = 0;
		reap(&sh, &none_left);
		if (stop_signal && !stopped_by) {
			stopped_by = stop_signal;
			if (!sh.top_done)
				sh.st.cancelled = 1;
			start_kill(&sh);
		}
		/* A command stopped at its deadline or by a cancel is reported
		 * only once its whole tree is gone (a TERM-ignoring child lasts
		 * until the KILL after the grace): "timed out" then means no
		 * process of it is left.  A command that finished on its own is
		 * reported at once, and its leftovers are removed after. */
		if (sh.top_done && !sh.status_sent &&
		    (none_left || !(sh.st.timed_out || sh.st.cancelled))) {
			sh.status_sent = 1;
			if (s->status_fd >= 0) {
				if (write(s->status_fd, &sh.st, sizeof(sh.st)) < 0) {
					/* The daemon is gone; cleanup below still runs. */
				}
				close(s->status_fd);
			}
			/* Without children there can be no descendants, so
			 * the common case skips the walk of /proc. */
			if (!none_left)
				start_kill(&sh); /* leftovers of a finished command */
		}
		if (sh.top_done && none_left) {
			*st = sh.st;
			return stopped_by;
		}
		if (!sh.top_done && !sh.killing && s->deadline > 0) {
			if (now >= s->deadline) {
				sh.st.timed_out = 1;
				start_kill(&sh);
			} else {
				wake = s->deadline;
			}
		}
		if (sh.killing) {
			if (now >= sh.kill_at) {
				sh.killed = 1;
				signal_group(&sh, SIGKILL);
				kill_descendants(SIGKILL);
				/* Poll again soon: a process may have forked
				 * between the walk and the signal. */
				wake = now + 20;
			} else if (wake < 0 || sh.kill_at < wake) {
				wake = sh.kill_at;
			}
		}
		if (wake >= 0) {
			int64_t d = wake - hsr_now_ms();

			if (d < 0)
				d = 0;
			ts.tv_sec = d / 1000;
			ts.tv_nsec = (d % 1000) * 1000000;
			tsp = &ts;
		}
		if (ppoll(&pfd, 1, tsp, &waitmask) > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			read_ctl(&sh, s->ctl_fd, &ctl_open);
	}
}

void hsr_shim_run(const struct hsr_shim_spec *s)
{
	int keep[] = { s->fd_in, s->fd_out, s->fd_err, s->fd_state, s->ctl_fd, s->status_fd };
	struct hsr_shim_status st;

	hsr_close_others(keep, 6);
	supervise(s, 0, &st);
	_exit(0);
}

int hsr_shim_oneshot(const struct hsr_shim_spec *s)
{
	struct hsr_shim_status st;
	int sig;

	hsr_close_others(NULL, 0);
	sig = supervise(s, 1, &st);
	if (st.timed_out)
		return 124;
	if (sig && st.cancelled)
		return 128 + sig;
	return st.exit_code;
}
