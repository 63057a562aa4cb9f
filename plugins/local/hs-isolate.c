/* SPDX-License-Identifier: MIT */
/*
 * hs-isolate.c - the launcher of the local backend's isolated mode.
 *
 * `hs-isolate --start --dir DIR --runner PATH ...` makes sure a sandbox whose
 * hs-runner daemon listens on DIR/sock exists: it creates user, mount, PID,
 * IPC, UTS and network namespaces, builds a fresh root (system directories
 * read-only, the workspace and DIR/box read-write, private /tmp, /proc of the
 * new PID namespace, a minimal /dev), then starts the daemon inside with
 * no_new_privs, no capabilities, resource limits and a seccomp filter.  The
 * first process in the namespaces builds all that and then becomes the
 * daemon, so the daemon is PID 1 there: when it exits, the kernel kills
 * everything left in the sandbox.
 *
 * DIR itself is the host's: the sandbox sees DIR/box, the daemon's own
 * directory, and nothing else of it, so the start lock, the alive lock, the root's mount
 * point and the socket the host connects to (DIR/sock, a hard link to the
 * daemon's socket made once its peer is verified) are out of the sandbox's
 * reach.  Nothing the sandbox can write is followed, opened or trusted here.
 *
 * `hs-isolate --probe --dir DIR` does the same setup in a throw-away
 * directory under DIR without starting anything, to say exactly why
 * isolation is unavailable.
 *
 * It is a separate program because namespace setup needs a single-threaded
 * process, and hs serve is multi-threaded.  Errors are one line on standard
 * error, exit status 1; usage errors exit 2.
 *
 * This file holds the namespaces and the user's mapping (launch), PID 1
 * (init_main), the hardening (capabilities, limits, no_new_privs, loading
 * the filter) and main; the sandbox's root is built in isolate-root.c, the
 * seccomp filter is in isolate-seccomp.c, and the options and prototypes
 * shared by these files are in iso.h.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <unistd.h>

#include "isolate.h"
#include "iso.h"

/* The error channel: one line to the launcher, written once. */
void
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

/* Reads a small file (a /proc entry) into buf, NUL-terminated; returns
 * the byte count, or -1. */
static ssize_t
read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

static int
read_sysctl(const char *path, long *v)
{
	char buf[32];
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return -1;
	*v = strtol(buf, NULL, 10);
	return 0;
}

/*
 * Why the kernel refused a namespace step, with the fix.  The sysctls are
 * Debian's and Ubuntu's knobs for unprivileged user namespaces.
 */
void
iso_explain_refusal(char *out, size_t len, int err)
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

/*
 * Sets resource res to v (0: leave it), never above the inherited hard
 * limit, which a process without privileges on the host cannot raise.
 */
static void
set_limit(int efd, int res, long long v, const char *what)
{
	struct rlimit rl;
	if (v <= 0)
		return;
	if (getrlimit(res, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && (rlim_t)v > rl.rlim_max)
		v = (long long)rl.rlim_max;
	rl.rlim_cur = rl.rlim_max = (rlim_t)v;
	if (setrlimit(res, &rl) < 0)
		iso_fail(efd, "cannot set the %s limit: %s", what, strerror(errno));
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
	set_limit(efd, RLIMIT_AS, o->memory, "memory");
	set_limit(efd, RLIMIT_DATA, o->data, "data");
	set_limit(efd, RLIMIT_NOFILE, o->nofile, "open-file");
	set_limit(efd, RLIMIT_NPROC, o->nproc, "process");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		iso_fail(efd, "cannot set no_new_privs: %s", strerror(errno));
	char err[512];
	if (iso_seccomp_load(err, sizeof(err)) < 0)
		iso_fail(efd, "%s", err);
}

/*
 * Closes every descriptor above 2 but keep (-1: none).  A descriptor the
 * caller of hs left open (`exec 9</home/u`) would otherwise reach the
 * sandbox's PID 1, and /proc/self/fd/9 would lead out of its root.
 * Returns 0, or -1 when a descriptor cannot be closed.
 */
static int
close_fds_except(int keep)
{
#ifdef SYS_close_range
	long r = keep > 3 ? syscall(SYS_close_range, 3u, (unsigned)keep - 1, 0u) : 0;
	if (r == 0)
		r = syscall(SYS_close_range, keep >= 3 ? (unsigned)keep + 1 : 3u, ~0u, 0u);
	if (r == 0)
		return 0;
	if (errno != ENOSYS)
		return -1;
#endif
	/* Kernels before 5.9: every descriptor /proc lists. */
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	struct dirent *de;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);
		if (fd > 2 && fd != keep && fd != dirfd(d))
			close(fd);
	}
	closedir(d);
	return 0;
}

/*
 * Opens a lock file of DIR: never through a symlink, never blocking (a FIFO
 * there would hang us), and only a regular file of this user (else -1 with
 * errno EINVAL).
 */
static int
open_lock_file(const char *path)
{
	struct stat sb;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid()) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

static const char *
lock_error(void)
{
	return errno == EINVAL ? "not a regular file of this user" : strerror(errno);
}

/*
 * Was pid started as `hs-runner --daemon ... --dir box`?  Its command line
 * says so; nothing in a sandbox can rewrite it (PR_SET_MM needs a
 * capability on the host).
 */
static int
runs_with_dir(pid_t pid, const char *box)
{
	char path[64], buf[PATH_MAX + 256];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	ssize_t n = read_small(path, buf, sizeof(buf));
	int daemon = 0;
	for (char *a = buf; a < buf + n; a += strlen(a) + 1) {
		daemon |= strcmp(a, "--daemon") == 0;
		if (strcmp(a, "--dir") == 0 && a + strlen(a) + 1 < buf + n)
			return daemon && strcmp(a + strlen(a) + 1, box) == 0;
	}
	return 0;
}

/*
 * Does a daemon answer on path (and, when box is set, is it the daemon of
 * that box, checked while still connected so that its pid cannot be
 * reused)?  Returns its pid (as seen here), or 0.
 */
static pid_t
sock_peer(const char *path, const char *box)
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
	if (pid && box && !runs_with_dir(pid, box))
		pid = 0;
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
	int afd = open_lock_file(alive);
	if (afd < 0)
		iso_fail(efd, "cannot open '%s': %s", alive, lock_error());
	/* A previous sandbox of the session may still be dying: wait for it, a little. */
	for (int i = 0; flock(afd, LOCK_EX | LOCK_NB) < 0; i++) {
		if (errno != EWOULDBLOCK || i == 500)
			iso_fail(efd, "a previous sandbox of '%s' still holds '%s' (%s); end the session "
			         "(hs session close) and try again", o->dir, ISO_ALIVE_FILE,
			         errno == EWOULDBLOCK ? "for 5 s" : strerror(errno));
		poll(NULL, 0, 10);
	}

	iso_build_root(efd, o, rootdir);
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
	if (close_fds_except(afd) < 0)
		iso_fail(2, "cannot close inherited descriptors: %s", strerror(errno));
	char box[PATH_MAX];
	snprintf(box, sizeof(box), "%s/%s", o->dir, ISO_BOX);
	const char *argv[] = { "hs-runner", "--daemon", "--foreground", "--dir", box,
	                       "--idle", o->idle, NULL };
	const char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	execve(ISO_RUNNER_INSIDE, (char *const *)argv, (char *const *)envp);
	iso_fail(2, "cannot start the runner inside the sandbox: %s", strerror(errno));
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
 * Makes path a private directory of this user (mode 0700), creating it when
 * missing.  DIR is the host's alone, so what lstat saw is what is used.
 * Returns 0, or -1 with a message on stderr.
 */
static int
private_subdir(const char *path)
{
	struct stat sb;
	int fd = -1;
	if ((mkdir(path, 0700) < 0 && errno != EEXIST) ||
	    (fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fstat(fd, &sb) < 0 || sb.st_uid != geteuid() || fchmod(fd, 0700) < 0) {
		fprintf(stderr, "hs-isolate: '%s' is not a directory of this user; end the session "
		        "(hs session close) to start afresh\n", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * Once the daemon listens on DIR/box/sock, makes DIR/sock, where the host
 * connects, a hard link to that very socket.  The box is the sandbox's to
 * write, so its entry is opened without following anything, must be a
 * socket of this user, and must be answered by the sandbox's own PID 1 (pid
 * as seen here): a symlink or another daemon's socket planted in the box is
 * never linked.  Returns 1 when linked, 0 when not (yet), -1 with msg set.
 */
static int
adopt_sock(const struct iso_opts *o, pid_t pid, char *msg, size_t len)
{
	char path[PATH_MAX], proc[64], tmp[PATH_MAX];
	struct stat sb;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s/sock", o->dir, ISO_BOX);
	int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (fstat(fd, &sb) == 0 && S_ISSOCK(sb.st_mode) && sb.st_uid == geteuid() &&
	    sock_peer(proc, NULL) == pid) {
		snprintf(tmp, sizeof(tmp), "%s/sock.new", o->dir);
		snprintf(path, sizeof(path), "%s/sock", o->dir);
		unlink(tmp);
		rc = 1;
		if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) < 0 || rename(tmp, path) < 0) {
			snprintf(msg, len, "cannot link the runner's socket into '%s': %s", o->dir,
			         strerror(errno));
			unlink(tmp);
			rc = -1;
		}
	}
	close(fd);
	return rc;
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
		iso_explain_refusal(why, sizeof(why), errno);
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
		iso_explain_refusal(why, sizeof(why), e);
		fprintf(stderr, "hs-isolate: cannot map this user into the sandbox: %s\n", why);
		return -1;
	}
	if (write(sync[1], "g", 1) != 1) {
		fprintf(stderr, "hs-isolate: the sandbox's init vanished\n");
		return -1;
	}
	close(sync[1]);
	/* Ready when the daemon answers on DIR/box/sock and DIR/sock is linked
	 * to it; failed when its init writes a reason (or a probe's init reports
	 * success with a NUL). */
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
		int a = o->probe ? 0 : adopt_sock(o, pid, msg, sizeof(msg));
		if (a > 0) {
			close(efd[0]);
			return 0; /* the sandbox runs on, detached: its init was never ours to reap */
		}
		if (a < 0) {
			got = strlen(msg);
			break;
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

/*
 * The workspace and the configured binds must not hold the directory of
 * the sessions' runtime directories: the sandbox could then reach DIR
 * (host-only) and the runner sockets of other, unisolated sessions.
 */
static int
binds_hold_rundir(const struct iso_opts *o)
{
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", o->dir);
	char *slash = strrchr(parent, '/');
	if (slash == parent)
		parent[1] = 0;
	else if (slash)
		*slash = 0;
	for (int i = -1; i < o->n_ro + o->n_rw; i++) {
		const char *b = i < 0 ? o->workspace : i < o->n_ro ? o->ro[i] : o->rw[i - o->n_ro];
		if (b && iso_covers(b, parent)) {
			fprintf(stderr, "hs-isolate: '%s' holds hs's runtime directory '%s' (the runner "
			        "sockets of other sessions); bind a directory that does not, or set "
			        "XDG_RUNTIME_DIR elsewhere\n", b, parent);
			return -1;
		}
	}
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: hs-isolate --start --dir DIR --runner PATH [--workspace DIR] [--idle S]\n"
	           "                  [--home DIR] [--hide PATH]... [--ro PATH]... [--rw PATH]...\n"
	           "                  [--memory BYTES] [--data BYTES] [--nofile N] [--nproc N]\n"
	           "                  [--share-net]\n"
	           "       hs-isolate --probe --dir DIR\n");
}

int
main(int argc, char **argv)
{
	struct iso_opts o = { .idle = "600", .lockfd = -1 };
	int start = 0;
	enum { O_START = 256, O_PROBE, O_DIR, O_RUNNER, O_WS, O_IDLE, O_HOME, O_HIDE, O_RO, O_RW,
	       O_MEM, O_DATA, O_NOFILE, O_NPROC, O_SHARENET, O_HELP };
	static const struct option lo[] = {
		{ "start", no_argument, NULL, O_START }, { "probe", no_argument, NULL, O_PROBE },
		{ "dir", required_argument, NULL, O_DIR }, { "runner", required_argument, NULL, O_RUNNER },
		{ "workspace", required_argument, NULL, O_WS }, { "idle", required_argument, NULL, O_IDLE },
		{ "home", required_argument, NULL, O_HOME }, { "hide", required_argument, NULL, O_HIDE },
		{ "ro", required_argument, NULL, O_RO }, { "rw", required_argument, NULL, O_RW },
		{ "memory", required_argument, NULL, O_MEM }, { "nofile", required_argument, NULL, O_NOFILE },
		{ "data", required_argument, NULL, O_DATA }, { "nproc", required_argument, NULL, O_NPROC },
		{ "share-net", no_argument, NULL, O_SHARENET }, { "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	/* Before anything else: nothing the caller left open reaches the sandbox. */
	if (close_fds_except(-1) < 0) {
		fprintf(stderr, "hs-isolate: cannot close inherited descriptors: %s\n", strerror(errno));
		return 1;
	}
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
		case O_DATA: o.data = atoll(optarg); break;
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
	if (binds_hold_rundir(&o) < 0)
		return 1;
	char err[512];
	if (iso_seccomp_check(err, sizeof(err)) < 0) {
		fprintf(stderr, "hs-isolate: %s\n", err);
		return 1;
	}

	if (o.probe) {
		/* A throw-away directory with the same shape as a session's. */
		char tmp[PATH_MAX], root[PATH_MAX + 8], box[PATH_MAX + 8], alive[PATH_MAX + 16];
		snprintf(tmp, sizeof(tmp), "%s/probe.XXXXXX", o.dir);
		if (!mkdtemp(tmp)) {
			fprintf(stderr, "hs-isolate: cannot create a directory in '%s': %s\n", o.dir,
			        strerror(errno));
			return 1;
		}
		snprintf(root, sizeof(root), "%s/root", tmp);
		snprintf(box, sizeof(box), "%s/%s", tmp, ISO_BOX);
		snprintf(alive, sizeof(alive), "%s/%s", tmp, ISO_ALIVE_FILE);
		o.dir = tmp;
		o.runner = "/dev/null";
		int rc = mkdir(root, 0700) < 0 || mkdir(box, 0700) < 0 ? -1 : launch(&o);
		unlink(alive);
		rmdir(box);
		rmdir(root);
		rmdir(tmp);
		if (rc == 0)
			printf("ok\n");
		return rc == 0 ? 0 : 1;
	}

	/* One starter at a time per session: check, start, wait for the socket. */
	char lock[PATH_MAX], sock[PATH_MAX], root[PATH_MAX], box[PATH_MAX];
	snprintf(lock, sizeof(lock), "%s/%s", o.dir, ISO_START_LOCK);
	snprintf(sock, sizeof(sock), "%s/sock", o.dir);
	snprintf(root, sizeof(root), "%s/root", o.dir);
	snprintf(box, sizeof(box), "%s/%s", o.dir, ISO_BOX);
	int lfd = open_lock_file(lock);
	if (lfd < 0 || flock(lfd, LOCK_EX) < 0) {
		fprintf(stderr, "hs-isolate: cannot lock '%s': %s\n", lock, lock_error());
		return 1;
	}
	if (sock_peer(sock, NULL)) {
		/* A daemon answers: it must be a sandbox's, whose init holds the alive lock. */
		char alive[PATH_MAX];
		snprintf(alive, sizeof(alive), "%s/%s", o.dir, ISO_ALIVE_FILE);
		int afd = open_lock_file(alive);
		if (afd < 0 || flock(afd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK) {
			fprintf(stderr, "hs-isolate: the runner in '%s' runs unisolated (the session was "
			        "started without isolation); end the session or use a new one\n", o.dir);
			return 1;
		}
		/* And it must be this session's: its PID 1 serving DIR/box, not one an
		 * older hs started with DIR itself inside, nor another sandbox's. */
		if (!sock_peer(sock, box)) {
			fprintf(stderr, "hs-isolate: the runner answering on '%s' is not this session's "
			        "sandbox (an older hs started it, or the socket was replaced); end the "
			        "session (hs session close) and start it again\n", sock);
			return 1;
		}
		return 0;
	}
	o.lockfd = lfd;
	/* The socket of a sandbox that is gone; launch links the new one. */
	unlink(sock);
	if (private_subdir(root) < 0 || private_subdir(box) < 0)
		return 1;
	return launch(&o) == 0 ? 0 : 1;
}
