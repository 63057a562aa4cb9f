/* SPDX-License-Identifier: MIT */
/*
 * exec-direct.c - running a session's commands through the backend's own
 * exec, for environments that cannot host the runner (cloud sandboxes, a
 * remote host of another architecture).
 *
 * Each command is one exec of SHELL -c FILE_WRAPPER (see shell.h), which
 * keeps the session's shell state in a snapshot file inside the sandbox.
 * Stdin is taken whole before the command starts (bounded); output goes
 * through the same redaction and sink as on the runner path.  A watcher
 * thread turns a cancel request, or a deadline the backend failed to keep,
 * into the backend's cancel().  Files travel through exec of sh and cat.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/env.h"
#include "core/exec.h"
#include "core/safety/redact.h"
#include "core/shell.h"

#define HS_DIRECT_STDIN_MAX (16u * 1024u * 1024u)
#define HS_DIRECT_SLACK_MS 5000 /* past deadline + grace: the core cancels */

struct direct {
	struct hs_conn *cn;
	const struct hs_sink_ops *sink;
	struct hs_redactor *red[3];
	uint64_t id;
	int64_t start, deadline_ms, grace_ms;
	uint64_t total[3];
	/* watcher */
	pthread_mutex_t lock;
	int done, cancel_sent, cancel_taken, sink_failed, deadline_fired;
	int wake[2];
	/* capture mode (files): collect stdout and stderr instead of a sink */
	char *buf[3];
	size_t len[3], max;
	int overflow;
};

/*
 * Ask the backend to stop the command.  A backend that has not yet
 * registered the exec (the cancel came first) answers HS_E_NOTFOUND; the
 * watcher then asks again until the backend takes it or the exec returns.
 */
static void
send_cancel(struct direct *d)
{
	pthread_mutex_lock(&d->lock);
	int send = !d->cancel_taken && !d->done;
	d->cancel_sent = 1;
	pthread_mutex_unlock(&d->lock);
	if (!send)
		return;
	/* A plugin without cancel cannot be asked again: nothing is left pending. */
	int32_t (*cancel)(void *, uint64_t) = d->cn->be->plugin.desc.cancel;
	if (!cancel || cancel(d->cn->env, d->id) != HS_E_NOTFOUND) {
		pthread_mutex_lock(&d->lock);
		d->cancel_taken = 1;
		pthread_mutex_unlock(&d->lock);
	}
}

static void *
watcher(void *arg)
{
	struct direct *d = arg;
	for (;;) {
		struct pollfd pf[2];
		nfds_t n = 0;
		pf[n++] = (struct pollfd){ d->wake[0], POLLIN, 0 };
		if (d->sink && d->sink->cancel_fd >= 0)
			pf[n++] = (struct pollfd){ d->sink->cancel_fd, POLLIN, 0 };
		pthread_mutex_lock(&d->lock);
		int pending = d->cancel_sent && !d->cancel_taken;
		pthread_mutex_unlock(&d->lock);
		if (poll(pf, n, pending ? 20 : 500) < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&d->lock);
		int done = d->done;
		pending = d->cancel_sent && !d->cancel_taken;
		pthread_mutex_unlock(&d->lock);
		if (done)
			break;
		if (pending || (d->sink && d->sink->cancelled && d->sink->cancelled(d->sink->ctx)))
			send_cancel(d);
		/* The backend must stop the command at its deadline; the core backs it up. */
		if (d->deadline_ms > 0 && !d->deadline_fired &&
		    hs_now_ms() - d->start > d->deadline_ms + d->grace_ms + HS_DIRECT_SLACK_MS) {
			hs_warn("backend '%s' did not stop a command at its deadline; cancelling it",
			        d->cn->be->plugin.name);
			d->deadline_fired = 1;
			send_cancel(d);
		}
	}
	return NULL;
}

/* hs_sink.write for the backend: may be called from any of its threads, in order. */
static int32_t
sink_write(void *ctx, int32_t stream, const void *data, uint64_t len)
{
	struct direct *d = ctx;
	if (stream < 1 || stream > 2)
		return 0;
	d->total[stream] += len;
	if (!d->sink) { /* capture mode */
		if (d->len[stream] + len > d->max) {
			d->overflow = 1;
			return -1;
		}
		char *nb = realloc(d->buf[stream], d->len[stream] + len + 1);
		if (!nb) {
			d->overflow = 1;
			return -1;
		}
		memcpy(nb + d->len[stream], data, len);
		d->buf[stream] = nb;
		d->len[stream] += len;
		nb[d->len[stream]] = '\0';
		return 0;
	}
	int failed;
	if (d->red[stream]) {
		struct hs_redact_sink rc = { d->sink, stream, 0 };
		failed = hs_redact_feed(d->red[stream], data, (size_t)len, hs_redact_sink_emit, &rc) < 0 || rc.failed;
	} else {
		failed = d->sink->output(d->sink->ctx, stream, data, (size_t)len) < 0;
	}
	if (failed) {
		d->sink_failed = 1;
		send_cancel(d);
		return -1;
	}
	return 0;
}

/* Take all of stdin (the backend's exec takes it as one buffer). */
static int
read_stdin(const struct hs_sink_ops *sink, char **bufp, size_t *lenp, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len + 65536 > cap) {
			size_t nc = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, nc);
			if (!nb) {
				free(buf);
				snprintf(err, errlen, "out of memory reading stdin");
				return -1;
			}
			buf = nb;
			cap = nc;
		}
		long n = sink->input(sink->ctx, buf + len, cap - len);
		if (n == 0)
			break;
		if (n < 0) {
			struct pollfd pf = { sink->input_fd, POLLIN, 0 };
			poll(&pf, 1, 1000);
			continue;
		}
		len += (size_t)n;
		if (len > HS_DIRECT_STDIN_MAX) {
			free(buf);
			snprintf(err, errlen,
			         "stdin is larger than %u MiB, the most backend exec takes in one piece",
			         HS_DIRECT_STDIN_MAX >> 20);
			return -1;
		}
	}
	*bufp = buf;
	*lenp = len;
	return 0;
}

/* One exec through the backend, with the watcher running beside it. */
static int
run(struct direct *d, const char *const *argv, uint32_t argc, char *const *envp,
    const char *cwd, const void *in, size_t in_len, struct hs_exec_result *res, char *err,
    size_t errlen)
{
	struct hs_conn *cn = d->cn;
	char e[HS_ERR_MAX] = "";
	pthread_t th;
	size_t n_env = 0;

	while (envp && envp[n_env])
		n_env++;
	pthread_mutex_lock(&cn->lock);
	d->id = ++cn->next_id;
	pthread_mutex_unlock(&cn->lock);
	pthread_mutex_init(&d->lock, NULL);
	if (pipe2(d->wake, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		pthread_mutex_destroy(&d->lock);
		return -1;
	}
	d->start = hs_now_ms();
	int watching = pthread_create(&th, NULL, watcher, d) == 0;
	struct hs_exec_req req = {
		.struct_size = sizeof(req),
		.argc = argc,
		.exec_id = d->id,
		.argv = argv,
		.envp = (const char *const *)envp,
		.n_env = (uint32_t)n_env,
		.cwd = cwd,
		.stdin_data = in,
		.stdin_len = in_len,
		.deadline_ms = d->deadline_ms,
		.sink = { d, sink_write },
	};
	memset(res, 0, sizeof(*res));
	int32_t st = cn->be->plugin.desc.exec(cn->env, &req, res, e);
	pthread_mutex_lock(&d->lock);
	d->done = 1;
	pthread_mutex_unlock(&d->lock);
	if (write(d->wake[1], "x", 1) < 0) {
		/* the watcher also wakes on its own within 500 ms */
	}
	if (watching)
		pthread_join(th, NULL);
	close(d->wake[0]);
	close(d->wake[1]);
	pthread_mutex_destroy(&d->lock);
	if (st != HS_OK) {
		snprintf(err, errlen, "backend '%s': %s", cn->be->plugin.name, e[0] ? e : hs_strerror(st));
		return -1;
	}
	if (d->deadline_fired) { /* the core stopped it at its deadline: a timeout */
		res->timed_out = 1;
		res->cancelled = 0;
	} else if (d->cancel_sent && !res->timed_out && !d->sink_failed) {
		res->cancelled = 1;
	}
	return 0;
}

/*
 * A name the wrapper may be given: an identifier (it expands the names
 * through eval) and none of its own __hs_* variables.
 */
static int
wrapper_name(const char *s, size_t len)
{
	return hs_env_valid_name(s, len) && !(len >= 5 && memcmp(s, "__hs_", 5) == 0);
}

/*
 * SHELL -c FILE_WRAPPER hs SNAPSHOT CWD COMMAND KEEP NAME...: the names of
 * the variables the exec sets for this command (the per-command ones: -e,
 * serve's env, the pass-through), so the wrapper keeps them out of the
 * session's snapshot.  The strings are o's and cn's; free() the array.
 */
static const char **
wrapper_argv(struct hs_conn *cn, const struct hs_exec_opts *o, uint32_t *argc)
{
	size_t n_env = 0;
	while (o->envp && o->envp[n_env])
		n_env++;
	/* The names live in one block after the array, freed with it. */
	size_t bytes = 0;
	for (size_t i = 0; i < n_env; i++) {
		const char *eq = strchr(o->envp[i], '=');
		if (eq && wrapper_name(o->envp[i], (size_t)(eq - o->envp[i])))
			bytes += (size_t)(eq - o->envp[i]) + 1;
	}
	const char **argv = malloc((8 + n_env + 1) * sizeof(*argv) + bytes);
	if (!argv)
		return NULL;
	uint32_t n = 0;
	argv[n++] = cn->props.shell;
	argv[n++] = "-c";
	argv[n++] = hs_shell_file_wrapper(cn->props.shell);
	argv[n++] = "hs";
	argv[n++] = cn->snapshot;
	argv[n++] = o->cwd ? o->cwd : "";
	argv[n++] = o->command;
	argv[n++] = o->keep_state ? "1" : "0";
	char *w = (char *)(argv + 8 + n_env + 1);
	for (size_t i = 0; i < n_env; i++) {
		const char *eq = strchr(o->envp[i], '=');
		size_t len = eq ? (size_t)(eq - o->envp[i]) : 0;
		if (!eq || !wrapper_name(o->envp[i], len))
			continue;
		memcpy(w, o->envp[i], len);
		w[len] = '\0';
		argv[n++] = w;
		w += len + 1;
	}
	argv[n] = NULL;
	*argc = n;
	return argv;
}

int
hs_conn_exec_direct(struct hs_conn *cn, const struct hs_exec_opts *o,
                    const struct hs_sink_ops *sink, struct hs_exec_out *out, char *err,
                    size_t errlen)
{
	struct direct d = { .cn = cn, .sink = sink, .deadline_ms = o->deadline_ms,
	                    .grace_ms = o->grace_ms >= 0 ? o->grace_ms : 2000 };
	struct hs_exec_result res;
	const char **argv = NULL;
	uint32_t argc = 0;
	char *in = NULL;
	size_t in_len = 0;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (o->stdin_pipe && sink && sink->input && sink->input_fd >= 0 &&
	    read_stdin(sink, &in, &in_len, err, errlen) < 0)
		return -1;
	/* The whole stdin is judged, in pieces as the runner path sends it, then
	 * its end, before the command starts: refused, it does not run. */
	if (o->stdin_gate && in) {
		int ok = 1;
		for (size_t at = 0; ok && at < in_len; at += 65536)
			ok = o->stdin_gate(o->stdin_gate_ctx, in + at, in_len - at < 65536 ? in_len - at : 65536,
			                   out->stdin_refused, sizeof(out->stdin_refused));
		if (ok)
			ok = o->stdin_gate(o->stdin_gate_ctx, NULL, 0, out->stdin_refused,
			                   sizeof(out->stdin_refused));
		if (!ok) {
			free(in);
			out->cancelled = 1;
			out->exit_code = 128 + 15;
			return 0;
		}
	}
	if (o->n_secrets && sink)
		for (int i = 1; i <= 2; i++)
			if (hs_redactor_new(&d.red[i], (const char *const *)o->secrets, o->n_secrets) < 0) {
				snprintf(err, errlen, "out of memory");
				goto out;
			}
	argv = wrapper_argv(cn, o, &argc);
	if (!argv) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	int64_t start = hs_now_ms();
	if (run(&d, argv, argc, o->envp, o->start_dir, in, in_len, &res, err, errlen) < 0)
		goto out;
	for (int s = 1; sink && s <= 2; s++) {
		struct hs_redact_sink rcx = { sink, s, 0 };
		if (d.red[s])
			hs_redact_flush(d.red[s], hs_redact_sink_emit, &rcx);
	}
	out->exit_code = res.timed_out ? 124 : res.exit_code;
	out->timed_out = res.timed_out;
	out->cancelled = res.cancelled;
	out->total[1] = d.total[1];
	out->total[2] = d.total[2];
	out->duration_ms = hs_now_ms() - start;
	rc = 0;
out:
	for (int i = 1; i <= 2; i++)
		hs_redactor_free(d.red[i]);
	free(argv);
	free(in);
	return rc;
}

/* Run a small sh script (files), capturing its output up to max bytes. */
static int
run_capture(struct hs_conn *cn, const char *script, const char *const *args, size_t n_args,
            const void *in, size_t in_len, size_t max, struct direct *d,
            struct hs_exec_result *res, char *err, size_t errlen)
{
	const char *argv[8] = { "/bin/sh", "-c", script, "hs" };
	uint32_t argc = 4;
	for (size_t i = 0; i < n_args && argc < 7; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	memset(d, 0, sizeof(*d));
	d->cn = cn;
	d->max = max;
	d->deadline_ms = 120000;
	d->grace_ms = 2000;
	return run(d, argv, argc, NULL, NULL, in, in_len, res, err, errlen);
}

static void
first_line(const char *s, char *out, size_t outlen)
{
	size_t n = s ? strcspn(s, "\n") : 0;
	snprintf(out, outlen, "%.*s", (int)(n < 300 ? n : 300), s ? s : "");
}

int
hs_conn_put_direct(struct hs_conn *cn, const char *path, uint32_t mode, const void *buf,
                   size_t len, char *err, size_t errlen)
{
	/* Written to a temporary name next to the target, then renamed: never half a file. */
	static const char script[] =
		"umask 077; t=\"$1.hs-put.$$\"; d=$(dirname -- \"$1\") && mkdir -p -- \"$d\" &&"
		" cat > \"$t\" && chmod \"$2\" \"$t\" && mv -f -- \"$t\" \"$1\" ||"
		" { rc=$?; rm -f -- \"$t\"; exit $rc; }";
	char m[16];
	struct direct d;
	struct hs_exec_result res;
	snprintf(m, sizeof(m), "%o", (unsigned)(mode & 07777));
	const char *args[] = { path, m };
	int rc = run_capture(cn, script, args, 2, buf, len, 64 * 1024, &d, &res, err, errlen);
	if (rc == 0 && (res.exit_code != 0 || res.timed_out)) {
		char line[320];
		first_line(d.buf[2], line, sizeof(line));
		snprintf(err, errlen, "cannot write '%s': %s", path,
		         line[0] ? line : res.timed_out ? "timed out" : "the copy failed");
		rc = -1;
	}
	for (int i = 0; i < 3; i++)
		free(d.buf[i]);
	return rc;
}

int
hs_conn_get_direct(struct hs_conn *cn, const char *path, size_t max, void **bufp, size_t *lenp,
                   char *err, size_t errlen)
{
	static const char script[] = "exec cat -- \"$1\"";
	struct direct d;
	struct hs_exec_result res;
	const char *args[] = { path };
	int rc = run_capture(cn, script, args, 1, NULL, 0, max, &d, &res, err, errlen);
	if (rc == 0 && d.overflow) {
		snprintf(err, errlen, "'%s' is larger than %zu bytes", path, max);
		rc = -1;
	} else if (rc == 0 && (res.exit_code != 0 || res.timed_out)) {
		char line[320];
		first_line(d.buf[2], line, sizeof(line));
		snprintf(err, errlen, "cannot read '%s': %s", path, line[0] ? line : "the copy failed");
		rc = -1;
	}
	if (rc == 0) {
		if (!d.buf[1])
			d.buf[1] = calloc(1, 1);
		if (!d.buf[1]) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
		} else {
			*bufp = d.buf[1];
			*lenp = d.len[1];
			d.buf[1] = NULL;
		}
	}
	for (int i = 0; i < 3; i++)
		free(d.buf[i]);
	return rc;
}
