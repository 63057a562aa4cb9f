/* SPDX-License-Identifier: MIT */
/* hsr-run: runs one command through an hs-runner stream, for shell tests.
 *
 *   hsr-run [-t MS] [-i] [-C DIR] [-S] -- STREAM-ARGV... -- COMMAND-ARGV...
 *
 * STREAM-ARGV is started with a socket as its stdin and stdout (normally
 * `hs-runner --attach ...`, possibly under chroot).  The command's output
 * is copied to our stdout/stderr; the exit status is the command's, 124
 * when it timed out, 125 on a runner failure.  With -i our stdin is sent
 * to the command.  With -S the command runs in the daemon's session shell:
 * COMMAND-ARGV is SHELL COMMAND START_DIR CWD [NAME=VALUE...]; a lost
 * shell state and the jobs left are reported on stderr
 * ("hsr-run: shell restarted: ...", "hsr-run: jobs left: N").
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "harness.h"


extern char **environ;

static void write_all(int fd, const void *p, size_t n)
{
	const char *b = p;

	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			exit(125);
		}
		b += w;
		n -= (size_t)w;
	}
}

int main(int argc, char **argv)
{
	struct hsr_exec_spec s = { .grace_ms = 1000, .initial_credit = HSR_CREDIT_UNLIMITED };
	struct hsr_client *c;
	char err[256];
	int opt, i, sep, fd;
	pid_t pid;

	s.id = (uint64_t)getpid();
	while ((opt = getopt(argc, argv, "t:iC:S")) != -1) {
		switch (opt) {
		case 'S':
			s.session = 1;
			break;
		case 't':
			s.deadline_ms = atoll(optarg);
			break;
		case 'i':
			s.stdin_pipe = 1;
			break;
		case 'C':
			s.cwd = optarg;
			break;
		default:
			return 2;
		}
	}
	for (sep = optind; sep < argc && strcmp(argv[sep], "--"); sep++)
		;
	if (optind >= sep || sep + 1 >= argc) {
		fprintf(stderr, "usage: hsr-run [-t MS] [-i] [-C DIR] [-S] -- STREAM... -- COMMAND...\n");
		return 2;
	}
	argv[sep] = NULL;
	fd = hsr_test_spawn_stream(argv + optind, &pid);
	if (fd < 0 || hsr_client_open(fd, hsr_test_key, HSR_CLIENT_PROXY, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "hsr-run: %s\n", fd < 0 ? strerror(errno) : err);
		return 125;
	}
	s.argv = (const char *const *)argv + sep + 1;
	s.envp = (const char *const *)environ;
	if (hsr_client_exec(c, &s) < 0)
		return 125;
	if (s.stdin_pipe) {
		char buf[65536];
		ssize_t n;

		while ((n = read(0, buf, sizeof(buf))) > 0)
			hsr_client_stdin(c, s.id, buf, (size_t)n);
		hsr_client_stdin_eof(c, s.id);
	}
	for (;;) {
		struct hsr_event ev;

		i = hsr_client_next(c, &ev, -1, err, sizeof(err));
		if (i < 0) {
			fprintf(stderr, "hsr-run: %s\n", err);
			return 125;
		}
		if (ev.type == HSR_EV_OUTPUT) {
			write_all(ev.stream, ev.data, ev.len);
			hsr_client_ack(c, ev.id, ev.stream, ev.offset + ev.len);
		} else if (ev.type == HSR_EV_ERROR) {
			fprintf(stderr, "hsr-run: %s\n", ev.message);
			return 125;
		} else if (ev.type == HSR_EV_EXIT) {
			if (ev.shell_restarted)
				fprintf(stderr, "hsr-run: shell restarted: %s\n", ev.reason);
			if (ev.jobs_left)
				fprintf(stderr, "hsr-run: jobs left: %u\n", ev.jobs_left);
			hsr_client_ack(c, ev.id, 0, 0);
			hsr_client_free(c);
			return ev.timed_out ? 124 : ev.exit_code;
		}
	}
}
