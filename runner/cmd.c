/* SPDX-License-Identifier: MIT */
/* Commands: starting them under a shim, moving their output through the
 * spool to the owning stream within its credit, and reporting the exit. */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct hsr_cmd *hsr_cmd_find(struct hsr_daemon *d, uint64_t id)
{
	for (struct hsr_cmd *c = d->cmds; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void hsr_cmd_free(struct hsr_cmd *cmd)
{
	for (int s = 1; s <= 3; s++) {
		close_fd(&cmd->pipe_fd[s]);
		hsr_spool_close(&cmd->sp[s]);
	}
	close_fd(&cmd->stdin_fd);
	close_fd(&cmd->pty_fd);
	free(cmd->pty_cmd);
	free(cmd->pty_feed);
	/* Closing the control pipe tells a still running shim to kill the
	 * command: nobody is left to collect its output. */
	close_fd(&cmd->ctl_fd);
	close_fd(&cmd->status_fd);
	if (cmd->session) {
		close_fd(&cmd->hold_fd);
		close_fd(&cmd->sync_fd);
		free(cmd->req);
	}
	hsr_buf_free(&cmd->stdin_buf);
	free(cmd);
}

static uint64_t peek_id(const uint8_t *p, size_t len)
{
	struct hsr_reader r;

	hsr_reader_init(&r, p, len);
	return hsr_get_u64(&r);
}

/* HSR_EXEC_KEEP: the output stays after the command, within the budget. */
static void keep_init(struct hsr_daemon *d, struct hsr_cmd *cmd, const struct hsr_exec_req *req)
{
	if (!(req->flags & HSR_EXEC_KEEP) || !req->keep)
		return;
	cmd->keep = 1;
	cmd->sp[1].keep = cmd->sp[2].keep = 1;
	d->keep_max = req->keep;
}

/* The fields of a new command without a shim of its own yet (the session
 * shell's, or a terminal command whose descriptors are set), linked in. */
static void cmd_setup(struct hsr_daemon *d, struct hsr_conn *c, const struct hsr_exec_req *req,
		      struct hsr_cmd *cmd)
{
	cmd->id = req->id;
	cmd->owner = c;
	cmd->credit = req->credit;
	cmd->grace_ms = req->grace_ms;
	if (cmd->pty_fd < 0) { /* not a terminal already opened */
		for (int s = 0; s <= 3; s++)
			cmd->pipe_fd[s] = -1;
		cmd->stdin_fd = cmd->ctl_fd = cmd->status_fd = -1;
	}
	hsr_spool_init(&cmd->sp[1], req->head, req->tail);
	hsr_spool_init(&cmd->sp[2], req->head, req->tail);
	hsr_spool_init(&cmd->sp[3], 0, 0);
	keep_init(d, cmd, req);
	cmd->next = d->cmds;
	d->cmds = cmd;
}

void hsr_cmd_exec(struct hsr_daemon *d, struct hsr_conn *c, const uint8_t *p, size_t len)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, st[2] = { -1, -1 };
	int in[2] = { -1, -1 }, ctl[2] = { -1, -1 }, status[2] = { -1, -1 };
	struct hsr_exec_req *req = hsr_exec_decode(p, len);
	struct hsr_shim_spec spec;
	struct hsr_cmd *cmd = NULL;
	pid_t pid;

	if (!req) {
		hsr_conn_error(c, peek_id(p, len), errno == ENOMEM ? HSR_E_LIMIT : HSR_E_PROTO,
			       "malformed exec request");
		return;
	}
	if (d->stopping) {
		hsr_conn_error(c, req->id, HSR_E_STOPPING, "the runner is shutting down");
		goto out;
	}
	if (hsr_cmd_find(d, req->id)) {
		hsr_conn_error(c, req->id, HSR_E_BUSY, "command id %llu is in use",
			       (unsigned long long)req->id);
		goto out;
	}
	cmd = calloc(1, sizeof(*cmd));
	if (!cmd) {
		hsr_conn_error(c, req->id, HSR_E_LIMIT, "out of memory");
		goto out;
	}
	cmd->report_wait = (req->flags & HSR_EXEC_REPORT_WAIT) != 0;
	cmd->pty_fd = -1;
	if (req->flags & HSR_EXEC_PTY) {
		cmd->pty = 1;
		cmd->rows = req->rows;
		cmd->cols = req->cols;
		cmd->pty_deadline_ms = req->deadline_ms;
	}
	if ((req->flags & HSR_EXEC_SESSION) && cmd->pty && req->argv[1] &&
	    !(cmd->pty_cmd = strdup(req->argv[1]))) {
		hsr_conn_error(c, req->id, HSR_E_LIMIT, "out of memory");
		goto fail;
	}
	if (req->flags & HSR_EXEC_SESSION) {
		if (!req->argv[1] || !req->argv[2] || !req->argv[3]) {
			hsr_conn_error(c, req->id, HSR_E_PROTO, "malformed session exec request");
			goto fail;
		}
		cmd_setup(d, c, req, cmd);
		hsr_shell_exec(d, c, req, cmd);
		return;
	}
	if (cmd->pty) {
		char why[512];

		for (int s = 0; s <= 3; s++)
			cmd->pipe_fd[s] = -1;
		cmd->stdin_fd = cmd->ctl_fd = cmd->status_fd = -1;
		cmd->grace_ms = req->grace_ms;
		if (hsr_pty_spawn(d, cmd, req->argv, req->envp,
				  (req->flags & HSR_EXEC_MERGE_ENV) != 0, req->cwd, why,
				  sizeof(why)) < 0) {
			hsr_conn_error(c, req->id, HSR_E_EXEC, "%s", why);
			goto fail;
		}
		cmd_setup(d, c, req, cmd);
		goto out;
	}
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    pipe2(ctl, O_CLOEXEC) < 0 || pipe2(status, O_CLOEXEC) < 0 ||
	    ((req->flags & HSR_EXEC_WANT_STATE) && pipe2(st, O_CLOEXEC) < 0) ||
	    ((req->flags & HSR_EXEC_STDIN_PIPE) ? pipe2(in, O_CLOEXEC) < 0
						: (in[0] = hsr_open_null(O_RDONLY)) < 0)) {
		hsr_conn_error(c, req->id, HSR_E_EXEC, "cannot start command '%s': %s",
			       req->argv[0], strerror(errno));
		goto fail;
	}
	memset(&spec, 0, sizeof(spec));
	spec.argv = req->argv;
	spec.envp = req->envp;
	spec.merge_env = (req->flags & HSR_EXEC_MERGE_ENV) != 0;
	spec.cwd = req->cwd;
	spec.fd_in = in[0];
	spec.fd_out = out[1];
	spec.fd_err = err[1];
	spec.fd_state = st[1];
	spec.ctl_fd = ctl[0];
	spec.status_fd = status[1];
	spec.deadline = req->deadline_ms > 0 ? hsr_now_ms() + req->deadline_ms : 0;
	cmd->stop_at = spec.deadline;
	spec.grace_ms = req->grace_ms;
	pid = fork();
	if (pid < 0) {
		hsr_conn_error(c, req->id, HSR_E_EXEC, "cannot start command '%s': fork: %s",
			       req->argv[0], strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		/* The shim has no use for the session key. */
		hsr_wipe(d->key, sizeof(d->key));
		hsr_shim_run(&spec);
	}

	cmd->id = req->id;
	cmd->owner = c;
	cmd->shim = pid;
	cmd->pipe_fd[0] = -1;
	cmd->pipe_fd[1] = out[0];
	cmd->pipe_fd[2] = err[0];
	cmd->pipe_fd[3] = st[0];
	cmd->stdin_fd = in[1];
	cmd->ctl_fd = ctl[1];
	cmd->status_fd = status[0];
	cmd->credit = req->credit;
	cmd->grace_ms = req->grace_ms;
	hsr_spool_init(&cmd->sp[1], req->head, req->tail);
	hsr_spool_init(&cmd->sp[2], req->head, req->tail);
	hsr_spool_init(&cmd->sp[3], 0, 0);
	keep_init(d, cmd, req);
	for (int s = 1; s <= 3; s++)
		if (cmd->pipe_fd[s] >= 0) {
			fcntl(cmd->pipe_fd[s], F_SETFL, O_NONBLOCK);
			/* A larger pipe lets a fast command run ahead and the
			 * daemon take its output in fewer, larger reads; where
			 * the system refuses (pipe-max-size), the default stays. */
			if (s < 3)
				fcntl(cmd->pipe_fd[s], F_SETPIPE_SZ, (int)HSR_PIPE_SIZE);
		}
	if (cmd->stdin_fd >= 0)
		fcntl(cmd->stdin_fd, F_SETFL, O_NONBLOCK);
	fcntl(cmd->ctl_fd, F_SETFL, O_NONBLOCK);
	close(out[1]);
	close(err[1]);
	close(in[0]);
	close(ctl[0]);
	close(status[1]);
	if (st[1] >= 0)
		close(st[1]);
	cmd->next = d->cmds;
	d->cmds = cmd;
	goto out;
fail:
	if (cmd)
		free(cmd->pty_cmd);
	for (int i = 0; i < 2; i++) {
		close_fd(&out[i]);
		close_fd(&err[i]);
		close_fd(&st[i]);
		close_fd(&in[i]);
		close_fd(&ctl[i]);
		close_fd(&status[i]);
	}
	free(cmd);
out:
	free(req);
}

static void stdin_drop(struct hsr_cmd *cmd)
{
	hsr_buf_free(&cmd->stdin_buf);
	cmd->stdin_pos = 0;
	close_fd(&cmd->stdin_fd);
}

/* Writes what the pipe takes; returns -1 when stdin was closed. */
static int write_stdin(struct hsr_cmd *cmd)
{
	while (cmd->stdin_pos < cmd->stdin_buf.len) {
		ssize_t n = write(cmd->stdin_fd, cmd->stdin_buf.data + cmd->stdin_pos,
				  cmd->stdin_buf.len - cmd->stdin_pos);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			/* EPIPE: the command stopped reading; the rest is dropped. */
			stdin_drop(cmd);
			return -1;
		}
		cmd->stdin_pos += (size_t)n;
		cmd->stdin_moved_at = hsr_now_ms();
	}
	/* Compact rarely: consuming by an offset keeps a large backlog from
	 * being moved on every write. */
	if (cmd->stdin_pos == cmd->stdin_buf.len) {
		cmd->stdin_buf.len = 0;
		cmd->stdin_pos = 0;
	} else if (cmd->stdin_pos >= cmd->stdin_buf.len / 2) {
		hsr_buf_consume(&cmd->stdin_buf, cmd->stdin_pos);
		cmd->stdin_pos = 0;
	}
	if (cmd->stdin_buf.len == 0 && cmd->stdin_eof) {
		close_fd(&cmd->stdin_fd);
		return -1;
	}
	return 0;
}

/* A session-shell command still queued (its FIFOs not made yet) keeps
 * its stdin until it starts (hsr_cmd_stdin_kick). */
static int stdin_waits(const struct hsr_cmd *cmd)
{
	/* A terminal command of the session: until its terminal exists. */
	if (cmd->pty && cmd->session && !cmd->done)
		return 1;
	return cmd->session && cmd->req && !cmd->done && cmd->stdin_fd < 0 &&
	       (cmd->req->flags & HSR_EXEC_STDIN_PIPE);
}

void hsr_cmd_stdin_kick(struct hsr_cmd *cmd)
{
	if (cmd->stdin_fd >= 0)
		write_stdin(cmd);
}

void hsr_cmd_stdin(struct hsr_cmd *cmd, struct hsr_conn *c, const void *p, size_t n, int eof)
{
	if ((cmd->stdin_fd < 0 && !stdin_waits(cmd)) || cmd->stdin_eof)
		return; /* stdin is /dev/null, closed, or the command is gone */
	if (eof && cmd->pty) {
		/* A terminal has no end of its input: its EOF character makes
		 * a read at the start of a line return nothing. */
		uint8_t veof = hsr_pty_veof(cmd);

		hsr_buf_put(&cmd->stdin_buf, &veof, 1);
		cmd->stdin_conn = c;
	} else if (eof) {
		cmd->stdin_eof = 1;
	} else {
		/* Compact before the buffer would grow, so its size stays
		 * within the bound below. */
		if (cmd->stdin_pos && cmd->stdin_buf.len + n > cmd->stdin_buf.cap) {
			hsr_buf_consume(&cmd->stdin_buf, cmd->stdin_pos);
			cmd->stdin_pos = 0;
		}
		/* The bound: a command that does not read its stdin must not
		 * make the daemon hold an unbounded amount of it. */
		if (cmd->stdin_buf.len - cmd->stdin_pos + n > HSR_STDIN_MAX) {
			hsr_conn_error(c, cmd->id, HSR_E_LIMIT,
				       "stdin of command %llu: more than %u bytes not taken by "
				       "the command; stdin closed", (unsigned long long)cmd->id,
				       HSR_STDIN_MAX);
			stdin_drop(cmd);
			return;
		}
		if (cmd->stdin_buf.len == cmd->stdin_pos)
			cmd->stdin_moved_at = hsr_now_ms(); /* a backlog starts */
		cmd->stdin_conn = c;
		hsr_buf_put(&cmd->stdin_buf, p, n);
	}
	if (cmd->stdin_buf.failed) {
		hsr_conn_error(c, cmd->id, HSR_E_LIMIT, "stdin of command %llu: out of memory; "
			       "stdin closed", (unsigned long long)cmd->id);
		stdin_drop(cmd);
		return;
	}
	/* Try at once: a command that reads keeps the backlog near zero. */
	if (cmd->stdin_fd >= 0)
		write_stdin(cmd);
}

int64_t hsr_cmd_stdin_hold(const struct hsr_cmd *cmd, const struct hsr_conn *c, int64_t now)
{
	int64_t until = cmd->stdin_moved_at + HSR_STDIN_STALL_MS;

	/* Backpressure for a command that reads, slower than the sender;
	 * one that stopped reading releases the stream and meets the bound. */
	if (cmd->stdin_conn != c || cmd->stdin_fd < 0 ||
	    cmd->stdin_buf.len - cmd->stdin_pos <= HSR_STDIN_SOFT || now >= until)
		return -1;
	return until;
}

void hsr_cmd_control(struct hsr_daemon *d, struct hsr_cmd *cmd, uint8_t op, uint32_t arg)
{
	uint8_t msg[5] = { op, (uint8_t)arg, (uint8_t)(arg >> 8), (uint8_t)(arg >> 16),
			   (uint8_t)(arg >> 24) };

	/* On a terminal a signal is for what runs in its foreground. */
	if (op == HSR_SHIM_SIGNAL && hsr_pty_signal(cmd, (int)arg) == 0)
		return;
	if (cmd->session) {
		hsr_shell_control(d, cmd, op, arg);
		return;
	}
	if (cmd->done || cmd->ctl_fd < 0)
		return;
	cmd->stop_at = hsr_now_ms();
	if (write(cmd->ctl_fd, msg, sizeof(msg)) < 0)
		hsr_warn("cannot reach the shim of command %llu: %s",
			 (unsigned long long)cmd->id, strerror(errno));
}

void hsr_cmd_stop(struct hsr_daemon *d, struct hsr_cmd *cmd, uint32_t grace)
{
	uint8_t msg[5] = { HSR_SHIM_CANCEL, (uint8_t)grace, (uint8_t)(grace >> 8),
			   (uint8_t)(grace >> 16), (uint8_t)(grace >> 24) };

	if (cmd->session) {
		hsr_shell_control(d, cmd, HSR_SHIM_CANCEL, grace);
		return;
	}
	cmd->watch_shim = 1;
	/* EPIPE: the shim already exited; poll reports that next. */
	if (cmd->ctl_fd >= 0 && write(cmd->ctl_fd, msg, sizeof(msg)) < 0 && errno != EPIPE)
		hsr_warn("cannot reach the shim of command %llu: %s",
			 (unsigned long long)cmd->id, strerror(errno));
}

int hsr_cmd_dead(const struct hsr_cmd *cmd)
{
	if (cmd->session)
		return cmd->done; /* the shell's processes: hsr_shell_alive() */
	return cmd->ctl_fd < 0;
}

static void unlink_cmd(struct hsr_daemon *d, struct hsr_cmd *cmd)
{
	for (struct hsr_cmd **pp = &d->cmds; *pp; pp = &(*pp)->next)
		if (*pp == cmd) {
			*pp = cmd->next;
			break;
		}
	for (struct hsr_conn *c = d->conns; c; c = c->next)
		if (c->rr == cmd)
			c->rr = NULL;
}

void hsr_cmd_ack(struct hsr_daemon *d, struct hsr_cmd *cmd, int stream, uint64_t off)
{
	if (stream != HSR_STREAM_EXIT) {
		hsr_spool_ack(&cmd->sp[stream], off);
		return;
	}
	/* The EXIT can only be acknowledged after it was sent. */
	if (!cmd->exit_sent)
		return;
	unlink_cmd(d, cmd);
	hsr_keep_adopt(d, cmd);
	hsr_cmd_free(cmd);
}

void hsr_cmd_attach(struct hsr_daemon *d, struct hsr_conn *c, uint64_t credit)
{
	struct hsr_buf list;
	struct hsr_msg m = { .type = HSR_F_ATTACH };

	hsr_buf_init(&list);
	for (struct hsr_cmd *cmd = d->cmds; cmd; cmd = cmd->next) {
		struct hsr_attach_entry e = { .id = cmd->id, .finished = cmd->done };

		cmd->owner = c;
		cmd->credit = credit;
		cmd->exit_sent = 0;
		for (int s = 1; s <= 3; s++) {
			hsr_spool_rewind(&cmd->sp[s]);
			e.acked[s] = cmd->sp[s].sent;
			e.end[s] = cmd->sp[s].end;
		}
		hsr_attach_entry_encode(&list, &e);
		m.count++;
	}
	if (list.failed) {
		hsr_conn_error(c, 0, HSR_E_LIMIT, "out of memory");
		hsr_buf_free(&list);
		return;
	}
	m.data = list.data;
	m.len = list.len;
	hsr_msg_encode(&c->out, &m, 1);
	hsr_buf_free(&list);
}

int hsr_cmd_pollfds(struct hsr_cmd *cmd, struct pollfd *pfd, int max)
{
	int n = 0;

	for (int s = 1; s <= 3 && n < max; s++)
		if (cmd->pipe_fd[s] >= 0 && !hsr_spool_full(&cmd->sp[s]))
			pfd[n++] = (struct pollfd){ .fd = cmd->pipe_fd[s], .events = POLLIN };
	if (n < max && cmd->stdin_fd >= 0 && cmd->stdin_buf.len > cmd->stdin_pos)
		pfd[n++] = (struct pollfd){ .fd = cmd->stdin_fd, .events = POLLOUT };
	if (n < max && cmd->status_fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = cmd->status_fd, .events = POLLIN };
	/* A pipe's write end reports POLLERR once the reader (the shim) has
	 * exited, which is how a shutdown knows every process is gone. */
	if (n < max && cmd->watch_shim && cmd->ctl_fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = cmd->ctl_fd, .events = 0 };
	return n;
}

static void read_status(struct hsr_cmd *cmd)
{
	ssize_t n;

	do
		n = read(cmd->status_fd, &cmd->st, sizeof(cmd->st));
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n != (ssize_t)sizeof(cmd->st)) {
		/* The shim died without a report: only a KILL does that. */
		memset(&cmd->st, 0, sizeof(cmd->st));
		cmd->st.exit_code = 128 + SIGKILL;
	}
	cmd->done = 1;
	cmd->drain_until = hsr_now_ms() + HSR_DRAIN_MS;
	close_fd(&cmd->status_fd);
	/* The command is over; its stdin has no reader that matters. */
	stdin_drop(cmd);
	close_fd(&cmd->pty_fd);
}

static void read_pipe(struct hsr_daemon *d, struct hsr_cmd *cmd, int s)
{
	static uint8_t buf[HSR_OUT_CHUNK];
	ssize_t n;

	do
		n = read(cmd->pipe_fd[s], buf, sizeof(buf));
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0) {
		close_fd(&cmd->pipe_fd[s]);
		return;
	}
	if (hsr_spool_append(&cmd->sp[s], d->rd->dirfd, buf, (size_t)n) < 0) {
		/* Output that cannot be kept would be lost silently: stop the
		 * command instead, and say why. */
		int e = errno;

		hsr_warn("cannot spool output of command %llu: %s", (unsigned long long)cmd->id,
			 strerror(e));
		if (cmd->owner)
			hsr_conn_error(cmd->owner, cmd->id, HSR_E_LIMIT,
				       "cannot keep the output of the command in the runner's directory (%s); "
				       "the command was stopped", strerror(e));
		close_fd(&cmd->pipe_fd[s]);
		if (!cmd->done)
			hsr_cmd_stop(d, cmd, HSR_GRACE_DEFAULT);
		return;
	}
	if (cmd->done)
		cmd->drain_until = hsr_now_ms() + HSR_DRAIN_MS;
	if (cmd->keep)
		hsr_keep_enforce(d);
	/* A bulk producer (megabytes so far) that we keep up with hands us
	 * small reads, each costing a frame, a relay and a wakeup on every hop:
	 * a short pause lets its pipe fill, so the next read is large.  It
	 * costs a trickling command at most that much latency per chunk. */
	if (n < (ssize_t)HSR_CHUNK && cmd->sp[s].end >= HSR_BULK_BYTES && !cmd->done) {
		struct timespec ts = { 0, HSR_BULK_PAUSE_US * 1000L };

		nanosleep(&ts, NULL);
	}
}

void hsr_cmd_io(struct hsr_daemon *d, struct hsr_cmd *cmd, const struct pollfd *pfd, int n)
{
	int64_t now;

	for (int i = 0; i < n; i++) {
		if (!pfd[i].revents)
			continue;
		if (pfd[i].fd == cmd->status_fd) {
			read_status(cmd);
			if (cmd->done)
				hsr_pty_cleanup(d, cmd);
			continue;
		}
		if (pfd[i].fd == cmd->stdin_fd) {
			write_stdin(cmd);
			continue;
		}
		if (pfd[i].fd == cmd->ctl_fd) {
			if (pfd[i].revents & (POLLERR | POLLHUP))
				close_fd(&cmd->ctl_fd);
			continue;
		}
		for (int s = 1; s <= 3; s++)
			if (pfd[i].fd == cmd->pipe_fd[s])
				read_pipe(d, cmd, s);
	}
	if (!cmd->done)
		return;
	/* After the top process exited, a pipe still open is held by a
	 * leftover process.  It is detached once it has been quiet for the
	 * drain time; a throttled pipe is never detached, since bytes may
	 * wait in it. */
	now = hsr_now_ms();
	for (int s = 1; s <= 3; s++) {
		if (cmd->pipe_fd[s] < 0)
			continue;
		if (hsr_spool_full(&cmd->sp[s]))
			cmd->drain_until = now + HSR_DRAIN_MS;
		else if (now >= cmd->drain_until && cmd->session && !cmd->st.timed_out &&
			 !cmd->st.cancelled)
			hsr_shell_keep_pipe(d, cmd, s); /* a background job writes on */
		else if (now >= cmd->drain_until)
			close_fd(&cmd->pipe_fd[s]);
	}
}

int64_t hsr_cmd_wake(const struct hsr_cmd *cmd)
{
	if (!cmd->done)
		return -1;
	for (int s = 1; s <= 3; s++)
		if (cmd->pipe_fd[s] >= 0 && !hsr_spool_full(&cmd->sp[s]))
			return cmd->drain_until;
	return -1;
}

/* Queues one data frame of cmd if it has credit and bytes; returns 1 when
 * something was queued. */
static int pump_one(struct hsr_cmd *cmd, struct hsr_conn *c)
{
	/* Frames stay at HSR_CHUNK however much was read at once: a transport
	 * that breaks often must still get whole frames through. */
	static uint8_t buf[HSR_CHUNK];

	for (int s = 1; s <= 3; s++) {
		struct hsr_msg m = { .type = s == 3 ? HSR_F_STATE : HSR_F_OUTPUT, .id = cmd->id,
				     .stream = (uint8_t)s };
		size_t max = sizeof(buf);
		ssize_t n;

		if (cmd->credit == 0)
			return 0;
		if (cmd->credit < max)
			max = (size_t)cmd->credit;
		if (hsr_spool_unsent(&cmd->sp[s]) == 0)
			continue;
		n = hsr_spool_take(&cmd->sp[s], buf, max, &m.offset);
		if (n < 0) {
			hsr_warn("cannot read spool of command %llu: %s",
				 (unsigned long long)cmd->id, strerror(errno));
			continue;
		}
		if (n == 0)
			continue;
		m.data = buf;
		m.len = (size_t)n;
		hsr_msg_encode(&c->out, &m, 1);
		if (cmd->credit != HSR_CREDIT_UNLIMITED)
			cmd->credit -= (uint64_t)n;
		return 1;
	}
	return 0;
}

static void maybe_exit(struct hsr_cmd *cmd, struct hsr_conn *c)
{
	struct hsr_msg m = { .type = HSR_F_EXIT, .id = cmd->id };

	if (!cmd->done || cmd->exit_sent)
		return;
	for (int s = 1; s <= 3; s++)
		if (cmd->pipe_fd[s] >= 0 || hsr_spool_unsent(&cmd->sp[s]))
			return;
	m.exit_code = cmd->st.exit_code;
	m.timed_out = cmd->st.timed_out;
	m.cancelled = cmd->st.cancelled;
	m.restarted = cmd->restarted;
	m.jobs = cmd->jobs_left;
	m.str = cmd->reason;
	m.str_len = (uint32_t)strlen(cmd->reason);
	for (int s = 1; s <= 3; s++) {
		m.dropped[s] = cmd->sp[s].dropped;
		m.total[s] = cmd->sp[s].end;
	}
	hsr_msg_encode(&c->out, &m, 1);
	cmd->exit_sent = 1;
}

void hsr_cmd_pump(struct hsr_daemon *d, struct hsr_conn *c)
{
	int progress = 1;

	/* Round robin, one chunk per command per pass, so one chatty
	 * command cannot starve the others on the same stream. */
	while (progress && c->out.len < HSR_OUT_HIGH) {
		struct hsr_cmd *start = c->rr ? c->rr : d->cmds;
		struct hsr_cmd *cmd = start;

		progress = 0;
		if (!cmd)
			break;
		do {
			if (cmd->owner == c && pump_one(cmd, c))
				progress = 1;
			cmd = cmd->next ? cmd->next : d->cmds;
		} while (cmd != start && c->out.len < HSR_OUT_HIGH);
		c->rr = cmd;
	}
	for (struct hsr_cmd *cmd = d->cmds; cmd; cmd = cmd->next)
		if (cmd->owner == c)
			maybe_exit(cmd, c);
}
