/* SPDX-License-Identifier: MIT */
/* End-to-end tests of hs-runner through the client library: a daemon per
 * test, streams through `hs-runner --attach`. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

static const char *const env_path[] = { "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", NULL };

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits up to ms for no process to carry marker; returns the count left. */
static int wait_gone(const char *marker, int ms)
{
	int n;

	for (int i = 0; (n = hsr_test_count_procs(marker)) > 0 && i < ms / 20; i++)
		usleep(20000);
	return n;
}

static struct hsr_event next_event(struct hsr_client *c, int type)
{
	struct hsr_event ev;
	char err[256];

	do
		assert_int_equal(hsr_client_next(c, &ev, 10000, err, sizeof(err)), 1);
	while (type && ev.type != type);
	return ev;
}

static void test_hello(void **state)
{
	struct hsr_test_fixture *f = *state;
	struct hsr_msg m = { .type = HSR_F_HELLO, .vmin = 7, .vmax = 9 };
	struct hsr_msg key = { .type = HSR_F_KEY, .data = hsr_test_key, .len = HSR_KEY_LEN };
	struct hsr_buf b;
	char *argv[] = { (char *)hsr_test_runner(), "--attach", "--dir", f->dir, NULL };
	char buf[512];
	pid_t pid;
	ssize_t n;
	int fd;

	assert_int_equal(hsr_client_version(f->c), HSR_PROTO_MAX);
	assert_string_equal(hsr_client_peer_version(f->c), HSR_VERSION);
	assert_int_equal(strlen(hsr_client_instance(f->c)), 16); /* the daemon's instance */
	assert_int_equal(hsr_client_ping(f->c, 0xfeedULL), 0);
	assert_true(next_event(f->c, HSR_EV_PONG).token == 0xfeedULL);

	/* A range that does not contain 2 is refused with an ERROR.  The
	 * proxy takes the key first. */
	fd = hsr_test_spawn_stream(argv, &pid);
	assert_true(fd >= 0);
	hsr_buf_init(&b);
	hsr_msg_encode(&b, &key, 0);
	hsr_msg_encode(&b, &m, 0);
	assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
	n = read(fd, buf, sizeof(buf));
	assert_true(n > 5);
	assert_int_equal(buf[4], HSR_F_ERROR);
	assert_non_null(memmem(buf, (size_t)n, "no common protocol version", 26));
	close(fd);
	waitpid(pid, NULL, 0);

	/* A wider range meets on the highest version (HSR_PROTO_MAX). */
	fd = hsr_test_spawn_stream(argv, &pid);
	m.vmin = 0;
	m.vmax = 1000;
	b.len = 0;
	hsr_msg_encode(&b, &key, 0);
	hsr_msg_encode(&b, &m, 0);
	assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
	n = read(fd, buf, sizeof(buf));
	assert_true(n > 13);
	assert_int_equal(buf[4], HSR_F_HELLO);
	assert_int_equal(buf[5], HSR_PROTO_MAX);
	assert_int_equal(buf[9], HSR_PROTO_MAX);
	close(fd);
	waitpid(pid, NULL, 0);
	hsr_buf_free(&b);
}

static void test_exit_codes(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *a0[] = { "true", NULL };
	const char *a3[] = { "sh", "-c", "exit 3", NULL };
	const char *aterm[] = { "sh", "-c", "kill -TERM $$", NULL };
	const char *anone[] = { "/nonexistent/cmd", NULL };
	struct hsr_test_cmd t;

	assert_int_equal(hsr_test_run(f->c, 1, a0, NULL, NULL, 0, &t), 0);
	assert_int_equal(t.exit.exit_code, 0);
	assert_int_equal(t.exit.timed_out, 0);
	hsr_test_cmd_free(&t);
	assert_int_equal(hsr_test_run(f->c, 2, a3, NULL, NULL, 0, &t), 0);
	assert_int_equal(t.exit.exit_code, 3);
	hsr_test_cmd_free(&t);
	assert_int_equal(hsr_test_run(f->c, 3, aterm, NULL, NULL, 0, &t), 0);
	assert_int_equal(t.exit.exit_code, 128 + 15);
	hsr_test_cmd_free(&t);
	assert_int_equal(hsr_test_run(f->c, 4, anone, NULL, NULL, 0, &t), 0);
	assert_int_equal(t.exit.exit_code, 127);
	assert_non_null(strstr(t.out[2], "cannot execute '/nonexistent/cmd'"));
	hsr_test_cmd_free(&t);
	/* The id of an acknowledged command may be reused. */
	assert_int_equal(hsr_test_run(f->c, 1, a3, NULL, NULL, 0, &t), 0);
	assert_int_equal(t.exit.exit_code, 3);
	hsr_test_cmd_free(&t);
}

static void test_cwd_env_argv(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *aenv[] = { "env", NULL };
	const char *envp[] = { "A=1 2", "B=x=y", "EMPTY=", "PATH=/usr/bin:/bin", NULL };
	const char *apwd[] = { "pwd", NULL };
	const char *aargs[] = { "printf", "[%s]", "a b", "", "c\nd", NULL };
	struct hsr_test_cmd t;

	assert_int_equal(hsr_test_run(f->c, 1, aenv, envp, NULL, 0, &t), 0);
	assert_string_equal(t.out[1], "A=1 2\nB=x=y\nEMPTY=\nPATH=/usr/bin:/bin\n");
	hsr_test_cmd_free(&t);
	assert_int_equal(hsr_test_run(f->c, 2, apwd, NULL, f->tmp, 0, &t), 0);
	assert_int_equal(strncmp(t.out[1], f->tmp, strlen(f->tmp)), 0);
	assert_string_equal(t.out[1] + strlen(f->tmp), "\n");
	hsr_test_cmd_free(&t);
	assert_int_equal(hsr_test_run(f->c, 3, apwd, NULL, "/nonexistent-dir", 0, &t), 0);
	assert_int_equal(t.exit.exit_code, 126);
	hsr_test_cmd_free(&t);
	assert_int_equal(hsr_test_run(f->c, 4, aargs, NULL, NULL, 0, &t), 0);
	assert_string_equal(t.out[1], "[a b][][c\nd]");
	hsr_test_cmd_free(&t);
}

/* HSR_EXEC_MERGE_ENV: the entries override the daemon's own environment
 * (main() put HSR_T_BASE and HS_T_HIDDEN there), and HS_* is dropped. */
static void test_merge_env(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *a[] = { "/bin/sh", "-c", "echo \"$A|$HSR_T_BASE|$HSR_T_KEEP|${HS_T_HIDDEN-unset}\"", NULL };
	const char *envp[] = { "A=1", "HSR_T_BASE=over", NULL };
	struct hsr_exec_spec s = { .id = 21, .argv = a, .envp = envp, .grace_ms = -1, .merge_env = 1,
				   .initial_credit = HSR_CREDIT_UNLIMITED };
	struct hsr_test_cmd t = { .id = 21 };

	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	assert_int_equal(hsr_test_collect(f->c, &t, 1, 20000), 0);
	assert_string_equal(t.out[1], "1|over|kept|unset\n");
	hsr_test_cmd_free(&t);
	/* Without the flag the entries are the whole environment. */
	s.id = 22;
	s.merge_env = 0;
	t = (struct hsr_test_cmd){ .id = 22 };
	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	assert_int_equal(hsr_test_collect(f->c, &t, 1, 20000), 0);
	assert_string_equal(t.out[1], "1|over||unset\n");
	hsr_test_cmd_free(&t);
}

static void test_stdin(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *acat[] = { "cat", NULL };
	const char *afd0[] = { "readlink", "/proc/self/fd/0", NULL };
	struct hsr_exec_spec s = { .id = 9, .argv = acat, .envp = env_path, .grace_ms = -1,
				   .stdin_pipe = 1, .initial_credit = HSR_CREDIT_UNLIMITED };
	struct hsr_test_cmd t = { .id = 9 };
	size_t total = 300000;
	char *big = malloc(total);

	for (size_t i = 0; i < total; i++)
		big[i] = (char)('a' + i % 26);
	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	assert_int_equal(hsr_client_stdin(f->c, 9, big, total), 0);
	assert_int_equal(hsr_client_stdin_eof(f->c, 9), 0);
	assert_int_equal(hsr_test_collect(f->c, &t, 1, 20000), 0);
	assert_int_equal(t.exit.exit_code, 0);
	assert_int_equal(t.len[1], total);
	assert_memory_equal(t.out[1], big, total);
	hsr_test_cmd_free(&t);
	free(big);

	/* Without stdin_pipe the command reads /dev/null. */
	assert_int_equal(hsr_test_run(f->c, 10, acat, NULL, NULL, 0, &t), 0);
	assert_int_equal(t.len[1], 0);
	assert_int_equal(t.exit.exit_code, 0);
	hsr_test_cmd_free(&t);
	assert_int_equal(hsr_test_run(f->c, 11, afd0, NULL, NULL, 0, &t), 0);
	assert_string_equal(t.out[1], "/dev/null\n");
	hsr_test_cmd_free(&t);
}

static void test_state(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *a[] = { "sh", "-c", "echo out; echo 'cwd=/x' >&3; echo err >&2", NULL };
	const char *nostate[] = { "sh", "-c", "echo x >&3", NULL };
	struct hsr_exec_spec s = { .id = 5, .argv = a, .envp = env_path, .grace_ms = -1,
				   .want_state = 1, .initial_credit = HSR_CREDIT_UNLIMITED };
	struct hsr_test_cmd t = { .id = 5 };

	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	assert_int_equal(hsr_test_collect(f->c, &t, 1, 10000), 0);
	assert_string_equal(t.out[1], "out\n");
	assert_string_equal(t.out[2], "err\n");
	assert_string_equal(t.out[3], "cwd=/x\n");
	assert_true(t.exit.total[3] == 7);
	hsr_test_cmd_free(&t);
	/* Without want_state, fd 3 is not open. */
	assert_int_equal(hsr_test_run(f->c, 6, nostate, NULL, NULL, 0, &t), 0);
	assert_int_not_equal(t.exit.exit_code, 0);
	assert_null(t.out[3]);
	hsr_test_cmd_free(&t);
}

static void test_timeout(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *a1[] = { "sh", "-c", "sleep 1007 & sleep 1007", NULL };
	const char *a2[] = { "sh", "-c", "setsid sleep 1008 & sleep 1", NULL };
	const char *a3[] = { "sh", "-c", "setsid sleep 1011 &", NULL };
	const char *a4[] = { "sh", "-c", "trap '' TERM; sleep 1012", NULL };
	struct hsr_test_cmd t;
	int64_t t0 = mono_ms();

	assert_int_equal(hsr_test_run(f->c, 1, a1, NULL, NULL, 1000, &t), 0);
	assert_int_equal(t.exit.timed_out, 1);
	assert_int_equal(t.exit.cancelled, 0);
	assert_int_equal(t.exit.exit_code, 128 + 15);
	assert_true(mono_ms() - t0 < 3000);
	hsr_test_cmd_free(&t);
	assert_int_equal(wait_gone("sleep 1007", 2000), 0);

	assert_int_equal(hsr_test_run(f->c, 2, a2, NULL, NULL, 500, &t), 0);
	assert_int_equal(t.exit.timed_out, 1);
	hsr_test_cmd_free(&t);
	assert_int_equal(wait_gone("sleep 1008", 2000), 0);

	assert_int_equal(hsr_test_run(f->c, 3, a3, NULL, NULL, 1000, &t), 0);
	assert_int_equal(t.exit.exit_code, 0);
	hsr_test_cmd_free(&t);
	assert_int_equal(wait_gone("sleep 1011", 2000), 0);

	/* TERM ignored: KILL after the grace period (500 ms here). */
	t0 = mono_ms();
	assert_int_equal(hsr_test_run(f->c, 4, a4, NULL, NULL, 300, &t), 0);
	assert_int_equal(t.exit.timed_out, 1);
	assert_int_equal(t.exit.exit_code, 128 + 9);
	assert_true(mono_ms() - t0 >= 700);
	hsr_test_cmd_free(&t);
	assert_int_equal(wait_gone("sleep 1012", 2000), 0);
}

static void test_cancel_signal(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *a[] = { "sleep", "1009", NULL };
	const char *b[] = { "sh", "-c", "trap 'echo got; exit 5' USR1; sleep 1013 & wait", NULL };
	struct hsr_exec_spec s = { .id = 7, .argv = a, .envp = env_path, .grace_ms = 500,
				   .initial_credit = HSR_CREDIT_UNLIMITED };
	struct hsr_test_cmd t = { .id = 7 };

	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	usleep(200000);
	assert_int_equal(hsr_client_cancel(f->c, 7), 0);
	assert_int_equal(hsr_test_collect(f->c, &t, 1, 5000), 0);
	assert_int_equal(t.exit.cancelled, 1);
	assert_int_equal(t.exit.timed_out, 0);
	assert_int_equal(t.exit.exit_code, 128 + 15);
	hsr_test_cmd_free(&t);
	assert_int_equal(wait_gone("sleep 1009", 2000), 0);

	s.id = 8;
	s.argv = b;
	t.id = 8;
	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	usleep(300000);
	assert_int_equal(hsr_client_signal(f->c, 8, SIGUSR1), 0);
	assert_int_equal(hsr_test_collect(f->c, &t, 1, 5000), 0);
	assert_int_equal(t.exit.exit_code, 5);
	assert_string_equal(t.out[1], "got\n");
	hsr_test_cmd_free(&t);
	assert_int_equal(wait_gone("sleep 1013", 2000), 0);
}

static void test_background_holder(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *a[] = { "sh", "-c", "sleep 1010 & echo hi", NULL };
	struct hsr_test_cmd t;
	int64_t t0 = mono_ms();

	assert_int_equal(hsr_test_run(f->c, 1, a, NULL, NULL, 0, &t), 0);
	assert_true(mono_ms() - t0 < 1500);
	assert_string_equal(t.out[1], "hi\n");
	assert_int_equal(t.exit.exit_code, 0);
	hsr_test_cmd_free(&t);
	assert_int_equal(wait_gone("sleep 1010", 3000), 0);
}

static void test_errors(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *a[] = { "sleep", "1014", NULL };
	struct hsr_exec_spec s = { .id = 77, .argv = a, .envp = env_path, .grace_ms = 100,
				   .initial_credit = HSR_CREDIT_UNLIMITED };
	struct hsr_test_cmd t = { .id = 77 };
	struct hsr_event ev;

	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	ev = next_event(f->c, HSR_EV_ERROR);
	assert_true(ev.id == 77);
	assert_int_equal(ev.code, HSR_E_BUSY);
	assert_int_equal(hsr_client_cancel(f->c, 12345), 0);
	ev = next_event(f->c, HSR_EV_ERROR);
	assert_true(ev.id == 12345);
	assert_int_equal(ev.code, HSR_E_NOENT);
	assert_int_equal(hsr_client_cancel(f->c, 77), 0);
	assert_int_equal(hsr_test_collect(f->c, &t, 1, 5000), 0);
	hsr_test_cmd_free(&t);
}

static int count_fds(void)
{
	char p[64];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		n += access(p, F_OK) == 0;
	}
	return n;
}

/* A fake `--attach --handoff` answers the key with bytes and a descriptor
 * (SCM_RIGHTS) on our stream; the client must refuse and close it. */
static void handoff_fake(const uint8_t *bytes, size_t len, int pass, const char *want)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = { .iov_base = (void *)bytes, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	struct hsr_client *c = NULL;
	char err[256] = "";
	uint8_t key[5 + HSR_KEY_LEN];
	int sv[2], before = count_fds();

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	memset(&u, 0, sizeof(u));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &pass, sizeof(int));
	/* Everything the client sends first fits in the socket buffer. */
	assert_int_equal(sendmsg(sv[1], &mh, 0), (ssize_t)len);
	assert_int_equal(hsr_client_open(sv[0], hsr_test_key, HSR_CLIENT_PROXY, &c, err, sizeof(err)), -1);
	assert_null(c);
	if (!strstr(err, want))
		fail_msg("error '%s' lacks '%s'", err, want);
	/* The key went first, as to any proxy. */
	assert_int_equal(read(sv[1], key, sizeof(key)), (ssize_t)sizeof(key));
	assert_int_equal(key[4], HSR_F_KEY);
	close(sv[1]);
	assert_int_equal(count_fds(), before);
}

static void test_handoff_refused(void **state)
{
	static const uint8_t hand[5] = { 1, 0, 0, 0, HSR_F_KEY };
	static const uint8_t other[5] = { 1, 0, 0, 0, HSR_F_HELLO };
	int p[2], sv[2];

	(void)state;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	/* The right frame with a pipe, not a socket. */
	handoff_fake(hand, sizeof(hand), p[0], "no usable connection");
	/* A datagram socket. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
	handoff_fake(hand, sizeof(hand), sv[0], "no usable connection");
	close(sv[0]);
	close(sv[1]);
	/* A stream socket with other bytes than the empty KEY frame. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	handoff_fake(other, sizeof(other), sv[0], "no usable connection");
	close(sv[0]);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
}

static char *expected_lines(const char *name, int n)
{
	size_t cap = (size_t)n * 40 + 1, len = 0;
	char *s = malloc(cap);

	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s line %d\n", name, i);
	return s;
}

/* Several commands stream output; the stream dies mid-way; a new attach
 * gets each command's output exactly once and the real exit codes,
 * including a command that finished while detached. */
static void test_resume(void **state)
{
	struct hsr_test_fixture *f = *state;
	char scripts[3][200], late[200], late_done[200];
	const char *argv[4][4];
	struct hsr_test_cmd t[4];
	struct hsr_client *c2;
	struct hsr_event ev;
	pid_t pid2;
	char err[256];
	int seen_output = 0;

	for (int i = 0; i < 3; i++) {
		/* Slow producers: still running when the stream dies. */
		snprintf(scripts[i], sizeof(scripts[i]),
			 "i=0; while [ $i -lt 3000 ]; do echo \"c%d line $i\"; "
			 "[ $((i %% 500)) = 0 ] && sleep 0.1; i=$((i+1)); done; exit %d", i, 10 + i);
		argv[i][0] = "sh";
		argv[i][1] = "-c";
		argv[i][2] = scripts[i];
		argv[i][3] = NULL;
	}
	argv[3][0] = "sh";
	argv[3][1] = "-c";
	snprintf(late, sizeof(late), "sleep 0.3; echo late; : > %s/late-done; exit 7", f->tmp);
	snprintf(late_done, sizeof(late_done), "%s/late-done", f->tmp);
	argv[3][2] = late;
	argv[3][3] = NULL;
	memset(t, 0, sizeof(t));
	for (int i = 0; i < 4; i++) {
		struct hsr_exec_spec s = { .id = 100 + (uint64_t)i, .argv = argv[i], .envp = env_path,
					   .grace_ms = -1, .initial_credit = 4096 };

		t[i].id = s.id;
		assert_int_equal(hsr_client_exec(f->c, &s), 0);
	}
	/* Consume (and acknowledge) a little of each, granting credit as we go. */
	while (seen_output < 12) {
		struct hsr_test_cmd *x;

		assert_int_equal(hsr_client_next(f->c, &ev, 10000, err, sizeof(err)), 1);
		if (ev.type != HSR_EV_OUTPUT)
			continue;
		x = &t[ev.id - 100];
		assert_true(ev.offset == x->len[1]);
		x->out[1] = realloc(x->out[1], x->len[1] + ev.len + 1);
		memcpy(x->out[1] + x->len[1], ev.data, ev.len);
		x->len[1] += ev.len;
		x->out[1][x->len[1]] = '\0';
		hsr_client_ack(f->c, ev.id, 1, x->len[1]);
		hsr_client_credit(f->c, ev.id, ev.len);
		seen_output++;
	}
	/* Make sure the daemon has seen our acks (a PING is answered in
	 * order), leaving later output unread: it is lost with the stream. */
	assert_int_equal(hsr_client_ping(f->c, 1), 0);
	while (next_event(f->c, 0).type != HSR_EV_PONG)
		;
	/* Kill the stream without warning, with output in flight. */
	kill(f->attach, SIGKILL);
	hsr_client_free(f->c);
	waitpid(f->attach, NULL, 0);
	f->c = NULL;
	/* Command 103 finishes while detached. */
	for (int i = 0; i < 250 && access(late_done, F_OK) != 0; i++)
		usleep(20000);
	usleep(300000);

	c2 = hsr_test_attach(f->dir, 0, &pid2);
	assert_non_null(c2);
	f->c = c2;
	f->attach = pid2;
	assert_int_equal(hsr_client_attach(c2), 0);
	ev = next_event(c2, HSR_EV_ATTACH);
	assert_int_equal(ev.nattach, 4);
	for (size_t i = 0; i < ev.nattach; i++) {
		const struct hsr_attach_entry *e = &ev.attach[i];
		struct hsr_test_cmd *x = &t[e->id - 100];

		/* What we acknowledged is exactly where resending starts. */
		assert_true(e->acked[1] == x->len[1]);
		if (e->id == 103)
			assert_int_equal(e->finished, 1);
		assert_int_equal(hsr_client_credit(c2, e->id, HSR_CREDIT_UNLIMITED), 0);
	}
	assert_int_equal(hsr_test_collect(c2, t, 4, 30000), 0);
	for (int i = 0; i < 3; i++) {
		char name[8];
		char *want;

		snprintf(name, sizeof(name), "c%d", i);
		want = expected_lines(name, 3000);
		assert_int_equal(t[i].len[1], strlen(want));
		assert_string_equal(t[i].out[1], want);
		assert_int_equal(t[i].exit.exit_code, 10 + i);
		assert_true(t[i].exit.total[1] == strlen(want));
		free(want);
	}
	assert_string_equal(t[3].out[1], "late\n");
	assert_int_equal(t[3].exit.exit_code, 7);
	for (int i = 0; i < 4; i++)
		hsr_test_cmd_free(&t[i]);
	/* Everything was acknowledged: a new attach lists nothing. */
	assert_int_equal(hsr_client_attach(c2), 0);
	ev = next_event(c2, HSR_EV_ATTACH);
	assert_int_equal(ev.nattach, 0);
}

/* A command with no credit is throttled (it blocks, the daemon's memory
 * stays flat) while another command on the same stream completes; then
 * 500 MB flow through with bounded daemon memory. */
static void test_flow_control(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *big[] = { "head", "-c", "500000000", "/dev/zero", NULL };
	const char *small[] = { "echo", "done", NULL };
	struct hsr_exec_spec s = { .id = 1, .argv = big, .envp = env_path, .grace_ms = -1,
				   .initial_credit = 0 };
	struct hsr_test_cmd t = { .id = 2 };
	long rss0 = hsr_test_rss_kb(f->daemon), rss;
	uint64_t got = 0, acked = 0;
	int exited = 0;
	struct hsr_event ev;
	char err[256];

	assert_true(rss0 > 0);
	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	s.id = 2;
	s.argv = small;
	s.initial_credit = HSR_CREDIT_UNLIMITED;
	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	assert_int_equal(hsr_test_collect(f->c, &t, 1, 10000), 0);
	assert_string_equal(t.out[1], "done\n");
	hsr_test_cmd_free(&t);
	/* No OUTPUT for command 1 arrives without credit. */
	if (hsr_client_next(f->c, &ev, 1000, err, sizeof(err)) != 0)
		fail_msg("unexpected event %d id %llu: %s", ev.type, (unsigned long long)ev.id,
			 ev.type == HSR_EV_ERROR ? ev.message : "");
	assert_int_equal(hsr_test_count_procs("head -c 500000000"), 1);
	rss = hsr_test_rss_kb(f->daemon);
	assert_true(rss - rss0 < 16 * 1024);
	/* The spool stopped at its limit: the command is blocked. */
	assert_int_equal(hsr_client_attach_credit(f->c, 0), 0);
	ev = next_event(f->c, HSR_EV_ATTACH);
	assert_int_equal(ev.nattach, 1);
	assert_false(ev.attach[0].finished);
	/* At most one read (HSR_OUT_CHUNK) past the unsent bound. */
	assert_true(ev.attach[0].end[1] <= 4u * 1024 * 1024 + HSR_OUT_CHUNK);
	assert_true(ev.attach[0].end[1] >= 1u * 1024 * 1024);

	/* Now read it all, granting credit in 1 MiB steps. */
	assert_int_equal(hsr_client_credit(f->c, 1, 1 << 20), 0);
	while (!exited) {
		if (hsr_client_next(f->c, &ev, 20000, err, sizeof(err)) != 1) {
			hsr_client_attach_credit(f->c, 0);
			ev = next_event(f->c, HSR_EV_ATTACH);
			fail_msg("stalled at %llu (acked %llu), daemon: acked %llu end %llu",
				 (unsigned long long)got, (unsigned long long)acked,
				 (unsigned long long)ev.attach[0].acked[1],
				 (unsigned long long)ev.attach[0].end[1]);
		}
		if (ev.type == HSR_EV_OUTPUT) {
			assert_true(ev.offset == got);
			got += ev.len;
			if (got - acked >= (1 << 20)) {
				hsr_client_ack(f->c, 1, 1, got);
				hsr_client_credit(f->c, 1, got - acked);
				acked = got;
				rss = hsr_test_rss_kb(f->daemon);
				assert_true(rss - rss0 < 16 * 1024);
			}
		} else if (ev.type == HSR_EV_EXIT) {
			assert_true(ev.id == 1);
			exited = 1;
			hsr_client_ack(f->c, 1, 0, 0);
		}
	}
	assert_true(got == 500000000ull);
	assert_int_equal(ev.exit_code, 0);
}

/* Bounded output keeps the head and the tail and counts the rest. */
static void test_bounded(void **state)
{
	struct hsr_test_fixture *f = *state;
	char script[256], done[200];
	const char *a[] = { "sh", "-c", script, NULL };
	struct hsr_exec_spec s = { .id = 3, .argv = a, .envp = env_path, .grace_ms = -1,
				   .head_bytes = 1000, .tail_bytes = 3000, .initial_credit = 0 };
	struct hsr_event ev;
	char err[256];
	char *head = NULL, *tail = NULL, *want;
	size_t hl = 0, tl = 0, wl = 0, wcap = 1400000;
	uint64_t tail_off = 0;

	snprintf(done, sizeof(done), "%s/seq-done", f->tmp);
	snprintf(script, sizeof(script), "seq 1 200000; : > %s", done);
	want = malloc(wcap);
	for (int i = 1; i <= 200000; i++)
		wl += (size_t)snprintf(want + wl, wcap - wl, "%d\n", i);
	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	/* Let the command finish without credit: it is never throttled. */
	for (int i = 0; i < 200 && access(done, F_OK) != 0; i++)
		usleep(50000);
	assert_int_equal(access(done, F_OK), 0);
	usleep(300000); /* the daemon drains the pipe */
	assert_int_equal(hsr_client_credit(f->c, 3, HSR_CREDIT_UNLIMITED), 0);
	for (;;) {
		assert_int_equal(hsr_client_next(f->c, &ev, 10000, err, sizeof(err)), 1);
		if (ev.type == HSR_EV_EXIT)
			break;
		assert_int_equal(ev.type, HSR_EV_OUTPUT);
		if (ev.offset < 1000) {
			assert_true(ev.offset == hl);
			head = realloc(head, hl + ev.len);
			memcpy(head + hl, ev.data, ev.len);
			hl += ev.len;
		} else {
			if (!tail)
				tail_off = ev.offset;
			tail = realloc(tail, tl + ev.len);
			memcpy(tail + tl, ev.data, ev.len);
			tl += ev.len;
		}
	}
	assert_int_equal(hl, 1000);
	assert_int_equal(tl, 3000);
	assert_true(tail_off == wl - 3000);
	assert_memory_equal(head, want, 1000);
	assert_memory_equal(tail, want + wl - 3000, 3000);
	assert_true(ev.total[1] == wl);
	assert_true(ev.dropped[1] == wl - 4000);
	hsr_client_ack(f->c, 3, 0, 0);
	free(head);
	free(tail);
	free(want);
}

static void test_files(void **state)
{
	struct hsr_test_fixture *f = *state;
	char path[200], link[200];
	size_t n = 300000;
	uint8_t *data = malloc(n), *back = NULL;
	size_t bl = 0;
	struct hsr_event ev;
	struct stat st;
	char err[256];

	for (size_t i = 0; i < n; i++)
		data[i] = (uint8_t)(i * 7 + i / 251);
	snprintf(path, sizeof(path), "%s/file.bin", f->tmp);
	assert_int_equal(hsr_client_put_file(f->c, 50, path, 0640, data, n), 0);
	ev = next_event(f->c, 0);
	if (ev.type != HSR_EV_OK)
		fail_msg("put: event %d: %s", ev.type, ev.message);
	assert_true(ev.id == 50);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_true((size_t)st.st_size == n);

	assert_int_equal(hsr_client_get_file(f->c, 51, path), 0);
	for (;;) {
		assert_int_equal(hsr_client_next(f->c, &ev, 10000, err, sizeof(err)), 1);
		assert_int_equal(ev.type, HSR_EV_FILE_DATA);
		assert_true(ev.offset == bl);
		back = realloc(back, bl + ev.len + 1);
		memcpy(back + bl, ev.data, ev.len);
		bl += ev.len;
		if (ev.final)
			break;
	}
	assert_int_equal(bl, n);
	assert_memory_equal(back, data, n);

	/* A symlink at the target is replaced, not followed. */
	snprintf(link, sizeof(link), "%s/link", f->tmp);
	assert_int_equal(symlink("/etc/hostname-not-here", link), 0);
	assert_int_equal(hsr_client_put_file(f->c, 52, link, 0600, "x", 1), 0);
	assert_int_equal(next_event(f->c, 0).type, HSR_EV_OK);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	/* GET does not follow a symlink either, and a missing file fails. */
	assert_int_equal(symlink(path, link + 0) < 0, 1);
	assert_int_equal(hsr_client_get_file(f->c, 53, "/nonexistent/file"), 0);
	ev = next_event(f->c, 0);
	assert_int_equal(ev.type, HSR_EV_ERROR);
	assert_int_equal(ev.code, HSR_E_FILE);
	assert_int_equal(hsr_client_put_file(f->c, 54, "relative/path", 0600, "x", 1), -1);
	/* Without syncs (scratch files) the file still replaces the target whole. */
	assert_int_equal(hsr_client_put_file_flags(f->c, 55, path, 0600, "nosync", 6, HSR_PUT_NOSYNC), 0);
	assert_int_equal(next_event(f->c, 0).type, HSR_EV_OK);
	{
		char buf[16] = "";
		int fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(read(fd, buf, sizeof(buf)), 6);
		close(fd);
		assert_memory_equal(buf, "nosync", 6);
	}
	free(data);
	free(back);
}

int main(int argc, char **argv)
{
	/* The daemons the tests start inherit these (test_merge_env). */
	setenv("HSR_T_BASE", "base", 1);
	setenv("HSR_T_KEEP", "kept", 1);
	setenv("HS_T_HIDDEN", "x", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hello, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_exit_codes, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_cwd_env_argv, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_stdin, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_merge_env, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_state, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_timeout, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_cancel_signal, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_background_holder, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_errors, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_resume, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_flow_control, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_bounded, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_files, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test(test_handoff_refused),
	};

	signal(SIGPIPE, SIG_IGN);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
