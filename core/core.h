/* SPDX-License-Identifier: MIT */
/*
 * core.h - the process-wide context of one hs invocation.
 */
#ifndef HS_CORE_H
#define HS_CORE_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>

#include <hs/backend.h>

#include "core/loader.h"
#include "core/paths.h"

struct hs_conf;
struct hs_policy;
struct hs_audit_record;

#define HS_MAX_PLUGIN_DIRS 16

/* One backend this process has loaded and initialised. */
struct hs_backend {
	struct hs_plugin plugin;      /* descriptor copy and file */
	struct hs_host_v1 host;       /* the table handed to init() */
	struct hs_core *core;
	char state_dir[PATH_MAX];
	char cache_dir[PATH_MAX];
	char runtime_dir[PATH_MAX];
	void *state;                  /* from init() */
	int initialised;
	struct hs_backend *next;
};

struct hs_core {
	struct hs_paths paths;
	struct hs_conf *conf;
	char *plugin_dirs[HS_MAX_PLUGIN_DIRS];
	size_t n_plugin_dirs;
	char runner_path[PATH_MAX];   /* empty when none was found */
	char runner_err[256];
	struct hs_policy *policy;     /* loaded on first use */
	struct hs_backend *backends;  /* initialised backends, never unloaded */
	int quiet;
	pthread_mutex_t mu;           /* guards the allow list and the audit log */
	struct hs_allowlist *allow;   /* loaded on first use */
	int allow_tried;
	int audit_fd;                 /* -1 until opened (again after a failed write) */
	struct hs_guard *guard;       /* hs's own files around host commands (guard.h) */
	char extra_config[PATH_MAX];  /* --config or HS_CONFIG, when given */
};

/* The built-in backend compiled into hs (plugins/local). */
extern const struct hs_backend_v1 hs_builtin_local;

/*
 * A backend compiled into hs.  host_isolation_key: for a backend whose
 * environments are the host itself unless isolated, the config key that
 * isolates them (value "namespaces"); such a backend binds no workdir
 * unless isolated.  NULL: a sandbox, which binds its workdir.
 */
struct hs_builtin {
	const char *name;
	const struct hs_backend_v1 *desc;
	const char *host_isolation_key;
};

/* The built-in backend called name, or NULL. */
const struct hs_builtin *hs_core_builtin(const char *name);

/*
 * SYSCONFDIR, or HS_SYSCONFDIR_FOR_TESTS when the test suite sets it and hs
 * runs from its build tree (an installed hs ignores the variable).
 */
const char *hs_core_sysconfdir(void);

/*
 * Read config (extra_file may be NULL), compute paths and plugin dirs.
 * Returns 0 or -1 with a one-line reason.
 */
int hs_core_init(struct hs_core *c, const char *extra_file, char *err, size_t errlen);
void hs_core_free(struct hs_core *c);

/*
 * Load (if needed) and initialise backend name: the built-in local backend,
 * else the first NAME.so on the plugin path.  Returns the backend, or NULL
 * with a one-line reason naming it.
 */
struct hs_backend *hs_core_backend(struct hs_core *c, const char *name, char *err, size_t errlen);

/*
 * Fill a host table for backend name (used by hs_core_backend and by the
 * forked checks of `hs backends`).
 */
const struct hs_host_v1 *hs_core_host_for(struct hs_core *c, struct hs_backend *b, const char *name);

/* Milliseconds of CLOCK_MONOTONIC: the one clock of deadlines and durations. */
int64_t hs_now_ms(void);

/* Load the policy (shipped rules, then the admin's policy.d) on first use. */
struct hs_policy *hs_core_policy(struct hs_core *c, char *err, size_t errlen);

/*
 * The persistent "always" approvals ($XDG_CONFIG_HOME/hs/allow.list).
 * Both are thread-safe.  Check returns 1 when rule_id/argv_norm is allowed.
 * Add returns 0, or -1 with a reason.
 */
int hs_core_allow_check(struct hs_core *c, const char *rule_id, const char *argv_norm);
int hs_core_allow_add(struct hs_core *c, const char *rule_id, const char *argv_norm, char *err,
                      size_t errlen);

/*
 * Append one record to the audit log (config audit, audit_log), secrets
 * already redacted by the caller.  Thread-safe.  Returns 0 (written, or
 * auditing is off), or -1 with a one-line reason in err: the caller must
 * not run a command it could not audit.
 */
int hs_core_audit(struct hs_core *c, const struct hs_audit_record *r, char *err, size_t errlen);

/* The audit log's path: config audit_log, else STATE/audit.log (in buf). */
const char *hs_core_audit_path(struct hs_core *c, char *buf, size_t len);

/* Print "hs: MESSAGE" on stderr. */
void hs_die_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hs_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* HS_CORE_H */
