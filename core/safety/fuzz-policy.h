/* SPDX-License-Identifier: MIT */
/*
 * fuzz-policy.h - the policy a libFuzzer target of the analyser judges with
 * (header-only, for the fuzz targets): $HS_FUZZ_POLICY, else the source
 * tree's policy/ (HS_FUZZ_POLICY_DIR).  Loaded once; aborts when it cannot.
 */
#ifndef HS_SAFETY_FUZZ_POLICY_H
#define HS_SAFETY_FUZZ_POLICY_H

#include <stdlib.h>

#include "core/safety/safety.h"

static inline const struct hs_policy *
hs_fuzz_policy(void)
{
	static struct hs_policy *pol;
	char err[512];
	const char *dir;

	if (!pol) {
		dir = getenv("HS_FUZZ_POLICY");
		if (!dir)
			dir = HS_FUZZ_POLICY_DIR;
		if (hs_policy_load(&pol, &dir, 1, NULL, err, sizeof(err)))
			abort();
	}
	return pol;
}

#endif
