/* SPDX-License-Identifier: MIT */
/*
 * test-unit.c - unit tests of the ssh backend against the fake host:
 * SHA-256 vectors, shell quoting, fingerprint encoding, configuration
 * checks in probe/open, and a refused connection's message.  The backend's
 * sources are included so their static helpers can be tested directly.
 */
#include "../../plugins/ssh/ssh.c"
#include "../../plugins/ssh/ssh-conn.c"
#include "../../plugins/ssh/ssh-exec.c"
#include "../../plugins/ssh/ssh-install.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <hs/fakehost.h>

static void
sha(const void *d, size_t n, char hex[65])
{
	struct hsr_sha256 c;
	uint8_t dg[32];
	hsr_sha256_init(&c);
	hsr_sha256_update(&c, d, n);
	hsr_sha256_final(&c, dg);
	sx_hex(dg, 32, hex);
}

static void
test_sha256(void **unused)
{
	char hex[65];
	(void)unused;
	sha("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* a million 'a', fed in uneven pieces */
	struct hsr_sha256 c;
	uint8_t dg[32];
	char buf[997];
	memset(buf, 'a', sizeof(buf));
	hsr_sha256_init(&c);
	size_t left = 1000000;
	while (left) {
		size_t n = left < sizeof(buf) ? left : sizeof(buf);
		hsr_sha256_update(&c, buf, n);
		left -= n;
	}
	hsr_sha256_final(&c, dg);
	sx_hex(dg, 32, hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void
test_quote_b64(void **unused)
{
	char q[64], b[64];
	(void)unused;
	assert_int_equal(sx_quote(q, sizeof(q), "a b"), 5);
	assert_string_equal(q, "'a b'");
	sx_quote(q, sizeof(q), "it's");
	assert_string_equal(q, "'it'\\''s'");
	assert_int_equal(sx_quote(q, 4, "abcdef"), -1);
	sx_b64((const uint8_t *)"foobar", 6, b);
	assert_string_equal(b, "Zm9vYmFy");
	sx_b64((const uint8_t *)"foob", 4, b);
	assert_string_equal(b, "Zm9vYg"); /* no padding, as ssh-keygen prints SHA256 */
}

struct fx {
	struct hs_fakehost *fh;
	void *state;
};

static int
setup(void **s)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[HS_ERR_MAX] = "";
	f->fh = hs_fakehost_new("ssh", NULL);
	assert_non_null(f->fh);
	assert_int_equal(hs_backend_v1.init(hs_fakehost_host(f->fh), &f->state, err), HS_OK);
	*s = f;
	return 0;
}

static int
teardown(void **s)
{
	struct fx *f = *s;
	hs_backend_v1.fini(f->state);
	hs_fakehost_free(f->fh);
	free(f);
	return 0;
}

static void
probe_reason(struct fx *f, struct hs_probe_report *r)
{
	char err[HS_ERR_MAX] = "";
	memset(r, 0, sizeof(*r));
	assert_int_equal(hs_backend_v1.probe(f->state, 0, r, err), HS_OK);
}

static void
test_config(void **s)
{
	struct fx *f = *s;
	struct hs_probe_report r;
	probe_reason(f, &r);
	assert_false(r.ready);
	assert_non_null(strstr(r.reason, "ssh.host is not set"));
	hs_fakehost_set(f->fh, "host", "127.0.0.1");
	hs_fakehost_set(f->fh, "user", "nobody");
	hs_fakehost_set(f->fh, "host_key_policy", "yolo");
	probe_reason(f, &r);
	assert_false(r.ready);
	assert_non_null(strstr(r.reason, "host_key_policy 'yolo'"));
	hs_fakehost_set(f->fh, "host_key_policy", "accept-new");
	hs_fakehost_set(f->fh, "port", "70000");
	probe_reason(f, &r);
	assert_false(r.ready);
	assert_non_null(strstr(r.reason, "ssh.port 70000"));
	hs_fakehost_set(f->fh, "port", "1");
	probe_reason(f, &r);
	assert_true(r.ready);
	assert_non_null(strstr(r.detail, "host_key_policy=accept-new"));
	assert_non_null(strstr(r.detail, "rsa_sha2="));
	hs_fakehost_set(f->fh, "host", "-oProxyCommand=x");
	probe_reason(f, &r);
	assert_false(r.ready);
	assert_non_null(strstr(r.reason, "is not a host name"));
}

static void
test_rsa_key(void **s)
{
	struct fx *f = *s;
	struct hs_probe_report r;
	char key[1024], pub[1100];
	snprintf(key, sizeof(key), "%s/id_test", hs_fakehost_root(f->fh));
	snprintf(pub, sizeof(pub), "%s.pub", key);
	FILE *k = fopen(key, "w"), *p = fopen(pub, "w");
	assert_non_null(k);
	assert_non_null(p);
	fputs("-----BEGIN OPENSSH PRIVATE KEY-----\n", k);
	fputs("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ test\n", p);
	fclose(k);
	fclose(p);
	hs_fakehost_set(f->fh, "host", "127.0.0.1");
	hs_fakehost_set(f->fh, "user", "nobody");
	hs_fakehost_set(f->fh, "identity_file", key);
	probe_reason(f, &r);
	if (LIBSSH2_VERSION_NUM < 0x010b00) {
		assert_false(r.ready);
		assert_non_null(strstr(r.reason, "RSA key"));
		assert_non_null(strstr(r.reason, "ed25519 or ECDSA"));
	}
}

static void
test_refused(void **s)
{
	struct fx *f = *s;
	struct hs_env_spec spec = { .struct_size = sizeof(spec), .env_name = "unit-refused" };
	struct hs_env_props props;
	char err[HS_ERR_MAX] = "";
	void *env = NULL;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	char port[16];
	/* a port that was free a moment ago and has no listener */
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	getsockname(fd, (struct sockaddr *)&a, &al);
	snprintf(port, sizeof(port), "%d", ntohs(a.sin_port));
	close(fd);
	hs_fakehost_set(f->fh, "host", "127.0.0.1");
	hs_fakehost_set(f->fh, "port", port);
	hs_fakehost_set(f->fh, "user", "nobody");
	hs_fakehost_set(f->fh, "connect_timeout", "1");
	memset(&props, 0, sizeof(props));
	uint64_t t0 = sx_now();
	int32_t st = hs_backend_v1.open(f->state, &spec, &env, &props, err);
	assert_int_equal(st, HS_E_UNAVAILABLE);
	assert_non_null(strstr(err, "cannot connect to 127.0.0.1:"));
	assert_non_null(strstr(err, "Connection refused"));
	assert_null(strchr(err, '\n'));
	assert_true(sx_now() - t0 < 3000);
	assert_int_equal(hs_backend_v1.close(env, 0, err), HS_OK);
	/* an image or a mount is refused before any network */
	spec.image = "debian";
	assert_int_equal(hs_backend_v1.open(f->state, &spec, &env, &props, err), HS_E_INVALID);
	spec.image = NULL;
	spec.env_name = "../x";
	env = NULL;
	assert_int_equal(hs_backend_v1.open(f->state, &spec, &env, &props, err), HS_E_INVALID);
}

/* "@revoked" lines of known_hosts: the key's line number, whatever the host
 * pattern or padding; plain lines and other keys do not count. */
static void
test_kh_revoked(void **unused)
{
	(void)unused;
	char path[] = "/tmp/hs-kh-XXXXXX", b64a[80], b64b[80];
	uint8_t a[50], b[50];
	for (int i = 0; i < 50; i++) {
		a[i] = (uint8_t)(i * 7 + 1);
		b[i] = (uint8_t)(i * 11 + 3);
	}
	sx_b64(a, sizeof(a), b64a);
	sx_b64(b, sizeof(b), b64b);
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	fprintf(f, "# a comment\n");
	fprintf(f, "[127.0.0.1]:2222 ssh-ed25519 %s==\n", b64a); /* plain: trusted, not revoked */
	fprintf(f, "@cert-authority * ssh-ed25519 %s==\n", b64b);
	fprintf(f, "@revoked\t[other.host]:22 ssh-ed25519 %s== old key\n", b64a);
	fclose(f);
	assert_int_equal(sx_kh_revoked(path, (const char *)a, sizeof(a)), 4);
	assert_int_equal(sx_kh_revoked(path, (const char *)b, sizeof(b)), 0);
	assert_int_equal(sx_kh_revoked(path, (const char *)a, sizeof(a) - 1), 0);
	assert_int_equal(sx_kh_revoked("/nonexistent/known_hosts", (const char *)a, sizeof(a)), 0);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_quote_b64),
		cmocka_unit_test(test_kh_revoked),
		cmocka_unit_test_setup_teardown(test_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rsa_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
