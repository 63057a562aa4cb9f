/*
 * hs-isolate.c - the launcher of the local backend's isolated mode.
 *
 * `hs-isolate --start --dir DIR --runner PATH ...` makes sure a sandbox whose
 * hs-runner daemon listens on DIR/sock exists: it creates user, mount, PID,
 * IPC, UTS and network namespaces, builds a fresh root (system directories
 * read-only, the workspace and DIR read-write, private /tmp, /proc of the new
 * PID namespace, a minimal /dev), then starts the daemon inside with
 * no_new_privs, no capabilities, resource limits and a seccomp filter.  The
 * first process in the namespaces builds all that and then becomes the
 * daemon, so the daemon is PID 1 there: when it exits, the kernel kills
 * everything left in the sandbox.
 *
 * `hs-isolate --probe --dir DIR` does the same setup in a throw-away
 * directory under DIR without starting anything, to say exactly why
 * isolation is unavailable.
 *
 * It is a separate program because namespace setup needs a single-threaded
 * process, and hs serve is multi-threaded.  Errors are one line on standard
 * error, exit status 1; usage errors exit 2.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <unistd.h>

#include "isolate.h"

#define ISO_MAX_BINDS 32

struct iso_opts {
	const char *dir;       /* the session's runtime directory (host path) */
	const char *runner;    /* hs-runner on the host */
	const char *workspace; /* bound read-write; may be NULL */
	const char *idle;
	const char *home;
	const char *hide_extra[8];
	int n_hide_extra;
	const char *ro[ISO_MAX_BINDS], *rw[ISO_MAX_BINDS];
	int n_ro, n_rw;
	long long memory;
	long long nofile;
	long long nproc;
	int share_net;
	int probe;
	int lockfd; /* the starter's lock: PID 1 must not keep it */
};

/* The error channel: one line to the launcher, written once. */
static void
iso_fail(int fd, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	if (fd >= 0) {
		if (write(fd, msg, (size_t)n) < 0) {
			/* nobody left to tell */
		}
	} else {
		fprintf(stderr, "hs-isolate: %s\n", msg);
	}
	_exit(1);
}

static int
read_sysctl(const char *path, long *v)
{
	char buf[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	*v = strtol(buf, NULL, 10);
	return 0;
}

/*
 * Why the kernel refused a namespace step, with the fix.  The sysctls are
 * Debian's and Ubuntu's knobs for unprivileged user namespaces.
 */
static void
explain_refusal(char *out, size_t len, int err)
{
	long v;
	if (read_sysctl("/proc/sys/user/max_user_namespaces", &v) == 0 && v == 0)
		snprintf(out, len, "user namespaces are disabled (user.max_user_namespaces=0); "
		         "fix: sysctl -w user.max_user_namespaces=15000");
	else if (geteuid() != 0 &&
	         read_sysctl("/proc/sys/kernel/unprivileged_userns_clone", &v) == 0 && v == 0)
		snprintf(out, len, "unprivileged user namespaces are disabled "
		         "(kernel.unprivileged_userns_clone=0); fix: sysctl -w "
		         "kernel.unprivileged_userns_clone=1, or run hs as root");
	else if (geteuid() != 0 &&
	         read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &v) == 0 &&
	         v == 1)
		snprintf(out, len, "AppArmor restricts unprivileged user namespaces "
		         "(kernel.apparmor_restrict_unprivileged_userns=1); fix: give hs-isolate an "
		         "AppArmor profile with 'userns,' (see hs-local(7)) or set the sysctl to 0");
	else if (err == EPERM || err == EACCES)
		snprintf(out, len, "the kernel refused to create namespaces (%s); a container's "
		         "seccomp or AppArmor profile may forbid them: run hs outside that container "
		         "or allow unshare/clone with namespace flags", strerror(err));
	else if (err == EINVAL)
		snprintf(out, len, "the kernel lacks namespace support (%s); it needs CONFIG_USER_NS, "
		         "CONFIG_PID_NS, CONFIG_NET_NS, CONFIG_UTS_NS and CONFIG_IPC_NS", strerror(err));
	else
		snprintf(out, len, "%s", strerror(err));
}

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
static int
covers(const char *a, const char *b)
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
	if ((o->workspace && covers(path, o->workspace)) || covers(path, o->dir))
		return;
	/* A configured bind is the user's explicit choice. */
	for (int i = 0; i < o->n_ro; i++)
		if (covers(path, o->ro[i]))
			return;
	for (int i = 0; i < o->n_rw; i++)
		if (covers(path, o->rw[i]))
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
static void
build_root(int efd, const struct iso_opts *o, const char *rootdir)
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
		explain_refusal(why, sizeof(why), e);
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
	bind_path(efd, rootdir, o->dir, 1, 0, 0);
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

/* Drops every capability for good, then the limits, no_new_privs and seccomp. */
static void
harden(int efd, const struct iso_opts *o)
{
	struct rlimit rl;
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
	          SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
	          SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED, 0, 0, 0) < 0)
		iso_fail(efd, "cannot lock the securebits: %s", strerror(errno));
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			iso_fail(efd, "cannot drop capability %d: %s", c, strerror(errno));
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		iso_fail(efd, "cannot drop capabilities: %s", strerror(errno));
	rl.rlim_cur = rl.rlim_max = 0;
	setrlimit(RLIMIT_CORE, &rl);
	if (o->memory > 0) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)o->memory;
		if (setrlimit(RLIMIT_AS, &rl) < 0)
			iso_fail(efd, "cannot set the memory limit: %s", strerror(errno));
	}
	if (o->nofile > 0) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)o->nofile;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			iso_fail(efd, "cannot set the open-file limit: %s", strerror(errno));
	}
	if (o->nproc > 0) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)o->nproc;
		if (setrlimit(RLIMIT_NPROC, &rl) < 0)
			iso_fail(efd, "cannot set the process limit: %s", strerror(errno));
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		iso_fail(efd, "cannot set no_new_privs: %s", strerror(errno));
	char err[512];
	if (iso_seccomp_load(err, sizeof(err)) < 0)
		iso_fail(efd, "%s", err);
}

/* Does a daemon answer on path?  Returns its pid (as seen here), or 0. */
static pid_t
sock_peer(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	pid_t pid = 0;
	if (strlen(path) >= sizeof(sa.sun_path))
		return 0;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
		pid = cred.pid > 0 ? cred.pid : 1;
	close(fd);
	return pid;
}

/*
 * PID 1 of the sandbox: builds it, then becomes the runner daemon.  Setup
 * errors go to the launcher on efd.
 */
static void
init_main(const struct iso_opts *o, int efd, int syncfd)
{
	char rootdir[PATH_MAX], c;
	ssize_t n;

	if (o->lockfd >= 0)
		close(o->lockfd);
	/* The launcher's caller waits for end of file on its output: let go of it. */
	int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (dn < 0 || dup2(dn, 0) < 0 || dup2(dn, 1) < 0 || dup2(dn, 2) < 0)
		iso_fail(efd, "cannot open /dev/null: %s", strerror(errno));
	close(dn);

	while ((n = read(syncfd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		_exit(1);
	close(syncfd);
	setsid();
	prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
	snprintf(rootdir, sizeof(rootdir), "%s/root", o->dir);
	/* Held by PID 1 (the daemon) for its life, so `close` can wait for the sandbox. */
	char alive[PATH_MAX];
	snprintf(alive, sizeof(alive), "%s/%s", o->dir, ISO_ALIVE_FILE);
	int afd = open(alive, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (afd < 0)
		iso_fail(efd, "cannot open '%s': %s", alive, strerror(errno));
	/* A previous sandbox of the session may still be dying: wait for it, a little. */
	for (int i = 0; flock(afd, LOCK_EX | LOCK_NB) < 0; i++) {
		if (errno != EWOULDBLOCK || i == 500)
			iso_fail(efd, "a previous sandbox of '%s' still holds '%s' (%s); end the session "
			         "(hs session close) and try again", o->dir, ISO_ALIVE_FILE,
			         errno == EWOULDBLOCK ? "for 5 s" : strerror(errno));
		poll(NULL, 0, 10);
	}

	build_root(efd, o, rootdir);
	if (o->probe) {
		char err[512];
		if (iso_seccomp_load(err, sizeof(err)) < 0)
			iso_fail(efd, "%s", err);
		if (write(efd, "", 1) < 0)
			_exit(1);
		_exit(0);
	}

	/*
	 * The daemon itself becomes PID 1: when it exits, for idleness or
	 * --stop, the kernel kills whatever is left in the namespace.  It keeps
	 * the alive lock (inherited, not close-on-exec) for its whole life; the
	 * shims close it for the commands.  Its standard error is the launcher's
	 * error channel until it listens.
	 */
	if (fcntl(afd, F_SETFD, 0) < 0)
		iso_fail(efd, "cannot keep the alive lock: %s", strerror(errno));
	harden(efd, o);
	umask(077);
	if (dup2(efd, 2) < 0)
		iso_fail(efd, "cannot set up the runner's standard error: %s", strerror(errno));
	const char *argv[] = { "hs-runner", "--daemon", "--foreground", "--dir", o->dir,
	                       "--idle", o->idle, NULL };
	const char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	execve(ISO_RUNNER_INSIDE, (char *const *)argv, (char *const *)envp);
	iso_fail(efd, "cannot start the runner inside the sandbox: %s", strerror(errno));
}

static int
check_dir(const char *dir)
{
	struct stat sb;
	if (dir[0] != '/') {
		fprintf(stderr, "hs-isolate: '%s' is not an absolute path\n", dir);
		return -1;
	}
	if (lstat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() ||
	    (sb.st_mode & 07777) != 0700) {
		fprintf(stderr, "hs-isolate: '%s' is not a private directory of this user (want mode 0700)\n",
		        dir);
		return -1;
	}
	return 0;
}

/*
 * Creates the namespaces and runs init_main in them; returns once the
 * sandbox is ready (0) or failed (-1, message on stderr).
 */
static int
launch(const struct iso_opts *o)
{
	int efd[2], sync[2];
	char why[512], path[64], map[64], msg[1024];
	unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
	if (!o->share_net)
		flags |= CLONE_NEWNET;

	if (pipe2(efd, O_CLOEXEC) < 0 || pipe2(sync, O_CLOEXEC) < 0) {
		fprintf(stderr, "hs-isolate: cannot create a pipe: %s\n", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid < 0) {
		explain_refusal(why, sizeof(why), errno);
		fprintf(stderr, "hs-isolate: cannot create the sandbox's namespaces: %s\n", why);
		return -1;
	}
	if (pid == 0) {
		close(efd[0]);
		close(sync[1]);
		init_main(o, efd[1], sync[0]);
		_exit(1);
	}
	close(efd[1]);
	close(sync[0]);
	/* Map this user to itself, so files, the socket peer check and the
	 * runtime directory's owner all agree inside and out. */
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
	int ok = 1;
	int e = 0;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, map, strlen(map)) < 0)
		ok = 0, e = errno;
	if (fd >= 0)
		close(fd);
	if (ok) {
		snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "deny", 4) < 0)
			ok = 0, e = errno;
		if (fd >= 0)
			close(fd);
	}
	if (ok) {
		snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, map, strlen(map)) < 0)
			ok = 0, e = errno;
		if (fd >= 0)
			close(fd);
	}
	if (!ok) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		explain_refusal(why, sizeof(why), e);
		fprintf(stderr, "hs-isolate: cannot map this user into the sandbox: %s\n", why);
		return -1;
	}
	if (write(sync[1], "g", 1) != 1) {
		fprintf(stderr, "hs-isolate: the sandbox's init vanished\n");
		return -1;
	}
	close(sync[1]);
	/* Ready when the daemon answers on DIR/sock; failed when its init
	 * writes a reason (or a probe's init reports success with a NUL). */
	char sock[PATH_MAX];
	snprintf(sock, sizeof(sock), "%s/sock", o->dir);
	size_t got = 0;
	int waited = 0;
	for (;;) {
		struct pollfd pf = { .fd = efd[0], .events = POLLIN };
		int step = waited < 50 ? 1 : 5; /* the daemon usually listens within a few ms */
		int r = poll(&pf, 1, step);
		if (r < 0 && errno == EINTR)
			continue;
		if (r > 0) {
			ssize_t n = read(efd[0], msg + got, sizeof(msg) - 1 - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n > 0) {
				got += (size_t)n;
				if (msg[0] == 0 || got == sizeof(msg) - 1)
					break;
				continue;
			}
			break; /* end of file: init exited */
		}
		if (!o->probe && sock_peer(sock)) {
			close(efd[0]);
			return 0; /* the sandbox runs on, detached: its init was never ours to reap */
		}
		if ((waited += step) > 10000) {
			snprintf(msg, sizeof(msg), "the runner did not listen within 10 s");
			got = strlen(msg);
			break;
		}
	}
	close(efd[0]);
	msg[got] = 0;
	while (got && msg[got - 1] == '\n')
		msg[--got] = 0;
	if (o->probe && got >= 1 && msg[0] == 0) {
		waitpid(pid, NULL, 0);
		return 0;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (strncmp(msg, "hs-runner: ", 11) == 0)
		memmove(msg, msg + 11, strlen(msg + 11) + 1);
	fprintf(stderr, "hs-isolate: %s\n", got ? msg : "the sandbox's init exited during setup");
	return -1;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: hs-isolate --start --dir DIR --runner PATH [--workspace DIR] [--idle S]\n"
	           "                  [--home DIR] [--hide PATH]... [--ro PATH]... [--rw PATH]...\n"
	           "                  [--memory BYTES] [--nofile N] [--nproc N] [--share-net]\n"
	           "       hs-isolate --probe --dir DIR\n");
}

int
main(int argc, char **argv)
{
	struct iso_opts o = { .idle = "600", .lockfd = -1 };
	int start = 0;
	enum { O_START = 256, O_PROBE, O_DIR, O_RUNNER, O_WS, O_IDLE, O_HOME, O_HIDE, O_RO, O_RW,
	       O_MEM, O_NOFILE, O_NPROC, O_SHARENET, O_HELP };
	static const struct option lo[] = {
		{ "start", no_argument, NULL, O_START }, { "probe", no_argument, NULL, O_PROBE },
		{ "dir", required_argument, NULL, O_DIR }, { "runner", required_argument, NULL, O_RUNNER },
		{ "workspace", required_argument, NULL, O_WS }, { "idle", required_argument, NULL, O_IDLE },
		{ "home", required_argument, NULL, O_HOME }, { "hide", required_argument, NULL, O_HIDE },
		{ "ro", required_argument, NULL, O_RO }, { "rw", required_argument, NULL, O_RW },
		{ "memory", required_argument, NULL, O_MEM }, { "nofile", required_argument, NULL, O_NOFILE },
		{ "nproc", required_argument, NULL, O_NPROC },
		{ "share-net", no_argument, NULL, O_SHARENET }, { "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_START: start = 1; break;
		case O_PROBE: o.probe = 1; break;
		case O_DIR: o.dir = optarg; break;
		case O_RUNNER: o.runner = optarg; break;
		case O_WS: o.workspace = optarg; break;
		case O_IDLE: o.idle = optarg; break;
		case O_HOME: o.home = optarg; break;
		case O_HIDE:
			if (o.n_hide_extra < 8)
				o.hide_extra[o.n_hide_extra++] = optarg;
			break;
		case O_RO:
		case O_RW:
			if ((c == O_RO ? o.n_ro : o.n_rw) >= ISO_MAX_BINDS || optarg[0] != '/') {
				fprintf(stderr, "hs-isolate: bad or too many binds ('%s')\n", optarg);
				return 2;
			}
			if (c == O_RO)
				o.ro[o.n_ro++] = optarg;
			else
				o.rw[o.n_rw++] = optarg;
			break;
		case O_MEM: o.memory = atoll(optarg); break;
		case O_NOFILE: o.nofile = atoll(optarg); break;
		case O_NPROC: o.nproc = atoll(optarg); break;
		case O_SHARENET: o.share_net = 1; break;
		case O_HELP: usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (start == o.probe || !o.dir || (start && !o.runner) || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (check_dir(o.dir) < 0)
		return 1;
	if (strlen(o.dir) > 200 || (o.workspace && o.workspace[0] != '/')) {
		fprintf(stderr, "hs-isolate: bad directory arguments\n");
		return 2;
	}
	char err[512];
	if (iso_seccomp_check(err, sizeof(err)) < 0) {
		fprintf(stderr, "hs-isolate: %s\n", err);
		return 1;
	}

	if (o.probe) {
		/* A throw-away directory with the same shape as a session's. */
		char tmp[PATH_MAX], root[PATH_MAX + 8], alive[PATH_MAX + 16];
		snprintf(tmp, sizeof(tmp), "%s/probe.XXXXXX", o.dir);
		if (!mkdtemp(tmp)) {
			fprintf(stderr, "hs-isolate: cannot create a directory in '%s': %s\n", o.dir,
			        strerror(errno));
			return 1;
		}
		snprintf(root, sizeof(root), "%s/root", tmp);
		snprintf(alive, sizeof(alive), "%s/%s", tmp, ISO_ALIVE_FILE);
		o.dir = tmp;
		o.runner = "/dev/null";
		int rc = mkdir(root, 0700) < 0 ? -1 : launch(&o);
		unlink(alive);
		rmdir(root);
		rmdir(tmp);
		if (rc == 0)
			printf("ok\n");
		return rc == 0 ? 0 : 1;
	}

	/* One starter at a time per session: check, start, wait for the socket. */
	char lock[PATH_MAX], sock[PATH_MAX], root[PATH_MAX];
	snprintf(lock, sizeof(lock), "%s/%s", o.dir, ISO_START_LOCK);
	snprintf(sock, sizeof(sock), "%s/sock", o.dir);
	snprintf(root, sizeof(root), "%s/root", o.dir);
	int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX) < 0) {
		fprintf(stderr, "hs-isolate: cannot lock '%s': %s\n", lock, strerror(errno));
		return 1;
	}
	if (sock_peer(sock)) {
		/* A daemon answers: it must be a sandbox's, whose init holds the alive lock. */
		char alive[PATH_MAX];
		snprintf(alive, sizeof(alive), "%s/%s", o.dir, ISO_ALIVE_FILE);
		int afd = open(alive, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (afd >= 0 && flock(afd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK)
			return 0;
		fprintf(stderr, "hs-isolate: the runner in '%s' runs unisolated (the session was started "
		        "without isolation); end the session or use a new one\n", o.dir);
		return 1;
	}
	o.lockfd = lfd;
	/* DIR is writable from inside a previous sandbox: DIR/root must be a plain directory. */
	struct stat sb;
	if ((mkdir(root, 0700) < 0 && errno != EEXIST) || lstat(root, &sb) < 0 ||
	    !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid()) {
		fprintf(stderr, "hs-isolate: '%s' is not a directory of this user; end the session "
		        "(hs session close) to start afresh\n", root);
		return 1;
	}
	return launch(&o) == 0 ? 0 : 1;
}
