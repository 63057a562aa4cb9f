/* SPDX-License-Identifier: MIT */
/* Commands on a pseudo-terminal (HSR_EXEC_PTY, hs-runner(7) "Terminals").
 *
 * The daemon opens the master (close-on-exec, never its controlling
 * terminal), the shim's child makes the slave its controlling terminal
 * and its descriptors 0, 1 and 2.  The master is the command's stdout
 * stream (through the spool like any pipe) and where STDIN frames go; a
 * terminal has no separate stderr.  A command of the session runs in its
 * own shell started from a dump of the session shell's state, so the
 * session shell is never held by an interactive program.
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#define PTY_TERM "TERM=xterm-256color"

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Opens a master and its slave of size rows x cols.  Returns 0 or -1. */
static int pty_open(uint16_t rows, uint16_t cols, int *master, int *slave, unsigned long *rdev)
{
	struct winsize ws = { .ws_row = rows, .ws_col = cols };
	struct stat st;
	const char *name;

	*slave = -1;
	*master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*master < 0)
		return -1;
	if (grantpt(*master) < 0 || unlockpt(*master) < 0 || !(name = ptsname(*master)))
		goto fail;
	*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0 || fstat(*slave, &st) < 0 || !S_ISCHR(st.st_mode))
		goto fail;
	*rdev = (unsigned long)st.st_rdev;
	if (ioctl(*master, TIOCSWINSZ, &ws) < 0)
		goto fail;
	return 0;
fail:
	{
		int e = errno;

		close_fd(slave);
		close_fd(master);
		errno = e ? e : EIO;
	}
	return -1;
}

/* envp with TERM added when it names none (freed by the caller). */
static char **with_term(char **envp)
{
	size_t n = 0;
	char **v;

	for (; envp && envp[n]; n++)
		if (strncmp(envp[n], "TERM=", 5) == 0)
			return NULL;
	v = calloc(n + 2, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		v[i] = envp[i];
	v[n] = (char *)PTY_TERM;
	return v;
}

int hsr_pty_spawn(struct hsr_daemon *d, struct hsr_cmd *cmd, char **argv, char **envp,
		  int merge_env, const char *cwd, char *err, size_t errlen)
{
	int master = -1, slave = -1, ctl[2] = { -1, -1 }, status[2] = { -1, -1 };
	int in = -1, ptyfd = -1;
	struct hsr_shim_spec spec;
	char **env2 = with_term(envp);
	pid_t pid;

	if (pty_open(cmd->rows, cmd->cols, &master, &slave, &cmd->pty_rdev) < 0) {
		snprintf(err, errlen, "cannot open a terminal for command '%s': %s", argv[0],
			 strerror(errno));
		goto fail;
	}
	if (pipe2(ctl, O_CLOEXEC) < 0 || pipe2(status, O_CLOEXEC) < 0 ||
	    (in = fcntl(master, F_DUPFD_CLOEXEC, 3)) < 0 ||
	    (ptyfd = fcntl(master, F_DUPFD_CLOEXEC, 3)) < 0) {
		snprintf(err, errlen, "cannot start command '%s': %s", argv[0], strerror(errno));
		goto fail;
	}
	memset(&spec, 0, sizeof(spec));
	spec.argv = argv;
	spec.envp = env2 ? env2 : envp;
	spec.merge_env = merge_env;
	spec.cwd = cwd;
	spec.fd_in = spec.fd_out = spec.fd_err = slave;
	spec.fd_state = -1;
	spec.pty = 1;
	spec.ctl_fd = ctl[0];
	spec.status_fd = status[1];
	spec.deadline = cmd->pty_deadline_ms > 0 ? hsr_now_ms() + cmd->pty_deadline_ms : 0;
	spec.grace_ms = cmd->grace_ms;
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot start command '%s': fork: %s", argv[0],
			 strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		hsr_wipe(d->key, sizeof(d->key));
		hsr_shim_run(&spec);
	}
	free(env2);
	close(slave);
	close(ctl[0]);
	close(status[1]);
	cmd->stop_at = spec.deadline;
	cmd->shim = pid;
	cmd->pipe_fd[1] = master;
	cmd->stdin_fd = in;
	cmd->pty_fd = ptyfd;
	cmd->ctl_fd = ctl[1];
	cmd->status_fd = status[0];
	fcntl(master, F_SETFL, O_NONBLOCK); /* shared with the two duplicates */
	fcntl(cmd->ctl_fd, F_SETFL, O_NONBLOCK);
	return 0;
fail:
	free(env2);
	close_fd(&master);
	close_fd(&slave);
	close_fd(&in);
	close_fd(&ptyfd);
	for (int i = 0; i < 2; i++) {
		close_fd(&ctl[i]);
		close_fd(&status[i]);
	}
	return -1;
}

void hsr_pty_resize(struct hsr_cmd *cmd, uint16_t rows, uint16_t cols)
{
	struct winsize ws = { .ws_row = rows, .ws_col = cols };

	cmd->rows = rows;
	cmd->cols = cols;
	/* The kernel sends SIGWINCH to the foreground process group. */
	if (cmd->pty_fd >= 0 && ioctl(cmd->pty_fd, TIOCSWINSZ, &ws) < 0)
		hsr_warn("cannot resize the terminal of command %llu: %s",
			 (unsigned long long)cmd->id, strerror(errno));
}

int hsr_pty_signal(struct hsr_cmd *cmd, int sig)
{
	pid_t pg;

	if (cmd->pty_fd < 0 || cmd->done)
		return -1;
	pg = tcgetpgrp(cmd->pty_fd);
	if (pg <= 0 || kill(-pg, sig) < 0)
		return -1;
	return 0;
}

uint8_t hsr_pty_veof(const struct hsr_cmd *cmd)
{
	struct termios t;

	if (cmd->pty_fd >= 0 && tcgetattr(cmd->pty_fd, &t) == 0 && t.c_cc[VEOF])
		return (uint8_t)t.c_cc[VEOF];
	return 4; /* ^D */
}

int hsr_pty_waiting(const struct hsr_cmd *cmd)
{
	pid_t pg;

	if (cmd->pty_fd < 0 || cmd->done || cmd->stdin_pos < cmd->stdin_buf.len)
		return 0;
	pg = tcgetpgrp(cmd->pty_fd);
	/* The group's leader: the program a shell put in the foreground. */
	return pg > 0 && hsr_proc_reading(pg, 0, cmd->pty_rdev);
}

/* The name of a session PTY command's file: "sh.pty-ID" plus suffix. */
static void pty_file(const struct hsr_cmd *cmd, const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "sh.pty-%llu%s", (unsigned long long)cmd->id, suffix);
}

/* Ends a session PTY command that could not start, with why on stderr. */
static void session_fail(struct hsr_daemon *d, struct hsr_cmd *cmd, const char *why)
{
	static const char pfx[] = "hs-runner: ";

	hsr_spool_append(&cmd->sp[2], d->rd->dirfd, pfx, sizeof(pfx) - 1);
	hsr_spool_append(&cmd->sp[2], d->rd->dirfd, why, strlen(why));
	hsr_spool_append(&cmd->sp[2], d->rd->dirfd, "\n", 1);
	cmd->st.exit_code = 126;
	hsr_pty_cleanup(d, cmd);
}

void hsr_pty_from_session(struct hsr_daemon *d, struct hsr_cmd *cmd, const char *shell,
			  char **envp, const char *agent_trap)
{
	char state[64], run[64], path[4200], err[512];
	char *argv[] = { (char *)shell, "--norc", "--noprofile", "-c", NULL, NULL };
	struct hsr_buf b, c;
	int fd;

	if (!cmd->pty_ready || cmd->st.timed_out || cmd->st.cancelled)
		return; /* it ends as the dump did */
	cmd->pty_ready = 0;
	pty_file(cmd, "", state, sizeof(state));
	pty_file(cmd, ".run", run, sizeof(run));
	if (renameat(d->rd->dirfd, "sh.pty", d->rd->dirfd, state) < 0) {
		snprintf(err, sizeof(err), "cannot take the session's state for the terminal: %s",
			 strerror(errno));
		session_fail(d, cmd, err);
		return;
	}
	/* The program: the session's state (its errors, such as read-only
	 * variables, are not the command's), none of our traps, then the
	 * command as the agent wrote it. */
	hsr_buf_init(&b);
	hsr_put_s(&b, "{ \\builtin . ");
	snprintf(path, sizeof(path), "%s/%s", d->rd->path, state);
	hsr_put_sq(&b, path);
	hsr_put_s(&b, "; } 2>/dev/null\n\\builtin trap - EXIT\n");
	if (agent_trap) {
		hsr_put_s(&b, "{ \\builtin ");
		hsr_put_s(&b, agent_trap);
		hsr_put_s(&b, "; } 2>/dev/null\n");
	}
	hsr_put_s(&b, "\\builtin unset __hs_o __hs_f __hs_i\n");
	hsr_put_s(&b, cmd->pty_cmd ? cmd->pty_cmd : "");
	hsr_put_s(&b, "\n");
	fd = openat(d->rd->dirfd, run, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (b.failed || fd < 0 || write(fd, b.data, b.len) != (ssize_t)b.len) {
		snprintf(err, sizeof(err), "cannot write the terminal command's program: %s",
			 b.failed ? "out of memory" : strerror(errno));
		if (fd >= 0)
			close(fd);
		hsr_buf_free(&b);
		session_fail(d, cmd, err);
		return;
	}
	close(fd);
	hsr_buf_free(&b);
	hsr_buf_init(&c);
	hsr_put_s(&c, "\\builtin . ");
	snprintf(path, sizeof(path), "%s/%s", d->rd->path, run);
	hsr_put_sq(&c, path);
	hsr_buf_put(&c, "", 1);
	if (c.failed) {
		hsr_buf_free(&c);
		session_fail(d, cmd, "out of memory");
		return;
	}
	argv[4] = (char *)c.data;

	/* From here on a one-shot command: what the dump step left is not its. */
	for (int s = 1; s <= 2; s++) {
		uint64_t head = cmd->sp[s].head, tail = cmd->sp[s].tail;

		close_fd(&cmd->pipe_fd[s]);
		hsr_spool_close(&cmd->sp[s]);
		hsr_spool_init(&cmd->sp[s], head, tail);
	}
	cmd->session = 0;
	cmd->jobs_left = 0;
	memset(&cmd->st, 0, sizeof(cmd->st));
	if (hsr_pty_spawn(d, cmd, argv, envp, 0, "/", err, sizeof(err)) < 0) {
		session_fail(d, cmd, err);
		hsr_buf_free(&c);
		return;
	}
	hsr_buf_free(&c);
	cmd->done = 0;
	cmd->drain_until = 0;
	hsr_cmd_stdin_kick(cmd); /* what was written while the state was taken */
}

void hsr_pty_cleanup(struct hsr_daemon *d, struct hsr_cmd *cmd)
{
	char name[64];

	if (!cmd->pty_cmd)
		return;
	pty_file(cmd, "", name, sizeof(name));
	unlinkat(d->rd->dirfd, name, 0);
	pty_file(cmd, ".run", name, sizeof(name));
	unlinkat(d->rd->dirfd, name, 0);
}
