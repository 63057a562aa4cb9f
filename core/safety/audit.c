/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * audit.c - append audit records as JSON lines (yajl).
 *
 * One write() per record on an O_APPEND descriptor keeps records from
 * concurrent hs processes whole on local filesystems.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "core/safety/audit.h"

int
hs_audit_open(const char *path, char *err, size_t errlen)
{
	/* O_NONBLOCK: a FIFO planted at the path must not hang hs (an open for
	 * writing with no reader fails at once; with one, fstat refuses it). */
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
	struct stat st;

	if (fd < 0) {
		snprintf(err, errlen, "cannot open audit log '%s': %s%s", path, strerror(errno),
		         errno == ELOOP ? " (a symlink is refused: point audit_log at the file itself)" : "");
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot check audit log '%s': %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "audit log '%s' is not a regular file: point audit_log at a file", path);
		goto fail;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "audit log '%s' is owned by uid %u, not by you (uid %u): use a file of your own",
		         path, (unsigned)st.st_uid, (unsigned)geteuid());
		goto fail;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "audit log '%s' is writable by others (mode %03o): chmod go-w it", path,
		         (unsigned)(st.st_mode & 0777));
		goto fail;
	}
	if (fcntl(fd, F_SETFL, O_APPEND) < 0) {
		snprintf(err, errlen, "cannot use audit log '%s': %s", path, strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

/* A copy of s with every byte that is not part of valid UTF-8 replaced by U+FFFD. */
static char *
clean_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, o = 0, len, k;
	char *out = malloc(n * 3 + 1);

	if (!out)
		return NULL;
	while (i < n) {
		len = p[i] < 0x80 ? 1 : (p[i] & 0xe0) == 0xc0 ? 2 : (p[i] & 0xf0) == 0xe0 ? 3 : (p[i] & 0xf8) == 0xf0 ? 4 : 0;
		for (k = 1; len && k < len; k++)
			if (i + k >= n || (p[i + k] & 0xc0) != 0x80)
				len = 0;
		if (len == 2 && p[i] < 0xc2)
			len = 0;
		if (!len) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, p + i, len);
		o += len;
		i += len;
	}
	out[o] = '\0';
	return out;
}

static void
gen_key(yajl_gen g, const char *k)
{
	yajl_gen_string(g, (const unsigned char *)k, strlen(k));
}

static int
gen_str(yajl_gen g, const char *k, const char *v)
{
	char *c;

	gen_key(g, k);
	if (!v)
		return yajl_gen_null(g) == yajl_gen_status_ok ? 0 : -1;
	c = clean_utf8(v);
	if (!c)
		return -1;
	yajl_gen_string(g, (const unsigned char *)c, strlen(c));
	free(c);
	return 0;
}

long
hs_audit_format(const struct hs_audit_record *r, char **out)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	const unsigned char *buf;
	size_t len, k;
	long rc = -1;

	*out = NULL;
	if (!g)
		return -1;
	yajl_gen_map_open(g);
	gen_key(g, "ts");
	yajl_gen_integer(g, r->ts_ms);
	if (gen_str(g, "session", r->session) || gen_str(g, "backend", r->backend) ||
	    gen_str(g, "command", r->command) || gen_str(g, "verdict", r->verdict))
		goto out;
	gen_key(g, "rules");
	yajl_gen_array_open(g);
	for (k = 0; k < r->n_rules; k++) {
		char *c = clean_utf8(r->rules[k]);

		if (!c)
			goto out;
		yajl_gen_string(g, (const unsigned char *)c, strlen(c));
		free(c);
	}
	yajl_gen_array_close(g);
	if (gen_str(g, "decision", r->decision) || gen_str(g, "approver", r->approver))
		goto out;
	/* Only on stdin writes, so command records keep their shape. */
	if (r->kind && (gen_str(g, "kind", r->kind) || (r->job && gen_str(g, "job", r->job))))
		goto out;
	gen_key(g, "exit_code");
	if (r->has_exit)
		yajl_gen_integer(g, r->exit_code);
	else
		yajl_gen_null(g);
	gen_key(g, "duration_ms");
	if (r->has_exit)
		yajl_gen_integer(g, r->duration_ms);
	else
		yajl_gen_null(g);
	if (r->egress) {
		const struct hs_audit_egress *e = r->egress;
		gen_key(g, "egress");
		yajl_gen_map_open(g);
		if (gen_str(g, "kind", e->kind) || gen_str(g, "host", e->host))
			goto out;
		gen_key(g, "port");
		yajl_gen_integer(g, e->port);
		if (gen_str(g, "address", e->address) || gen_str(g, "rule", e->rule) ||
		    gen_str(g, "reason", e->reason))
			goto out;
		gen_key(g, "bytes_out");
		yajl_gen_integer(g, (long long)e->bytes_out);
		gen_key(g, "bytes_in");
		yajl_gen_integer(g, (long long)e->bytes_in);
		yajl_gen_map_close(g);
	}
	yajl_gen_map_close(g);
	if (yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok)
		goto out;
	*out = malloc(len + 2);
	if (!*out)
		goto out;
	memcpy(*out, buf, len);
	(*out)[len] = '\n';
	(*out)[len + 1] = '\0';
	rc = (long)len + 1;
out:
	yajl_gen_free(g);
	return rc;
}

int
hs_audit_append(int fd, const struct hs_audit_record *r, char *err, size_t errlen)
{
	char *line;
	long len = hs_audit_format(r, &line);
	ssize_t w;

	if (len < 0) {
		snprintf(err, errlen, "cannot format audit record");
		return -1;
	}
	/* Under a lock, so that a record cut short (a full disk) can be taken
	 * back without touching another process's: the log never holds half a
	 * record. */
	struct stat st;
	int locked = flock(fd, LOCK_EX) == 0;
	off_t size = fstat(fd, &st) == 0 ? st.st_size : -1;
	do
		w = write(fd, line, (size_t)len);
	while (w < 0 && errno == EINTR);
	int e = errno;
	free(line);
	if (w != len) {
		if (w > 0 && size >= 0 && ftruncate(fd, size) < 0)
			e = errno;
		if (locked)
			flock(fd, LOCK_UN);
		snprintf(err, errlen, "cannot write audit record: %s",
		         w < 0 ? strerror(e) : "short write (the disk may be full); the partial record was removed");
		return -1;
	}
	if (locked)
		flock(fd, LOCK_UN);
	return 0;
}
