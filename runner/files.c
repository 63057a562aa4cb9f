/* SPDX-License-Identifier: MIT */
/* File transfer: PUT writes through a temporary file and a rename, so a
 * reader never sees half a file and a symlink at the target is replaced,
 * not followed.  The file is fsync'd before the rename and its directory
 * after, so an OK means the content is on disk under the new name.  GET
 * streams a regular file in chunks within the stream's output limit.
 *
 * Paths resolve in the runner's own root only: no /proc magic link
 * (/proc/PID/fd/N, cwd, root, map_files) is followed on the way.  Such a
 * link names an open file, not a path, so in an isolated sandbox it can
 * lead to a directory outside the sandbox's root, as a descriptor its
 * starter left open would. */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* openat2(2); the C library may lack a wrapper and the header. */
#ifndef RESOLVE_NO_MAGICLINKS
#define RESOLVE_NO_MAGICLINKS 0x02
#endif
struct hsr_open_how {
	uint64_t flags;
	uint64_t mode;
	uint64_t resolve;
};

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

/* Opens the directory holding path's last component (path is absolute)
 * without following a /proc magic link.  O_PATH: searching it is all the
 * permission needed, as when the path was opened whole.  Kernels without openat2 (before
 * 5.6) resolve the directory with realpath(), which reads a magic link as
 * the path it shows, in this root, and refuse anything under /proc. */
static int open_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX], *real;
	long fd;

	if ((size_t)(slash - path) >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
#ifdef SYS_openat2
	struct hsr_open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				    .resolve = RESOLVE_NO_MAGICLINKS };

	fd = syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof(how));
	if (fd >= 0 || errno != ENOSYS)
		return (int)fd;
#endif
	real = realpath(dir, NULL);
	if (!real)
		return -1;
	if (strncmp(real, "/proc", 5) == 0 && (real[5] == '\0' || real[5] == '/')) {
		free(real);
		errno = ELOOP;
		return -1;
	}
	fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	free(real);
	return (int)fd;
}

/* Why a path could not be opened: ELOOP is a refused link. */
static const char *path_error(int e)
{
	return e == ELOOP ? "it ends in a symlink or passes a /proc link (neither is followed)"
			  : strerror(e);
}

static void put_free(struct hsr_put *p, int keep)
{
	if (p->fd >= 0)
		close(p->fd);
	if (!keep && p->tmp && p->dirfd >= 0)
		unlinkat(p->dirfd, p->tmp, 0);
	if (p->dirfd >= 0)
		close(p->dirfd);
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
	p->dirfd = -1;
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
	/* The temporary file and the rename are relative to the directory
	 * opened once, so both land where the path led when it was checked. */
	snprintf(p->tmp, n, ".%s.hsr-%ld-%u", slash + 1, (long)getpid(), ++put_seq);
	p->dirfd = open_parent(p->path);
	if (p->dirfd >= 0)
		p->fd = openat(p->dirfd, p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			       0600);
	if (p->fd < 0) {
		hsr_conn_error(c, m->id, HSR_E_FILE, "cannot create a file beside '%s': %s", p->path,
			       path_error(errno));
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

/* Makes a rename in directory dirfd (an O_PATH descriptor) durable.  File
 * systems that cannot sync a directory (EINVAL, ENOTSUP) are not an error. */
static int sync_dir(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

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
	if (renameat(p->dirfd, p->tmp, p->dirfd, strrchr(p->path, '/') + 1) < 0) {
		hsr_conn_error(c, m->id, HSR_E_FILE, "cannot rename into '%s': %s", p->path,
			       strerror(errno));
		goto drop;
	}
	if (sync && sync_dir(p->dirfd) < 0) {
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
	int fd, dirfd = -1;

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
	dirfd = open_parent(path);
	fd = dirfd < 0 ? -1
		       : openat(dirfd, strrchr(path, '/') + 1,
				O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		hsr_conn_error(c, m->id, HSR_E_FILE, "cannot read '%s': %s", path,
			       fd < 0 ? path_error(errno) : "not a regular file");
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
	if (dirfd >= 0)
		close(dirfd);
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
