/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * test-corpus - the shipped policy verifies its own examples, and the
 * corpora come out as required: dangerous.txt ask/deny, everyday.txt allow,
 * agent.txt at least 98% allow, hermes.txt as each line expects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>

#include "tests/safety/common.h"

static struct hs_policy *pol;

static void
test_examples(void **state)
{
	char err[1024];
	int fails;

	(void)state;
	assert_true(hs_policy_rule_count(pol) >= 50);
	fails = hs_policy_verify_examples(pol, err, sizeof(err));
	if (fails)
		fprintf(stderr, "%d example failures, first: %s\n", fails, err);
	assert_int_equal(fails, 0);
}

static void
test_dangerous(void **state)
{
	struct hs_analysis an;
	size_t n, i, bad = 0;
	char **v = test_read_corpus("dangerous.txt", &n);

	(void)state;
	assert_true(n >= 300);
	for (i = 0; i < n; i++) {
		assert_int_equal(hs_analyse(pol, v[i], HS_CONTEXT_HOST, &an), 0);
		if (an.verdict == HS_VERDICT_ALLOW) {
			fprintf(stderr, "dangerous but allowed: %s\n", v[i]);
			bad++;
		}
		free(v[i]);
	}
	free(v);
	printf("dangerous.txt: %zu commands, %zu allowed\n", n, bad);
	assert_int_equal(bad, 0);
}

static void
test_everyday(void **state)
{
	struct hs_analysis an;
	size_t n, i, bad = 0;
	char **v = test_read_corpus("everyday.txt", &n);

	(void)state;
	assert_true(n >= 400);
	for (i = 0; i < n; i++) {
		hs_analyse(pol, v[i], HS_CONTEXT_HOST, &an);
		if (an.verdict != HS_VERDICT_ALLOW) {
			fprintf(stderr, "everyday but %s: %s (%s)\n", hs_verdict_name(an.verdict), v[i],
				an.n_findings ? an.findings[0].rule_id : "?");
			bad++;
		}
		free(v[i]);
	}
	free(v);
	printf("everyday.txt: %zu commands, %zu not allowed\n", n, bad);
	assert_int_equal(bad, 0);
}

static void
test_agent(void **state)
{
	struct hs_analysis an;
	size_t n, i, allowed = 0;
	char **v = test_read_corpus("agent.txt", &n);

	(void)state;
	assert_true(n >= 300);
	for (i = 0; i < n; i++) {
		hs_analyse(pol, v[i], HS_CONTEXT_HOST, &an);
		if (an.verdict == HS_VERDICT_ALLOW)
			allowed++;
		else
			printf("agent.txt not allowed (%s, %s): %s\n", hs_verdict_name(an.verdict),
			       an.n_findings ? an.findings[0].rule_id : "?", v[i]);
		free(v[i]);
	}
	free(v);
	printf("agent.txt: %zu commands, %zu allowed (%.1f%%)\n", n, allowed, 100.0 * (double)allowed / (double)n);
	assert_true(allowed * 100 >= n * 98);
}

/* One case of hermes.txt: "deny", "flag" or "allow", an optional tag, the command. */
struct hermes_case {
	char expect[8];
	char tag[16];
	char *command;
};

/* Undo the escapes of hermes.txt (\n \r \t \\ \xHH) in place. */
static void
hermes_unescape(char *s)
{
	char *r, *w;

	for (r = w = s; *r; r++) {
		if (*r != '\\' || !r[1]) {
			*w++ = *r;
			continue;
		}
		r++;
		if (*r == 'n')
			*w++ = '\n';
		else if (*r == 'r')
			*w++ = '\r';
		else if (*r == 't')
			*w++ = '\t';
		else if (*r == 'x' && isxdigit((unsigned char)r[1]) && isxdigit((unsigned char)r[2])) {
			char hex[3] = { r[1], r[2], '\0' };

			*w++ = (char)strtol(hex, NULL, 16);
			r += 2;
		} else
			*w++ = *r;
	}
	*w = '\0';
}

static struct hermes_case *
hermes_read(size_t *count)
{
	const char *top = getenv("top_srcdir");
	char path[1024], line[65536], *tab, *at;
	struct hermes_case *v = NULL;
	size_t n = 0, cap = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/tests/safety/hermes.txt", top ? top : ".");
	fp = fopen(path, "r");
	*count = 0;
	if (!fp)
		return NULL;
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		tab = strchr(line, '\t');
		assert_non_null(tab);
		*tab = '\0';
		if (n == cap) {
			cap = cap ? cap * 2 : 512;
			v = realloc(v, cap * sizeof(*v));
			assert_non_null(v);
		}
		memset(&v[n], 0, sizeof(v[n]));
		at = strchr(line, '@');
		if (at) {
			*at = '\0';
			snprintf(v[n].tag, sizeof(v[n].tag), "%s", at + 1);
		}
		assert_true(!strcmp(line, "deny") || !strcmp(line, "flag") || !strcmp(line, "allow"));
		snprintf(v[n].expect, sizeof(v[n].expect), "%s", line);
		hermes_unescape(tab + 1);
		v[n].command = strdup(tab + 1);
		n++;
	}
	fclose(fp);
	*count = n;
	return v;
}

/*
 * Hermes's own test commands, with hs's expectations.  Lines tagged
 * @engine or @open are counted but may fail, unless HS_HERMES_STRICT is
 * set; every untagged line must come out as it says.
 */
static void
test_hermes(void **state)
{
	const char *strict = getenv("HS_HERMES_STRICT");
	size_t n, i, bad = 0, tot[3] = { 0 }, ok[3] = { 0 }, tagged = 0, tagged_ok = 0;
	struct hermes_case *v = hermes_read(&n);
	struct hs_analysis an;

	(void)state;
	assert_true(n >= 500);
	for (i = 0; i < n; i++) {
		int k = v[i].expect[0] == 'd' ? 0 : v[i].expect[0] == 'f' ? 1 : 2, pass;

		hs_analyse(pol, v[i].command, HS_CONTEXT_HOST, &an);
		pass = k == 0 ? an.verdict == HS_VERDICT_DENY : k == 1 ? an.verdict != HS_VERDICT_ALLOW
								     : an.verdict == HS_VERDICT_ALLOW;
		/* Hardline lines count among the harmful ones too. */
		tot[k]++;
		ok[k] += pass;
		if (k == 0) {
			tot[1]++;
			ok[1] += an.verdict != HS_VERDICT_ALLOW;
		}
		if (v[i].tag[0]) {
			tagged++;
			tagged_ok += pass;
		}
		if (!pass) {
			int counts = !v[i].tag[0] || (strict && *strict);

			printf("hermes.txt %s%s%s, got %s (%s): %s\n", v[i].expect, v[i].tag[0] ? "@" : "", v[i].tag,
			       hs_verdict_name(an.verdict), an.n_findings ? an.findings[0].rule_id : "-", v[i].command);
			bad += counts;
		}
		free(v[i].command);
	}
	free(v);
	printf("hermes: harmful flagged %zu/%zu, hardline denied %zu/%zu, harmless allowed %zu/%zu"
	       " (tagged @engine/@open: %zu of %zu pass)\n", ok[1], tot[1], ok[0], tot[0], ok[2], tot[2], tagged_ok, tagged);
	assert_int_equal(bad, 0);
}

static void
test_sandbox_context(void **state)
{
	struct hs_analysis an;
	size_t n, i, ask_host = 0, ask_sb = 0;
	char **v = test_read_corpus("dangerous.txt", &n);

	(void)state;
	/* Sandbox context skips sandbox-scope rules and allows opaque commands, never the reverse. */
	for (i = 0; i < n; i++) {
		struct hs_analysis h;

		hs_analyse(pol, v[i], HS_CONTEXT_HOST, &h);
		hs_analyse(pol, v[i], HS_CONTEXT_SANDBOX, &an);
		assert_true(an.verdict <= h.verdict);
		ask_host += h.verdict != HS_VERDICT_ALLOW;
		ask_sb += an.verdict != HS_VERDICT_ALLOW;
		free(v[i]);
	}
	free(v);
	printf("dangerous.txt in sandbox context: %zu of %zu still ask/deny\n", ask_sb, ask_host);
	assert_true(ask_sb < ask_host);
	assert_true(ask_sb > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_examples),
		cmocka_unit_test(test_dangerous),
		cmocka_unit_test(test_everyday),
		cmocka_unit_test(test_agent),
		cmocka_unit_test(test_hermes),
		cmocka_unit_test(test_sandbox_context),
	};
	int rc;

	pol = test_load_policy();
	if (!pol)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	hs_policy_free(pol);
	test_remove_policy();
	return rc;
}
