/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * fuzz-analyse - libFuzzer target for the analyser.  Built on request:
 *   make fuzz-analyse CC=clang
 * then run ./core/safety/fuzz-analyse with HS_FUZZ_POLICY=policy-dir
 * (default: the source tree's policy/).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/safety.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct hs_policy *pol;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hs_analysis an;
	char err[512], *cmd;
	const char *dir;

	if (!pol) {
		dir = getenv("HS_FUZZ_POLICY");
		if (!dir)
			dir = HS_FUZZ_POLICY_DIR;
		if (hs_policy_load(&pol, &dir, 1, NULL, err, sizeof(err)))
			abort();
	}
	cmd = malloc(size + 1);
	if (!cmd)
		return 0;
	memcpy(cmd, data, size);
	cmd[size] = '\0';
	hs_analyse(pol, cmd, HS_CONTEXT_HOST, &an);
	hs_analyse(pol, cmd, HS_CONTEXT_SANDBOX, &an);
	free(cmd);
	return 0;
}
