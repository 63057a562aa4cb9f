/* SPDX-License-Identifier: MIT */
/* Kept output: the whole stdout and stderr of a session's last commands,
 * read back by range (READ) or written to files (SPILL) after the client
 * took only a head and a tail of them.
 *
 * A command run with HSR_EXEC_KEEP keeps its spool files whole after its
 * EXIT was acknowledged; they join the daemon's list of kept output,
 * oldest first.  The EXEC's keep field is the budget for all kept output
 * of the daemon (one session): above it, the oldest kept command is
 * evicted whole; when only running commands are left, their oldest bytes
 * after the head that no client still needs are freed.
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* At most this much is answered by one RANGE frame. */
#define KEEP_READ_MAX (1024u * 1024u)

static void spill_name(char *name, size_t len, uint64_t id, int s)
{
	snprintf(name, len, "out-%llu.%s", (unsigned long long)id, s == 1 ? "stdout" : "stderr");
}

static void kept_free(struct hsr_daemon *d, struct hsr_kept *k)
{
	for (int s = 1; s <= 2; s++) {
		hsr_spool_close(&k->sp[s]);
		if (k->spilled) {
			char name[64];

			spill_name(name, sizeof(name), k->id, s);
			unlinkat(d->rd->dirfd, name, 0);
		}
	}
	free(k);
}

void hsr_keep_free_all(struct hsr_daemon *d)
{
	while (d->kept) {
		struct hsr_kept *k = d->kept;

		d->kept = k->next;
		kept_free(d, k);
	}
}

static struct hsr_kept *kept_find(struct hsr_daemon *d, uint64_t id)
{
	for (struct hsr_kept *k = d->kept; k; k = k->next)
		if (k->id == id)
			return k;
	return NULL;
}

void hsr_keep_adopt(struct hsr_daemon *d, struct hsr_cmd *cmd)
{
	struct hsr_kept *k, **pp;

	if (!cmd->keep)
		return;
	k = calloc(1, sizeof(*k));
	if (!k)
		return; /* the output is just not kept */
	k->id = cmd->id;
	k->spilled = cmd->spilled;
	for (int s = 1; s <= 2; s++) {
		k->sp[s] = cmd->sp[s];
		/* The file and the ring belong to the list now. */
		cmd->sp[s].fd = -1;
		cmd->sp[s].ring = NULL;
	}
	cmd->keep = 0; /* its bytes are counted in the list from now on */
	for (pp = &d->kept; *pp; pp = &(*pp)->next)
		;
	*pp = k;
	hsr_keep_enforce(d);
}

static uint64_t kept_stored(const struct hsr_spool *sp)
{
	return hsr_spool_stored(&sp[1]) + hsr_spool_stored(&sp[2]);
}

void hsr_keep_enforce(struct hsr_daemon *d)
{
	uint64_t total = 0;

	if (!d->keep_max)
		return;
	for (struct hsr_kept *k = d->kept; k; k = k->next)
		total += kept_stored(k->sp);
	for (struct hsr_cmd *cmd = d->cmds; cmd; cmd = cmd->next)
		if (cmd->keep)
			total += kept_stored(cmd->sp);
	while (total > d->keep_max && d->kept) {
		struct hsr_kept *k = d->kept;

		d->kept = k->next;
		total -= kept_stored(k->sp);
		kept_free(d, k);
	}
	/* Only running commands are left: free their oldest kept bytes, a
	 * little more than needed so that this is not done for every chunk. */
	if (total > d->keep_max) {
		uint64_t slack = d->keep_max / 4 < (1u << 20) ? d->keep_max / 4 : (1u << 20);

		total += slack;
	}
	for (struct hsr_cmd *cmd = d->cmds; cmd && total > d->keep_max; cmd = cmd->next)
		for (int s = 1; s <= 2 && cmd->keep && total > d->keep_max; s++)
			total -= hsr_spool_trim(&cmd->sp[s], total - d->keep_max);
}

/* The spools of command id, running or kept, or NULL. */
static struct hsr_spool *spools_of(struct hsr_daemon *d, uint64_t id, int *ended)
{
	struct hsr_cmd *cmd = hsr_cmd_find(d, id);
	struct hsr_kept *k;

	if (cmd) {
		*ended = cmd->done && cmd->pipe_fd[1] < 0 && cmd->pipe_fd[2] < 0;
		return cmd->keep ? cmd->sp : NULL;
	}
	k = kept_find(d, id);
	*ended = 1;
	return k ? k->sp : NULL;
}

void hsr_keep_read(struct hsr_daemon *d, struct hsr_conn *c, const struct hsr_msg *m)
{
	struct hsr_msg r = { .type = HSR_F_RANGE, .id = m->id, .stream = m->stream };
	size_t max = m->mode < KEEP_READ_MAX ? m->mode : KEEP_READ_MAX;
	int ended = 0;
	struct hsr_spool *sp = spools_of(d, m->value, &ended);
	uint8_t *buf = NULL;
	ssize_t n = 0;

	if (!sp) {
		hsr_conn_error(c, m->id, HSR_E_NOENT, "the output of command %llu is not kept "
			       "(evicted, or never kept)", (unsigned long long)m->value);
		return;
	}
	if (m->stream < 1 || m->stream > 2) {
		hsr_conn_error(c, m->id, HSR_E_PROTO, "READ of stream %u", m->stream);
		return;
	}
	if (max && !(buf = malloc(max))) {
		hsr_conn_error(c, m->id, HSR_E_LIMIT, "out of memory");
		return;
	}
	n = hsr_spool_read(&sp[m->stream], m->offset, buf, max, &r.offset);
	if (n < 0) {
		hsr_conn_error(c, m->id, HSR_E_FILE, "cannot read kept output of command %llu: %s",
			       (unsigned long long)m->value, strerror(errno));
		free(buf);
		return;
	}
	r.value = sp[m->stream].end;
	r.final = (uint8_t)ended;
	r.data = buf;
	r.len = (size_t)n;
	hsr_msg_encode(&c->out, &r, 1);
	free(buf);
}

/* Copies the whole stream of sp into a new file name in the runtime dir. */
static int spill_one(struct hsr_daemon *d, const struct hsr_spool *sp, const char *name)
{
	static uint8_t buf[HSR_CHUNK];
	uint64_t off = 0, at;
	int fd, rc = 0;

	/* A file left from an earlier SPILL of the same id is replaced. */
	unlinkat(d->rd->dirfd, name, 0);
	fd = openat(d->rd->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	while (off < sp->end) {
		ssize_t n = hsr_spool_read(sp, off, buf, sizeof(buf), &at);

		if (n <= 0 || at != off) {
			rc = -1;
			errno = n < 0 ? errno : EIO;
			break;
		}
		for (ssize_t w = 0, k; w < n; w += k) {
			k = write(fd, buf + w, (size_t)(n - w));
			if (k < 0 && errno == EINTR) {
				k = 0;
				continue;
			}
			if (k < 0) {
				rc = -1;
				break;
			}
		}
		if (rc < 0)
			break;
		off += (uint64_t)n;
	}
	close(fd);
	if (rc < 0)
		unlinkat(d->rd->dirfd, name, 0);
	return rc;
}

void hsr_keep_spill(struct hsr_daemon *d, struct hsr_conn *c, const struct hsr_msg *m)
{
	struct hsr_msg ok = { .type = HSR_F_OK, .id = m->id };
	struct hsr_cmd *cmd = hsr_cmd_find(d, m->value);
	int ended = 0;
	struct hsr_spool *sp = spools_of(d, m->value, &ended);
	char name[64];

	if (!sp) {
		hsr_conn_error(c, m->id, HSR_E_NOENT, "the output of command %llu is not kept "
			       "(evicted, or never kept)", (unsigned long long)m->value);
		return;
	}
	if (!ended) {
		hsr_conn_error(c, m->id, HSR_E_BUSY, "command %llu is still running",
			       (unsigned long long)m->value);
		return;
	}
	for (int s = 1; s <= 2; s++)
		if (hsr_spool_stored(&sp[s]) != sp[s].end) {
			hsr_conn_error(c, m->id, HSR_E_LIMIT, "only part of the output of command %llu "
				       "is still kept (the budget for kept output was exceeded); "
				       "read what is kept by range", (unsigned long long)m->value);
			return;
		}
	for (int s = 1; s <= 2; s++) {
		spill_name(name, sizeof(name), m->value, s);
		if (spill_one(d, &sp[s], name) < 0) {
			hsr_conn_error(c, m->id, HSR_E_FILE, "cannot write '%s' in the runtime "
				       "directory: %s", name, strerror(errno));
			return;
		}
	}
	/* The files go when the output is evicted. */
	if (cmd)
		cmd->spilled = 1;
	else
		kept_find(d, m->value)->spilled = 1;
	hsr_msg_encode(&c->out, &ok, 1);
}
