/* SPDX-License-Identifier: MIT */
/*
 * hs/fakehost.h - a fake core for a backend's own unit tests.
 *
 * A plugin never links against the core, so its tests drive it through this
 * stand-in: it fills a struct hs_host_v1 whose config getters read values set
 * with hs_fakehost_set(), whose log captures lines in memory, whose approve()
 * answers as told, and whose directories live under a private temporary root.
 * Link with -lhsfakehost (see `pkg-config --libs --static hs-backend`).
 */
#ifndef HS_FAKEHOST_H
#define HS_FAKEHOST_H

#include <hs/backend.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hs_fakehost;

/*
 * Create a fake host for backend NAME, with state/cache/runtime directories
 * (0700) under a fresh temporary directory.  runner_path may be NULL.
 * Returns NULL on failure (errno set).
 */
struct hs_fakehost *hs_fakehost_new(const char *name, const char *runner_path);

/* Free the host and remove its temporary directories. */
void hs_fakehost_free(struct hs_fakehost *fh);

/* The host table to pass to init(); valid until hs_fakehost_free(). */
const struct hs_host_v1 *hs_fakehost_host(struct hs_fakehost *fh);

/*
 * Set config key (within the plugin's section) to value.  Values that parse
 * as integers answer config_int; "true"/"false" answer config_bool; a value
 * containing ',' answers config_strings as a list.  Returns 0, or -1.
 */
int hs_fakehost_set(struct hs_fakehost *fh, const char *key, const char *value);

/* What approve() answers: HS_OK (approve) or HS_E_DENIED (the default). */
void hs_fakehost_set_approval(struct hs_fakehost *fh, int32_t answer);

/* All log lines so far, "LEVEL message\n" each; never NULL. */
const char *hs_fakehost_log(const struct hs_fakehost *fh);

/* How many times approve() was called. */
unsigned hs_fakehost_approvals(const struct hs_fakehost *fh);

/* The temporary root holding state/, cache/ and run/. */
const char *hs_fakehost_root(const struct hs_fakehost *fh);

#ifdef __cplusplus
}
#endif

#endif /* HS_FAKEHOST_H */
