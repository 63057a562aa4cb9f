/* SPDX-License-Identifier: MIT */
/* `hs-runner --attach`: one stream, proxied between stdin/stdout and the
 * daemon's socket, starting the daemon first with --start.
 *
 * Both directions have their own bounded buffer and are polled together,
 * so a peer that stops reading in one direction never stalls the other.
 */
#include "hmac.h"
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROXY_BUF (1024 * 1024)

struct pipe_buf {
	uint8_t data[PROXY_BUF];
	size_t len;
	int eof;
};

/* Static: two megabytes are too much for some stacks. */
static struct pipe_buf up_buf, down_buf;

static int fill(int fd, struct pipe_buf *b)
{
	ssize_t n;

	do
		n = read(fd, b->data + b->len, sizeof(b->data) - b->len);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n <= 0) {
		b->eof = 1;
		return n < 0 ? -1 : 0;
	}
	b->len += (size_t)n;
	return 0;
}

static int drain(int fd, struct pipe_buf *b)
{
	ssize_t n;

	do
		n = send(fd, b->data, b->len, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == ENOTSOCK) {
		do
			n = write(fd, b->data, b->len);
		while (n < 0 && errno == EINTR);
	}
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	/* Usually all of it went; a rest moves to the front. */
	if ((size_t)n < b->len)
		memmove(b->data, b->data + n, b->len - (size_t)n);
	b->len -= (size_t)n;
	return 0;
}

static int proxy(int sock)
{
	struct pipe_buf *up = &up_buf;     /* stdin -> socket */
	struct pipe_buf *down = &down_buf; /* socket -> stdout */
	int shut = 0;

	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
	fcntl(sock, F_SETFL, O_NONBLOCK);
	for (;;) {
		struct pollfd p[3] = {
			{ .fd = !up->eof && up->len < PROXY_BUF ? 0 : -1, .events = POLLIN },
			{ .fd = sock, .events = (short)((!down->eof && down->len < PROXY_BUF ? POLLIN : 0) |
						       (up->len ? POLLOUT : 0)) },
			{ .fd = down->len ? 1 : -1, .events = POLLOUT },
		};

		if (up->eof && !up->len && !shut) {
			/* The caller closed its side: let the daemon see EOF. */
			shutdown(sock, SHUT_WR);
			shut = 1;
		}
		if (down->eof && !down->len)
			return 0;
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		/* What was read is written at once where the other side takes
		 * it (non-blocking), rather than after another poll. */
		if (p[0].revents)
			fill(0, up);
		if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && !down->eof)
			fill(sock, down);
		if ((p[1].revents & POLLOUT || p[0].revents) && up->len && drain(sock, up) < 0)
			return 1;
		if ((p[2].revents || p[1].revents) && down->len && drain(1, down) < 0)
			return 1; /* our reader is gone */
	}
}

/*
 * --handoff: when stdout is a unix socket, the connected daemon socket goes
 * to the caller (SCM_RIGHTS) with an empty KEY frame, and we leave the
 * stream: every byte then moves between the caller and the daemon without
 * this process.  What the caller wrote after the key is dropped with our
 * end; it sends its handshake again on the connection it received
 * (hs-runner(7)).  Returns 0 when handed off, -1 when stdout cannot take a
 * descriptor (then the bytes are proxied as before).
 */
static int handoff(int sock)
{
	static const uint8_t f[5] = { 1, 0, 0, 0, HSR_F_KEY };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = { .iov_base = (void *)f, .iov_len = sizeof(f) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;

	memset(&u, 0, sizeof(u));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &sock, sizeof(int));
	do
		n = sendmsg(1, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	/* Five bytes fit in any socket buffer: all or nothing. */
	return n == (ssize_t)sizeof(f) ? 0 : -1;
}

/* Reads exactly n bytes (no more: what follows is the stream). */
static int read_exact(int fd, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* The stream starts with a KEY frame for us (hs-runner(7)): the session
 * key, which a daemon we start inherits in memory.  It never reaches the
 * daemon's socket. */
static int read_key(uint8_t key[HSR_KEY_LEN])
{
	/* u32 length 33, u8 type KEY, the key. */
	uint8_t f[4 + 1 + HSR_KEY_LEN];

	if (read_exact(0, f, sizeof(f)) < 0 || f[0] != 1 + HSR_KEY_LEN || f[1] || f[2] || f[3] ||
	    f[4] != HSR_F_KEY) {
		hsr_warn("the stream must start with the session key (a KEY frame; see hs-runner(7))");
		return -1;
	}
	memcpy(key, f + 5, HSR_KEY_LEN);
	hsr_wipe(f, sizeof(f));
	return 0;
}

int hsr_attach_main(const char *dir, int start, int idle_s, int pass)
{
	static uint8_t key[HSR_KEY_LEN];
	struct hsr_rundir rd;
	char err[600];
	int sock, lockfd = -1, rc = 1;

	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	if (hsr_rundir_open(&rd, dir, err, sizeof(err)) < 0) {
		hsr_warn("%s", err);
		return 1;
	}
	if (read_key(key) < 0) {
		hsr_rundir_close(&rd);
		return 1;
	}
	sock = hsr_rundir_connect(&rd);
	if (sock < 0 && start && (errno == ECONNREFUSED || errno == ENOENT)) {
		/* Under the lock, either a daemon started by a racing attach
		 * now answers, or we start the only one. */
		lockfd = hsr_rundir_lock(&rd, err, sizeof(err));
		if (lockfd < 0) {
			hsr_warn("%s", err);
			goto out;
		}
		sock = hsr_rundir_connect(&rd);
		if (sock < 0) {
			struct hsr_daemon_opts o = { .dir = dir, .idle_s = idle_s, .key = key };

			if (hsr_daemon_start(&o, &rd, lockfd, err, sizeof(err)) < 0) {
				hsr_warn("%s", err);
				goto out;
			}
			sock = hsr_rundir_connect(&rd);
		}
	}
	if (sock < 0) {
		hsr_warn("cannot connect to '%s': %s", rd.sock, strerror(errno));
		goto out;
	}
	if (lockfd >= 0) {
		close(lockfd);
		lockfd = -1;
	}
	hsr_wipe(key, sizeof(key));
	rc = pass && handoff(sock) == 0 ? 0 : proxy(sock);
	close(sock);
out:
	if (lockfd >= 0)
		close(lockfd);
	hsr_rundir_close(&rd);
	return rc;
}
