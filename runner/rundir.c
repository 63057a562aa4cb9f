/* SPDX-License-Identifier: MIT */
/* The runtime directory: where the socket, the lock and the spool live.
 *
 * Everything in it is trusted only because the directory and every one
 * above it are private to the user or root, so the whole chain is checked
 * from "/" (dirchain.c: no link at the leaf, the leaf the effective uid's
 * with mode exactly 0700, no ancestor others can write unless sticky), and
 * it must be node-local: on NFS two nodes could share the path while their
 * sockets and locks stay apart.  The lock, the spool files and the socket
 * are then reached through the directory's descriptor (the socket as
 * /proc/self/fd/N/sock; by its path only where there is no /proc, which
 * nobody but the user and root can change once the chain is checked).
 */
#include "runner.h"
#include "dirchain.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* File system magic numbers (linux/magic.h is not available to musl). */
#define NFS_MAGIC 0x6969
#define SMB_MAGIC 0x517B
#define CIFS_MAGIC 0xFF534D42u
#define SMB2_MAGIC 0xFE534D42u

int64_t hsr_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void hsr_warn(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(msg) - 2)
		n = sizeof(msg) - 2;
	msg[n++] = '\n';
	/* One write so concurrent messages do not interleave. */
	if (dprintf(2, "hs-runner: %.*s", n, msg) < 0) {
		/* stderr is gone; nothing else to do */
	}
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

int hsr_rundir_open(struct hsr_rundir *rd, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	struct statfs sfs;
	int fd = -1;

	rd->dirfd = -1;
	if (!path || !*path) {
		set_err(err, errlen, "runtime directory not given");
		return -1;
	}
	if (strlen(path) >= sizeof(rd->path)) {
		set_err(err, errlen, "runtime directory '%s' is too long", path);
		return -1;
	}
	snprintf(rd->path, sizeof(rd->path), "%s", path);
	if (strlen(path) + sizeof("/sock") > sizeof(sun.sun_path)) {
		set_err(err, errlen, "runtime directory '%s' is too long for a socket path "
			"(at most %zu bytes)", path, sizeof(sun.sun_path) - sizeof("/sock"));
		return -1;
	}
	snprintf(rd->sock, sizeof(rd->sock), "%s/sock", path);
	/* The whole chain from "/", then the directory through its descriptor. */
	fd = hs_dirchain_open(path, HS_DIRCHAIN_CREATE, "give a private --dir", err, errlen);
	if (fd < 0)
		return -1;
	if (fstatfs(fd, &sfs) < 0) {
		set_err(err, errlen, "cannot statfs runtime directory '%s': %s", path, strerror(errno));
		goto fail;
	}
	if ((unsigned long)sfs.f_type == NFS_MAGIC || (unsigned long)sfs.f_type == SMB_MAGIC ||
	    (unsigned long)sfs.f_type == CIFS_MAGIC || (unsigned long)sfs.f_type == SMB2_MAGIC) {
		set_err(err, errlen, "runtime directory '%s' is on a network file system; "
			"use a node-local directory", path);
		goto fail;
	}
	rd->dirfd = fd;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

void hsr_rundir_close(struct hsr_rundir *rd)
{
	if (rd->dirfd >= 0)
		close(rd->dirfd);
	rd->dirfd = -1;
}

int hsr_rundir_lock(const struct hsr_rundir *rd, char *err, size_t errlen)
{
	/* A stopping daemon unlinks the lock while holding it; whoever
	 * waited on that file then holds a lock nobody else can see, so the
	 * file is opened again until the locked one is the one at the path. */
	for (int tries = 0; tries < 100; tries++) {
		int fd = openat(rd->dirfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		struct stat a, b;

		if (fd < 0) {
			set_err(err, errlen, "cannot open lock '%s/lock': %s", rd->path,
				strerror(errno));
			return -1;
		}
		while (flock(fd, LOCK_EX) < 0) {
			if (errno == EINTR)
				continue;
			set_err(err, errlen, "cannot lock '%s/lock': %s", rd->path, strerror(errno));
			close(fd);
			return -1;
		}
		if (fstat(fd, &a) == 0 &&
		    fstatat(rd->dirfd, "lock", &b, AT_SYMLINK_NOFOLLOW) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return fd;
		close(fd);
	}
	set_err(err, errlen, "cannot lock '%s/lock': it keeps being replaced", rd->path);
	return -1;
}

void hsr_rundir_sweep(const struct hsr_rundir *rd)
{
	int fd = openat(rd->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dir)))
		/* Spool files, and the session shell's files and job logs
		 * (shell.c), which end with their daemon. */
		if (strncmp(de->d_name, "spool.", 6) == 0 || strncmp(de->d_name, "sh.", 3) == 0 ||
		    strncmp(de->d_name, "job-", 4) == 0 || strncmp(de->d_name, "out-", 4) == 0)
			unlinkat(rd->dirfd, de->d_name, 0);
	closedir(dir);
}

void hsr_rundir_sun(const struct hsr_rundir *rd, struct sockaddr_un *sun)
{
	struct stat a, b;
	char fdp[64];

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	/* Only a /proc that really shows our descriptor (not a chroot's stand-in). */
	snprintf(fdp, sizeof(fdp), "/proc/self/fd/%d", rd->dirfd);
	if (rd->dirfd >= 0 && stat(fdp, &a) == 0 && fstat(rd->dirfd, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		snprintf(sun->sun_path, sizeof(sun->sun_path), "%s/sock", fdp);
	else
		snprintf(sun->sun_path, sizeof(sun->sun_path), "%s", rd->sock);
}

int hsr_rundir_connect(const struct hsr_rundir *rd)
{
	struct sockaddr_un sun;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	hsr_rundir_sun(rd, &sun);
	while (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int e = errno;

		if (e == EINTR)
			continue;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int hsr_open_null(int flags)
{
	int fd = open("/dev/null", flags | O_CLOEXEC);
	int p[2];

	if (fd >= 0)
		return fd;
	/* A pipe whose other end is closed reads as EOF and fails writes,
	 * which is close enough to /dev/null for stdin. */
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	if ((flags & O_ACCMODE) == O_RDONLY) {
		close(p[1]);
		return p[0];
	}
	close(p[0]);
	return p[1];
}
