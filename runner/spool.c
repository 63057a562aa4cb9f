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
#include <stdlib.h>
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
	free(sp->ring);
	sp->ring = NULL;
	sp->ring_cap = 0;
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

/* Copies n ring bytes at offset o (all in the ring) to buf. */
static void ring_get(const struct hsr_spool *sp, uint64_t o, uint8_t *buf, size_t n)
{
	size_t at = (size_t)(o % sp->ring_cap), k = sp->ring_cap - at < n ? sp->ring_cap - at : n;

	memcpy(buf, sp->ring + at, k);
	memcpy(buf + k, sp->ring, n - k);
}

/* Grows the ring so that it holds want bytes, up to HSR_RING_MAX; the
 * bytes it holds move to their places in the larger ring. */
static int ring_grow(struct hsr_spool *sp, uint64_t want)
{
	size_t cap = sp->ring_cap ? sp->ring_cap : 64u * 1024u;
	uint8_t *r;

	while (cap < want && cap < HSR_RING_MAX)
		cap *= 2;
	if (cap == sp->ring_cap)
		return 0;
	if (!(r = malloc(cap)))
		return sp->ring ? 0 : -1; /* a full ring goes on spilling to the file */
	for (uint64_t o = sp->ring_lo; o < sp->end;) {
		size_t at = (size_t)(o % cap), k = cap - at;

		if (k > sp->end - o)
			k = (size_t)(sp->end - o);
		ring_get(sp, o, r + at, k);
		o += k;
	}
	free(sp->ring);
	sp->ring = r;
	sp->ring_cap = cap;
	return 0;
}

/* Moves the ring's oldest bytes up to offset to out of it: those still
 * needed (not yet acknowledged, or kept) go to the file. */
static int ring_evict(struct hsr_spool *sp, int dirfd, uint64_t to)
{
	static uint8_t buf[64 * 1024];
	uint64_t from = sp->ring_lo;

	if (!sp->keep && from < sp->acked)
		from = sp->acked < to ? sp->acked : to;
	while (from < to) {
		size_t k = to - from < sizeof(buf) ? (size_t)(to - from) : sizeof(buf);

		if (sp->fd < 0 && (sp->fd = spool_open(dirfd)) < 0)
			return -1;
		ring_get(sp, from, buf, k);
		if (pwrite_all(sp->fd, buf, k, from) < 0)
			return -1;
		from += k;
	}
	sp->ring_lo = to;
	return 0;
}

int hsr_spool_append(struct hsr_spool *sp, int dirfd, const void *data, size_t n)
{
	const uint8_t *p = data;

	if (n == 0)
		return 0;
	while (n) {
		size_t k;

		if (sp->end + n - sp->ring_lo > sp->ring_cap &&
		    ring_grow(sp, sp->end + n - sp->ring_lo) < 0)
			return -1;
		k = n < sp->ring_cap ? n : sp->ring_cap;
		if (sp->end + k - sp->ring_lo > sp->ring_cap &&
		    ring_evict(sp, dirfd, sp->end + k - sp->ring_cap) < 0)
			return -1;
		for (size_t done = 0; done < k;) {
			size_t at = (size_t)((sp->end + done) % sp->ring_cap);
			size_t c = sp->ring_cap - at < k - done ? sp->ring_cap - at : k - done;

			memcpy(sp->ring + at, p + done, c);
			done += c;
		}
		sp->end += k;
		p += k;
		n -= k;
	}
	free_unneeded(sp);
	return 0;
}

/* Reads up to n held bytes at offset o (o itself held): from the ring, or
 * from the file up to where the ring starts. */
static ssize_t spool_get(const struct hsr_spool *sp, uint64_t o, void *buf, size_t n)
{
	if (o >= sp->ring_lo) {
		if (n > sp->end - o)
			n = (size_t)(sp->end - o);
		ring_get(sp, o, buf, n);
		return (ssize_t)n;
	}
	if (n > sp->ring_lo - o)
		n = (size_t)(sp->ring_lo - o);
	if (sp->fd < 0) {
		errno = EIO;
		return -1;
	}
	return pread_some(sp->fd, buf, n, o);
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
	if ((r = spool_get(sp, sp->sent, buf, n)) < 0)
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
	if (n == 0)
		return 0;
	return spool_get(sp, from, buf, n);
}
