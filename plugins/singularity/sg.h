/* SPDX-License-Identifier: MIT */
/*
 * sg.h - internals of the singularity backend: its state and environment,
 * shared by the apptainer runs (sg-run.c), the images and instances
 * (sg-instance.c) and the ops (singularity.c).  Nothing here is exported:
 * the plugin is built with -fvisibility=hidden and exports only
 * hs_backend_v1.  The SIF cache has its own interface, sifcache.h.
 */
#ifndef HS_SG_H
#define HS_SG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hs/backend.h>

#define SG_MAX_ATTACH 16
#define SG_MAX_ARGS 96
#define SG_MAX_ENV 512
/* Where the runner and its runtime directory appear inside the instance. */
#define SG_IN_RUNNER "/.hs/hs-runner"
#define SG_IN_RUNDIR "/.hs/run"

struct sg_state {
	const struct hs_host_v1 *host;
	char exe[1024];     /* resolved apptainer/singularity, "" when none */
	char flavour[16];   /* "apptainer" or "singularity": the env prefix */
	char scratch[1024];
	char cache_dir[1024];
	uint64_t cache_max;
	int64_t build_timeout;
	int64_t lock_wait;
};

struct sg_env {
	struct sg_state *st;
	char name[128];      /* the instance name */
	char rundir[1024];   /* host side of SG_IN_RUNDIR */
	char shellfile[1024];
	char logfile[1024];  /* apptainer's messages for the runner streams */
	int64_t idle;
	int started; /* this open started the instance */
	int opened;  /* open succeeded */
	pid_t attach[SG_MAX_ATTACH];
};

/*
 * The environment for every apptainer process: ours, without variables
 * that would change what the instance sees behind our back (binds, home,
 * any *ENV_ value), plus the cache/tmp dirs on scratch and the pass-through
 * variables as <PREFIX>ENV_NAME.  Values never go on a command line.
 */
struct sg_envv {
	char *v[SG_MAX_ENV + 1];
	int n;
};

struct sg_argv {
	const char *v[SG_MAX_ARGS + 1];
	char *owned[SG_MAX_ARGS];
	int n, n_owned;
};

/* apptainer runs (sg-run.c) */
void sg_envv_free(struct sg_envv *e);
/* Fill e (free it with sg_envv_free); passthrough: add env_passthrough.
 * Returns 0, or -1 when out of memory. */
int sg_env_build(struct sg_state *st, int passthrough, struct sg_envv *e);
/*
 * Run the executable with argv, wait up to timeout_ms, and keep the tail of
 * its standard output in out and of its standard error in eout (when eout
 * is NULL, standard error goes to out too).  Returns the exit status
 * (0..255, 128+N for a signal), or -1 with err set.
 */
int sg_run2(struct sg_state *st, const char *const *argv, int passthrough, int timeout_ms,
            char *out, size_t outlen, char *eout, size_t eoutlen, char *err);
/* sg_run2 with standard error into out. */
int sg_run(struct sg_state *st, const char *const *argv, int passthrough, int timeout_ms, char *out,
           size_t outlen, char *err);
/* The last non-empty line of s, in place, for one-line messages. */
const char *sg_last_line(char *s);

/* images and instances (sg-instance.c) */
/* 1 when img names a remote source (docker://, library://, ...) to build into the cache. */
int sg_is_remote(const char *img);
/* Turn the image the user named into something instance start can use. */
int32_t sg_image(struct sg_state *st, const char *image, char *out, size_t len, char *note,
                 size_t nlen, char *err);
/* 1 when the instance is running, 0 when not, -1 with err set. */
int sg_running(struct sg_state *st, const char *name, char *err);
/* Find the instance's shell (/bin/bash, else /bin/sh) and record it in the shell file. */
int sg_detect_shell(struct sg_env *env, char *shell, size_t len, char *err);
/* The shell recorded in the shell file; -1 when none. */
int sg_read_shell(struct sg_env *env, char *shell, size_t len);
void sg_argv_free(struct sg_argv *a);
/* Add the user's mounts as binds, each assessed by the core. */
int32_t sg_mounts(struct sg_state *st, const struct hs_env_spec *spec, struct sg_argv *a,
                  struct hs_env_props *props, char *err);
/* "instance start" of env's instance from image, contained, with the runner
 * and the mounts bound. */
int32_t sg_start(struct sg_env *env, const struct hs_env_spec *spec, const char *image,
                 struct hs_env_props *props, char *err);

#endif /* HS_SG_H */
