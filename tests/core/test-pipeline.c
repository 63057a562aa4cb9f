/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * test-pipeline - the session and exec pipeline (core/pipeline.c) through
 * the built-in local backend and the real runner stream: a command runs and
 * its output reaches the sink; a denied command never runs and its decision
 * is audited; an unwritable audit log refuses the command (fail closed);
 * ask mode puts the question to the session's asker, and a "session" grant
 * is not asked again; a command may narrow, never widen, the session's mode;
 * a risk only a backend sees is decided with the session's mode and asker;
 * a command still running at its hand-off time goes on as a job.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/core.h"
#include "core/config/hsconf.h"
#include "core/pipeline.h"

static char dir[64];
static struct hs_core core;

/* An asker that answers with `answer` and counts the questions. */
static int asked, answer;

static int
fake_ask(void *ctx, const char *command, const struct hs_analysis *a)
{
	(void)ctx;
	(void)command;
	(void)a;
	asked++;
	return answer;
}

static const struct hs_asker asker = { NULL, fake_ask, "test" };

/* What reaches the sink. */
static char out[4096];
static size_t out_len;

static int
sink_output(void *ctx, int stream, const void *buf, size_t len)
{
	(void)ctx;
	(void)stream;
	if (out_len + len < sizeof(out)) {
		memcpy(out + out_len, buf, len);
		out_len += len;
	}
	return 0;
}

static int
sink_cancelled(void *ctx)
{
	(void)ctx;
	return 0;
}

static const struct hs_sink_ops sink = {
	.output = sink_output, .input_fd = -1, .cancelled = sink_cancelled, .cancel_fd = -1,
};

/* Start the core with the audit log at dir/AUDIT and the extra config lines. */
static void
core_up_audit(const char *audit, const char *extra)
{
	char err[1024], path[128];
	snprintf(path, sizeof(path), "%s/hs.conf", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "audit_log = \"%s/%s\";\n%s", dir, audit, extra ? extra : "");
	fclose(f);
	snprintf(path, sizeof(path), "%s/hs.conf", dir);
	assert_int_equal(hs_core_init(&core, path, err, sizeof(err)), 0);
	core.quiet = 1;
}

static void
core_up(const char *extra)
{
	core_up_audit("audit.log", extra);
}

static void
open_session(struct hs_session *s, int mode)
{
	char err[1024];
	struct hs_env_spec spec = { .struct_size = sizeof(spec) };
	hs_session_init(s, &core, NULL, 0, mode, &asker);
	int oc = hs_session_open(s, "local", &spec, err, sizeof(err));
	if (oc != HS_OUTCOME_OK)
		fail_msg("open: %s", err);
}

static int
run(struct hs_session *s, const char *command, const char *approval, struct hs_cmd_result *res)
{
	struct hs_cmd_req rq = { .command = command, .approval = approval, .timeout_s = 30 };
	out_len = 0;
	return hs_session_exec(s, &rq, &sink, res);
}

/* The audit log's text (static buffer). */
static const char *
audit_text(void)
{
	static char buf[65536];
	char path[128];
	snprintf(path, sizeof(path), "%s/audit.log", dir);
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static int
exists(const char *name)
{
	char path[160];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static void
test_runs_and_streams(void **state)
{
	struct hs_session s;
	struct hs_cmd_result res;
	(void)state;
	core_up(NULL);
	open_session(&s, HS_APPROVAL_DENY);
	assert_int_equal(run(&s, "echo hello; exit 3", NULL, &res), HS_OUTCOME_OK);
	assert_int_equal(res.out.exit_code, 3);
	assert_int_equal(out_len, 6);
	assert_memory_equal(out, "hello\n", 6);
	assert_string_equal(res.decision, "auto");
	/* The decision and then the exit are in the audit log. */
	assert_non_null(strstr(audit_text(), "echo hello; exit 3"));
	assert_non_null(strstr(audit_text(), "\"exit_code\":3"));
	assert_int_equal(hs_session_close(&s, 0, NULL, 0), 0);
	hs_session_free(&s);
	hs_core_free(&core);
}

/* A command still running at handoff_ms goes on as a job that holds the session
 * shell; its output (all of it, from offset 0) and exit reach the job, and the
 * session runs commands again once it ended.  The command waits for a file the
 * test makes only after the hand-off, so it cannot end before. */
static void
test_handoff(void **state)
{
	struct hs_session s;
	struct hs_cmd_result res;
	char cmd[256], go[128], err[256];
	(void)state;
	core_up(NULL);
	open_session(&s, HS_APPROVAL_APPROVE);
	snprintf(go, sizeof(go), "%s/go", dir);
	snprintf(cmd, sizeof(cmd), "echo a; while [ ! -e %s ]; do sleep 0.1; done; echo b; exit 4", go);
	struct hs_cmd_req rq = { .command = cmd, .timeout_s = 60, .bounded = 1, .keep_state = 1,
	                         .handoff_ms = 500 };
	out_len = 0;
	assert_int_equal(hs_session_exec(&s, &rq, &sink, &res), HS_OUTCOME_OK);
	struct hs_job *j = res.out.job;
	assert_non_null(j);
	assert_false(j->done);
	assert_ptr_equal(hs_conn_shell_holder(&s.cn), j);
	assert_non_null(strstr(j->command, "echo a"));
	int fd = open(go, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	for (int i = 0; i < 150 && !j->done; i++)
		assert_true(hs_conn_pump(&s.cn, 200, err, sizeof(err)) >= 0);
	assert_true(j->done);
	assert_int_equal(j->exit_code, 4);
	size_t n;
	char *got = hs_capture_join(&j->cap[1], &n);
	assert_non_null(got);
	assert_int_equal(n, 4);
	assert_memory_equal(got, "a\nb\n", 4);
	free(got);
	assert_null(hs_conn_shell_holder(&s.cn));
	rq = (struct hs_cmd_req){ .command = "echo c", .timeout_s = 30, .bounded = 1, .keep_state = 1,
	                          .handoff_ms = 500 };
	out_len = 0;
	assert_int_equal(hs_session_exec(&s, &rq, &sink, &res), HS_OUTCOME_OK);
	assert_null(res.out.job);
	assert_int_equal(out_len, 2);
	assert_memory_equal(out, "c\n", 2);
	assert_int_equal(hs_session_close(&s, 0, NULL, 0), 0);
	hs_session_free(&s);
	hs_core_free(&core);
}

static void
test_denied_never_runs(void **state)
{
	struct hs_session s;
	struct hs_cmd_result res;
	char cmd[256];
	(void)state;
	core_up(NULL);
	open_session(&s, HS_APPROVAL_DENY);
	/* A dangerous command (git push --force) with a side effect first. */
	snprintf(cmd, sizeof(cmd), "touch %s/ran-denied; git push --force origin main", dir);
	asked = 0;
	assert_int_equal(run(&s, cmd, NULL, &res), HS_OUTCOME_DENIED);
	assert_false(exists("ran-denied"));
	assert_int_equal(asked, 0); /* deny mode asks nobody */
	assert_non_null(strstr(res.why, "approval mode is deny"));
	assert_non_null(strstr(audit_text(), "\"decision\":\"deny\""));
	hs_session_close(&s, 0, NULL, 0);
	hs_session_free(&s);
	hs_core_free(&core);
}

static void
test_audit_fails_closed(void **state)
{
	struct hs_session s;
	struct hs_cmd_result res;
	char cmd[256], path[128];
	(void)state;
	/* The audit log is a directory: no record can be written. */
	snprintf(path, sizeof(path), "%s/noaudit", dir);
	mkdir(path, 0700);
	core_up_audit("noaudit", NULL);
	open_session(&s, HS_APPROVAL_DENY);
	snprintf(cmd, sizeof(cmd), "touch %s/ran-unaudited", dir);
	assert_int_equal(run(&s, cmd, NULL, &res), HS_OUTCOME_AUDIT);
	assert_false(exists("ran-unaudited"));
	hs_session_close(&s, 0, NULL, 0);
	hs_session_free(&s);
	hs_core_free(&core);
}

static void
test_ask_and_session_grant(void **state)
{
	struct hs_session s;
	struct hs_cmd_result res;
	(void)state;
	core_up(NULL);
	open_session(&s, HS_APPROVAL_ASK);
	asked = 0;
	answer = HS_DECIDE_DENY;
	assert_int_equal(run(&s, "git push --force origin nowhere 2>/dev/null; echo after", NULL, &res),
	                 HS_OUTCOME_DENIED);
	assert_int_equal(asked, 1);
	assert_int_equal(out_len, 0);
	answer = HS_DECIDE_SESSION;
	assert_int_equal(run(&s, "git push --force origin nowhere 2>/dev/null; echo after", NULL, &res),
	                 HS_OUTCOME_OK);
	assert_int_equal(asked, 2);
	assert_non_null(strstr(out, "after"));
	/* Granted for the session: not asked again. */
	assert_int_equal(run(&s, "git push --force origin nowhere 2>/dev/null; echo again", NULL, &res),
	                 HS_OUTCOME_OK);
	assert_int_equal(asked, 2);
	assert_string_equal(res.decision, "session");
	/* A command may narrow the mode, never widen it. */
	assert_int_equal(run(&s, "git push --force origin other", "deny", &res), HS_OUTCOME_DENIED);
	assert_int_equal(asked, 2);
	answer = HS_DECIDE_DENY;
	assert_int_equal(run(&s, "git reset --hard", "approve", &res), HS_OUTCOME_DENIED);
	assert_int_equal(asked, 3); /* "approve" asked of an ask session: still asked */
	assert_int_equal(run(&s, "echo x", "bogus", &res), HS_OUTCOME_INVALID);
	hs_session_close(&s, 0, NULL, 0);
	hs_session_free(&s);
	hs_core_free(&core);
}

/*
 * Bytes written to a job's terminal pass the same gate as a command: a
 * hardline line is denied without a question, a dangerous one is asked and
 * a "session" grant covers it again, an opaque one is never granted by
 * approve mode; each decision is audited as a stdin write of its job, and
 * an allowed write's bytes (maybe a password) are not recorded.
 */
static void
test_stdin_gate(void **state)
{
	struct hs_session s;
	struct hs_approval_out v;
	struct hs_stdin_guard *g = hs_stdin_guard_new();
	(void)state;
	assert_non_null(g);
	core_up(NULL);
	open_session(&s, HS_APPROVAL_ASK);
	asked = 0;
	answer = HS_DECIDE_SESSION;
	assert_int_equal(hs_session_stdin_gate(&s, g, "j7", "rm -rf /\n", 9, &v), 0);
	assert_int_equal(asked, 0);
	assert_string_equal(v.decision, "deny");
	assert_non_null(strstr(audit_text(), "\"command\":\"rm -rf /\\\\x0a\""));
	assert_non_null(strstr(audit_text(), "\"kind\":\"stdin\",\"job\":\"j7\""));
	assert_int_equal(hs_session_stdin_gate(&s, g, "j7", "s3cret\n", 7, &v), 1);
	assert_string_equal(v.decision, "auto");
	assert_null(strstr(audit_text(), "s3cret"));
	assert_non_null(strstr(audit_text(), "(7 bytes written to the terminal, not recorded)"));
	/* Split over writes; refused once, so the guard still holds the line. */
	assert_int_equal(hs_session_stdin_gate(&s, g, "j7", "git push --force", 16, &v), 1);
	answer = HS_DECIDE_DENY;
	assert_int_equal(hs_session_stdin_gate(&s, g, "j7", "\n", 1, &v), 0);
	assert_int_equal(asked, 1);
	answer = HS_DECIDE_SESSION;
	assert_int_equal(hs_session_stdin_gate(&s, g, "j7", "\n", 1, &v), 1);
	assert_int_equal(asked, 2);
	assert_int_equal(hs_session_stdin_gate(&s, g, NULL, "git push --force\n", 17, &v), 1);
	assert_int_equal(asked, 2);
	assert_string_equal(v.decision, "session");
	hs_session_close(&s, 0, NULL, 0);
	hs_session_free(&s);
	/* Approve mode grants what it can read, never cursor keys. */
	open_session(&s, HS_APPROVAL_APPROVE);
	assert_int_equal(hs_session_stdin_gate(&s, g, "j8", "git push --force\n", 17, &v), 1);
	assert_string_equal(v.decision, "approve");
	assert_int_equal(hs_session_stdin_gate(&s, g, "j8", "\x1b[A\n", 4, &v), 0);
	assert_non_null(strstr(v.why, "cannot read"));
	/* Closing stdin ends the last line: gated as well. */
	assert_int_equal(hs_session_stdin_gate(&s, g, "j8", "rm -rf /", 8, &v), 1);
	assert_int_equal(hs_session_stdin_gate(&s, g, "j8", NULL, 0, &v), 0);
	assert_string_equal(v.decision, "deny");
	assert_non_null(strstr(audit_text(), "\"command\":\"(end of input)\""));
	hs_session_close(&s, 0, NULL, 0);
	hs_session_free(&s);
	hs_stdin_guard_free(g);
	hs_core_free(&core);
}

static void
test_mode_resolve(void **state)
{
	(void)state;
	core_up("approval = \"deny\";\n");
	assert_int_equal(hs_approval_mode_resolve(&core, NULL, -1), HS_APPROVAL_DENY);
	assert_int_equal(hs_approval_mode_resolve(&core, "approve", -1), HS_APPROVAL_APPROVE);
	assert_int_equal(hs_approval_mode_resolve(&core, "approve", HS_APPROVAL_ASK), HS_APPROVAL_ASK);
	assert_int_equal(hs_approval_mode_resolve(&core, "deny", HS_APPROVAL_APPROVE), HS_APPROVAL_DENY);
	assert_int_equal(hs_approval_mode_resolve(&core, "sometimes", -1), -1);
	hs_core_free(&core);
}

/* The waiting_input path the serve event rides on: a command blocked
 * reading a stdin that never gets data is reported once through the sink
 * (with its prompt); the sink then cancels it, and the result says it was
 * stopped while it waited. */
static int waits;
static char wait_prompt[256];

static void
sink_waiting(void *ctx, const char *prompt)
{
	(void)ctx;
	waits++;
	snprintf(wait_prompt, sizeof(wait_prompt), "%s", prompt);
}

static long
sink_no_input(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	(void)buf;
	(void)len;
	return -1; /* none ready, ever */
}

static int
sink_cancel_once_waiting(void *ctx)
{
	(void)ctx;
	return waits > 0;
}

static void
test_waiting_input(void **state)
{
	struct hs_session s;
	struct hs_cmd_result res;
	int never[2];
	(void)state;
	assert_int_equal(pipe(never), 0);
	struct hs_sink_ops ws = { .output = sink_output, .input = sink_no_input, .input_fd = never[0],
	                          .cancelled = sink_cancel_once_waiting, .cancel_fd = -1,
	                          .waiting = sink_waiting };
	core_up(NULL);
	open_session(&s, HS_APPROVAL_DENY);
	struct hs_cmd_req rq = { .command = "printf 'name? '; read x; echo got=$x", .timeout_s = 60,
	                         .bounded = 1, .keep_state = 1, .stdin_pipe = 1 };
	waits = 0;
	out_len = 0;
	assert_int_equal(hs_session_exec(&s, &rq, &ws, &res), HS_OUTCOME_OK);
	assert_int_equal(waits, 1);
	assert_true(res.out.cancelled);
	assert_true(res.out.waiting_input);
	assert_string_equal(res.out.prompt, "name? ");
	/* A busy command is never reported. */
	waits = 0;
	rq.command = "sleep 1";
	rq.stdin_pipe = 0;
	assert_int_equal(hs_session_exec(&s, &rq, &ws, &res), HS_OUTCOME_OK);
	assert_int_equal(waits, 0);
	assert_false(res.out.waiting_input);
	assert_int_equal(hs_session_close(&s, 0, NULL, 0), 0);
	hs_session_free(&s);
	hs_core_free(&core);
	close(never[0]);
	close(never[1]);
}

/* The backend's risk goes to the session opening on this thread. */
static void
test_backend_risk(void **state)
{
	char err[HS_ERR_MAX];
	struct hs_risk priv = { "docker.privileged", "the container is privileged", 0, 1 };
	struct hs_risk hard = { "x.hard", "never", 1, 0 };
	(void)state;
	core_up(NULL);
	struct hs_backend *be = hs_core_backend(&core, "local", err, sizeof(err));
	assert_non_null(be);
	/* No session opening: nobody to ask, ask mode refuses. */
	assert_int_equal(be->host.approve(be->host.ctx, "x", &priv, err), HS_E_DENIED);
	/* Through a session: its asker answers. */
	struct hs_gate g = { .session = "x", .backend = "local", .mode = HS_APPROVAL_ASK,
	                     .asker = &asker };
	struct hs_approval_out o;
	asked = 0;
	answer = HS_DECIDE_ONCE;
	assert_int_equal(hs_approval_risk(&core, &g, &priv, &o), 1);
	assert_int_equal(asked, 1);
	/* Approve mode alone never grants a critical risk. */
	g.mode = HS_APPROVAL_APPROVE;
	g.asker = NULL;
	assert_int_equal(hs_approval_risk(&core, &g, &priv, &o), 0);
	/* Hardline: never, and nobody is asked. */
	g.mode = HS_APPROVAL_ASK;
	g.asker = &asker;
	assert_int_equal(hs_approval_risk(&core, &g, &hard, &o), 0);
	assert_int_equal(asked, 1);
	assert_non_null(strstr(audit_text(), "docker.privileged"));
	hs_core_free(&core);
}

int
main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/hs-pipe.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	char p[128];
	const char *sub[] = { "state", "cache", "config", "run" };
	for (size_t i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, sub[i]);
		mkdir(p, 0700);
	}
	snprintf(p, sizeof(p), "%s/state", dir);
	setenv("XDG_STATE_HOME", p, 1);
	snprintf(p, sizeof(p), "%s/cache", dir);
	setenv("XDG_CACHE_HOME", p, 1);
	snprintf(p, sizeof(p), "%s/config", dir);
	setenv("XDG_CONFIG_HOME", p, 1);
	snprintf(p, sizeof(p), "%s/run", dir);
	setenv("XDG_RUNTIME_DIR", p, 1);
	unsetenv("HS_CONFIG");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_and_streams),
		cmocka_unit_test(test_waiting_input),
		cmocka_unit_test(test_denied_never_runs),
		cmocka_unit_test(test_audit_fails_closed),
		cmocka_unit_test(test_ask_and_session_grant),
		cmocka_unit_test(test_stdin_gate),
		cmocka_unit_test(test_mode_resolve),
		cmocka_unit_test(test_backend_risk),
		cmocka_unit_test(test_handoff),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		rc = rc ? rc : 1;
	return rc;
}
