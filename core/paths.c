/* SPDX-License-Identifier: MIT */
/*
 * paths.c - where hs keeps its files.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/paths.h"

/* $VAR if it is an absolute path, else $HOME/fallback. */
static int
xdg(char *out, size_t len, const char *var, const char *home, const char *fallback)
{
	const char *v = getenv(var);
	int n;
	if (v && v[0] == '/')
		n = snprintf(out, len, "%s/hs", v);
	else
		n = snprintf(out, len, "%s/%s/hs", home, fallback);
	return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

/* The directory of the running binary.  Returns 0, or -1 when unknown. */
static int
exe_dir(char *out, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", out, len - 1);
	if (n <= 0)
		return -1;
	out[n] = '\0';
	char *slash = strrchr(out, '/');
	if (slash)
		*slash = '\0';
	return 0;
}

/* Whether dir is the build tree or below it. */
static int
under_build_tree(const char *dir)
{
	size_t bl = strlen(HS_BUILDDIR);
	return strncmp(dir, HS_BUILDDIR, bl) == 0 && (dir[bl] == '/' || dir[bl] == '\0');
}

int
hs_paths_init(struct hs_paths *p, char *err, size_t errlen)
{
	const char *home = getenv("HOME");

	memset(p, 0, sizeof(*p));
	if (!home || home[0] != '/') {
		struct passwd *pw = getpwuid(geteuid());
		home = pw ? pw->pw_dir : NULL;
	}
	if (!home || home[0] != '/') {
		snprintf(err, errlen, "cannot find the home directory: HOME is unset and no passwd entry");
		return -1;
	}
	snprintf(p->home, sizeof(p->home), "%s", home);
	if (xdg(p->state, sizeof(p->state), "XDG_STATE_HOME", home, ".local/state") < 0 ||
	    xdg(p->config, sizeof(p->config), "XDG_CONFIG_HOME", home, ".config") < 0 ||
	    xdg(p->cache, sizeof(p->cache), "XDG_CACHE_HOME", home, ".cache") < 0) {
		snprintf(err, errlen, "home directory path too long");
		return -1;
	}
	const char *rt = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	/* XDG_RUNTIME_DIR is node-local and ours by definition; check it anyway. */
	if (rt && rt[0] == '/' && stat(rt, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	    (st.st_mode & 077) == 0)
		snprintf(p->runtime, sizeof(p->runtime), "%s/hs", rt);
	else
		snprintf(p->runtime, sizeof(p->runtime), "/tmp/hs-%u", (unsigned)geteuid());

	if (exe_dir(p->exe_dir, sizeof(p->exe_dir)) == 0)
		p->in_build_tree = under_build_tree(p->exe_dir);
	if (p->in_build_tree)
		snprintf(p->build_dir, sizeof(p->build_dir), "%s", HS_BUILDDIR);
	return 0;
}

int
hs_paths_from_build_tree(void)
{
	char d[PATH_MAX];
	return exe_dir(d, sizeof(d)) == 0 && under_build_tree(d);
}

static size_t
add_dir(char **dirs, size_t n, size_t max, const char *d)
{
	if (n >= max || !d || !*d)
		return n;
	for (size_t i = 0; i < n; i++)
		if (strcmp(dirs[i], d) == 0)
			return n;
	dirs[n] = strdup(d);
	return dirs[n] ? n + 1 : n;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * What the build made: every build/plugins/NAME/.libs that holds NAME.so
 * (libtool's output for plugin NAME), in name order.  A directory that holds
 * no plugin of its own name (a helper library) is not searched.
 */
static size_t
add_built(const char *build, char **dirs, size_t n, size_t max)
{
	char top[PATH_MAX], d[PATH_MAX], so[PATH_MAX + 64];
	char *names[64];
	size_t k = 0;
	DIR *dh;

	snprintf(top, sizeof(top), "%s/plugins", build);
	if (!(dh = opendir(top)))
		return n;
	for (struct dirent *e; (e = readdir(dh)) && k < sizeof(names) / sizeof(names[0]);) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(so, sizeof(so), "%s/%s/.libs/%s.so", top, e->d_name, e->d_name);
		if (access(so, F_OK) == 0 && (names[k] = strdup(e->d_name)))
			k++;
	}
	closedir(dh);
	qsort(names, k, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < k; i++) {
		snprintf(d, sizeof(d), "%s/%s/.libs", top, names[i]);
		n = add_dir(dirs, n, max, d);
		free(names[i]);
	}
	return n;
}

size_t
hs_paths_plugin_dirs(const struct hs_paths *p, const char *const *conf_dirs, size_t n_conf,
                     char **dirs, size_t max)
{
	size_t n = 0;

	/* HS_PLUGIN_DIR reaches here through the configuration (plugin_dirs), so
	 * an admin's lock on plugin_dirs holds for it too. */
	for (size_t i = 0; i < n_conf; i++)
		n = add_dir(dirs, n, max, conf_dirs[i]);
	/* An hs run from its build tree loads the plugins built with it, before
	 * any installed copy (which may be older). */
	if (p->in_build_tree && p->build_dir[0])
		n = add_built(p->build_dir, dirs, n, max);
	n = add_dir(dirs, n, max, HS_PLUGINDIR);
	return n;
}

int
hs_paths_runner(const struct hs_paths *p, const char *configured, char *out, size_t len,
                char *err, size_t errlen)
{
	const char *cand[4];
	char tree[PATH_MAX];
	size_t n = 0;

	/* HS_RUNNER arrives as runner_path, under its lock. */
	if (configured && *configured)
		cand[n++] = configured;
	if (p->in_build_tree) {
		snprintf(tree, sizeof(tree), "%s/runner/hs-runner", HS_BUILDDIR);
		cand[n++] = tree;
	}
	cand[n++] = HS_RUNNERDIR "/hs-runner";
	for (size_t i = 0; i < n; i++) {
		if (cand[i][0] == '/' && access(cand[i], X_OK) == 0) {
			snprintf(out, len, "%s", cand[i]);
			return 0;
		}
	}
	snprintf(err, errlen, "hs-runner not found (looked for '%s'); set runner_path or HS_RUNNER",
	         cand[n - 1]);
	return -1;
}
