/* SPDX-License-Identifier: MIT */
/*
 * pathsec.h - ownership and mode checks for every file and directory hs
 * trusts (plugins, config, policy, state).
 *
 * A path is trusted when the file and every directory from "/" down to its
 * parent is owned by root or by the effective user and is not writable by
 * group or others (a sticky directory such as /tmp is accepted as a parent,
 * because others cannot replace entries they do not own there, and the
 * entry below it must be root's or the user's).
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
 * Check every directory from "/" down to dirname(path) (a relative path is
 * taken from the current directory) with runner/dirchain.c: each must be
 * a directory owned by root or the effective user, not group/world-writable
 * unless sticky; a link is followed only when root's or the user's.
 * Returns 0 or -1 with a reason.
 */
int hs_pathsec_check_parents(const char *path, char *err, size_t errlen);

/*
 * Open path's checked directory (above), then path itself relative to it
 * with O_NOFOLLOW|O_CLOEXEC (plus flags), fstat the descriptor, require a
 * regular file owned by root or the user that others cannot write.
 * Returns the descriptor, or -1 with a reason ("... is a symbolic link",
 * "... is writable by others").
 */
int hs_pathsec_open(const char *path, int flags, char *err, size_t errlen);

/*
 * The same for name in the checked directory dirfd (path names it in
 * messages).  Returns the descriptor, or -1 with a reason and errno set
 * (ENOENT when name does not exist).
 */
int hs_pathsec_openat(int dirfd, const char *name, const char *path, int flags, char *err,
                      size_t errlen);

/*
 * Open the private directory path, creating what is missing with mode
 * 0700, its whole chain checked from "/" (runner/dirchain.h): the leaf must
 * be the effective user's with mode exactly 0700.  Returns a descriptor
 * of it (O_RDONLY|O_DIRECTORY|O_CLOEXEC), or -1 with one line in err naming
 * the path and the fix ("...; remove it or HINT" when hint is not NULL).
 */
int hs_pathsec_dir_open(const char *path, const char *hint, char *err, size_t errlen);

/*
 * Write len bytes to the file name in the directory dirfd (whose path dir,
 * or NULL, is only for messages) atomically, everything relative to the
 * descriptor: a temporary file beside it (O_EXCL|O_NOFOLLOW, the given mode),
 * fsync, rename over name.  Nothing is half-written: on any failure the old
 * file stays.  Returns 0 or -1 with a reason.
 */
int hs_pathsec_write_at(int dirfd, const char *dir, const char *name, const void *buf, size_t len,
                        mode_t mode, char *err, size_t errlen);

#endif /* HS_PATHSEC_H */
