/* SPDX-License-Identifier: MIT */
/* Spool: the output of one stream.
 *
 * Bytes live in an unlinked file in the runtime dir, never in memory, so
 * a command producing gigabytes for a slow reader costs the daemon no RAM.
 * Offset o is file position o.  What can no longer be sent (acknowledged,
 * or in a bounded stream outside its head and tail) is freed by punching
 * a hole after the head, unless the stream is kept for reading back later
 * (recoverable output): then it stays until the daemon's budget for kept
 * output trims it, oldest bytes after the head first.
 */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Without keep, space is freed in steps of this much (fewer system calls). */
#define FREE_STEP (1u << 20)

static unsigned spool_seq;

static int bounded(const struct hsr_spool *sp)
{
	return sp->head || sp->tail;
}

void hsr_spool_init(struct hsr_spool *sp, uint64_t head, uint64_t tail)
{
	memset(sp, 0, sizeof(*sp));
	sp->fd = -1;
	sp->head = head;
	sp->tail = tail;
	sp->hole_lo = sp->punched = head;
}

void hsr_spool_close(struct hsr_spool *sp)
{
	if (sp->fd >= 0)
		close(sp->fd);
	sp->fd = -1;
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

/* The lowest offset at or above hole_lo that may still be sent or resent:
 * below it, nothing is needed for the stream any more. */
static uint64_t need_from(const struct hsr_spool *sp)
{
	uint64_t from = sp->acked;

	if (bounded(sp) && sp->end > sp->tail && sp->end - sp->tail > from)
		from = sp->end - sp->tail; /* never sent: outside the tail bound */
	return from > sp->hole_lo ? from : sp->hole_lo;
}

/* Frees the file space of [punched, to). */
static void free_upto(struct hsr_spool *sp, uint64_t to)
{
	if (to <= sp->punched)
		return;
	/* A file system without hole punching just keeps the space until
	 * the spool is closed; that is not an error. */
	if (sp->fd >= 0 &&
	    fallocate(sp->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)sp->punched,
		      (off_t)(to - sp->punched)) < 0 && errno != EOPNOTSUPP)
		hsr_warn("cannot free spool space: %s", strerror(errno));
	sp->punched = to;
}

/* Without keep: gives back what can no longer be sent, in steps. */
static void free_unneeded(struct hsr_spool *sp)
{
	uint64_t to = need_from(sp);

	if (!sp->keep && to >= sp->punched + FREE_STEP)
		free_upto(sp, to);
}

int hsr_spool_append(struct hsr_spool *sp, int dirfd, const void *data, size_t n)
{
	if (n == 0)
		return 0;
	if (sp->fd < 0 && (sp->fd = spool_open(dirfd)) < 0)
		return -1;
	if (pwrite_all(sp->fd, data, n, sp->end) < 0)
		return -1;
	sp->end += n;
	free_unneeded(sp);
	return 0;
}

uint64_t hsr_spool_kept_from(const struct hsr_spool *sp, uint64_t o)
{
	if (o >= sp->hole_lo && o < sp->punched)
		o = sp->punched;
	return o < sp->end ? o : sp->end;
}

/* Returns the lowest offset >= o that may be sent. */
static uint64_t first_kept(const struct hsr_spool *sp, uint64_t o)
{
	if (bounded(sp) && o >= sp->head) {
		uint64_t tail_start = sp->end > sp->tail ? sp->end - sp->tail : 0;

		if (o < tail_start)
			o = tail_start;
	}
	return hsr_spool_kept_from(sp, o);
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

static ssize_t pread_some(int fd, void *buf, size_t n, uint64_t pos)
{
	ssize_t r;

	do
		r = pread(fd, buf, n, (off_t)pos);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		errno = EIO;
		r = -1;
	}
	return r;
}

ssize_t hsr_spool_take(struct hsr_spool *sp, void *buf, size_t max, uint64_t *off)
{
	uint64_t avail = hsr_spool_unsent(sp);
	size_t n = avail < max ? (size_t)avail : max;
	ssize_t r;

	*off = sp->sent;
	/* The head ends a send: what follows it may be skipped (the tail). */
	if (bounded(sp) && sp->sent < sp->head && sp->head - sp->sent < n)
		n = (size_t)(sp->head - sp->sent);
	if (n == 0)
		return 0;
	if ((r = pread_some(sp->fd, buf, n, sp->sent)) < 0)
		return -1;
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
	free_unneeded(sp);
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

uint64_t hsr_spool_stored(const struct hsr_spool *sp)
{
	return sp->end - (sp->punched - sp->hole_lo);
}

uint64_t hsr_spool_trim(struct hsr_spool *sp, uint64_t want)
{
	uint64_t to = need_from(sp), before = sp->punched;

	if (to > sp->punched + want)
		to = sp->punched + want;
	free_upto(sp, to);
	return sp->punched - before;
}

ssize_t hsr_spool_read(const struct hsr_spool *sp, uint64_t off, void *buf, size_t max,
		       uint64_t *at)
{
	uint64_t from = hsr_spool_kept_from(sp, off);
	uint64_t lim = from < sp->hole_lo && sp->punched > sp->hole_lo ? sp->hole_lo : sp->end;
	size_t n = lim - from < max ? (size_t)(lim - from) : max;

	*at = from;
	if (n == 0 || sp->fd < 0)
		return 0;
	return pread_some(sp->fd, buf, n, from);
}
