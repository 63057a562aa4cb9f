/* SPDX-License-Identifier: MIT */
/*
 * hsb-attach.c - libhsb: runner stream processes and private directories
 * (see sdk/hs/hsb.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hs/backend.h>

#include <hs/hsb.h>

#include "plugins/common/hsb-int.h"
#include "runner/dirchain.h"

_Static_assert(HSB_ERR_MAX == HS_ERR_MAX, "one error buffer size");
_Static_assert(HSB_DIR_CREATE == HS_DIRCHAIN_CREATE && HSB_DIR_TRUSTED == HS_DIRCHAIN_TRUSTED &&
               HSB_DIR_NOWRITE == HS_DIRCHAIN_NOWRITE, "libhsb's directory flags are dirchain's");

int
hsb_attach_start(const struct hsb_attach_spawn *s, pid_t *pid, int32_t *fd, char *err)
{
	static const char *const noenv[] = { NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int sv[2], e;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		e = errno;
		snprintf(err, HS_ERR_MAX, "cannot create a socket pair: %s", strerror(e));
		return e;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
	/* Nothing hs inherited (a shell's `9>&1`) goes on to the stream's
	 * process, nor to a daemon it starts (which also closes them itself). */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
	if (s->stderr_path)
		posix_spawn_file_actions_addopen(&fa, 2, s->stderr_path,
		                                 O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
	posix_spawnattr_init(&at);
	if (s->new_pgroup) {
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
		posix_spawnattr_setpgroup(&at, 0);
	}
	e = posix_spawn(pid, s->argv[0], &fa, &at, (char *const *)s->argv,
	                (char *const *)(s->envp ? s->envp : noenv));
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(sv[1]);
	if (e != 0) {
		close(sv[0]);
		snprintf(err, HS_ERR_MAX, "cannot start '%s': %s", s->argv[0], strerror(e));
		return e;
	}
	*fd = sv[0];
	return 0;
}

int64_t
hsb_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
hsb_attach_reap(pid_t *pids, int n, int block_ms)
{
	int64_t end = hsb_mono_ms() + block_ms;
	for (int i = 0; i < n; i++) {
		while (pids[i] > 0) {
			pid_t r = waitpid(pids[i], NULL, WNOHANG);
			if (r == pids[i] || (r < 0 && errno != EINTR)) {
				pids[i] = 0;
				break;
			}
			if (r < 0)
				continue; /* EINTR */
			if (block_ms <= 0)
				break;
			if (hsb_mono_ms() >= end) {
				/* It did not follow its stdin's end: end it. */
				kill(pids[i], SIGKILL);
				while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR)
					;
				pids[i] = 0;
				break;
			}
			struct timespec ts = { 0, 20 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
}

int
hsb_attach_slot(pid_t *pids, int n)
{
	hsb_attach_reap(pids, n, 0);
	for (int i = 0; i < n; i++)
		if (pids[i] == 0)
			return i;
	return -1;
}

int32_t
hsb_dir_check(const char *dir, int flags, const char *hint, char *err)
{
	int fd = hs_dirchain_open(dir, flags, hint, err, HS_ERR_MAX);

	if (fd < 0)
		return strncmp(err, "cannot ", 7) == 0 ? HS_E_IO : HS_E_PERM;
	close(fd);
	return HS_OK;
}

int32_t
hsb_private_dir(const char *dir, char *err)
{
	return hsb_dir_check(dir, HS_DIRCHAIN_CREATE, "set XDG_RUNTIME_DIR", err);
}
