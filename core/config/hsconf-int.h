/* SPDX-License-Identifier: MIT */
/*
 * hsconf-int.h - what core/config/hsconf.c (the merged store, locks, HS_* and the
 * command line) and core/config/hsconf-file.c (libconfig files) share.
 */
#ifndef HS_HSCONF_INT_H
#define HS_HSCONF_INT_H

#include <stddef.h>
#include <stdint.h>

#include "core/config/hsconf.h"
#include "core/config/hsconf-schema.h"

/* Value types: enum hs_config_type, plus "unset" and untyped text. */
#define HS_VT_UNSET (-1)
#define HS_VT_TEXT 100 /* a section value from HS_* or the command line, type not yet known */

struct hs_conf_value {
	int type;
	char *s;     /* HS_CONF_STRING, HS_VT_TEXT */
	int64_t i;   /* HS_CONF_INT, HS_CONF_BOOL */
	char **list; /* HS_CONF_STRINGS, NULL-terminated */
	size_t n;
};

/* Where a value comes from: a file line, an HS_* variable or the command line. */
struct hs_conf_src {
	const char *file; /* NULL unless a file */
	int line;
	const char *name; /* "HS_APPROVAL", "command line" */
	int admin;        /* a SYSCONFDIR file */
};

struct hs_conf_entry {
	char *key;
	struct hs_conf_value v;
	char *origin; /* NULL while unset */
	int locked;
	struct hs_conf_value ceiling; /* the value when the admin layers ended */
	char *ceiling_origin;
	struct hs_conf_value admin; /* the value when the admin layers ended, locked or not */
	int warned; /* an unknown-key or type warning was given */
	/* A locked key no rule was known for yet (a plugin's, before it declared
	 * its rules): the values the lock refused as "fixed" since the last one
	 * it took, in layer order, replayed under the rule when the plugin
	 * declares it (hs_conf_declare). */
	struct hs_conf_pending *pend;
	size_t n_pend;
};

struct hs_conf_pending {
	struct hs_conf_value v;
	char *origin;
};

/* Forget e's refused values. */
void hs_conf_pending_clear(struct hs_conf_entry *e);

struct hs_conf {
	struct hs_conf_entry *e;
	size_t n, cap;
	char *const *env;
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	/* Keys plugins declared (hs_conf_declare), one block per section, newest
	 * first.  A block is complete before it is published and never changes,
	 * so readers on other threads need no lock. */
	struct hs_conf_decl *decls;
};

struct hs_conf_decl {
	struct hs_conf_decl *next;
	char *section;
	char *error; /* a value of the section failed the declaration: why (set once) */
	size_t n;
	struct hs_conf_schema keys[]; /* names "section.key", malloc'd */
};

/* Free every declaration (hs_conf_free). */
void hs_conf_decls_free(struct hs_conf *c);
/* 1 when a backend declared the keys of section. */
int hs_conf_declared(const struct hs_conf *c, const char *section);
/* The rule for key: the core's schema, else a plugin's declaration, else NULL (fixed). */
const struct hs_conf_schema *hs_conf_schema_of(const struct hs_conf *c, const char *key);
/* May v replace a locked key whose admin value is ceil under sc (NULL: fixed)?  1 yes. */
int hs_conf_within_ceiling(const struct hs_conf_schema *sc, const struct hs_conf_value *ceil,
                           const struct hs_conf_value *v);
/* The schema's checks beyond the type; -1 with "'key' must ..." in err. */
int hs_conf_check_value(const struct hs_conf_schema *sc, const struct hs_conf_value *v, char *err,
                        size_t errlen);
/* Copy src into dst (deep); 0 or -1 (no memory, dst unset). */
int hs_conf_value_copy(struct hs_conf_value *dst, const struct hs_conf_value *src);

void hs_conf_warnf(struct hs_conf *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void hs_conf_value_clear(struct hs_conf_value *v);
/* Take ownership of a NULL-terminated list of n strings into v; 0 or -1 (no memory). */
int hs_conf_value_list(struct hs_conf_value *v, char **list, size_t n);
/* "'FILE': line N", "HS_X" or "command line", for messages. */
void hs_conf_src_describe(const struct hs_conf_src *src, char *buf, size_t len);

/*
 * Set key to *v (taken over whatever happens) from src: check it against the
 * schema, then against a lock.  Returns 0 (also when a lock ignored it, with
 * a warning) or -1 with a reason.
 */
int hs_conf_apply(struct hs_conf *c, const char *key, struct hs_conf_value *v,
                  const struct hs_conf_src *src, char *err, size_t errlen);

/* Add name to the union of locked keys (admin files).  0 or -1. */
int hs_conf_add_lock(struct hs_conf *c, const char *name, const struct hs_conf_src *src,
                     char *err, size_t errlen);

/*
 * Read one file into c.  A missing file is fine unless required; a refused
 * or unparsable one is an error.  Returns 0 or -1 with a reason.
 */
int hs_conf_read_file(struct hs_conf *c, const char *path, int admin, int required,
                      char *err, size_t errlen);

/* Read SYSCONFDIR/conf.d/ *.conf in strcmp order.  0 or -1. */
int hs_conf_read_dir(struct hs_conf *c, const char *dir, char *err, size_t errlen);

/* Shared by core/config/hsconf.c and core/config/hsconf-get.c. */
struct hs_conf_entry *hs_conf_find(const struct hs_conf *c, const char *key);
/* Text for messages and listings: strings quoted, lists libconfig-style. */
void hs_conf_value_format(const struct hs_conf_value *v, char *buf, size_t len);
/* A non-negative decimal integer; 0 or -1. */
int hs_conf_parse_int(const char *s, int64_t *out);
/* true/yes/on/1 or false/no/off/0, any case; 0 or -1. */
int hs_conf_parse_bool(const char *s, int *b);
/* Text (HS_*, command line) to a value of type; -1 with "expected ..." in err. */
int hs_conf_parse_text(int type, const char *text, struct hs_conf_value *v, char *err,
                       size_t errlen);

#endif /* HS_HSCONF_INT_H */
