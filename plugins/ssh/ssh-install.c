/* SPDX-License-Identifier: MIT */
/*
 * ssh-install.c - installing hs-runner on the remote host, as
 * ~/.cache/hs/runner/<sha256>: over SFTP with every directory of the chain
 * checked (ours, private), uploaded once under a temporary name, renamed
 * into place and verified by its hash; without the sftp subsystem, the
 * same checks and upload through a POSIX sh script.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"
#include "sx.h"

/* Check one remote directory of the chain: a real directory of ours (or
 * root's, for the home), not writable by group or others. */
int32_t
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

/* One directory (or link) above the home: root's or ours, and a directory
 * nobody else can write unless sticky, as for local directory chains. */
static int32_t
sx_check_above_one(struct sx_env *env, const char *path, char *err)
{
	LIBSSH2_SFTP_ATTRIBUTES a;
	if (libssh2_sftp_lstat(env->sftp, path, &a) != 0) {
		snprintf(err, HS_ERR_MAX, "cannot stat %s:%s (sftp status %lu)", env->host, path,
		         libssh2_sftp_last_error(env->sftp));
		return HS_E_IO;
	}
	int link = LIBSSH2_SFTP_S_ISLNK(a.permissions);
	if (!(a.flags & LIBSSH2_SFTP_ATTR_UIDGID) ||
	    (a.uid != (unsigned long)env->ruid && a.uid != 0) ||
	    (!link && (!LIBSSH2_SFTP_S_ISDIR(a.permissions) ||
	               ((a.permissions & 022) && !(a.permissions & 01000))))) {
		snprintf(err, HS_ERR_MAX, "%s:%s, above the home of uid %ld, is not safe (owner %lu, mode "
		         "%04lo): it must be root's or the user's and writable by nobody else unless "
		         "sticky; fix it or use another account", env->host, path, env->ruid, a.uid,
		         a.permissions & 07777);
		return HS_E_PERM;
	}
	return HS_OK;
}

/* Every directory from "/" down to the home's parent, on the home's path as
 * given and on its physical path (the server resolves the links). */
static int32_t
sx_check_above(struct sx_env *env, char *err)
{
	char real[1024], p[1024];
	const char *paths[2] = { env->rhome, NULL };
	int n = libssh2_sftp_realpath(env->sftp, env->rhome, real, sizeof(real) - 1);
	int32_t rc;

	if (n > 0) {
		real[n] = '\0';
		if (strcmp(real, env->rhome) != 0)
			paths[1] = real;
	}
	for (int k = 0; k < 2 && paths[k]; k++) {
		if ((rc = sx_check_above_one(env, "/", err)) != HS_OK)
			return rc;
		for (size_t i = 1; paths[k][i]; i++) {
			if (paths[k][i] != '/' || !paths[k][i + 1])
				continue;
			snprintf(p, sizeof(p), "%.*s", (int)i, paths[k]);
			if ((rc = sx_check_above_one(env, p, err)) != HS_OK)
				return rc;
		}
	}
	return HS_OK;
}

/* Hash a remote file over SFTP; -1 on error. */
static int
sx_remote_hash(struct sx_env *env, const char *path, char hex[65], uint64_t *size)
{
	LIBSSH2_SFTP_HANDLE *h = libssh2_sftp_open(env->sftp, path, LIBSSH2_FXF_READ, 0);
	struct hsr_sha256 c;
	uint8_t dg[32];
	char *buf = malloc(65536);
	if (!h || !buf) {
		if (h)
			libssh2_sftp_close(h);
		free(buf);
		return -1;
	}
	hsr_sha256_init(&c);
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
		hsr_sha256_update(&c, buf, (size_t)r);
		*size += (uint64_t)r;
	}
	libssh2_sftp_close(h);
	free(buf);
	hsr_sha256_final(&c, dg);
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
int32_t
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
	if ((rc = sx_check_above(env, err)) != HS_OK ||
	    (rc = sx_check_dir(env, env->rhome, 0, 0, err)) != HS_OK)
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
	"above() { p=$1; while :; do case $p in */*) p=${p%%/*};; *) break;; esac; "                \
	"[ -n \"$p\" ] || p=/; if [ -L \"$p\" ]; then q='! -type l'; else q='-perm /022 ! -perm -1000'; fi; " \
	"[ -z \"$(find \"$p\" -maxdepth 0 \\( \\( ! -user \"$u\" ! -user 0 \\) -o \\( $q \\) \\) -print)\" ] || " \
	"bad \"$p, above the home of uid $u, is not safe: it must be root's or the user's and writable " \
	"by nobody else unless sticky; fix it or use another account\"; [ \"$p\" != / ] || break; done; }; " \
	"above \"$H\"; R=$(cd -P \"$H\" 2>/dev/null && pwd -P) && [ \"$R\" != \"$H\" ] && above \"$R\"; " \
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

int32_t
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
