/* SPDX-License-Identifier: MIT */
/* Credential-mode resolution and the token-file reader, with the fuzz smoke test. */
#include "config.h"

#include <dirent.h>
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

#include "core/safety/credentials.h"
#include "core/safety/toml.h"

int hs_fuzz_toml(const uint8_t *data, size_t size);

struct fix {
	char home[256];
	const char *vars[16]; /* "K=V" */
	size_t n;
};

static const char *
fake_getenv(void *ctx, const char *name)
{
	struct fix *f = ctx;
	size_t l = strlen(name);
	for (size_t i = 0; i < f->n; i++)
		if (strncmp(f->vars[i], name, l) == 0 && f->vars[i][l] == '=')
			return f->vars[i] + l + 1;
	return NULL;
}

static int
setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	snprintf(f->home, sizeof(f->home), "/tmp/hs-cred-test.XXXXXX");
	assert_non_null(mkdtemp(f->home));
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->home);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void
put(struct fix *f, const char *name, mode_t mode, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", f->home, name);
	FILE *fp = fopen(p, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	assert_int_equal(chmod(p, mode), 0);
}

static int32_t
resolve(struct fix *f, const char *mode, const char *gw_url, const char *gw_tok,
        struct hs_credentials *c, char *err)
{
	struct hs_cred_query q = {
		.provider = "modal", .mode = mode, .gateway_url = gw_url, .gateway_token = gw_tok,
		.home = f->home, .getenv = fake_getenv, .env_ctx = f, .uid = geteuid(),
	};
	int32_t st = hs_cred_resolve(&q, c, err, HS_ERR_MAX);
	/* No secret ever appears where it could be shown. */
	const char *secrets[] = { "as-env", "as-file", "gw-secret" };
	for (size_t i = 0; i < 3; i++) {
		assert_null(strstr(err, secrets[i]));
		assert_null(strstr(c->source, secrets[i]));
		assert_null(strstr(c->warning, secrets[i]));
		assert_null(strstr(c->id, secrets[i]));
	}
	if (st != HS_OK)
		assert_string_equal(c->secret, "");
	return st;
}

static const char file_tok[] = "[other]\ntoken_id = \"ak-other\"\ntoken_secret = \"as-other\"\n"
                               "[bar]\ntoken_id = \"ak-file\"\ntoken_secret = \"as-file\"\nactive = true\n";

static void
test_nothing(void **state)
{
	struct fix *f = *state;
	struct hs_credentials c;
	char err[HS_ERR_MAX];
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_E_UNAVAILABLE);
	assert_non_null(strstr(err, "mode managed: no gateway URL or token"));
	assert_non_null(strstr(err, "mode direct: MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are unset"));
	assert_non_null(strstr(err, "no token file"));
	/* direct only: the managed reason is not given. */
	assert_int_equal(resolve(f, "direct", NULL, NULL, &c, err), HS_E_UNAVAILABLE);
	assert_null(strstr(err, "managed"));
}

static void
test_env_only(void **state)
{
	struct fix *f = *state;
	struct hs_credentials c;
	char err[HS_ERR_MAX];
	f->vars[f->n++] = "MODAL_TOKEN_ID=ak-env";
	f->vars[f->n++] = "MODAL_TOKEN_SECRET=as-env";
	assert_int_equal(resolve(f, "auto", NULL, NULL, &c, err), HS_OK);
	assert_string_equal(c.mode, "direct");
	assert_string_equal(c.id, "ak-env");
	assert_string_equal(c.secret, "as-env");
	assert_string_equal(c.source, "env MODAL_TOKEN_ID, MODAL_TOKEN_SECRET");
	assert_string_equal(c.warning, "");
}

static void
test_secret_only_env(void **state)
{
	struct fix *f = *state;
	struct hs_credentials c;
	char err[HS_ERR_MAX];
	f->vars[f->n++] = "MODAL_TOKEN_ID=ak-env";
	assert_int_equal(resolve(f, "direct", NULL, NULL, &c, err), HS_E_UNAVAILABLE);
	assert_non_null(strstr(err, "mode direct: MODAL_TOKEN_SECRET is unset"));
	assert_null(strstr(err, "MODAL_TOKEN_ID "));
}

static void
test_toml_only(void **state)
{
	struct fix *f = *state;
	struct hs_credentials c;
	char err[HS_ERR_MAX], want[512];
	put(f, ".modal.toml", 0600, file_tok);
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_OK);
	assert_string_equal(c.mode, "direct");
	assert_string_equal(c.id, "ak-file");
	assert_string_equal(c.secret, "as-file");
	snprintf(want, sizeof(want), "%s/.modal.toml [bar]", f->home);
	assert_string_equal(c.source, want);
	assert_string_equal(c.warning, "");
	/* MODAL_PROFILE picks another profile. */
	f->vars[f->n++] = "MODAL_PROFILE=other";
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_OK);
	assert_string_equal(c.id, "ak-other");
	/* ... and a missing one is named. */
	f->vars[f->n - 1] = "MODAL_PROFILE=nope";
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_E_UNAVAILABLE);
	assert_non_null(strstr(err, "no profile [nope] with tokens"));
}

static void
test_config_path_and_readable(void **state)
{
	struct fix *f = *state;
	struct hs_credentials c;
	char err[HS_ERR_MAX], var[512];
	put(f, "alt.toml", 0644, "[default]\ntoken_id = 'ak-alt'\ntoken_secret = 'as-file'\n");
	snprintf(var, sizeof(var), "MODAL_CONFIG_PATH=%s/alt.toml", f->home);
	f->vars[f->n++] = var;
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_OK);
	assert_string_equal(c.id, "ak-alt");
	assert_non_null(strstr(c.warning, "readable by others: chmod 600"));
}

static void
test_both_same(void **state)
{
	struct fix *f = *state;
	struct hs_credentials c;
	char err[HS_ERR_MAX];
	put(f, ".modal.toml", 0600, file_tok);
	f->vars[f->n++] = "MODAL_TOKEN_ID=ak-file";
	f->vars[f->n++] = "MODAL_TOKEN_SECRET=as-file";
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_OK);
	assert_string_equal(c.source, "env MODAL_TOKEN_ID, MODAL_TOKEN_SECRET");
	assert_string_equal(c.warning, "");
}

static void
test_env_overrides_file(void **state)
{
	struct fix *f = *state;
	struct hs_credentials c;
	char err[HS_ERR_MAX];
	put(f, ".modal.toml", 0600, file_tok);
	f->vars[f->n++] = "MODAL_TOKEN_ID=ak-env";
	f->vars[f->n++] = "MODAL_TOKEN_SECRET=as-env";
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_OK);
	assert_string_equal(c.id, "ak-env");
	assert_string_equal(c.secret, "as-env");
	assert_non_null(strstr(c.warning, "differs from"));
	assert_non_null(strstr(c.warning, "the environment's is used"));
	/* Only the id in env: the secret comes from the file, key by key. */
	f->n = 1;
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_OK);
	assert_string_equal(c.id, "ak-env");
	assert_string_equal(c.secret, "as-file");
	assert_non_null(strstr(c.source, "env MODAL_TOKEN_ID"));
	assert_non_null(strstr(c.source, "token_secret"));
}

static void
test_managed(void **state)
{
	struct fix *f = *state;
	struct hs_credentials c;
	char err[HS_ERR_MAX];
	/* managed without token: named precisely, even with direct tokens present. */
	f->vars[f->n++] = "MODAL_TOKEN_ID=ak-env";
	f->vars[f->n++] = "MODAL_TOKEN_SECRET=as-env";
	assert_int_equal(resolve(f, "managed", "https://gw.example", NULL, &c, err), HS_E_UNAVAILABLE);
	assert_non_null(strstr(err, "mode managed: no gateway token"));
	assert_non_null(strstr(err, "HS_MODAL_GATEWAY_TOKEN"));
	assert_null(strstr(err, "mode direct"));
	/* auto prefers managed once it is complete. */
	f->vars[f->n++] = "HS_MODAL_GATEWAY_TOKEN=gw-secret";
	assert_int_equal(resolve(f, "auto", "https://gw.example", NULL, &c, err), HS_OK);
	assert_string_equal(c.mode, "managed");
	assert_string_equal(c.id, "https://gw.example");
	assert_string_equal(c.secret, "gw-secret");
	assert_string_equal(c.source, "gateway URL from config, token from env HS_MODAL_GATEWAY_TOKEN");
	/* direct is forced by the mode. */
	assert_int_equal(resolve(f, "direct", "https://gw.example", NULL, &c, err), HS_OK);
	assert_string_equal(c.mode, "direct");
	/* env URL wins over config; plain http only to loopback. */
	f->vars[f->n++] = "HS_MODAL_GATEWAY_URL=http://gw.example";
	assert_int_equal(resolve(f, "auto", "https://x", NULL, &c, err), HS_E_CONFIG);
	assert_non_null(strstr(err, "must be https://"));
	f->vars[f->n - 1] = "HS_MODAL_GATEWAY_URL=http://127.0.0.1:8080";
	assert_int_equal(resolve(f, "auto", "https://x", NULL, &c, err), HS_OK);
	assert_string_equal(c.id, "http://127.0.0.1:8080");
}

static void
test_lookup_errors(void **state)
{
	struct fix *f = *state;
	struct hs_credentials c;
	char err[HS_ERR_MAX], p[512];
	/* Even complete env tokens are not used when the file check fails. */
	f->vars[f->n++] = "MODAL_TOKEN_ID=ak-env";
	f->vars[f->n++] = "MODAL_TOKEN_SECRET=as-env";
	put(f, ".modal.toml", 0600, "[bar]\ntoken_id = \"ak-file\"\ntoken_secret = as-file\n");
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_E_CONFIG);
	assert_non_null(strstr(err, "cannot parse"));
	assert_non_null(strstr(err, "line 3"));
	put(f, ".modal.toml", 0620, file_tok);
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_E_PERM);
	assert_non_null(strstr(err, "writable by group or others"));
	snprintf(p, sizeof(p), "%s/.modal.toml", f->home);
	assert_int_equal(chmod(p, 0600), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(p, 4242, 4242), 0);
		assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_E_PERM);
		assert_non_null(strstr(err, "belongs to uid 4242"));
	}
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_E_CONFIG);
	assert_non_null(strstr(err, "not a regular file"));
	assert_int_equal(rmdir(p), 0);
	put(f, ".modal.toml", 0600, "[a]\nactive = true\n[b]\nactive = true\n");
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_E_CONFIG);
	assert_non_null(strstr(err, "two active profiles"));
	put(f, ".modal.toml", 0600, "[bar]\nactive = true\ntoken_id = 7\n");
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_E_CONFIG);
	assert_non_null(strstr(err, "token_id must be a string"));
	/* An error also stops auto from falling through to a working managed path? No:
	 * managed is checked first and wins before the file is read; a bad gateway URL
	 * stops direct from being used. */
	put(f, ".modal.toml", 0600, "[bar]\nactive = true\ntoken_id = \"ak\\r\\nX-Evil: 1\"\ntoken_secret = \"as-file\"\n");
	f->n = 0;
	assert_int_equal(resolve(f, NULL, NULL, NULL, &c, err), HS_E_CONFIG);
	assert_non_null(strstr(err, "token id from"));
	assert_non_null(strstr(err, "contains spaces or control characters"));
	unlink(p);
	assert_int_equal(resolve(f, "auto", "https://gw", "gw secret", &c, err), HS_E_CONFIG);
	assert_non_null(strstr(err, "gateway token from config contains"));
	assert_int_equal(resolve(f, "auto", "ftp://gw", "gw-secret", &c, err), HS_E_CONFIG);
	assert_int_equal(resolve(f, "sometimes", NULL, NULL, &c, err), HS_E_CONFIG);
	assert_non_null(strstr(err, "not auto, direct or managed"));
}

static void
test_toml(void **state)
{
	(void)state;
	struct hs_toml t;
	char err[256];
	const char ok[] = "# c\ntop = 1\n[a]  # c\nx = 'lit\\n'\ny = \"q\\\" \\\\ \\u00e9\"\n[\"q s\"]\nb = false\r\n";
	assert_int_equal(hs_toml_parse(&t, ok, sizeof(ok) - 1, err, sizeof(err)), 0);
	assert_int_equal(t.n, 4);
	assert_string_equal(hs_toml_get(&t, "", "top")->value, "1");
	assert_int_equal(hs_toml_get(&t, "", "top")->type, HS_TOML_INT);
	assert_string_equal(hs_toml_get(&t, "a", "x")->value, "lit\\n");
	assert_string_equal(hs_toml_get(&t, "a", "y")->value, "q\" \\ \xc3\xa9");
	assert_string_equal(hs_toml_get(&t, "q s", "b")->value, "false");
	assert_int_equal(hs_toml_get(&t, "q s", "b")->type, HS_TOML_BOOL);
	hs_toml_free(&t);
	static const struct { const char *in, *msg; } bad[] = {
		{ "[a]\nx = [1]\n", "line 2: unsupported value" },
		{ "[a]\nx = \"\"\"m\n\"\"\"\n", "line 2: multi-line" },
		{ "[a]\n[a]\n", "line 2: section [a] appears twice" },
		{ "x = 1\nx = 2\n", "line 2: key 'x' appears twice" },
		{ "a.b = 1\n", "line 1: dotted keys" },
		{ "[[a]]\n", "line 1: arrays of tables" },
		{ "x = \"open\n", "line 1: unterminated string" },
		{ "x = \"\\q\"\n", "line 1: unknown escape" },
		{ "x = 1 2\n", "line 1: unexpected '2'" },
		{ "x = \"\\u0000\"\n", "line 1: bad \\u escape" },
		{ "x\n", "line 1: expected '='" },
		{ "x = 1.5\n", "line 1: unexpected '.'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = hs_toml_parse(&t, bad[i].in, strlen(bad[i].in), err, sizeof(err));
		if (r != -1 || strncmp(err, bad[i].msg, strlen(bad[i].msg)) != 0)
			fail_msg("input %zu: got %d '%s', want '%s'", i, r, err, bad[i].msg);
		assert_int_equal(t.n, 0);
	}
}

/* The fuzz entry point over the seeds and simple mutations of each. */
static void
test_fuzz_smoke(void **state)
{
	(void)state;
	DIR *d = opendir(HS_TOML_SEEDS);
	struct dirent *de;
	int seeds = 0;
	assert_non_null(d);
	while ((de = readdir(d))) {
		char p[1024], buf[4096];
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", HS_TOML_SEEDS, de->d_name);
		FILE *fp = fopen(p, "rb");
		assert_non_null(fp);
		size_t n = fread(buf, 1, sizeof(buf), fp);
		fclose(fp);
		seeds++;
		assert_int_equal(hs_fuzz_toml((const uint8_t *)buf, n), 0);
		unsigned seed = 1;
		for (int k = 0; k < 2000; k++) {
			uint8_t m[4096];
			memcpy(m, buf, n);
			size_t len = n;
			for (int j = 0; j < 3 && len; j++) {
				seed = seed * 1103515245u + 12345u;
				size_t at = (seed >> 8) % len;
				static const char pick[] = "\"'\\[]=#\n\r \tu0aZ.-";
				m[at] = (seed >> 20) & 1 ? (uint8_t)(seed >> 12) : (uint8_t)pick[(seed >> 12) % (sizeof(pick) - 1)];
			}
			seed = seed * 1103515245u + 12345u;
			len = (seed >> 8) % 4 == 0 ? (seed >> 12) % (len + 1) : len;
			assert_int_equal(hs_fuzz_toml(m, len), 0);
		}
	}
	closedir(d);
	assert_true(seeds >= 5);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_secret_only_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_toml_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_path_and_readable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_both_same, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_overrides_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_managed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lookup_errors, setup, teardown),
		cmocka_unit_test(test_toml),
		cmocka_unit_test(test_fuzz_smoke),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
