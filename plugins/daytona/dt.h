/* SPDX-License-Identifier: MIT */
/*
 * dt.h - internals of the daytona backend: the REST client (dt-http.c),
 * the response readers (dt-json.c) and the backend ops (daytona.c).
 */
#ifndef HS_DT_H
#define HS_DT_H

#include <stddef.h>
#include <stdint.h>

#include <hs/backend.h>

/* One sandbox as the API describes it (the fields this backend reads). */
struct dt_sandbox {
	char id[128];
	char name[128];
	char state[32];        /* started, stopped, archived, error, build_failed, ... */
	char error_reason[256];
};

/* A grown byte buffer; data is always NUL-terminated (len excludes it). */
struct dt_buf {
	char *data;
	size_t len, cap;
	int failed;
};

void dt_buf_add(struct dt_buf *b, const void *p, size_t n);
void dt_buf_free(struct dt_buf *b);

/*
 * Response readers.  Each takes a body of len bytes (need not be
 * NUL-terminated) and returns 0, or -1 when the body is not what the API
 * documents (then err, if given, says what was wrong).
 */
/* A Sandbox object. */
int dt_json_sandbox(const char *body, size_t len, struct dt_sandbox *out, char *err, size_t errlen);
/* A list of Sandbox objects (a bare array, or an object with "items"); *n of max filled. */
int dt_json_sandbox_list(const char *body, size_t len, struct dt_sandbox *out, int max, int *n);
/* SessionExecuteResponse: cmdId, and exitCode when the command ran synchronously. */
int dt_json_exec(const char *body, size_t len, char *cmd_id, size_t idlen, int *has_exit, int *exit_code);
/* Command: *has_exit is 0 while it runs (exitCode null or absent). */
int dt_json_command(const char *body, size_t len, int *has_exit, int *exit_code);
/*
 * Command logs: JSON {"stdout","stderr"} (SessionCommandLogsResponse) when
 * is_json, else plain text, demultiplexed when it carries the stream
 * markers (01 01 01 = stdout, 02 02 02 = stderr).  Fills two buffers.
 */
int dt_json_logs(const char *body, size_t len, int is_json, struct dt_buf *out, struct dt_buf *errb);
/* The "message" (string or list of strings) or "error" of an error body; "" when none. */
void dt_json_message(const char *body, size_t len, char *msg, size_t msglen);

/* The fuzz entry point (plugins/daytona/fuzz-json.c); returns 0. */
int dt_fuzz_json(const uint8_t *data, size_t size);

/* The REST client. */
struct dt_http;

struct dt_resp {
	long status;          /* HTTP status, 0 when no response */
	int is_json;          /* the content type was application/json */
	struct dt_buf body;
};

/* A client for base URL api_url with a bearer key (kept in memory only). */
struct dt_http *dt_http_new(const char *api_url, const char *key, char *err);
void dt_http_free(struct dt_http *h);
/*
 * One request.  path is appended to the base URL; body may be NULL.
 * retries: how many times to repeat after a transport failure (only for
 * requests that are safe to repeat).  Returns HS_OK when a response
 * arrived (any status: see dt_http_status), or HS_E_IO with err filled.
 */
int32_t dt_http_req(struct dt_http *h, const char *method, const char *path,
                    const char *json_body, long timeout_ms, int retries,
                    struct dt_resp *r, char *err);
/* Upload data to path inside sandbox id through the toolbox file API (multipart "file"). */
int32_t dt_http_upload(struct dt_http *h, const char *sandbox, const char *path,
                       const void *data, size_t len, struct dt_resp *r, char *err);
/*
 * Map a non-2xx response to a status and a one-line message naming what
 * (e.g. "create sandbox"), the HTTP status, the API's message and the fix.
 */
int32_t dt_http_status(const struct dt_resp *r, const char *what, char *err);
void dt_resp_free(struct dt_resp *r);
/* Percent-encode s into out (for query values). */
void dt_urlencode(const char *s, char *out, size_t outlen);


/* Settings of one environment, from DAYTONA_* and the daytona section. */
struct dt_conf {
	char api_url[512];
	char key[512];          /* secret: memory only */
	char key_source[128];   /* e.g. "env DAYTONA_API_KEY" */
	char target[64];
	char snapshot[256];
	char image[256];
	char scratch[256];      /* the backend's directory inside the sandbox */
	int64_t cpu, memory_gb, disk_gb;
	int64_t start_timeout_s;
	int64_t auto_stop_min;
	int64_t poll_ms;
	int64_t grace_s;
	int32_t stop_on_keep;
};

struct dt_state {
	const struct hs_host_v1 *host;
	uint32_t opens; /* atomic: environments opened, for unique toolbox session ids */
};

struct dt_env {
	struct dt_state *st;
	struct dt_conf conf;
	struct dt_http *http;
	char sandbox[128];
	char session[64];      /* toolbox session running the commands */
	char ctl_session[64];  /* toolbox session for remote kills */
	uint64_t seq;
	uint64_t running_id;   /* atomic: the exec under way, 0 when none */
	uint64_t cancel_id;    /* atomic: set by cancel() */
	char prev_base[384];   /* scratch prefix of the last exec, removed by the next */
	char runner[300];      /* the one-shot hs-runner inside the sandbox; "" when none */
};

/* Milliseconds on the host's monotonic clock. */
uint64_t dt_now(const struct dt_env *e);
/* Sleep ms milliseconds. */
void dt_sleep_ms(long ms);
/* A JSON object body from key/value pairs: "s" string, "b" bool, "i" integer (NULL-terminated triples). */
char *dt_json_body(const char *first_type, ...);
/* Run a command synchronously in toolbox session sid; output (stdout+stderr) into out. */
int32_t dt_session_run(struct dt_env *e, const char *sid, const char *cmd, int *exit_code,
                       struct dt_buf *out, long timeout_ms, char *err);
/* After a toolbox 404: HS_E_LOST when the sandbox is gone or not running, with err filled. */
int32_t dt_check_lost(struct dt_env *e, const char *what, char *err);
/*
 * After a toolbox failure: start the sandbox again when Daytona stopped or
 * archived it (auto-stop), with fresh toolbox sessions.  HS_OK when it runs
 * again; HS_E_BUSY when it was running all along; else why not.
 */
int32_t dt_revive(struct dt_env *e, char *err);

/* Upload the host's hs-runner into the scratch dir when it fits arch (the
 * sandbox's `uname -m`), for `hs-runner --exec`; best effort: e->runner
 * stays "" (with a warning) when it cannot be placed. */
void dt_place_runner(struct dt_env *e, const char *arch);

/* The exec and cancel ops (dt-exec.c). */
int32_t dt_exec(void *env, const struct hs_exec_req *req, struct hs_exec_result *res, char *err);
int32_t dt_cancel(void *env, uint64_t exec_id);

#endif
