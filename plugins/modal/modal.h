/* SPDX-License-Identifier: MIT */
/*
 * modal.h - the modal backend's shared state (see hs-modal(7)).
 */
#ifndef HS_MODAL_H
#define HS_MODAL_H

#include <stdint.h>

#include <hs/backend.h>

#include "grpc.h"

struct md_state {
	const struct hs_host_v1 *host;
};

struct md_env {
	struct md_state *st;
	struct hs_credentials cred;
	int managed;
	struct mg_client g;        /* direct mode: the API */
	struct mg_client r;        /* direct mode: the task's command router */
	uint64_t router_at;        /* when r's JWT was obtained (now_ms) */
	char env_name[128];
	char app_id[128];
	char sandbox_id[128];
	char task_id[128];
	char record[1024];         /* state file holding the sandbox id for re-attach */
	char image[256];
	char app_name[128];
	char environment[128];     /* Modal environment name, "" for the default */
	uint32_t timeout_secs, milli_cpu, memory_mb;
	int block_network;
	/* Network "allowlist" mapped by the core (hs_env_spec.egress_cidrs): the
	 * only ranges a new sandbox may reach; NULL: none asked.  Valid in open only. */
	const char *const *cidrs;
	uint32_t n_cidrs;
	int attach_only;            /* HS_SPEC_ATTACH: never create a sandbox */
	volatile int cancel;       /* set by cancel() for cur_exec */
	volatile uint64_t cur_exec;
	uint64_t drops;            /* output streams resumed after a break (for tests) */
	char runner[96];           /* the one-shot hs-runner in the sandbox; "" when none */
};

/*
 * HS_SPEC_ATTACH found the recorded sandbox gone (st: why): HS_E_NOTFOUND
 * when it is gone for sure, st itself for a failure to ask (modal.c).
 */
int32_t md_attach_gone(struct md_env *e, int32_t st, char *err);

/* Direct mode (direct.c: sandbox lifecycle; router.c: commands). */
int32_t md_direct_open(struct md_env *e, int reattach, char *err);
int32_t md_direct_exec(struct md_env *e, const struct hs_exec_req *req, struct hs_exec_result *res,
                       char *err);
int32_t md_direct_terminate(struct md_env *e, char *err);
uint64_t md_now(struct md_env *e);
/* A unary call on the API; req is freed. */
int32_t md_unary(struct md_env *e, const char *method, struct pb_buf *req, struct pb_buf *resp, char *err);
/* The last string field num of m into out ("" when absent); -1 when m is malformed. */
int md_get_str(const struct pb_buf *m, uint32_t num, char *out, size_t len);
/* Is url acceptable as an endpoint: https, or http to loopback only. */
int md_url_ok(const char *url);

/*
 * Run argv in the sandbox with data on its stdin (a setup command, two
 * minutes at most); *code gets its exit code.
 */
int32_t md_direct_run_stdin(struct md_env *e, const char *const *argv, size_t argc, const void *data,
                            size_t len, int32_t *code, char *err);

/* Managed mode (managed.c). */
int32_t md_managed_open(struct md_env *e, int reattach, char *err);
int32_t md_managed_exec(struct md_env *e, const struct hs_exec_req *req, struct hs_exec_result *res,
                        char *err);
int32_t md_managed_terminate(struct md_env *e, char *err);
int32_t md_managed_run_stdin(struct md_env *e, const char *const *argv, size_t argc, const void *data,
                             size_t len, int32_t *code, char *err);

/*
 * The wrapper every command runs in: it records its pid (so a timed-out or
 * cancelled command can be killed remotely, with its process group), reads
 * the per-command variables from a private file written just before (so
 * their values never appear on a command line), enters the working
 * directory and execs the command -- under timeout(1) when the command has
 * a deadline and the image has it, so the deadline also holds inside the
 * sandbox if this client goes away (set a little after the client's own).
 * argv: sh -c MD_WRAP hs PIDFILE CWD ENVFILE SECS ARGV...  (all may be "")
 */
#define MD_WRAP "echo $$ > \"$1\"; if [ -n \"$3\" ]; then . \"$3\" || exit 125; rm -f \"$3\"; fi; " \
	"if [ -n \"$2\" ]; then cd \"$2\" || exit 125; fi; t=$4; shift 4; " \
	"if [ -n \"$t\" ] && command -v timeout >/dev/null 2>&1; then exec timeout -s KILL \"$t\" \"$@\"; fi; " \
	"exec \"$@\""
/* Seconds for the in-sandbox backstop of a relative deadline (0: none). */
#define MD_BACKSTOP_S(ms) ((ms) > 0 ? (long long)(((ms) + 999) / 1000 + 2) : 0)
#define MD_KILL "p=$(cat \"$1\" 2>/dev/null) && { kill -KILL -- -\"$p\" 2>/dev/null; kill -KILL \"$p\" 2>/dev/null; }; rm -f \"$1\""
/* Writes stdin to a new private file: sh -c MD_PUTFILE hs PATH. */
#define MD_PUTFILE "umask 077 && cat > \"$1\""

/*
 * The per-command variables as "export K='V'" lines (malloc'd, *len set), or
 * NULL with err for a name that is not a shell identifier.
 */
char *md_env_script(const struct hs_exec_req *req, size_t *len, char *err);

#endif
