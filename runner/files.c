/* File transfer: PUT writes through a temporary file and a rename, so a
 * reader never sees half a file and a symlink at the target is replaced,
 * not followed.  The file is fsync'd before the rename and its directory
 * after, so an OK means the content is on disk under the new name.  GET
 * streams a regular file in chunks within the stream's output limit. */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned put_seq;

static struct hsr_put *put_find(struct hsr_conn *c, uint64_t id, struct hsr_put ***link)
{
	for (struct hsr_put **pp = &c->puts; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			*link = pp;
			return *pp;
		}
	return NULL;
}

static void put_free(struct hsr_put *p, int keep)
{
	if (p->fd >= 0)
		close(p->fd);
	if (!keep && p->tmp)
		unlink(p->tmp);
	free(p->tmp);
	free(p->path);
	free(p);
}

/* Copies a wire path; it must be absolute and free of NUL bytes. */
static char *wire_path(const struct hsr_msg *m)
{
	char *s;

	if (m->str_len == 0 || m->str[0] != '/' || memchr(m->str, '\0', m->str_len))
		return NULL;
	s = malloc(m->str_len + 1);
	if (s) {
		memcpy(s, m->str, m->str_len);
		s[m->str_len] = '\0';
	}
	return s;
}

static struct hsr_put *put_begin(struct hsr_conn *c, const struct hsr_msg *m)
{
	struct hsr_put *p = calloc(1, sizeof(*p));
	char *slash;
	size_t n;

	if (!p)
		return NULL;
	p->fd = -1;
	p->id = m->id;
	p->path = wire_path(m);
	if (!p->path) {
		hsr_conn_error(c, m->id, HSR_E_FILE, "invalid path: it must be absolute");
		goto fail;
	}
	slash = strrchr(p->path, '/');
	n = strlen(p->path) + 64;
	p->tmp = malloc(n);
	if (!p->tmp || slash[1] == '\0') {
		hsr_conn_error(c, m->id, HSR_E_FILE, "invalid path '%s'", p->path);
		goto fail;
	}
	snprintf(p->tmp, n, "%.*s.%s.hsr-%ld-%u", (int)(slash - p->path + 1), p->path, slash + 1,
		 (long)getpid(), ++put_seq);
	p->fd = open(p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (p->fd < 0) {
		hsr_conn_error(c, m->id, HSR_E_FILE, "cannot create '%s': %s", p->tmp,
			       strerror(errno));
		free(p->tmp);
		p->tmp = NULL;
		goto fail;
	}
	p->next = c->puts;
	c->puts = p;
	return p;
fail:
	put_free(p, 0);
	return NULL;
}

static int write_all(int fd, const uint8_t *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Makes a rename in path's directory durable.  File systems that cannot
 * sync a directory (EINVAL, ENOTSUP) are not an error. */
static int sync_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	int fd, rc;

	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = fsync(fd);
	if (rc < 0 && (errno == EINVAL || errno == ENOTSUP || errno == EROFS))
		rc = 0;
	close(fd);
	return rc;
}

void hsr_files_put(struct hsr_daemon *d, struct hsr_conn *c, const struct hsr_msg *m)
{
	struct hsr_put **link = NULL, *p = put_find(c, m->id, &link);

	(void)d;
	if (m->flags & HSR_PUT_FIRST) {
		if (p) {
			hsr_conn_error(c, m->id, HSR_E_BUSY, "transfer id %llu is in use",
				       (unsigned long long)m->id);
			return;
		}
		if (!(p = put_begin(c, m)))
			return;
		put_find(c, m->id, &link);
	}
	if (!p)
		return; /* the transfer failed earlier and was reported then */
	if (write_all(p->fd, m->data, m->len) < 0) {
		hsr_conn_error(c, m->id, HSR_E_FILE, "cannot write '%s': %s", p->path,
			       strerror(errno));
		goto drop;
	}
	if (!(m->flags & HSR_PUT_FINAL))
		return;
	/* put_free() closes the descriptor on the error path. */
	int sync = !(m->flags & HSR_PUT_NOSYNC);
	if (fchmod(p->fd, m->mode & 07777) < 0 || (sync && fsync(p->fd) < 0)) {
		hsr_conn_error(c, m->id, HSR_E_FILE, "cannot write '%s': %s", p->path,
			       strerror(errno));
		goto drop;
	}
	if (close(p->fd) < 0) {
		p->fd = -1;
		hsr_conn_error(c, m->id, HSR_E_FILE, "cannot write '%s': %s", p->path,
			       strerror(errno));
		goto drop;
	}
	p->fd = -1;
	if (rename(p->tmp, p->path) < 0) {
		hsr_conn_error(c, m->id, HSR_E_FILE, "cannot rename into '%s': %s", p->path,
			       strerror(errno));
		goto drop;
	}
	if (sync && sync_parent(p->path) < 0) {
		/* The file is in place; only its durability is in doubt. */
		hsr_conn_error(c, m->id, HSR_E_FILE, "'%s' written, but cannot sync its directory: %s",
			       p->path, strerror(errno));
	} else {
		struct hsr_msg ok = { .type = HSR_F_OK, .id = m->id };

		hsr_msg_encode(&c->out, &ok, 1);
	}
	*link = p->next;
	put_free(p, 1);
	return;
drop:
	*link = p->next;
	put_free(p, 0);
}

void hsr_files_get(struct hsr_conn *c, const struct hsr_msg *m)
{
	struct hsr_get *g;
	struct stat st;
	char *path = wire_path(m);
	int fd;

	if (!path) {
		hsr_conn_error(c, m->id, HSR_E_FILE, "invalid path: it must be absolute");
		return;
	}
	for (g = c->gets; g; g = g->next)
		if (g->id == m->id) {
			hsr_conn_error(c, m->id, HSR_E_BUSY, "transfer id %llu is in use",
				       (unsigned long long)m->id);
			goto out;
		}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		hsr_conn_error(c, m->id, HSR_E_FILE, "cannot read '%s': %s", path,
			       fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		goto out;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		close(fd);
		hsr_conn_error(c, m->id, HSR_E_LIMIT, "out of memory");
		goto out;
	}
	g->id = m->id;
	g->fd = fd;
	g->next = c->gets;
	c->gets = g;
out:
	free(path);
}

void hsr_files_pump(struct hsr_conn *c)
{
	static uint8_t buf[HSR_CHUNK];
	struct hsr_get **pp = &c->gets;

	while (*pp && c->out.len < HSR_OUT_HIGH) {
		struct hsr_get *g = *pp;
		struct hsr_msg m = { .type = HSR_F_FILE_DATA, .id = g->id, .offset = g->offset };
		ssize_t n;

		do
			n = read(g->fd, buf, sizeof(buf));
		while (n < 0 && errno == EINTR);
		if (n < 0) {
			hsr_conn_error(c, g->id, HSR_E_FILE, "cannot read file: %s", strerror(errno));
		} else {
			m.data = buf;
			m.len = (size_t)n;
			m.final = n == 0;
			hsr_msg_encode(&c->out, &m, 1);
			g->offset += (uint64_t)n;
			if (n > 0)
				continue;
		}
		*pp = g->next;
		close(g->fd);
		free(g);
	}
}

void hsr_files_drop(struct hsr_conn *c)
{
	while (c->puts) {
		struct hsr_put *p = c->puts;

		c->puts = p->next;
		put_free(p, 0);
	}
	while (c->gets) {
		struct hsr_get *g = c->gets;

		c->gets = g->next;
		close(g->fd);
		free(g);
	}
}
