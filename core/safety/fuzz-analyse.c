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

#include "core/safety/fuzz-policy.h"
#include "core/safety/safety.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct hs_policy *pol = hs_fuzz_policy();
	struct hs_analysis an;
	char *cmd;

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
