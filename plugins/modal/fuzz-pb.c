/* SPDX-License-Identifier: MIT */
/*
 * fuzz-pb.c - libFuzzer target for the protobuf wire decoder (pb.c), which
 * reads what the network sends in direct mode: every field of any input,
 * nested messages followed a few levels down, each payload inside its input.
 * `make fuzz-modal-pb`; tests/fuzz/test-fuzz-smoke runs it over its seeds.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "plugins/modal/pb.h"

int hs_fuzz_pb(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
walk(const uint8_t *p, size_t n, int depth)
{
	struct pb_reader r;
	struct pb_field f;
	char s[64];
	int rc;

	pb_reader_init(&r, p, n);
	while ((rc = pb_next(&r, &f)) == 1) {
		if (f.wire == 2) {
			if (f.p < p || f.p + f.n > p + n)
				abort(); /* a payload outside its message */
			(void)pb_copy_str(&f, s, sizeof(s));
			if (depth < 4)
				walk(f.p, f.n, depth + 1);
		}
	}
	if (rc != 0 && rc != -1)
		abort();
}

int
hs_fuzz_pb(const uint8_t *data, size_t size)
{
	walk(data, size, 0);
	return 0;
}

#ifndef HS_FUZZ_SMOKE
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return hs_fuzz_pb(data, size);
}
#endif
