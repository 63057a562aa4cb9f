/* SPDX-License-Identifier: MIT */
/* The daemon: listens on DIR/sock, serves streams, owns the commands.
 *
 * One thread and one poll loop.  Nothing blocks: connections and pipes
 * are non-blocking, output goes through the spool, and data frames are
 * only generated while a connection's queue is short, so a stalled reader
 * costs a bounded amount of memory.
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long a shutdown waits for processes beyond the grace period. */
#define STOP_SLACK_MS 5000

void hsr_conn_error(struct hsr_conn *c, uint64_t id, uint32_t code, const char *fmt, ...)
{
	struct hsr_msg m = { .type = HSR_F_ERROR, .id = id, .code = code };
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	m.str = msg;
	m.str_len = (uint32_t)strlen(msg);
	hsr_msg_encode(&c->out, &m, 1);
}

static void conn_close(struct hsr_daemon *d, struct hsr_conn *c)
{
	for (struct hsr_conn **pp = &d->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	/* Commands outlive their stream; they wait for the next attach. */
	for (struct hsr_cmd *cmd = d->cmds; cmd; cmd = cmd->next) {
		if (cmd->owner == c)
			cmd->owner = NULL;
		if (cmd->stdin_conn == c)
			cmd->stdin_conn = NULL;
	}
	hsr_files_drop(c);
	hsr_egress_conn_gone(d, c);
	close(c->fd);
	hsr_decoder_free(&c->dec);
	hsr_buf_free(&c->out);
	free(c);
}

/* Returns 1 when pid is this daemon's descendant: a command, or anything
 * a command started (orphans stay below us, the shims being subreapers).
 * Walks the parent chain in /proc.  A pid whose entry cannot be read is
 * counted as a descendant (it may have handed its socket on and gone),
 * unless /proc is missing altogether (a bare chroot), where nothing can be
 * told and the key alone guards the socket. */
static int descendant(pid_t pid)
{
	pid_t self = getpid();

	if (access("/proc/self/stat", R_OK) < 0)
		return 0;
	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		char path[64], buf[512], *p;
		ssize_t n;
		int fd;
		long ppid;

		if (pid == self)
			return 1;
		snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 1;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			return 1;
		buf[n] = '\0';
		/* "PID (COMM) STATE PPID ...": COMM may hold anything, so
		 * parse after its last ')'. */
		p = strrchr(buf, ')');
		if (!p || sscanf(p + 1, " %*c %ld", &ppid) != 1)
			return 1;
		pid = (pid_t)ppid;
	}
	return 0;
}

/* Same user (or root), and not one of our own commands: a command must
 * never reach the daemon that runs it (hs-runner(7), "Authentication"). */
static int peer_ok(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return 0;
	if (cred.uid != geteuid() && cred.uid != 0)
		return 0;
	/* pid 0: the peer lives in an ancestor PID namespace, outside ours. */
	return cred.pid <= 0 || !descendant(cred.pid);
}

static void accept_conns(struct hsr_daemon *d)
{
	for (;;) {
		int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct hsr_conn *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		/* While shutting down, nobody new is served: the peer sees
		 * the stream close before any HELLO. */
		if (!peer_ok(fd) || d->stopping) {
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		hsr_decoder_init(&c->dec, HSR_MAX_FRAME);
		c->next = d->conns;
		d->conns = c;
	}
}

/* "VERSION instance=HEX": the instance names this daemon process, so a
 * client that re-attaches can tell a restarted daemon (whose commands are
 * gone) from the same one. */
static char hello_str[64] = HSR_VERSION;

static void set_instance(void)
{
	unsigned char r[8] = { 0 };
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	uint64_t v;

	if (fd < 0 || read(fd, r, sizeof(r)) != (ssize_t)sizeof(r)) {
		v = (uint64_t)getpid() << 32 ^ (uint64_t)hsr_now_ms();
		memcpy(r, &v, sizeof(r));
	}
	if (fd >= 0)
		close(fd);
	memcpy(&v, r, sizeof(v));
	snprintf(hello_str, sizeof(hello_str), "%s instance=%016llx", HSR_VERSION,
		 (unsigned long long)v);
}

static void do_hello(struct hsr_conn *c, const struct hsr_msg *m)
{
	uint32_t lo = m->vmin > HSR_PROTO_MIN ? m->vmin : HSR_PROTO_MIN;
	uint32_t hi = m->vmax < HSR_PROTO_MAX ? m->vmax : HSR_PROTO_MAX;
	struct hsr_msg r = { .type = HSR_F_HELLO, .str = hello_str, .str_len = strlen(hello_str) };

	if (lo > hi) {
		hsr_conn_error(c, 0, HSR_E_VERSION,
			       "no common protocol version: client speaks %u..%u, runner %u..%u",
			       m->vmin, m->vmax, HSR_PROTO_MIN, HSR_PROTO_MAX);
		c->closing = 1;
		return;
	}
	r.vmin = r.vmax = hi;
	hsr_msg_encode(&c->out, &r, 1);
	c->hello = 1;
}

/* Sends AUTH: our nonce and, once we hold the key, our proof over both
 * nonces, so the client knows it reached this session's daemon. */
static void send_auth(struct hsr_daemon *d, struct hsr_conn *c)
{
	uint8_t proof[HSR_SHA256_LEN] = { 0 };
	struct hsr_msg r = { .type = HSR_F_AUTH, .keyed = (uint8_t)d->keyed, .data = c->nonce_d,
			     .len = HSR_NONCE_LEN, .proof = proof };

	if (d->keyed)
		hsr_auth_proof(d->key, HSR_LABEL_DAEMON, c->nonce_c, c->nonce_d, proof);
	hsr_msg_encode(&c->out, &r, 1);
}

static void auth_refuse(struct hsr_conn *c, const char *why)
{
	hsr_conn_error(c, 0, HSR_E_AUTH, "authentication failed: %s", why);
	c->closing = 1;
}

/* The frames of a stream that has not proved the key.  Returns 1 when m
 * was handled here; 0 lets SHUTDOWN and PING through, which need no key:
 * they only end or probe commands, as kill(2) could for any process of
 * this user outside the commands' trees (descendants are refused at
 * accept). */
static int auth_step(struct hsr_daemon *d, struct hsr_conn *c, const struct hsr_msg *m)
{
	uint8_t want[HSR_SHA256_LEN];

	switch (m->type) {
	case HSR_F_KEY:
		/* A daemon started without a key takes it from the first
		 * stream, before any stream has authenticated. */
		if (d->keyed || d->sealed) {
			auth_refuse(c, "the runner already holds a session key");
			return 1;
		}
		memcpy(d->key, m->data, HSR_KEY_LEN);
		d->keyed = 1;
		if (c->challenged)
			send_auth(d, c);
		return 1;
	case HSR_F_CHALLENGE:
		if (c->challenged) {
			auth_refuse(c, "a second CHALLENGE");
			return 1;
		}
		memcpy(c->nonce_c, m->data, HSR_NONCE_LEN);
		if (hsr_random(c->nonce_d, sizeof(c->nonce_d)) < 0) {
			auth_refuse(c, "no random numbers");
			return 1;
		}
		c->challenged = 1;
		send_auth(d, c);
		return 1;
	case HSR_F_AUTH:
		if (!c->challenged || !d->keyed) {
			auth_refuse(c, "AUTH before CHALLENGE and a key");
			return 1;
		}
		hsr_auth_proof(d->key, HSR_LABEL_CLIENT, c->nonce_d, c->nonce_c, want);
		if (hsr_memneq(want, m->proof, sizeof(want))) {
			auth_refuse(c, "the stream does not hold this session's key");
			return 1;
		}
		c->authed = 1;
		d->sealed = 1;
		return 1;
	case HSR_F_SHUTDOWN:
	case HSR_F_PING:
		return 0;
	default:
		auth_refuse(c, "authenticate first (CHALLENGE, AUTH; see hs-runner(7))");
		return 1;
	}
}

static struct hsr_cmd *need_cmd(struct hsr_daemon *d, struct hsr_conn *c, uint64_t id)
{
	struct hsr_cmd *cmd = hsr_cmd_find(d, id);

	if (!cmd)
		hsr_conn_error(c, id, HSR_E_NOENT, "no command with id %llu",
			       (unsigned long long)id);
	return cmd;
}

static void stop_begin(struct hsr_daemon *d, struct hsr_conn *c, uint32_t grace);

static void dispatch(struct hsr_daemon *d, struct hsr_conn *c, const struct hsr_frame *f)
{
	struct hsr_cmd *cmd;
	struct hsr_msg m;

	if (hsr_msg_decode(f, 0, &m) < 0) {
		hsr_conn_error(c, 0, HSR_E_PROTO, "malformed %s frame", hsr_frame_name(f->type));
		if (!c->hello)
			c->closing = 1;
		return;
	}
	if (!c->hello) {
		if (m.type == HSR_F_HELLO) {
			do_hello(c, &m);
		} else {
			hsr_conn_error(c, 0, HSR_E_PROTO, "expected HELLO, got %s",
				       hsr_frame_name(m.type));
			c->closing = 1;
		}
		return;
	}
	if (!c->authed && auth_step(d, c, &m))
		return;
	switch (m.type) {
	case HSR_F_EXEC:
		hsr_cmd_exec(d, c, m.data, m.len);
		break;
	case HSR_F_STDIN:
	case HSR_F_STDIN_EOF:
		if ((cmd = need_cmd(d, c, m.id)))
			hsr_cmd_stdin(cmd, c, m.data, m.len, m.type == HSR_F_STDIN_EOF);
		break;
	case HSR_F_SIGNAL:
		/* Not a command: a background job of the session shell. */
		if ((cmd = hsr_cmd_find(d, m.id)))
			hsr_cmd_control(d, cmd, HSR_SHIM_SIGNAL, m.signo);
		else
			hsr_shell_job_signal(d, c, m.id, (int)m.signo);
		break;
	case HSR_F_RESIZE:
		if (!(cmd = need_cmd(d, c, m.id)))
			break;
		if (cmd->pty)
			hsr_pty_resize(cmd, m.rows, m.cols);
		else
			hsr_conn_error(c, m.id, HSR_E_PROTO, "command %llu has no terminal to resize",
				       (unsigned long long)m.id);
		break;
	case HSR_F_JOBS:
		hsr_shell_jobs(d, c, m.value);
		break;
	case HSR_F_CANCEL:
		if ((cmd = need_cmd(d, c, m.id)))
			hsr_cmd_control(d, cmd, HSR_SHIM_CANCEL, HSR_GRACE_DEFAULT);
		break;
	case HSR_F_ACK:
		/* An ACK for a forgotten command is a harmless repeat. */
		if ((cmd = hsr_cmd_find(d, m.id)))
			hsr_cmd_ack(d, cmd, m.stream, m.offset);
		break;
	case HSR_F_CREDIT:
		if (m.id & HSR_EGRESS_ID_BIT)
			hsr_egress_credit(d, c, m.id, m.value);
		else if ((cmd = hsr_cmd_find(d, m.id))) {
			if (m.value == HSR_CREDIT_UNLIMITED || cmd->credit > HSR_CREDIT_UNLIMITED - m.value - 1)
				cmd->credit = HSR_CREDIT_UNLIMITED;
			else
				cmd->credit += m.value;
		}
		break;
	case HSR_F_ATTACH:
		hsr_cmd_attach(d, c, m.value);
		break;
	case HSR_F_PUT:
		hsr_files_put(d, c, &m);
		break;
	case HSR_F_GET:
		hsr_files_get(c, &m);
		break;
	case HSR_F_READ:
		hsr_keep_read(d, c, &m);
		break;
	case HSR_F_SPILL:
		hsr_keep_spill(d, c, &m);
		break;
	case HSR_F_PING: {
		struct hsr_msg r = { .type = HSR_F_PONG, .value = m.value };

		hsr_msg_encode(&c->out, &r, 1);
		break;
	}
	case HSR_F_SHUTDOWN:
		stop_begin(d, c, (uint32_t)m.value);
		break;
	case HSR_F_EGRESS_LISTEN:
		hsr_egress_listen(d, c, m.value);
		break;
	case HSR_F_EGRESS_DATA:
	case HSR_F_EGRESS_EOF:
	case HSR_F_EGRESS_CLOSE:
		hsr_egress_frame(d, c, &m);
		break;
	default:
		hsr_conn_error(c, 0, HSR_E_PROTO, "unexpected %s frame", hsr_frame_name(m.type));
		break;
	}
}

/* Returns -1 when the connection is finished. */
static int conn_read(struct hsr_daemon *d, struct hsr_conn *c)
{
	/* Big reads (fewer trips round the loop for bulk data), straight into the decoder. */
	uint8_t *room = hsr_decoder_reserve(&c->dec, 4 * HSR_CHUNK);
	struct hsr_frame f;
	ssize_t n;
	int rc;

	if (!room)
		return -1;
	do
		n = read(c->fd, room, 4 * HSR_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	if (n == 0)
		return -1;
	hsr_decoder_commit(&c->dec, (size_t)n);
	while (!c->closing && (rc = hsr_decoder_next(&c->dec, &f)) != 0) {
		if (rc < 0) {
			hsr_conn_error(c, 0, HSR_E_PROTO, "invalid frame length");
			c->closing = 1;
			break;
		}
		dispatch(d, c, &f);
	}
	return 0;
}

/* Returns -1 when the connection is broken. */
static int conn_flush(struct hsr_conn *c)
{
	while (c->out.len) {
		ssize_t n = send(c->fd, c->out.data, c->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		hsr_buf_consume(&c->out, (size_t)n);
	}
	return c->out.failed ? -1 : 0;
}

static int listen_sock(struct hsr_daemon *d, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	int fd = hsr_rundir_connect(d->rd);

	if (fd >= 0) {
		close(fd);
		snprintf(err, errlen, "a runner daemon already listens on '%s'", d->rd->sock);
		return -1;
	}
	/* We hold the lock and nobody answers: whatever is there is stale. */
	if (unlinkat(d->rd->dirfd, "sock", 0) < 0 && errno != ENOENT) {
		snprintf(err, errlen, "cannot remove stale socket '%s': %s", d->rd->sock,
			 strerror(errno));
		return -1;
	}
	/*
	 * Bound and listening under a temporary name first, then renamed into
	 * place: whoever sees "sock" can connect (no window between bind and
	 * listen in which a client is refused).
	 */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	hsr_rundir_sun(d->rd, &sun);
	size_t sl = strlen(sun.sun_path);
	if (sl + 4 >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "socket path '%s' too long", d->rd->sock);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	memcpy(sun.sun_path + sl, ".new", 5);
	unlinkat(d->rd->dirfd, "sock.new", 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(fd, 64) < 0 ||
	    renameat(d->rd->dirfd, "sock.new", d->rd->dirfd, "sock") < 0) {
		snprintf(err, errlen, "cannot listen on '%s': %s", d->rd->sock, strerror(errno));
		unlinkat(d->rd->dirfd, "sock.new", 0);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	d->listen_fd = fd;
	return 0;
}

/* Decides whether an idle daemon may exit.  Holding the lock keeps a
 * concurrent `--attach --start` from connecting to a daemon that is about
 * to vanish; it starts a new one after we are gone instead. */
static int idle_exit(struct hsr_daemon *d)
{
	int fd = openat(d->rd->dirfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	/* Only a held lock postpones the exit; a lock that cannot be opened
	 * (the directory was removed) leaves nobody to serve. */
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return 0;
	}
	accept_conns(d);
	if (d->conns) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	unlinkat(d->rd->dirfd, "sock", 0);
	close(d->listen_fd);
	if (fd >= 0)
		close(fd);
	/* The session shell and its background jobs end at idle expiry. */
	hsr_shell_stop(d, SIGTERM);
	for (int i = 0; i < 40 && hsr_shell_alive(d); i++) {
		struct timespec ts = { 0, 50 * 1000000L };

		nanosleep(&ts, NULL);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	hsr_shell_stop(d, SIGKILL);
	hsr_rundir_sweep(d->rd);
	return 1;
}

/* Shutdown.  Every command is cancelled as at its deadline, with the
 * requested grace; the daemon then waits until every shim has exited (a
 * shim exits only when no process of its command is left), removes its
 * socket, lock and stray spool files, answers OK and exits. */
static void stop_begin(struct hsr_daemon *d, struct hsr_conn *c, uint32_t grace)
{
	int64_t longest = grace;

	c->want_stop = 1;
	if (grace == HSR_GRACE_DEFAULT) {
		longest = 0;
		for (struct hsr_cmd *cmd = d->cmds; cmd; cmd = cmd->next)
			if (cmd->grace_ms > longest)
				longest = cmd->grace_ms;
	}
	for (struct hsr_cmd *cmd = d->cmds; cmd; cmd = cmd->next)
		hsr_cmd_stop(d, cmd, grace);
	/* The session shell and its background jobs end with the session. */
	hsr_shell_stop(d, SIGTERM);
	if (!d->stopping) {
		d->stopping = 1;
		d->stop_deadline = hsr_now_ms() + longest + STOP_SLACK_MS;
	}
}

/* Returns 1 when the daemon has answered and must exit; otherwise lowers
 * *wake to when to look again. */
static int stop_poll(struct hsr_daemon *d, int64_t *wake)
{
	int64_t now = hsr_now_ms(), until = now + 1000;
	int alive = 0, lockfd;

	for (struct hsr_cmd *cmd = d->cmds; cmd; cmd = cmd->next)
		alive += !hsr_cmd_dead(cmd);
	alive += hsr_shell_alive(d);
	if (alive && now < d->stop_deadline) {
		/* Past the grace, what is left of the shell's processes is killed. */
		if (now >= d->stop_deadline - STOP_SLACK_MS)
			hsr_shell_stop(d, SIGKILL);
		if (*wake < 0 || now + 50 < *wake)
			*wake = now + 50;
		return 0;
	}
	hsr_shell_stop(d, SIGKILL);
	/* As at an idle exit, the lock keeps a concurrent `--attach --start`
	 * from racing the removal; a lock held for long is given up on. */
	lockfd = openat(d->rd->dirfd, "lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (lockfd >= 0 && flock(lockfd, LOCK_EX | LOCK_NB) < 0) {
		close(lockfd);
		lockfd = -1;
		if (now < d->stop_deadline + 1000) {
			*wake = now + 10;
			return 0;
		}
	}
	unlinkat(d->rd->dirfd, "sock", 0);
	close(d->listen_fd);
	d->listen_fd = -1;
	if (lockfd >= 0) {
		/* Lockers check that the file they locked is still the
		 * one at the path (hsr_rundir_lock), so unlinking is safe. */
		unlinkat(d->rd->dirfd, "lock", 0);
		hsr_rundir_sweep(d->rd);
	}
	for (struct hsr_conn *c = d->conns; c; c = c->next) {
		struct hsr_msg ok = { .type = HSR_F_OK, .id = 0 };

		if (!c->want_stop)
			continue;
		if (alive)
			hsr_conn_error(c, 0, HSR_E_LIMIT, "%d command%s still had processes %lld ms "
				       "after the grace period; exiting anyway", alive,
				       alive == 1 ? "" : "s", (long long)STOP_SLACK_MS);
		else
			hsr_msg_encode(&c->out, &ok, 1);
	}
	/* Queued frames (the answer, EXITs) get a bounded time to leave. */
	for (struct hsr_conn *c = d->conns; c; c = c->next)
		while (c->out.len && hsr_now_ms() < until && conn_flush(c) == 0 && c->out.len) {
			struct pollfd p = { .fd = c->fd, .events = POLLOUT };

			poll(&p, 1, 50);
		}
	while (d->conns)
		conn_close(d, d->conns); /* also removes PUT temporary files */
	while (d->cmds) {
		struct hsr_cmd *cmd = d->cmds;

		d->cmds = cmd->next;
		hsr_cmd_free(cmd);
	}
	if (lockfd >= 0)
		close(lockfd);
	return 1;
}

/* One poll slot: what it belongs to. */
struct slot {
	struct hsr_conn *conn;
	struct hsr_cmd *cmd;
};

static int run_loop(struct hsr_daemon *d)
{
	struct pollfd *pfd = NULL;
	struct slot *who = NULL;
	size_t cap = 0;

	d->idle_since = hsr_now_ms();
	for (;;) {
		struct hsr_conn *c, *cnext;
		struct hsr_cmd *cmd;
		size_t n = 0, need = 1, shell_lo = 0, egress_lo = 0;
		int64_t now, wake = -1;
		int timeout, shell_n = 0, egress_n = 0;

		for (c = d->conns; c; c = cnext) {
			int broken = 0;

			cnext = c->next;
			/* Refill as long as the socket takes everything: poll
			 * only wakes us for a socket that was full. */
			for (;;) {
				size_t before = c->out.len, pumped;

				if (!c->closing) {
					hsr_files_pump(c);
					hsr_cmd_pump(d, c);
				}
				pumped = c->out.len - before;
				if (conn_flush(c) < 0) {
					broken = 1;
					break;
				}
				/* Stop when the socket is full (POLLOUT wakes us)
				 * or there was nothing to pump; a pump skipped
				 * because the queue was over its mark counts as
				 * neither. */
				if (c->closing || c->out.len || (pumped == 0 && before < HSR_OUT_HIGH))
					break;
			}
			if (broken || (c->closing && c->out.len == 0))
				conn_close(d, c);
		}
		now = hsr_now_ms();
		if (d->stopping) {
			if (stop_poll(d, &wake))
				break;
		} else if (d->conns || d->cmds) {
			d->idle_since = now;
		} else if (d->idle_s > 0) {
			int64_t at = d->idle_since + (int64_t)d->idle_s * 1000;

			if (now >= at) {
				if (idle_exit(d))
					break;
				d->idle_since = now;
				continue;
			}
			wake = at;
		}
		for (c = d->conns; c; c = c->next)
			need++;
		for (cmd = d->cmds; cmd; cmd = cmd->next)
			need += 6;
		need += 1 + (size_t)hsr_shell_npoll(d) + (size_t)hsr_egress_npoll(d);
		if (need > cap) {
			struct pollfd *p = realloc(pfd, need * 2 * sizeof(*p));
			struct slot *w;

			if (p)
				pfd = p;
			w = p ? realloc(who, need * 2 * sizeof(*w)) : NULL;
			if (!w) {
				hsr_warn("out of memory");
				sleep(1);
				continue;
			}
			who = w;
			cap = need * 2;
		}
		pfd[n] = (struct pollfd){ .fd = d->listen_fd, .events = POLLIN };
		who[n++] = (struct slot){ NULL, NULL };
		pfd[n] = (struct pollfd){ .fd = d->sigfd, .events = POLLIN };
		who[n++] = (struct slot){ NULL, NULL };
		{
			int64_t w = hsr_shell_tick(d), ww = hsr_waiting_tick(d);
			int k = hsr_shell_pollfds(d, pfd + n, hsr_shell_npoll(d));

			if (ww >= 0 && (w < 0 || ww < w))
				w = ww;
			for (int i = 0; i < k; i++)
				who[n++] = (struct slot){ NULL, NULL };
			shell_lo = n - (size_t)k;
			shell_n = k;
			if (w >= 0 && (wake < 0 || w < wake))
				wake = w;
		}
		{
			int k = hsr_egress_pollfds(d, pfd + n, hsr_egress_npoll(d));

			for (int i = 0; i < k; i++)
				who[n++] = (struct slot){ NULL, NULL };
			egress_lo = n - (size_t)k;
			egress_n = k;
		}
		for (c = d->conns; c; c = c->next) {
			int64_t eg = hsr_egress_hold(d, c, now);
			int hold = eg >= 0;

			if (hold && (wake < 0 || eg < wake))
				wake = eg;

			/* A command falling behind on this stream's stdin holds
			 * its reading back while its pipe keeps draining. */
			for (cmd = d->cmds; cmd; cmd = cmd->next) {
				int64_t until = hsr_cmd_stdin_hold(cmd, c, now);

				if (until >= 0) {
					hold = 1;
					if (wake < 0 || until < wake)
						wake = until;
				}
			}
			pfd[n] = (struct pollfd){ .fd = c->fd,
				.events = (short)((c->closing || hold ? 0 : POLLIN) |
						  (c->out.len ? POLLOUT : 0)) };
			who[n++] = (struct slot){ c, NULL };
		}
		for (cmd = d->cmds; cmd; cmd = cmd->next) {
			int64_t w = hsr_cmd_wake(cmd);
			int k = hsr_cmd_pollfds(cmd, pfd + n, 6);

			/* A command with nothing to poll still gets one slot
			 * (fd -1, ignored by poll) so its timers run. */
			if (k == 0)
				pfd[n + (size_t)k++] = (struct pollfd){ .fd = -1 };
			for (int i = 0; i < k; i++)
				who[n++] = (struct slot){ NULL, cmd };
			if (w >= 0 && (wake < 0 || w < wake))
				wake = w;
		}
		timeout = -1;
		if (wake >= 0)
			timeout = wake <= now ? 0 : (int)(wake - now > 60000 ? 60000 : wake - now);
		if (poll(pfd, n, timeout) < 0 && errno != EINTR) {
			hsr_warn("poll: %s", strerror(errno));
			break;
		}
		if (pfd[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			int status;
			pid_t pid;

			while (read(d->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
			/* Shims report through their pipes; the shell and orphans
			 * of commands are reaped here. */
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
				hsr_shell_reaped(d, pid, status);
		}
		hsr_shell_io(d, pfd + shell_lo, shell_n);
		hsr_egress_io(d, pfd + egress_lo, egress_n);
		/* Commands first: handling frames below may free commands,
		 * but never connections, which are only closed above. */
		for (size_t i = 0; i < n;) {
			size_t k = 1;

			if (!who[i].cmd) {
				i++;
				continue;
			}
			while (i + k < n && who[i + k].cmd == who[i].cmd)
				k++;
			hsr_cmd_io(d, who[i].cmd, pfd + i, (int)k);
			i += k;
		}
		for (size_t i = 0; i < n; i++) {
			c = who[i].conn;
			if (!c || c->closing || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (conn_read(d, c) < 0) {
				/* Nobody is there to read what is queued. */
				c->closing = 1;
				c->out.len = 0;
			}
		}
		if (pfd[0].revents & POLLIN)
			accept_conns(d);
	}
	free(pfd);
	free(who);
	hsr_egress_free(d);
	hsr_shell_free(d);
	hsr_keep_free_all(d);
	return 0;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Sets up the daemon's process state and socket, tells the starter
 * (ready_fd, -1 in the foreground) and serves until idle. */
static int daemon_main(const struct hsr_daemon_opts *o, struct hsr_rundir *rd, int lockfd,
		       int ready_fd)
{
	struct hsr_daemon d = { .rd = rd, .idle_s = o->idle_s, .listen_fd = -1 };
	char err[512] = "";
	int rc;

	if (o->key) {
		/* One copy only, which shims wipe (cmd.c). */
		memcpy(d.key, o->key, HSR_KEY_LEN);
		hsr_wipe(o->key, HSR_KEY_LEN);
		d.keyed = 1;
	}

	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* What a command leaves behind when it kills its shim comes to us,
	 * so it stays our descendant and is refused (peer_ok). */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	set_instance();
	signal(SIGPIPE, SIG_IGN);
	/* Children (shims, the session shell, orphans we adopt) are reaped
	 * in the loop; SIGCHLD arrives through a signalfd. */
	{
		sigset_t chld;

		sigemptyset(&chld);
		sigaddset(&chld, SIGCHLD);
		sigprocmask(SIG_BLOCK, &chld, NULL);
		d.sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	}
	rc = listen_sock(&d, err, sizeof(err));
	if (ready_fd >= 0) {
		size_t len = rc < 0 ? strlen(err) : 0;

		if (len == 0 && rc < 0)
			len = snprintf(err, sizeof(err), "daemon failed to start");
		if (write(ready_fd, rc < 0 ? err : "", rc < 0 ? len : 1) < 0) {
			/* The starter is gone; serve anyway. */
		}
		close(ready_fd);
	} else if (rc < 0) {
		hsr_warn("%s", err);
	}
	if (lockfd >= 0)
		close(lockfd);
	if (rc < 0)
		return 1;
	rc = run_loop(&d);
	hsr_wipe(d.key, sizeof(d.key));
	return rc;
}

int hsr_daemon_start(const struct hsr_daemon_opts *o, struct hsr_rundir *rd, int lockfd,
		     char *err, size_t errlen)
{
	char msg[512];
	int ready[2], status;
	ssize_t n;
	pid_t pid;

	if (o->foreground) {
		if (daemon_main(o, rd, lockfd, -1) != 0) {
			set_err(err, errlen, "daemon failed");
			return -1;
		}
		return 0;
	}
	if (pipe2(ready, O_CLOEXEC) < 0) {
		set_err(err, errlen, "cannot start daemon: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		set_err(err, errlen, "cannot start daemon: fork: %s", strerror(errno));
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	if (pid == 0) {
		int null_in, null_out;

		/* Detach: a new session, then a second fork so the daemon is
		 * not a session leader and can never acquire a terminal. */
		close(ready[0]);
		setsid();
		if (fork() != 0)
			_exit(0);
		null_in = hsr_open_null(O_RDONLY);
		null_out = hsr_open_null(O_WRONLY);
		if (null_in >= 0 && null_out >= 0) {
			dup2(null_in, 0);
			dup2(null_out, 1);
			dup2(null_out, 2);
		}
		{
			int keep[] = { rd->dirfd, lockfd, ready[1] };

			hsr_close_others(keep, 3);
		}
		if (chdir("/") < 0)
			_exit(1);
		umask(077);
		_exit(daemon_main(o, rd, lockfd, ready[1]));
	}
	close(ready[1]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	do
		n = read(ready[0], msg, sizeof(msg) - 1);
	while (n < 0 && errno == EINTR);
	close(ready[0]);
	if (n == 1 && msg[0] == '\0')
		return 0;
	if (n <= 0)
		set_err(err, errlen, "daemon exited before listening");
	else
		set_err(err, errlen, "%.*s", (int)n, msg);
	return -1;
}
