/* SPDX-License-Identifier: MIT */
/*
 * hsconf.h - layered configuration (libconfig).
 *
 * Layers, later winning per key: built-in defaults < SYSCONFDIR/hs.conf <
 * SYSCONFDIR/conf.d/ *.conf (sorted) < $XDG_CONFIG_HOME/hs/hs.conf < HS_*
 * variables < the --config/HS_CONFIG file < the command line.  The first two
 * are the admin layers: only they may say `locked = [ ... ]`, and a locked
 * key can afterwards only be tightened (see core/config/hsconf-schema.h); an
 * attempt to loosen it is ignored with a warning.  Every file is opened
 * through core/pathsec.h, so a file others could replace is refused.
 *
 * Keys are "name" at the top level or "section.name" inside a group named
 * after a backend.  Strings and lists returned stay valid until
 * hs_conf_free.
 */
#ifndef HS_HSCONF_H
#define HS_HSCONF_H

#include <stddef.h>
#include <stdint.h>

#include "hs/backend.h"

struct hs_conf;

struct hs_conf_opts {
	const char *sysconfdir;       /* admin directory, e.g. HS_SYSCONFDIR; NULL: none */
	const char *user_config_home; /* NULL: $XDG_CONFIG_HOME, else $HOME/.config */
	const char *extra_file;       /* --config FILE; NULL: $HS_CONFIG if set */
	char *const *environ_;        /* NULL: environ */
	/* Called once per warning with a one-line message; NULL: "hs: warning: ..." on stderr. */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

/*
 * Read every layer up to the HS_* variables and the extra file.  Returns 0
 * with *out set, or -1 with a one-line reason in err (a refused or
 * unparsable file, a malformed HS_* value, a value of the wrong type).
 */
int hs_conf_load(struct hs_conf **out, const struct hs_conf_opts *o, char *err, size_t errlen);

void hs_conf_free(struct hs_conf *c);

/*
 * Apply one command-line setting, value in text form (lists colon-separated,
 * booleans true/false/yes/no/on/off/1/0).  A locked key that would be
 * loosened keeps its value and a warning is given; that still returns 0.
 * Returns -1 with a reason for an unknown top-level key or a malformed value.
 */
int hs_conf_set_cli(struct hs_conf *c, const char *key, const char *value, char *err,
                    size_t errlen);

/*
 * Typed getters.  key is "approval" or "docker.host".  Return 0 with *out
 * set, 1 when the key is unset, -1 when its value has another type (a
 * section value given as text by HS_* or the command line is converted).
 */
int hs_conf_string(const struct hs_conf *c, const char *key, const char **out);
int hs_conf_int(const struct hs_conf *c, const char *key, int64_t *out);
int hs_conf_bool(const struct hs_conf *c, const char *key, int *out);
int hs_conf_strings(const struct hs_conf *c, const char *key, const char *const **out, size_t *n);

/*
 * Check the keys set in section against a plugin's declared keys
 * (NULL-name terminated; NULL: none).  Warns once per unknown key
 * ("unknown key 'docker.hots' in FILE:LINE") and once per value of the wrong
 * type; converts text values from HS_* or the command line to the declared
 * type.  Returns the number of unknown keys.
 */
int hs_conf_check_section(struct hs_conf *c, const char *section,
                          const struct hs_config_key *keys);

/*
 * A plugin's keys join the schema (ABI 1.1, hs_backend_v1.config_rules;
 * keys without a rule are fixed): its values are typed and checked, and a
 * value a lock refused while the key's order was unknown is admitted when
 * the declared order finds it within the admin's ceiling.  Once per
 * section.  Returns 0, or -1 with a one-line reason (an invalid value, or
 * rules that do not fit the keys).
 */
int hs_conf_declare(struct hs_conf *c, const char *section, const struct hs_config_key *keys,
                    const struct hs_config_rule *rules, char *err, size_t errlen);

/* Do rules fit keys (each names a key, with an order its type can have)?  0 or -1. */
int hs_conf_rules_check(const char *section, const struct hs_config_key *keys,
                        const struct hs_config_rule *rules, char *err, size_t errlen);

/*
 * Where the value of key came from: "default", "/etc/hs/hs.conf:12",
 * "HS_APPROVAL" or "command line".  NULL when the key is unset.
 */
const char *hs_conf_origin(const struct hs_conf *c, const char *key);

/*
 * 1 when item was in the list key had when the admin layers ended (built-in
 * defaults and SYSCONFDIR files), else 0: a user layer added it.
 */
int hs_conf_admin_has(const struct hs_conf *c, const char *key, const char *item);

/*
 * May a value that never passes through the layers (a command-line flag or a
 * serve request naming a backend or network) be used for key?  1 yes (also
 * when text is NULL or key is not locked), 0 with a one-line reason when it
 * is outside the admin's lock.
 */
int hs_conf_allows(const struct hs_conf *c, const char *key, const char *text, char *err,
                   size_t errlen);

/* 1 when an admin layer locked key, else 0. */
int hs_conf_locked(const struct hs_conf *c, const char *key);

/*
 * The i-th key that has a value (in first-set order), or NULL past the end;
 * with hs_conf_format, enough for an `hs config` listing.
 */
const char *hs_conf_key_at(const struct hs_conf *c, size_t i);

/*
 * Write key's value as text (lists as [ "a", "b" ]) into buf.  Returns 0,
 * 1 when unset.
 */
int hs_conf_format(const struct hs_conf *c, const char *key, char *buf, size_t len);

#endif /* HS_HSCONF_H */
