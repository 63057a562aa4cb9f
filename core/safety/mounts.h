/* SPDX-License-Identifier: MIT */
/*
 * mounts.h - host-access assessment of a mount spec.
 */
#ifndef HS_SAFETY_MOUNTS_H
#define HS_SAFETY_MOUNTS_H

#include <hs/backend.h>

/*
 * Classify spec, written as docker's -v (SRC:DST[:OPTS], DST, NAME:DST) or
 * --mount (key=value,... in any order), into out: kind host, volume,
 * anonymous, tmpfs or invalid (out->reason says why).  Host paths set
 * host_access, with a reason naming the path; "~" and $HOME expand to home;
 * an unknown $VAR counts as a host path.  A source equal to or inside
 * workspace (may be NULL) sets workspace=1 and keeps host_access=1, so a
 * caller sees it is the host and that it is the sanctioned exception.
 * Returns 0 (also for invalid specs), -1 when spec or out is NULL.
 */
int hs_mount_assess(const char *spec, const char *home, const char *workspace, struct hs_mount *out);
/* "host", "volume", "anonymous", "tmpfs" or "invalid". */
const char *hs_mount_kind_name(int kind);
/*
 * 1 when an assessed mount hands over the host itself (its root, or the docker
 * socket): approve mode never grants these, only a person can.
 */
int hs_mount_critical(const struct hs_mount *m);

#endif
