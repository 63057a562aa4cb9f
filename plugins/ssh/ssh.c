/*
 * ssh.c - the ssh backend: a session's commands run on a remote host over
 * one persistent libssh2 connection, through one hs-runner daemon there.
 *
 * One I/O thread per environment owns the libssh2 session (connect, SFTP,
 * channels, keepalive).  The core's calls (open, runner_stream, exec,
 * close) hand it a job and wait; every runner stream is a channel running
 * `hs-runner --attach --start` that the thread pumps to one end of a
 * socketpair given to the core.  See hs-ssh(7) and docs/ssh.md.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <libssh2.h>
#include <libssh2_sftp.h>

#include <hs/backend.h>

#include "sha256.h"

#define SX_MAX_STREAMS 16
#define SX_BUF 32768
#define SX_RETRIES 5

struct sx_state {
	const struct hs_host_v1 *host;
};

struct sx_stream {
	int used;
	int fd;            /* our end of the socketpair (stdin+stdout) */
	int errfd;         /* exec mode: where the channel's stderr goes; -1 otherwise */
	LIBSSH2_CHANNEL *ch;
	char out[SX_BUF];  /* channel -> fd, not yet written */
	size_t outlen, outoff;
	char eout[SX_BUF]; /* channel stderr -> errfd, not yet written */
	size_t eoutlen, eoutoff;
	char in[SX_BUF];   /* fd -> channel, not yet sent */
	size_t inlen, inoff;
	int fd_eof, eof_sent, ch_eof, closing;
	int is_exec;
	int exited, exit_code; /* exec mode: filled once the channel closed (-1: lost) */
	char errline[256]; /* last line the remote wrote on stderr (runner mode) */
	size_t errfill;
};

struct sx_env;
typedef int32_t (*sx_job_fn)(struct sx_env *env, void *arg, char *err);

struct sx_env {
	struct sx_state *st;
	/* configuration */
	char host[256], user[128], identity[1024], known_hosts[1024], policy[16];
	int port, connect_timeout_s, keepalive_s, use_runner;
	int64_t idle;
	char env_name[128];
	/* what the connection found out */
	char arch[64], rshell[64], rdir[512], rrunner[1024], rhome[1024], rtimeout[8];
	char runner_hex[65];
	long ruid;
	int runner_ok, uploaded, ever_connected, no_sftp;
	/* the thread and its job slot */
	pthread_t thr;
	int thr_started, quit;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int wake[2];
	sx_job_fn job;
	void *job_arg;
	int job_done;
	int32_t job_rc;
	char job_err[HS_ERR_MAX];
	/* owned by the thread */
	int sock;
	LIBSSH2_SESSION *s;
	LIBSSH2_SFTP *sftp;
	struct sx_stream streams[SX_MAX_STREAMS];
	uint64_t moved; /* bytes-moved events, for the pump loop */
	/* cancel() of exec */
	pthread_mutex_t cmu;
	uint64_t cur_exec, early_cancel_id;
	int early_cancel;
	int cancel_fd; /* write end: wakes the exec waiter */
};

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

/* ---------------------------------------------------------------- helpers */

static void
sx_log(struct sx_env *env, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void
sx_log(struct sx_env *env, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	env->st->host->log(env->st->host->ctx, level, "%s", msg);
}

static const char *
sx_lasterr(LIBSSH2_SESSION *s)
{
	char *m = NULL;
	if (!s)
		return "no session";
	libssh2_session_last_error(s, &m, NULL, 0);
	return m && *m ? m : "unknown libssh2 error";
}

static int
sx_transport_err(LIBSSH2_SESSION *s)
{
	int e = s ? libssh2_session_last_errno(s) : LIBSSH2_ERROR_SOCKET_DISCONNECT;
	return e == LIBSSH2_ERROR_SOCKET_SEND || e == LIBSSH2_ERROR_SOCKET_RECV ||
	       e == LIBSSH2_ERROR_SOCKET_DISCONNECT || e == LIBSSH2_ERROR_SOCKET_TIMEOUT ||
	       e == LIBSSH2_ERROR_TIMEOUT || e == LIBSSH2_ERROR_BANNER_RECV ||
	       e == LIBSSH2_ERROR_KEX_FAILURE || e == LIBSSH2_ERROR_DECRYPT ||
	       e == LIBSSH2_ERROR_BAD_SOCKET || e == LIBSSH2_ERROR_SOCKET_NONE;
}

/* Single-quote s for a POSIX shell. */
static int
sx_quote(char *out, size_t cap, const char *s)
{
	size_t o = 0;
	if (o + 1 >= cap)
		return -1;
	out[o++] = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			if (o + 4 >= cap)
				return -1;
			memcpy(out + o, "'\\''", 4);
			o += 4;
		} else {
			if (o + 1 >= cap)
				return -1;
			out[o++] = *s;
		}
	}
	if (o + 2 > cap)
		return -1;
	out[o++] = '\'';
	out[o] = '\0';
	return (int)o;
}

static void
sx_b64(const uint8_t *d, size_t n, char *out)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) |
		             (i + 2 < n ? d[i + 2] : 0);
		out[o++] = t[v >> 18 & 63];
		out[o++] = t[v >> 12 & 63];
		if (i + 1 < n)
			out[o++] = t[v >> 6 & 63];
		if (i + 2 < n)
			out[o++] = t[v & 63];
	}
	out[o] = '\0';
}

static const char *
sx_keytype_name(int t)
{
	switch (t) {
	case LIBSSH2_HOSTKEY_TYPE_RSA: return "ssh-rsa";
	case LIBSSH2_HOSTKEY_TYPE_DSS: return "ssh-dss";
#ifdef LIBSSH2_HOSTKEY_TYPE_ECDSA_256
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return "ecdsa-sha2-nistp256";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return "ecdsa-sha2-nistp384";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return "ecdsa-sha2-nistp521";
#endif
#ifdef LIBSSH2_HOSTKEY_TYPE_ED25519
	case LIBSSH2_HOSTKEY_TYPE_ED25519: return "ssh-ed25519";
#endif
	}
	return "unknown";
}

static int
sx_keytype_mask(int t)
{
	switch (t) {
	case LIBSSH2_HOSTKEY_TYPE_RSA: return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
	case LIBSSH2_HOSTKEY_TYPE_DSS: return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
#ifdef LIBSSH2_HOSTKEY_TYPE_ECDSA_256
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
#endif
#ifdef LIBSSH2_HOSTKEY_TYPE_ED25519
	case LIBSSH2_HOSTKEY_TYPE_ED25519: return LIBSSH2_KNOWNHOST_KEY_ED25519;
#endif
	}
	return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
}

/* The known_hosts name of the target: "host" on port 22, else "[host]:port". */
static void
sx_khname(const struct sx_env *env, char *out, size_t cap)
{
	if (env->port == 22)
		snprintf(out, cap, "%s", env->host);
	else
		snprintf(out, cap, "[%s]:%d", env->host, env->port);
}

/* The first plain line of the known_hosts file naming this host, 0 if none. */
static int
sx_khline(const struct sx_env *env)
{
	char name[300], line[8192];
	int n = 0;
	FILE *f = fopen(env->known_hosts, "re");
	if (!f)
		return 0;
	sx_khname(env, name, sizeof(name));
	while (fgets(line, sizeof(line), f)) {
		n++;
		char *sp = strpbrk(line, " \t");
		if (!sp || line[0] == '#' || line[0] == '|')
			continue;
		*sp = '\0';
		for (char *tok = strtok(line, ","); tok; tok = strtok(NULL, ","))
			if (strcmp(tok, name) == 0) {
				fclose(f);
				return n;
			}
	}
	fclose(f);
	return 0;
}

static int
sx_is_rsa_key(const char *path)
{
	char pub[1100], buf[128];
	FILE *f;
	int rsa = 0;
	snprintf(pub, sizeof(pub), "%s.pub", path);
	if ((f = fopen(pub, "re"))) {
		if (fgets(buf, sizeof(buf), f))
			rsa = strncmp(buf, "ssh-rsa ", 8) == 0;
		fclose(f);
		return rsa;
	}
	if ((f = fopen(path, "re"))) {
		if (fgets(buf, sizeof(buf), f))
			rsa = strstr(buf, "RSA PRIVATE KEY") != NULL;
		fclose(f);
	}
	return rsa;
}

static uint64_t
sx_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
sx_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------------ connection */

static void
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

/* Drop the connection: every stream's socket is closed, so the core sees
 * the stream break and asks for a new one (which reconnects). */
static void
sx_drop(struct sx_env *env, int graceful)
{
	for (int i = 0; i < SX_MAX_STREAMS; i++) {
		struct sx_stream *sm = &env->streams[i];
		if (!sm->used)
			continue;
		if (sm->is_exec && !sm->exited)
			sm->exited = -1; /* its waiter learns the connection is gone */
		if (sm->fd >= 0) {
			close(sm->fd);
			sm->fd = -1;
		}
		if (sm->errfd >= 0) {
			close(sm->errfd);
			sm->errfd = -1;
		}
		sm->ch = NULL; /* freed with the session */
		if (!sm->is_exec) {
			memset(sm, 0, sizeof(*sm));
			sm->fd = sm->errfd = -1;
		}
	}
	if (env->sftp) {
		if (graceful)
			libssh2_sftp_shutdown(env->sftp);
		env->sftp = NULL;
	}
	if (env->s) {
		if (graceful) {
			libssh2_session_set_blocking(env->s, 1);
			libssh2_session_set_timeout(env->s, 1000);
			libssh2_session_disconnect(env->s, "bye");
		}
		libssh2_session_free(env->s);
		env->s = NULL;
	}
	if (env->sock >= 0)
		close(env->sock);
	env->sock = -1;
	/* A send on the dead socket may have raised SIGPIPE for this thread (blocked here). */
	sigset_t ss;
	struct timespec zero = { 0, 0 };
	sigemptyset(&ss);
	sigaddset(&ss, SIGPIPE);
	while (sigtimedwait(&ss, NULL, &zero) > 0)
		;
}

static int32_t
sx_tcp(struct sx_env *env, char *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
	char port[16];
	int e, fd = -1, soerr = 0;
	const char *why = "no address";
	snprintf(port, sizeof(port), "%d", env->port);
	if ((e = getaddrinfo(env->host, port, &hints, &res)) != 0) {
		snprintf(err, HS_ERR_MAX, "cannot resolve ssh host '%s': %s; check ssh.host", env->host,
		         gai_strerror(e));
		return HS_E_UNAVAILABLE;
	}
	uint64_t t0 = sx_now(), end = t0 + (uint64_t)env->connect_timeout_s * 1000;
	/* A refused connection is tried again for up to 2 s (or the connect
	 * timeout, if shorter): sshd may be restarting. */
	uint64_t refused_end = t0 + (env->connect_timeout_s < 2 ? (uint64_t)env->connect_timeout_s * 1000 : 2000);
again:
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
		if (fd < 0) {
			why = strerror(errno);
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (errno == EINPROGRESS) {
			struct pollfd p = { fd, POLLOUT, 0 };
			uint64_t now = sx_now();
			int left = now < end ? (int)(end - now) : 0;
			int r = poll(&p, 1, left);
			socklen_t sl = sizeof(soerr);
			if (r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
				break;
			why = r == 0 ? "timed out" : strerror(soerr ? soerr : errno);
			if (r == 0) {
				close(fd);
				fd = -1;
				freeaddrinfo(res);
				snprintf(err, HS_ERR_MAX,
				         "cannot connect to %s:%d: no answer within %ds (ssh.connect_timeout); "
				         "check the host, port and firewall", env->host, env->port,
				         env->connect_timeout_s);
				return HS_E_TIMEOUT;
			}
		} else {
			soerr = errno;
			why = strerror(errno);
		}
		close(fd);
		fd = -1;
	}
	if (fd < 0 && soerr == ECONNREFUSED && sx_now() + 200 < refused_end) {
		sx_sleep_ms(200);
		goto again;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, HS_ERR_MAX, "cannot connect to %s:%d: %s; check ssh.host/ssh.port and that "
		         "sshd runs there", env->host, env->port, why);
		return HS_E_UNAVAILABLE;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	env->sock = fd;
	return HS_OK;
}

/* Append one line for the new host key; the rest of the file is never rewritten. */
static int32_t
sx_kh_append(struct sx_env *env, LIBSSH2_KNOWNHOSTS *kh, const char *key, size_t len, int tmask,
             char *err)
{
	char name[300], line[8192];
	size_t outlen = 0;
	struct libssh2_knownhost *store = NULL;
	sx_khname(env, name, sizeof(name));
	if (libssh2_knownhost_addc(kh, name, NULL, key, len, NULL, 0,
	                           LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | tmask,
	                           &store) != 0 ||
	    libssh2_knownhost_writeline(kh, store, line, sizeof(line), &outlen,
	                                LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0) {
		snprintf(err, HS_ERR_MAX, "cannot format the known_hosts line for %s", name);
		return HS_E_INTERNAL;
	}
	int fd = open(env->known_hosts, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid()) {
		snprintf(err, HS_ERR_MAX, "cannot append to known_hosts '%s': %s", env->known_hosts,
		         fd < 0 ? strerror(errno) : "not a regular file of this user");
		if (fd >= 0)
			close(fd);
		return HS_E_PERM;
	}
	ssize_t w = write(fd, line, outlen);
	if (w != (ssize_t)outlen || fsync(fd) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot append to known_hosts '%s': %s", env->known_hosts,
		         strerror(errno));
		close(fd);
		return HS_E_IO;
	}
	close(fd);
	sx_log(env, HS_LOG_WARN, "added the host key of %s to %s (host_key_policy accept-new)", name,
	       env->known_hosts);
	return HS_OK;
}

static int32_t
sx_hostkey(struct sx_env *env, char *err)
{
	size_t len = 0;
	int type = 0;
	const char *key = libssh2_session_hostkey(env->s, &len, &type);
	const char *hash = libssh2_hostkey_hash(env->s, LIBSSH2_HOSTKEY_HASH_SHA256);
	char fp[64] = "?", name[300];
	struct libssh2_knownhost *found = NULL;
	int32_t rc = HS_OK;

	if (!key) {
		snprintf(err, HS_ERR_MAX, "%s:%d sent no host key", env->host, env->port);
		return HS_E_HOSTKEY;
	}
	if (hash)
		sx_b64((const uint8_t *)hash, 32, fp);
	sx_khname(env, name, sizeof(name));
	int tmask = sx_keytype_mask(type);
	LIBSSH2_KNOWNHOSTS *kh = libssh2_knownhost_init(env->s);
	if (!kh) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		return HS_E_NOMEM;
	}
	struct stat sb;
	if (stat(env->known_hosts, &sb) == 0 &&
	    libssh2_knownhost_readfile(kh, env->known_hosts, LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot read known_hosts '%s': %s", env->known_hosts,
		         sx_lasterr(env->s));
		libssh2_knownhost_free(kh);
		return HS_E_CONFIG;
	}
	int r = libssh2_knownhost_checkp(kh, env->host, env->port, key, len,
	                                 LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW |
	                                 tmask, &found);
	switch (r) {
	case LIBSSH2_KNOWNHOST_CHECK_MATCH:
		break;
	case LIBSSH2_KNOWNHOST_CHECK_MISMATCH: {
		int line = sx_khline(env);
		char where[64] = "";
		if (line > 0)
			snprintf(where, sizeof(where), " line %d", line);
		snprintf(err, HS_ERR_MAX,
		         "host key of %s changed: it is now %s SHA256:%s, which does not match %s%s; if the "
		         "change is expected, remove the old key with ssh-keygen -R '%s' -f %s",
		         name, sx_keytype_name(type), fp, env->known_hosts, where, name, env->known_hosts);
		rc = HS_E_HOSTKEY;
		break;
	}
	case LIBSSH2_KNOWNHOST_CHECK_NOTFOUND:
		if (strcmp(env->policy, "accept-new") == 0) {
			rc = sx_kh_append(env, kh, key, len, tmask, err);
		} else {
			snprintf(err, HS_ERR_MAX,
			         "host key of %s (%s SHA256:%s) is not in %s; verify it and add it "
			         "(ssh-keyscan -p %d %s >> %s) or set ssh.host_key_policy = \"accept-new\"",
			         name, sx_keytype_name(type), fp, env->known_hosts, env->port, env->host,
			         env->known_hosts);
			rc = HS_E_HOSTKEY;
		}
		break;
	default:
		snprintf(err, HS_ERR_MAX, "cannot check the host key of %s against %s: %s", name,
		         env->known_hosts, sx_lasterr(env->s));
		rc = HS_E_HOSTKEY;
	}
	libssh2_knownhost_free(kh);
	return rc;
}

static int32_t
sx_auth(struct sx_env *env, char *err)
{
	char tried[512] = "";
	size_t tl = 0;
	const char *home = getenv("HOME");
	int rsa = 0;
	size_t ulen = strlen(env->user);

	if (env->identity[0]) {
		rsa |= sx_is_rsa_key(env->identity);
		if (access(env->identity, R_OK) < 0) {
			snprintf(err, HS_ERR_MAX, "cannot read ssh.identity_file '%s': %s", env->identity,
			         strerror(errno));
			return HS_E_CONFIG;
		}
		if (libssh2_userauth_publickey_fromfile_ex(env->s, env->user, (unsigned)ulen, NULL,
		                                           env->identity, NULL) == 0)
			return HS_OK;
		if (sx_transport_err(env->s))
			goto transport;
		tl += (size_t)snprintf(tried + tl, sizeof(tried) - tl, "key %s", env->identity);
	}
	if (getenv("SSH_AUTH_SOCK")) {
		LIBSSH2_AGENT *ag = libssh2_agent_init(env->s);
		int ok = 0;
		if (ag && libssh2_agent_connect(ag) == 0 && libssh2_agent_list_identities(ag) == 0) {
			struct libssh2_agent_publickey *id = NULL, *prev = NULL;
			while (!ok && libssh2_agent_get_identity(ag, &id, prev) == 0) {
				if (libssh2_agent_userauth(ag, env->user, id) == 0)
					ok = 1;
				prev = id;
			}
			libssh2_agent_disconnect(ag);
		}
		if (ag)
			libssh2_agent_free(ag);
		if (ok)
			return HS_OK;
		if (sx_transport_err(env->s))
			goto transport;
		if (tl < sizeof(tried))
			tl += (size_t)snprintf(tried + tl, sizeof(tried) - tl, "%sssh-agent", tl ? ", " : "");
	}
	if (!env->identity[0] && home) {
		static const char *const names[] = { "id_ed25519", "id_ecdsa", "id_rsa" };
		for (size_t i = 0; i < 3; i++) {
			char p[1024];
			snprintf(p, sizeof(p), "%s/.ssh/%s", home, names[i]);
			if (access(p, R_OK) < 0)
				continue;
			rsa |= sx_is_rsa_key(p);
			if (libssh2_userauth_publickey_fromfile_ex(env->s, env->user, (unsigned)ulen, NULL, p,
			                                           NULL) == 0)
				return HS_OK;
			if (sx_transport_err(env->s))
				goto transport;
			if (tl < sizeof(tried))
				tl += (size_t)snprintf(tried + tl, sizeof(tried) - tl, "%skey %s", tl ? ", " : "", p);
		}
	}
	if (!tried[0]) {
		snprintf(err, HS_ERR_MAX, "no credentials for %s@%s:%d: set ssh.identity_file or start "
		         "ssh-agent", env->user, env->host, env->port);
		return HS_E_AUTH;
	}
	snprintf(err, HS_ERR_MAX, "authentication as %s@%s:%d refused (tried %s)%s", env->user,
	         env->host, env->port, tried,
	         rsa ? "; this libssh2 signs RSA keys only with ssh-rsa/SHA-1, which OpenSSH 8.8+ "
	               "refuses: use an ed25519 or ECDSA key"
	             : "; add the public key to the remote authorized_keys or set ssh.identity_file");
	return HS_E_AUTH;
transport:
	snprintf(err, HS_ERR_MAX, "connection to %s:%d lost during authentication: %s", env->host,
	         env->port, sx_lasterr(env->s));
	return HS_E_IO;
}

/* Run one short command over its own channel (blocking mode): send in (may
 * be NULL), collect stdout into out and the last stderr line into eout. */
static int32_t
sx_run_in(struct sx_env *env, const char *cmd, const void *in, size_t inlen, char *out, size_t cap,
          char *eout, size_t ecap, int *code, char *err)
{
	LIBSSH2_CHANNEL *ch = libssh2_channel_open_session(env->s);
	size_t n = 0, en = 0;
	if (!ch) {
		snprintf(err, HS_ERR_MAX, "cannot open a channel on %s:%d: %s", env->host, env->port,
		         sx_lasterr(env->s));
		return sx_transport_err(env->s) ? HS_E_IO : HS_E_UNAVAILABLE;
	}
	if (libssh2_channel_exec(ch, cmd) != 0) {
		snprintf(err, HS_ERR_MAX, "the remote refused to run a command on %s:%d: %s", env->host,
		         env->port, sx_lasterr(env->s));
		libssh2_channel_free(ch);
		return HS_E_UNAVAILABLE;
	}
	size_t off = 0;
	while (in && off < inlen) {
		ssize_t w = libssh2_channel_write(ch, (const char *)in + off, inlen - off);
		if (w < 0) {
			if (sx_transport_err(env->s)) {
				snprintf(err, HS_ERR_MAX, "writing to %s:%d: %s", env->host, env->port,
				         sx_lasterr(env->s));
				libssh2_channel_free(ch);
				return HS_E_IO;
			}
			break; /* the remote stopped reading: its status says why */
		}
		off += (size_t)w;
	}
	libssh2_channel_send_eof(ch);
	if (eout && ecap)
		eout[0] = '\0';
	for (;;) {
		char buf[4096];
		ssize_t r = libssh2_channel_read(ch, buf, sizeof(buf));
		if (r > 0) {
			size_t take = n + (size_t)r < cap - 1 ? (size_t)r : cap - 1 - n;
			memcpy(out + n, buf, take);
			n += take;
			continue;
		}
		ssize_t re = libssh2_channel_read_stderr(ch, buf, sizeof(buf));
		if (re > 0) {
			if (eout && ecap) {
				for (ssize_t i = 0; i < re; i++) {
					if (buf[i] == '\n') {
						if (en)
							eout[en] = '\0';
						en = 0;
					} else if (en < ecap - 1) {
						eout[en++] = buf[i];
						eout[en] = '\0';
					}
				}
			}
			continue;
		}
		if (r == 0)
			break;
		snprintf(err, HS_ERR_MAX, "reading from %s:%d: %s", env->host, env->port,
		         sx_lasterr(env->s));
		libssh2_channel_free(ch);
		return HS_E_IO;
	}
	out[n] = '\0';
	libssh2_channel_close(ch);
	libssh2_channel_wait_closed(ch);
	*code = libssh2_channel_get_exit_status(ch);
	libssh2_channel_free(ch);
	return HS_OK;
}

static int32_t
sx_run(struct sx_env *env, const char *cmd, char *out, size_t cap, int *code, char *err)
{
	return sx_run_in(env, cmd, NULL, 0, out, cap, NULL, 0, code, err);
}

/* Check one remote directory of the chain: a real directory of ours (or
 * root's, for the home), not writable by group or others. */
static int32_t
sx_check_dir(struct sx_env *env, const char *path, int create, int exact0700, char *err)
{
	LIBSSH2_SFTP_ATTRIBUTES a;
	if (create && libssh2_sftp_mkdir(env->sftp, path, 0700) != 0) {
		unsigned long fe = libssh2_sftp_last_error(env->sftp);
		if (fe != LIBSSH2_FX_FILE_ALREADY_EXISTS && fe != LIBSSH2_FX_FAILURE) {
			snprintf(err, HS_ERR_MAX, "cannot create %s:%s (sftp status %lu)%s", env->host, path,
			         fe, fe == LIBSSH2_FX_NO_SPACE_ON_FILESYSTEM ? ": the remote disk is full" : "");
			return fe == LIBSSH2_FX_PERMISSION_DENIED ? HS_E_PERM : HS_E_IO;
		}
	}
	if (libssh2_sftp_lstat(env->sftp, path, &a) != 0) {
		snprintf(err, HS_ERR_MAX, "cannot stat %s:%s (sftp status %lu)", env->host, path,
		         libssh2_sftp_last_error(env->sftp));
		return HS_E_IO;
	}
	if (!LIBSSH2_SFTP_S_ISDIR(a.permissions)) {
		snprintf(err, HS_ERR_MAX, "%s:%s is not a directory (a symlink is refused); remove it",
		         env->host, path);
		return HS_E_PERM;
	}
	if (!(a.flags & LIBSSH2_SFTP_ATTR_UIDGID) ||
	    (a.uid != (unsigned long)env->ruid && a.uid != 0) ||
	    (exact0700 && a.uid != (unsigned long)env->ruid) || (a.permissions & 022) ||
	    (exact0700 && (a.permissions & 07777) != 0700)) {
		snprintf(err, HS_ERR_MAX, "%s:%s is not a private directory of uid %ld (owner %lu, mode "
		         "%04lo); fix its owner and mode (chmod 700)", env->host, path, env->ruid, a.uid,
		         a.permissions & 07777);
		return HS_E_PERM;
	}
	return HS_OK;
}

/* Hash a remote file over SFTP; -1 on error. */
static int
sx_remote_hash(struct sx_env *env, const char *path, char hex[65], uint64_t *size)
{
	LIBSSH2_SFTP_HANDLE *h = libssh2_sftp_open(env->sftp, path, LIBSSH2_FXF_READ, 0);
	struct sx_sha256 c;
	uint8_t dg[32];
	char *buf = malloc(65536);
	if (!h || !buf) {
		if (h)
			libssh2_sftp_close(h);
		free(buf);
		return -1;
	}
	sx_sha256_init(&c);
	*size = 0;
	for (;;) {
		ssize_t r = libssh2_sftp_read(h, buf, 65536);
		if (r == 0)
			break;
		if (r < 0) {
			libssh2_sftp_close(h);
			free(buf);
			return -1;
		}
		sx_sha256_update(&c, buf, (size_t)r);
		*size += (uint64_t)r;
	}
	libssh2_sftp_close(h);
	free(buf);
	sx_sha256_final(&c, dg);
	sx_hex(dg, 32, hex);
	return 0;
}

static int32_t
sx_upload(struct sx_env *env, const char *tmp, const char *path, char *err)
{
	const char *local = env->st->host->runner_path;
	FILE *f = fopen(local, "re");
	char *buf = malloc(65536);
	int32_t rc = HS_OK;
	if (!f || !buf) {
		snprintf(err, HS_ERR_MAX, "cannot read the runner '%s': %s", local, strerror(errno));
		if (f)
			fclose(f);
		free(buf);
		return HS_E_UNAVAILABLE;
	}
	LIBSSH2_SFTP_HANDLE *h =
		libssh2_sftp_open(env->sftp, tmp, LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_EXCL,
		                  0700);
	if (!h) {
		unsigned long fe = libssh2_sftp_last_error(env->sftp);
		snprintf(err, HS_ERR_MAX, "cannot create %s:%s (sftp status %lu)%s", env->host, tmp, fe,
		         fe == LIBSSH2_FX_NO_SPACE_ON_FILESYSTEM ? ": the remote disk is full" : "");
		fclose(f);
		free(buf);
		return HS_E_IO;
	}
	size_t n;
	while (rc == HS_OK && (n = fread(buf, 1, 65536, f)) > 0) {
		size_t off = 0;
		while (off < n) {
			ssize_t w = libssh2_sftp_write(h, buf + off, n - off);
			if (w <= 0) {
				unsigned long fe = libssh2_sftp_last_error(env->sftp);
				snprintf(err, HS_ERR_MAX, "cannot write the runner to %s:%s (sftp status %lu): %s",
				         env->host, tmp, fe,
				         fe == LIBSSH2_FX_NO_SPACE_ON_FILESYSTEM || fe == LIBSSH2_FX_FAILURE
				             ? "the remote disk may be full; free space there"
				             : sx_lasterr(env->s));
				rc = HS_E_IO;
				break;
			}
			off += (size_t)w;
		}
	}
	fclose(f);
	free(buf);
	if (rc == HS_OK && libssh2_sftp_fsync(h) != 0 &&
	    libssh2_sftp_last_error(env->sftp) != LIBSSH2_FX_OP_UNSUPPORTED &&
	    libssh2_session_last_errno(env->s) != LIBSSH2_ERROR_SFTP_PROTOCOL) {
		snprintf(err, HS_ERR_MAX, "cannot sync %s:%s: the remote disk may be full", env->host, tmp);
		rc = HS_E_IO;
	}
	if (libssh2_sftp_close(h) != 0 && rc == HS_OK) {
		snprintf(err, HS_ERR_MAX, "cannot close %s:%s: the remote disk may be full", env->host, tmp);
		rc = HS_E_IO;
	}
	if (rc == HS_OK && libssh2_sftp_rename_ex(env->sftp, tmp, (unsigned)strlen(tmp), path,
	                                          (unsigned)strlen(path),
	                                          LIBSSH2_SFTP_RENAME_ATOMIC |
	                                          LIBSSH2_SFTP_RENAME_NATIVE) != 0) {
		/* Another hs put it there first: keep theirs (verified below). */
		LIBSSH2_SFTP_ATTRIBUTES a;
		if (libssh2_sftp_lstat(env->sftp, path, &a) != 0) {
			snprintf(err, HS_ERR_MAX, "cannot rename %s:%s into place (sftp status %lu)",
			         env->host, tmp, libssh2_sftp_last_error(env->sftp));
			rc = HS_E_IO;
		}
	}
	libssh2_sftp_unlink(env->sftp, tmp);
	return rc;
}

/* The runner in ~/.cache/hs/runner/<sha256>: chain checked, uploaded once, verified. */
static int32_t
sx_install_runner(struct sx_env *env, char *err)
{
	char p[1024], tmp[1100];
	int32_t rc;
	LIBSSH2_SFTP_ATTRIBUTES a;
	struct stat lsb;

	if (!env->sftp && !(env->sftp = libssh2_sftp_init(env->s))) {
		snprintf(err, HS_ERR_MAX, "cannot start SFTP on %s:%d: %s; the runner needs the sftp "
		         "subsystem", env->host, env->port, sx_lasterr(env->s));
		return sx_transport_err(env->s) ? HS_E_IO : HS_E_UNAVAILABLE;
	}
	if (stat(env->st->host->runner_path, &lsb) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot read the runner '%s': %s", env->st->host->runner_path,
		         strerror(errno));
		return HS_E_UNAVAILABLE;
	}
	if ((rc = sx_check_dir(env, env->rhome, 0, 0, err)) != HS_OK)
		return rc;
	static const char *const chain[] = { "/.cache", "/.cache/hs", "/.cache/hs/runner" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s%s", env->rhome, chain[i]);
		if ((rc = sx_check_dir(env, p, 1, 0, err)) != HS_OK)
			return rc;
	}
	snprintf(p, sizeof(p), "%s/.cache/hs/runner/%s", env->rhome, env->runner_hex);
	for (int attempt = 0; attempt < 2; attempt++) {
		if (libssh2_sftp_lstat(env->sftp, p, &a) == 0) {
			char hex[65];
			uint64_t size = 0;
			if (!LIBSSH2_SFTP_S_ISREG(a.permissions) || a.uid != (unsigned long)env->ruid ||
			    (a.permissions & 022)) {
				snprintf(err, HS_ERR_MAX, "%s:%s is not a private regular file of uid %ld; remove it",
				         env->host, p, env->ruid);
				return HS_E_PERM;
			}
			if (a.filesize == (uint64_t)lsb.st_size && (env->uploaded ||
			    (sx_remote_hash(env, p, hex, &size) == 0 && size == a.filesize &&
			     strcmp(hex, env->runner_hex) == 0))) {
				env->uploaded = 1;
				snprintf(env->rrunner, sizeof(env->rrunner), "%s", p);
				return HS_OK;
			}
			/* A torn or foreign file under our hash name: replace it. */
			sx_log(env, HS_LOG_WARN, "%s:%s does not match its hash; uploading it again",
			       env->host, p);
			libssh2_sftp_unlink(env->sftp, p);
		}
		if (attempt)
			break;
		LIBSSH2_SFTP_STATVFS vfs;
		snprintf(tmp, sizeof(tmp), "%s/.cache/hs/runner", env->rhome);
		if (libssh2_sftp_statvfs(env->sftp, tmp, strlen(tmp), &vfs) == 0 &&
		    vfs.f_bavail * vfs.f_frsize < (uint64_t)lsb.st_size + 65536) {
			snprintf(err, HS_ERR_MAX, "the remote disk is full: %s:%s has %llu bytes free, the "
			         "runner needs %lld; free space there", env->host, tmp,
			         (unsigned long long)(vfs.f_bavail * vfs.f_frsize), (long long)lsb.st_size);
			return HS_E_IO;
		}
		snprintf(tmp, sizeof(tmp), "%s/.cache/hs/runner/.%s.%ld.%llu", env->rhome, env->runner_hex,
		         (long)getpid(), (unsigned long long)sx_now());
		if ((rc = sx_upload(env, tmp, p, err)) != HS_OK)
			return rc;
	}
	snprintf(err, HS_ERR_MAX, "the runner uploaded to %s:%s does not verify (size or sha256); "
	         "check the remote disk", env->host, p);
	return HS_E_IO;
}

/* Without the sftp subsystem: the same checks by a POSIX sh script, the
 * upload through `cat` with noclobber (O_EXCL), verified, then renamed. */
#define SX_SH_CHECK                                                                          \
	"umask 077; u=$(id -u); H=$HOME; "                                                         \
	"bad() { echo \"hs-err: $*\" >&2; exit 3; }; "                                             \
	"chk() { { [ -d \"$1\" ] && [ ! -L \"$1\" ]; } || bad \"$1 is not a directory (a symlink is " \
	"refused); remove it\"; [ -z \"$(find \"$1\" -maxdepth 0 \\( \\( ! -user \"$u\" ! -user 0 \\) " \
	"-o -perm /022 \\) -print)\" ] || bad \"$1 is not a private directory of uid $u; fix its "  \
	"owner and mode (chmod 700)\"; }; "                                                        \
	"chk \"$H\"; for x in .cache .cache/hs .cache/hs/runner; do [ -e \"$H/$x\" ] || "          \
	"[ -L \"$H/$x\" ] || mkdir -m 700 \"$H/$x\" || bad \"cannot create $H/$x\"; chk \"$H/$x\"; done; " \
	"d=/tmp/hs-$u; [ -e $d ] || [ -L $d ] || mkdir -m 700 $d || bad \"cannot create $d\"; "   \
	"{ [ -d $d ] && [ ! -L $d ] && [ -O $d ] && [ -n \"$(find $d -maxdepth 0 -perm 0700)\" ]; } " \
	"|| bad \"$d is not a private directory of uid $u (want mode 0700); fix or remove it\"; "    \
	"f=$H/.cache/hs/runner/%s; "                                                               \
	"if [ -f \"$f\" ] && [ ! -L \"$f\" ] && [ -O \"$f\" ] && [ \"$(sha256sum < \"$f\")\" = \"%s  -\" ]; " \
	"then echo have; exit 0; fi; "                                                             \
	"free=$(df -Pk \"$H/.cache/hs/runner\" | awk 'NR==2{print $4}'); "                          \
	"[ -z \"$free\" ] || [ \"$free\" -gt %lld ] || bad \"the remote disk is full: "             \
	"$H/.cache/hs/runner has ${free}k free, the runner needs %lldk; free space there\"; "       \
	"echo need"
#define SX_SH_UPLOAD                                                                         \
	"umask 077; f=$HOME/.cache/hs/runner/%s; t=$f.$$.tmp; "                                   \
	"set -C; cat > \"$t\" || { rm -f \"$t\"; echo \"hs-err: cannot write $t: the remote disk may " \
	"be full; free space there\" >&2; exit 4; }; set +C; "                                     \
	"[ \"$(sha256sum < \"$t\")\" = \"%s  -\" ] || { rm -f \"$t\"; echo \"hs-err: the runner "   \
	"uploaded to $t does not verify (sha256sum); check the remote disk\" >&2; exit 5; }; "      \
	"chmod 700 \"$t\" && mv -f \"$t\" \"$f\" && echo ok"

static int32_t
sx_install_shell(struct sx_env *env, char *err)
{
	char cmd[4096], out[256], eout[400];
	int code = -1;
	int32_t rc;
	struct stat lsb;
	const char *local = env->st->host->runner_path;
	int fd = open(local, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &lsb) < 0) {
		snprintf(err, HS_ERR_MAX, "cannot read the runner '%s': %s", local, strerror(errno));
		if (fd >= 0)
			close(fd);
		return HS_E_UNAVAILABLE;
	}
	long long kb = (long long)lsb.st_size / 1024 + 64;
	snprintf(cmd, sizeof(cmd), SX_SH_CHECK, env->runner_hex, env->runner_hex, kb, kb);
	rc = sx_run_in(env, cmd, NULL, 0, out, sizeof(out), eout, sizeof(eout), &code, err);
	if (rc == HS_OK && code != 0) {
		snprintf(err, HS_ERR_MAX, "%s: %s", env->host,
		         strncmp(eout, "hs-err: ", 8) == 0 ? eout + 8 : eout[0] ? eout : "remote check failed");
		rc = HS_E_PERM;
		if (strstr(eout, "disk is full"))
			rc = HS_E_IO;
	}
	if (rc == HS_OK && strncmp(out, "need", 4) == 0) {
		char *bin = malloc((size_t)lsb.st_size + 1);
		ssize_t got = bin ? read(fd, bin, (size_t)lsb.st_size) : -1;
		if (got != lsb.st_size) {
			snprintf(err, HS_ERR_MAX, "cannot read the runner '%s'", local);
			rc = HS_E_UNAVAILABLE;
		} else {
			snprintf(cmd, sizeof(cmd), SX_SH_UPLOAD, env->runner_hex, env->runner_hex);
			rc = sx_run_in(env, cmd, bin, (size_t)got, out, sizeof(out), eout, sizeof(eout), &code,
			               err);
			if (rc == HS_OK && (code != 0 || strncmp(out, "ok", 2) != 0)) {
				snprintf(err, HS_ERR_MAX, "%s: %s", env->host,
				         strncmp(eout, "hs-err: ", 8) == 0 ? eout + 8
				         : eout[0] ? eout : "the runner upload failed");
				rc = HS_E_IO;
			}
		}
		free(bin);
	}
	close(fd);
	if (rc == HS_OK) {
		snprintf(env->rrunner, sizeof(env->rrunner), "%s/.cache/hs/runner/%s", env->rhome,
		         env->runner_hex);
		env->uploaded = 1;
	}
	return rc;
}

/* Connect, verify the host key, authenticate, find the architecture and
 * install the runner.  On failure the connection is dropped. */
static int32_t
sx_connect(struct sx_env *env, char *err)
{
	int32_t rc;
	char out[1024];
	int code = -1;

	if ((rc = sx_tcp(env, err)) != HS_OK)
		return rc;
	env->s = libssh2_session_init_ex(NULL, NULL, NULL, env);
	if (!env->s) {
		snprintf(err, HS_ERR_MAX, "out of memory");
		sx_drop(env, 0);
		return HS_E_NOMEM;
	}
	libssh2_session_set_blocking(env->s, 1);
	libssh2_session_set_timeout(env->s, (long)env->connect_timeout_s * 1000);
	libssh2_session_method_pref(env->s, LIBSSH2_METHOD_HOSTKEY,
	                            "ssh-ed25519,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,"
	                            "ecdsa-sha2-nistp521,ssh-rsa");
	if (libssh2_session_handshake(env->s, env->sock) != 0) {
		int e = libssh2_session_last_errno(env->s);
		snprintf(err, HS_ERR_MAX, "ssh handshake with %s:%d failed: %s%s", env->host, env->port,
		         sx_lasterr(env->s),
		         e == LIBSSH2_ERROR_TIMEOUT ? " (no answer within ssh.connect_timeout)" : "");
		sx_drop(env, 0);
		return e == LIBSSH2_ERROR_TIMEOUT ? HS_E_TIMEOUT : HS_E_UNAVAILABLE;
	}
	if ((rc = sx_hostkey(env, err)) != HS_OK || (rc = sx_auth(env, err)) != HS_OK) {
		sx_drop(env, 0);
		return rc;
	}
	rc = sx_run(env, "uname -m && id -u && { command -v timeout || echo -; } && "
	            "{ command -v bash || echo -; } && echo \"$HOME\"",
	            out, sizeof(out), &code, err);
	if (rc != HS_OK) {
		sx_drop(env, 0);
		return rc;
	}
	char arch[64] = "", tmo[512] = "", bash[64] = "";
	long uid = -1;
	char *hl = NULL;
	for (int i = 0, nl = 0; out[i]; i++)
		if (out[i] == '\n' && ++nl == 4) {
			hl = out + i + 1;
			break;
		}
	if (hl)
		hl[strcspn(hl, "\n")] = '\0';
	if (code != 0 || !hl || hl[0] != '/' || sscanf(out, "%63s %ld %511s %63s", arch, &uid, tmo, bash) != 4) {
		snprintf(err, HS_ERR_MAX, "%s@%s:%d cannot run 'uname -m; id -u' (exit %d): the remote "
		         "login shell must be a POSIX sh", env->user, env->host, env->port, code);
		sx_drop(env, 0);
		return HS_E_UNAVAILABLE;
	}
	snprintf(env->arch, sizeof(env->arch), "%s", arch);
	snprintf(env->rtimeout, sizeof(env->rtimeout), "%s", tmo[0] == '/' ? "yes" : "no");
	snprintf(env->rshell, sizeof(env->rshell), "%s", bash[0] == '/' ? bash : "/bin/sh");
	env->ruid = uid;
	struct utsname un;
	uname(&un);
	env->runner_ok = env->use_runner && env->st->host->runner_path &&
	                 strcmp(un.machine, env->arch) == 0;
	snprintf(env->rhome, sizeof(env->rhome), "%s", hl);
	char base[64];
	snprintf(base, sizeof(base), "/tmp/hs-%ld", env->ruid);
	snprintf(env->rdir, sizeof(env->rdir), "%s/ssh-%s", base, env->env_name);
	if (env->runner_ok && !env->sftp && !env->no_sftp &&
	    !(env->sftp = libssh2_sftp_init(env->s))) {
		if (sx_transport_err(env->s)) {
			snprintf(err, HS_ERR_MAX, "connection to %s:%d lost: %s", env->host, env->port,
			         sx_lasterr(env->s));
			sx_drop(env, 0);
			return HS_E_IO;
		}
		env->no_sftp = 1;
		sx_log(env, HS_LOG_INFO, "%s:%d has no sftp subsystem: installing the runner through sh",
		       env->host, env->port);
	}
	if (env->runner_ok && env->no_sftp) {
		if ((rc = sx_install_shell(env, err)) != HS_OK) {
			sx_drop(env, 0);
			return rc;
		}
	} else if (!env->runner_ok) {
		/* exec mode: the core keeps the shell state in the runtime dir */
		char cmd[1024], o2[64], eout[400];
		snprintf(cmd, sizeof(cmd),
		         "umask 077; u=$(id -u); for x in /tmp/hs-$u /tmp/hs-$u/ssh-'%s'; do "
		         "[ -e \"$x\" ] || [ -L \"$x\" ] || mkdir -m 700 \"$x\"; "
		         "{ [ -d \"$x\" ] && [ ! -L \"$x\" ] && [ -O \"$x\" ] && "
		         "[ -n \"$(find \"$x\" -maxdepth 0 -perm 0700)\" ]; } || "
		         "{ echo \"hs-err: $x is not a private directory of uid $u (want mode 0700); fix or "
		         "remove it\" >&2; exit 3; }; done", env->env_name);
		rc = sx_run_in(env, cmd, NULL, 0, o2, sizeof(o2), eout, sizeof(eout), &code, err);
		if (rc == HS_OK && code != 0) {
			snprintf(err, HS_ERR_MAX, "%s: %s", env->host,
			         strncmp(eout, "hs-err: ", 8) == 0 ? eout + 8 : "cannot create the runtime directory");
			rc = HS_E_PERM;
		}
		if (rc != HS_OK) {
			sx_drop(env, 0);
			return rc;
		}
	} else {
		if ((rc = sx_install_runner(env, err)) != HS_OK ||
		    (rc = sx_check_dir(env, base, 1, 1, err)) != HS_OK ||
		    (rc = sx_check_dir(env, env->rdir, 1, 1, err)) != HS_OK) {
			sx_drop(env, 0);
			return rc;
		}
		/* SFTP is needed only for the install: its channel goes. */
		libssh2_sftp_shutdown(env->sftp);
		env->sftp = NULL;
	}
	if (env->keepalive_s > 0)
		libssh2_keepalive_config(env->s, 1, (unsigned)env->keepalive_s);
	libssh2_session_set_timeout(env->s, (long)env->connect_timeout_s * 1000);
	env->ever_connected = 1;
	return HS_OK;
}

/* Connected, or reconnect with bounded retries and backoff (transport errors only). */
static int32_t
sx_ensure(struct sx_env *env, char *err)
{
	int32_t rc = HS_OK;
	if (env->s)
		return HS_OK;
	int tries = env->ever_connected ? SX_RETRIES : 1;
	for (int i = 0; i < tries; i++) {
		if (i)
			sx_sleep_ms(100L << i);
		rc = sx_connect(env, err);
		if (rc == HS_OK || rc == HS_E_HOSTKEY || rc == HS_E_AUTH || rc == HS_E_CONFIG ||
		    rc == HS_E_PERM)
			return rc;
	}
	if (env->ever_connected && rc != HS_OK) {
		char e2[HS_ERR_MAX];
		snprintf(e2, sizeof(e2), "reconnect failed after %d tries: %s", tries, err);
		snprintf(err, HS_ERR_MAX, "%s", e2);
	}
	return rc;
}

/* --------------------------------------------------------------- the pump */

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
static int32_t
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

static int32_t
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
	env->idle = spec->runner_idle_s > 0 ? spec->runner_idle_s : 600;
	if ((rc = sx_config(st, env, err)) != HS_OK) {
		free(env);
		return rc;
	}
	if (env->use_runner && st->host->runner_path) {
		FILE *f = fopen(st->host->runner_path, "re");
		struct sx_sha256 c;
		uint8_t dg[32], buf[65536];
		size_t n;
		if (!f) {
			snprintf(err, HS_ERR_MAX, "cannot read the runner '%s': %s", st->host->runner_path,
			         strerror(errno));
			free(env);
			return HS_E_UNAVAILABLE;
		}
		sx_sha256_init(&c);
		while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
			sx_sha256_update(&c, buf, n);
		fclose(f);
		sx_sha256_final(&c, dg);
		sx_hex(dg, 32, env->runner_hex);
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

/* ------------------------------------------------------- exec per channel */

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

struct sx_kill_job {
	long pgid;
};

/* TERM the command's process group on the host, KILL it 2 s later. */
static int32_t
sx_job_kill(struct sx_env *env, void *arg, char *err)
{
	struct sx_kill_job *k = arg;
	char cmd[256], out[64];
	int code = 0;
	int32_t rc = sx_ensure(env, err);
	if (rc != HS_OK)
		return rc;
	snprintf(cmd, sizeof(cmd),
	         "kill -TERM -- -%ld 2>/dev/null; (sleep 2; kill -KILL -- -%ld) >/dev/null 2>&1 </dev/null &",
	         k->pgid, k->pgid);
	return sx_run(env, cmd, out, sizeof(out), &code, err);
}

static int32_t
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
	int remote_timeout = req->deadline_ms > 0 && strcmp(env->rtimeout, "yes") == 0;
	len += (size_t)snprintf(cmd, cap, "exec ");
	if (remote_timeout)
		len += (size_t)snprintf(cmd + len, cap - len, "timeout -k 2 %lld.%03lld ",
		                        (long long)(req->deadline_ms / 1000),
		                        (long long)(req->deadline_ms % 1000));
	len += (size_t)snprintf(cmd + len, cap - len, "sh -c '" SX_EXEC_PRELUDE "' hs",
	                        remote_timeout ? "$PPID" : "$$");
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
		/* with the remote timeout, give it the first go (and its -k 2) */
		int over = !killed && req->deadline_ms > 0 &&
		           sx_now() - start > (uint64_t)req->deadline_ms + (remote_timeout ? 3000 : 0);
		if (cancelled || over) {
			res->cancelled = cancelled;
			res->timed_out = over;
			killed = 1;
			kill_at = sx_now();
		}
		/* the group is known once the prelude's first line arrived */
		if (killed && !kill_sent && pgid > 1) {
			struct sx_kill_job kj = { pgid };
			char ke[HS_ERR_MAX];
			kill_sent = 1;
			if (sx_call(env, sx_job_kill, &kj, ke) != HS_OK)
				sx_log(env, HS_LOG_WARN, "cannot kill the command on %s: %s", env->host, ke);
		}
		if (killed && sx_now() - kill_at > 5000)
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
	if (res->timed_out || (remote_timeout && j.exited == 1 && (j.code == 124 || j.code == 137) &&
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

static int32_t
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
	.init = sx_init,
	.fini = sx_fini,
	.probe = sx_probe,
	.open = sx_open,
	.runner_stream = sx_runner_stream,
	.exec = sx_exec,
	.cancel = sx_cancel,
	.close = sx_close,
};
