/* SPDX-License-Identifier: MIT */
/*
 * fuzz-stdin - libFuzzer target for the terminal input guard (stdin.c):
 *
 *   make fuzz-stdin
 *
 * The input is cut into writes (the first byte picks their length), each
 * judged in host and sandbox context and delivered unless denied.  Beyond
 * not crashing: judging never changes the guard (the same write judged
 * twice gets the same verdict), and a sandbox is never stricter than the
 * host.  tests/safety/test-stdin.c runs the same entry point over the seed
 * corpus and mutations of it with the normal compiler.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/safety/safety.h"

int hs_fuzz_stdin(const struct hs_policy *p, const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
hs_fuzz_stdin(const struct hs_policy *p, const uint8_t *data, size_t size)
{
	struct hs_stdin_guard *g;
	struct hs_analysis host, again, box;
	size_t step, off, n;

	if (!size)
		return 0;
	g = hs_stdin_guard_new();
	if (!g)
		return 0;
	step = (size_t)data[0] % 24 + 1;
	for (off = 1; off < size; off += n) {
		n = size - off < step ? size - off : step;
		if (hs_stdin_analyse(g, p, HS_CONTEXT_HOST, data + off, n, &host) != 0 ||
		    hs_stdin_analyse(g, p, HS_CONTEXT_HOST, data + off, n, &again) != 0 ||
		    hs_stdin_analyse(g, p, HS_CONTEXT_SANDBOX, data + off, n, &box) != 0)
			abort();
		if (host.verdict != again.verdict || host.n_findings != again.n_findings || box.verdict > host.verdict)
			abort();
		if (host.verdict != HS_VERDICT_DENY)
			hs_stdin_guard_commit(g, data + off, n);
	}
	hs_stdin_guard_free(g);
	return 0;
}

#ifndef HS_FUZZ_NO_MAIN
#include "core/safety/fuzz-policy.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return hs_fuzz_stdin(hs_fuzz_policy(), data, size);
}
#endif
