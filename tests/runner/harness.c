/* SPDX-License-Identifier: MIT */
/* Test harness for hs-runner: starts daemons and streams. */
#include <config.h>

#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *hsr_test_runner(void)
{
	static char path[4096];
	const char *env = getenv("HSR_RUNNER");
	const char *top = getenv("top_builddir");

	if (env && *env)
		return env;
	snprintf(path, sizeof(path), "%s/runner/hs-runner", top && *top ? top : ".");
	return path;
}

int hsr_test_spawn_stream(char *const *argv, pid_t *pid)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	*pid = fork();
	if (*pid < 0)
		return -1;
	if (*pid == 0) {
		dup2(sv[1], 0);
		dup2(sv[1], 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(sv[1]);
	return sv[0];
}

const uint8_t hsr_test_key[HSR_KEY_LEN] = "hs-runner test key, 32 bytes...";

struct hsr_client *hsr_test_attach(const char *dir, int start, pid_t *pid)
{
	char *argv[8];
	struct hsr_client *c;
	char err[256];
	pid_t p;
	int n = 0, fd;

	argv[n++] = (char *)hsr_test_runner();
	argv[n++] = "--attach";
	argv[n++] = "--dir";
	argv[n++] = (char *)dir;
	if (start) {
		argv[n++] = "--start";
		argv[n++] = "--idle";
		argv[n++] = "2";
	}
	argv[n] = NULL;
	fd = hsr_test_spawn_stream(argv, &p);
	if (fd < 0)
		return NULL;
	if (pid)
		*pid = p;
	if (hsr_client_open(fd, hsr_test_key, HSR_CLIENT_PROXY, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "attach: %s\n", err);
		return NULL;
	}
	return c;
}

pid_t hsr_test_daemon(const char *dir, int idle)
{
	char idle_s[16], sock[4096];
	pid_t pid;

	snprintf(idle_s, sizeof(idle_s), "%d", idle);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execl(hsr_test_runner(), hsr_test_runner(), "--daemon", "--foreground", "--dir", dir,
		      "--idle", idle_s, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		struct stat st;

		if (stat(sock, &st) == 0)
			return pid;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	return -1;
}

int hsr_test_count_procs(const char *marker)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[64], buf[4096];
		ssize_t len;
		int fd;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		for (ssize_t i = 0; i < len; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[len] = '\0';
		if (strstr(buf, marker))
			n++;
	}
	closedir(d);
	return n;
}

static long status_kb(pid_t pid, int peak)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, peak ? "VmHWM: %ld kB" : "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

long hsr_test_rss_kb(pid_t pid)
{
	return status_kb(pid, 0);
}

long hsr_test_hwm_kb(pid_t pid)
{
	return status_kb(pid, 1);
}

int hsr_test_setup(void **state)
{
	struct hsr_test_fixture *f = calloc(1, sizeof(*f));

	snprintf(f->tmp, sizeof(f->tmp), "/tmp/hsr-test-XXXXXX");
	if (!mkdtemp(f->tmp))
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/rt", f->tmp);
	f->daemon = hsr_test_daemon(f->dir, 0);
	if (f->daemon < 0)
		return -1;
	f->c = hsr_test_attach(f->dir, 0, &f->attach);
	if (!f->c)
		return -1;
	*state = f;
	return 0;
}

int hsr_test_teardown(void **state)
{
	struct hsr_test_fixture *f = *state;
	char cmd[200];

	hsr_client_free(f->c);
	waitpid(f->attach, NULL, 0);
	if (f->daemon > 0) { /* 0: a test saw it exit */
		kill(f->daemon, SIGTERM);
		waitpid(f->daemon, NULL, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->tmp);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct hsr_test_cmd *find(struct hsr_test_cmd *cmds, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (cmds[i].id == id)
			return &cmds[i];
	return NULL;
}

int hsr_test_collect(struct hsr_client *c, struct hsr_test_cmd *cmds, size_t n, int timeout_ms)
{
	int64_t end = mono_ms() + timeout_ms;

	for (;;) {
		struct hsr_event ev;
		struct hsr_test_cmd *t;
		char err[256];
		size_t done = 0;
		int rc;

		for (size_t i = 0; i < n; i++)
			done += cmds[i].exited != 0;
		if (done == n)
			return 0;
		if (mono_ms() >= end)
			return -1;
		rc = hsr_client_next(c, &ev, (int)(end - mono_ms()), err, sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "collect: %s\n", err);
			return -1;
		}
		if (rc == 0)
			return -1;
		t = find(cmds, n, ev.id);
		if (ev.type == HSR_EV_ERROR) {
			fprintf(stderr, "collect: error event id %llu: %s\n",
				(unsigned long long)ev.id, ev.message);
			return -1;
		}
		if (!t)
			continue;
		if (ev.type == HSR_EV_OUTPUT || ev.type == HSR_EV_STATE) {
			int s = ev.stream;

			if (ev.offset != t->len[s]) {
				fprintf(stderr, "collect: command %llu stream %d: offset %llu, have %zu\n",
					(unsigned long long)t->id, s, (unsigned long long)ev.offset,
					t->len[s]);
				return -1;
			}
			t->out[s] = realloc(t->out[s], t->len[s] + ev.len + 1);
			memcpy(t->out[s] + t->len[s], ev.data, ev.len);
			t->len[s] += ev.len;
			t->out[s][t->len[s]] = '\0';
			hsr_client_ack(c, t->id, s, t->len[s]);
		} else if (ev.type == HSR_EV_EXIT) {
			if (t->exited) {
				fprintf(stderr, "collect: second exit for %llu\n", (unsigned long long)t->id);
				return -1;
			}
			t->exited = 1;
			t->exit = ev;
			hsr_client_ack(c, t->id, 0, 0);
		}
	}
}

void hsr_test_cmd_free(struct hsr_test_cmd *t)
{
	for (int s = 0; s < 4; s++)
		free(t->out[s]);
	memset(t, 0, sizeof(*t));
}

int hsr_test_run(struct hsr_client *c, uint64_t id, const char *const *argv,
		 const char *const *envp, const char *cwd, int64_t deadline_ms,
		 struct hsr_test_cmd *out)
{
	static const char *const defenv[] = { "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
					      NULL };
	struct hsr_exec_spec s = { .id = id, .argv = argv, .envp = envp ? envp : defenv,
				   .cwd = cwd, .deadline_ms = deadline_ms, .grace_ms = 500,
				   .initial_credit = HSR_CREDIT_UNLIMITED };

	memset(out, 0, sizeof(*out));
	out->id = id;
	if (hsr_client_exec(c, &s) < 0)
		return -1;
	return hsr_test_collect(c, out, 1, 30000);
}
