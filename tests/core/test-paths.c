/* SPDX-License-Identifier: MIT */
/*
 * test-paths.c - the build tree's plugin directories come from what the
 * build made (plugins/NAME/.libs/NAME.so), not from a list of backend names.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/paths.h"

static int fails;

static void
check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		fails++;
}

static void
touch(const char *root, const char *rel)
{
	char p[PATH_MAX], *s;
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	FILE *f = fopen(p, "w");
	if (f)
		fclose(f);
}

int
main(void)
{
	char root[] = "/tmp/hs-paths.XXXXXX", want[PATH_MAX], cmd[PATH_MAX + 16];
	struct hs_paths p;
	char *dirs[16];

	if (!mkdtemp(root))
		return 99;
	/* Two plugins no core source names, a helper library, a plugin not built. */
	touch(root, "plugins/zeta/.libs/zeta.so");
	touch(root, "plugins/alpha/.libs/alpha.so");
	touch(root, "plugins/common/.libs/libhscommon.so");
	touch(root, "plugins/unbuilt/unbuilt.c");

	memset(&p, 0, sizeof(p));
	p.in_build_tree = 1;
	snprintf(p.build_dir, sizeof(p.build_dir), "%s", root);
	const char *conf[] = { "/conf/dir" };
	size_t n = hs_paths_plugin_dirs(&p, conf, 1, dirs, 16);
	check(n == 4, "configured dir, two built plugins, the installed dir");
	check(n > 0 && strcmp(dirs[0], "/conf/dir") == 0, "configured directories first");
	snprintf(want, sizeof(want), "%s/plugins/alpha/.libs", root);
	check(n > 1 && strcmp(dirs[1], want) == 0, "built plugin alpha found (name order)");
	snprintf(want, sizeof(want), "%s/plugins/zeta/.libs", root);
	check(n > 2 && strcmp(dirs[2], want) == 0, "built plugin zeta found");
	check(n > 3 && strcmp(dirs[n - 1], HS_PLUGINDIR) == 0, "installed directory last");
	for (size_t i = 0; i < n; i++)
		free(dirs[i]);

	p.in_build_tree = 0;
	n = hs_paths_plugin_dirs(&p, conf, 1, dirs, 16);
	check(n == 2, "outside the build tree: no build directories");
	for (size_t i = 0; i < n; i++)
		free(dirs[i]);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		fails++;
	return fails ? 1 : 0;
}
