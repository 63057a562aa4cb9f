/* SPDX-License-Identifier: MIT */
/* SHA-256 and HMAC-SHA256, written from FIPS 180-4 and RFC 2104, for the
 * runner channel's challenge-response (hs-runner(7)).  Small and slow
 * enough: it hashes a few hundred bytes per stream. */
#include "hmac.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n)
{
	return x >> n | x << (32 - n);
}

static void compress(struct hsr_sha256 *s, const uint8_t *p)
{
	uint32_t w[64], v[8];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ w[i - 15] >> 3;
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ w[i - 2] >> 10;

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(v, s->h, sizeof(v));
	for (int i = 0; i < 64; i++) {
		uint32_t e = v[4], a = v[0];
		uint32_t t1 = v[7] + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
			      ((e & v[5]) ^ (~e & v[6])) + K[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
			      ((a & v[1]) ^ (a & v[2]) ^ (v[1] & v[2]));

		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + t2;
	}
	for (int i = 0; i < 8; i++)
		s->h[i] += v[i];
}

void hsr_sha256_init(struct hsr_sha256 *s)
{
	static const uint32_t h0[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	memcpy(s->h, h0, sizeof(h0));
	s->bytes = 0;
	s->fill = 0;
}

void hsr_sha256_update(struct hsr_sha256 *s, const void *data, size_t n)
{
	const uint8_t *p = data;

	s->bytes += n;
	while (n) {
		size_t k = 64 - s->fill < n ? 64 - s->fill : n;

		memcpy(s->block + s->fill, p, k);
		s->fill += k;
		p += k;
		n -= k;
		if (s->fill == 64) {
			compress(s, s->block);
			s->fill = 0;
		}
	}
}

void hsr_sha256_final(struct hsr_sha256 *s, uint8_t out[HSR_SHA256_LEN])
{
	uint64_t bits = s->bytes * 8;
	uint8_t pad[72] = { 0x80 };
	size_t padlen = (s->fill < 56 ? 56 : 120) - s->fill;

	for (int i = 0; i < 8; i++)
		pad[padlen + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
	hsr_sha256_update(s, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
	hsr_wipe(s, sizeof(*s));
}

void hsr_hmac_sha256(const void *key, size_t keylen, const void *const *parts,
		     const size_t *lens, size_t n, uint8_t out[HSR_SHA256_LEN])
{
	uint8_t k[64] = { 0 }, pad[64], inner[HSR_SHA256_LEN];
	struct hsr_sha256 s;

	if (keylen > sizeof(k)) {
		hsr_sha256_init(&s);
		hsr_sha256_update(&s, key, keylen);
		hsr_sha256_final(&s, k);
	} else if (keylen) {
		memcpy(k, key, keylen);
	}
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	hsr_sha256_init(&s);
	hsr_sha256_update(&s, pad, sizeof(pad));
	for (size_t i = 0; i < n; i++)
		hsr_sha256_update(&s, parts[i], lens[i]);
	hsr_sha256_final(&s, inner);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	hsr_sha256_init(&s);
	hsr_sha256_update(&s, pad, sizeof(pad));
	hsr_sha256_update(&s, inner, sizeof(inner));
	hsr_sha256_final(&s, out);
	hsr_wipe(k, sizeof(k));
	hsr_wipe(pad, sizeof(pad));
}

void hsr_auth_proof(const uint8_t key[HSR_KEY_LEN], const char *label,
		    const uint8_t a[HSR_NONCE_LEN], const uint8_t b[HSR_NONCE_LEN],
		    uint8_t out[HSR_SHA256_LEN])
{
	const void *parts[] = { label, a, b };
	const size_t lens[] = { strlen(label) + 1, HSR_NONCE_LEN, HSR_NONCE_LEN };

	hsr_hmac_sha256(key, HSR_KEY_LEN, parts, lens, 3, out);
}

int hsr_memneq(const void *a, const void *b, size_t n)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d != 0;
}

int hsr_random(void *p, size_t n)
{
	uint8_t *q = p;

	while (n) {
		ssize_t r = getrandom(q, n, 0);

		if (r < 0 && errno == ENOSYS) {
			/* A kernel older than 3.17. */
			int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

			r = fd < 0 ? -1 : read(fd, q, n);
			if (fd >= 0)
				close(fd);
			if (r <= 0)
				return -1;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		q += r;
		n -= (size_t)r;
	}
	return 0;
}

void hsr_wipe(void *p, size_t n)
{
	volatile uint8_t *q = p;

	while (n--)
		*q++ = 0;
}
