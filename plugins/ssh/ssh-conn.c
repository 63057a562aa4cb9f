/* SPDX-License-Identifier: MIT */
/*
 * ssh-conn.c - the ssh backend's connection: TCP connect, host key
 * verification against known_hosts (appended under accept-new),
 * authentication (identity file, ssh-agent, default keys), the remote probe
 * of architecture, uid and home, then the runner's install (ssh-install.c)
 * or the runtime directory of exec mode; reconnects and drops.  Also the
 * small helpers the other files share, and one short remote command over
 * its own channel (sx_run).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
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

#include "sx.h"

/* ---------------------------------------------------------------- helpers */

void
sx_log(struct sx_env *env, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	env->st->host->log(env->st->host->ctx, level, "%s", msg);
}

const char *
sx_lasterr(LIBSSH2_SESSION *s)
{
	char *m = NULL;
	if (!s)
		return "no session";
	libssh2_session_last_error(s, &m, NULL, 0);
	return m && *m ? m : "unknown libssh2 error";
}

int
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
int
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

/*
 * The 1-based line of known_hosts file path with an "@revoked" entry for
 * the host key blob key (len bytes), 0 when there is none.  libssh2 does not
 * know the marker (it reads "@revoked" as a host name), so a revoked key
 * would be "not found" and taken under accept-new; hs refuses it for any
 * host, as it is revoked wherever it turns up.
 */
static int
sx_kh_revoked(const char *path, const char *key, size_t len)
{
	char line[16384];
	int n = 0, hit = 0, partial = 0;
	char *want = malloc(len / 3 * 4 + 8);
	FILE *f;
	if (!want)
		return 0;
	sx_b64((const uint8_t *)key, len, want);
	if (!(f = fopen(path, "re"))) {
		free(want);
		return 0;
	}
	while (!hit && fgets(line, sizeof(line), f)) {
		int cont = partial; /* the rest of a line longer than the buffer */
		partial = !strchr(line, '\n') && !feof(f);
		if (cont)
			continue;
		n++;
		char *save = NULL, *marker = strtok_r(line, " \t\r\n", &save);
		if (!marker || strcmp(marker, "@revoked") != 0)
			continue;
		char *hosts = strtok_r(NULL, " \t\r\n", &save);
		char *type = strtok_r(NULL, " \t\r\n", &save);
		char *b64 = strtok_r(NULL, " \t\r\n", &save);
		if (!hosts || !type || !b64)
			continue;
		b64[strcspn(b64, "=")] = '\0'; /* sx_b64 does not pad */
		if (strcmp(b64, want) == 0)
			hit = n;
	}
	fclose(f);
	free(want);
	return hit;
}

int
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

uint64_t
sx_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void
sx_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------------ connection */

/* Drop the connection: every stream's socket is closed, so the core sees
 * the stream break and asks for a new one (which reconnects). */
void
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
	int revoked = sx_kh_revoked(env->known_hosts, key, len);
	if (revoked) {
		snprintf(err, HS_ERR_MAX,
		         "host key of %s (%s SHA256:%s) is revoked (@revoked in %s line %d): the server "
		         "must get a new host key; this one is never accepted", name,
		         sx_keytype_name(type), fp, env->known_hosts, revoked);
		return HS_E_HOSTKEY;
	}
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
int32_t
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

int32_t
sx_run(struct sx_env *env, const char *cmd, char *out, size_t cap, int *code, char *err)
{
	return sx_run_in(env, cmd, NULL, 0, out, cap, NULL, 0, code, err);
}

/* Connect, verify the host key, authenticate, find the architecture and
 * install the runner.  On failure the connection is dropped. */
int32_t
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
	env->oneshot_ok = !env->use_runner && env->runner_hex[0] && strcmp(un.machine, env->arch) == 0;
	snprintf(env->rhome, sizeof(env->rhome), "%s", hl);
	char base[64];
	snprintf(base, sizeof(base), "/tmp/hs-%ld", env->ruid);
	snprintf(env->rdir, sizeof(env->rdir), "%s/ssh-%s", base, env->env_name);
	if (env->attach_only && !env->ever_connected) {
		/* Attach only: no remote directory, no environment; install and create nothing. */
		char cmd[400], o1[64], e1[400];
		snprintf(cmd, sizeof(cmd), "[ -d '%s' ] && [ ! -L '%s' ]", env->rdir, env->rdir);
		rc = sx_run_in(env, cmd, NULL, 0, o1, sizeof(o1), e1, sizeof(e1), &code, err);
		if (rc == HS_OK && code != 0) {
			snprintf(err, HS_ERR_MAX, "%s: environment '%s' is gone (no %s)", env->host,
			         env->env_name, env->rdir);
			rc = HS_E_NOTFOUND;
		}
		if (rc != HS_OK) {
			sx_drop(env, 0);
			return rc;
		}
	}
	if ((env->runner_ok || env->oneshot_ok) && !env->sftp && !env->no_sftp &&
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
		/* The one-shot runner for every command's channel; without it
		 * (the install refused or failed) the group kill stays. */
		if (env->oneshot_ok) {
			char e2[HS_ERR_MAX];
			rc = env->no_sftp ? sx_install_shell(env, e2) : sx_install_runner(env, e2);
			if (env->sftp) {
				libssh2_sftp_shutdown(env->sftp);
				env->sftp = NULL;
			}
			if (rc != HS_OK) {
				if (sx_transport_err(env->s)) {
					snprintf(err, HS_ERR_MAX, "%s", e2);
					sx_drop(env, 0);
					return HS_E_IO;
				}
				env->oneshot_ok = 0;
				sx_log(env, HS_LOG_WARN, "no one-shot runner on %s (%s): a deadline or cancel "
				       "kills only the command's process group", env->host, e2);
			}
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
int32_t
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
