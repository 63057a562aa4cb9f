/* SPDX-License-Identifier: MIT */
/*
 * session.h - session records, names and locks.
 *
 * A record ($XDG_STATE_HOME/hs/sessions/NAME, in a 0700 directory) holds
 * ids only: the backend, the deterministic environment name, timestamps
 * and flags.  Never environment values or secrets.  One flock per session
 * (NAME.lock) serializes hs processes using it.
 */
#ifndef HS_SESSION_H
#define HS_SESSION_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct hs_core;

struct hs_record {
	char name[65];
	char backend[32];
	char env_name[128];
	char image[256];
	int64_t created;  /* unix seconds */
	int64_t used;
	int persistent;
	char allow[4096];  /* network "allowlist": the allow rules, space-separated; "": none */
};

/* 1 when name is a valid session name: [A-Za-z0-9._-], 1-64, not "." or "..", no leading dot. */
int hs_session_name_valid(const char *name);

/* The deterministic environment name of a session. */
void hs_session_env_name(const char *name, char *out, size_t len);

/* Read the record of name.  Returns 0, 1 when none exists, -1 with a reason. */
int hs_record_load(struct hs_core *c, const char *name, struct hs_record *r, char *err, size_t errlen);
/* Write the record atomically (0600).  Returns 0 or -1 with a reason. */
int hs_record_save(struct hs_core *c, const struct hs_record *r, char *err, size_t errlen);
/* Remove the record (and its lock file).  Returns 0 or -1. */
int hs_record_remove(struct hs_core *c, const char *name);

/*
 * Take the session's lock, waiting at most wait_ms.  Returns the lock fd
 * (close it to release), or -1 with a reason ("session 'x' is busy ...").
 */
int hs_session_lock(struct hs_core *c, const char *name, int wait_ms, char *err, size_t errlen);

/*
 * The sessions directory (its path in out), created 0700 and its whole chain
 * checked.  Returns its descriptor (close it) or -1 with a reason.
 */
int hs_session_dir(struct hs_core *c, char *out, size_t len, char *err, size_t errlen);


struct hs_conn;
struct hs_env_spec;

/* What a caller asks of a session when opening it. */
struct hs_session_req {
	const char *name;      /* NULL: an ephemeral session, closed by hs_session_end */
	const char *backend;   /* NULL: the session's, else the configured default */
	struct hs_env_spec *spec; /* image, mounts, limits; session/env_name are filled in */
	int persistent;
	const char *const *allow; /* egress allow entries asked for (NULL: the configured) */
	size_t n_allow;
	struct hs_egress_rules *egress; /* out: the session's allow rules (network "allowlist") */
	/* Network "allowlist": the relay's options (rules pointing at *egress);
	 * the environment is opened with network "none" and the runner's
	 * endpoint started (hs_conn_egress).  Must outlive the connection. */
	struct hs_egress_relay_opts *egress_opts;
	/* out: network "allowlist" mapped onto the backend's own filter: the
	 * warning to show (one line; "" otherwise).  NULL: not wanted. */
	char *egress_note;
	size_t egress_note_len;
};

/*
 * Open a session: validate the name, take its lock, load its record (a
 * session keeps its backend), open or re-attach its environment and
 * connect to its runner.  Fills cn and rec.  Returns the lock fd (>= 0, or
 * -2 for an ephemeral session that has none), or -1 with a one-line reason.
 */
int hs_session_begin(struct hs_core *c, const struct hs_session_req *req, struct hs_conn *cn,
                     struct hs_record *rec, char *err, size_t errlen);

/*
 * Finish: close the stream, keep the environment of a named session or
 * tear down an ephemeral one, release the lock.
 */
void hs_session_end(struct hs_conn *cn, int lockfd, int ephemeral);

#endif /* HS_SESSION_H */
