/* SPDX-License-Identifier: MIT */
/*
 * paths.h - where hs keeps its files, and where it looks for plugins and
 * for hs-runner.
 */
#ifndef HS_PATHS_H
#define HS_PATHS_H

#include <limits.h>
#include <stddef.h>

struct hs_paths {
	char state[PATH_MAX];   /* $XDG_STATE_HOME/hs */
	char config[PATH_MAX];  /* $XDG_CONFIG_HOME/hs */
	char cache[PATH_MAX];   /* $XDG_CACHE_HOME/hs */
	char runtime[PATH_MAX]; /* $XDG_RUNTIME_DIR/hs, else /tmp/hs-UID (node-local) */
	char home[PATH_MAX];
	char exe_dir[PATH_MAX]; /* directory of the running hs binary */
	int in_build_tree;      /* running from the build tree (tests) */
	char build_dir[PATH_MAX]; /* the build tree (HS_BUILDDIR) when in_build_tree */
};

/* Fill p from the environment.  Returns 0, or -1 with a reason. */
int hs_paths_init(struct hs_paths *p, char *err, size_t errlen);

/*
 * Whether the running hs is the one in its build tree (the test suite's),
 * not an installed copy.  Returns 1 or 0.
 */
int hs_paths_from_build_tree(void);

/*
 * Build the plugin search path: the configured plugin_dirs (HS_PLUGIN_DIR
 * is prepended to them by the configuration, under its lock), then (only
 * when running from the build tree) the output directory of every plugin
 * built there (build_dir/plugins/NAME/.libs holding NAME.so, in name
 * order), then the installed plugin directory.
 * Returns the number of entries written to dirs (each malloc'd).
 */
size_t hs_paths_plugin_dirs(const struct hs_paths *p, const char *const *conf_dirs, size_t n_conf,
                            char **dirs, size_t max);

/*
 * Find hs-runner: configured path (runner_path or HS_RUNNER), else the build tree's
 * runner when running from it, else the installed one.  Writes out; returns 0
 * or -1 with a reason when none is executable.
 */
int hs_paths_runner(const struct hs_paths *p, const char *configured, char *out, size_t len,
                    char *err, size_t errlen);

#endif /* HS_PATHS_H */
