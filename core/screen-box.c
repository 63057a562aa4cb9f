/* SPDX-License-Identifier: MIT */
/*
 * screen-box.c - the screen render in a child that can only compute.  The
 * bytes rendered were written by a sandboxed command, and libvterm 0.1.4
 * had five memory-safety or hang defects found by fuzzing (worked around
 * in screen.c); more may exist, and hs serve and hs mcp hold every
 * session of an agent.  So hs does not run libvterm itself: it spawns
 * `hs __screen` (posix_spawn, safe in a threaded process; the child execs
 * at once), which keeps only a pipe in and a pipe out, takes resource
 * limits, no_new_privs and a seccomp filter of read(0), write(1), exit and
 * memory calls, then renders and writes the screen back in the wire form
 * of hs_screen_shot_encode.  hs parses that answer as hostile input, and a
 * child that is killed, fails or outlives its deadline is an error.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_SECCOMP
#include <seccomp.h>
#endif

#include "core/capture.h"
#include "core/paths.h"
#include "core/screen.h"

/* The wall-clock time a render may take before its child is killed. */
#define RENDER_DEADLINE_MS 5000
/* The CPU seconds it may use (SIGXCPU, then SIGKILL a second later). */
#define RENDER_CPU_S 5
/* Its address space beyond the stream's bytes: a 1000x1000 screen and its
 * alternate take about 70 MiB in libvterm, the rows read back 24 MiB at most. */
#define RENDER_AS_BASE (512ul << 20)

/* The child's exit status when it cannot load its limits or filter. */
#define EXIT_UNCONFINED 4

/* The test suite's faults for the child; hs run from its build tree only. */
#define FAULT_ENV "HS_SCREEN_FAULT_FOR_TESTS"

static long
ms_since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

/* The child's exit as a reason, or NULL for a clean exit. */
static const char *
exit_reason(int status, char *buf, size_t len)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return NULL;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		snprintf(buf, len, "the screen render was killed for a forbidden system call (signal %d)", SIGSYS);
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "the screen render was killed by signal %d (%s)", WTERMSIG(status),
		         strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_UNCONFINED)
		snprintf(buf, len, "the screen render cannot confine itself (no_new_privs or seccomp refused, or hs "
		                   "built without libseccomp): rebuild hs with libseccomp-dev on a kernel with seccomp");
	else
		snprintf(buf, len, "the screen render failed (exit status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return buf;
}

/* Spawns `hs __screen ...` with in and out as its stdin and stdout. */
static int
spawn_child(pid_t *pid, int in, int out, char **argv, char *err, size_t errlen)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	char *envp[] = { NULL };
	int rc;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_adddup2(&fa, in, 0);
	posix_spawn_file_actions_adddup2(&fa, out, 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	/* No environment: hs's own may hold credentials. */
	rc = posix_spawn(pid, "/proc/self/exe", &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc)
		snprintf(err, errlen, "cannot start the screen render: %s", strerror(rc));
	return rc ? -1 : 0;
}

/*
 * Sends in[0..inlen) to the child on fd w while reading its answer from fd
 * r into a buffer of at most max bytes, until r ends or the deadline from
 * t0.  Returns 0, 1 for the deadline, 2 for an answer over max, -1 on an
 * I/O error.
 */
static int
exchange(int w, int r, const char *in, size_t inlen, char **ans, size_t *anslen, size_t max,
         const struct timespec *t0)
{
	size_t sent = 0, got = 0, cap = 0;
	char *buf = NULL;
	int rc = 0;

	if (inlen == 0) {
		close(w);
		w = -1;
	}
	for (;;) {
		long left = RENDER_DEADLINE_MS - ms_since(t0);
		if (left <= 0) {
			rc = 1;
			break;
		}
		struct pollfd pf[2] = { { r, POLLIN, 0 }, { w, POLLOUT, 0 } };
		int n = poll(pf, w >= 0 ? 2 : 1, (int)left);
		if (n < 0 && errno != EINTR) {
			rc = -1;
			break;
		}
		if (n <= 0)
			continue;
		if (w >= 0 && pf[1].revents) {
			ssize_t k = write(w, in + sent, inlen - sent);
			if (k < 0 && errno != EAGAIN && errno != EINTR) {
				/* The child stopped reading: its exit status tells why. */
				close(w);
				w = -1;
			} else if (k > 0 && (sent += (size_t)k) == inlen) {
				close(w);
				w = -1;
			}
		}
		if (pf[0].revents) {
			if (got == cap) {
				size_t ncap = cap ? cap * 2 : 65536;
				if (ncap > max + 1)
					ncap = max + 1;
				char *nb = got < ncap ? realloc(buf, ncap) : NULL;
				if (!nb) {
					rc = got > max ? 2 : -1;
					break;
				}
				buf = nb;
				cap = ncap;
			}
			ssize_t k = read(r, buf + got, cap - got);
			if (k < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (k <= 0)
				break;
			got += (size_t)k;
		}
	}
	if (w >= 0)
		close(w);
	*ans = buf;
	*anslen = got;
	return rc;
}

/* Reaps pid by the deadline from t0, else kills it.  Returns its status. */
static int
reap(pid_t pid, const struct timespec *t0, int kill_now)
{
	int status = 0;
	if (!kill_now)
		while (ms_since(t0) < RENDER_DEADLINE_MS) {
			pid_t w = waitpid(pid, &status, WNOHANG);
			if (w == pid || (w < 0 && errno != EINTR))
				return status;
			nanosleep(&(struct timespec){ .tv_nsec = 200000 }, NULL);
		}
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

int
hs_screen_render(const struct hs_capture *c, int rows, int cols, int newline, struct hs_screen_shot *shot,
                 char *err, size_t errlen)
{
	char a[6][24], *ans = NULL;
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, rc = -1;
	size_t len = 0, anslen = 0;
	pid_t pid;
	struct timespec t0;

	memset(shot, 0, sizeof(*shot));
	char *all = hs_capture_join(c, &len);
	if (!all) {
		snprintf(err, errlen, "out of memory for the kept output");
		return -1;
	}
	snprintf(a[0], sizeof(a[0]), "%d", rows);
	snprintf(a[1], sizeof(a[1]), "%d", cols);
	snprintf(a[2], sizeof(a[2]), "%d", newline != 0);
	snprintf(a[3], sizeof(a[3]), "%d", c->dropped != 0);
	snprintf(a[4], sizeof(a[4]), "%zu", c->tail_len);
	snprintf(a[5], sizeof(a[5]), "%zu", len);
	const char *fault = getenv(FAULT_ENV);
	if (!fault || !*fault || !hs_paths_from_build_tree())
		fault = NULL;
	char *argv[] = { "hs", "__screen", a[0], a[1], a[2], a[3], a[4], a[5], (char *)fault, NULL };
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "cannot start the screen render: %s", strerror(errno));
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (spawn_child(&pid, in[0], out[1], argv, err, errlen) < 0)
		goto out;
	close(in[0]);
	close(out[1]);
	in[0] = out[1] = -1;
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	int x = exchange(in[1], out[0], all, len, &ans, &anslen, hs_screen_shot_max(rows, cols), &t0);
	in[1] = -1;
	int status = reap(pid, &t0, x != 0);
	if (x == 1 || (x == 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && ms_since(&t0) >= RENDER_DEADLINE_MS))
		snprintf(err, errlen, "the screen render took over %d s and was killed", RENDER_DEADLINE_MS / 1000);
	else if (x == 2)
		snprintf(err, errlen, "the screen render answered more than a %dx%d screen holds", rows, cols);
	else if (x < 0)
		snprintf(err, errlen, "cannot read the screen render's answer: %s", strerror(errno));
	else if (!exit_reason(status, err, errlen))
		rc = hs_screen_shot_parse(ans, anslen, rows, cols, shot, err, errlen);
out:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	free(ans);
	free(all);
	return rc;
}

/* --- the child: `hs __screen` --- */

/* A decimal argument in [0, max], or -1. */
static long long
arg_num(const char *s, long long max)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	return errno || end == s || *end || v < 0 || v > max ? -1 : v;
}

static int
set_limit(int res, rlim_t soft, rlim_t hard)
{
	struct rlimit rl = { soft, hard };
	return setrlimit(res, &rl);
}

#ifdef HAVE_SECCOMP
/*
 * Everything else kills the process.  read and write only on the two pipes;
 * memory never executable.  This is all glibc's malloc and libvterm call
 * once the stream is being rendered (strace, docs/decisions.md); no mprotect,
 * so nothing mapped ever becomes executable.
 */
static int
load_filter(void)
{
	uint32_t kill = seccomp_api_get() >= 3 ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_KILL;
	scmp_filter_ctx ctx = seccomp_init(kill);
	int rc = -1;
	if (!ctx)
		return -1;
	if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(read), 1, SCMP_A0(SCMP_CMP_EQ, 0)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(write), 1, SCMP_A0(SCMP_CMP_EQ, 1)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(exit_group), 0) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(exit), 0) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(brk), 0) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(munmap), 0) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mremap), 0) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(madvise), 0) < 0)
		goto out;
#ifdef __SANITIZE_ADDRESS__
	/* AddressSanitizer looks up the signal stack before any noreturn call
	 * (_exit included); only the sanitizer build allows it. */
	if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(sigaltstack), 0) < 0)
		goto out;
#endif
	rc = seccomp_load(ctx) < 0 ? -1 : 0;
out:
	seccomp_release(ctx);
	return rc;
}
#else
static int
load_filter(void)
{
	return -1; /* No filter, no render: hs fails closed. */
}
#endif

/* Writes all of buf to stdout.  Returns 0 or -1. */
static int
write_all(const char *buf, size_t len)
{
	while (len) {
		ssize_t k = write(1, buf, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		buf += k;
		len -= (size_t)k;
	}
	return 0;
}

int
hs_screen_child_main(int argc, char **argv)
{
	long long n[6];
	static const long long max[6] = { HS_SCREEN_SIZE_MAX, HS_SCREEN_SIZE_MAX, 1, 1, 1ll << 40, 1ll << 40 };
	if (argc < 8)
		_exit(2);
	for (int i = 0; i < 6; i++)
		if ((n[i] = arg_num(argv[2 + i], max[i])) < 0)
			_exit(2);
	const char *fault = argc > 8 && hs_paths_from_build_tree() ? argv[8] : "";
	size_t inlen = (size_t)n[5];

	/* Nothing but the two pipes; no core file, no way to gain privileges.
	 * Its name in ps and /proc (it was exec'd as /proc/self/exe). */
	prctl(PR_SET_NAME, "hs-screen", 0, 0, 0);
	close_range(2, ~0u, 0);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
#ifndef __SANITIZE_ADDRESS__
	/* AddressSanitizer reserves terabytes of address space at start. */
	if (set_limit(RLIMIT_AS, RENDER_AS_BASE + inlen, RENDER_AS_BASE + inlen) < 0)
		_exit(EXIT_UNCONFINED);
#endif
	if (set_limit(RLIMIT_CPU, RENDER_CPU_S, RENDER_CPU_S + 1) < 0 || set_limit(RLIMIT_NOFILE, 2, 2) < 0 ||
	    set_limit(RLIMIT_CORE, 0, 0) < 0 || set_limit(RLIMIT_FSIZE, 0, 0) < 0 ||
	    set_limit(RLIMIT_NPROC, 0, 0) < 0)
		_exit(EXIT_UNCONFINED);
	if (!strcmp(fault, "hang"))
		for (;;)
			pause();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || load_filter() < 0)
		_exit(EXIT_UNCONFINED);
	if (!strcmp(fault, "open"))
		_exit(open("/etc/passwd", O_RDONLY) < 0 ? 5 : 0);

	/* One byte more than announced is an error, not a longer stream. */
	char *in = malloc(inlen + 1);
	size_t got = 0;
	if (!in)
		_exit(6);
	for (;;) {
		ssize_t k = read(0, in + got, inlen + 1 - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 || (got += (size_t)(k > 0 ? k : 0)) > inlen)
			_exit(7);
		if (k == 0)
			break;
	}
	if (got != inlen)
		_exit(7);

	struct hs_screen s;
	struct hs_screen_shot shot;
	size_t len;
	char *wire;
	if (hs_screen_init(&s, (int)n[0], (int)n[1]) < 0)
		_exit(8);
	hs_screen_stream(&s, in, inlen, (int)n[2], (int)n[3], (size_t)n[4]);
	if (hs_screen_snap(&s, &shot) < 0)
		_exit(9);
	if (!strcmp(fault, "badrow") && shot.rows > 0) {
		free(shot.row[0]);
		shot.row[0] = strdup("\xff\xfe");
		shot.len[0] = shot.row[0] ? 2 : 0;
	}
	if (!(wire = hs_screen_shot_encode(&shot, &len)))
		_exit(9);
	if (!strcmp(fault, "garbage"))
		memset(wire, 'x', len < 64 ? len : 64);
	while (!strcmp(fault, "flood") && write_all(wire, len) == 0)
		;
	/* _exit: nothing else runs (no atexit handler, no leak check) under the filter. */
	_exit(write_all(wire, len) < 0 ? 10 : 0);
}
