/* SPDX-License-Identifier: MIT */
/* sha256.h - SHA-256 for the ssh backend (runner naming and verification):
 * the runner's own implementation (runner/hmac.c), and hex for names. */
#ifndef SX_SHA256_H
#define SX_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "runner/hmac.h"

/* Lowercase hex of n bytes into out (2n+1 bytes). */
void sx_hex(const uint8_t *d, size_t n, char *out);

#endif
