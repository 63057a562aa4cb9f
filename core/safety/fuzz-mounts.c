/* SPDX-License-Identifier: MIT */
/*
 * fuzz-mounts.c - libFuzzer target for the mount-spec parser
 * (hs_mount_assess): any spec a user can write is classified without a
 * crash, and what it reports is consistent.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/mounts.h"

int hs_fuzz_mounts(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
hs_fuzz_mounts(const uint8_t *data, size_t size)
{
	struct hs_mount m;
	char *spec = malloc(size + 1);
	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	for (int variant = 0; variant < 2; variant++) {
		memset(&m, 0, sizeof(m));
		int rc = hs_mount_assess(spec, variant ? NULL : "/home/u", variant ? NULL : "/work", &m);
		if (!hs_mount_kind_name(m.kind))
			abort();
		if (rc == 0) {
			/* A host-path mount always counts as host access. */
			if (m.kind == HS_MOUNT_HOST && !m.host_access)
				abort();
			(void)hs_mount_critical(&m);
		}
	}
	free(spec);
	return 0;
}

/* The smoke test links several targets together: it calls the hs_fuzz_* names. */
#ifndef HS_FUZZ_SMOKE
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return hs_fuzz_mounts(data, size);
}
#endif
