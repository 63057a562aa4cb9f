#include "config.h"

/*
 * test-corpus - the shipped policy verifies its own examples, and the
 * corpora come out as required: dangerous.txt ask/deny, everyday.txt allow,
 * agent.txt at least 98% allow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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
