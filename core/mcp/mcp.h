/* SPDX-License-Identifier: MIT */
/*
 * mcp.h - `hs mcp`: a Model Context Protocol server on stdio over the
 * session pipeline (core/pipeline.h).  cmd_mcp.c speaks JSON-RPC and lists
 * the tools; mcp-tools.c runs them.
 */
#ifndef HS_MCP_H
#define HS_MCP_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "core/pipeline.h"

#define HS_MCP_MAX_SESSIONS 16

/* A session this connection opened; shown is the client's name for it. */
struct hs_mcp_sess {
	char shown[65];
	int used;
	unsigned adopt_first, adopted; /* jobs taken over at open: j<first>, count */
	struct hs_session hs;
};

/* One connection: the core, its settings and the sessions it opened. */
struct hs_mcp {
	struct hs_core *c;
	const char *backend;   /* --backend; NULL: the configured one */
	const char *image;     /* --image: the sessions' default image, or NULL */
	const char *workspace; /* --workspace: their default workspace, or NULL */
	int mode;              /* resolved approval mode */
	int cancel_fd;         /* readable when a stop or the client's cancel may be pending */
	const struct hs_asker *asker; /* the client, when it can be asked (elicitation); else NULL */
	int64_t handoff_s;     /* --handoff-after: a run still going after this long becomes a
	                          job; 0: never */
	char default_name[65]; /* the real name of the "default" session */
	char *call_text;       /* set by a tool: more text content for its result (malloc'd;
	                          the caller frees it) */
	struct hs_mcp_sess sess[HS_MCP_MAX_SESSIONS];
};

/*
 * Run tool name with args (an object or NULL): 0 with the structured result
 * written as one map into out, 1 for an unknown tool, -1 when hs itself
 * failed (denied, backend down, bad arguments) with a one-line err.
 */
int hs_mcp_tool_call(struct hs_mcp *m, const char *name, yajl_val args, yajl_gen out, char *err,
                     size_t errlen);

/* Files read_file and write_file move at most (bytes, before base64). */
#define HS_MCP_FILE_MAX (1u << 20)
/* job_output's default and largest chunk (bytes). */
#define HS_MCP_CHUNK_MAX 65536

/* The session a tool names (NULL: "default", opened on first use); NULL with err. */
struct hs_mcp_sess *hs_mcp_session(struct hs_mcp *m, const char *name, char *err, size_t errlen);

/* mcp-jobs.c: the job and file tools; each 0 with its result map in out, -1 with err. */
int hs_mcp_job_list(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen);
int hs_mcp_job_output(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen);
int hs_mcp_job_write(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen);
int hs_mcp_job_resize(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen);
int hs_mcp_output_read(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen);
int hs_mcp_job_kill(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen);
int hs_mcp_read_file(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen);
int hs_mcp_write_file(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen);

/*
 * The running tool call's output as it comes (stream 1 or 2): kept for
 * progress notifications, sent when the client asked for progress.
 */
void hs_mcp_progress(struct hs_mcp *m, const void *buf, size_t len);

/*
 * Non-zero when the running tool call must stop: a stop signal, or the
 * client's notifications/cancelled.  Polled while a command runs (it also
 * sends the progress heartbeat).
 */
int hs_mcp_call_cancelled(struct hs_mcp *m);

/* Close every session of the connection (persistent ones keep their environment). */
void hs_mcp_close_all(struct hs_mcp *m);

#endif /* HS_MCP_H */
