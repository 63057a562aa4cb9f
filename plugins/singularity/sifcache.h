/* SPDX-License-Identifier: MIT */
/*
 * sifcache.h - a cache of SIF images built from remote sources
 * (docker://, library://, oras://, ...) for the singularity backend.
 *
 * The cache lives on scratch, which is often a shared parallel file system
 * where flock() is unreliable and atime is not kept, and which site cleaners
 * empty without warning.  So:
 *  - every image is built to a temporary name and renamed into place;
 *  - builders of one image exclude each other with a lock file created
 *    O_EXCL (owner "host pid start-time" inside; a lock whose owner is dead
 *    on this host, or that was not refreshed for stale_s, is broken);
 *  - least-recently-used order lives in an index file, not in atime;
 *  - an image is checked (exists, is a SIF) before every use and rebuilt
 *    when a cleaner removed it.
 */
#ifndef HS_SIFCACHE_H
#define HS_SIFCACHE_H

#include <stddef.h>
#include <stdint.h>

/* Offset and text of the SIF magic: after the 32-byte launch line. */
#define HS_SIF_MAGIC_OFF 32
#define HS_SIF_MAGIC "SIF_MAGIC"

/*
 * Builds source into the file tmp_path.  Called in a forked child of the
 * caller (which may be multi-threaded), so it must only do async-signal-safe
 * work: execve, or open/write/close.  Returns the child's exit status.
 */
typedef int (*hs_sif_build_fn)(void *ctx, const char *source, const char *tmp_path);

struct hs_sifcache {
	char dir[1024];       /* the cache directory (created 0700) */
	uint64_t max_bytes;   /* size cap; 0: no cap */
	int64_t stale_s;      /* a lock not refreshed for this long is broken */
	int64_t wait_s;       /* how long to wait for another builder */
	int64_t build_s;      /* kill a build that takes longer; 0: no limit */
	hs_sif_build_fn build;
	void *ctx;
};

/* 1 when path is a regular file that starts like a SIF, 0 otherwise. */
int hs_sif_check(const char *path);

/*
 * The cache file for source (existing or not), "<dir>/<name>-<hash>.sif".
 * Returns 0, or -1 when it does not fit in len.
 */
int hs_sifcache_path(const struct hs_sifcache *c, const char *source, char *out, size_t len);

/*
 * Make sure source is in the cache as a valid SIF, building it when absent
 * or damaged, record its use and evict the least recently used others above
 * the cap.  *built is set to 1 when this call built the image.  Returns an
 * hs_status (HS_OK, HS_E_BUSY when another builder held the lock too long,
 * HS_E_IO, HS_E_PERM, ...) with a one-line reason in err (HS_ERR_MAX bytes).
 */
int hs_sifcache_get(const struct hs_sifcache *c, const char *source, char *path, size_t len,
                    int *built, char *err);

#endif /* HS_SIFCACHE_H */
