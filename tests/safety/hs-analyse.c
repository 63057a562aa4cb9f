/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * hs-analyse - print the verdict for commands (a development aid and the
 * driver of the corpus scripts): one command per argument, or one per
 * line on stdin with -.  Usage: hs-analyse [-s] POLICY_DIR CMD...|-
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/internal.h"

static void
show(const struct hs_policy *p, const char *cmd, enum hs_context ctx)
{
	struct hs_analysis an;
	size_t i;

	hs_analyse(p, cmd, ctx, &an);
	printf("%s\t%s", hs_verdict_name(an.verdict), cmd);
	for (i = 0; i < an.n_findings; i++)
		printf("\t[%s: %s]", an.findings[i].rule_id, an.findings[i].argv_norm);
	if (an.opaque)
		printf("\t(opaque: %s)", an.opaque_reason);
	printf("\n");
}

int
main(int argc, char **argv)
{
	struct hs_policy *p;
	struct hs_policy_paths paths = { NULL, 0, "/home/user" };
	enum hs_context ctx = HS_CONTEXT_HOST;
	const char *dir;
	char err[512], line[65536];
	int i = 1;

	if (argc > 1 && !strcmp(argv[1], "-s")) {
		ctx = HS_CONTEXT_SANDBOX;
		i++;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: hs-analyse [-s] POLICY_DIR CMD...\n");
		return 2;
	}
	dir = argv[i++];
	if (hs_policy_load(&p, &dir, 1, &paths, err, sizeof(err))) {
		fprintf(stderr, "hs-analyse: %s\n", err);
		return 1;
	}
	if (i < argc && !strcmp(argv[i], "-")) {
		while (fgets(line, sizeof(line), stdin)) {
			char *r, *w;

			line[strcspn(line, "\n")] = '\0';
			/* Corpus lines write a newline inside a command as \n. */
			for (r = w = line; *r; r++, w++) {
				if (r[0] == '\\' && r[1] == 'n' && (r == line || r[-1] != '\\')) {
					*w = '\n';
					r++;
				} else {
					*w = *r;
				}
			}
			*w = '\0';
			if (line[0] && line[0] != '#')
				show(p, line, ctx);
		}
	} else if (i < argc && !strcmp(argv[i], "--verify")) {
		int n = hs_policy_verify_examples(p, err, sizeof(err));

		size_t k, j, f;

		printf("%zu rules, %d failures%s%s\n", hs_policy_rule_count(p), n, n ? ": " : "", n ? err : "");
		for (k = 0; k < p->n_rules; k++) {
			const struct hs_rule *r = &p->rules[k];

			for (j = 0; j < r->examples.n + r->counterexamples.n; j++) {
				int is_ex = j < r->examples.n, hit = 0;
				const char *cmd = is_ex ? r->examples.v[j] : r->counterexamples.v[j - r->examples.n];
				struct hs_analysis an;

				hs_analyse(p, cmd, HS_CONTEXT_HOST, &an);
				for (f = 0; f < an.n_findings; f++)
					hit |= !strcmp(an.findings[f].rule_id, r->id);
				if (hit != is_ex) {
					printf("  %s %s: ", r->id, is_ex ? "MISSED" : "FALSE");
					show(p, cmd, HS_CONTEXT_HOST);
				}
			}
		}
	} else {
		for (; i < argc; i++)
			show(p, argv[i], ctx);
	}
	hs_policy_free(p);
	return 0;
}
