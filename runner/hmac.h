/* SPDX-License-Identifier: MIT */
/* HMAC-SHA256 (FIPS 180-4, RFC 2104) and the runner channel's key
 * material: plain C with libc only, built into the static runner and into
 * the core's client library.  See hs-runner(7), "Authentication". */
#ifndef HSR_HMAC_H
#define HSR_HMAC_H

#include <stddef.h>
#include <stdint.h>

#define HSR_SHA256_LEN 32
/* The per-session key and each side's nonce. */
#define HSR_KEY_LEN 32
#define HSR_NONCE_LEN 32

struct hsr_sha256 {
	uint32_t h[8];
	uint64_t bytes;
	uint8_t block[64];
	size_t fill;
};

void hsr_sha256_init(struct hsr_sha256 *s);
void hsr_sha256_update(struct hsr_sha256 *s, const void *p, size_t n);
void hsr_sha256_final(struct hsr_sha256 *s, uint8_t out[HSR_SHA256_LEN]);

/* out = HMAC-SHA256(key, the concatenation of the n parts). */
void hsr_hmac_sha256(const void *key, size_t keylen, const void *const *parts,
		     const size_t *lens, size_t n, uint8_t out[HSR_SHA256_LEN]);

/* The proof one side sends: HMAC(key, label || nonce_a || nonce_b), label
 * being "hs-runner daemon" or "hs-runner client" with its NUL, so that a
 * proof never serves for the other direction. */
void hsr_auth_proof(const uint8_t key[HSR_KEY_LEN], const char *label,
		    const uint8_t a[HSR_NONCE_LEN], const uint8_t b[HSR_NONCE_LEN],
		    uint8_t out[HSR_SHA256_LEN]);
#define HSR_LABEL_DAEMON "hs-runner daemon"
#define HSR_LABEL_CLIENT "hs-runner client"

/* Compares n bytes in time independent of the contents.  Returns 0 when
 * equal. */
int hsr_memneq(const void *a, const void *b, size_t n);

/* Fills p with n bytes from the kernel's generator (getrandom).  Returns 0
 * or -1 with errno. */
int hsr_random(void *p, size_t n);

/* Overwrites n bytes in a way the compiler keeps. */
void hsr_wipe(void *p, size_t n);

#endif
