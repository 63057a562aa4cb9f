/* SPDX-License-Identifier: MIT */
/*
 * ssh.c - the ssh backend: a session's commands run on a remote host over
 * one persistent libssh2 connection, through one hs-runner daemon there.
 *
 * One I/O thread per environment owns the libssh2 session (connect, SFTP,
 * channels, keepalive).  The core's calls (open, runner_stream, exec,
 * close) hand it a job and wait; every runner stream is a channel running
 * `hs-runner --attach --start` that the thread pumps to one end of a
 * socketpair given to the core.  See hs-ssh(7) and docs/ssh.md.
 *
 * This file holds the I/O thread and its pump, the job hand-off and the
 * ops (init, probe, open, runner_stream, close); the connection is in
 * ssh-conn.c, the runner's install in ssh-install.c, exec per channel in
 * ssh-exec.c, their shared state in sx.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "sha256.h"
#include "sx.h"

static const struct hs_config_key sx_keys[] = {
	{ "host", HS_CONF_STRING, "remote host name or address (required)" },
	{ "port", HS_CONF_INT, "remote port (default 22)" },
	{ "user", HS_CONF_STRING, "remote user (default: the local user)" },
	{ "identity_file", HS_CONF_STRING, "private key file (ed25519 or ECDSA); else ssh-agent, else ~/.ssh/id_ed25519, id_ecdsa" },
	{ "known_hosts", HS_CONF_STRING, "known_hosts file (default ~/.ssh/known_hosts)" },
	{ "host_key_policy", HS_CONF_STRING, "\"strict\" (default) or \"accept-new\"" },
	{ "connect_timeout", HS_CONF_INT, "seconds for connect, key exchange and authentication (default 10)" },
	{ "keepalive", HS_CONF_INT, "seconds between keepalives (default 15; 0 off)" },
	{ "runner", HS_CONF_BOOL, "use the remote hs-runner (default true); false runs one channel per command" },
	{ NULL, 0, NULL },
};

/* Under an admin's lock: "accept-new" may be tightened to "strict". */
static const char *const sx_policies[] = { "strict", "accept-new", NULL };
static const struct hs_config_rule sx_rules[] = {
	{ .name = "host_key_policy", .order = HS_CORDER_ENUM, .values = sx_policies },
	{ .name = NULL },
};

/* --------------------------------------------------------------- the pump */

void
sx_stream_free(struct sx_env *env, struct sx_stream *sm)
{
	if (!sm->used)
		return;
	if (sm->fd >= 0)
		close(sm->fd);
	if (sm->errfd >= 0)
		close(sm->errfd);
	if (sm->ch && env->s)
		libssh2_channel_free(sm->ch);
	memset(sm, 0, sizeof(*sm));
	sm->fd = sm->errfd = -1;
}

static struct sx_stream *
sx_slot(struct sx_env *env)
{
	for (int i = 0; i < SX_MAX_STREAMS; i++)
		if (!env->streams[i].used) {
			struct sx_stream *sm = &env->streams[i];
			memset(sm, 0, sizeof(*sm));
			sm->fd = sm->errfd = -1;
			sm->used = 1;
			return sm;
		}
	return NULL;
}

/* Write pending bytes to a non-blocking fd; -1 when the reader is gone. */
static int
sx_flush(int fd, const char *buf, size_t *off, size_t *len)
{
	while (*off < *len) {
		ssize_t w = send(fd, buf + *off, *len - *off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == ENOTSOCK)
			w = write(fd, buf + *off, *len - *off);
		if (w > 0) {
			*off += (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		return -1;
	}
	*off = *len = 0;
	return 0;
}

/* Move what can move for one stream.  Returns -1 on a transport error. */
static int
sx_pump_one(struct sx_env *env, struct sx_stream *sm)
{
	ssize_t r;
	if (!sm->ch)
		return 0;
	/* channel stdout -> fd */
	for (;;) {
		if (sm->outlen && sx_flush(sm->fd, sm->out, &sm->outoff, &sm->outlen) < 0) {
			sm->closing = 1; /* the core closed its end */
			break;
		}
		if (sm->outlen)
			break;
		r = libssh2_channel_read(sm->ch, sm->out, sizeof(sm->out));
		if (r > 0) {
			env->moved++;
			sm->outlen = (size_t)r;
			sm->outoff = 0;
			continue;
		}
		if (r == LIBSSH2_ERROR_EAGAIN)
			break;
		if (r < 0)
			return sx_transport_err(env->s) ? -1 : (sm->closing = 1, 0);
		if (libssh2_channel_eof(sm->ch))
			sm->ch_eof = 1;
		break;
	}
	/* channel stderr: to errfd (exec), else kept as the last line for messages */
	for (;;) {
		if (sm->errfd >= 0 && sm->eoutlen &&
		    sx_flush(sm->errfd, sm->eout, &sm->eoutoff, &sm->eoutlen) < 0)
			sm->eoutlen = sm->eoutoff = 0;
		if (sm->eoutlen)
			break;
		char eb[4096];
		r = libssh2_channel_read_stderr(sm->ch, sm->errfd >= 0 ? sm->eout : eb,
		                                sm->errfd >= 0 ? sizeof(sm->eout) : sizeof(eb));
		if (r > 0) {
			env->moved++;
			if (sm->errfd >= 0) {
				sm->eoutlen = (size_t)r;
				sm->eoutoff = 0;
			} else {
				for (ssize_t i = 0; i < r; i++) {
					if (eb[i] == '\n') {
						sm->errline[sm->errfill] = '\0';
						if (sm->errfill)
							sx_log(env, HS_LOG_WARN, "%s: %s", env->host, sm->errline);
						sm->errfill = 0;
					} else if (sm->errfill < sizeof(sm->errline) - 1) {
						sm->errline[sm->errfill++] = eb[i];
					}
				}
			}
			continue;
		}
		if (r < 0 && r != LIBSSH2_ERROR_EAGAIN && sx_transport_err(env->s))
			return -1;
		break;
	}
	/* fd -> channel */
	for (;;) {
		if (sm->inlen) {
			r = libssh2_channel_write(sm->ch, sm->in + sm->inoff, sm->inlen - sm->inoff);
			if (r == LIBSSH2_ERROR_EAGAIN)
				break;
			if (r < 0) {
				if (sx_transport_err(env->s))
					return -1;
				sm->closing = 1;
				break;
			}
			env->moved++;
			sm->inoff += (size_t)r;
			if (sm->inoff == sm->inlen)
				sm->inoff = sm->inlen = 0;
			continue;
		}
		if (sm->fd_eof)
			break;
		r = recv(sm->fd, sm->in, sizeof(sm->in), MSG_DONTWAIT);
		if (r > 0) {
			env->moved++;
			sm->inlen = (size_t)r;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		sm->fd_eof = 1; /* the core closed or shut down its side */
		break;
	}
	if (sm->fd_eof && !sm->inlen && !sm->eof_sent) {
		r = libssh2_channel_send_eof(sm->ch);
		if (r == 0)
			sm->eof_sent = 1;
		else if (r != LIBSSH2_ERROR_EAGAIN && sx_transport_err(env->s))
			return -1;
	}
	/* The remote side is done: deliver the rest, then close. */
	if ((sm->ch_eof && !sm->outlen && !sm->eoutlen) || sm->closing ||
	    (sm->errfd < 0 && sm->fd_eof && !sm->inlen && sm->eof_sent && sm->ch_eof)) {
		r = libssh2_channel_close(sm->ch);
		if (r == LIBSSH2_ERROR_EAGAIN)
			return 0;
		if (sm->errfd >= 0) {
			/* exec: the exit status arrives with the close */
			if (libssh2_channel_wait_closed(sm->ch) == LIBSSH2_ERROR_EAGAIN)
				return 0;
			char *sig = NULL;
			libssh2_channel_get_exit_signal(sm->ch, &sig, NULL, NULL, NULL, NULL, NULL);
			sm->exit_code = libssh2_channel_get_exit_status(sm->ch);
			if (sig) {
				static const char *const names[] = { "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT",
				                                     "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2",
				                                     "PIPE", "ALRM", "TERM" };
				sm->exit_code = 128 + 15;
				for (int i = 0; i < 15; i++)
					if (strcmp(sig, names[i]) == 0)
						sm->exit_code = 128 + i + 1;
				free(sig);
			}
			sm->exited = 1;
			libssh2_channel_free(sm->ch);
			sm->ch = NULL;
			if (sm->fd >= 0)
				close(sm->fd);
			if (sm->errfd >= 0)
				close(sm->errfd);
			sm->fd = sm->errfd = -1;
			return 0;
		}
		libssh2_channel_free(sm->ch);
		sm->ch = NULL;
		sx_stream_free(env, sm);
	}
	return 0;
}

static void
sx_pump(struct sx_env *env)
{
	if (!env->s)
		return;
	for (int i = 0; i < SX_MAX_STREAMS; i++) {
		struct sx_stream *sm = &env->streams[i];
		if (sm->used && sm->ch && sx_pump_one(env, sm) < 0) {
			sx_log(env, HS_LOG_WARN, "connection to %s:%d lost: %s", env->host, env->port,
			       sx_lasterr(env->s));
			sx_drop(env, 0);
			return;
		}
	}
}

static void *
sx_thread(void *arg)
{
	struct sx_env *env = arg;
	sigset_t ss;
	sigfillset(&ss);
	pthread_sigmask(SIG_BLOCK, &ss, NULL);

	for (;;) {
		struct pollfd pf[2 + 2 * SX_MAX_STREAMS];
		int np = 0, timeout = 1000;
		pf[np++] = (struct pollfd){ env->wake[0], POLLIN, 0 };
		int nstreams = 0;
		if (env->s) {
			int dir = libssh2_session_block_directions(env->s);
			for (int i = 0; i < SX_MAX_STREAMS; i++) {
				struct sx_stream *sm = &env->streams[i];
				if (!sm->used || !sm->ch)
					continue;
				nstreams++;
				short ev = 0;
				if (!sm->inlen && !sm->fd_eof)
					ev |= POLLIN;
				if (sm->outlen)
					ev |= POLLOUT;
				if (ev && sm->fd >= 0)
					pf[np++] = (struct pollfd){ sm->fd, ev, 0 };
				if (sm->eoutlen && sm->errfd >= 0)
					pf[np++] = (struct pollfd){ sm->errfd, POLLOUT, 0 };
			}
			if (nstreams) {
				timeout = 20; /* a safety net for data libssh2 buffered unseen */
				pf[np++] = (struct pollfd){ env->sock,
				                            (short)(POLLIN | ((dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
				                                              ? POLLOUT : 0)), 0 };
			}
			if (env->keepalive_s > 0) {
				int next = 0;
				if (libssh2_keepalive_send(env->s, &next) != 0 && sx_transport_err(env->s)) {
					sx_log(env, HS_LOG_WARN, "keepalive to %s:%d failed: %s", env->host,
					       env->port, sx_lasterr(env->s));
					sx_drop(env, 0);
					continue;
				}
				if (next > 0 && next * 1000 < timeout)
					timeout = next * 1000;
			}
		}
		if (poll(pf, (nfds_t)np, timeout) < 0 && errno != EINTR)
			sx_sleep_ms(10);
		if (pf[0].revents & POLLIN) {
			char b[64];
			while (read(env->wake[0], b, sizeof(b)) > 0)
				;
		}
		pthread_mutex_lock(&env->mu);
		sx_job_fn job = env->job;
		void *jarg = env->job_arg;
		int quit = env->quit;
		pthread_mutex_unlock(&env->mu);
		if (job) {
			char e[HS_ERR_MAX] = "";
			if (env->s)
				libssh2_session_set_blocking(env->s, 1);
			int32_t rc = job(env, jarg, e);
			if (env->s)
				libssh2_session_set_blocking(env->s, 0);
			pthread_mutex_lock(&env->mu);
			env->job = NULL;
			env->job_rc = rc;
			memcpy(env->job_err, e, sizeof(e));
			env->job_done = 1;
			quit = env->quit;
			pthread_cond_broadcast(&env->cv);
			pthread_mutex_unlock(&env->mu);
		}
		if (quit)
			break;
		/* Again while anything moved: a read for one channel may leave packets
		 * for another one in libssh2's buffer, where poll cannot see them. */
		for (int k = 0; k < 32; k++) {
			uint64_t before = env->moved;
			sx_pump(env);
			if (env->moved == before && k > 0)
				break;
		}
	}
	return NULL;
}

/* Hand a job to the I/O thread and wait for it. */
int32_t
sx_call(struct sx_env *env, sx_job_fn fn, void *arg, char *err)
{
	pthread_mutex_lock(&env->mu);
	env->job = fn;
	env->job_arg = arg;
	env->job_done = 0;
	pthread_mutex_unlock(&env->mu);
	if (write(env->wake[1], "j", 1) < 0) {
		/* the pipe is non-blocking; a full pipe already wakes the thread */
	}
	pthread_mutex_lock(&env->mu);
	while (!env->job_done)
		pthread_cond_wait(&env->cv, &env->mu);
	int32_t rc = env->job_rc;
	if (rc != HS_OK)
		snprintf(err, HS_ERR_MAX, "%s", env->job_err);
	pthread_mutex_unlock(&env->mu);
	return rc;
}

/* ------------------------------------------------------------------- ops */

static int32_t
sx_init(const struct hs_host_v1 *host, void **state, char *err)
{
	struct sx_state *st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	if (libssh2_init(0) != 0) {
		free(st);
		snprintf(err, HS_ERR_MAX, "libssh2 initialisation failed");
		return HS_E_UNAVAILABLE;
	}
	st->host = host;
	*state = st;
	return HS_OK;
}

static void
sx_fini(void *state)
{
	libssh2_exit();
	free(state);
}

/* Read the config section into env; HS_E_CONFIG with a reason when wrong. */
static int32_t
sx_config(struct sx_state *st, struct sx_env *env, char *err)
{
	const struct hs_host_v1 *h = st->host;
	const char *s = NULL;
	int64_t v;
	int32_t b;
	const char *home = getenv("HOME");

	if (h->config_string(h->ctx, "host", &s) != HS_OK || !s || !*s) {
		snprintf(err, HS_ERR_MAX, "ssh.host is not set; add ssh = { host = \"NAME\"; } to the "
		         "config");
		return HS_E_CONFIG;
	}
	if (strlen(s) >= sizeof(env->host) || s[0] == '-' || strpbrk(s, " \t\n'\"\\")) {
		snprintf(err, HS_ERR_MAX, "ssh.host '%s' is not a host name", s);
		return HS_E_CONFIG;
	}
	snprintf(env->host, sizeof(env->host), "%s", s);
	env->port = 22;
	if (h->config_int(h->ctx, "port", &v) == HS_OK) {
		if (v < 1 || v > 65535) {
			snprintf(err, HS_ERR_MAX, "ssh.port %lld is out of range", (long long)v);
			return HS_E_CONFIG;
		}
		env->port = (int)v;
	}
	s = NULL;
	if (h->config_string(h->ctx, "user", &s) != HS_OK || !s || !*s)
		s = getenv("USER") ? getenv("USER") : getenv("LOGNAME");
	if (!s || !*s || strlen(s) >= sizeof(env->user)) {
		snprintf(err, HS_ERR_MAX, "ssh.user is not set and $USER is empty; set ssh.user");
		return HS_E_CONFIG;
	}
	snprintf(env->user, sizeof(env->user), "%s", s);
	s = NULL;
	if (h->config_string(h->ctx, "identity_file", &s) == HS_OK && s && *s) {
		if (s[0] == '~' && s[1] == '/' && home)
			snprintf(env->identity, sizeof(env->identity), "%s%s", home, s + 1);
		else
			snprintf(env->identity, sizeof(env->identity), "%s", s);
	}
	s = NULL;
	if (h->config_string(h->ctx, "known_hosts", &s) == HS_OK && s && *s) {
		if (s[0] == '~' && s[1] == '/' && home)
			snprintf(env->known_hosts, sizeof(env->known_hosts), "%s%s", home, s + 1);
		else
			snprintf(env->known_hosts, sizeof(env->known_hosts), "%s", s);
	} else {
		snprintf(env->known_hosts, sizeof(env->known_hosts), "%s/.ssh/known_hosts",
		         home ? home : "");
	}
	snprintf(env->policy, sizeof(env->policy), "strict");
	s = NULL;
	if (h->config_string(h->ctx, "host_key_policy", &s) == HS_OK && s) {
		if (strcmp(s, "strict") != 0 && strcmp(s, "accept-new") != 0) {
			snprintf(err, HS_ERR_MAX, "ssh.host_key_policy '%s' is not \"strict\" or "
			         "\"accept-new\"", s);
			return HS_E_CONFIG;
		}
		snprintf(env->policy, sizeof(env->policy), "%s", s);
	}
	env->connect_timeout_s = 10;
	if (h->config_int(h->ctx, "connect_timeout", &v) == HS_OK) {
		if (v < 1 || v > 600) {
			snprintf(err, HS_ERR_MAX, "ssh.connect_timeout %lld is not 1..600 seconds", (long long)v);
			return HS_E_CONFIG;
		}
		env->connect_timeout_s = (int)v;
	}
	env->keepalive_s = 15;
	if (h->config_int(h->ctx, "keepalive", &v) == HS_OK) {
		if (v < 0 || v > 3600) {
			snprintf(err, HS_ERR_MAX, "ssh.keepalive %lld is not 0..3600 seconds", (long long)v);
			return HS_E_CONFIG;
		}
		env->keepalive_s = (int)v;
	}
	env->use_runner = 1;
	if (h->config_bool(h->ctx, "runner", &b) == HS_OK)
		env->use_runner = b != 0;
	return HS_OK;
}

static int32_t
sx_probe(void *state, uint32_t flags, struct hs_probe_report *r, char *err)
{
	struct sx_state *st = state;
	struct sx_env *env = calloc(1, sizeof(*env));
	if (!env) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	env->st = st;
	char e[HS_ERR_MAX] = "";
	int32_t rc = sx_config(st, env, e);
	r->runner = st->host->runner_path != NULL;
	if (rc != HS_OK) {
		r->ready = 0;
		snprintf(r->reason, sizeof(r->reason), "%s", e);
	} else if (env->identity[0] && access(env->identity, R_OK) < 0) {
		r->ready = 0;
		snprintf(r->reason, sizeof(r->reason), "cannot read ssh.identity_file '%s': %s",
		         env->identity, strerror(errno));
	} else if (env->identity[0] && sx_is_rsa_key(env->identity)) {
		r->ready = 0;
		snprintf(r->reason, sizeof(r->reason),
		         "ssh.identity_file '%s' is an RSA key: libssh2 %s signs RSA only with "
		         "ssh-rsa/SHA-1, which OpenSSH 8.8+ refuses; use an ed25519 or ECDSA key",
		         env->identity, LIBSSH2_VERSION);
	} else {
		r->ready = 1;
	}
	if (rc == HS_OK && !env->use_runner)
		r->runner = 0;
	if (rc == HS_OK)
		snprintf(r->detail, sizeof(r->detail),
		         "host=%s\nport=%d\nuser=%s\nknown_hosts=%s\nhost_key_policy=%s\nlibssh2=%s\n"
		         "rsa_sha2=%s\nrunner=%s",
		         env->host, env->port, env->user, env->known_hosts, env->policy, LIBSSH2_VERSION,
#if LIBSSH2_VERSION_NUM >= 0x010b00
		         "yes",
#else
		         "no (use ed25519 or ECDSA keys)",
#endif
		         env->use_runner ? "upload over sftp" : "off (a channel per command)");
	if (rc == HS_OK && r->ready && (flags & HS_PROBE_DEEP)) {
		/* A real connection (no upload), torn down again. */
		env->sock = -1;
		int want = env->use_runner;
		env->use_runner = 0;
		rc = sx_connect(env, e);
		struct utsname un;
		uname(&un);
		if (rc != HS_OK) {
			r->ready = 0;
			snprintf(r->reason, sizeof(r->reason), "%s", e);
		} else {
			size_t l = strlen(r->detail);
			snprintf(r->detail + l, sizeof(r->detail) - l, "\nremote_arch=%s\nremote_runner=%s",
			         env->arch, want && strcmp(un.machine, env->arch) == 0
			                        ? "yes" : "no (exec per channel)");
			r->runner = want && strcmp(un.machine, env->arch) == 0;
			libssh2_session_set_blocking(env->s, 1);
			sx_drop(env, 1);
		}
	}
	free(env);
	return HS_OK;
}

struct sx_stream_job {
	int fd; /* out: the core's end */
};

static int32_t
sx_job_connect(struct sx_env *env, void *arg, char *err)
{
	(void)arg;
	return sx_ensure(env, err);
}

int32_t
sx_open_channel(struct sx_env *env, const char *cmd, struct sx_stream **out, char *err)
{
	LIBSSH2_CHANNEL *ch = libssh2_channel_open_session(env->s);
	if (!ch) {
		snprintf(err, HS_ERR_MAX, "cannot open a channel on %s:%d: %s", env->host, env->port,
		         sx_lasterr(env->s));
		return sx_transport_err(env->s) ? HS_E_IO : HS_E_UNAVAILABLE;
	}
	if (libssh2_channel_exec(ch, cmd) != 0) {
		snprintf(err, HS_ERR_MAX, "the remote refused to start a command: %s", sx_lasterr(env->s));
		int tr = sx_transport_err(env->s);
		libssh2_channel_free(ch);
		return tr ? HS_E_IO : HS_E_UNAVAILABLE;
	}
	struct sx_stream *sm = sx_slot(env);
	if (!sm) {
		libssh2_channel_free(ch);
		snprintf(err, HS_ERR_MAX, "too many streams to %s", env->host);
		return HS_E_BUSY;
	}
	sm->ch = ch;
	*out = sm;
	return HS_OK;
}

static int32_t
sx_job_stream(struct sx_env *env, void *arg, char *err)
{
	struct sx_stream_job *j = arg;
	char cmd[2048], qr[1100], qd[600];
	int sv[2];
	int32_t rc;

	for (int attempt = 0; attempt < 2; attempt++) {
		if ((rc = sx_ensure(env, err)) != HS_OK)
			return rc;
		if (!env->runner_ok) {
			snprintf(err, HS_ERR_MAX, "no runner on %s (architecture %s)", env->host, env->arch);
			return HS_E_UNSUPPORTED;
		}
		if (sx_quote(qr, sizeof(qr), env->rrunner) < 0 || sx_quote(qd, sizeof(qd), env->rdir) < 0) {
			snprintf(err, HS_ERR_MAX, "remote paths too long");
			return HS_E_INVALID;
		}
		/* Without the SSH_* variables: bash, run from a daemon that inherited
		 * them with SHLVL unset, takes itself for sshd's shell and reads
		 * ~/.bashrc for every command. */
		snprintf(cmd, sizeof(cmd), "unset SSH_CLIENT SSH2_CLIENT SSH_CONNECTION SSH_TTY "
		         "SSH_ORIGINAL_COMMAND; exec %s --attach --start --dir %s --idle %lld", qr, qd,
		         (long long)env->idle);
		struct sx_stream *sm = NULL;
		rc = sx_open_channel(env, cmd, &sm, err);
		if (rc == HS_E_IO) {
			/* The connection died while idle: reconnect once more from scratch. */
			sx_drop(env, 0);
			continue;
		}
		if (rc != HS_OK)
			return rc;
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
			snprintf(err, HS_ERR_MAX, "cannot create a socket pair: %s", strerror(errno));
			sx_stream_free(env, sm);
			return HS_E_IO;
		}
		fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
		sm->fd = sv[0];
		j->fd = sv[1];
		return HS_OK;
	}
	return rc;
}

static int32_t
sx_open(void *state, const struct hs_env_spec *spec, void **envp, struct hs_env_props *props,
        char *err)
{
	struct sx_state *st = state;
	int32_t rc;

	if (spec->image && *spec->image) {
		snprintf(err, HS_ERR_MAX, "the ssh backend has no images (asked for '%s')", spec->image);
		return HS_E_INVALID;
	}
	if (spec->n_mounts) {
		snprintf(err, HS_ERR_MAX, "the ssh backend cannot mount '%s'", spec->mounts[0]);
		return HS_E_INVALID;
	}
	if (!spec->env_name || !*spec->env_name || strlen(spec->env_name) >= 100 ||
	    strspn(spec->env_name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
	        strlen(spec->env_name) || spec->env_name[0] == '.') {
		snprintf(err, HS_ERR_MAX, "environment name '%s' is not usable as a remote directory name",
		         spec->env_name ? spec->env_name : "");
		return HS_E_INVALID;
	}
	struct sx_env *env = calloc(1, sizeof(*env));
	if (!env) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	env->st = st;
	env->sock = -1;
	env->cancel_fd = -1;
	for (int i = 0; i < SX_MAX_STREAMS; i++)
		env->streams[i].fd = env->streams[i].errfd = -1;
	snprintf(env->env_name, sizeof(env->env_name), "%s", spec->env_name);
	env->attach_only = !!(spec->flags & HS_SPEC_ATTACH);
	env->idle = spec->runner_idle_s > 0 ? spec->runner_idle_s : 600;
	if ((rc = sx_config(st, env, err)) != HS_OK) {
		free(env);
		return rc;
	}
	/* Exec mode (ssh.runner = false) still uploads the runner, for --exec. */
	if (st->host->runner_path) {
		FILE *f = fopen(st->host->runner_path, "re");
		struct hsr_sha256 c;
		uint8_t dg[32], buf[65536];
		size_t n;
		if (!f && !env->use_runner) {
			/* No one-shot runner then; the exec-mode fallback kills the group. */
		} else if (!f) {
			snprintf(err, HS_ERR_MAX, "cannot read the runner '%s': %s", st->host->runner_path,
			         strerror(errno));
			free(env);
			return HS_E_UNAVAILABLE;
		}
		if (f) {
			hsr_sha256_init(&c);
			while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
				hsr_sha256_update(&c, buf, n);
			fclose(f);
			hsr_sha256_final(&c, dg);
			sx_hex(dg, 32, env->runner_hex);
		}
	}
	pthread_mutex_init(&env->mu, NULL);
	pthread_mutex_init(&env->cmu, NULL);
	pthread_cond_init(&env->cv, NULL);
	if (pipe2(env->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot create a pipe: %s", strerror(errno));
		free(env);
		return HS_E_IO;
	}
	if (pthread_create(&env->thr, NULL, sx_thread, env) != 0) {
		snprintf(err, HS_ERR_MAX, "cannot start the ssh I/O thread");
		close(env->wake[0]);
		close(env->wake[1]);
		free(env);
		return HS_E_NOMEM;
	}
	env->thr_started = 1;
	*envp = env; /* close() is safe after a failed open */
	rc = sx_call(env, sx_job_connect, NULL, err);
	if (rc != HS_OK)
		return rc;
	props->host_access = 0;
	snprintf(props->isolation, sizeof(props->isolation), "remote");
	props->runner = env->runner_ok;
	if (!env->runner_ok && !env->use_runner)
		snprintf(props->runner_reason, sizeof(props->runner_reason),
		         "ssh.runner is false: one ssh channel per command");
	else if (!env->runner_ok && !st->host->runner_path)
		snprintf(props->runner_reason, sizeof(props->runner_reason),
		         "no hs-runner on this machine to upload: one ssh channel per command");
	else if (!env->runner_ok)
		snprintf(props->runner_reason, sizeof(props->runner_reason),
		         "%s is %s, this machine is not: one ssh channel per command", env->host, env->arch);
	snprintf(props->shell, sizeof(props->shell), "%s", env->rshell);
	snprintf(props->runtime_dir, sizeof(props->runtime_dir), "%s", env->rdir);
	return HS_OK;
}

static int32_t
sx_runner_stream(void *envp, int32_t *fd, char *err)
{
	struct sx_env *env = envp;
	struct sx_stream_job j = { -1 };
	int32_t rc = sx_call(env, sx_job_stream, &j, err);
	if (rc == HS_OK)
		*fd = j.fd;
	return rc;
}

/* ------------------------------------------------------------------ close */

static int32_t
sx_job_stop(struct sx_env *env, void *arg, char *err)
{
	char cmd[2200], qr[1100], qd[600], out[256];
	int code = 0;
	(void)arg;
	if (!env->ever_connected)
		return HS_OK;
	if (!env->s && sx_ensure(env, err) != HS_OK) {
		/* The daemon ends itself after its idle time, its commands at their deadlines. */
		sx_log(env, HS_LOG_WARN, "cannot stop the runner on %s (%s); it exits after %llds idle",
		       env->host, err, (long long)env->idle);
		return HS_OK;
	}
	if (sx_quote(qr, sizeof(qr), env->rrunner) < 0 || sx_quote(qd, sizeof(qd), env->rdir) < 0)
		return HS_OK;
	if (env->runner_ok && env->rrunner[0])
		snprintf(cmd, sizeof(cmd), "%s --stop --dir %s && rm -rf -- %s", qr, qd, qd);
	else
		snprintf(cmd, sizeof(cmd), "rm -rf -- %s", qd);
	if (sx_run(env, cmd, out, sizeof(out), &code, err) == HS_OK && code != 0)
		sx_log(env, HS_LOG_WARN, "'hs-runner --stop' on %s exited %d", env->host, code);
	return HS_OK;
}

static int32_t
sx_job_quit(struct sx_env *env, void *arg, char *err)
{
	(void)arg;
	(void)err;
	if (env->s)
		sx_drop(env, 1);
	pthread_mutex_lock(&env->mu);
	env->quit = 1;
	pthread_mutex_unlock(&env->mu);
	return HS_OK;
}

static int32_t
sx_close(void *envp, uint32_t flags, char *err)
{
	struct sx_env *env = envp;
	if (!env)
		return HS_OK;
	if (env->thr_started) {
		if (!(flags & HS_CLOSE_KEEP))
			sx_call(env, sx_job_stop, NULL, err);
		sx_call(env, sx_job_quit, NULL, err);
		pthread_join(env->thr, NULL);
		close(env->wake[0]);
		close(env->wake[1]);
		pthread_mutex_destroy(&env->mu);
		pthread_mutex_destroy(&env->cmu);
		pthread_cond_destroy(&env->cv);
	}
	free(env);
	return HS_OK;
}

HS_BACKEND_EXPORT const struct hs_backend_v1 hs_backend_v1 = {
	HS_BACKEND_V1_HEADER,
	.name = "ssh",
	.version = PACKAGE_VERSION,
	.summary = "run commands on a remote host over one libssh2 connection and hs-runner",
	.caps = HS_CAP_RUNNER | HS_CAP_EXEC | HS_CAP_PERSIST | HS_CAP_FILES | HS_CAP_ISOLATED,
	.config_keys = sx_keys,
	.config_rules = sx_rules,
	.init = sx_init,
	.fini = sx_fini,
	.probe = sx_probe,
	.open = sx_open,
	.runner_stream = sx_runner_stream,
	.exec = sx_exec,
	.cancel = sx_cancel,
	.close = sx_close,
};
