/* SPDX-License-Identifier: MIT */
/* hsb-int.h - libhsb's internals shared between its files (not installed). */
#ifndef HS_HSB_INT_H
#define HS_HSB_INT_H

#include <stdint.h>

/* Monotonic milliseconds. */
int64_t hsb_mono_ms(void);

#endif
