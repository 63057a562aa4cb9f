/* SPDX-License-Identifier: MIT */
/*
 * dt-exec.c - the exec and cancel ops of the daytona backend.
 *
 * Each command becomes a small script uploaded through the toolbox file API
 * into the scratch dir (0700) inside the sandbox: it reads its stdin from an
 * uploaded file (or /dev/null), exports the command's environment, enters
 * the working directory and starts the argv under setsid, so the command
 * and its children form one process group whose id the script records.
 * Where the host's hs-runner fits the sandbox, it is uploaded once per
 * start (dt_place_runner) and the argv runs under `hs-runner --exec`
 * instead: the runner, a subreaper, keeps the deadline inside and kills
 * the whole tree, and its pid is the one recorded, so the remote kill
 * below also reaches children that left the group and were reparented.
 * Environment values thus never appear on any command line.  The script
 * runs asynchronously in a toolbox session (runAsync); the command and its
 * logs are then polled, so its output and exit code survive a dropped HTTP
 * connection (the toolbox keeps both).  At the deadline or on cancel a
 * second session kills the process group and every descendant remotely
 * (TERM, grace, KILL); a client-side deadline stands behind it when the
 * sandbox does not answer.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "dt.h"

/* How long polls may fail in a row before the command is given up (ms). */
#define DT_MAX_FAIL_MS 30000
/* Timeout of one poll, so a hung connection cannot hold the deadline back. */
#define DT_POLL_TIMEOUT_MS 5000
/* Output passed on while a command runs, at most (bytes). */
#define DT_STREAM_MAX (8u << 20)
/* How long to wait for the exit code after a remote kill. */
#define DT_KILL_WAIT_MS 12000

/* Append s single-quoted for sh. */
static void
dt_quote(struct dt_buf *b, const char *s)
{
	dt_buf_add(b, "'", 1);
	for (; *s; s++) {
		if (*s == '\'')
			dt_buf_add(b, "'\\''", 4);
		else
			dt_buf_add(b, s, 1);
	}
	dt_buf_add(b, "'", 1);
}

static int
dt_valid_name(const char *k, size_t n)
{
	if (n == 0 || (k[0] >= '0' && k[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(k[i] == '_' || (k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
		      (k[i] >= '0' && k[i] <= '9')))
			return 0;
	return 1;
}

/* The script for req; base is the scratch path prefix of this exec. */
static void
dt_script(struct dt_buf *b, const struct hs_exec_req *req, const char *base, const char *prev,
          const char *runner, int64_t grace_ms)
{
	char line[1024];
	if (prev[0]) {
		snprintf(line, sizeof(line), "rm -f '%s.out' '%s.rc'\n", prev, prev);
		dt_buf_add(b, line, strlen(line));
	}
	if (req->stdin_data) {
		snprintf(line, sizeof(line), "exec 0<'%s.in' || exit 126\n", base);
		dt_buf_add(b, line, strlen(line));
	} else {
		dt_buf_add(b, "exec 0</dev/null\n", 17);
	}
	snprintf(line, sizeof(line), "rm -f '%s.in' '%s.sh'\n", base, base);
	dt_buf_add(b, line, strlen(line));
	for (uint32_t i = 0; i < req->n_env && req->envp && req->envp[i]; i++) {
		const char *kv = req->envp[i], *eq = strchr(kv, '=');
		if (!eq || !dt_valid_name(kv, (size_t)(eq - kv)))
			continue;
		dt_buf_add(b, "export ", 7);
		dt_buf_add(b, kv, (size_t)(eq - kv) + 1);
		dt_quote(b, eq + 1);
		dt_buf_add(b, "\n", 1);
	}
	if (req->cwd && *req->cwd) {
		dt_buf_add(b, "cd ", 3);
		dt_quote(b, req->cwd);
		dt_buf_add(b, " || exit 126\n", 13);
	}
	/* stdout also goes to a file, fetched when the logs cannot carry it exactly. */
	if (runner[0]) {
		int n = snprintf(line, sizeof(line), "umask 077\n{ '%s' --exec --grace-ms %lld ", runner,
		                 (long long)grace_ms);
		if (req->deadline_ms > 0)
			n += snprintf(line + n, sizeof(line) - (size_t)n, "--deadline-ms %lld ",
			              (long long)req->deadline_ms);
		snprintf(line + n, sizeof(line) - (size_t)n, "-- sh -c 'echo $PPID >\"$0\"; exec \"$@\"' '%s.pid'",
		         base);
	} else {
		dt_buf_add(b, "S=; command -v setsid >/dev/null 2>&1 && S=setsid\n", 50);
		snprintf(line, sizeof(line), "umask 077\n{ $S sh -c 'echo $$ >\"$0\"; exec \"$@\"' '%s.pid'", base);
	}
	dt_buf_add(b, line, strlen(line));
	for (uint32_t i = 0; i < req->argc && req->argv[i]; i++) {
		dt_buf_add(b, " ", 1);
		dt_quote(b, req->argv[i]);
	}
	snprintf(line, sizeof(line),
	         "; echo $? >'%s.rc'; } | tee '%s.out'\nst=$(cat '%s.rc' 2>/dev/null)\nrm -f '%s.pid'\n"
	         "exit ${st:-255}\n",
	         base, base, base, base);
	dt_buf_add(b, line, strlen(line));
}

/* The length of the part of b that is surely the command's bytes: up to the first U+FFFD. */
static size_t
dt_faithful(const struct dt_buf *b)
{
	for (size_t i = 0; i + 2 < b->len; i++)
		if ((unsigned char)b->data[i] == 0xef && (unsigned char)b->data[i + 1] == 0xbf &&
		    (unsigned char)b->data[i + 2] == 0xbd)
			return i;
	return b->len;
}

/* Upload data to the scratch path; HS_OK or an error. */
static int32_t
dt_upload(struct dt_env *e, const char *path, const void *data, size_t len, char *err)
{
	struct dt_resp r = { 0 };
	int32_t s = dt_http_upload(e->http, e->sandbox, path, data, len, &r, err);
	if (s == HS_OK && r.status == 404)
		s = dt_check_lost(e, "a file upload", err);
	else if (s == HS_OK && (r.status < 200 || r.status > 299))
		s = dt_http_status(&r, "upload a file", err);
	dt_resp_free(&r);
	return s;
}

void
dt_place_runner(struct dt_env *e, const char *arch)
{
	const char *local = e->st->host->runner_path;
	struct utsname un;
	char path[300], cmd[700], err[HS_ERR_MAX] = "";
	struct dt_buf img = { 0 };
	int code = -1;
	int32_t s = HS_E_IO;

	e->runner[0] = '\0';
	if (!local || uname(&un) < 0 || strcmp(un.machine, arch) != 0)
		return; /* another architecture: the kill by ancestry alone */
	FILE *f = fopen(local, "re");
	if (!f) {
		snprintf(err, sizeof(err), "cannot read '%s': %s", local, strerror(errno));
		goto out;
	}
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		dt_buf_add(&img, buf, n);
	fclose(f);
	if (img.failed) {
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/hs-runner", e->conf.scratch);
	char up[320];
	snprintf(up, sizeof(up), "%s.up", path);
	if ((s = dt_upload(e, up, img.data, img.len, err)) != HS_OK)
		goto out;
	snprintf(cmd, sizeof(cmd), "chmod 700 '%s' && mv -f '%s' '%s'", up, up, path);
	s = dt_session_run(e, e->ctl_session, cmd, &code, NULL, 60000, err);
	if (s == HS_OK && code != 0) {
		snprintf(err, sizeof(err), "cannot make '%s' executable (exit %d)", path, code);
		s = HS_E_IO;
	}
	if (s == HS_OK)
		snprintf(e->runner, sizeof(e->runner), "%s", path);
out:
	dt_buf_free(&img);
	if (s != HS_OK)
		e->st->host->log(e->st->host->ctx, HS_LOG_WARN,
		                 "no one-shot runner in daytona sandbox %s (%s): a deadline or cancel kills "
		                 "by ancestry only", e->sandbox, err);
}

/* Fetch the logs and pass on what the sink has not seen yet. */
static int32_t
dt_pump_logs(struct dt_env *e, const char *cid, const struct hs_exec_req *req, size_t *sent_out,
             size_t *sent_err, int *exact, char *err)
{
	char path[512];
	struct dt_resp r = { 0 };
	struct dt_buf o = { 0 }, eb = { 0 };
	snprintf(path, sizeof(path), "/toolbox/%s/toolbox/process/session/%s/command/%s/logs", e->sandbox,
	         e->session, cid);
	int32_t s = dt_http_req(e->http, "GET", path, NULL, 60000, 3, &r, err);
	if (s == HS_OK && r.status == 404)
		s = dt_check_lost(e, "fetching command logs", err);
	else if (s == HS_OK && (r.status < 200 || r.status > 299))
		s = dt_http_status(&r, "fetch command logs", err);
	else if (s == HS_OK && dt_json_logs(r.body.data ? r.body.data : "", r.body.len, r.is_json, &o, &eb) < 0) {
		snprintf(err, HS_ERR_MAX, "daytona answered command logs with an unreadable body");
		s = HS_E_PROTOCOL;
	}
	if (s == HS_OK && (o.failed || eb.failed)) {
		snprintf(err, HS_ERR_MAX, "out of memory reading command logs");
		s = HS_E_NOMEM;
	}
	if (s == HS_OK) {
		int32_t w = 0;
		/*
		 * The logs are text: a byte that is not UTF-8 arrives as U+FFFD and
		 * a NUL cuts the JSON string short.  Only the part before either
		 * is passed on; the rest comes from the stdout file.
		 */
		size_t good = dt_faithful(&o);
		*exact = good == o.len && !(r.is_json && memmem(r.body.data, r.body.len, "\\u0000", 6));
		if (good > *sent_out) {
			w |= req->sink.write(req->sink.ctx, 1, o.data + *sent_out, good - *sent_out);
			*sent_out = good;
		}
		if (eb.len > *sent_err) {
			w |= req->sink.write(req->sink.ctx, 2, eb.data + *sent_err, eb.len - *sent_err);
			*sent_err = eb.len;
		}
		/* A sink that refuses more output asks for the command to be cancelled. */
		if (w != 0 && req->exec_id)
			__atomic_store_n(&e->cancel_id, req->exec_id, __ATOMIC_SEQ_CST);
	}
	dt_buf_free(&o);
	dt_buf_free(&eb);
	dt_resp_free(&r);
	return s;
}

/* Pass on the stdout file's bytes past *sent (the exact copy of the command's stdout). */
static int32_t
dt_fetch_stdout(struct dt_env *e, const char *base, const struct hs_exec_req *req, size_t *sent, char *err)
{
	char path[1536], file[512], enc[1024];
	struct dt_resp r = { 0 };
	snprintf(file, sizeof(file), "%s.out", base);
	dt_urlencode(file, enc, sizeof(enc));
	snprintf(path, sizeof(path), "/toolbox/%s/toolbox/files/download?path=%s", e->sandbox, enc);
	int32_t s = dt_http_req(e->http, "GET", path, NULL, 120000, 3, &r, err);
	if (s == HS_OK && (r.status < 200 || r.status > 299))
		s = dt_http_status(&r, "download the command's stdout", err);
	if (s == HS_OK && r.body.len > *sent) {
		req->sink.write(req->sink.ctx, 1, r.body.data + *sent, r.body.len - *sent);
		*sent = r.body.len;
	}
	dt_resp_free(&r);
	return s;
}

/*
 * The remote kill, run by sh in the control session with B (the exec's
 * scratch base) and G (grace, in tenths of a second) set before it.  It
 * waits up to 3 s for the command to record its group (a cancel can come
 * first), unless the command has already finished.  It then collects the
 * group leader's descendants from /proc by parent pid, so that one that
 * left the group (`setsid cmd &`) is caught too.  Each is recorded with
 * its start time, so a reused pid is never signalled.  The tree is
 * stopped, collected again (nothing forks away meanwhile), sent TERM and
 * continued; after the grace period whatever is left gets KILL.
 */
static const char dt_kill_script[] =
	"i=0; while [ ! -s \"$B.pid\" ] && [ ! -e \"$B.rc\" ] && [ $i -lt 30 ]; do sleep 0.1 2>/dev/null || sleep 1; i=$((i+1)); done\n"
	"p=$(cat \"$B.pid\" 2>/dev/null); case \"$p\" in ''|*[!0-9]*) exit 0;; esac\n"
	"d() { r=\" $p \"; a=; n=0; while [ $n != ${#r} ]; do n=${#r}; for f in /proc/[0-9]*/stat; do "
	"{ read -r l <\"$f\"; } 2>/dev/null || continue; q=${f#/proc/}; q=${q%/stat}; set -- ${l##*) }; "
	"case \"$r\" in *\" $q \"*) ;; *\" $2 \"*) r=\"$r$q \"; a=\"$a $q:${20}\";; esac; done; done; }\n"
	"k() { kill -s $1 -- -$p 2>/dev/null; for e in $a; do q=${e%:*}; { read -r l </proc/$q/stat; } 2>/dev/null || continue; "
	"set -- $1 ${l##*) }; [ \"${21}\" = \"${e#*:}\" ] && kill -s $1 $q 2>/dev/null; done; }\n"
	"live() { kill -s 0 -- -$p 2>/dev/null && return 0; for e in $a; do q=${e%:*}; { read -r l </proc/$q/stat; } 2>/dev/null || continue; "
	"set -- ${l##*) }; [ \"$1\" != Z ] && [ \"${20}\" = \"${e#*:}\" ] && return 0; done; return 1; }\n"
	"d; k STOP; d; k STOP; k TERM; k CONT\n"
	"i=0; while [ $i -lt $G ] && live; do sleep 0.1 2>/dev/null || sleep 1; i=$((i+1)); done\n"
	"k KILL; true\n";

/* Kill the command's process tree from the control session; best effort. */
static void
dt_remote_kill(struct dt_env *e, const char *base)
{
	char cmd[sizeof(dt_kill_script) + 512], err[HS_ERR_MAX];
	int code;
	snprintf(cmd, sizeof(cmd), "B='%s'; G=%d\n%s", base, (int)e->conf.grace_s * 10, dt_kill_script);
	if (dt_session_run(e, e->ctl_session, cmd, &code, NULL, 30000 + e->conf.grace_s * 1000, err) != HS_OK)
		e->st->host->log(e->st->host->ctx, HS_LOG_WARN, "remote kill in sandbox %s failed: %s", e->sandbox, err);
}

int32_t
dt_exec(void *envp, const struct hs_exec_req *req, struct hs_exec_result *res, char *err)
{
	struct dt_env *e = envp;
	char base[384], path[512], cid[128];
	struct dt_buf script = { 0 };
	struct dt_resp r = { 0 };
	size_t sent_out = 0, sent_err = 0;
	int has_exit = 0, code = -1, fails = 0, exact = 1, stream_ok = 1;
	uint64_t fail_since = 0;
	int32_t s;

	memset(res, 0, sizeof(*res));
	if (!req->argv || req->argc == 0 || !req->argv[0]) {
		snprintf(err, HS_ERR_MAX, "exec needs an argv");
		return HS_E_INVALID;
	}
	uint64_t start = dt_now(e);
	e->seq++;
	__atomic_store_n(&e->running_id, req->exec_id, __ATOMIC_SEQ_CST);
	snprintf(base, sizeof(base), "%s/x%ld-%llu", e->conf.scratch, (long)getpid(), (unsigned long long)e->seq);

	dt_script(&script, req, base, e->prev_base, e->runner, e->conf.grace_s * 1000);
	if (script.failed) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		s = HS_E_NOMEM;
		goto out;
	}
	for (int attempt = 0;; attempt++) {
		s = HS_OK;
		if (req->stdin_data) {
			snprintf(path, sizeof(path), "%s.in", base);
			s = dt_upload(e, path, req->stdin_data, (size_t)req->stdin_len, err);
		}
		snprintf(path, sizeof(path), "%s.sh", base);
		if (s == HS_OK)
			s = dt_upload(e, path, script.data, script.len, err);
		if (s == HS_OK || attempt > 0 || s == HS_E_AUTH || s == HS_E_NOMEM)
			break;
		/* Daytona may have stopped an idle sandbox (auto-stop): start it again, once. */
		char rerr[HS_ERR_MAX];
		int32_t rs = dt_revive(e, rerr);
		if (rs == HS_E_BUSY)
			break;
		if (rs != HS_OK) {
			snprintf(err, HS_ERR_MAX, "%s", rerr);
			s = rs;
			break;
		}
	}
	if (s != HS_OK)
		goto out;
	snprintf(e->prev_base, sizeof(e->prev_base), "%s", base);

	/* The session command itself is short and holds no values. */
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "sh '%s.sh'", base);
	char *body = dt_json_body("s", "command", cmd, "b", "runAsync", 1, "b", "async", 1, NULL);
	if (!body) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		s = HS_E_NOMEM;
		goto out;
	}
	snprintf(path, sizeof(path), "/toolbox/%s/toolbox/process/session/%s/exec", e->sandbox, e->session);
	s = dt_http_req(e->http, "POST", path, body, 60000, 0, &r, err);
	free(body);
	if (s == HS_OK && r.status == 404)
		s = dt_check_lost(e, "starting a command", err);
	else if (s == HS_OK && (r.status < 200 || r.status > 299))
		s = dt_http_status(&r, "start a command", err);
	else if (s == HS_OK && dt_json_exec(r.body.data, r.body.len, cid, sizeof(cid), &has_exit, &code) < 0) {
		snprintf(err, HS_ERR_MAX, "daytona answered the command start without a command id");
		s = HS_E_PROTOCOL;
	}
	dt_resp_free(&r);
	if (s != HS_OK)
		goto out;

	/* Poll the command until it has an exit code. */
	long iv = 5;
	uint64_t last_logs = dt_now(e), kill_at = 0;
	snprintf(path, sizeof(path), "/toolbox/%s/toolbox/process/session/%s/command/%s", e->sandbox, e->session,
	         cid);
	while (!has_exit) {
		uint64_t now = dt_now(e);
		int cancel = __atomic_load_n(&e->cancel_id, __ATOMIC_SEQ_CST) == req->exec_id && req->exec_id;
		if (!kill_at && (cancel || (req->deadline_ms > 0 && (int64_t)(now - start) >= req->deadline_ms))) {
			if (cancel)
				res->cancelled = 1;
			else
				res->timed_out = 1;
			dt_remote_kill(e, base);
			kill_at = dt_now(e);
		}
		if (kill_at && dt_now(e) - kill_at > DT_KILL_WAIT_MS) {
			/* The client-side deadline: the sandbox did not report an exit in time. */
			e->st->host->log(e->st->host->ctx, HS_LOG_WARN,
			                 "command %s in sandbox %s reported no exit after the kill", cid, e->sandbox);
			break;
		}
		char perr[HS_ERR_MAX];
		s = dt_http_req(e->http, "GET", path, NULL, DT_POLL_TIMEOUT_MS, 0, &r, perr);
		if (s == HS_OK && r.status == 404) {
			dt_resp_free(&r);
			s = dt_check_lost(e, "polling a command", err);
			goto out;
		} else if (s == HS_OK && (r.status < 200 || r.status > 299)) {
			s = dt_http_status(&r, "poll a command", err);
			dt_resp_free(&r);
			if (s == HS_E_AUTH || s == HS_E_PERM)
				goto out;
			if (fails++ == 0)
				fail_since = dt_now(e);
		} else if (s == HS_OK) {
			if (dt_json_command(r.body.data, r.body.len, &has_exit, &code) < 0) {
				snprintf(err, HS_ERR_MAX, "daytona answered a command poll with an unreadable body");
				dt_resp_free(&r);
				s = HS_E_PROTOCOL;
				goto out;
			}
			dt_resp_free(&r);
			fails = 0;
		} else {
			/* A dropped connection: the command and its logs live on in the sandbox. */
			dt_resp_free(&r);
			if (fails++ == 0) {
				fail_since = dt_now(e);
				snprintf(err, HS_ERR_MAX, "%s", perr);
			}
		}
		if (fails > 0 && dt_now(e) - fail_since > DT_MAX_FAIL_MS) {
			if (!err[0])
				snprintf(err, HS_ERR_MAX, "daytona stopped answering while a command ran");
			s = HS_E_IO;
			if (!kill_at)
				dt_remote_kill(e, base);
			goto out;
		}
		if (has_exit)
			break;
		if (fails == 0 && req->sink.write && stream_ok && dt_now(e) - last_logs >= 1000) {
			char lerr[HS_ERR_MAX];
			dt_pump_logs(e, cid, req, &sent_out, &sent_err, &exact, lerr);
			/* The logs come whole each time: past a few MiB, wait for the end. */
			if (sent_out + sent_err > DT_STREAM_MAX)
				stream_ok = 0;
			last_logs = dt_now(e);
		}
		/* Sleep in short steps so a cancel is seen quickly. */
		long left = iv;
		while (left > 0 && __atomic_load_n(&e->cancel_id, __ATOMIC_SEQ_CST) != req->exec_id) {
			long step = left < 20 ? left : 20;
			if (req->deadline_ms > 0 && !kill_at) {
				int64_t rem = req->deadline_ms - (int64_t)(dt_now(e) - start);
				if (rem <= 0)
					break;
				if (rem < step)
					step = (long)rem;
			}
			dt_sleep_ms(step);
			left -= step;
		}
		if (iv < e->conf.poll_ms)
			iv = iv * 2 > e->conf.poll_ms ? e->conf.poll_ms : iv * 2;
	}
	err[0] = '\0';
	s = dt_pump_logs(e, cid, req, &sent_out, &sent_err, &exact, err);
	if (s == HS_E_IO || s == HS_E_PROTOCOL || s == HS_E_NOMEM) {
		/* Logs too large or unreadable: stdout still comes exact from its file. */
		e->st->host->log(e->st->host->ctx, HS_LOG_WARN, "command logs unusable (%s); fetching stdout only", err);
		err[0] = '\0';
		exact = 0;
		s = HS_OK;
	}
	if (s == HS_OK && !exact)
		s = dt_fetch_stdout(e, base, req, &sent_out, err);
	if (s != HS_OK && (res->timed_out || res->cancelled)) {
		err[0] = '\0';
		s = HS_OK; /* the output so far is what could be kept */
	}
	if (s == HS_OK) {
		if (res->timed_out)
			res->exit_code = 124;
		else if (res->cancelled)
			res->exit_code = has_exit && code > 128 ? code : 137;
		else
			res->exit_code = code < 0 ? 255 : code > 255 ? code & 255 : code;
	}
out:
	dt_buf_free(&script);
	__atomic_store_n(&e->running_id, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&e->cancel_id, 0, __ATOMIC_SEQ_CST);
	return s;
}

int32_t
dt_cancel(void *envp, uint64_t exec_id)
{
	struct dt_env *e = envp;
	if (!e || !exec_id || __atomic_load_n(&e->running_id, __ATOMIC_SEQ_CST) != exec_id)
		return HS_E_NOTFOUND;
	__atomic_store_n(&e->cancel_id, exec_id, __ATOMIC_SEQ_CST);
	return HS_OK;
}
