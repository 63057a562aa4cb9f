/* SPDX-License-Identifier: MIT */
/*
 * loader.h - discovering, checking and loading backend plugins.
 */
#ifndef HS_LOADER_H
#define HS_LOADER_H

#include <limits.h>
#include <stddef.h>

#include <hs/backend.h>

/* Smallest descriptor an ABI 1.0 plugin may declare: up to and including close. */
#define HS_BACKEND_V1_MIN_SIZE \
	(offsetof(struct hs_backend_v1, close) + sizeof(((struct hs_backend_v1 *)0)->close))

struct hs_plugin {
	char path[PATH_MAX];          /* the file, or "(built-in)" */
	char name[64];                /* backend name (file name without .so) */
	int builtin;
	int refused;                  /* non-zero: reason says why */
	char reason[512];
	char version[64];             /* copies: valid even when checked in a child */
	char summary[256];
	struct hs_backend_v1 desc;    /* copy of the descriptor, zero past struct_size */
	int runner_stream;            /* the descriptor has runner_stream (also when
	                                 checked in a child, where desc stays empty) */
	void *dl;                     /* dlopen handle; never closed while threads run */
};

/*
 * Check a descriptor found in file (symsize: the symbol's ELF size, 0 if
 * unknown).  Returns 0, or -1 with a one-line reason in reason.
 */
int hs_loader_validate(const struct hs_backend_v1 *be, size_t symsize, const char *name,
                       char *reason, size_t len);

/*
 * Open path with O_NOFOLLOW, check owner and mode of the file and its
 * directory chain and its ELF header, dlopen it through /proc/self/fd/N
 * (so the checked file is the loaded file) and validate its descriptor.
 * Fills p (p->refused and p->reason on failure).  Returns 0 or -1.
 */
int hs_loader_load_file(const char *path, struct hs_plugin *p);

/*
 * List the candidate plugin files of dirs, in order: every "*.so" entry,
 * symbolic links included (they are refused later, by name).  Missing
 * directories are skipped; a directory that fails the ownership checks yields
 * one refused entry naming it.  Returns 0, or -1 on allocation failure.
 * Free *out with free().
 */
int hs_loader_scan(const char *const *dirs, size_t n_dirs, struct hs_plugin **out, size_t *n_out);

/*
 * Load backend NAME: the first "NAME.so" in dirs order.  Returns 0 with p
 * filled, 1 when no such file exists, or -1 with p->reason set.
 */
int hs_loader_find(const char *const *dirs, size_t n_dirs, const char *name, struct hs_plugin *p);

/*
 * Load and validate p->path in a forked child (p->refused and p->reason are
 * set when the child refuses the plugin, crashes or hangs), so a plugin whose
 * constructor crashes cannot take hs down.  If probe is non-NULL and the
 * plugin is valid, the child also runs init+probe with the host made by
 * make_host and copies the report into *probe.  Returns 0 valid, -1 refused.
 * make_host gets the validated descriptor (its config keys and rules) and
 * returns NULL with a one-line reason in err (HS_ERR_MAX) when it cannot.
 */
struct hs_probe_report;
typedef const struct hs_host_v1 *(*hs_host_maker)(const struct hs_backend_v1 *desc, void *ctx,
                                                  char *err);
int hs_loader_check_forked(struct hs_plugin *p, struct hs_probe_report *probe,
                           int32_t *probe_status, char *probe_err,
                           hs_host_maker make_host, void *host_ctx, int probe_flags);

#endif /* HS_LOADER_H */
