/* SPDX-License-Identifier: MIT */
/*
 * runkey.h - the per-session key of the runner channel (hs-runner(7),
 * "Authentication"): what proves to a session's runner daemon that a
 * stream comes from hs, and to hs that it reached that daemon.
 */
#ifndef HS_RUNKEY_H
#define HS_RUNKEY_H

#include <stddef.h>
#include <stdint.h>

#include "runner/hmac.h"

struct hs_backend;

/*
 * Fill key with the key of environment env_name of backend be.  A
 * persistent environment (one that later hs processes re-attach) keeps its
 * key in BACKEND_RUNTIME_DIR/ENV.key (0600, this user, no symlink), made
 * on first use; others get a fresh key in memory only.  Also makes this
 * process non-dumpable, since it now holds a secret.  Returns 0, or -1
 * with a one-line reason in err.
 */
int hs_runkey_get(struct hs_backend *be, const char *env_name, int persistent,
                  uint8_t key[HSR_KEY_LEN], char *err, size_t errlen);

/* Remove the key file of env_name (its environment was torn down). */
void hs_runkey_remove(struct hs_backend *be, const char *env_name);

#endif
