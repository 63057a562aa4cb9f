/* SPDX-License-Identifier: MIT */
/*
 * hijack.h - a Docker exec whose attach stream is taken over (hijacked)
 * and pumped into a socketpair, so the core reads a plain fd.
 */
#ifndef HS_DOCKER_HIJACK_H
#define HS_DOCKER_HIJACK_H

#include <pthread.h>
#include <stdint.h>

#include <curl/curl.h>

#include "plugins/docker/api.h"
#include "plugins/docker/demux.h"

/* Called with each piece of stderr of the exec (diagnostics). */
typedef void (*dk_errline_cb)(void *ctx, const char *buf, size_t len);

struct dk_stream {
	CURL *curl;
	int sock;          /* the hijacked connection (owned by curl) */
	uint8_t *lead;     /* stream bytes read together with the HTTP answer */
	size_t lead_len;
};

/*
 * Creates an exec of argv in container id (stdin, stdout and stderr
 * attached, no tty; envp "K=V" or NULL; cwd or NULL) and returns its id.
 */
int32_t dk_exec_create(const struct dk_api *a, const char *id, const char *const *argv,
                       const char *const *envp, uint32_t n_env, const char *cwd, char *exec_id,
                       size_t idlen, char *err);

/*
 * Starts exec exec_id and takes over its connection: POST /exec/ID/start
 * with "Connection: Upgrade", written by hand after CURLOPT_CONNECT_ONLY.
 * On HS_OK s holds the connection.
 */
int32_t dk_exec_hijack(const struct dk_api *a, const char *exec_id, struct dk_stream *s,
                       char *err);
void dk_stream_free(struct dk_stream *s);

/* A pump thread between a hijacked stream and one end of a socketpair. */
struct dk_pump {
	struct dk_stream s;
	int fd;            /* our end of the socketpair */
	int wake[2];       /* a byte here stops the pump */
	pthread_t th;
	int started;
	volatile int done;
	dk_errline_cb on_err;
	void *err_ctx;
};

/*
 * Starts a pump; *core_fd receives the other end of the socketpair: what
 * the core writes there goes raw to the exec's stdin, and the exec's
 * stdout payload comes back; stderr goes to on_err.
 */
int32_t dk_pump_start(struct dk_pump *p, int *core_fd, char *err);
/* Stops (if still running, after wait_ms for it to end by itself) and frees. */
void dk_pump_stop(struct dk_pump *p, int wait_ms);

/*
 * Runs an exec to its end with stdin_data, delivering output to out (stream
 * 1 and 2) until deadline_ms (absolute, monotonic; 0: none) or until *cancel
 * is set.  Returns HS_OK, HS_E_TIMEOUT or HS_E_CANCELLED.
 */
int32_t dk_stream_run(struct dk_stream *s, const void *stdin_data, uint64_t stdin_len,
                      dk_demux_cb out, void *ctx, uint64_t deadline_ms,
                      volatile int *cancel, char *err);

#endif
