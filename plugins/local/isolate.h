/* SPDX-License-Identifier: MIT */
/*
 * isolate.h - shared between hs-isolate and the local backend: the names of
 * files in a session's runtime directory, and the seccomp filter.
 */
#ifndef HS_ISOLATE_H
#define HS_ISOLATE_H

#include <stddef.h>

/* Taken (LOCK_EX) by one starter at a time. */
#define ISO_START_LOCK "isolate.lock"
/* Held (LOCK_EX) by the sandbox's init for its whole life. */
#define ISO_ALIVE_FILE "isolate.alive"
/* DIR/box is all of DIR the sandbox sees (read-write): the daemon's own directory. */
#define ISO_BOX "box"
/* Where hs-runner is bound inside the sandbox. */
#define ISO_RUNNER_INSIDE "/run/hs-runner"

/* 0 when a filter can be built here; else -1 and why, with the fix. */
int iso_seccomp_check(char *err, size_t len);
/* Loads the filter into this thread (no_new_privs must be set); -1 and why. */
int iso_seccomp_load(char *err, size_t len);

#endif
