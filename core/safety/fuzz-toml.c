/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the token-file reader (core/safety/toml.c).
 *
 *   make fuzz-toml CC=clang && core/safety/fuzz-toml -max_total_time=60
 *
 * tests/safety/test-credentials.c runs the same entry point over a seed
 * corpus and mutations of it with the normal compiler.  Whatever parses is
 * written back out (every value as a quoted string with escapes) and must
 * parse again to the same entries.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/toml.h"

int hs_fuzz_toml(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
put_quoted(char **o, const char *s)
{
	*(*o)++ = '"';
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') {
			*(*o)++ = '\\';
			*(*o)++ = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			*o += sprintf(*o, "\\u%04x", ch);
		} else {
			*(*o)++ = (char)ch;
		}
	}
	*(*o)++ = '"';
}

int
hs_fuzz_toml(const uint8_t *data, size_t size)
{
	struct hs_toml t, t2;
	char err[256];

	if (hs_toml_parse(&t, (const char *)data, size, err, sizeof(err)) < 0) {
		if (!err[0] || t.n != 0)
			abort();
		return 0;
	}
	/* Write it back out: a section only where it changes. */
	char *out = malloc(size * 8 + t.n * 16 + 64), *o = out;
	const char *sec = "";
	for (size_t i = 0; i < t.n; i++) {
		if (strcmp(t.e[i].section, sec) != 0) {
			*o++ = '[';
			put_quoted(&o, t.e[i].section);
			o += sprintf(o, "]\n");
			sec = t.e[i].section;
		}
		put_quoted(&o, t.e[i].key);
		o += sprintf(o, " = ");
		if (t.e[i].type == HS_TOML_STRING)
			put_quoted(&o, t.e[i].value);
		else
			o += sprintf(o, "%s", t.e[i].value);
		*o++ = '\n';
	}
	if (hs_toml_parse(&t2, out, (size_t)(o - out), err, sizeof(err)) < 0 || t2.n != t.n)
		abort();
	for (size_t i = 0; i < t.n; i++)
		if (strcmp(t.e[i].section, t2.e[i].section) || strcmp(t.e[i].key, t2.e[i].key) ||
		    strcmp(t.e[i].value, t2.e[i].value) || t.e[i].type != t2.e[i].type)
			abort();
	hs_toml_free(&t2);
	hs_toml_free(&t);
	free(out);
	return 0;
}

#ifndef HS_FUZZ_NO_MAIN
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return hs_fuzz_toml(data, size);
}
#endif
