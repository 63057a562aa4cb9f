/* SPDX-License-Identifier: MIT */
/*
 * toml.h - a minimal, strict reader for the subset of TOML that credential
 * files such as ~/.modal.toml use: [section] headers (bare or "quoted"),
 * key = value lines whose value is a basic "string", a literal 'string',
 * true/false or a decimal integer, and # comments.  Anything else (arrays,
 * tables inline, dotted keys, multi-line strings, dates, floats) is refused
 * with the line number, as are duplicate sections and keys.
 */
#ifndef HS_SAFETY_TOML_H
#define HS_SAFETY_TOML_H

#include <stddef.h>

enum hs_toml_type {
	HS_TOML_STRING = 0,
	HS_TOML_BOOL = 1, /* value is "true" or "false" */
	HS_TOML_INT = 2,  /* value is the decimal text */
};

struct hs_toml_entry {
	char *section; /* "" before any header */
	char *key;
	char *value;
	int type;      /* enum hs_toml_type */
};

struct hs_toml {
	struct hs_toml_entry *e;
	size_t n;
	char **sections; /* every header seen, in order, even when empty */
	size_t n_sections;
};

/* Largest input accepted, and most entries. */
#define HS_TOML_MAX_BYTES (256u * 1024u)
#define HS_TOML_MAX_ENTRIES 4096u

/*
 * Parse len bytes of buf (need not be NUL-terminated).  Returns 0 with t
 * filled, or -1 with a one-line reason ("line 3: ...") in err; t is then
 * empty.  Free with hs_toml_free either way.
 */
int hs_toml_parse(struct hs_toml *t, const char *buf, size_t len, char *err, size_t errlen);

/* The entry section.key, or NULL. */
const struct hs_toml_entry *hs_toml_get(const struct hs_toml *t, const char *section, const char *key);

/* Release everything; values are wiped first (they may be secrets). */
void hs_toml_free(struct hs_toml *t);

#endif
