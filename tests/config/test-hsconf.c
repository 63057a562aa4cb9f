/* SPDX-License-Identifier: MIT */
/*
 * test-hsconf.c - layered configuration: defaults, layer order, conf.d,
 * locked ceilings, refused files, parse errors, warnings and origins.
 * Fixtures are written at test time into a private mkdtemp directory.
 */
#include "config.h"

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

#include "core/config/hsconf.h"

struct fx {
	char dir[64];
	char etc[128], confd[128], cfghome[128], user[160], state[128];
	char *env[8];
	size_t nenv;
	char warnings[8192];
	int nwarn;
	char err[1024];
	struct hs_conf *c;
};

static void
capture(void *ctx, const char *msg)
{
	struct fx *f = ctx;
	size_t n = strlen(f->warnings);

	snprintf(f->warnings + n, sizeof(f->warnings) - n, "%s\n", msg);
	f->nwarn++;
}

static void
mkdir_or_die(const char *p)
{
	assert_int_equal(mkdir(p, 0700), 0);
}

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char home[160];

	assert_non_null(f);
	strcpy(f->dir, "/tmp/hsconf-test-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(chmod(f->dir, 0700), 0);
	snprintf(f->etc, sizeof(f->etc), "%s/etc", f->dir);
	snprintf(f->confd, sizeof(f->confd), "%s/etc/conf.d", f->dir);
	snprintf(home, sizeof(home), "%s/home", f->dir);
	snprintf(f->cfghome, sizeof(f->cfghome), "%s/home/.config", f->dir);
	snprintf(f->user, sizeof(f->user), "%s/home/.config/hs/hs.conf", f->dir);
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	mkdir_or_die(f->etc);
	mkdir_or_die(f->confd);
	mkdir_or_die(home);
	mkdir_or_die(f->cfghome);
	snprintf(home, sizeof(home), "%s/hs", f->cfghome);
	mkdir_or_die(home);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	hs_conf_free(f->c);
	for (size_t k = 0; k < f->nenv; k++)
		free(f->env[k]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void
put(const char *path, mode_t mode, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static void
putf(struct fx *f, const char *rel, const char *text)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", f->dir, rel);
	put(path, 0644, text);
}

static void
setenv_fx(struct fx *f, const char *kv)
{
	assert_true(f->nenv + 1 < sizeof(f->env) / sizeof(f->env[0]));
	f->env[f->nenv++] = strdup(kv);
}

/* Drop every variable but the first (XDG_STATE_HOME). */
static void
env_reset(struct fx *f)
{
	while (f->nenv > 1)
		free(f->env[--f->nenv]);
}

static int
load_extra(struct fx *f, const char *extra)
{
	char xdg[160];
	struct hs_conf_opts o = {
		.sysconfdir = f->etc, .user_config_home = f->cfghome, .extra_file = extra,
		.environ_ = f->env, .warn = capture, .warn_ctx = f,
	};

	snprintf(xdg, sizeof(xdg), "XDG_STATE_HOME=%s", f->state);
	if (f->nenv == 0 || strncmp(f->env[0], "XDG_STATE_HOME=", 15) != 0) {
		memmove(f->env + 1, f->env, f->nenv * sizeof(f->env[0]));
		f->env[0] = strdup(xdg);
		f->nenv++;
	}
	f->env[f->nenv] = NULL;
	hs_conf_free(f->c);
	f->c = NULL;
	f->err[0] = '\0';
	return hs_conf_load(&f->c, &o, f->err, sizeof(f->err));
}

static int
load(struct fx *f)
{
	return load_extra(f, NULL);
}

static const char *
str(struct fx *f, const char *key)
{
	const char *s = NULL;

	assert_int_equal(hs_conf_string(f->c, key, &s), 0);
	return s;
}

static int64_t
num(struct fx *f, const char *key)
{
	int64_t n = -1;

	assert_int_equal(hs_conf_int(f->c, key, &n), 0);
	return n;
}

static void
origin_is(struct fx *f, const char *key, const char *rel, int line)
{
	char want[256];

	snprintf(want, sizeof(want), "%s/%s:%d", f->dir, rel, line);
	assert_string_equal(hs_conf_origin(f->c, key), want);
}

static void
test_defaults(void **state)
{
	struct fx *f = *state;
	const char *const *list;
	char want[256];
	size_t n = 99;
	int b = 0;

	assert_int_equal(load(f), 0);
	assert_string_equal(str(f, "backend"), "local");
	assert_string_equal(str(f, "approval"), "ask");
	assert_int_equal(num(f, "timeout"), 0);
	assert_int_equal(num(f, "max_timeout"), 0);
	assert_int_equal(num(f, "session_ttl"), 86400);
	assert_int_equal(num(f, "output_limit"), 1048576);
	assert_int_equal(num(f, "runner_idle"), 600);
	assert_int_equal(num(f, "kill_grace_ms"), 2000);
	assert_int_equal(hs_conf_bool(f->c, "audit", &b), 0);
	assert_int_equal(b, 1);
	snprintf(want, sizeof(want), "%s/hs/audit.log", f->state);
	assert_string_equal(str(f, "audit_log"), want);
	/* Backend keys have no core default: the backend's own applies when unset. */
	assert_int_equal(hs_conf_string(f->c, "local.isolation", &(const char *){ NULL }), 1);
	assert_int_equal(hs_conf_strings(f->c, "env_passthrough", &list, &n), 0);
	assert_int_equal(n, 0);
	assert_null(list[0]);
	const char *s;
	assert_int_equal(hs_conf_string(f->c, "workspace", &s), 1);
	assert_int_equal(hs_conf_string(f->c, "runner_path", &s), 1);
	assert_int_equal(hs_conf_int(f->c, "approval", &(int64_t){ 0 }), -1);
	assert_string_equal(hs_conf_origin(f->c, "approval"), "default");
	assert_null(hs_conf_origin(f->c, "workspace"));
	assert_int_equal(f->nwarn, 0);
}

static void
test_layer_order(void **state)
{
	struct fx *f = *state;
	char extra[256], err[256];

	putf(f, "etc/hs.conf", "timeout = 10;\nbackend = \"admin\";\n");
	assert_int_equal(load(f), 0);
	assert_int_equal(num(f, "timeout"), 10);
	origin_is(f, "timeout", "etc/hs.conf", 1);

	putf(f, "etc/conf.d/10-a.conf", "\ntimeout = 20;\n");
	assert_int_equal(load(f), 0);
	assert_int_equal(num(f, "timeout"), 20);
	origin_is(f, "timeout", "etc/conf.d/10-a.conf", 2);

	putf(f, "home/.config/hs/hs.conf", "timeout = 30;\n");
	assert_int_equal(load(f), 0);
	assert_int_equal(num(f, "timeout"), 30);
	origin_is(f, "timeout", "home/.config/hs/hs.conf", 1);
	assert_string_equal(str(f, "backend"), "admin");

	setenv_fx(f, "HS_TIMEOUT=40");
	assert_int_equal(load(f), 0);
	assert_int_equal(num(f, "timeout"), 40);
	assert_string_equal(hs_conf_origin(f->c, "timeout"), "HS_TIMEOUT");

	snprintf(extra, sizeof(extra), "%s/extra.conf", f->dir);
	put(extra, 0600, "timeout = 50;\n");
	assert_int_equal(load_extra(f, extra), 0);
	assert_int_equal(num(f, "timeout"), 50);
	origin_is(f, "timeout", "extra.conf", 1);

	assert_int_equal(hs_conf_set_cli(f->c, "timeout", "60", err, sizeof(err)), 0);
	assert_int_equal(num(f, "timeout"), 60);
	assert_string_equal(hs_conf_origin(f->c, "timeout"), "command line");
	assert_string_equal(str(f, "backend"), "admin");
	assert_int_equal(f->nwarn, 0);
}

static void
test_confd_order(void **state)
{
	struct fx *f = *state;

	putf(f, "etc/hs.conf", "backend = \"main\";\n");
	putf(f, "etc/conf.d/20-b.conf", "backend = \"b\";\n");
	putf(f, "etc/conf.d/10-a.conf", "backend = \"a\";\ntimeout = 5;\n");
	putf(f, "etc/conf.d/30-c.txt", "backend = \"not a conf file\";\n");
	putf(f, "etc/conf.d/.99-hidden.conf", "backend = \"hidden\";\n");
	assert_int_equal(load(f), 0);
	assert_string_equal(str(f, "backend"), "b");
	origin_is(f, "backend", "etc/conf.d/20-b.conf", 1);
	assert_int_equal(num(f, "timeout"), 5);
}

static void
test_locked_approval(void **state)
{
	struct fx *f = *state;
	char err[256];

	putf(f, "etc/hs.conf", "approval = \"ask\";\nlocked = [ \"approval\" ];\n");
	putf(f, "home/.config/hs/hs.conf", "approval = \"approve\";\n");
	assert_int_equal(load(f), 0);
	assert_string_equal(str(f, "approval"), "ask");
	assert_int_equal(hs_conf_locked(f->c, "approval"), 1);
	assert_int_equal(hs_conf_locked(f->c, "timeout"), 0);
	assert_int_equal(f->nwarn, 1);
	assert_non_null(strstr(f->warnings, "'approval' is locked to \"ask\" by "));
	assert_non_null(strstr(f->warnings, "etc/hs.conf:1; ignoring \"approve\" from /"));
	assert_non_null(strstr(f->warnings, "home/.config/hs/hs.conf:1\n"));

	/* Environment: ignored too. */
	putf(f, "home/.config/hs/hs.conf", "\n");
	setenv_fx(f, "HS_APPROVAL=approve");
	f->warnings[0] = '\0';
	f->nwarn = 0;
	assert_int_equal(load(f), 0);
	assert_string_equal(str(f, "approval"), "ask");
	assert_int_equal(f->nwarn, 1);
	assert_non_null(strstr(f->warnings, "ignoring \"approve\" from HS_APPROVAL"));

	/* Command line: ignored, said once, still a success. */
	f->warnings[0] = '\0';
	f->nwarn = 0;
	assert_int_equal(hs_conf_set_cli(f->c, "approval", "approve", err, sizeof(err)), 0);
	assert_string_equal(str(f, "approval"), "ask");
	assert_int_equal(f->nwarn, 1);
	assert_non_null(strstr(f->warnings, "ignoring \"approve\" from command line"));

	/* Tightening is allowed from any later layer. */
	assert_int_equal(hs_conf_set_cli(f->c, "approval", "deny", err, sizeof(err)), 0);
	assert_string_equal(str(f, "approval"), "deny");
	assert_string_equal(hs_conf_origin(f->c, "approval"), "command line");
	assert_int_equal(f->nwarn, 1);

	putf(f, "home/.config/hs/hs.conf", "approval = \"deny\";\n");
	env_reset(f);
	assert_int_equal(load(f), 0);
	assert_string_equal(str(f, "approval"), "deny");
	origin_is(f, "approval", "home/.config/hs/hs.conf", 1);
}

static void
test_locked_list_and_numbers(void **state)
{
	struct fx *f = *state;
	const char *const *list;
	size_t n;
	int b;

	putf(f, "etc/hs.conf",
	     "env_passthrough = [ \"A\", \"B\" ];\nplugin_dirs = [ \"/opt/hs\" ];\n"
	     "max_timeout = 100;\naudit = true;\nisolation_dummy_is_not_here = 1;\n"
	     "local = { isolation = \"namespaces\"; };\n"
	     "locked = [ \"env_passthrough\", \"plugin_dirs\", \"max_timeout\", \"audit\", "
	     "\"local.isolation\" ];\n");
	putf(f, "home/.config/hs/hs.conf", "env_passthrough = [ \"A\" ];\nmax_timeout = 50;\n");
	setenv_fx(f, "HS_PLUGIN_DIR=/tmp/evil");
	assert_int_equal(load(f), 0);
	assert_int_equal(hs_conf_strings(f->c, "env_passthrough", &list, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(list[0], "A");
	assert_int_equal(num(f, "max_timeout"), 50);
	assert_int_equal(hs_conf_strings(f->c, "plugin_dirs", &list, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(list[0], "/opt/hs");
	assert_non_null(strstr(f->warnings, "'plugin_dirs' is locked to [ \"/opt/hs\" ]"));
	assert_non_null(strstr(f->warnings, "unknown key 'isolation_dummy_is_not_here'"));

	f->warnings[0] = '\0';
	f->nwarn = 0;
	putf(f, "home/.config/hs/hs.conf",
	     "env_passthrough = [ \"A\", \"C\" ];\nmax_timeout = 0;\naudit = false;\n"
	     "local = { isolation = \"none\"; };\n");
	assert_int_equal(load(f), 0);
	assert_int_equal(hs_conf_strings(f->c, "env_passthrough", &list, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(num(f, "max_timeout"), 100);
	assert_int_equal(hs_conf_bool(f->c, "audit", &b), 0);
	assert_int_equal(b, 1);
	assert_string_equal(str(f, "local.isolation"), "namespaces");
	assert_non_null(strstr(f->warnings, "'env_passthrough' is locked"));
	assert_non_null(strstr(f->warnings, "'max_timeout' is locked to 100"));
	assert_non_null(strstr(f->warnings, "'audit' is locked to true"));
	assert_non_null(strstr(f->warnings, "'local.isolation' is locked to \"namespaces\""));
	assert_non_null(strstr(f->warnings, "ignoring [ \"/tmp/evil\", \"/opt/hs\" ] from HS_PLUGIN_DIR"));
	assert_int_equal(f->nwarn, 6); /* The four above, plugin_dirs and the unknown key. */
}

static void
test_locked_opaque_and_user_lock(void **state)
{
	struct fx *f = *state;
	char err[256];
	int b = -1;

	putf(f, "etc/hs.conf", "docker = { privileged = false; };\nlocked = [ \"docker.privileged\" ];\n");
	putf(f, "home/.config/hs/hs.conf", "locked = [ \"approval\" ];\n");
	assert_int_equal(load(f), 0);
	assert_non_null(strstr(f->warnings, "'locked' is honoured only in admin files; ignored in "));
	assert_int_equal(hs_conf_locked(f->c, "approval"), 0);
	assert_int_equal(hs_conf_set_cli(f->c, "docker.privileged", "true", err, sizeof(err)), 0);
	assert_non_null(strstr(f->warnings, "'docker.privileged' is locked to false"));
	assert_int_equal(hs_conf_bool(f->c, "docker.privileged", &b), 0);
	assert_int_equal(b, 0);
	assert_int_equal(hs_conf_set_cli(f->c, "nonsense", "1", err, sizeof(err)), -1);
	assert_string_equal(err, "unknown setting 'nonsense'");
}

/* A plugin's declared rules (ABI 1.1): a lock on its key is a ceiling with an order. */
static void
test_plugin_rules(void **state)
{
	struct fx *f = *state;
	static const char *const modes[] = { "strict", "loose", NULL };
	static const struct hs_config_key keys[] = {
		{ .name = "limit", .type = HS_CONF_INT, .doc = "a limit" },
		{ .name = "mode", .type = HS_CONF_STRING, .doc = "a mode" },
		{ .name = "paths", .type = HS_CONF_STRINGS, .doc = "paths" },
		{ .name = "label", .type = HS_CONF_STRING, .doc = "no rule: fixed" },
		{ .name = NULL },
	};
	static const struct hs_config_rule rules[] = {
		{ .name = "limit", .order = HS_CORDER_LESS_ZERO_MAX },
		{ .name = "mode", .order = HS_CORDER_ENUM, .values = modes },
		{ .name = "paths", .order = HS_CORDER_SUBSET, .checks = HS_CCHECK_ABSPATH },
		{ .name = NULL },
	};
	static const struct hs_config_rule bad_type[] = {
		{ .name = "mode", .order = HS_CORDER_LESS }, { .name = NULL },
	};
	static const struct hs_config_rule bad_name[] = {
		{ .name = "nope", .order = HS_CORDER_FIXED }, { .name = NULL },
	};
	const char *const *list;
	size_t n;
	char err[512], extra[256];

	putf(f, "etc/hs.conf", "plug = { limit = 100; mode = \"strict\"; paths = [ \"/a\", \"/b\" ]; "
	     "label = \"x\"; };\nlocked = [ \"plug.limit\", \"plug.mode\", \"plug.paths\", "
	     "\"plug.label\" ];\n");
	/* The user tightens limit and paths, loosens mode, changes label. */
	putf(f, "home/.config/hs/hs.conf", "plug = { limit = 50; mode = \"loose\"; paths = [ \"/a\" ]; "
	     "label = \"y\"; };\n");
	assert_int_equal(load(f), 0);
	/* Before the plugin declares them, every locked key holds as fixed. */
	assert_int_equal(num(f, "plug.limit"), 100);
	assert_int_equal(hs_conf_declare(f->c, "plug", keys, rules, err, sizeof(err)), 0);
	/* Tightenings now hold; loosenings and changes of fixed keys do not. */
	assert_int_equal(num(f, "plug.limit"), 50);
	origin_is(f, "plug.limit", "home/.config/hs/hs.conf", 1);
	assert_string_equal(str(f, "plug.mode"), "strict");
	assert_int_equal(hs_conf_strings(f->c, "plug.paths", &list, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(list[0], "/a");
	assert_string_equal(str(f, "plug.label"), "x");
	/* A flag after the declaration is judged by the rule at once. */
	assert_int_equal(hs_conf_set_cli(f->c, "plug.limit", "0", err, sizeof(err)), 0);
	assert_int_equal(num(f, "plug.limit"), 50); /* 0 is "no limit": looser */
	assert_int_equal(hs_conf_set_cli(f->c, "plug.limit", "20", err, sizeof(err)), 0);
	assert_int_equal(num(f, "plug.limit"), 20);
	assert_int_equal(hs_conf_allows(f->c, "plug.mode", "loose", err, sizeof(err)), 0);
	assert_int_equal(hs_conf_allows(f->c, "plug.mode", "strict", err, sizeof(err)), 1);
	/* Numbers are compared as numbers: 0 is "no limit", above the ceiling of 100. */
	assert_int_equal(hs_conf_allows(f->c, "plug.limit", "0", err, sizeof(err)), 0);
	assert_int_equal(hs_conf_allows(f->c, "plug.limit", "100", err, sizeof(err)), 1);
	assert_int_equal(hs_conf_allows(f->c, "plug.limit", "x", err, sizeof(err)), 0);
	/* Declared once per section. */
	assert_int_equal(hs_conf_declare(f->c, "plug", keys, rules, err, sizeof(err)), 0);

	/* Loosenings stay refused after the declaration; an earlier tightening
	 * holds under a later refused loosening, as for the core's keys. */
	putf(f, "home/.config/hs/hs.conf", "plug = { limit = 500; paths = [ \"/a\", \"/c\" ]; };\n");
	assert_int_equal(load(f), 0);
	assert_int_equal(hs_conf_declare(f->c, "plug", keys, rules, err, sizeof(err)), 0);
	assert_int_equal(num(f, "plug.limit"), 100);
	putf(f, "home/.config/hs/hs.conf", "plug = { limit = 30; };\n");
	snprintf(extra, sizeof(extra), "%s/extra.conf", f->dir);
	put(extra, 0600, "plug = { limit = 500; };\n");
	assert_int_equal(load_extra(f, extra), 0);
	assert_int_equal(hs_conf_declare(f->c, "plug", keys, rules, err, sizeof(err)), 0);
	assert_int_equal(num(f, "plug.limit"), 30);
	assert_int_equal(hs_conf_strings(f->c, "plug.paths", &list, &n), 0);
	assert_int_equal(n, 2);

	/* Values are checked against the declaration; rules must fit the keys. */
	putf(f, "home/.config/hs/hs.conf", "plug = { mode = \"bogus\"; };\n");
	putf(f, "etc/hs.conf", "timeout = 1;\n");
	assert_int_equal(load(f), 0);
	assert_int_equal(hs_conf_declare(f->c, "plug", keys, rules, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'plug.mode' must be one of strict, loose (got 'bogus')"));
	err[0] = '\0';
	assert_int_equal(hs_conf_declare(f->c, "plug", keys, rules, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'plug.mode' must be one of")); /* and it stays refused */
	assert_int_equal(hs_conf_rules_check("plug", keys, bad_type, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'mode' (a string) with order 2"));
	assert_int_equal(hs_conf_rules_check("plug", keys, bad_name, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "rule for 'nope', which is not one of its config_keys"));
}

static void
test_refused_files(void **state)
{
	struct fx *f = *state;
	char path[256], target[256];

	putf(f, "etc/hs.conf", "timeout = 1;\n");
	snprintf(path, sizeof(path), "%s/etc/hs.conf", f->dir);
	assert_int_equal(chmod(path, 0664), 0);
	assert_int_equal(load(f), -1);
	assert_non_null(strstr(f->err, path));
	assert_non_null(strstr(f->err, "writable by its group"));
	assert_null(f->c);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(load(f), 0);

	/* A writable directory in the chain of a conf.d file. */
	putf(f, "etc/conf.d/10-a.conf", "timeout = 2;\n");
	assert_int_equal(chmod(f->confd, 0777), 0);
	assert_int_equal(load(f), -1);
	assert_non_null(strstr(f->err, "conf.d' is writable by others"));
	assert_int_equal(chmod(f->confd, 0700), 0);

	/* A symlinked user file, even to a good file. */
	snprintf(target, sizeof(target), "%s/good.conf", f->dir);
	put(target, 0600, "timeout = 3;\n");
	assert_int_equal(symlink(target, f->user), 0);
	assert_int_equal(load(f), -1);
	assert_non_null(strstr(f->err, "is a symbolic link"));
	assert_non_null(strstr(f->err, f->user));
	assert_int_equal(unlink(f->user), 0);

	/* Owned by another, non-root user (needs root to arrange). */
	if (geteuid() == 0) {
		put(f->user, 0644, "timeout = 3;\n");
		assert_int_equal(chown(f->user, 65534, 65534), 0);
		assert_int_equal(load(f), -1);
		assert_non_null(strstr(f->err, "is owned by uid 65534"));
		assert_int_equal(unlink(f->user), 0);
	}

	/* An explicit --config file must exist. */
	snprintf(path, sizeof(path), "%s/missing.conf", f->dir);
	assert_int_equal(load_extra(f, path), -1);
	assert_non_null(strstr(f->err, "missing.conf"));
}

static void
test_parse_errors(void **state)
{
	struct fx *f = *state;
	char want[512];

	put(f->user, 0600, "approval = \"ask\";\ntimeout = ;\n");
	assert_int_equal(load(f), -1);
	snprintf(want, sizeof(want), "cannot read '%s': line 2: ", f->user);
	assert_memory_equal(f->err, want, strlen(want));

	put(f->user, 0600, "\n\napproval = \"maybe\";\n");
	assert_int_equal(load(f), -1);
	snprintf(want, sizeof(want), "'%s': line 3: 'approval' must be one of deny, ask, approve "
	         "(got 'maybe')", f->user);
	assert_string_equal(f->err, want);

	put(f->user, 0600, "timeout = \"10\";\n");
	assert_int_equal(load(f), -1);
	assert_non_null(strstr(f->err, "line 1: 'timeout' must be an integer"));

	put(f->user, 0600, "# split it\n  @include \"/etc/passwd\"\n");
	assert_int_equal(load(f), -1);
	assert_non_null(strstr(f->err, "line 2: @include is not allowed"));

	put(f->user, 0600, "workspace = \"relative/dir\";\n");
	assert_int_equal(load(f), -1);
	assert_non_null(strstr(f->err, "'workspace' must be an absolute path"));
}

static void
test_env_errors(void **state)
{
	struct fx *f = *state;

	setenv_fx(f, "HS_TIMEOUT=abc");
	assert_int_equal(load(f), -1);
	assert_string_equal(f->err, "invalid HS_TIMEOUT='abc': expected a non-negative integer");
	env_reset(f);
	setenv_fx(f, "HS_TIMEOUT=-5");
	assert_int_equal(load(f), -1);
	env_reset(f);
	setenv_fx(f, "HS_APPROVAL=sure");
	assert_int_equal(load(f), -1);
	assert_string_equal(f->err, "HS_APPROVAL: 'approval' must be one of deny, ask, approve "
	                    "(got 'sure')");
}

static void
test_sections(void **state)
{
	struct fx *f = *state;
	static const struct hs_config_key docker_keys[] = {
		{ .name = "host", .type = HS_CONF_STRING, .doc = "daemon" },
		{ .name = "memory", .type = HS_CONF_INT, .doc = "bytes" },
		{ .name = NULL },
	};
	char err[256], want[256];
	int64_t mem;

	putf(f, "etc/hs.conf", "docker = { host = \"unix:///a\"; memory = 512; };\n");
	put(f->user, 0600, "docker = {\n  hots = \"x\";\n  host = \"unix:///b\";\n};\n"
	    "daytona = { api_url = \"http://localhost\"; labels = { team = \"x\"; }; };\n"
	    "local = { shel = \"/bin/sh\"; };\n");
	setenv_fx(f, "HS_MODAL_MODE=direct");
	assert_int_equal(load(f), 0);
	/* Per-key merge inside a section. */
	assert_string_equal(str(f, "docker.host"), "unix:///b");
	assert_int_equal(num(f, "docker.memory"), 512);
	origin_is(f, "docker.memory", "etc/hs.conf", 1);
	origin_is(f, "docker.host", "home/.config/hs/hs.conf", 3);
	/* An absent backend's section is fine and readable. */
	assert_string_equal(str(f, "daytona.api_url"), "http://localhost");
	assert_string_equal(str(f, "daytona.labels.team"), "x");
	assert_string_equal(str(f, "modal.mode"), "direct");
	assert_string_equal(hs_conf_origin(f->c, "modal.mode"), "HS_MODAL_MODE");
	/* Backend sections, local's too, are checked when their backend declares its keys. */
	assert_string_equal(f->warnings, "");

	f->warnings[0] = '\0';
	assert_int_equal(hs_conf_set_cli(f->c, "docker.memory", "1024", err, sizeof(err)), 0);
	assert_int_equal(hs_conf_check_section(f->c, "docker", docker_keys), 1);
	snprintf(want, sizeof(want), "unknown key 'docker.hots' in %s:2\n", f->user);
	assert_string_equal(f->warnings, want);
	assert_int_equal(hs_conf_int(f->c, "docker.memory", &mem), 0);
	assert_int_equal(mem, 1024);
	/* Checking again counts but does not repeat the warning. */
	assert_int_equal(hs_conf_check_section(f->c, "docker", docker_keys), 1);
	assert_string_equal(f->warnings, want);
	/* Once a backend declared its keys, a flag naming another key of its section is refused. */
	assert_int_equal(hs_conf_set_cli(f->c, "docker.hots", "x", err, sizeof(err)), 0);
	assert_int_equal(hs_conf_declare(f->c, "docker", docker_keys, NULL, err, sizeof(err)), 0);
	assert_int_equal(hs_conf_set_cli(f->c, "docker.hots", "x", err, sizeof(err)), -1);
	assert_string_equal(err, "unknown setting 'docker.hots'");
}

static void
test_origins_and_listing(void **state)
{
	struct fx *f = *state;
	char err[256], buf[256];
	const char *key;
	int seen_cli = 0;

	putf(f, "etc/hs.conf", "\n\n\nbackend = \"local\";\n");
	setenv_fx(f, "HS_APPROVAL=deny");
	setenv_fx(f, "HS_PLUGIN_DIR=/a:/b");
	assert_int_equal(load(f), 0);
	origin_is(f, "backend", "etc/hs.conf", 4);
	assert_string_equal(hs_conf_origin(f->c, "approval"), "HS_APPROVAL");
	assert_string_equal(hs_conf_origin(f->c, "session_ttl"), "default");
	assert_int_equal(hs_conf_format(f->c, "plugin_dirs", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "[ \"/a\", \"/b\" ]");
	assert_int_equal(hs_conf_set_cli(f->c, "output_limit", "4096", err, sizeof(err)), 0);
	assert_int_equal(hs_conf_set_cli(f->c, "output_limit", "0", err, sizeof(err)), -1);
	assert_string_equal(err, "command line: 'output_limit' must be positive (got 0)");
	assert_int_equal(hs_conf_set_cli(f->c, "audit", "maybe", err, sizeof(err)), -1);
	assert_string_equal(err, "invalid value 'maybe' for 'audit': expected true or false");
	for (size_t i = 0; (key = hs_conf_key_at(f->c, i)); i++)
		if (strcmp(key, "output_limit") == 0) {
			assert_string_equal(hs_conf_origin(f->c, key), "command line");
			seen_cli = 1;
		}
	assert_true(seen_cli);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_layer_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_confd_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locked_approval, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locked_list_and_numbers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locked_opaque_and_user_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plugin_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parse_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_origins_and_listing, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
