/* SPDX-License-Identifier: MIT */
/*
 * docker.h - shared state of the docker backend's files.
 */
#ifndef HS_DOCKER_DOCKER_H
#define HS_DOCKER_DOCKER_H

#include <pthread.h>
#include <stdint.h>

#include <hs/backend.h>

#include "plugins/docker/api.h"
#include "plugins/docker/hijack.h"

#define DK_MAX_PUMPS 8
#define DK_LABEL "org.hermes-sandbox"
#define DK_DIR "/.hs"
#define DK_RUNNER DK_DIR "/hs-runner"
/* The one-shot copy of exec mode: another name, so that a re-attach can
 * tell the two modes apart. */
#define DK_ONESHOT DK_DIR "/hs-runner-exec"
#define DK_RUNDIR DK_DIR "/run"

struct dk_state {
	const struct hs_host_v1 *host;
};

struct dk_env {
	struct dk_state *st;
	struct dk_api api;
	char name[128];        /* container name (the spec's env_name) */
	char id[80];           /* container id */
	char session[80];
	int persistent;
	int runner;            /* the runner is hosted (else exec per command) */
	int oneshot;           /* exec mode under DK_ONESHOT --exec (runner fits) */
	int64_t idle;          /* runner idle seconds */
	int64_t uid, gid;      /* the image's user (root when unset) */
	char user[128];        /* the image's USER as written, when it names a user */
	struct dk_pump pumps[DK_MAX_PUMPS];
	pthread_mutex_t lock;  /* guards lasterr and exec_cancel */
	char lasterr[256];     /* last stderr line of an attach exec */
	uint64_t exec_id;      /* the running exec (exec mode), for cancel */
	volatile int exec_cancel;
};

/* container.c */
struct dk_create {
	const struct hs_env_spec *spec;
	const char *image;
	const struct hs_mount *mounts; /* assessed spec->mounts */
	int runner;                    /* entrypoint: the runner daemon, else a sleeper */
};
/* Creates (not starts) the container; HS_E_NOTFOUND when the image is missing. */
int32_t dk_container_create(struct dk_env *env, const struct dk_create *c, char *err);
/*
 * Inspects env->name: HS_E_NOTFOUND when there is none; else fills
 * env->id, *running and *ours (labelled as hermes-sandbox's), and the
 * image into image (may be NULL).
 */
int32_t dk_container_inspect(struct dk_env *env, int *running, int *ours, char *image,
                             size_t imlen, char *err);
/* Starts the container and waits until the runner listens (runner mode). */
int32_t dk_container_start(struct dk_env *env, char *err);
int32_t dk_container_remove(struct dk_env *env, char *err);
/* Removes our exited, non-persistent containers older than max_age_s. */
void dk_reap_orphans(struct dk_env *env, int64_t max_age_s);
/* Does path exist in the container's filesystem? */
int dk_container_has(struct dk_env *env, const char *path);

/* upload.c */
/* Uploads the runner to path (DK_RUNNER or DK_ONESHOT) with DK_RUNDIR. */
int32_t dk_upload_runner(struct dk_env *env, const char *cid, const char *path, char *err);

/*
 * Resolves env->user (a name, optionally ":group-name" ignored) through
 * the container's /etc/passwd into env->uid and env->gid.
 */
int32_t dk_resolve_user(struct dk_env *env, const char *cid, char *err);

/* risks.c */
/*
 * Puts what only the daemon knows to the approval logic: named volumes that
 * bind a host path, the daemon's socket, privileged, host namespaces,
 * devices.  Sets props->host_access for each approved one; HS_E_DENIED when
 * one is refused.
 */
int32_t dk_risks_check(struct dk_env *env, const struct hs_env_spec *spec,
                       const struct hs_mount *mounts, struct hs_env_props *props, char *err);

/* elf.c */
/*
 * Can this runner binary run in an image of architecture arch (Docker's
 * name: amd64, arm64...)?  0 yes; -1 no, with why in reason.
 */
int dk_runner_fits(const char *runner, const char *arch, char *reason, size_t len);

#endif
