/* SPDX-License-Identifier: MIT */
/*
 * ssh-exec.c - the exec and cancel ops: exec per channel, the ssh
 * backend's mode without a runner (ssh.runner = false, no local hs-runner,
 * or a remote of another architecture).  Each command is one channel
 * running `sh -c` with a prelude that reads the environment from stdin and
 * reports the process group of the channel's process.
 *
 * Where the runner fits the host (ssh.runner = false on a host of this
 * architecture), that process is the uploaded `hs-runner --exec`
 * (hs-runner(7)): it keeps the deadline on the host and kills the
 * command's whole tree, setsid children included; a cancel is a TERM to
 * it over a second channel.  Otherwise (another architecture) the
 * fallback is the remote `timeout` and, for a cancel, TERM to the group
 * then KILL 2 s later, which a child that left the group escapes.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sx.h"

struct sx_exec_job {
	const char *cmd;
	int fd, errfd;           /* out: our ends */
	struct sx_stream *sm;
	int exited, code;        /* for the finish job */
};

static int32_t
sx_job_exec_start(struct sx_env *env, void *arg, char *err)
{
	struct sx_exec_job *j = arg;
	int sv[2], ep[2];
	int32_t rc;
	for (int attempt = 0; attempt < 2; attempt++) {
		if ((rc = sx_ensure(env, err)) != HS_OK)
			return rc;
		rc = sx_open_channel(env, j->cmd, &j->sm, err);
		if (rc == HS_E_IO) {
			sx_drop(env, 0);
			continue;
		}
		break;
	}
	if (rc != HS_OK)
		return rc;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot create a socket pair: %s", strerror(errno));
		sx_stream_free(env, j->sm);
		return HS_E_IO;
	}
	if (pipe2(ep, O_CLOEXEC) < 0) {
		close(sv[0]);
		close(sv[1]);
		snprintf(err, HS_ERR_MAX, "cannot create a pipe: %s", strerror(errno));
		sx_stream_free(env, j->sm);
		return HS_E_IO;
	}
	fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
	fcntl(ep[1], F_SETFL, fcntl(ep[1], F_GETFL) | O_NONBLOCK);
	j->sm->fd = sv[0];
	j->sm->errfd = ep[1];
	j->sm->is_exec = 1;
	j->fd = sv[1];
	j->errfd = ep[0];
	return HS_OK;
}

static int32_t
sx_job_exec_finish(struct sx_env *env, void *arg, char *err)
{
	struct sx_exec_job *j = arg;
	(void)err;
	j->exited = j->sm->exited;
	j->code = j->sm->exit_code;
	if (j->sm->used && j->sm->ch && env->s)
		libssh2_channel_free(j->sm->ch);
	j->sm->ch = NULL;
	sx_stream_free(env, j->sm);
	return HS_OK;
}

/* The remote side of exec: env lines ("K=V", one per line, an empty line
 * ends them) come on stdin ahead of the command's own input, so no value
 * is ever on the remote command line. */
#define SX_EXEC_PRELUDE                                                                      \
	"echo \"hs-pgid %s\" >&2; "                                                              \
	"while IFS= read -r hs_l && [ -n \"$hs_l\" ]; do export \"$hs_l\"; done; unset hs_l; " \
	"exec \"$@\""

#define SX_GRACE_MS 2000 /* the one-shot runner's TERM-to-KILL time */

struct sx_kill_job {
	long pgid;
	int oneshot;
};

/* TERM the command's process group on the host, KILL it 2 s later; with
 * the one-shot runner (alone in that group) only TERM: it kills the tree
 * itself, and a KILL would cut that short. */
static int32_t
sx_job_kill(struct sx_env *env, void *arg, char *err)
{
	struct sx_kill_job *k = arg;
	char cmd[256], out[64];
	int code = 0;
	int32_t rc = sx_ensure(env, err);
	if (rc != HS_OK)
		return rc;
	if (k->oneshot)
		snprintf(cmd, sizeof(cmd), "kill -TERM -- -%ld 2>/dev/null", k->pgid);
	else
		snprintf(cmd, sizeof(cmd),
		         "kill -TERM -- -%ld 2>/dev/null; (sleep 2; kill -KILL -- -%ld) >/dev/null 2>&1 </dev/null &",
		         k->pgid, k->pgid);
	return sx_run(env, cmd, out, sizeof(out), &code, err);
}

int32_t
sx_exec(void *envp, const struct hs_exec_req *req, struct hs_exec_result *res, char *err)
{
	struct sx_env *env = envp;
	size_t cap = 65536, len = 0;
	char *cmd = malloc(cap), q[8192];
	int32_t rc;

	if (!cmd) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	memset(res, 0, sizeof(*res));
	/* sshd makes the session's process a group leader: that group is what a
	 * cancel kills.  With a deadline, the remote `timeout` (when present)
	 * kills it there even if this connection is gone. */
	int oneshot = env->oneshot_ok && env->rrunner[0];
	int remote_timeout = !oneshot && req->deadline_ms > 0 && strcmp(env->rtimeout, "yes") == 0;
	len += (size_t)snprintf(cmd, cap, "exec ");
	if (oneshot) {
		char qr[2100];
		if (sx_quote(qr, sizeof(qr), env->rrunner) < 0) {
			free(cmd);
			snprintf(err, HS_ERR_MAX, "runner path too long");
			return HS_E_INVALID;
		}
		len += (size_t)snprintf(cmd + len, cap - len, "%s --exec --grace-ms %d ", qr, SX_GRACE_MS);
		if (req->deadline_ms > 0)
			len += (size_t)snprintf(cmd + len, cap - len, "--deadline-ms %lld ",
			                        (long long)req->deadline_ms);
		len += (size_t)snprintf(cmd + len, cap - len, "-- ");
	} else if (remote_timeout)
		len += (size_t)snprintf(cmd + len, cap - len, "timeout -k 2 %lld.%03lld ",
		                        (long long)(req->deadline_ms / 1000),
		                        (long long)(req->deadline_ms % 1000));
	len += (size_t)snprintf(cmd + len, cap - len, "sh -c '" SX_EXEC_PRELUDE "' hs",
	                        remote_timeout || oneshot ? "$PPID" : "$$");
	if (req->cwd && *req->cwd) {
		/* cd first, through the same prelude: cwd is a path, not a secret */
		char qc[4200];
		if (sx_quote(qc, sizeof(qc), req->cwd) < 0) {
			free(cmd);
			snprintf(err, HS_ERR_MAX, "working directory too long");
			return HS_E_INVALID;
		}
		len += (size_t)snprintf(cmd + len, cap - len, " sh -c 'cd \"$1\" && shift && exec \"$@\"' hs %s",
		                        qc);
	}
	for (uint32_t i = 0; i < req->argc; i++) {
		int n = sx_quote(q, sizeof(q), req->argv[i]);
		if (n < 0 || len + (size_t)n + 2 >= cap) {
			free(cmd);
			snprintf(err, HS_ERR_MAX, "command too long for one ssh channel");
			return HS_E_INVALID;
		}
		cmd[len++] = ' ';
		memcpy(cmd + len, q, (size_t)n + 1);
		len += (size_t)n;
	}
	for (uint32_t i = 0; i < req->n_env; i++)
		if (strchr(req->envp[i], '\n') || !strchr(req->envp[i], '=')) {
			free(cmd);
			snprintf(err, HS_ERR_MAX, "environment entry %u has no '=' or contains a newline", i);
			return HS_E_INVALID;
		}
	struct sx_exec_job j = { .cmd = cmd, .fd = -1, .errfd = -1 };
	rc = sx_call(env, sx_job_exec_start, &j, err);
	free(cmd);
	if (rc != HS_OK)
		return rc;
	pthread_mutex_lock(&env->cmu);
	env->cur_exec = req->exec_id;
	int cp[2] = { -1, -1 };
	if (pipe2(cp, O_CLOEXEC | O_NONBLOCK) == 0) {
		env->cancel_fd = cp[1];
		/* a cancel that came while the channel was opening */
		if (env->early_cancel && env->early_cancel_id == req->exec_id &&
		    write(cp[1], "c", 1) < 0) {
			/* the pipe is empty; cannot fail */
		}
	}
	env->early_cancel = 0;
	pthread_mutex_unlock(&env->cmu);

	/* stdin: env lines, an empty line, then the data; written as the channel takes it */
	size_t elen = 1;
	for (uint32_t i = 0; i < req->n_env; i++)
		elen += strlen(req->envp[i]) + 1;
	char *pre = malloc(elen + (size_t)req->stdin_len);
	size_t pl = 0, poff = 0;
	if (pre) {
		for (uint32_t i = 0; i < req->n_env; i++) {
			size_t l = strlen(req->envp[i]);
			memcpy(pre + pl, req->envp[i], l);
			pl += l;
			pre[pl++] = '\n';
		}
		pre[pl++] = '\n';
		if (req->stdin_data && req->stdin_len)
			memcpy(pre + pl, req->stdin_data, (size_t)req->stdin_len);
		pl += (size_t)req->stdin_len;
	}
	int out_open = 1, err_open = 1, in_open = 1;
	uint64_t start = sx_now(), kill_at = 0;
	int killed = 0, kill_sent = 0;
	long pgid = 0;
	char head[64];
	size_t headlen = 0;
	while (out_open || err_open) {
		struct pollfd pf[3];
		int np = 0;
		pf[np++] = (struct pollfd){ out_open ? j.fd : -1,
		                            (short)(POLLIN | (in_open ? POLLOUT : 0)), 0 };
		pf[np++] = (struct pollfd){ err_open ? j.errfd : -1, POLLIN, 0 };
		pf[np++] = (struct pollfd){ killed ? -1 : cp[0], POLLIN, 0 };
		poll(pf, (nfds_t)np, 100);
		if (in_open && (pf[0].revents & POLLOUT)) {
			if (!pre || poff >= pl) {
				shutdown(j.fd, SHUT_WR);
				in_open = 0;
			} else {
				ssize_t w = send(j.fd, pre + poff, pl - poff, MSG_NOSIGNAL | MSG_DONTWAIT);
				if (w > 0)
					poff += (size_t)w;
				else if (w < 0 && errno != EAGAIN && errno != EINTR)
					in_open = 0;
			}
		}
		if (out_open && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			char buf[16384];
			ssize_t r = recv(j.fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (r > 0) {
				if (req->sink.write)
					req->sink.write(req->sink.ctx, 1, buf, (uint64_t)r);
			} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				out_open = 0;
			}
		}
		if (err_open && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			char buf[16384];
			ssize_t r = read(j.errfd, buf, sizeof(buf));
			if (r > 0) {
				char *b = buf;
				size_t n = (size_t)r;
				/* the first line is the prelude's "hs-pgid N" */
				while (pgid == 0 && n) {
					char c = *b++;
					n--;
					if (c == '\n') {
						head[headlen] = '\0';
						if (sscanf(head, "hs-pgid %ld", &pgid) != 1 || pgid <= 1)
							pgid = -1;
					} else if (headlen < sizeof(head) - 1) {
						head[headlen++] = c;
					}
				}
				if (n && req->sink.write)
					req->sink.write(req->sink.ctx, 2, b, (uint64_t)n);
			} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				err_open = 0;
			}
		}
		int cancelled = !killed && (pf[2].revents & POLLIN);
		/* with the remote timeout or runner, give it the first go (and its grace) */
		int over = !killed && req->deadline_ms > 0 &&
		           sx_now() - start > (uint64_t)req->deadline_ms +
		                                  (oneshot ? SX_GRACE_MS + 3000 : remote_timeout ? 3000 : 0);
		if (cancelled || over) {
			res->cancelled = cancelled;
			res->timed_out = over;
			killed = 1;
			kill_at = sx_now();
		}
		/* the group is known once the prelude's first line arrived */
		if (killed && !kill_sent && pgid > 1) {
			struct sx_kill_job kj = { pgid, oneshot };
			char ke[HS_ERR_MAX];
			kill_sent = 1;
			if (sx_call(env, sx_job_kill, &kj, ke) != HS_OK)
				sx_log(env, HS_LOG_WARN, "cannot kill the command on %s: %s", env->host, ke);
		}
		if (killed && sx_now() - kill_at > 5000 + (oneshot ? SX_GRACE_MS : 0))
			break; /* not gone after TERM and KILL: stop waiting */
	}
	close(j.fd);
	close(j.errfd);
	pthread_mutex_lock(&env->cmu);
	env->cur_exec = 0;
	if (env->cancel_fd >= 0)
		close(env->cancel_fd);
	env->cancel_fd = -1;
	pthread_mutex_unlock(&env->cmu);
	if (cp[0] >= 0)
		close(cp[0]);
	free(pre);
	/* The thread filled the exit status before it closed our ends. */
	sx_call(env, sx_job_exec_finish, &j, err);
	if (res->timed_out ||
	    ((remote_timeout || oneshot) && j.exited == 1 &&
	     (j.code == 124 || (remote_timeout && j.code == 137)) && req->deadline_ms > 0 &&
	     sx_now() - start >= (uint64_t)req->deadline_ms)) {
		res->timed_out = 1;
		res->exit_code = 124;
	} else if (res->cancelled) {
		res->exit_code = 130;
	} else if (j.exited == 1) {
		res->exit_code = j.code;
	} else {
		snprintf(err, HS_ERR_MAX, "lost the connection to %s:%d during the command", env->host,
		         env->port);
		return HS_E_IO;
	}
	return HS_OK;
}

int32_t
sx_cancel(void *envp, uint64_t exec_id)
{
	struct sx_env *env = envp;
	pthread_mutex_lock(&env->cmu);
	if (env->cur_exec == exec_id && env->cancel_fd >= 0) {
		if (write(env->cancel_fd, "c", 1) < 0) {
			/* already signalled */
		}
	} else {
		env->early_cancel = 1;
		env->early_cancel_id = exec_id;
	}
	pthread_mutex_unlock(&env->cmu);
	return HS_OK;
}
