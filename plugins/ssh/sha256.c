/* SPDX-License-Identifier: MIT */
/* sha256.c - hex names for the ssh backend; SHA-256 itself is runner/hmac.c's. */
#include "config.h"

#include "sha256.h"

void
sx_hex(const uint8_t *d, size_t n, char *out)
{
	static const char hx[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hx[d[i] >> 4];
		out[2 * i + 1] = hx[d[i] & 15];
	}
	out[2 * n] = '\0';
}
