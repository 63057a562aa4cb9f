/* SPDX-License-Identifier: MIT */
/*
 * dirchain.h - open a directory only after checking its whole chain from
 * "/", the way tmux and OpenSSH check theirs.
 *
 * One implementation for the core (hs_pathsec), the plugins that make
 * directories (local, singularity, slurm) and the static hs-runner: libc
 * only, so it builds with musl-gcc too.
 *
 * Every directory on the way is opened with openat(parent, name,
 * O_PATH|O_NOFOLLOW) relative to the descriptor of the one before, so what
 * is checked is what is used, and the caller gets a descriptor of the leaf
 * to use instead of the path (openat, mkdirat, unlinkat, fdopendir).
 *
 * Rules (see docs/decisions.md, "Directory chains"):
 *  - each ancestor is a directory owned by root or the effective user, not
 *    writable by group or others unless sticky (others cannot replace an
 *    entry they do not own there, and every entry we pass through must
 *    itself be owned by root or the user); inside a user namespace, an
 *    unmapped owner (the overflow uid) counts as root;
 *  - a symbolic link is followed only in an ancestor and only when it is
 *    owned by root or the user (e.g. /var/run -> /run, ~/.cache -> /big);
 *    its target is walked and checked the same way; the leaf is never a link;
 *  - the leaf is owned by the effective user with mode 0700 (or, with
 *    HS_DIRCHAIN_TRUSTED, checked like an ancestor: root or the user, not
 *    writable by others; with HS_DIRCHAIN_NOWRITE, the user's and not
 *    writable by others);
 *  - with HS_DIRCHAIN_CREATE, missing components are made with
 *    mkdirat(parent, name, 0700): they are ours.
 */
#ifndef HS_DIRCHAIN_H
#define HS_DIRCHAIN_H

#include <stddef.h>

#define HS_DIRCHAIN_CREATE  0x1 /* make missing components, mode 0700 */
#define HS_DIRCHAIN_TRUSTED 0x2 /* leaf: root or the user, not writable by others */
#define HS_DIRCHAIN_NOWRITE 0x4 /* leaf: the user's, not writable by others (any read bits) */

/*
 * Check the chain of the absolute directory path and open its leaf.
 * Returns a descriptor (O_RDONLY|O_DIRECTORY|O_CLOEXEC; with TRUSTED, an
 * O_PATH one for a directory we may search but not read) of the leaf, or -1
 * with one line in err: "PATH: what is wrong; the fix", where the fix ends
 * with "or HINT" when hint is not NULL (e.g. "set XDG_RUNTIME_DIR").
 */
int hs_dirchain_open(const char *path, int flags, const char *hint, char *err, size_t errlen);

#endif
