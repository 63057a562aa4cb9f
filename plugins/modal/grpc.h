/* SPDX-License-Identifier: MIT */
/*
 * grpc.h - unary and server-streaming gRPC calls over HTTP/2 with libcurl
 * (h2c with prior knowledge for http:// on loopback, TLS with ALPN for
 * https://).  Frames carry a 5-byte prefix; grpc-status is read from the
 * trailers (or the headers of a trailers-only answer).
 */
#ifndef HS_MODAL_GRPC_H
#define HS_MODAL_GRPC_H

#include <stddef.h>
#include <stdint.h>

#include <hs/backend.h>

#include "pb.h"

struct mg_client {
	char base[512];        /* "https://api.modal.com", no trailing slash */
	char token_id[256];
	char token_secret[512];
	/* Set for the task command router: "authorization: Bearer JWT" instead of the token. */
	char bearer[2048];
	const char *service;   /* NULL: "modal.client.ModalClient" */
	const volatile int *cancel; /* non-zero: abort a call in flight (may be NULL) */
	uint64_t (*now_ms)(void *ctx);
	void *now_ctx;
};

/* Called per message of a stream; return non-zero to stop (then HS_OK). */
typedef int (*mg_on_msg)(void *ctx, const uint8_t *p, size_t n);

/*
 * Call /SERVICE/METHOD (default service modal.client.ModalClient) with req.  For a unary call, resp
 * receives the single message; for a stream pass on_msg instead.
 * deadline_at is an absolute now_ms() value (0: timeout_ms from now).
 * Returns HS_OK; HS_E_AUTH (UNAUTHENTICATED/PERMISSION_DENIED);
 * HS_E_NOTFOUND; HS_E_TIMEOUT when the deadline passed; HS_E_CANCELLED;
 * HS_E_IO for a broken transport or UNAVAILABLE (resumable);
 * HS_E_PROTOCOL otherwise.  err names the method and the cause.
 */
int32_t mg_call(struct mg_client *c, const char *method, const struct pb_buf *req,
                struct pb_buf *resp, mg_on_msg on_msg, void *ctx, uint64_t deadline_at,
                long timeout_ms, char *err);

#endif
