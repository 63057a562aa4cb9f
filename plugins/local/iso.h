/* SPDX-License-Identifier: MIT */
/*
 * iso.h - internals of hs-isolate: its options, and the functions shared by
 * the launcher (hs-isolate.c) and the sandbox's root (isolate-root.c).  What
 * hs-isolate shares with the local backend is in isolate.h.
 */
#ifndef HS_ISO_H
#define HS_ISO_H

#include <stddef.h>

#define ISO_MAX_BINDS 32

struct iso_opts {
	const char *dir;       /* the session's runtime directory (host path, host-only) */
	const char *runner;    /* hs-runner on the host */
	const char *workspace; /* bound read-write; may be NULL */
	const char *idle;
	const char *home;
	const char *hide_extra[8];
	int n_hide_extra;
	const char *ro[ISO_MAX_BINDS], *rw[ISO_MAX_BINDS];
	int n_ro, n_rw;
	long long memory; /* RLIMIT_AS */
	long long data;   /* RLIMIT_DATA */
	long long nofile;
	long long nproc;
	int share_net;
	int probe;
	int lockfd; /* the starter's lock: PID 1 must not keep it */
};

/* launcher (hs-isolate.c) */
/* The error channel: one line to the launcher on fd (standard error when fd
 * is negative), then _exit(1). */
void iso_fail(int fd, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
/* Why the kernel refused a namespace step (errno err), with the fix. */
void iso_explain_refusal(char *out, size_t len, int err);

/* the sandbox's root (isolate-root.c) */
/* Is a equal to b or an ancestor of it? */
int iso_covers(const char *a, const char *b);
/* Builds the sandbox's root in a tmpfs on rootdir and pivots into it; the
 * caller is PID 1 of the new namespaces.  Errors go to efd (iso_fail). */
void iso_build_root(int efd, const struct iso_opts *o, const char *rootdir);

#endif /* HS_ISO_H */
