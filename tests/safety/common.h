/* SPDX-License-Identifier: MIT */
/*
 * common.h - helpers shared by the safety tests (header-only, static).
 */
#ifndef HS_TESTS_SAFETY_COMMON_H
#define HS_TESTS_SAFETY_COMMON_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safety/safety.h"

static char test_policy_dir[256];

/*
 * Copy the shipped policy into a private directory with strict modes, so
 * the tests do not depend on the checkout's umask (group-writable rule
 * files are refused by design).
 */
static const char *
test_copy_policy(void)
{
	const char *top = getenv("top_srcdir");
	char src[1024], from[1300], to[1300], buf[8192];
	struct dirent *d;
	DIR *dir;
	FILE *in, *out;
	size_t n;

	snprintf(src, sizeof(src), "%s/policy", top ? top : ".");
	snprintf(test_policy_dir, sizeof(test_policy_dir), "/tmp/hs-policy-test.XXXXXX");
	if (!mkdtemp(test_policy_dir))
		return NULL;
	chmod(test_policy_dir, 0755);
	dir = opendir(src);
	if (!dir)
		return NULL;
	while ((d = readdir(dir))) {
		if (!strstr(d->d_name, ".rules"))
			continue;
		snprintf(from, sizeof(from), "%s/%s", src, d->d_name);
		snprintf(to, sizeof(to), "%s/%s", test_policy_dir, d->d_name);
		in = fopen(from, "r");
		out = fopen(to, "w");
		if (!in || !out)
			abort();
		while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
			fwrite(buf, 1, n, out);
		fclose(in);
		fclose(out);
		chmod(to, 0644);
	}
	closedir(dir);
	return test_policy_dir;
}

static void
test_remove_policy(void)
{
	char cmd[512];

	if (test_policy_dir[0] && strstr(test_policy_dir, "/tmp/hs-policy-test.")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", test_policy_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", test_policy_dir);
	}
}

static struct hs_policy *
test_load_policy(void)
{
	static const char *prot[] = { "/home/user/.local/state/hs/allow.list" };
	struct hs_policy_paths paths = { prot, 1, "/home/user" };
	struct hs_policy *p = NULL;
	const char *dir = test_copy_policy();
	char err[512];

	if (!dir || hs_policy_load(&p, &dir, 1, &paths, err, sizeof(err))) {
		fprintf(stderr, "cannot load policy: %s\n", dir ? err : "cannot copy");
		return NULL;
	}
	return p;
}

/* Read a corpus: one command per line, "#" comments, "\n" for a newline. */
static __attribute__((unused)) char **
test_read_corpus(const char *name, size_t *count)
{
	const char *top = getenv("top_srcdir");
	char path[1024], line[65536], **v = NULL, *r, *w;
	size_t n = 0, cap = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/tests/safety/%s", top ? top : ".", name);
	fp = fopen(path, "r");
	if (!fp) {
		*count = 0;
		return NULL;
	}
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		for (r = w = line; *r; r++, w++) {
			if (r[0] == '\\' && r[1] == 'n' && (r == line || r[-1] != '\\')) {
				*w = '\n';
				r++;
			} else {
				*w = *r;
			}
		}
		*w = '\0';
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = realloc(v, cap * sizeof(*v));
		}
		v[n++] = strdup(line);
	}
	fclose(fp);
	*count = n;
	return v;
}

static __attribute__((unused)) int
test_has_rule(const struct hs_analysis *an, const char *id)
{
	size_t i;

	for (i = 0; i < an->n_findings; i++)
		if (!strcmp(an->findings[i].rule_id, id))
			return 1;
	return 0;
}

#endif
