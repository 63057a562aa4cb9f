/*
 * pathsec.h - ownership and mode checks for every file and directory hs
 * trusts (plugins, config, policy, state).
 *
 * A path is trusted when the file and every directory from its parent up to
 * "/" is owned by root or by the effective user and is not writable by group
 * or others (a sticky, root-owned directory such as /tmp is accepted as a
 * parent, because others cannot replace entries they do not own there).
 */
#ifndef HS_PATHSEC_H
#define HS_PATHSEC_H

#include <stddef.h>
#include <sys/stat.h>

/*
 * Check that st (of an object named path) is owned by root or the effective
 * user and not group/world-writable.  Returns 0, or -1 with a one-line reason
 * in err.
 */
int hs_pathsec_check_stat(const struct stat *st, const char *path, char *err, size_t errlen);

/*
 * Check every directory from dirname(path) up to "/" with lstat: each must be a
 * real directory, owned by root or the effective user, and not group/world-
 * writable unless sticky and root-owned.  Returns 0 or -1 with a reason.
 */
int hs_pathsec_check_parents(const char *path, char *err, size_t errlen);

/*
 * Open path with O_NOFOLLOW|O_CLOEXEC (plus flags), fstat the descriptor,
 * require a regular file, and run both checks above.  Returns the descriptor,
 * or -1 with a reason ("... is a symbolic link", "... is writable by others").
 */
int hs_pathsec_open(const char *path, int flags, char *err, size_t errlen);

/*
 * Create path (and missing parents) with mode 0700 when absent, then lstat it:
 * it must be a directory owned by the effective user with mode exactly 0700.
 * Returns 0 or -1 with a reason.
 */
int hs_pathsec_private_dir(const char *path, char *err, size_t errlen);

/*
 * Write len bytes to path atomically: a temporary file in the same directory
 * (O_EXCL|O_NOFOLLOW, the given mode), fsync, rename over path.  Nothing is
 * half-written: on any failure the old file stays.  Returns 0 or -1 with a reason.
 */
int hs_pathsec_write_atomic(const char *path, const void *buf, size_t len, mode_t mode,
                            char *err, size_t errlen);

#endif /* HS_PATHSEC_H */
