/* SPDX-License-Identifier: MIT */
/*
 * fuzz-serve.c - libFuzzer target for the serve protocol reader: one request
 * line through hs_serve_req_parse and every typed field reader the ops use.
 * Built by `make fuzz` (clang); the same entry point runs over the seed
 * corpus in tests/fuzz/test-fuzz-smoke under `make check`.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/serve/serve-req.h"

int hs_fuzz_serve(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
hs_fuzz_serve(const uint8_t *data, size_t size)
{
	struct hs_serve_req r;
	const char *code = NULL;
	char msg[256], *line = malloc(size + 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	int rc = hs_serve_req_parse(line, size, &r, &code, msg, sizeof(msg));
	if (rc < 0 && (!code || !msg[0]))
		abort(); /* every refusal carries a code and a message */
	if (rc == 0) {
		static const char *const keys[] = { "session", "command", "backend", "image", "network",
		                                    "path", "cwd", "approval", "request", "decision",
		                                    "job", "action", "stream", "context" };
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			(void)hs_serve_str(r.root, keys[i]);
		int64_t t = 0, m = 0;
		int32_t c = 0;
		const char *what = NULL;
		if (hs_serve_seconds(r.root, "timeout", &t) == 0 && (t < 0 || t > 1000000000))
			abort();
		(void)hs_serve_uint(r.root, "offset", 0);
		(void)hs_serve_uint(r.root, "mode", 0644);
		(void)hs_serve_true(r.root, "persistent");
		if (hs_serve_spec(r.root, &m, &c, &what) < 0 && !what)
			abort();
		const char *buf;
		size_t len;
		void *owned;
		static const char *const bkeys[] = { "stdin", "data" };
		for (size_t i = 0; i < 2; i++)
			if (hs_serve_bytes(r.root, bkeys[i], &buf, &len, &owned) > 0) {
				volatile char sink = len ? buf[len - 1] : 0; /* the bytes are all readable */
				(void)sink;
				free(owned);
			}
		char *kv[64];
		int n = hs_serve_env(r.root, kv, 64);
		for (int i = 0; i < n; i++) {
			if (!strchr(kv[i], '='))
				abort();
			free(kv[i]);
		}
	}
	yajl_tree_free(r.root);
	free(line);
	return 0;
}

/* The smoke test links several targets together: it calls the hs_fuzz_* names. */
#ifndef HS_FUZZ_SMOKE
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return hs_fuzz_serve(data, size);
}
#endif
