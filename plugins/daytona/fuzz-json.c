/* SPDX-License-Identifier: MIT */
/*
 * fuzz-json.c - libFuzzer target for the Daytona response readers.
 *
 *   make fuzz-daytona && plugins/daytona/fuzz-json -max_total_time=60
 *
 * The same entry point runs in `make check` (tests/daytona/test-json.c)
 * over a seed corpus with the normal compiler.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
dt_fuzz_json(const uint8_t *data, size_t size)
{
	const char *b = (const char *)data;
	struct dt_sandbox sb, list[8];
	struct dt_buf o = { 0 }, e = { 0 };
	char id[128], msg[256];
	int n, h, code;

	if (dt_json_sandbox(b, size, &sb, msg, sizeof(msg)) == 0 && (!sb.id[0] || strlen(sb.id) >= sizeof(sb.id)))
		abort();
	if (dt_json_sandbox_list(b, size, list, 8, &n) == 0 && (n < 0 || n > 8))
		abort();
	if (dt_json_exec(b, size, id, sizeof(id), &h, &code) == 0 && !id[0])
		abort();
	dt_json_command(b, size, &h, &code);
	dt_json_logs(b, size, 1, &o, &e);
	dt_json_logs(b, size, 0, &o, &e);
	if (!o.failed && o.len > 2 * size + 1)
		abort();
	dt_buf_free(&o);
	dt_buf_free(&e);
	dt_json_message(b, size, msg, sizeof(msg));
	if (strchr(msg, '\n'))
		abort();
	return 0;
}

#ifdef DT_FUZZ_MAIN
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return dt_fuzz_json(data, size);
}
#endif
