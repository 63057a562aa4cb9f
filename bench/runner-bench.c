/* SPDX-License-Identifier: MIT */
/* runner-bench: the cost of running `true` through hs-runner (exec and
 * exit over one stream, through `hs-runner --attach`) against a bare
 * fork/exec/wait of /bin/true, and of a `true` in the runner's session
 * shell against one persistent bash fed through a pipe, measured in one
 * run.
 *
 *   make bench-runner            (or: bench/runner-bench runner/hs-runner [N])
 */
#include <config.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int spawn_stream(const char *runner, const char *dir, pid_t *pid)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	*pid = fork();
	if (*pid == 0) {
		dup2(sv[1], 0);
		dup2(sv[1], 1);
		execl(runner, runner, "--attach", "--dir", dir, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	return sv[0];
}

int main(int argc, char **argv)
{
	static const char *const targv[] = { "/bin/true", NULL };
	static const char *const tenv[] = { "PATH=/usr/bin:/bin", NULL };
	static const uint8_t key[HSR_KEY_LEN] = "runner-bench key, any 32 bytes..";
	const char *runner = argc > 1 ? argv[1] : "runner/hs-runner";
	int n = argc > 2 ? atoi(argv[2]) : 2000;
	char tmp[] = "/tmp/hsr-bench-XXXXXX", dir[64], sock[80], err[256];
	struct hsr_client *c;
	double t0, runner_us, bare_us;
	pid_t daemon, attach;
	struct stat st;
	int fd;

	if (n <= 0 || !mkdtemp(tmp))
		return 1;
	snprintf(dir, sizeof(dir), "%s/rt", tmp);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	daemon = fork();
	if (daemon == 0) {
		execl(runner, runner, "--daemon", "--foreground", "--dir", dir, "--idle", "0",
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500 && stat(sock, &st) < 0; i++)
		usleep(10000);
	fd = spawn_stream(runner, dir, &attach);
	if (fd < 0 || hsr_client_open(fd, key, HSR_CLIENT_PROXY, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "runner-bench: %s\n", err);
		kill(daemon, SIGTERM);
		return 1;
	}

	t0 = now_us();
	for (int i = 0; i < n; i++) {
		struct hsr_exec_spec s = { .id = (uint64_t)i + 1, .argv = targv, .envp = tenv,
					   .grace_ms = -1, .initial_credit = HSR_CREDIT_UNLIMITED };
		struct hsr_event ev;

		if (hsr_client_exec(c, &s) < 0)
			return 1;
		do {
			if (hsr_client_next(c, &ev, 10000, err, sizeof(err)) != 1) {
				fprintf(stderr, "runner-bench: %s\n", err);
				return 1;
			}
		} while (ev.type != HSR_EV_EXIT);
		if (ev.exit_code != 0)
			return 1;
		hsr_client_ack(c, s.id, 0, 0);
	}
	runner_us = (now_us() - t0) / n;

	/* The session shell: `true` in the one persistent bash of the daemon. */
	double shell_us = -1, pipe_us = -1;
	if (access("/bin/bash", X_OK) == 0) {
		static const char *const sargv[] = { "/bin/bash", "true", "/", "", NULL };
		int ok = 1;

		t0 = 0;
		for (int i = -20; i < n && ok; i++) {
			struct hsr_exec_spec s = { .id = (uint64_t)(n + 100 + i), .argv = sargv,
						   .envp = tenv, .grace_ms = -1, .session = 1,
						   .initial_credit = HSR_CREDIT_UNLIMITED };
			struct hsr_event ev;

			if (i == 0)
				t0 = now_us(); /* the first 20 start the shell and warm up */
			if (hsr_client_exec(c, &s) < 0)
				ok = 0;
			do {
				if (ok && hsr_client_next(c, &ev, 10000, err, sizeof(err)) != 1)
					ok = 0;
			} while (ok && ev.type != HSR_EV_EXIT);
			if (ok)
				hsr_client_ack(c, s.id, 0, 0);
		}
		if (ok)
			shell_us = (now_us() - t0) / n;
		/* One persistent bash through a pipe: `true`, then a marker line read back. */
		int in[2], out[2];
		if (pipe(in) == 0 && pipe(out) == 0) {
			pid_t b = fork();

			if (b == 0) {
				dup2(in[0], 0);
				dup2(out[1], 1);
				close(in[1]);
				close(out[0]);
				execl("/bin/bash", "bash", "--norc", "--noprofile", (char *)NULL);
				_exit(127);
			}
			close(in[0]);
			close(out[1]);
			for (int i = -20; i < n; i++) {
				char line[8];

				if (i == 0)
					t0 = now_us();
				if (write(in[1], "true; echo m\n", 13) != 13 || read(out[0], line, 2) != 2)
					break;
				if (i == n - 1)
					pipe_us = (now_us() - t0) / n;
			}
			close(in[1]);
			close(out[0]);
			waitpid(b, NULL, 0);
		}
	}

	t0 = now_us();
	for (int i = 0; i < n; i++) {
		int status;
		pid_t pid = fork();

		if (pid == 0) {
			execve(targv[0], (char *const *)targv, (char *const *)tenv);
			_exit(127);
		}
		waitpid(pid, &status, 0);
	}
	bare_us = (now_us() - t0) / n;

	printf("runner-bench: %d x /bin/true\n", n);
	printf("  through hs-runner (one stream): %8.1f us/op\n", runner_us);
	printf("  bare fork/exec/wait:            %8.1f us/op\n", bare_us);
	printf("  ratio runner/bare:              %8.2f\n", runner_us / bare_us);
	if (shell_us > 0 && pipe_us > 0) {
		printf("  true in the session shell:      %8.1f us/op\n", shell_us);
		printf("  true in one bash via a pipe:    %8.1f us/op\n", pipe_us);
		printf("  ratio session shell/bash pipe:  %8.2f  (the runner's share of a session "
		       "command; hs serve adds approval, guard and audit)\n", shell_us / pipe_us);
	}
	{
		/* One row for make bench's plot (bench/plot.py). */
		const char *tsv = getenv("HS_BENCH_TSV");
		FILE *f = tsv ? fopen(tsv, "a") : NULL;

		if (f) {
			fprintf(f, "hs-runner round trip\t%.3f\tfork/exec/wait\t%.3f\n", runner_us / 1000,
				bare_us / 1000);
			if (shell_us > 0 && pipe_us > 0)
				fprintf(f, "session shell (runner)\t%.3f\tbash through a pipe\t%.3f\n",
					shell_us / 1000, pipe_us / 1000);
			fclose(f);
		}
	}
	hsr_client_free(c);
	waitpid(attach, NULL, 0);
	kill(daemon, SIGTERM);
	waitpid(daemon, NULL, 0);
	unlink(sock);
	unlink(strcat(dir, "/lock"));
	dir[strlen(dir) - 5] = '\0';
	rmdir(dir);
	rmdir(tmp);
	return 0;
}
