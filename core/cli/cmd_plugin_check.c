/* SPDX-License-Identifier: MIT */
/*
 * cmd_plugin_check.c - `hs plugin-check [--live] FILE`: the conformance
 * checks every backend must pass, run against any .so.
 *
 * The loader's checks run first (in a child, like `hs backends`).  The
 * behaviour checks then run in another child against the SDK's fake host,
 * so a plugin that crashes fails the check instead of killing hs, and
 * "probe has no side effects" can be verified on the fake host's private
 * directories.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hs/fakehost.h>

#include "core/cli/cmds.h"
#include "core/core.h"
#include "core/config/hsconf.h"
#include "runner/client.h"

static int failures;

static void
result(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
result(int ok, const char *fmt, ...)
{
	va_list ap;
	printf("%s ", ok ? "ok:  " : "FAIL:");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		failures++;
}

/* A fingerprint of everything under root (names and sizes), for side-effect checks. */
static unsigned long long tree_sum;
static int
tree_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	for (const char *p = path; *p; p++)
		tree_sum = tree_sum * 131 + (unsigned char)*p;
	tree_sum = tree_sum * 131 + (unsigned long long)st->st_size;
	return 0;
}

static unsigned long long
tree_fingerprint(const char *root)
{
	tree_sum = 7;
	nftw(root, tree_visit, 16, FTW_PHYS);
	return tree_sum;
}

struct capture {
	char buf[256];
	size_t len;
};

static int32_t
capture_write(void *ctx, int32_t stream, const void *p, uint64_t n)
{
	struct capture *c = ctx;
	if (stream == 1 && c->len + n < sizeof(c->buf)) {
		memcpy(c->buf + c->len, p, n);
		c->len += n;
	}
	return HS_OK;
}

/* Run `echo hs-check` through the runner stream of env. */
static void
live_runner(const struct hs_backend_v1 *be, void *env)
{
	char err[HS_ERR_MAX] = "";
	int32_t fd = -1;
	int32_t st = be->runner_stream(env, &fd, err);
	result(st == HS_OK || err[0], "runner_stream %s%s", st == HS_OK ? "gives a stream" : "failed: ",
	       st == HS_OK ? "" : err);
	if (st != HS_OK)
		return;
	struct hsr_client *rc = NULL;
	char cerr[256];
	/* A fresh key: the environment opened here is new (hs-runner(7)). */
	uint8_t key[HSR_KEY_LEN];
	if (hsr_random(key, sizeof(key)) < 0 ||
	    hsr_client_open(fd, key, HSR_CLIENT_PROXY, &rc, cerr, sizeof(cerr)) < 0) {
		result(0, "runner handshake: %s", cerr);
		return;
	}
	const char *argv[] = { "sh", "-c", "echo hs-check", NULL };
	const char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	struct hsr_exec_spec spec = { .id = 1, .argv = argv, .envp = envp, .deadline_ms = 20000,
	                              .grace_ms = -1, .initial_credit = HSR_CREDIT_UNLIMITED };
	struct capture out = { .len = 0 };
	int code = -1;
	if (hsr_client_exec(rc, &spec) == 0) {
		struct hsr_event ev;
		while (hsr_client_next(rc, &ev, 30000, cerr, sizeof(cerr)) == 1) {
			if (ev.type == HSR_EV_OUTPUT && ev.stream == 1)
				capture_write(&out, 1, ev.data, ev.len);
			if (ev.type == HSR_EV_EXIT) {
				code = ev.exit_code;
				hsr_client_ack(rc, 1, 0, 0);
				break;
			}
			if (ev.type == HSR_EV_ERROR)
				break;
		}
	}
	result(code == 0 && out.len == 9 && memcmp(out.buf, "hs-check\n", 9) == 0,
	       "a command through the runner prints its output and exits 0 (exit %d)", code);
	hsr_client_free(rc);
}

static void
live_exec(const struct hs_backend_v1 *be, void *env)
{
	char err[HS_ERR_MAX] = "";
	const char *argv[] = { "sh", "-c", "echo hs-check; exit 3", NULL };
	const char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	struct capture out = { .len = 0 };
	struct hs_exec_req req = { .struct_size = sizeof(req), .argc = 3, .exec_id = 1, .argv = argv,
	                           .envp = envp, .n_env = 1, .deadline_ms = 20000,
	                           .sink = { &out, capture_write } };
	struct hs_exec_result res = { 0 };
	int32_t st = be->exec(env, &req, &res, err);
	result(st == HS_OK && res.exit_code == 3 && out.len == 9 && memcmp(out.buf, "hs-check\n", 9) == 0,
	       "exec runs a command, streams its output and reports its exit code (status %d, exit %d)%s%s",
	       st, res.exit_code, err[0] ? ": " : "", err);
	st = be->cancel ? be->cancel(env, 999999) : HS_OK;
	result(1, "cancel of an unknown exec returns (status %d)", st);
}

/* ABI 1.1: an attach-only open of an environment that does not exist finds it gone and creates nothing. */
static void
attach_only(const struct hs_backend_v1 *be, void *state, struct hs_fakehost *fh, const char *name)
{
	if (be->abi_minor < 1) {
		result(1, "ABI %u.%u plugin: the core never passes it HS_SPEC_ATTACH (1.1)", be->abi_major,
		       be->abi_minor);
		return;
	}
	char absent[80], err[HS_ERR_MAX] = "";
	snprintf(absent, sizeof(absent), "%s-absent", name);
	struct hs_env_spec spec = { .struct_size = sizeof(spec), .session = absent, .env_name = absent,
	                            .flags = HS_SPEC_PERSISTENT | HS_SPEC_ATTACH };
	struct hs_env_props props = { 0 };
	void *env = NULL;
	unsigned long long before = tree_fingerprint(hs_fakehost_root(fh));
	int32_t st = be->open(state, &spec, &env, &props, err);
	result(st == HS_E_NOTFOUND, "attach-only open (HS_SPEC_ATTACH) of a missing environment "
	       "returns not found (got: %s%s%s)", hs_strerror(st), err[0] ? ": " : "", err);
	result(tree_fingerprint(hs_fakehost_root(fh)) == before,
	       "attach-only open of a missing environment creates nothing in the host directories");
	err[0] = '\0';
	be->close(env, 0, err);
}

static int
behaviour(const char *path, int live)
{
	struct hs_plugin p;
	char err[HS_ERR_MAX];

	if (hs_loader_load_file(path, &p) < 0) {
		result(0, "loads in-process: %s", p.reason);
		return failures;
	}
	const struct hs_backend_v1 *be = &p.desc;
	result(1, "descriptor: backend '%s' %s, ABI %u.%u, build signature matches", be->name,
	       be->version, be->abi_major, be->abi_minor);
	result(be->summary[0] != '\0', "summary is not empty");
	char why[HS_ERR_MAX];
	if (hs_conf_rules_check(be->name, be->config_keys, be->config_rules, why, sizeof(why)) == 0)
		result(1, "config keys and rules are consistent%s",
		       be->abi_minor < 1 ? " (ABI 1.0: no rules; locked keys are fixed)" : "");
	else
		result(0, "%s", why);

	struct hs_fakehost *fh = hs_fakehost_new(be->name, NULL);
	if (!fh) {
		result(0, "cannot create the fake host: %s", strerror(errno));
		return failures;
	}
	void *state = NULL;
	err[0] = '\0';
	int32_t st = be->init ? be->init(hs_fakehost_host(fh), &state, err) : HS_OK;
	if (st != HS_OK) {
		result(err[0] != '\0', "init failed with a message: %s", err[0] ? err : "(no message)");
		hs_fakehost_free(fh);
		return failures;
	}
	result(1, "init succeeds on the fake host");

	unsigned long long before = tree_fingerprint(hs_fakehost_root(fh));
	struct hs_probe_report r1 = { 0 }, r2 = { 0 };
	if (be->probe) {
		char e1[HS_ERR_MAX] = "", e2[HS_ERR_MAX] = "";
		int32_t s1 = be->probe(state, 0, &r1, e1);
		int32_t s2 = be->probe(state, 0, &r2, e2);
		result(s1 == HS_OK || e1[0], "probe returns a status%s%s", s1 == HS_OK ? "" : " with a message: ",
		       s1 == HS_OK ? "" : e1);
		result(s1 == s2 && r1.ready == r2.ready, "probe answers the same twice");
		result(r1.ready || r1.reason[0], "a not-ready probe says why%s%s", r1.ready ? "" : ": ",
		       r1.ready ? " (ready)" : r1.reason);
		result(tree_fingerprint(hs_fakehost_root(fh)) == before,
		       "probe has no side effects on the state, cache and runtime directories");
	} else {
		r1.ready = 1;
		result(1, "no probe op: assumed ready");
	}

	err[0] = '\0';
	st = be->close(NULL, 0, err);
	result(1, "close after a failed open (NULL environment) is safe (status %d)", st);

	if (live && r1.ready) {
		char name[64];
		snprintf(name, sizeof(name), "plugin-check-%ld", (long)getpid());
		attach_only(be, state, fh, name);
		struct hs_env_spec spec = { .struct_size = sizeof(spec), .session = name, .env_name = name };
		struct hs_env_props props = { 0 };
		void *env = NULL;
		err[0] = '\0';
		st = be->open(state, &spec, &env, &props, err);
		result(st == HS_OK || err[0], "open %s%s", st == HS_OK ? "succeeds" : "fails with a message: ",
		       st == HS_OK ? "" : err);
		if (st == HS_OK) {
			result(props.isolation[0] != '\0', "open reports the isolation kind ('%s')",
			       props.isolation);
			result(!props.host_access || props.host_reason[0],
			       "open says why the environment has host access");
			if (props.runner && be->runner_stream)
				live_runner(be, env);
			else if (be->exec)
				live_exec(be, env);
			err[0] = '\0';
			st = be->close(env, 0, err);
			result(st == HS_OK || err[0], "close %s%s", st == HS_OK ? "succeeds" : "fails with a message: ",
			       st == HS_OK ? "" : err);
		}
	} else if (live) {
		result(1, "live checks skipped: the backend is not ready here");
	}
	if (be->fini)
		be->fini(state);
	hs_fakehost_free(fh);
	return failures;
}

int
hs_cmd_plugin_check(struct hs_core *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "live", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int live = 0, o, status = 0;

	optind = 1;
	while ((o = getopt_long(argc, argv, "+lh", opts, NULL)) != -1) {
		switch (o) {
		case 'l': live = 1; break;
		case 'h':
			printf("usage: hs plugin-check [--live] FILE\n\n"
			       "Run the conformance checks on a backend plugin: the loader's checks (file\n"
			       "owner and mode, ELF, ABI version, descriptor size, build signature,\n"
			       "required ops), then its behaviour on a fake host (init, probe twice\n"
			       "without side effects, errors carry messages, close after a failed open).\n"
			       "With --live, also open an environment, run a command and close it.\n"
			       "Exit 0 when every check passes, 1 otherwise.\n");
			return 0;
		default:
			return HS_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		hs_die_msg("plugin-check needs exactly one FILE (see hs plugin-check --help)");
		return HS_EXIT_USAGE;
	}
	const char *path = argv[optind];
	struct hs_plugin p;
	memset(&p, 0, sizeof(p));
	snprintf(p.path, sizeof(p.path), "%s", path);
	if (hs_loader_check_forked(&p, NULL, NULL, NULL, NULL, NULL, 0) < 0) {
		printf("FAIL: %s: %s\n", path, p.reason);
		return 1;
	}
	printf("ok:   %s passes the loader's checks\n", path);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		hs_die_msg("cannot fork: %s", strerror(errno));
		return HS_EXIT_FAIL;
	}
	if (pid == 0)
		_exit(behaviour(path, live) ? 1 : 0);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status)) {
		printf("FAIL: the plugin crashed during the checks (signal %d, %s) after the last line above\n",
		       WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 1;
	}
	return WEXITSTATUS(status) == 0 ? 0 : 1;
}
