/* SPDX-License-Identifier: MIT */
/*
 * hsconf-schema.h - the core's configuration keys: type, default, doc and
 * the tightening order that decides what a later layer may do to a key an
 * administrator locked.  Private to core/config/hsconf*.c and `hs config`-style
 * listings.
 */
#ifndef HS_HSCONF_SCHEMA_H
#define HS_HSCONF_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

/*
 * How a locked key may change after the admin layers.  "Stricter" is always
 * relative to the admin's value (the ceiling), not to the previous layer.
 */
enum hs_conf_order {
	HS_ORDER_FIXED = 0,     /* any change is a loosening */
	HS_ORDER_ENUM,          /* enums[] lists values strictest first */
	HS_ORDER_LESS,          /* a smaller integer is stricter */
	HS_ORDER_LESS_ZERO_MAX, /* smaller is stricter, but 0 means "no limit" (loosest) */
	HS_ORDER_BOOL,          /* strict_bool is the strict value */
	HS_ORDER_SUBSET,        /* a list may only lose entries */
	HS_ORDER_SUPERSET,      /* a list may only gain entries */
	HS_ORDER_NOT_LOCKABLE,  /* "locked" itself */
};

/* Checks on a value, beyond its type. */
#define HS_CHECK_ABSPATH 0x1  /* strings (and list items) must be absolute paths */
#define HS_CHECK_ENVNAME 0x2  /* list items must be environment variable names */
#define HS_CHECK_POSITIVE 0x4 /* integers must be > 0 (otherwise >= 0) */
#define HS_CHECK_NONEMPTY 0x8 /* strings must not be empty */

struct hs_conf_schema {
	const char *name;       /* "approval", or a plugin's "local.isolation" */
	int type;               /* enum hs_config_type (sdk/hs/backend.h) */
	const char *def_string; /* default for strings; NULL: unset */
	int64_t def_int;        /* default for integers and booleans */
	int has_default;        /* integers, booleans, lists: 1 when set by default */
	int order;              /* enum hs_conf_order */
	const char *const *enums; /* NULL-terminated, strictest first; NULL: any value */
	int strict_bool;        /* HS_ORDER_BOOL: the strict value */
	unsigned checks;        /* HS_CHECK_* */
	const char *doc;
};

/* The schema, terminated by an entry with a NULL name. */
extern const struct hs_conf_schema hs_conf_schema_table[];

/* The schema entry for key, or NULL when the core does not know it. */
const struct hs_conf_schema *hs_conf_schema_find(const char *key);

/* 1 when name is a section the core knows (a schema key starts "name."). */
int hs_conf_schema_known_section(const char *name);

#endif /* HS_HSCONF_SCHEMA_H */
