/* SPDX-License-Identifier: MIT */
/*
 * isolate-root.c - the sandbox's file system, built by hs-isolate's PID 1 in
 * the new namespaces: a tmpfs root on DIR/root with the system directories
 * bound read-only and the workspace and DIR/box read-write, private /tmp,
 * /var/tmp and /run, a minimal /dev, the new PID namespace's /proc with its
 * exposed entries read-only or hidden, the host's credentials and secrets
 * hidden behind empty stand-ins, and hs-runner at a fixed place; then
 * pivot_root, a read-only root, the host name and the loopback interface.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "isolate.h"
#include "iso.h"

/* mkdir -p of an absolute path; existing components are fine. */
static int
mkdirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == 0) {
			char c = *p;
			*p = 0;
			if (mkdir(buf, mode) < 0 && errno != EEXIST)
				return -1;
			*p = c;
			if (!c)
				break;
		}
	}
	return 0;
}

/* Creates an empty file as a mount point for a file bind. */
static int
touch_file(const char *path)
{
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = 0;
		if (mkdirs(parent, 0755) < 0)
			return -1;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return errno == EEXIST || errno == EROFS ? 0 : -1;
	close(fd);
	return 0;
}

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
struct iso_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

/*
 * Makes the mount tree at path read-only (and nosuid, nodev), submounts
 * included.  mount_setattr() keeps the flags a user namespace may not clear;
 * the older remount fallback carries them over by hand (statvfs).
 */
static int
make_readonly(const char *path, int recursive)
{
#ifdef SYS_mount_setattr
	struct iso_mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
	if (syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &a, sizeof(a)) == 0)
		return 0;
	if (errno != ENOSYS)
		return -1;
#endif
	struct statvfs sv;
	if (statvfs(path, &sv) < 0)
		return -1;
	unsigned long fl = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		fl |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME)
		fl |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		fl |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		fl |= MS_RELATIME;
	return mount(NULL, path, NULL, fl, NULL);
}

static void
join(char *out, size_t len, const char *root, const char *path)
{
	snprintf(out, len, "%s%s", root, path);
}

/*
 * Binds host path src at the same path under root.  Symbolic links (merged
 * /usr: /bin -> usr/bin) are recreated as links.  Missing sources are
 * skipped when optional.
 */
static void
bind_path(int efd, const char *root, const char *src, int writable, int optional, int rec)
{
	char dst[PATH_MAX], link[PATH_MAX];
	struct stat sb;
	if (lstat(src, &sb) < 0) {
		if (optional && errno == ENOENT)
			return;
		iso_fail(efd, "cannot bind '%s' into the sandbox: %s", src, strerror(errno));
	}
	join(dst, sizeof(dst), root, src);
	if (S_ISLNK(sb.st_mode)) {
		ssize_t n = readlink(src, link, sizeof(link) - 1);
		if (n < 0)
			iso_fail(efd, "cannot read the link '%s': %s", src, strerror(errno));
		link[n] = 0;
		char parent[PATH_MAX];
		snprintf(parent, sizeof(parent), "%s", dst);
		*strrchr(parent, '/') = 0;
		if (mkdirs(parent, 0755) < 0 || (symlink(link, dst) < 0 && errno != EEXIST))
			iso_fail(efd, "cannot create '%s' in the sandbox: %s", src, strerror(errno));
		return;
	}
	if (S_ISDIR(sb.st_mode) ? mkdirs(dst, 0755) < 0 : touch_file(dst) < 0)
		iso_fail(efd, "cannot create the mount point '%s': %s", dst, strerror(errno));
	if (mount(src, dst, NULL, MS_BIND | (rec ? MS_REC : 0), NULL) < 0)
		iso_fail(efd, "cannot bind '%s' into the sandbox: %s", src, strerror(errno));
	if (!writable) {
		if (make_readonly(dst, rec) < 0)
			iso_fail(efd, "cannot make '%s' read-only: %s", src, strerror(errno));
	} else {
		/* Writable binds still never honour setuid bits or devices. */
		struct iso_mount_attr a = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
#ifdef SYS_mount_setattr
		if (syscall(SYS_mount_setattr, AT_FDCWD, dst, AT_RECURSIVE, &a, sizeof(a)) < 0 &&
		    errno != ENOSYS)
			iso_fail(efd, "cannot make '%s' nosuid: %s", src, strerror(errno));
#else
		(void)a;
#endif
	}
}

static void
mount_tmpfs(int efd, const char *dst, const char *opts, unsigned long flags)
{
	if (mkdirs(dst, 0755) < 0)
		iso_fail(efd, "cannot create the mount point '%s': %s", dst, strerror(errno));
	if (mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV | flags, opts) < 0)
		iso_fail(efd, "cannot mount a tmpfs on '%s': %s", dst, strerror(errno));
}

/* Is a equal to b or an ancestor of it? */
int
iso_covers(const char *a, const char *b)
{
	size_t n = strlen(a);
	if (n == 1 && a[0] == '/')
		return 1;
	return strncmp(a, b, n) == 0 && (b[n] == 0 || b[n] == '/');
}

/* An empty file in the sandbox's root, which ends up read-only: files are hidden behind it. */
#define ISO_EMPTY "/.hs-empty"

/*
 * A read-only stand-in for the host directory path at dst: the same names,
 * one level deep, every file empty.  Contents never show; names do, so that
 * tools find "no keys" rather than a broken home.
 */
static void
standin_dir(int efd, const char *path, const char *dst)
{
	char p[PATH_MAX];
	if (mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=256k") < 0)
		iso_fail(efd, "cannot hide '%s' in the sandbox: %s", path, strerror(errno));
	DIR *d = opendir(path);
	if (d) {
		struct dirent *de;
		int n = 0;
		while ((de = readdir(d)) && n < 512) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			if (snprintf(p, sizeof(p), "%s/%s", dst, de->d_name) >= (int)sizeof(p))
				continue;
			n++;
			if (de->d_type == DT_DIR) {
				mkdir(p, 0755);
			} else {
				int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
				if (fd >= 0)
					close(fd);
			}
		}
		closedir(d);
	}
	if (make_readonly(dst, 0) < 0)
		iso_fail(efd, "cannot hide '%s' in the sandbox: %s", path, strerror(errno));
}

/*
 * Hides the host's path inside the sandbox.  Where a bind made it visible,
 * a directory gets a stand-in (standin_dir) and a file reads as empty.
 * Where it is not visible but its parent is the sandbox's own (the private
 * home), a stand-in is added only when standin is set, so that reading
 * ~/.ssh/id_rsa gives nothing rather than an error naming the file.  Never
 * hides the workspace, the runtime directory or a configured bind.
 */
static void
hide(int efd, const char *root, const char *path, int standin, const struct iso_opts *o)
{
	char dst[PATH_MAX], empty[PATH_MAX];
	struct stat hb, sb;
	if (!path || path[0] != '/' || strcmp(path, "/") == 0)
		return;
	if ((o->workspace && iso_covers(path, o->workspace)) || iso_covers(path, o->dir))
		return;
	/* A configured bind is the user's explicit choice. */
	for (int i = 0; i < o->n_ro; i++)
		if (iso_covers(path, o->ro[i]))
			return;
	for (int i = 0; i < o->n_rw; i++)
		if (iso_covers(path, o->rw[i]))
			return;
	if (lstat(path, &hb) < 0 || S_ISLNK(hb.st_mode))
		return; /* nothing on the host to hide */
	join(dst, sizeof(dst), root, path);
	if (lstat(dst, &sb) < 0) {
		if (errno != ENOENT || !standin)
			return;
		int fd = -1;
		if (S_ISDIR(hb.st_mode) ? mkdir(dst, 0755) < 0
		    : (fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444)) < 0)
			return; /* the parent is missing or read-only: not visible at all */
		if (fd >= 0)
			close(fd);
	} else if (S_ISLNK(sb.st_mode)) {
		return;
	}
	if (S_ISDIR(hb.st_mode)) {
		standin_dir(efd, path, dst);
		return;
	}
	join(empty, sizeof(empty), root, ISO_EMPTY);
	if (mount(empty, dst, NULL, MS_BIND, NULL) < 0 || make_readonly(dst, 0) < 0)
		iso_fail(efd, "cannot hide '%s' in the sandbox: %s", path, strerror(errno));
}

/* The host's credentials and secrets that a bound tree might contain. */
static const struct {
	const char *name;
	int standin; /* also stand in the private home: credentials, not tool state */
} home_secrets[] = {
	{ ".ssh", 1 }, { ".aws", 1 }, { ".gnupg", 1 }, { ".docker", 1 }, { ".kube", 1 },
	{ ".netrc", 1 }, { ".git-credentials", 1 }, { ".azure", 1 }, { ".pgpass", 1 },
	{ ".npmrc", 1 }, { ".pypirc", 1 }, { ".password-store", 1 }, { ".vault-token", 1 },
	{ ".config", 0 }, { ".cargo/credentials", 0 }, { ".cargo/credentials.toml", 0 },
	{ ".local/share/keyrings", 0 }, { ".local/state/hs", 0 }, { ".cache/hs", 0 },
	{ ".terraform.d", 0 }, { NULL, 0 },
};
static const char *const etc_secrets[] = {
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
	"/etc/sudoers.d", "/etc/security/opasswd", "/etc/ssl/private", "/etc/hs", NULL,
};
/* /proc entries: read-only or hidden, since a mapped root could write or read them. */
static const char *const proc_ro[] = {
	"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", NULL,
};
static const char *const proc_hidden[] = {
	"/proc/kcore", "/proc/keys", "/proc/key-users", "/proc/timer_list", "/proc/sched_debug",
	"/proc/acpi", "/proc/scsi", "/proc/latency_stats", "/proc/kallsyms", "/proc/kmsg", NULL,
};

static void
hide_secrets(int efd, const char *root, const struct iso_opts *o)
{
	char p[PATH_MAX];
	for (int i = 0; etc_secrets[i]; i++)
		hide(efd, root, etc_secrets[i], 0, o);
	/* The admin's configuration (gateway tokens) wherever it was installed. */
	if (strcmp(HS_SYSCONFDIR, "/etc/hs") != 0)
		hide(efd, root, HS_SYSCONFDIR, 0, o);
	/* Host private keys of sshd. */
	DIR *d = opendir("/etc/ssh");
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			size_t n = strlen(de->d_name);
			if (strncmp(de->d_name, "ssh_host_", 9) == 0 && n > 4 &&
			    strcmp(de->d_name + n - 4, "_key") == 0) {
				snprintf(p, sizeof(p), "/etc/ssh/%s", de->d_name);
				hide(efd, root, p, 0, o);
			}
		}
		closedir(d);
	}
	if (o->home && o->home[0] == '/' && strcmp(o->home, "/") != 0)
		for (int i = 0; home_secrets[i].name; i++) {
			snprintf(p, sizeof(p), "%s/%s", o->home, home_secrets[i].name);
			hide(efd, root, p, home_secrets[i].standin, o);
		}
	for (int i = 0; i < o->n_hide_extra; i++)
		hide(efd, root, o->hide_extra[i], 0, o);
}

static void
setup_dev(int efd, const char *root)
{
	static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty", NULL };
	static const char *const links[][2] = {
		{ "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" },
		{ "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
		{ "ptmx", "pts/ptmx" }, { NULL, NULL },
	};
	char dev[PATH_MAX], p[PATH_MAX];
	join(dev, sizeof(dev), root, "/dev");
	mount_tmpfs(efd, dev, "mode=0755,size=64k", MS_NOEXEC);
	for (int i = 0; nodes[i]; i++) {
		char src[64];
		snprintf(src, sizeof(src), "/dev/%s", nodes[i]);
		snprintf(p, sizeof(p), "%s/%s", dev, nodes[i]);
		if (access(src, F_OK) < 0)
			continue;
		if (touch_file(p) < 0 || mount(src, p, NULL, MS_BIND, NULL) < 0)
			iso_fail(efd, "cannot bind '%s' into the sandbox: %s", src, strerror(errno));
	}
	for (int i = 0; links[i][0]; i++) {
		snprintf(p, sizeof(p), "%s/%s", dev, links[i][0]);
		if (symlink(links[i][1], p) < 0)
			iso_fail(efd, "cannot create '/dev/%s': %s", links[i][0], strerror(errno));
	}
	snprintf(p, sizeof(p), "%s/pts", dev);
	mkdir(p, 0755);
	/* A private devpts for terminals; without one, commands just get no pty. */
	if (mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620") < 0)
		mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666");
	snprintf(p, sizeof(p), "%s/shm", dev);
	mount_tmpfs(efd, p, "mode=1777,size=64m", MS_NOEXEC);
}

static void
setup_proc(int efd, const char *root)
{
	char p[PATH_MAX];
	join(p, sizeof(p), root, "/proc");
	if (mkdirs(p, 0555) < 0)
		iso_fail(efd, "cannot create '/proc' in the sandbox: %s", strerror(errno));
	if (mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		iso_fail(efd, "cannot mount /proc for the new PID namespace (%s): the host's /proc "
		         "is partly covered (as in some containers), so the kernel forbids it; run hs "
		         "where /proc is fully visible", strerror(errno));
	for (int i = 0; proc_ro[i]; i++) {
		join(p, sizeof(p), root, proc_ro[i]);
		if (access(p, F_OK) < 0)
			continue;
		if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0 || make_readonly(p, 1) < 0)
			iso_fail(efd, "cannot make '%s' read-only: %s", proc_ro[i], strerror(errno));
	}
	for (int i = 0; proc_hidden[i]; i++) {
		struct stat sb;
		join(p, sizeof(p), root, proc_hidden[i]);
		if (lstat(p, &sb) < 0)
			continue;
		int r = S_ISDIR(sb.st_mode)
		        ? mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		                "mode=0555,size=4k")
		        : mount("/dev/null", p, NULL, MS_BIND, NULL);
		if (r < 0)
			iso_fail(efd, "cannot hide '%s': %s", proc_hidden[i], strerror(errno));
	}
}

/* Brings the new network namespace's loopback up. */
static void
loopback_up(int efd)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		iso_fail(efd, "cannot open a socket to configure loopback: %s", strerror(errno));
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		iso_fail(efd, "cannot read the loopback flags: %s", strerror(errno));
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		iso_fail(efd, "cannot bring loopback up: %s", strerror(errno));
	close(s);
}

/*
 * Builds the sandbox's root in a tmpfs on DIR/root and pivots into it.
 * The caller is PID 1 of the new namespaces, with full capabilities there.
 */
void
iso_build_root(int efd, const struct iso_opts *o, const char *rootdir)
{
	static const char *const sysdirs[] = {
		"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", NULL,
	};
	char p[PATH_MAX];

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		iso_fail(efd, "cannot make the mount namespace private: %s", strerror(errno));
	if (mount("tmpfs", rootdir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m") < 0) {
		int e = errno;
		char why[512];
		iso_explain_refusal(why, sizeof(why), e);
		iso_fail(efd, "cannot mount the sandbox's root: %s", why);
	}
	join(p, sizeof(p), rootdir, ISO_EMPTY);
	int efile = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (efile < 0)
		iso_fail(efd, "cannot create '%s': %s", p, strerror(errno));
	close(efile);
	for (int i = 0; sysdirs[i]; i++)
		bind_path(efd, rootdir, sysdirs[i], 0, 1, 1);
	join(p, sizeof(p), rootdir, "/tmp");
	mount_tmpfs(efd, p, "mode=1777", 0);
	join(p, sizeof(p), rootdir, "/var/tmp");
	mount_tmpfs(efd, p, "mode=1777", 0);
	join(p, sizeof(p), rootdir, "/run");
	mount_tmpfs(efd, p, "mode=0755,size=1m", 0);
	setup_dev(efd, rootdir);
	setup_proc(efd, rootdir);
	/* An empty private home, so that tools which write ~/.cache still work. */
	if (o->home && o->home[0] == '/' && strcmp(o->home, "/") != 0) {
		join(p, sizeof(p), rootdir, o->home);
		struct stat sb;
		if (lstat(p, &sb) < 0)
			mount_tmpfs(efd, p, "mode=0700", 0);
	}
	for (int i = 0; i < o->n_ro; i++)
		bind_path(efd, rootdir, o->ro[i], 0, 0, 0);
	/*
	 * Not recursive: the sandbox's own root is mounted on DIR/root, and a
	 * recursive bind of a tree holding it would carry copies of the
	 * sandbox's mounts without the masks below.
	 */
	if (o->workspace)
		bind_path(efd, rootdir, o->workspace, 1, 0, 0);
	/* Of DIR only the box, where the daemon keeps its socket and spool: DIR
	 * itself (the locks, the host's socket link) stays out of reach. */
	char box[PATH_MAX];
	snprintf(box, sizeof(box), "%s/%s", o->dir, ISO_BOX);
	bind_path(efd, rootdir, box, 1, 0, 0);
	hide_secrets(efd, rootdir, o);
	/* Configured read-write binds come last: they are the user's explicit choice. */
	for (int i = 0; i < o->n_rw; i++)
		bind_path(efd, rootdir, o->rw[i], 1, 0, 0);
	/* The runner binary, at a fixed place inside. */
	join(p, sizeof(p), rootdir, ISO_RUNNER_INSIDE);
	if (touch_file(p) < 0 || mount(o->runner, p, NULL, MS_BIND, NULL) < 0 || make_readonly(p, 0) < 0)
		iso_fail(efd, "cannot bind the runner '%s' into the sandbox: %s", o->runner,
		         strerror(errno));
	if (chdir(rootdir) < 0 || syscall(SYS_pivot_root, ".", ".") < 0)
		iso_fail(efd, "cannot pivot into the sandbox's root: %s", strerror(errno));
	if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		iso_fail(efd, "cannot detach the host's root: %s", strerror(errno));
	if (make_readonly("/", 0) < 0)
		iso_fail(efd, "cannot make the sandbox's root read-only: %s", strerror(errno));
	if (sethostname("hs-sandbox", 10) < 0)
		iso_fail(efd, "cannot set the sandbox's host name: %s", strerror(errno));
	if (!o->share_net)
		loopback_up(efd);
}
