/* SPDX-License-Identifier: MIT */
/*
 * hs/backend.h - the hermes-sandbox backend plugin ABI, version 1.
 *
 * A backend is a shared object that exports exactly one symbol:
 *
 *     const struct hs_backend_v1 hs_backend_v1 = { HS_BACKEND_V1_HEADER, ... };
 *
 * The core opens it with RTLD_NOW|RTLD_LOCAL and never links the plugin
 * against itself: every service the core offers is passed in through the
 * struct hs_host_v1 table given to init().  This header is self-contained
 * (it includes only <stdint.h>) and is the whole contract; hs-backend(7)
 * explains it with an example.
 *
 * Versions: 1.0 is the first release.  1.1 appends env_flags and start_dir
 * to struct hs_env_props and config_rules to struct hs_backend_v1, and adds
 * the HS_SPEC_ATTACH open flag and struct hs_config_rule; a 1.1 core
 * loads 1.0 plugins unchanged (it never passes them HS_SPEC_ATTACH).
 * 1.2 appends egress_cidrs to struct hs_env_spec and adds the
 * HS_ENVP_EGRESS_CIDRS answer; a plugin that does not set it never gets an
 * allowlist session (the core refuses it), so 1.0 and 1.1 plugins load
 * unchanged.
 * tests/abi/layout.c pins every field's offset, so a reorder fails the build.
 *
 * Compatibility rules:
 *  - abi_major must equal the core's; abi_minor must be <= the core's.
 *  - struct_size says how much of the descriptor the plugin filled in; the
 *    core reads only fields inside it.  Minor versions append fields at the
 *    end, never reorder or remove them; each addition names its version.
 *  - build_sig must be HS_BUILD_SIG as compiled by the plugin; a mismatch
 *    means the plugin was built with other type widths or byte order.
 *  - Only fixed-width integers, pointers and char arrays cross the ABI.
 *  - enum hs_status is append-only and never renumbered.
 *
 * Thread contract: init() and fini() run once per process, single-threaded,
 * before any session thread starts and after all have stopped.  Calls on one
 * environment are serialized by the core, except cancel(), which may come
 * from any thread at any time.  Different environments may be driven from
 * different threads at once, so a plugin keeps no mutable globals: all state
 * lives in the state pointer from init() or the env pointer from open().
 * Every op gets its own error buffer of HS_ERR_MAX bytes; write a one-line,
 * lowercase message there (no trailing newline) whenever returning an error.
 */
#ifndef HS_BACKEND_H
#define HS_BACKEND_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HS_ABI_MAJOR 1
#define HS_ABI_MINOR 2

/* Size of every error buffer handed to a plugin op, terminator included. */
#define HS_ERR_MAX 512

#define HS__STR2(x) #x
#define HS__STR(x) HS__STR2(x)
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HS__ENDIAN "be"
#else
#define HS__ENDIAN "le"
#endif
/*
 * The build signature: ABI major, pointer/long/int widths and byte order.
 * A plugin whose signature differs from the core's is "not binary compatible".
 */
#define HS_BUILD_SIG                                                          \
	"hs" HS__STR(HS_ABI_MAJOR) ":p" HS__STR(__SIZEOF_POINTER__) "l"            \
	HS__STR(__SIZEOF_LONG__) "i" HS__STR(__SIZEOF_INT__) ":" HS__ENDIAN

/* Status codes.  Append only; never renumber. */
enum hs_status {
	HS_OK = 0,
	HS_E_UNSUPPORTED = 1,  /* the op is not implemented by this backend */
	HS_E_INVALID = 2,      /* bad argument or spec */
	HS_E_UNAVAILABLE = 3,  /* the backend cannot be used here (see probe) */
	HS_DECLINED = 4,       /* open(): not for me; never a fallback trigger */
	HS_E_NOTFOUND = 5,     /* environment, image, file or job not found */
	HS_E_PERM = 6,         /* permission denied */
	HS_E_TIMEOUT = 7,      /* a deadline passed */
	HS_E_CANCELLED = 8,    /* cancelled by the caller */
	HS_E_IO = 9,           /* input/output or transport failure */
	HS_E_NOMEM = 10,       /* out of memory */
	HS_E_PROTOCOL = 11,    /* the other side spoke nonsense */
	HS_E_DENIED = 12,      /* refused by approval or policy */
	HS_E_CONFIG = 13,      /* configuration error */
	HS_E_AUTH = 14,        /* authentication failed */
	HS_E_HOSTKEY = 15,     /* remote host key unknown or changed */
	HS_E_EXISTS = 16,      /* already exists */
	HS_E_INTERNAL = 17,    /* a bug */
	HS_E_BUSY = 18,        /* locked or in use; try again later */
	HS_E_LOST = 19,        /* the environment vanished from outside */
};

/* A short, lowercase description of a status; never NULL. */
static inline const char *
hs_strerror(int32_t status)
{
	switch (status) {
	case HS_OK: return "success";
	case HS_E_UNSUPPORTED: return "operation not supported by this backend";
	case HS_E_INVALID: return "invalid argument";
	case HS_E_UNAVAILABLE: return "backend unavailable";
	case HS_DECLINED: return "declined by backend";
	case HS_E_NOTFOUND: return "not found";
	case HS_E_PERM: return "permission denied";
	case HS_E_TIMEOUT: return "timed out";
	case HS_E_CANCELLED: return "cancelled";
	case HS_E_IO: return "input/output error";
	case HS_E_NOMEM: return "out of memory";
	case HS_E_PROTOCOL: return "protocol error";
	case HS_E_DENIED: return "denied";
	case HS_E_CONFIG: return "configuration error";
	case HS_E_AUTH: return "authentication failed";
	case HS_E_HOSTKEY: return "host key verification failed";
	case HS_E_EXISTS: return "already exists";
	case HS_E_INTERNAL: return "internal error";
	case HS_E_BUSY: return "busy";
	case HS_E_LOST: return "environment lost";
	}
	return "unknown status";
}

/* Log levels for hs_host_v1.log. */
enum hs_log_level {
	HS_LOG_ERROR = 0,
	HS_LOG_WARN = 1,
	HS_LOG_INFO = 2,
	HS_LOG_DEBUG = 3,
};

/* Capability bits in hs_backend_v1.caps. */
#define HS_CAP_RUNNER   (UINT64_C(1) << 0) /* can host hs-runner (runner_stream) */
#define HS_CAP_EXEC     (UINT64_C(1) << 1) /* runs one argv per call (exec) */
#define HS_CAP_MOUNTS   (UINT64_C(1) << 2) /* honours spec mounts */
#define HS_CAP_IMAGE    (UINT64_C(1) << 3) /* honours spec image */
#define HS_CAP_NETWORK  (UINT64_C(1) << 4) /* honours spec network */
#define HS_CAP_LIMITS   (UINT64_C(1) << 5) /* honours memory/cpu limits */
#define HS_CAP_PERSIST  (UINT64_C(1) << 6) /* environments survive close(KEEP) */
#define HS_CAP_FILES    (UINT64_C(1) << 7) /* put/get files (via the runner) */
#define HS_CAP_ISOLATED (UINT64_C(1) << 8) /* environments are isolated from the host */

/* Config value types for hs_config_key.type. */
enum hs_config_type {
	HS_CONF_STRING = 0,
	HS_CONF_INT = 1,
	HS_CONF_BOOL = 2,
	HS_CONF_STRINGS = 3, /* a list of strings */
};

/* One key a backend accepts in its config section; unknown keys are warned about. */
struct hs_config_key {
	const char *name;
	int32_t type; /* enum hs_config_type */
	const char *doc;
};

/*
 * ABI 1.1: what "stricter" means for a key, so that an administrator's lock
 * on it (hs.conf(5), "locked") is a ceiling later layers may tighten but not
 * loosen, as for the core's own keys.  A key without a rule is fixed: any
 * other value loosens it.
 */
enum hs_config_order {
	HS_CORDER_FIXED = 0,         /* any change is a loosening */
	HS_CORDER_ENUM = 1,          /* a string: one of values[], strictest first */
	HS_CORDER_LESS = 2,          /* an integer: smaller is stricter */
	HS_CORDER_LESS_ZERO_MAX = 3, /* an integer: smaller is stricter, 0 means no limit */
	HS_CORDER_BOOL = 4,          /* a boolean: strict_bool is the strict value */
	HS_CORDER_SUBSET = 5,        /* a list may only lose entries */
	HS_CORDER_SUPERSET = 6,      /* a list may only gain entries */
};

/* Checks on a value beyond its type (hs_config_rule.checks, ABI 1.1). */
#define HS_CCHECK_ABSPATH  (1u << 0) /* strings and list items are absolute paths */
#define HS_CCHECK_ENVNAME  (1u << 1) /* list items are environment variable names */
#define HS_CCHECK_POSITIVE (1u << 2) /* integers are > 0 (otherwise >= 0) */
#define HS_CCHECK_NONEMPTY (1u << 3) /* strings are not empty */

/* The rule for one key of config_keys (hs_backend_v1.config_rules, ABI 1.1). */
struct hs_config_rule {
	const char *name;          /* a name from config_keys */
	int32_t order;             /* enum hs_config_order */
	int32_t strict_bool;       /* HS_CORDER_BOOL: the strict value (0 or 1) */
	const char *const *values; /* HS_CORDER_ENUM: NULL-terminated, strictest first */
	uint32_t checks;           /* HS_CCHECK_* */
	uint32_t reserved0;
};

/* Mount classification, filled by hs_host_v1.assess_mount. */
enum hs_mount_kind {
	HS_MOUNT_INVALID = 0,
	HS_MOUNT_HOST = 1,      /* a host path is bound in */
	HS_MOUNT_VOLUME = 2,    /* a named volume */
	HS_MOUNT_ANONYMOUS = 3, /* an anonymous volume */
	HS_MOUNT_TMPFS = 4,
};

struct hs_mount {
	int32_t kind;        /* enum hs_mount_kind */
	int32_t host_access; /* non-zero when the mount exposes the host */
	int32_t read_only;
	int32_t workspace;   /* non-zero: the configured workspace (sanctioned) */
	char source[1024];   /* host path (expanded) or volume name; empty otherwise */
	char target[1024];
	char reason[256];    /* why host_access is set, or why the spec is invalid */
};

/* A risk that only the plugin can see, put to the core's approval logic. */
struct hs_risk {
	const char *rule_id;     /* e.g. "docker.privileged" */
	const char *description; /* one line for the person approving */
	int32_t hardline;        /* non-zero: never granted, in any mode */
	int32_t critical;        /* non-zero: hands over the host (privileged, host pid,
	                            the docker socket): approve mode never grants it */
};

/* Result of credential-mode resolution (hs_host_v1.resolve_credentials). */
struct hs_credentials {
	char mode[16];       /* "direct" or "managed" */
	char source[256];    /* where they came from, e.g. "env MODAL_TOKEN_ID" */
	char id[256];        /* token id, or gateway URL (not secret) */
	char secret[512];    /* the secret; never logged, never persisted */
	char warning[256];   /* e.g. env token differs from ~/.modal.toml */
};

/*
 * Services the core offers a plugin.  The table is valid from init() until
 * fini() returns.  ctx is the first argument of every callback; it is bound
 * to this plugin, so config getters read the plugin's own section.
 * Fields are appended in later minor versions; check struct_size first.
 */
struct hs_host_v1 {
	uint32_t abi_major;
	uint32_t abi_minor;
	uint32_t struct_size;
	uint32_t reserved0;
	void *ctx;

	/* Log one line (printf format) under the plugin's name. */
	void (*log)(void *ctx, int32_t level, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));

	/*
	 * Typed config getters for the plugin's section: "host" reads
	 * "<backend>.host".  Return HS_OK, HS_E_NOTFOUND when unset, or
	 * HS_E_CONFIG when set with the wrong type.  Strings stay valid until fini.
	 */
	int32_t (*config_string)(void *ctx, const char *key, const char **out);
	int32_t (*config_int)(void *ctx, const char *key, int64_t *out);
	int32_t (*config_bool)(void *ctx, const char *key, int32_t *out);
	/* A list of strings: count in *n, items valid until fini. */
	int32_t (*config_strings)(void *ctx, const char *key, const char *const **out, uint32_t *n);

	/* Classify one docker-syntax mount spec (-v or --mount form). */
	int32_t (*assess_mount)(void *ctx, const char *spec, struct hs_mount *out, char *err);
	/*
	 * Put a risk only the plugin can see to the approval logic of the
	 * session (mode ask/deny/approve).  HS_OK: approved; HS_E_DENIED: not.
	 * session may be NULL outside a session (then the configured mode holds).
	 */
	int32_t (*approve)(void *ctx, const char *session, const struct hs_risk *risk, char *err);
	/* Resolve cloud credentials for provider ("modal", ...): fail closed. */
	int32_t (*resolve_credentials)(void *ctx, const char *provider, struct hs_credentials *out, char *err);

	/* Per-user directories, created by the core with mode 0700, owner checked. */
	const char *state_dir;   /* $XDG_STATE_HOME/hs/<backend> */
	const char *cache_dir;   /* $XDG_CACHE_HOME/hs/<backend> */
	const char *runtime_dir; /* $XDG_RUNTIME_DIR/hs or /tmp/hs-<uid> (node-local) */
	/* Absolute path of the hs-runner binary for this host's architecture. */
	const char *runner_path;

	/* Monotonic time in milliseconds. */
	uint64_t (*now_ms)(void *ctx);
};

/* probe() flags. */
#define HS_PROBE_DEEP (1u << 0) /* network checks are allowed */

/* Filled by probe(); a not-ready report must say why and how to fix it. */
struct hs_probe_report {
	int32_t ready;         /* non-zero when open() can be expected to work */
	int32_t runner;        /* non-zero when the runner can be hosted */
	char reason[512];      /* when not ready: exactly why, and the fix */
	char detail[1024];     /* "key=value" lines, e.g. "mode=direct\nsource=env"; no secrets */
};

/* What an environment should be; all strings may be NULL for "default". */
struct hs_env_spec {
	uint32_t struct_size;
	uint32_t flags;             /* HS_SPEC_* */
	const char *session;        /* validated session name */
	const char *env_name;       /* deterministic environment name (from the session) */
	const char *image;
	const char *const *mounts;  /* docker-syntax specs, already approved by the core */
	uint32_t n_mounts;
	uint32_t reserved0;
	const char *network;        /* "none" (default) or a network name */
	int64_t memory_bytes;       /* 0: no limit */
	int32_t cpus_milli;         /* 0: no limit; 1500 = 1.5 CPUs */
	int32_t runner_idle_s;      /* seconds an unattached, idle runner lives; 0: default */
	const char *workdir;        /* host workspace directory, if any */
	/*
	 * Appended in ABI 1.2 (check struct_size): network "allowlist" on a
	 * backend that maps it onto its own address filter (hs.conf(5)).
	 * Non-NULL: network is "none", and the sandbox may reach these ranges
	 * only ("a.b.c.d/len" or "v6::/len"; n_egress_cidrs may be 0: nothing).
	 * A plugin that applied them sets HS_ENVP_EGRESS_CIDRS; without it the
	 * core closes the environment and refuses the session.
	 */
	const char *const *egress_cidrs;
	uint32_t n_egress_cidrs;
	uint32_t reserved1;
};

#define HS_SPEC_PERSISTENT (1u << 0) /* keep across hs processes */
#define HS_SPEC_ISOLATE    (1u << 1) /* local: isolate with namespaces */
/*
 * ABI 1.1: attach to the existing environment env_name only.  When it is
 * gone, open() returns HS_E_NOTFOUND and creates nothing (no container,
 * job, sandbox or directory).  The core sets it to tear a session down
 * (hs session close, gc) and passes it only to plugins of ABI 1.1 or later.
 */
#define HS_SPEC_ATTACH     (1u << 2)

/* What an environment really is, filled by open(). */
struct hs_env_props {
	int32_t host_access;     /* non-zero: the sandbox can touch the host */
	int32_t runner;          /* non-zero: runner_stream will work */
	char host_reason[256];   /* why host_access is set */
	char isolation[32];      /* "none", "namespaces", "container", "vm", "remote" */
	char runner_reason[256]; /* why not, when runner is 0 (e.g. arch mismatch) */
	char shell[64];          /* absolute path of bash if present, else sh */
	char runtime_dir[512];   /* where the runner keeps its socket/spool inside */
	char note[256];          /* e.g. "recreated container (it had vanished)" */
	/* ABI 1.1 (a 1.0 plugin leaves these zero: the defaults below). */
	uint32_t env_flags;      /* HS_ENVP_* */
	uint32_t reserved1;
	char start_dir[512];     /* where commands start when the session names
	                            no directory; "" = the sandbox's default */
};

/* hs_env_props.env_flags (ABI 1.1). */
#define HS_ENVP_HOST_ENV   (1u << 0) /* no environment of its own: commands get
                                        the core's scrubbed host environment
                                        (0: per-command variables are merged
                                        over the sandbox's own environment) */
#define HS_ENVP_CALLER_CWD (1u << 1) /* commands start in the caller's working
                                        directory (the host's filesystem) */
#define HS_ENVP_EGRESS_CIDRS (1u << 2) /* the sandbox can reach hs_env_spec.egress_cidrs
                                          and nothing else (it was created so) */

/* Output sink for exec(): stream 1 = stdout, 2 = stderr. */
struct hs_sink {
	void *ctx;
	int32_t (*write)(void *ctx, int32_t stream, const void *buf, uint64_t len);
};

/* One argv to run, for backends that cannot host the runner. */
struct hs_exec_req {
	uint32_t struct_size;
	uint32_t argc;
	uint64_t exec_id;          /* for cancel() */
	const char *const *argv;
	const char *const *envp;   /* "K=V", n_env entries: the per-command variables,
	                              which override the sandbox's own environment */
	uint32_t n_env;
	uint32_t reserved0;
	const char *cwd;           /* NULL: the environment's default */
	const void *stdin_data;    /* NULL: /dev/null */
	uint64_t stdin_len;
	int64_t deadline_ms;       /* relative; 0: none */
	struct hs_sink sink;
};

struct hs_exec_result {
	int32_t exit_code;   /* 0..255, or 128+N for signal N */
	int32_t timed_out;
	int32_t cancelled;
	int32_t reserved0;
};

/* close() flags. */
#define HS_CLOSE_KEEP (1u << 0) /* leave the environment for a later re-attach */

/*
 * The descriptor a plugin exports as hs_backend_v1.  Fill it with
 * designated initializers; a NULL optional op means "unsupported".
 * Required: open, close, and runner_stream or exec.
 */
struct hs_backend_v1 {
	uint32_t abi_major;   /* HS_ABI_MAJOR */
	uint32_t abi_minor;   /* HS_ABI_MINOR */
	uint32_t struct_size; /* sizeof(struct hs_backend_v1) */
	uint32_t reserved0;
	const char *build_sig; /* HS_BUILD_SIG */
	const char *name;      /* [a-z0-9_-]+, unique among plugins */
	const char *version;
	const char *summary;   /* one line */
	uint64_t caps;         /* HS_CAP_* */
	const struct hs_config_key *config_keys; /* NULL-name terminated, or NULL */

	/* Once per process; *state is passed to probe/open/fini. */
	int32_t (*init)(const struct hs_host_v1 *host, void **state, char *err);
	void (*fini)(void *state);
	/* Is the backend usable here?  Local checks only unless HS_PROBE_DEEP. */
	int32_t (*probe)(void *state, uint32_t flags, struct hs_probe_report *report, char *err);
	/* Create or re-attach the environment named spec->env_name. */
	int32_t (*open)(void *state, const struct hs_env_spec *spec, void **env,
	                struct hs_env_props *props, char *err);
	/*
	 * Start hs-runner if needed and return a socket carrying the byte stream
	 * of one "hs-runner --attach".  The core owns *fd afterwards.  Called
	 * again to re-attach after the stream broke.
	 */
	int32_t (*runner_stream)(void *env, int32_t *fd, char *err);
	/* Run one argv (backends without a runner). */
	int32_t (*exec)(void *env, const struct hs_exec_req *req, struct hs_exec_result *res, char *err);
	/*
	 * Thread-safe: stop a running exec.  HS_E_NOTFOUND when exec_id is not
	 * running (finished, or not yet registered by exec): a caller whose
	 * exec has not returned asks again; the core does.
	 */
	int32_t (*cancel)(void *env, uint64_t exec_id);
	/* Tear down (or keep with HS_CLOSE_KEEP); frees env either way.  Safe after a failed open. */
	int32_t (*close)(void *env, uint32_t flags, char *err);

	/* ABI 1.1 (past a 1.0 plugin's struct_size: read as NULL). */
	/* How each key of config_keys tightens under a lock; NULL-name terminated, or NULL. */
	const struct hs_config_rule *config_rules;
};

/* The header fields, for a designated initializer. */
#define HS_BACKEND_V1_HEADER                                                 \
	.abi_major = HS_ABI_MAJOR, .abi_minor = HS_ABI_MINOR,                      \
	.struct_size = sizeof(struct hs_backend_v1), .build_sig = HS_BUILD_SIG

/* Export the descriptor with default visibility even under -fvisibility=hidden. */
#define HS_BACKEND_EXPORT __attribute__((visibility("default")))

#ifdef __cplusplus
}
#endif

#endif /* HS_BACKEND_H */
