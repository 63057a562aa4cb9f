/* SPDX-License-Identifier: MIT */
/* Unit tests of the runner's SHA-256 and HMAC-SHA256 (runner/hmac.c):
 * the test cases of RFC 4231 and FIPS 180-2, messages fed in pieces, and
 * the two directions' proofs never being equal. */
#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hmac.h"

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static void check_hmac(const void *key, size_t keylen, const void *data, size_t len,
		       const char *want)
{
	uint8_t mac[HSR_SHA256_LEN];
	char got[2 * HSR_SHA256_LEN + 1];
	const void *parts[] = { data };
	const size_t lens[] = { len };

	hsr_hmac_sha256(key, keylen, parts, lens, 1, mac);
	hex(mac, sizeof(mac), got);
	/* Test case 5 gives only the first 128 bits. */
	assert_memory_equal(got, want, strlen(want));
}

static void test_rfc4231(void **state)
{
	uint8_t k[131], d[50], k4[25];
	static const char t7[] = "This is a test using a larger than block-size key and a larger "
				 "than block-size data. The key needs to be hashed before being "
				 "used by the HMAC algorithm.";

	(void)state;
	memset(k, 0x0b, 20);
	check_hmac(k, 20, "Hi There", 8,
		   "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	check_hmac("Jefe", 4, "what do ya want for nothing?", 28,
		   "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(k, 0xaa, 20);
	memset(d, 0xdd, 50);
	check_hmac(k, 20, d, 50,
		   "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
	for (int i = 0; i < 25; i++)
		k4[i] = (uint8_t)(i + 1);
	memset(d, 0xcd, 50);
	check_hmac(k4, 25, d, 50,
		   "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
	memset(k, 0x0c, 20);
	check_hmac(k, 20, "Test With Truncation", 20, "a3b6167473100ee06e0c796c2955552b");
	memset(k, 0xaa, 131);
	check_hmac(k, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 54,
		   "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	check_hmac(k, 131, t7, sizeof(t7) - 1,
		   "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

/* FIPS 180-2 examples, and a million 'a's fed in odd-sized pieces so that
 * every block boundary and padding case is crossed. */
static void test_sha256(void **state)
{
	static const char m2[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	uint8_t a[997], h[HSR_SHA256_LEN];
	char got[2 * HSR_SHA256_LEN + 1];
	struct hsr_sha256 s;
	size_t left = 1000000;

	(void)state;
	hsr_sha256_init(&s);
	hsr_sha256_update(&s, "abc", 3);
	hsr_sha256_final(&s, h);
	hex(h, sizeof(h), got);
	assert_string_equal(got, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hsr_sha256_init(&s);
	hsr_sha256_update(&s, m2, sizeof(m2) - 1);
	hsr_sha256_final(&s, h);
	hex(h, sizeof(h), got);
	assert_string_equal(got, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(a, 'a', sizeof(a));
	hsr_sha256_init(&s);
	while (left) {
		size_t n = left < sizeof(a) ? left : sizeof(a);

		hsr_sha256_update(&s, a, n);
		left -= n;
	}
	hsr_sha256_final(&s, h);
	hex(h, sizeof(h), got);
	assert_string_equal(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* The proofs: parts concatenate, the labels keep the directions apart,
 * and a different key or nonce changes everything. */
static void test_proof(void **state)
{
	uint8_t key[HSR_KEY_LEN], k2[HSR_KEY_LEN], a[HSR_NONCE_LEN], b[HSR_NONCE_LEN];
	uint8_t p1[HSR_SHA256_LEN], p2[HSR_SHA256_LEN], whole[HSR_SHA256_LEN];
	uint8_t msg[sizeof(HSR_LABEL_DAEMON) + 2 * HSR_NONCE_LEN];
	const void *parts[] = { msg };
	size_t lens[] = { sizeof(msg) };

	(void)state;
	assert_int_equal(hsr_random(key, sizeof(key)), 0);
	assert_int_equal(hsr_random(a, sizeof(a)), 0);
	assert_int_equal(hsr_random(b, sizeof(b)), 0);
	memcpy(k2, key, sizeof(k2));
	k2[31] ^= 1;
	hsr_auth_proof(key, HSR_LABEL_DAEMON, a, b, p1);
	memcpy(msg, HSR_LABEL_DAEMON, sizeof(HSR_LABEL_DAEMON));
	memcpy(msg + sizeof(HSR_LABEL_DAEMON), a, HSR_NONCE_LEN);
	memcpy(msg + sizeof(HSR_LABEL_DAEMON) + HSR_NONCE_LEN, b, HSR_NONCE_LEN);
	hsr_hmac_sha256(key, sizeof(key), parts, lens, 1, whole);
	assert_memory_equal(p1, whole, sizeof(p1));
	hsr_auth_proof(key, HSR_LABEL_CLIENT, a, b, p2);
	assert_true(hsr_memneq(p1, p2, sizeof(p1)));
	hsr_auth_proof(k2, HSR_LABEL_DAEMON, a, b, p2);
	assert_true(hsr_memneq(p1, p2, sizeof(p1)));
	hsr_auth_proof(key, HSR_LABEL_DAEMON, b, a, p2);
	assert_true(hsr_memneq(p1, p2, sizeof(p1)));
	assert_false(hsr_memneq(p1, whole, sizeof(p1)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc4231),
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_proof),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
