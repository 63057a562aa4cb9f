/* sha256.h - SHA-256 for the ssh backend (runner naming and verification). */
#ifndef SX_SHA256_H
#define SX_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sx_sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t fill;
};

void sx_sha256_init(struct sx_sha256 *c);
void sx_sha256_update(struct sx_sha256 *c, const void *data, size_t n);
void sx_sha256_final(struct sx_sha256 *c, uint8_t out[32]);
/* Lowercase hex of n bytes into out (2n+1 bytes). */
void sx_hex(const uint8_t *d, size_t n, char *out);

#endif
