/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * test-approval - allow list round trip and file checks, prompt escaping
 * and answers, audit lines (valid JSON), redaction across chunks.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <yajl/yajl_tree.h>

#include "core/safety/allowlist.h"
#include "core/safety/audit.h"
#include "core/safety/prompt.h"
#include "core/safety/redact.h"

static void
test_allowlist(void **state)
{
	char dir[] = "/tmp/hs-allow.XXXXXX", path[256], err[512];
	struct hs_allowlist *a;
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/allowlist", dir);
	assert_int_equal(hs_allowlist_load(&a, path, err, sizeof(err)), 0);
	assert_int_equal(hs_allowlist_count(a), 0);
	assert_int_equal(hs_allowlist_add(a, "git.force-push", "git push -f origin main", err, sizeof(err)), 0);
	assert_int_equal(hs_allowlist_add(a, "db.x", "psql -c 'a\tb\nc\\\\d'", err, sizeof(err)), 0);
	assert_int_equal(hs_allowlist_add(a, "db.x", "psql -c 'a\tb\nc\\\\d'", err, sizeof(err)), 0);
	hs_allowlist_free(a);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(hs_allowlist_load(&a, path, err, sizeof(err)), 0);
	assert_int_equal(hs_allowlist_count(a), 2);
	assert_true(hs_allowlist_check(a, "git.force-push", "git push -f origin main"));
	assert_true(hs_allowlist_check(a, "db.x", "psql -c 'a\tb\nc\\\\d'"));
	assert_false(hs_allowlist_check(a, "git.force-push", "git push -f origin other"));
	assert_false(hs_allowlist_check(a, "other", "git push -f origin main"));
	hs_allowlist_free(a);
	/* Group-writable or a symlink: refused, naming the file. */
	chmod(path, 0620);
	assert_int_equal(hs_allowlist_load(&a, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "writable"));
	assert_non_null(strstr(err, path));
	chmod(path, 0600);
	{
		char link[300];

		snprintf(link, sizeof(link), "%s/link", dir);
		assert_int_equal(symlink(path, link), 0);
		assert_int_equal(hs_allowlist_load(&a, link, err, sizeof(err)), -1);
		unlink(link);
	}
	unlink(path);
	rmdir(dir);
}

static void
test_prompt(void **state)
{
	char out[256];

	(void)state;
	hs_prompt_escape("ls\n", 3, out, sizeof(out));
	assert_string_equal(out, "ls\\n");
	hs_prompt_escape("echo ok\x1b[2K\rrm -rf /", 20, out, sizeof(out));
	assert_string_equal(out, "echo ok\\x1b[2K\\rrm -rf /");
	hs_prompt_escape("a\tb\\c\x7f", 6, out, sizeof(out));
	assert_string_equal(out, "a\\tb\\\\c\\x7f");
	hs_prompt_escape("x\xff\xfey", 4, out, sizeof(out));
	assert_string_equal(out, "x\\xff\\xfey");
	hs_prompt_escape("caf\xc3\xa9", 5, out, sizeof(out));
	assert_string_equal(out, "caf\xc3\xa9");
	/* U+202E RIGHT-TO-LEFT OVERRIDE can make a command read backwards. */
	hs_prompt_escape("a\xe2\x80\xae" "b", 5, out, sizeof(out));
	assert_string_equal(out, "a\\u202eb");
	hs_prompt_escape("nul\0x", 5, out, sizeof(out));
	assert_string_equal(out, "nul\\x00x");
	assert_int_equal(hs_prompt_escape("abcdef", 6, out, 4), 3);
	assert_int_equal(hs_prompt_parse_answer("o"), HS_ANSWER_ONCE);
	assert_int_equal(hs_prompt_parse_answer(" Once\n"), HS_ANSWER_ONCE);
	assert_int_equal(hs_prompt_parse_answer("s"), HS_ANSWER_SESSION);
	assert_int_equal(hs_prompt_parse_answer("session"), HS_ANSWER_SESSION);
	assert_int_equal(hs_prompt_parse_answer("a"), HS_ANSWER_ALWAYS);
	assert_int_equal(hs_prompt_parse_answer("ALWAYS"), HS_ANSWER_ALWAYS);
	assert_int_equal(hs_prompt_parse_answer("d"), HS_ANSWER_DENY);
	assert_int_equal(hs_prompt_parse_answer("deny"), HS_ANSWER_DENY);
	assert_int_equal(hs_prompt_parse_answer("yes"), HS_ANSWER_INVALID);
	assert_int_equal(hs_prompt_parse_answer(""), HS_ANSWER_INVALID);
	assert_int_equal(hs_prompt_parse_answer(NULL), HS_ANSWER_INVALID);
	assert_string_equal(hs_answer_name(HS_ANSWER_ALWAYS), "always");
}

static void
test_audit(void **state)
{
	char path[] = "/tmp/hs-audit.XXXXXX", err[256], buf[4096], *line;
	const char *rules[] = { "fs.rm-root", "opaque" };
	struct hs_audit_record r = { 1700000000123LL, "s1", "local", "rm -rf / \"quoted\"\n\xff", "deny", rules, 2,
				     "deny", "mode:deny", 1, 77, 5, NULL, NULL, NULL };
	yajl_val v, f;
	const char *p_cmd[] = { "command", NULL }, *p_exit[] = { "exit_code", NULL }, *p_rules[] = { "rules", NULL };
	int fd, tfd;
	ssize_t n;
	struct stat st;

	(void)state;
	tfd = mkstemp(path);
	close(tfd);
	unlink(path);
	fd = hs_audit_open(path, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(hs_audit_append(fd, &r, err, sizeof(err)), 0);
	r.has_exit = 0;
	r.session = NULL;
	assert_int_equal(hs_audit_append(fd, &r, err, sizeof(err)), 0);
	close(fd);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	fd = open(path, O_RDONLY);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	line = strtok(buf, "\n");
	v = yajl_tree_parse(line, err, sizeof(err));
	assert_non_null(v);
	f = yajl_tree_get(v, p_cmd, yajl_t_string);
	assert_non_null(f);
	assert_string_equal(YAJL_GET_STRING(f), "rm -rf / \"quoted\"\n\xef\xbf\xbd");
	f = yajl_tree_get(v, p_exit, yajl_t_number);
	assert_non_null(f);
	assert_int_equal(YAJL_GET_INTEGER(f), 77);
	f = yajl_tree_get(v, p_rules, yajl_t_array);
	assert_non_null(f);
	assert_int_equal(YAJL_GET_ARRAY(f)->len, 2);
	yajl_tree_free(v);
	line = strtok(NULL, "\n");
	assert_non_null(line);
	v = yajl_tree_parse(line, err, sizeof(err));
	assert_non_null(v);
	assert_true(YAJL_IS_NULL(yajl_tree_get(v, p_exit, yajl_t_any)));
	yajl_tree_free(v);
	assert_null(strtok(NULL, "\n"));
	unlink(path);

	/* A stdin write says so, and which job; a command record has no such keys. */
	char *rec;
	assert_true(hs_audit_format(&r, &rec) > 0);
	assert_null(strstr(rec, "\"kind\""));
	free(rec);
	r.kind = "stdin";
	r.job = "j1";
	assert_true(hs_audit_format(&r, &rec) > 0);
	assert_non_null(strstr(rec, "\"kind\":\"stdin\",\"job\":\"j1\""));
	free(rec);
}

struct sink {
	char buf[4096];
	size_t len;
};

static void
to_sink(void *ctx, const char *d, size_t n)
{
	struct sink *s = ctx;

	memcpy(s->buf + s->len, d, n);
	s->len += n;
	s->buf[s->len] = '\0';
}

static void
test_redact(void **state)
{
	const char *secrets[] = { "hunter2secret", "abc", "TOKEN123456" };
	const char *text = "pw=hunter2secret and TOKEN123456, hunter2secre, abc; TOKEN123456hunter2secret";
	const char *want = "pw=[REDACTED] and [REDACTED], hunter2secre, abc; [REDACTED][REDACTED]";
	struct hs_redactor *r;
	struct sink s;
	size_t len = strlen(text), cut, cut2;
	char *one;

	(void)state;
	assert_int_equal(hs_redactor_new(&r, secrets, 3), 0);
	one = hs_redact_string(r, text);
	assert_string_equal(one, want);
	free(one);
	/* Every split into two and three chunks gives the same output. */
	for (cut = 0; cut <= len; cut++) {
		for (cut2 = cut; cut2 <= len; cut2 += 7) {
			memset(&s, 0, sizeof(s));
			hs_redact_feed(r, text, cut, to_sink, &s);
			hs_redact_feed(r, text + cut, cut2 - cut, to_sink, &s);
			hs_redact_feed(r, text + cut2, len - cut2, to_sink, &s);
			hs_redact_flush(r, to_sink, &s);
			assert_string_equal(s.buf, want);
		}
	}
	/* Byte by byte. */
	memset(&s, 0, sizeof(s));
	for (cut = 0; cut < len; cut++)
		hs_redact_feed(r, text + cut, 1, to_sink, &s);
	hs_redact_flush(r, to_sink, &s);
	assert_string_equal(s.buf, want);
	/* A held-back prefix that turns out not to be a secret is emitted at flush. */
	memset(&s, 0, sizeof(s));
	hs_redact_feed(r, "end hunter2", 11, to_sink, &s);
	assert_string_equal(s.buf, "end ");
	hs_redact_flush(r, to_sink, &s);
	assert_string_equal(s.buf, "end hunter2");
	hs_redactor_free(r);

	/* More distinct first bytes than are searched with memchr. */
	const char *many[] = { "alpha-secret", "bravo-secret", "charlie-secret", "delta-secret",
	                       "echo-secret" };
	const char *t2 = "xalpha-secretyecho-secretzdelta-secrecharlie-secretbravo-secretalpha-secre";
	const char *w2 = "x[REDACTED]y[REDACTED]zdelta-secre[REDACTED][REDACTED]alpha-secre";
	assert_int_equal(hs_redactor_new(&r, many, 5), 0);
	len = strlen(t2);
	for (cut = 0; cut <= len; cut++) {
		memset(&s, 0, sizeof(s));
		hs_redact_feed(r, t2, cut, to_sink, &s);
		hs_redact_feed(r, t2 + cut, len - cut, to_sink, &s);
		hs_redact_flush(r, to_sink, &s);
		assert_string_equal(s.buf, w2);
	}
	hs_redactor_free(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowlist),
		cmocka_unit_test(test_prompt),
		cmocka_unit_test(test_audit),
		cmocka_unit_test(test_redact),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
