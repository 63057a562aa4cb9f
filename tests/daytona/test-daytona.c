/* SPDX-License-Identifier: MIT */
/*
 * test-daytona.c - drives the daytona backend through the SDK's fake host
 * against the loopback Daytona emulator (tests/daytona/emulator.py, started
 * by daytona.test, which exports DAYTONA_API_URL/DAYTONA_API_KEY, DT_EMU
 * and DT_SCRATCH).  Usage: test-daytona PLUGIN.so
 */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hs/backend.h>
#include <hs/fakehost.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (cond) {                                                                        \
			printf("ok: " __VA_ARGS__);                                                \
			printf("\n");                                                              \
		} else {                                                                           \
			failures++;                                                                \
			printf("FAIL (line %d): %s: ", __LINE__, #cond);                           \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
		}                                                                                  \
	} while (0)

struct cap {
	char out[1 << 20], err[65536];
	size_t olen, elen;
};

static int32_t
cap_write(void *ctx, int32_t stream, const void *p, uint64_t n)
{
	struct cap *c = ctx;
	char *b = stream == 1 ? c->out : c->err;
	size_t *l = stream == 1 ? &c->olen : &c->elen;
	if (*l + n < sizeof(c->out)) {
		memcpy(b + *l, p, n);
		*l += n;
		b[*l] = '\0';
	}
	return HS_OK;
}

static const struct hs_backend_v1 *be;
static void *state;
static struct hs_fakehost *fh;

/* The emulator's control endpoint answer, in a static buffer. */
static const char *
emu(const char *what, const char *post)
{
	static char buf[1 << 20];
	char cmd[1024];
	if (post)
		snprintf(cmd, sizeof(cmd), "python3 \"$DT_EMU\" --ctl \"$DAYTONA_API_URL\" %s '%s'", what, post);
	else
		snprintf(cmd, sizeof(cmd), "python3 \"$DT_EMU\" --ctl \"$DAYTONA_API_URL\" %s", what);
	FILE *p = popen(cmd, "r");
	size_t n = p ? fread(buf, 1, sizeof(buf) - 1, p) : 0;
	buf[n] = '\0';
	if (p)
		pclose(p);
	return buf;
}

static int
count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int32_t
run(void *env, const char *script, const char *in, int64_t deadline, struct cap *c,
    struct hs_exec_result *res, char *err, uint64_t id)
{
	const char *av[] = { "/bin/sh", "-c", script, NULL };
	const char *ev[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "HS_T=it's \"quoted\" $HOME", NULL };
	struct hs_exec_req req = { .struct_size = sizeof(req), .argc = 3, .exec_id = id, .argv = av,
	                           .envp = ev, .n_env = 2, .deadline_ms = deadline,
	                           .stdin_data = in, .stdin_len = in ? strlen(in) : 0,
	                           .sink = { c, cap_write } };
	memset(c, 0, sizeof(*c));
	err[0] = '\0';
	return be->exec(env, &req, res, err);
}

static int32_t
open_env(const char *name, uint32_t flags, const char *image, const char *network, void **env,
         struct hs_env_props *props, char *err)
{
	struct hs_env_spec spec = { .struct_size = sizeof(spec), .flags = flags, .session = name,
	                            .env_name = name, .image = image, .network = network,
	                            .memory_bytes = 3LL << 29, .cpus_milli = 1500 };
	memset(props, 0, sizeof(*props));
	err[0] = '\0';
	return be->open(state, &spec, env, props, err);
}

struct canceller {
	void *env;
	uint64_t id;
	useconds_t delay;
};

static void *
cancel_later(void *arg)
{
	struct canceller *c = arg;
	usleep(c->delay);
	/* Not yet registered by exec (HS_E_NOTFOUND): a caller asks again, as the core does. */
	for (int i = 0; i < 500 && be->cancel(c->env, c->id) == HS_E_NOTFOUND; i++)
		usleep(10000);
	return NULL;
}

/* The sleep of a check: a number no other process has on its command line. */
static void
mark(char *marker, size_t n, int phase)
{
	snprintf(marker, n, "sleep 799%d.0%ld", phase, (long)getpid());
}

/* Is a process with exactly this command line alive?  Shown and killed if so. */
static int
leftover(const char *marker)
{
	char cmd[512];
	const char *dot = strchr(marker, '.');
	snprintf(cmd, sizeof(cmd), "pgrep -f -x '%.*s\\%s' >/dev/null", (int)(dot - marker), marker, dot);
	if (system(cmd) != 0)
		return 0;
	snprintf(cmd, sizeof(cmd), "for p in $(pgrep -f -x '%.*s\\%s'); do ps -o pid=,ppid=,pgid=,sid=,etime=,args= -p $p; "
	         "kill -9 $p; done | sed 's/^/# left over: /'", (int)(dot - marker), marker, dot);
	if (system(cmd) != 0)
		printf("# could not list the left-over processes\n");
	return 1;
}

int
main(int argc, char **argv)
{
	/* Line by line, so the log shows how far a run got even if it is killed. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	char err[HS_ERR_MAX];
	struct hs_env_props props;
	struct hs_exec_result res;
	static struct cap c;
	void *env = NULL, *env2 = NULL;
	const char *key = getenv("DAYTONA_API_KEY"), *url = getenv("DAYTONA_API_URL");
	const char *scratch = getenv("DT_SCRATCH");

	if (argc < 2 || !key || !url || !scratch) {
		fprintf(stderr, "usage: DAYTONA_API_URL=... DAYTONA_API_KEY=... DT_SCRATCH=... test-daytona PLUGIN.so\n");
		return 2;
	}
	char *keycopy = strdup(key);
	void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!dl || !(be = dlsym(dl, "hs_backend_v1"))) {
		fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
		return 1;
	}
	fh = hs_fakehost_new("daytona", NULL);
	hs_fakehost_set(fh, "scratch_dir", scratch);
	hs_fakehost_set(fh, "poll_ms", "50");
	hs_fakehost_set(fh, "start_timeout", "20");
	hs_fakehost_set(fh, "disk", "5");
	CHECK(be->init(hs_fakehost_host(fh), &state, err) == HS_OK, "init");

	/* Probe: ready with the key, names DAYTONA_API_KEY without it, never touches the network. */
	struct hs_probe_report rep = { 0 };
	CHECK(be->probe(state, 0, &rep, err) == HS_OK && rep.ready, "probe ready: %s", rep.detail);
	CHECK(!strstr(rep.detail, keycopy), "probe detail holds no key");
	unsetenv("DAYTONA_API_KEY");
	memset(&rep, 0, sizeof(rep));
	CHECK(be->probe(state, 0, &rep, err) == HS_OK && !rep.ready && strstr(rep.reason, "DAYTONA_API_KEY"),
	      "probe without a key says: %s", rep.reason);
	setenv("DAYTONA_API_KEY", "wrong-key", 1);
	memset(&rep, 0, sizeof(rep));
	CHECK(be->probe(state, HS_PROBE_DEEP, &rep, err) == HS_OK && !rep.ready && strstr(rep.reason, "401"),
	      "deep probe with a bad key says: %s", rep.reason);
	CHECK(open_env("badkey", 0, NULL, NULL, &env, &props, err) == HS_E_AUTH && strstr(err, "DAYTONA_API_KEY"),
	      "open with a bad key: %s", err);
	setenv("DAYTONA_API_KEY", keycopy, 1);

	/* Create from an image, exec, stdout/stderr apart, env, stdin, exit code. */
	uint64_t t0 = now_ms();
	CHECK(open_env("s1", 0, "debian:12", NULL, &env, &props, err) == HS_OK, "open s1: %s", err);
	printf("# open took %llu ms\n", (unsigned long long)(now_ms() - t0));
	const char *st = emu("state", NULL);
	CHECK(strstr(st, "\"dockerfileContent\": \"FROM debian:12\\n\"") != NULL, "image as a one-line dockerfile");
	CHECK(strstr(st, "\"networkBlockAll\": true") != NULL, "network blocked by default");
	CHECK(strstr(st, "\"autoDeleteInterval\": 0") != NULL, "a sandbox that is not persistent deletes itself once stopped");
	CHECK(strstr(st, "\"hermes-sandbox.session\": \"s1\"") && strstr(st, "\"hermes-sandbox\": \"1\""), "labels");
	CHECK(strstr(st, "\"cpu\": 2") && strstr(st, "\"memory\": 2") && strstr(st, "\"disk\": 5"),
	      "cpu/memory/disk sent");
	CHECK(!props.host_access && strcmp(props.isolation, "remote") == 0 && props.runner == 0 &&
	      props.shell[0] == '/', "props: isolation %s, shell %s", props.isolation, props.shell);

	t0 = now_ms();
	CHECK(run(env, "echo out; echo err >&2; printf '%s' \"$HS_T\"; exit 3", NULL, 0, &c, &res, err, 1) == HS_OK &&
	      res.exit_code == 3, "exit code 3 (%s)", err);
	printf("# one exec took %llu ms\n", (unsigned long long)(now_ms() - t0));
	CHECK(strcmp(c.out, "out\nit's \"quoted\" $HOME") == 0, "stdout apart, env value intact: [%s]", c.out);
	CHECK(strcmp(c.err, "err\n") == 0, "stderr apart: [%s]", c.err);
	CHECK(run(env, "tr a-z A-Z", "hello stdin\n", 0, &c, &res, err, 2) == HS_OK && res.exit_code == 0 &&
	      strcmp(c.out, "HELLO STDIN\n") == 0, "stdin through the file api: [%s]", c.out);
	CHECK(run(env, "printf 'a\\000b\\377c\\n'; printf 'text\\n'", NULL, 0, &c, &res, err, 30) == HS_OK &&
	      c.olen == 11 && memcmp(c.out, "a\0b\377c\ntext\n", 11) == 0, "binary stdout is exact (%zu bytes)", c.olen);
	CHECK(run(env, "cat; echo end", NULL, 0, &c, &res, err, 3) == HS_OK && strcmp(c.out, "end\n") == 0,
	      "no stdin: /dev/null");
	CHECK(run(env, "kill -9 $$", NULL, 0, &c, &res, err, 4) == HS_OK && res.exit_code == 137,
	      "killed by a signal: %d", res.exit_code);
	CHECK(run(env, "head -c 300000 /dev/zero | tr '\\0' x; for i in 1 2 3; do echo e$i >&2; sleep 0.4; done", NULL, 0, &c,
	          &res, err, 5) == HS_OK && c.olen == 300000 && strcmp(c.err, "e1\ne2\ne3\n") == 0,
	      "large and streamed output: %zu bytes, stderr [%s]", c.olen, c.err);

	/* Deadline: killed remotely, 124, nothing left. */
	char marker[64], script[256];
	mark(marker, sizeof(marker), 1);
	snprintf(script, sizeof(script), "echo before; %s & %s; echo never", marker, marker);
	t0 = now_ms();
	CHECK(run(env, script, NULL, 600, &c, &res, err, 6) == HS_OK && res.timed_out && res.exit_code == 124,
	      "deadline: timed out with 124 (%s)", err);
	uint64_t took = now_ms() - t0;
	CHECK(took < 5000, "deadline honoured promptly (%llu ms)", (unsigned long long)took);
	CHECK(strcmp(c.out, "before\n") == 0, "output before the deadline kept: [%s]", c.out);
	usleep(200000);
	CHECK(!leftover(marker), "no process of the command survives the deadline");
	/* A child that left the group (its own session) is found by parent pid and killed too. */
	mark(marker, sizeof(marker), 4);
	snprintf(script, sizeof(script), "setsid %s & %s", marker, marker);
	CHECK(run(env, script, NULL, 600, &c, &res, err, 10) == HS_OK && res.timed_out, "deadline with setsid (%s)", err);
	usleep(200000);
	CHECK(!leftover(marker), "no process survives the deadline, not even a setsid child");

	/* Cancel from another thread. */
	struct canceller cc = { env, 77, 400000 };
	pthread_t th;
	pthread_create(&th, NULL, cancel_later, &cc);
	mark(marker, sizeof(marker), 2);
	snprintf(script, sizeof(script), "%s", marker);
	t0 = now_ms();
	CHECK(run(env, script, NULL, 0, &c, &res, err, 77) == HS_OK && res.cancelled, "cancel: cancelled (%s)", err);
	pthread_join(th, NULL);
	CHECK(now_ms() - t0 < 5000, "cancel is prompt");
	usleep(200000);
	CHECK(!leftover(marker), "no process survives the cancel");
	CHECK(be->cancel(env, 12345) == HS_E_NOTFOUND, "cancel of an unknown exec");
	/* A cancel that comes before the command has started still kills it. */
	struct canceller early = { env, 78, 1000 };
	mark(marker, sizeof(marker), 3);
	snprintf(script, sizeof(script), "%s", marker);
	pthread_create(&th, NULL, cancel_later, &early);
	t0 = now_ms();
	CHECK(run(env, script, NULL, 0, &c, &res, err, 78) == HS_OK && res.cancelled, "early cancel (%s)", err);
	pthread_join(th, NULL);
	CHECK(now_ms() - t0 < 6000, "early cancel is prompt (%llu ms)", (unsigned long long)(now_ms() - t0));
	usleep(200000);
	CHECK(!leftover(marker), "no process survives the early cancel");

	/* Dropped connections while polling: output and exit code survive. */
	emu("fault", "{\"drop\": 4}");
	CHECK(run(env, "sleep 0.3; echo survived; exit 5", NULL, 0, &c, &res, err, 8) == HS_OK && res.exit_code == 5 &&
	      strcmp(c.out, "survived\n") == 0, "dropped connections: exit %d [%s] %s", res.exit_code, c.out, err);

	/* A throttled toolbox is a one-line reason. */
	emu("fault", "{\"toolbox_status\": 429}");
	CHECK(run(env, "true", NULL, 0, &c, &res, err, 9) == HS_E_BUSY && strstr(err, "429") && !strchr(err, '\n'),
	      "429: %s", err);
	emu("fault", "{\"toolbox_status\": 0}");

	/* The key never leaves the Authorization header; env values never ride a command line. */
	const char *reqs = emu("requests", NULL);
	CHECK(!strstr(reqs, keycopy), "the api key is in no path or body");
	CHECK(count(reqs, "\"auth\": false") == count(reqs, "/_emu/") + 2, "every api call carried the bearer key");
	CHECK(!strstr(reqs, "/exec\", \"body\": \"{\\\"command\\\":\\\"export"), "env values not in session commands");

	/* Close deletes a non-persistent sandbox. */
	CHECK(be->close(env, 0, err) == HS_OK, "close s1: %s", err);
	CHECK(count(emu("state", NULL), "\"id\":") == 0, "the sandbox is deleted");

	/* Persistence: keep, re-attach by label, stop on keep, start again. */
	CHECK(open_env("p1", HS_SPEC_PERSISTENT, NULL, "default", &env, &props, err) == HS_OK, "open p1: %s", err);
	CHECK(strstr(emu("state", NULL), "\"networkBlockAll\": false") != NULL, "network allowed when asked");
	CHECK(run(env, "echo kept > kept.txt", NULL, 0, &c, &res, err, 1) == HS_OK && res.exit_code == 0, "write a file");
	CHECK(be->close(env, HS_CLOSE_KEEP, err) == HS_OK, "close keep");
	hs_fakehost_set(fh, "stop_on_keep", "true");
	CHECK(open_env("p1", HS_SPEC_PERSISTENT, NULL, "default", &env, &props, err) == HS_OK, "re-open p1: %s", err);
	CHECK(count(emu("state", NULL), "\"id\":") == 1, "re-attached, not created again");
	CHECK(run(env, "cat \"$HOME/kept.txt\"", NULL, 0, &c, &res, err, 2) == HS_OK && strcmp(c.out, "kept\n") == 0,
	      "state kept across re-attach: [%s]", c.out);
	CHECK(be->close(env, HS_CLOSE_KEEP, err) == HS_OK, "close keep, stopping");
	hs_fakehost_set(fh, "stop_on_keep", "false");
	CHECK(strstr(emu("state", NULL), "\"state\": \"stopped\"") != NULL, "stopped on close");
	CHECK(open_env("p1", HS_SPEC_PERSISTENT, NULL, "default", &env, &props, err) == HS_OK &&
	      strstr(props.note, "started stopped"), "a stopped sandbox is started again: %s", props.note);
	CHECK(be->close(env, HS_CLOSE_KEEP, err) == HS_OK, "close keep, running");
	emu("set_state", "{\"state\": \"archived\"}");
	CHECK(open_env("p1", HS_SPEC_PERSISTENT, NULL, "default", &env, &props, err) == HS_OK &&
	      strstr(props.note, "started archived"), "an archived sandbox is started again: %s", props.note);
	CHECK(run(env, "cat \"$HOME/kept.txt\"", NULL, 0, &c, &res, err, 2) == HS_OK && strcmp(c.out, "kept\n") == 0,
	      "its files are still there: [%s]", c.out);
	emu("set_state", "{\"state\": \"stopped\"}");
	CHECK(run(env, "cat \"$HOME/kept.txt\"", NULL, 0, &c, &res, err, 3) == HS_OK && strcmp(c.out, "kept\n") == 0,
	      "a sandbox stopped under an open session (auto-stop) is started again: [%s] %s", c.out, err);

	/* Deleted from outside. */
	emu("delete_all", "{}");
	CHECK(run(env, "true", NULL, 0, &c, &res, err, 3) == HS_E_LOST && strstr(err, "gone"), "deleted: %s", err);
	CHECK(be->close(env, 0, err) == HS_OK, "close after the sandbox vanished");

	/* Quota, limits and failed builds. */
	emu("fault", "{\"create_status\": 403, \"create_message\": \"Total CPU quota exceeded\"}");
	CHECK(open_env("q1", 0, NULL, NULL, &env2, &props, err) == HS_E_PERM && strstr(err, "quota exceeded") &&
	      strstr(err, "403"), "403: %s", err);
	emu("fault", "{\"create_status\": 429, \"create_message\": \"Too many requests\"}");
	CHECK(open_env("q1", 0, NULL, NULL, &env2, &props, err) == HS_E_BUSY && strstr(err, "429"), "429: %s", err);
	emu("fault", "{\"build_failed\": \"image bogus:1 not found\", \"start_delay\": 0.3}");
	CHECK(open_env("b1", 0, "bogus:1", NULL, &env2, &props, err) == HS_E_UNAVAILABLE &&
	      strstr(err, "build_failed") && strstr(err, "bogus:1 not found"), "build failed: %s", err);
	CHECK(count(emu("state", NULL), "\"id\":") == 0, "the failed sandbox is not left behind");
	hs_fakehost_set(fh, "start_timeout", "1");
	emu("fault", "{\"start_delay\": 3}");
	CHECK(open_env("slow", 0, NULL, NULL, &env2, &props, err) == HS_E_TIMEOUT && strstr(err, "start_timeout"),
	      "bounded wait: %s", err);
	emu("fault", "{\"start_delay\": 0.5}");
	hs_fakehost_set(fh, "start_timeout", "20");
	t0 = now_ms();
	CHECK(open_env("slow2", 0, NULL, NULL, &env2, &props, err) == HS_OK && now_ms() - t0 >= 450,
	      "slow start waited for 'started': %s", err);
	be->close(env2, 0, err);
	emu("fault", "{\"start_delay\": 0}");
	CHECK(open_env("x", 0, NULL, "mynet", &env2, &props, err) == HS_E_INVALID && strstr(err, "mynet"),
	      "named networks refused: %s", err);

	/* Unreachable API. */
	setenv("DAYTONA_API_URL", "http://127.0.0.1:1", 1);
	CHECK(open_env("u", 0, NULL, NULL, &env2, &props, err) == HS_E_IO && strstr(err, "cannot reach") &&
	      strstr(err, "DAYTONA_API_URL"), "unreachable: %s", err);
	setenv("DAYTONA_API_URL", "ftp://x", 1);
	memset(&rep, 0, sizeof(rep));
	CHECK(be->probe(state, 0, &rep, err) == HS_OK && !rep.ready && strstr(rep.reason, "http"), "bad url: %s",
	      rep.reason);

	CHECK(!strstr(hs_fakehost_log(fh), keycopy), "the key is in no log line");
	be->fini(state);
	hs_fakehost_free(fh);
	free(keycopy);
	printf("%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
