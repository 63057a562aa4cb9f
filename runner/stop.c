/* SPDX-License-Identifier: MIT */
/* `hs-runner --stop`: asks the daemon of a runtime directory to shut down
 * (SHUTDOWN, see hs-runner(7)) and waits until it has.  With no daemon
 * listening there is nothing to stop; leftovers of one that is gone (a
 * stale socket, the lock, stray spool files) are removed. */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* How long --stop waits beyond the grace it asked for. */
#define STOP_WAIT_MS 30000

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Handles one frame.  Returns 1 for the OK, 0 to go on, -1 with err set. */
static int on_frame(const struct hsr_frame *f, int *hello, char *peer, size_t peerlen,
		    char *err, size_t errlen)
{
	struct hsr_msg m;

	if (hsr_msg_decode(f, 1, &m) < 0)
		return 0; /* nothing this stream asked for */
	if (m.type == HSR_F_HELLO) {
		*hello = 1;
		snprintf(peer, peerlen, "%.*s", (int)m.str_len, m.str);
		return 0;
	}
	if (m.type == HSR_F_OK && m.id == 0)
		return 1;
	if (m.type != HSR_F_ERROR || m.id != 0)
		return 0;
	if (m.code == HSR_E_PROTO && *hello)
		set_err(err, errlen, "the runner (version %s) does not support SHUTDOWN", peer);
	else
		set_err(err, errlen, "the runner refused to shut down: %.*s", (int)m.str_len, m.str);
	return -1;
}

/* Sends HELLO and SHUTDOWN and waits for the answer.  Returns 1 for OK,
 * 0 when the stream closed without one, -1 with err set. */
static int exchange(int fd, uint32_t grace, int64_t until, char *err, size_t errlen)
{
	struct hsr_msg hello = { .type = HSR_F_HELLO, .vmin = HSR_PROTO_MIN, .vmax = HSR_PROTO_MAX,
				 .str = HSR_VERSION, .str_len = sizeof(HSR_VERSION) - 1 };
	struct hsr_msg stop = { .type = HSR_F_SHUTDOWN, .value = grace };
	struct hsr_decoder dec;
	struct hsr_frame f;
	struct hsr_buf b;
	char peer[64] = "unknown";
	uint8_t buf[HSR_CHUNK];
	int rc = 0, got_hello = 0;

	hsr_buf_init(&b);
	hsr_msg_encode(&b, &hello, 0);
	hsr_msg_encode(&b, &stop, 0);
	if (b.failed || send_all(fd, b.data, b.len) < 0) {
		int e = b.failed ? ENOMEM : errno;

		hsr_buf_free(&b);
		/* A daemon already shutting down closes new streams at once. */
		if (e == EPIPE || e == ECONNRESET)
			return 0;
		set_err(err, errlen, "cannot send to the runner: %s", strerror(e));
		return -1;
	}
	hsr_buf_free(&b);
	hsr_decoder_init(&dec, HSR_MAX_FRAME);
	while (rc == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = until - hsr_now_ms();
		ssize_t n;

		if (left <= 0) {
			set_err(err, errlen, "the runner did not finish shutting down in time");
			rc = -1;
			break;
		}
		if (poll(&p, 1, left > 60000 ? 60000 : (int)left) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break; /* closed without an answer */
		if (hsr_decoder_feed(&dec, buf, (size_t)n) < 0) {
			set_err(err, errlen, "out of memory");
			rc = -1;
			break;
		}
		while (rc == 0 && hsr_decoder_next(&dec, &f) == 1)
			rc = on_frame(&f, &got_hello, peer, sizeof(peer), err, errlen);
	}
	hsr_decoder_free(&dec);
	return rc;
}

/* No daemon answered: under the lock, and if still none answers, remove
 * what a vanished one left.  Returns 1 when a daemon answers after all. */
static int clean_stale(const struct hsr_rundir *rd)
{
	char err[600];
	int lockfd = hsr_rundir_lock(rd, err, sizeof(err)), fd;

	if (lockfd < 0)
		return 0; /* cleaning is a courtesy; nothing runs either way */
	fd = hsr_rundir_connect(rd);
	if (fd >= 0) {
		close(fd);
		close(lockfd);
		return 1;
	}
	unlinkat(rd->dirfd, "sock", 0);
	hsr_rundir_sweep(rd);
	unlinkat(rd->dirfd, "lock", 0);
	close(lockfd);
	return 0;
}

int hsr_stop_main(const char *dir, int64_t grace_ms)
{
	uint32_t grace = grace_ms < 0 ? HSR_GRACE_DEFAULT
			 : grace_ms >= HSR_GRACE_DEFAULT ? HSR_GRACE_DEFAULT - 1 : (uint32_t)grace_ms;
	int64_t until = hsr_now_ms() + STOP_WAIT_MS + (grace_ms > 0 ? grace_ms : 0);
	struct hsr_rundir rd;
	struct stat st;
	char err[600];
	int rc = 1;

	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	/* Do not create a directory just to find nothing in it. */
	if (lstat(dir, &st) < 0 && errno == ENOENT)
		return 0;
	if (hsr_rundir_open(&rd, dir, err, sizeof(err)) < 0) {
		hsr_warn("%s", err);
		return 1;
	}
	for (;;) {
		int fd = hsr_rundir_connect(&rd), r;

		if (fd < 0) {
			if (errno != ENOENT && errno != ECONNREFUSED) {
				hsr_warn("cannot connect to '%s': %s", rd.sock, strerror(errno));
				break;
			}
			if (clean_stale(&rd))
				continue;
			rc = 0;
			break;
		}
		r = exchange(fd, grace, until, err, sizeof(err));
		close(fd);
		if (r != 0) {
			if (r < 0)
				hsr_warn("%s", err);
			rc = r < 0;
			break;
		}
		/* Closed without an answer: another stop is under way (a
		 * stopping daemon refuses new streams); wait for it. */
		if (hsr_now_ms() >= until) {
			hsr_warn("the runner in '%s' did not finish shutting down in time", dir);
			break;
		}
		usleep(20000);
	}
	hsr_rundir_close(&rd);
	return rc;
}
