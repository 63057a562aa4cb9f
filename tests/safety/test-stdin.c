/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * test-stdin - bytes written to a program's terminal are judged like the
 * commands they make it run: split writes, line editing, continuation
 * lines, heredocs, shell escapes of REPLs and editors, interpreter code,
 * and what cannot be modelled (cursor and meta keys, NUL, non-ASCII).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/safety/common.h"

int hs_fuzz_stdin(const struct hs_policy *p, const uint8_t *data, size_t size);

static struct hs_policy *pol;

/*
 * The writes one after another, each delivered unless denied: DENY when one
 * was, else the verdict of the last.
 */
static enum hs_verdict
typed_in(enum hs_context ctx, int nwrites, const char *const *w, const size_t *len, struct hs_analysis *last)
{
	struct hs_stdin_guard *g = hs_stdin_guard_new();
	struct hs_analysis an;
	enum hs_verdict v = HS_VERDICT_ALLOW;

	assert_non_null(g);
	for (int i = 0; i < nwrites; i++) {
		size_t n = len ? len[i] : strlen(w[i]);

		assert_int_equal(hs_stdin_analyse(g, pol, ctx, w[i], n, &an), 0);
		v = an.verdict;
		if (v == HS_VERDICT_DENY)
			break;
		hs_stdin_guard_commit(g, w[i], n);
	}
	if (last)
		*last = an;
	hs_stdin_guard_free(g);
	return v;
}

static enum hs_verdict
host(const char *s)
{
	return typed_in(HS_CONTEXT_HOST, 1, &s, NULL, NULL);
}

static enum hs_verdict
sandbox(const char *s)
{
	return typed_in(HS_CONTEXT_SANDBOX, 1, &s, NULL, NULL);
}

/* Denied in both contexts: a hardline command. */
#define DENY(s) do { assert_int_equal(host(s), HS_VERDICT_DENY); \
	assert_int_equal(sandbox(s), HS_VERDICT_DENY); } while (0)
/* Opaque: asks on the host, allowed in a sandbox. */
#define OPAQUE(s) do { struct hs_analysis an_; const char *w_ = (s); \
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 1, &w_, NULL, &an_), HS_VERDICT_ASK); \
	assert_true(test_has_rule(&an_, "opaque")); \
	assert_int_equal(sandbox(s), HS_VERDICT_ALLOW); } while (0)
#define ALLOW(s) do { assert_int_equal(host(s), HS_VERDICT_ALLOW); \
	assert_int_equal(sandbox(s), HS_VERDICT_ALLOW); } while (0)

static void
test_lines(void **s)
{
	(void)s;
	DENY("rm -rf /\n");
	DENY("rm -rf /\r");
	DENY("rm -rf /\r\n");
	DENY("ls\nrm -rf /\n");
	ALLOW("ls -la\n");
	ALLOW("cd /tmp && ls\n");
	/* Nothing runs before the line ends. */
	ALLOW("rm -rf /");
	ALLOW("");
	/* The same as the command. */
	assert_int_equal(host("rm -rf ~/x\n"), HS_VERDICT_ASK);
	assert_int_equal(host("git push --force\n"), HS_VERDICT_ASK);
}

static void
test_split_writes(void **s)
{
	static const char *const a[] = { "rm -rf", " /\n" };
	static const char *const b[] = { "r", "m", " ", "-", "r", "f", " ", "/", "\r" };
	static const char *const c[] = { "rm -rf /", "\n" };
	static const char *const d[] = { "rm -rf /\x1b", "[D\n" };
	struct hs_stdin_guard *g = hs_stdin_guard_new();
	struct hs_analysis an;

	(void)s;
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, a, NULL, NULL), HS_VERDICT_DENY);
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 9, b, NULL, NULL), HS_VERDICT_DENY);
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, c, NULL, NULL), HS_VERDICT_DENY);
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, d, NULL, NULL), HS_VERDICT_DENY);
	/* Analysing does not change the guard: only commit does. */
	assert_int_equal(hs_stdin_analyse(g, pol, HS_CONTEXT_HOST, "rm -rf", 6, &an), 0);
	assert_int_equal(hs_stdin_analyse(g, pol, HS_CONTEXT_HOST, " /\n", 3, &an), 0);
	assert_int_equal(an.verdict, HS_VERDICT_ALLOW);
	hs_stdin_guard_commit(g, "rm -rf", 6);
	assert_int_equal(hs_stdin_analyse(g, pol, HS_CONTEXT_HOST, " /\n", 3, &an), 0);
	assert_int_equal(an.verdict, HS_VERDICT_DENY);
	hs_stdin_guard_free(g);
}

static void
test_line_editing(void **s)
{
	(void)s;
	/* Erase, kill line and erase word are followed exactly. */
	DENY("rm -rf /tmpx\x7f\x7f\x7f\x7f\n");
	DENY("rm -rf /tmpx\b\b\b\b\n");
	DENY("echo hi\x15rm -rf /\n");
	DENY("rm -rf / foo\x17\n");
	ALLOW("rm -rf /\x15ls\n");
	ALLOW("rm -rf /\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7fls\n");
	/* ^H erases only in readline: opaque, but the erased text is judged. */
	OPAQUE("lsx\b\n");
	/* ^W stops at a blank in a terminal, at a '/' in vim: not modelled. */
	OPAQUE("ls /x/y\x17\n");
	/* Cursor keys, meta keys, completion, history search, yank: opaque... */
	OPAQUE("rm -rf /tmp\x1b" "b\x1b" "d\n");
	OPAQUE("ls x\x1b[D\x1b[D/\n");
	OPAQUE("ls\x1bOD\n");
	OPAQUE("rm -rf ./ro\t\n");
	OPAQUE("\x12rm\n");
	OPAQUE("ls\x15\x19\n");
	OPAQUE("ls\x04\n");
	/* ...even with no newline: a key may be bound to accept-line. */
	OPAQUE("ls\x0f");
	/* ...but a hardline match in the text, edited or as typed, still denies. */
	DENY("rm -rf /\x1b[D\n");
	DENY("rm -rf /\x1b[D");
	DENY("rm -rf /x\x1b[D\x7f\x7f\n");
	DENY("rm -rf /\x7f/\x1b" "b\n");
	/* ...or as typed without the keys (readline's undo brings the killed line back). */
	DENY("rm -rf /\x15\x1f\n");
	DENY("rm -rf /\x15\x1b" "b");
}

/* Readline keeps killed text, even across lines and ^C, and ^Y yanks it back. */
static void
test_kill_and_yank(void **s)
{
	static const char *const yank[] = { "rm -rf /\x15ls\n", "\x19\n" };
	static const char *const words[] = { "echo rm -rf / x\x17\x17\x17\x17\x03", "\x19\n" };
	static const char *const ok[] = { "ls -la\x15pwd\n", "\x19\n" };

	(void)s;
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, yank, NULL, NULL), HS_VERDICT_DENY);
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, words, NULL, NULL), HS_VERDICT_DENY);
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, ok, NULL, NULL), HS_VERDICT_ALLOW);
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 2, ok, NULL, NULL), HS_VERDICT_ASK);
}

/* Input that reconfigures the line editor leaves the model: opaque from there on. */
static void
test_editor_reconfigured(void **s)
{
	static const char *const erase[] = { "stty erase z\n", "rm -rf /tmpzzzz\n" };
	static const char *const bind[] = { "bind '\"z\": backward-delete-char'\n", "ls\n" };

	(void)s;
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 2, erase, NULL, NULL), HS_VERDICT_ASK);
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 2, bind, NULL, NULL), HS_VERDICT_ASK);
	OPAQUE("stty -icanon\n");
	OPAQUE("set -o vi\n");
	OPAQUE("bind -f ./keys\n");
	OPAQUE("import readline; readline.parse_and_bind('tab: complete')\n");
	ALLOW("stty size\n");
	ALLOW("stty -a\n");
	ALLOW("bind -p\n");
	ALLOW("set -e\n");
}

/*
 * Written to a pipe instead of a terminal, erase, kill and interrupt are
 * plain bytes: the text they would remove still reaches the program.
 */
static void
test_unedited_text(void **s)
{
	(void)s;
	DENY("rm -rf / \x15\n");
	DENY("rm -rf / \x03\n");
	DENY("rm -rf / x\x17\x17\x17\n");
	DENY("rm -rf / \x7f\x7f\n");
	ALLOW("ls -l\x7f\n");
}

static void
test_opaque_until_interrupt(void **s)
{
	static const char *const sticky[] = { "\x1b[A", "ls\n" };
	static const char *const cleared[] = { "\x1b[A", "\x03ls\n" };
	static const char *const cleared2[] = { "rm -rf ./x \x1b" "b", "\x03", "ls\n" };
	static const char *const discard[] = { "rm -rf /", "\x03", "\n" };
	static const char *const cont[] = { "echo 'a\n", "\x03", "ls\n" };

	(void)s;
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 2, sticky, NULL, NULL), HS_VERDICT_ASK);
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 2, cleared, NULL, NULL), HS_VERDICT_ALLOW);
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 3, cleared2, NULL, NULL), HS_VERDICT_ALLOW);
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 3, discard, NULL, NULL), HS_VERDICT_ALLOW);
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 3, cont, NULL, NULL), HS_VERDICT_ALLOW);
}

static void
test_continuation(void **s)
{
	static const char *const bs[] = { "rm -rf \\\n", "/\n" };
	static const char *const quote[] = { "echo 'x\n", "'; rm -rf /\n" };
	static const char *const pipe[] = { "ls |\n", "rm -rf /\n" };
	static const char *const ifs[] = { "if true\n", "then rm -rf /\n", "fi\n" };

	(void)s;
	DENY("rm -rf \\\n/\n");
	DENY("rm -rf \\\r/\r");
	/* An unfinished construct runs nothing yet... */
	ALLOW("rm -rf \\\n");
	ALLOW("if true; then\n");
	/* ...but each line of it is judged by itself too (bash may disagree on what is unfinished)... */
	DENY("[[ a\nrm -rf /\n");
	DENY("if true; then\nrm -rf /\n");
	/* ...and everything once it is finished. */
	DENY("if true; then\nrm -rf /\nfi\n");
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, bs, NULL, NULL), HS_VERDICT_DENY);
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, quote, NULL, NULL), HS_VERDICT_DENY);
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, pipe, NULL, NULL), HS_VERDICT_DENY);
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 3, ifs, NULL, NULL), HS_VERDICT_DENY);
}

static void
test_unparsed_lines(void **s)
{
	struct hs_analysis an;
	const char *w = "rm -f @(a|b)\n";

	(void)s;
	/* Bash's extended globs are read as '*'. */
	DENY("rm -rf /!(x)\n");
	DENY("rm -rf /@(bin|etc)\n");
	/* A line for a known program that does not parse is opaque, as a command is... */
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 1, &w, NULL, &an), HS_VERDICT_ASK);
	assert_true(test_has_rule(&an, "opaque"));
	/* fish's "(cmd)" is judged as bash's "$(cmd)". */
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 1, (const char *[]){ "rm -rf (echo /)\n" }, NULL, &an),
			 HS_VERDICT_ASK);
	assert_true(test_has_rule(&an, "fs.rm-run-time-target"));
	/* ...other text that is no shell runs nothing in one. */
	ALLOW("print(len([1, 2]))\n");
}

/* Closing stdin ends the last line: a shell reading a pipe runs it. */
static void
test_end_of_input(void **s)
{
	struct hs_stdin_guard *g = hs_stdin_guard_new();
	struct hs_analysis an;

	(void)s;
	assert_int_equal(hs_stdin_analyse(g, pol, HS_CONTEXT_SANDBOX, "rm -rf /", 8, &an), 0);
	assert_int_equal(an.verdict, HS_VERDICT_ALLOW);
	hs_stdin_guard_commit(g, "rm -rf /", 8);
	assert_int_equal(hs_stdin_analyse(g, pol, HS_CONTEXT_SANDBOX, NULL, 0, &an), 0);
	assert_int_equal(an.verdict, HS_VERDICT_DENY);
	assert_string_equal(an.findings[0].rule_id, "fs.rm-root");
	/* Code a REPL reading a pipe runs at its end. */
	const char *code = "\x03os.system(\"rm -rf \"\n\"/\"";

	hs_stdin_guard_commit(g, code, strlen(code));
	assert_int_equal(hs_stdin_analyse(g, pol, HS_CONTEXT_SANDBOX, NULL, 0, &an), 0);
	assert_int_equal(an.verdict, HS_VERDICT_DENY);
	/* After the end nothing is pending. */
	hs_stdin_guard_commit(g, NULL, 0);
	assert_int_equal(hs_stdin_analyse(g, pol, HS_CONTEXT_HOST, NULL, 0, &an), 0);
	assert_int_equal(an.verdict, HS_VERDICT_ALLOW);
	hs_stdin_guard_free(g);
}

static void
test_heredocs(void **s)
{
	(void)s;
	DENY("bash <<EOF\nrm -rf /\nEOF\n");
	DENY("sh <<'X'\nrm -rf \\\n/\nX\n");
	/* A quote inside a heredoc body does not swallow the lines after it. */
	DENY("cat <<EOF\nit's\nEOF\nrm -rf /\n");
	DENY("cat <<-EOF\n\tdon't\n\tEOF\nrm -rf /\n");
	ALLOW("cat > notes.txt <<EOF\nhello\nEOF\n");
}

static void
test_shell_escapes(void **s)
{
	(void)s;
	DENY(":!rm -rf /\n");         /* vim */
	DENY(":r !rm -rf /\n");
	DENY(":%!rm -rf /\n");
	DENY("!rm -rf /\n");          /* less, ipython, gdb, ftp */
	DENY("!!rm -rf /\n");
	DENY("shell rm -rf /\n");     /* gdb */
	DENY("pipe p | rm -rf /\n");
	DENY(".shell rm -rf /\n");    /* sqlite3 */
	DENY(".system rm -rf /\n");
	DENY("\\! rm -rf /\n");       /* psql, mysql */
	DENY("%sx rm -rf /\n");       /* ipython */
	DENY(":call system('rm -rf /')\n");
	/* Nor do many dangerous findings push out a hardline one. */
	DENY("git push -f o b1\ngit push -f o b2\ngit push -f o b3\ngit push -f o b4\ngit push -f o b5\n"
	     "git push -f o b6\ngit push -f o b7\ngit push -f o b8\ngit push -f o b9\ngit push -f o b10\n"
	     "git push -f o b11\ngit push -f o b12\ngit push -f o b13\ngit push -f o b14\ngit push -f o b15\n"
	     "git push -f o b16\ngit push -f o b17\n: x 'rm -rf /'\n");
	/* Padding does not push an escape or a literal out of sight. */
	DENY(": : : : : : : : : : : : : : : : : : : : : : : : :!rm -rf /\n");
	DENY("x = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r'] + "
	     "[getattr(os, 'system')('rm -rf /')]\n");
	ALLOW(":wq\n");
	ALLOW("shell ls\n");
	/* Bash history expansion replays input the guard does not keep. */
	OPAQUE("!!\n");
	OPAQUE("rm -rf !$\n");
	OPAQUE("^echo^rm\n");
	OPAQUE("fc -s\n");
	OPAQUE("true; fc -e - ls\n");
	ALLOW("[ 1 != 2 ] && echo ok\n");
	ALLOW("echo 'wow!'\n");
	ALLOW("echo \"hi!\"\n");
}

static void
test_interpreters(void **s)
{
	static const char *const split[] = { "os.system(\n", "\"rm -rf /\")\n" };
	static const char *const joined[] = { "os.system(\"rm -rf \"\n", "\"/\")\n" };

	(void)s;
	DENY("import os; os.system(\"rm -rf /\")\n");
	DENY("__import__(\"shutil\").rmtree(\"/\")\n");
	DENY("__import__('os').system('rm -rf /')\n");
	DENY("import subprocess; subprocess.run([\"rm\", \"-rf\", \"/\"])\n");
	DENY("system(\"rm -rf /\");\n");                          /* perl, php */
	DENY("`rm -rf /`\n");                                     /* perl, ruby */
	DENY("qx(rm -rf /)\n");
	DENY("require('child_process').execSync('rm -rf /')\n"); /* node */
	DENY("shell_exec(\"rm -rf /\");\n");                      /* php */
	DENY("FileUtils.rm_rf(\"/\")\n");                         /* ruby */
	DENY("os.system(\"rm -rf \" + \"/\")\n");
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, split, NULL, NULL), HS_VERDICT_DENY);
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, joined, NULL, NULL), HS_VERDICT_DENY);
	/* Strings reach a shell through paths no scanner follows: they are judged too. */
	{
		static const char *const alias[] = { "s = os.system\n", "s(\"rm -rf /\")\n" };

		assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, alias, NULL, NULL), HS_VERDICT_DENY);
	}
	DENY("getattr(os, \"system\")(\"rm -rf /\")\n");
	DENY("exec(\"import os; os.system('rm -rf /')\")\n");
	DENY("bind '\"\\C-t\": \"rm -rf /\\n\"'\n");   /* a readline macro types it */
	DENY("bind -x '\"\\C-t\": rm -rf /'\n");
	DENY(":execute \"!rm -rf /\"\n");                   /* vim */
	/* SQL typed to psql, mysql or sqlite3, one line or several. */
	assert_int_equal(host("DROP TABLE users;\n"), HS_VERDICT_ASK);
	{
		static const char *const sql[] = { "DROP\n", "  TABLE users\n", ";\n" };

		assert_int_equal(typed_in(HS_CONTEXT_HOST, 3, sql, NULL, NULL), HS_VERDICT_ASK);
	}
	assert_int_equal(host("SELECT * FROM users;\n"), HS_VERDICT_ALLOW);
	/* Code that runs a command known only at run time asks, like python3 -c. */
	assert_int_equal(host("os.system(cmd)\n"), HS_VERDICT_ASK);
	assert_int_equal(host("exec(open(\"x.py\").read())\n"), HS_VERDICT_ASK);
	assert_int_equal(sandbox("os.system(cmd)\n"), HS_VERDICT_ALLOW);
}

static void
test_plain_repl_code(void **s)
{
	(void)s;
	ALLOW("print(6*7)\n");
	ALLOW("x = 1\n");
	ALLOW("2+2\n");
	ALLOW("def f(x):\n    return x * 2\n\n");
	ALLOW("for i in range(3):\n    print(i)\n\n");
	ALLOW("import json; print(json.dumps({'a': [1, 2]}))\n");
	ALLOW("console.log([1, 2].map(x => x * 2))\n");
	ALLOW("my @a = (1, 2); print \"@a\\n\";\n");
	ALLOW("puts [1, 2].sum\n");
	ALLOW("echo strlen(\"abc\");\n");
	ALLOW("os.system(\"ls -la\")\n");
	ALLOW("SELECT 1;\n");
}

static void
test_bytes(void **s)
{
	static const char nul[] = "rm -rf /\0\n";
	static const char nul2[] = "ls\0\n";
	const char *w;
	size_t n;
	char *big;

	(void)s;
	w = nul;
	n = sizeof(nul) - 1;
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 1, &w, &n, NULL), HS_VERDICT_DENY);
	w = nul2;
	n = sizeof(nul2) - 1;
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 1, &w, &n, NULL), HS_VERDICT_ASK);
	assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 1, &w, &n, NULL), HS_VERDICT_ALLOW);
	/* Invalid UTF-8, and any byte a C locale's readline reads as a meta key. */
	OPAQUE("echo \xff\xfe\n");
	OPAQUE("rm -rf x\xe4\n");
	DENY("rm -rf / \xe2\x80\xa8\n");

	/* Too long to analyse: denied, however it is split. */
	big = malloc(HS_STDIN_MAX_WRITE + 2);
	assert_non_null(big);
	memset(big, 'a', HS_STDIN_MAX_WRITE + 1);
	big[HS_STDIN_MAX_WRITE + 1] = '\0';
	assert_int_equal(sandbox(big), HS_VERDICT_DENY);
	big[20000] = '\0';
	{
		const char *const parts[] = { big, " ; rm -rf /\n" };

		assert_int_equal(typed_in(HS_CONTEXT_SANDBOX, 2, parts, NULL, NULL), HS_VERDICT_DENY);
	}
	/* Many short lines are fine. */
	for (size_t i = 0; i < 20000; i += 4)
		memcpy(big + i, "ls\n\n", 4);
	assert_int_equal(host(big), HS_VERDICT_ALLOW);
	free(big);
}

static void
test_findings_shown(void **s)
{
	struct hs_analysis an;
	const char *w = "\x1b[Als\n";
	char shown[64];

	(void)s;
	assert_int_equal(typed_in(HS_CONTEXT_HOST, 1, &w, NULL, &an), HS_VERDICT_ASK);
	assert_true(an.opaque);
	assert_non_null(strstr(an.opaque_reason, "escape sequences"));
	assert_string_equal(an.findings[an.n_findings - 1].argv_norm, "\\x1b[Als\\x0a");
	assert_int_equal(hs_stdin_shown("a\\\x01", 3, shown, sizeof(shown)), 9);
	assert_string_equal(shown, "a\\x5c\\x01");
	assert_int_equal(hs_stdin_analyse(NULL, pol, HS_CONTEXT_HOST, "x", 1, &an), -1);
}

/* Random bytes (weighted to the interesting ones) must never crash or leak. */
static void
test_fuzz_smoke(void **s)
{
	static const char alphabet[] = "rm -f/\\'\"`$(){}|;&<>!:#\n\r\t\x1b[\x7f\x15\x17\x03\x04\x00\xe4" "EOFshi";
	struct hs_stdin_guard *g = hs_stdin_guard_new();
	struct hs_analysis an;
	unsigned seed = 12345;
	char buf[64];

	(void)s;
	for (int round = 0; round < 800; round++) {
		size_t n = (seed = seed * 1103515245 + 12345) % sizeof(buf);

		for (size_t i = 0; i < n; i++)
			{
			seed = seed * 1103515245 + 12345;
			buf[i] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
		}
		assert_int_equal(hs_stdin_analyse(g, pol, round % 2 ? HS_CONTEXT_HOST : HS_CONTEXT_SANDBOX,
						 buf, n, &an), 0);
		if (an.verdict != HS_VERDICT_DENY)
			hs_stdin_guard_commit(g, buf, n);
	}
	hs_stdin_guard_free(g);
}

/* The fuzz target over its seed corpus, every truncation and byte flips of each seed. */
static void
test_fuzz_corpus(void **s)
{
	static const uint8_t flips[] = { 0x03, 0x0a, 0x1b };
	struct dirent *de;
	DIR *d = opendir(HS_STDIN_SEEDS);
	size_t seeds = 0;

	(void)s;
	assert_non_null(d);
	while ((de = readdir(d))) {
		char p[1024];
		uint8_t buf[4096];
		FILE *f;
		size_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", HS_STDIN_SEEDS, de->d_name);
		f = fopen(p, "rb");
		assert_non_null(f);
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		seeds++;
		for (size_t cut = 0; cut <= n; cut++)
			assert_int_equal(hs_fuzz_stdin(pol, buf, cut), 0);
		for (size_t i = 1; i < n; i++) {
			uint8_t saved = buf[i];

			for (size_t k = 0; k < sizeof(flips); k++) {
				buf[i] = flips[k];
				assert_int_equal(hs_fuzz_stdin(pol, buf, n), 0);
			}
			buf[i] = saved;
		}
	}
	closedir(d);
	assert_true(seeds >= 10);
}

static int
setup(void **s)
{
	(void)s;
	pol = test_load_policy();
	return pol ? 0 : -1;
}

static int
teardown(void **s)
{
	(void)s;
	hs_policy_free(pol);
	test_remove_policy();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_split_writes),
		cmocka_unit_test(test_line_editing),
		cmocka_unit_test(test_kill_and_yank),
		cmocka_unit_test(test_editor_reconfigured),
		cmocka_unit_test(test_unedited_text),
		cmocka_unit_test(test_opaque_until_interrupt),
		cmocka_unit_test(test_continuation),
		cmocka_unit_test(test_unparsed_lines),
		cmocka_unit_test(test_end_of_input),
		cmocka_unit_test(test_heredocs),
		cmocka_unit_test(test_shell_escapes),
		cmocka_unit_test(test_interpreters),
		cmocka_unit_test(test_plain_repl_code),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_findings_shown),
		cmocka_unit_test(test_fuzz_smoke),
		cmocka_unit_test(test_fuzz_corpus),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
