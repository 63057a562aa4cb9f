/* SPDX-License-Identifier: MIT */
/* End-to-end tests of the daemon's limits and lifecycle: the bound on
 * buffered stdin, and SHUTDOWN (see also tests/runner/cli.test). */
#include <config.h>

#include <dirent.h>
#include <errno.h>
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

/* How much the daemon's peak memory may grow while holding the stdin
 * bound (16 MiB) itself; AddressSanitizer's quarantine keeps the buffers
 * that growth freed resident too.  Without the bound, 64 MiB would. */
#if defined(__SANITIZE_ADDRESS__)
#define HWM_SLACK_KB (48L * 1024)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HWM_SLACK_KB (48L * 1024)
#endif
#endif
#ifndef HWM_SLACK_KB
#define HWM_SLACK_KB (24L * 1024)
#endif

static const char *const env_path[] = { "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", NULL };

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

/* Feeds len bytes of stdin to command id in 64 KiB pieces. */
static void feed(struct hsr_client *c, uint64_t id, size_t len)
{
	static char chunk[65536];

	memset(chunk, 'x', sizeof(chunk));
	for (size_t done = 0; done < len; done += sizeof(chunk))
		assert_int_equal(hsr_client_stdin(c, id, chunk, sizeof(chunk)), 0);
}

/* 64 MiB flow through a command that reads (more slowly than the sender,
 * so the daemon holds the stream back rather than refuse); the daemon's
 * peak memory stays far below that. */
static void test_stdin_large(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *a[] = { "wc", "-c", NULL };
	struct hsr_exec_spec s = { .id = 20, .argv = a, .envp = env_path, .grace_ms = -1,
				   .stdin_pipe = 1, .initial_credit = HSR_CREDIT_UNLIMITED };
	struct hsr_test_cmd t = { .id = 20 };
	long rss0 = hsr_test_rss_kb(f->daemon);

	assert_true(rss0 > 0);
	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	feed(f->c, 20, 64u << 20);
	assert_int_equal(hsr_client_stdin_eof(f->c, 20), 0);
	assert_int_equal(hsr_test_collect(f->c, &t, 1, 60000), 0);
	assert_int_equal(t.exit.exit_code, 0);
	assert_string_equal(t.out[1], "67108864\n");
	hsr_test_cmd_free(&t);
	assert_true(hsr_test_hwm_kb(f->daemon) - rss0 < HWM_SLACK_KB);
}

/* A command that never reads its stdin: the daemon holds at most
 * HSR_STDIN_MAX of it, then refuses with HSR_E_LIMIT and closes it. */
static void test_stdin_bound(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *a[] = { "sh", "-c", "sleep 5; cat; echo eof", NULL };
	struct hsr_exec_spec s = { .id = 21, .argv = a, .envp = env_path, .grace_ms = 100,
				   .stdin_pipe = 1, .initial_credit = HSR_CREDIT_UNLIMITED };
	struct hsr_test_cmd t = { .id = 21 };
	long rss0 = hsr_test_rss_kb(f->daemon);
	struct hsr_event ev;

	assert_true(rss0 > 0);
	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	feed(f->c, 21, 64u << 20);
	ev = next_event(f->c, 0);
	if (ev.type != HSR_EV_ERROR)
		fail_msg("expected an ERROR, got event %d", ev.type);
	assert_true(ev.id == 21);
	assert_int_equal(ev.code, HSR_E_LIMIT);
	assert_non_null(strstr(ev.message, "stdin"));
	/* Later bytes are dropped without another answer; a PING proves
	 * they were all handled. */
	feed(f->c, 21, 1u << 20);
	assert_int_equal(hsr_client_ping(f->c, 5), 0);
	ev = next_event(f->c, 0);
	assert_int_equal(ev.type, HSR_EV_PONG);
	assert_true(hsr_test_hwm_kb(f->daemon) - rss0 < HWM_SLACK_KB);
	/* The command got end of file after what the pipe held. */
	assert_int_equal(hsr_test_collect(f->c, &t, 1, 20000), 0);
	assert_int_equal(t.exit.exit_code, 0);
	assert_true(t.len[1] >= 4 && strcmp(t.out[1] + t.len[1] - 4, "eof\n") == 0);
	assert_true(t.len[1] - 4 <= HSR_STDIN_MAX + (1u << 20));
	hsr_test_cmd_free(&t);
}

static int dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* SHUTDOWN kills running commands within its grace (shorter than their
 * own), leftovers included, and answers only when all are gone; the
 * daemon then has exited and left an empty runtime directory. */
static void test_shutdown(void **state)
{
	struct hsr_test_fixture *f = *state;
	const char *a[] = { "sleep", "1009", NULL };
	const char *b[] = { "sh", "-c", "trap '' TERM; setsid sleep 1022 & sleep 1022", NULL };
	struct hsr_exec_spec s = { .id = 30, .argv = a, .envp = env_path, .grace_ms = -1,
				   .initial_credit = HSR_CREDIT_UNLIMITED };
	char path[200];
	struct stat st;
	int64_t t0;
	pid_t r = 0;

	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	s.id = 31;
	s.argv = b;
	s.grace_ms = 20000;
	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	/* A finished, unacknowledged command is no obstacle. */
	s.id = 32;
	s.argv = (const char *const[]){ "true", NULL };
	assert_int_equal(hsr_client_exec(f->c, &s), 0);
	usleep(300000);
	assert_int_equal(hsr_test_count_procs("sleep 1009"), 1);
	assert_int_equal(hsr_test_count_procs("sleep 1022"), 3); /* with sh -c */
	t0 = mono_ms();
	assert_int_equal(hsr_client_shutdown(f->c, 300), 0);
	assert_true(mono_ms() - t0 < 3000);
	/* Answered only once every process was gone. */
	assert_int_equal(hsr_test_count_procs("sleep 1009"), 0);
	assert_int_equal(hsr_test_count_procs("sleep 1022"), 0);
	snprintf(path, sizeof(path), "%s/sock", f->dir);
	assert_int_equal(lstat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/lock", f->dir);
	assert_int_equal(lstat(path, &st), -1);
	assert_int_equal(dir_entries(f->dir), 0);
	for (int i = 0; i < 200 && (r = waitpid(f->daemon, NULL, WNOHANG)) == 0; i++)
		usleep(10000);
	assert_int_equal(r, f->daemon);
	f->daemon = 0;
}

/* A daemon that does not know SHUTDOWN answers ERROR 1 to the unknown
 * frame; the client reports that as ENOTSUP.  Played by a fake daemon,
 * which authenticates with the test key like a real one. */
static void test_shutdown_unsupported(void **state)
{
	struct hsr_client *c;
	char err[256];
	int sv[2];
	pid_t pid;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct hsr_msg hello = { .type = HSR_F_HELLO, .vmin = HSR_PROTO_MAX, .vmax = HSR_PROTO_MAX, .str = "0.0.1",
					 .str_len = 5 };
		uint8_t nonce_d[HSR_NONCE_LEN] = { 7 }, proof[HSR_SHA256_LEN];
		struct hsr_msg auth = { .type = HSR_F_AUTH, .keyed = 1, .data = nonce_d,
					.len = HSR_NONCE_LEN, .proof = proof };
		struct hsr_msg m;
		struct hsr_msg e = { .type = HSR_F_ERROR, .code = HSR_E_PROTO,
				     .str = "malformed UNKNOWN frame", .str_len = 23 };
		struct hsr_decoder d;
		struct hsr_frame fr;
		struct hsr_buf b;
		uint8_t buf[4096];
		ssize_t n;

		close(sv[0]);
		hsr_decoder_init(&d, 0);
		hsr_buf_init(&b);
		while ((n = read(sv[1], buf, sizeof(buf))) > 0) {
			hsr_decoder_feed(&d, buf, (size_t)n);
			while (hsr_decoder_next(&d, &fr) == 1) {
				if (hsr_msg_decode(&fr, 0, &m) < 0 || m.type == HSR_F_AUTH)
					continue;
				if (m.type == HSR_F_CHALLENGE)
					hsr_auth_proof(hsr_test_key, HSR_LABEL_DAEMON, m.data, nonce_d,
						       proof);
				hsr_msg_encode(&b, m.type == HSR_F_HELLO ? &hello :
					       m.type == HSR_F_CHALLENGE ? &auth : &e, 1);
			}
			if (b.len && write(sv[1], b.data, b.len) != (ssize_t)b.len)
				_exit(1);
			b.len = 0;
		}
		_exit(0);
	}
	close(sv[1]);
	assert_int_equal(hsr_client_open(sv[0], hsr_test_key, 0, &c, err, sizeof(err)), 0);
	errno = 0;
	assert_int_equal(hsr_client_shutdown(c, -1), -1);
	assert_int_equal(errno, ENOTSUP);
	hsr_client_free(c);
	waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stdin_large, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_stdin_bound, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test_setup_teardown(test_shutdown, hsr_test_setup, hsr_test_teardown),
		cmocka_unit_test(test_shutdown_unsupported),
	};

	signal(SIGPIPE, SIG_IGN);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
