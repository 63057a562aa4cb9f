/* SPDX-License-Identifier: MIT */
/* Spool: the output of one stream that the client has not acknowledged.
 *
 * Bytes live in an unlinked file in the runtime dir, never in memory, so
 * a command producing gigabytes for a slow reader costs the daemon no RAM.
 * Lossless streams map offset o to file position o and free acknowledged
 * space by punching holes; bounded streams keep the first `head` bytes at
 * positions [0, head) and the last `tail` bytes in a ring after them.
 */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PUNCH_STEP (1u << 20)

static unsigned spool_seq;

void hsr_spool_init(struct hsr_spool *sp, uint64_t head, uint64_t tail)
{
	memset(sp, 0, sizeof(*sp));
	sp->fd = -1;
	sp->head = head;
	sp->tail = tail;
}

void hsr_spool_close(struct hsr_spool *sp)
{
	if (sp->fd >= 0)
		close(sp->fd);
	sp->fd = -1;
}

static int bounded(const struct hsr_spool *sp)
{
	return sp->head || sp->tail;
}

/* The file is created with O_EXCL|O_NOFOLLOW under a fresh name and
 * unlinked at once: only the descriptor refers to it, so nothing is left
 * behind even if the daemon is killed. */
static int spool_open(int dirfd)
{
	char name[64];

	for (int tries = 0; tries < 100; tries++) {
		int fd;

		snprintf(name, sizeof(name), "spool.%ld.%u", (long)getpid(), ++spool_seq);
		fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			unlinkat(dirfd, name, 0);
			return fd;
		}
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

static int pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t pos)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)pos);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
		pos += (uint64_t)w;
	}
	return 0;
}

int hsr_spool_append(struct hsr_spool *sp, int dirfd, const void *data, size_t n)
{
	const uint8_t *p = data;

	if (n == 0)
		return 0;
	if (sp->fd < 0 && (sp->fd = spool_open(dirfd)) < 0)
		return -1;
	if (!bounded(sp)) {
		if (pwrite_all(sp->fd, p, n, sp->end) < 0)
			return -1;
		sp->end += n;
		return 0;
	}
	if (sp->end < sp->head) {
		size_t k = sp->head - sp->end < n ? (size_t)(sp->head - sp->end) : n;

		if (pwrite_all(sp->fd, p, k, sp->end) < 0)
			return -1;
		sp->end += k;
		p += k;
		n -= k;
	}
	if (n == 0)
		return 0;
	if (sp->tail == 0) {
		sp->end += n;
		return 0;
	}
	/* Only the last `tail` bytes of this write can survive. */
	if (n > sp->tail) {
		sp->end += n - sp->tail;
		p += n - sp->tail;
		n = (size_t)sp->tail;
	}
	while (n) {
		uint64_t ring = (sp->end - sp->head) % sp->tail;
		size_t k = sp->tail - ring < n ? (size_t)(sp->tail - ring) : n;

		if (pwrite_all(sp->fd, p, k, sp->head + ring) < 0)
			return -1;
		sp->end += k;
		p += k;
		n -= k;
	}
	return 0;
}

/* Returns the lowest offset >= o still held. */
static uint64_t first_kept(const struct hsr_spool *sp, uint64_t o)
{
	uint64_t tail_start;

	if (!bounded(sp) || o < sp->head)
		return o;
	tail_start = sp->end > sp->tail ? sp->end - sp->tail : 0;
	return o > tail_start ? o : tail_start;
}

static void skip_dropped(struct hsr_spool *sp)
{
	uint64_t to = first_kept(sp, sp->sent);

	if (to > sp->sent) {
		/* Count only bytes no connection ever received. */
		uint64_t from = sp->sent > sp->sent_max ? sp->sent : sp->sent_max;

		if (to > from)
			sp->dropped += to - from;
		sp->sent = to;
		if (sp->sent > sp->sent_max)
			sp->sent_max = sp->sent;
	}
}

uint64_t hsr_spool_unsent(struct hsr_spool *sp)
{
	skip_dropped(sp);
	return sp->end - sp->sent;
}

ssize_t hsr_spool_take(struct hsr_spool *sp, void *buf, size_t max, uint64_t *off)
{
	uint64_t pos, avail = hsr_spool_unsent(sp);
	size_t n = avail < max ? (size_t)avail : max;
	ssize_t r;

	*off = sp->sent;
	if (n == 0)
		return 0;
	pos = sp->sent;
	if (bounded(sp) && sp->sent >= sp->head) {
		uint64_t ring = (sp->sent - sp->head) % sp->tail;

		if (n > sp->tail - ring)
			n = (size_t)(sp->tail - ring);
		pos = sp->head + ring;
	} else if (bounded(sp) && sp->sent + n > sp->head) {
		n = (size_t)(sp->head - sp->sent);
	}
	do
		r = pread(sp->fd, buf, n, (off_t)pos);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		if (r == 0)
			errno = EIO;
		return -1;
	}
	sp->sent += (uint64_t)r;
	if (sp->sent > sp->sent_max)
		sp->sent_max = sp->sent;
	return r;
}

void hsr_spool_ack(struct hsr_spool *sp, uint64_t off)
{
	if (off > sp->sent_max)
		off = sp->sent_max; /* nobody can acknowledge what was never sent */
	if (off <= sp->acked)
		return;
	sp->acked = off;
	/* After a re-attach the client may confirm bytes the rewind put back in
	 * the queue: they need not be sent again. */
	if (sp->sent < sp->acked)
		sp->sent = sp->acked;
	if (!bounded(sp) && sp->fd >= 0 && sp->acked - sp->punched >= PUNCH_STEP) {
		uint64_t upto = sp->acked & ~(uint64_t)(PUNCH_STEP - 1);

		/* A file system without hole punching just keeps the space
		 * until the spool is closed; that is not an error. */
		if (fallocate(sp->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)sp->punched,
			      (off_t)(upto - sp->punched)) < 0 && errno != EOPNOTSUPP)
			hsr_warn("cannot free spool space: %s", strerror(errno));
		sp->punched = upto;
	}
}

void hsr_spool_rewind(struct hsr_spool *sp)
{
	sp->sent = sp->acked;
	skip_dropped(sp);
}

int hsr_spool_full(const struct hsr_spool *sp)
{
	if (bounded(sp))
		return 0;
	return sp->end - sp->sent >= HSR_UNSENT_MAX || sp->end - sp->acked >= HSR_UNACKED_MAX;
}
