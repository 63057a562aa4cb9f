/* SPDX-License-Identifier: MIT */
/*
 * allowlist.h - the persistent "always" approvals.
 *
 * Each entry is a rule id and the normalised argv it was granted for
 * (struct hs_finding.argv_norm).  The file is private to the user: it is
 * refused when group- or world-writable or owned by someone else, and
 * rewritten atomically.
 */
#ifndef HS_SAFETY_ALLOWLIST_H
#define HS_SAFETY_ALLOWLIST_H

#include <stddef.h>

struct hs_allowlist;

/* Load path (a missing file is an empty list).  Returns 0, or -1 with err naming the file. */
int hs_allowlist_load(struct hs_allowlist **out, const char *path, char *err, size_t errlen);
/* 1 when rule_id + argv_norm was granted "always", else 0. */
int hs_allowlist_check(const struct hs_allowlist *a, const char *rule_id, const char *argv_norm);
/* Add an entry and rewrite the file atomically.  Returns 0, or -1 with err. */
int hs_allowlist_add(struct hs_allowlist *a, const char *rule_id, const char *argv_norm, char *err, size_t errlen);
/* Number of entries. */
size_t hs_allowlist_count(const struct hs_allowlist *a);
void hs_allowlist_free(struct hs_allowlist *a);

#endif
