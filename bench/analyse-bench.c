/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * analyse-bench - commands analysed per second on one core.
 *
 * Usage: analyse-bench POLICY_DIR CORPUS... ; every corpus line (the test
 * corpora: dangerous, everyday and agent commands) is analysed in a loop
 * for about two seconds, and the rate is printed, per second of wall time
 * and per second of this thread's CPU time (the figure that a loaded,
 * shared machine does not distort).  Target: >= 200000/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/safety/safety.h"

static double
now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	struct hs_policy_paths paths = { NULL, 0, "/home/user" };
	struct hs_policy *p;
	struct hs_analysis an;
	char err[512], line[65536], **cmds = NULL, *r, *w;
	size_t n = 0, cap = 0, i, total = 0, verdicts[3] = { 0, 0, 0 };
	const char *dir;
	double t0, t1, c0, c1;
	int k;
	FILE *fp;

	if (argc < 3) {
		fprintf(stderr, "usage: analyse-bench POLICY_DIR CORPUS...\n");
		return 2;
	}
	dir = argv[1];
	if (hs_policy_load(&p, &dir, 1, &paths, err, sizeof(err))) {
		fprintf(stderr, "analyse-bench: %s\n", err);
		return 1;
	}
	for (k = 2; k < argc; k++) {
		fp = fopen(argv[k], "r");
		if (!fp) {
			fprintf(stderr, "analyse-bench: cannot open '%s'\n", argv[k]);
			return 1;
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
				cap = cap ? cap * 2 : 1024;
				cmds = realloc(cmds, cap * sizeof(*cmds));
				if (!cmds)
					return 1;
			}
			cmds[n++] = strdup(line);
		}
		fclose(fp);
	}
	if (!n)
		return 1;
	t0 = now(CLOCK_MONOTONIC);
	c0 = now(CLOCK_THREAD_CPUTIME_ID);
	do {
		for (i = 0; i < n; i++) {
			hs_analyse(p, cmds[i], HS_CONTEXT_HOST, &an);
			verdicts[an.verdict]++;
		}
		total += n;
		t1 = now(CLOCK_MONOTONIC);
	} while (t1 - t0 < 2.0);
	c1 = now(CLOCK_THREAD_CPUTIME_ID);
	printf("analysed %zu commands (%zu distinct; %zu allow, %zu ask, %zu deny) in %.2f s (%.2f s of CPU): "
	       "%.0f commands/s of wall time, %.0f commands per CPU second on one core\n",
	       total, n, verdicts[0], verdicts[1], verdicts[2], t1 - t0, c1 - c0, (double)total / (t1 - t0),
	       (double)total / (c1 - c0));
	for (i = 0; i < n; i++)
		free(cmds[i]);
	free(cmds);
	hs_policy_free(p);
	return 0;
}
