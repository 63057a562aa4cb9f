/* SPDX-License-Identifier: MIT */
/*
 * cmd_mcp.c - `hs mcp`: JSON-RPC 2.0, one message a line on stdin/stdout
 * (MCP's stdio transport).  stdout carries replies only; logs go to stderr.
 * Methods: initialize, ping, tools/list, tools/call; notifications are
 * taken and not answered.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/safety/approval.h"
#include "core/cli/cmds.h"
#include "core/config/hsconf.h"
#include "core/core.h"
#include "core/json.h"
#include "core/mcp/mcp.h"
#include "core/serve/serve-req.h"

#define RPC_PARSE (-32700)
#define RPC_INVALID (-32600)
#define RPC_NO_METHOD (-32601)
#define RPC_PARAMS (-32602)

/* A message longer than this is refused (it cannot be a sane tool call). */
#define MCP_MAX_LINE (16u << 20)

/* The protocol's stdout, private: fd 1 itself points at stderr while serving. */
static int out_fd = 1;
static volatile sig_atomic_t stop_requested;
static int stop_pipe[2] = { -1, -1 };

static void
on_stop(int sig)
{
	int saved = errno;
	char c = (char)sig;
	stop_requested = 1;
	if (write(stop_pipe[1], &c, 1) < 0) {
		/* Full: a stop is already pending. */
	}
	errno = saved;
}

int
hs_mcp_stopping(void)
{
	return stop_requested;
}

/* --- the tools' schemas ------------------------------------------------- */

/* One property of a schema: name, JSON type, description; required when req. */
struct prop {
	const char *name, *type, *desc;
	int req;
};

struct tool {
	const char *name, *title, *desc;
	int read_only, destructive, open_world;
	const struct prop *in, *out;
};

static const struct prop run_in[] = {
	{ "command", "string", "Shell command line (bash syntax: pipes, &&, redirections)", 1 },
	{ "session", "string", "Session to run in (default: this connection's \"default\" session)", 0 },
	{ "timeout", "number", "Seconds before every process of the command is killed (exit_code 124)", 0 },
	{ "cwd", "string", "Directory to run in, inside the sandbox (default: the session's current)", 0 },
	{ "stdin", "string", "Text given to the command on standard input", 0 },
	{ "background", "boolean", "Start it as a background job and return its id at once (no "
	  "stdin; the shell state is not kept); poll it with job_output", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop run_out[] = {
	{ "exit_code", "integer", "The command's exit status (124 timed out, 128+N killed by signal N); "
	  "absent while running is true", 0 },
	{ "stdout", "string", "Standard output (head and tail kept when large)", 0 },
	{ "stderr", "string", "Standard error (head and tail kept when large)", 0 },
	{ "truncated", "boolean", "Output was cut in the middle to the configured limit", 0 },
	{ "timed_out", "boolean", "The command was killed at its timeout", 0 },
	{ "duration_ms", "integer", "Wall time of the command (so far, when running)", 0 },
	{ "jobs_left", "integer", "Background processes the command left running in the session", 0 },
	{ "running", "boolean", "true: the command goes on as the background job named by job "
	  "(background, or still running at the server's hand-off time)", 1 },
	{ "job", "string", "With running true, the job the command goes on as (\"j1\"); else the "
	  "job of what it left running in the session, e.g. with & (\"s123\"): use job_output "
	  "and job_kill", 0 },
	{ "message", "string", "What to do next, when the run was handed off", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop job_in[] = {
	{ "job", "string", "The job: \"jN\" (a background or handed-off run) or \"sID\" (left "
	  "running by a command, e.g. with &), as job_list shows", 1 },
	{ "session", "string", "Its session (default: \"default\")", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop job_list_in[] = {
	{ "session", "string", "Session whose jobs to list (default: \"default\")", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop job_list_out[] = {
	{ "session", "string", "The session", 1 },
	{ "jobs", "array", "Its jobs: {job, kind (background, handed_off or shell), command, running, "
	  "exit_code once done, stdout_bytes, stderr_bytes}", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop job_output_in[] = {
	{ "job", "string", "The job (\"j1\" or \"s123\", as job_list shows)", 1 },
	{ "session", "string", "Its session (default: \"default\")", 0 },
	{ "stream", "string", "stdout (default) or stderr", 0 },
	{ "offset", "integer", "Byte offset in the stream to read from (default 0; pass the last "
	  "next_offset to read on)", 0 },
	{ "max_bytes", "integer", "At most this many bytes (default and ceiling 65536)", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop job_output_out[] = {
	{ "job", "string", "The job", 1 },
	{ "stream", "string", "stdout or stderr", 1 },
	{ "offset", "integer", "Offset of data in the stream", 1 },
	{ "data", "string", "The bytes (UTF-8 text, or base64 when encoding says so)", 1 },
	{ "encoding", "string", "utf8 or base64", 1 },
	{ "next_offset", "integer", "Offset to ask for next", 1 },
	{ "total_bytes", "integer", "Bytes the stream holds so far: next_offset < total_bytes means "
	  "more to read", 1 },
	{ "gap", "boolean", "The offset fell in the middle dropped from long output (next_offset "
	  "skips it)", 0 },
	{ "running", "boolean", "The job still runs", 1 },
	{ "exit_code", "integer", "Its exit status, once it ended (jN jobs)", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop job_kill_out[] = {
	{ "job", "string", "The job", 1 },
	{ "killed", "boolean", "It was running and was told to stop (TERM, then KILL)", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop read_in[] = {
	{ "path", "string", "Absolute path of the file inside the sandbox (at most 1 MiB is read)", 1 },
	{ "session", "string", "Session (default: \"default\")", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop read_out[] = {
	{ "path", "string", "The file", 1 },
	{ "size", "integer", "Its size in bytes", 1 },
	{ "content", "string", "Its bytes: the text when valid UTF-8, else base64", 1 },
	{ "encoding", "string", "utf8 or base64", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop write_in[] = {
	{ "path", "string", "Absolute path of the file inside the sandbox (replaced whole)", 1 },
	{ "content", "string", "The bytes to write: text, or base64 with encoding base64 (at most "
	  "1 MiB decoded)", 1 },
	{ "encoding", "string", "utf8 (default) or base64", 0 },
	{ "mode", "integer", "Permission bits (default 420, i.e. 0644)", 0 },
	{ "session", "string", "Session (default: \"default\")", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop write_out[] = {
	{ "path", "string", "The file", 1 },
	{ "size", "integer", "Bytes written", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop check_in[] = {
	{ "command", "string", "Shell command line to judge (it is not run)", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop check_out[] = {
	{ "verdict", "string", "allow (runs), ask (needs approval) or deny (never runs)", 1 },
	{ "rules", "array", "The safety rules the command matched, with descriptions", 1 },
	{ "approval", "string", "The approval mode of this server", 0 },
	{ "runs", "boolean", "Whether run would run it here, with nobody to approve", 0 },
	{ "why", "string", "Why it would not run", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop open_in[] = {
	{ "session", "string", "Name of the session: letters, digits, '.', '_' and '-'", 1 },
	{ "backend", "string", "Sandbox backend (local, docker, ssh, ...; default: the server's)", 0 },
	{ "image", "string", "Container image, for backends with images", 0 },
	{ "workspace", "string", "Host directory the sandbox is built around", 0 },
	{ "persistent", "boolean", "Keep the sandbox after this connection ends (default false)", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop sess_out[] = {
	{ "session", "string", "The session's name", 1 },
	{ "backend", "string", "Its backend", 0 },
	{ "persistent", "boolean", "Whether it outlives this connection", 0 },
	{ "adopted", "array", "Jobs (\"jN\") taken over at open: commands an earlier connection left "
	  "running in this persistent session (see job_list)", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop close_in[] = {
	{ "session", "string", "Name of a session opened by this connection", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop close_out[] = {
	{ "session", "string", "The session's name", 1 },
	{ "closed", "boolean", "Closed in this connection", 1 },
	{ "kept", "boolean", "Its sandbox was kept (a persistent session)", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop none[] = { { NULL, NULL, NULL, 0 } };
static const struct prop list_out[] = {
	{ "sessions", "array", "Open sessions: {session, backend, persistent}", 1 },
	{ NULL, NULL, NULL, 0 },
};

static const struct tool tools[] = {
	{ "run", "Run a shell command in a sandbox",
	  "Run a shell command in a sandboxed session and return its exit code, stdout and stderr. "
	  "The session keeps its state across calls (current directory, exported variables, "
	  "functions), so `cd dir` in one call holds for the next. A command that fails is a normal "
	  "result with its exit_code; isError means hs refused it (dangerous command denied by "
	  "approval) or the sandbox failed. Use check first when unsure whether a command is allowed. "
	  "A command still running after the server's hand-off time (50 s by default) comes back "
	  "with running true and a job id: it goes on in the sandbox; read its output with "
	  "job_output and stop it with job_kill. background true starts it as a job at once.",
	  0, 1, 1, run_in, run_out },
	{ "job_list", "List a session's jobs",
	  "List the jobs of a session: background and handed-off runs (\"jN\") and what commands "
	  "left running in the session shell, e.g. with & (\"sID\"), with their state.",
	  1, 0, 0, job_list_in, job_list_out },
	{ "job_output", "Read a job's output",
	  "Read a job's stdout or stderr from a byte offset, at most max_bytes at a time; read on "
	  "from next_offset until it reaches total_bytes and running is false.",
	  1, 0, 0, job_output_in, job_output_out },
	{ "job_kill", "Stop a job",
	  "Stop a running job and every process it started (TERM, then KILL after the grace time).",
	  0, 1, 0, job_in, job_kill_out },
	{ "read_file", "Read a file in the sandbox",
	  "Read a whole file (at most 1 MiB) from the sandbox: text when it is valid UTF-8, else "
	  "base64 (encoding says which). For larger files read parts with run (head -c, dd).",
	  1, 0, 0, read_in, read_out },
	{ "write_file", "Write a file in the sandbox",
	  "Create or replace a whole file (at most 1 MiB) in the sandbox with text, or binary "
	  "bytes given as base64 (encoding base64). Subject to approval like a command.",
	  0, 1, 0, write_in, write_out },
	{ "check", "Judge a command's safety without running it",
	  "Say whether a shell command would be allowed, need approval or be denied by the safety "
	  "policy, and which rules it matched. Nothing is run.",
	  1, 0, 0, check_in, check_out },
	{ "session_open", "Open a named sandbox session",
	  "Open a named session, optionally on another backend or image; later run calls pass its "
	  "name as session. It is closed when this connection ends unless persistent.",
	  0, 0, 1, open_in, sess_out },
	{ "session_close", "Close a sandbox session",
	  "Close a session opened by this connection; its sandbox is torn down unless it is "
	  "persistent, and everything still running in it is stopped.",
	  0, 1, 0, close_in, close_out },
	{ "session_list", "List this connection's sessions",
	  "List the sessions open in this connection, the default one included once used.",
	  1, 0, 0, none, list_out },
};

static void
schema_json(yajl_gen g, const char *key, const struct prop *p)
{
	hs_json_key(g, key);
	yajl_gen_map_open(g);
	hs_json_kstr(g, "type", "object");
	hs_json_key(g, "properties");
	yajl_gen_map_open(g);
	for (const struct prop *q = p; q->name; q++) {
		hs_json_key(g, q->name);
		yajl_gen_map_open(g);
		hs_json_kstr(g, "type", q->type);
		hs_json_kstr(g, "description", q->desc);
		yajl_gen_map_close(g);
	}
	yajl_gen_map_close(g);
	hs_json_key(g, "required");
	yajl_gen_array_open(g);
	for (const struct prop *q = p; q->name; q++)
		if (q->req)
			hs_json_str(g, q->name);
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
}

static void
tools_json(yajl_gen g)
{
	hs_json_key(g, "tools");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		const struct tool *t = &tools[i];
		yajl_gen_map_open(g);
		hs_json_kstr(g, "name", t->name);
		hs_json_kstr(g, "title", t->title);
		hs_json_kstr(g, "description", t->desc);
		schema_json(g, "inputSchema", t->in);
		schema_json(g, "outputSchema", t->out);
		hs_json_key(g, "annotations");
		yajl_gen_map_open(g);
		hs_json_kstr(g, "title", t->title);
		hs_json_kbool(g, "readOnlyHint", t->read_only);
		hs_json_kbool(g, "destructiveHint", t->destructive);
		hs_json_kbool(g, "idempotentHint", t->read_only);
		hs_json_kbool(g, "openWorldHint", t->open_world);
		yajl_gen_map_close(g);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

/* --- JSON-RPC ----------------------------------------------------------- */

static void
gen_id(yajl_gen g, yajl_val id)
{
	hs_json_key(g, "id");
	if (id && YAJL_IS_STRING(id))
		hs_json_str(g, YAJL_GET_STRING(id));
	else if (id && YAJL_IS_INTEGER(id))
		yajl_gen_integer(g, YAJL_GET_INTEGER(id));
	else
		yajl_gen_null(g);
}

/* Start a reply to id: {"jsonrpc":"2.0","id":ID, (the caller adds result or error). */
static yajl_gen
reply_start(yajl_val id)
{
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	hs_json_kstr(g, "jsonrpc", "2.0");
	gen_id(g, id);
	return g;
}

static void
reply_end(yajl_gen g)
{
	yajl_gen_map_close(g);
	hs_json_emit(g, out_fd);
}

static void
reply_error(yajl_val id, int code, const char *msg)
{
	yajl_gen g = reply_start(id);
	hs_json_key(g, "error");
	yajl_gen_map_open(g);
	hs_json_kint(g, "code", code);
	hs_json_kstr(g, "message", msg);
	yajl_gen_map_close(g);
	reply_end(g);
}

static void
do_initialize(yajl_val id, yajl_val params)
{
	const char *asked = hs_serve_str(params, "protocolVersion");
	const char *ver = "2025-06-18";
	if (asked && (!strcmp(asked, "2025-06-18") || !strcmp(asked, "2025-11-25")))
		ver = asked;
	yajl_gen g = reply_start(id);
	hs_json_key(g, "result");
	yajl_gen_map_open(g);
	hs_json_kstr(g, "protocolVersion", ver);
	hs_json_key(g, "capabilities");
	yajl_gen_map_open(g);
	hs_json_key(g, "tools");
	yajl_gen_map_open(g);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
	hs_json_key(g, "serverInfo");
	yajl_gen_map_open(g);
	hs_json_kstr(g, "name", "hs");
	hs_json_kstr(g, "version", PACKAGE_VERSION);
	yajl_gen_map_close(g);
	hs_json_kstr(g, "instructions",
	             "Run shell commands in a sandbox with the run tool; state persists across runs "
	             "in a session. Dangerous commands may be denied by the approval policy.");
	yajl_gen_map_close(g);
	reply_end(g);
}

/* tools/call: a tool's failure is a result with isError, never a JSON-RPC error. */
static void
do_call(struct hs_mcp *m, yajl_val id, yajl_val params)
{
	const char *name = hs_serve_str(params, "name");
	yajl_val args = hs_serve_val(params, "arguments");
	char err[1024] = "";

	if (!name || (args && !YAJL_IS_OBJECT(args))) {
		reply_error(id, RPC_PARAMS, "tools/call needs a \"name\" string and \"arguments\" object");
		return;
	}
	yajl_gen out = hs_json_new();
	int rc = hs_mcp_tool_call(m, name, args, out, err, sizeof(err));
	if (rc == 1) {
		yajl_gen_free(out);
		snprintf(err, sizeof(err), "unknown tool '%s' (see tools/list)", name);
		reply_error(id, RPC_PARAMS, err);
		return;
	}
	const unsigned char *buf = NULL;
	size_t len = 0;
	if (rc == 0)
		yajl_gen_get_buf(out, &buf, &len);
	yajl_gen g = reply_start(id);
	hs_json_key(g, "result");
	yajl_gen_map_open(g);
	hs_json_key(g, "content");
	yajl_gen_array_open(g);
	yajl_gen_map_open(g);
	hs_json_kstr(g, "type", "text");
	hs_json_key(g, "text");
	yajl_gen_string(g, rc == 0 ? buf : (const unsigned char *)err, rc == 0 ? len : strlen(err));
	yajl_gen_map_close(g);
	yajl_gen_array_close(g);
	if (rc == 0) {
		/* The same object, generated by yajl once: spliced in as one value. */
		hs_json_key(g, "structuredContent");
		yajl_gen_number(g, (const char *)buf, len);
	}
	hs_json_kbool(g, "isError", rc != 0);
	yajl_gen_map_close(g);
	yajl_gen_free(out);
	reply_end(g);
}

/* One message line. */
static void
handle_line(struct hs_mcp *m, const char *line, size_t len)
{
	char ebuf[256];
	if (hs_serve_shape_check(line, len, HS_SERVE_MAX_DEPTH, HS_SERVE_MAX_VALUES)) {
		reply_error(NULL, RPC_PARSE, "parse error: message too deep or too large");
		return;
	}
	yajl_val root = yajl_tree_parse(line, ebuf, sizeof(ebuf));
	if (!root) {
		reply_error(NULL, RPC_PARSE, "parse error: not valid JSON");
		return;
	}
	yajl_val id = hs_serve_val(root, "id");
	const char *ver = hs_serve_str(root, "jsonrpc");
	const char *method = hs_serve_str(root, "method");
	yajl_val params = hs_serve_val(root, "params");
	int has_id = YAJL_IS_OBJECT(root) && id != NULL;

	if (!YAJL_IS_OBJECT(root) || !ver || strcmp(ver, "2.0") ||
	    (id && !YAJL_IS_STRING(id) && !YAJL_IS_INTEGER(id)) || (params && !YAJL_IS_OBJECT(params))) {
		reply_error(id && (YAJL_IS_STRING(id) || YAJL_IS_INTEGER(id)) ? id : NULL, RPC_INVALID,
		            "invalid request: not a JSON-RPC 2.0 request object");
	} else if (!method) {
		/* A response to a request of ours (none are sent in this version): ignored. */
		if (!hs_serve_val(root, "result") && !hs_serve_val(root, "error"))
			reply_error(id, RPC_INVALID, "invalid request: no \"method\"");
	} else if (!has_id) {
		/* Notifications (initialized, cancelled, ...) are taken without a reply. */
	} else if (!strcmp(method, "initialize")) {
		do_initialize(id, params);
	} else if (!strcmp(method, "ping")) {
		yajl_gen g = reply_start(id);
		hs_json_key(g, "result");
		yajl_gen_map_open(g);
		yajl_gen_map_close(g);
		reply_end(g);
	} else if (!strcmp(method, "tools/list")) {
		yajl_gen g = reply_start(id);
		hs_json_key(g, "result");
		yajl_gen_map_open(g);
		tools_json(g);
		yajl_gen_map_close(g);
		reply_end(g);
	} else if (!strcmp(method, "tools/call")) {
		do_call(m, id, params);
	} else {
		snprintf(ebuf, sizeof(ebuf), "method '%s' not found", method);
		reply_error(id, RPC_NO_METHOD, ebuf);
	}
	yajl_tree_free(root);
}

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: hs mcp [--backend NAME] [--image IMAGE] [--workspace DIR]\n"
	        "              [--approval ask|deny|approve] [--handoff-after SECONDS]\n"
	        "              [--config FILE]\n"
	        "\n"
	        "A Model Context Protocol server on stdin/stdout for agents (Claude Code,\n"
	        "Cursor, ...): tools run, check, session_open, session_close, session_list,\n"
	        "job_list, job_output, job_kill, read_file, write_file.\n"
	        "\n"
	        "  -b, --backend NAME     backend of the sessions (default: config 'backend')\n"
	        "  -i, --image IMAGE      image of the sessions (container backends)\n"
	        "  -w, --workspace DIR    host directory of the sessions' workspace\n"
	        "                         (default: config 'workspace')\n"
	        "      --config FILE      add FILE as a config layer (as hs --config)\n"
	        "      --approval MODE    ask, deny or approve; nobody can be asked yet, so ask denies\n"
	        "      --handoff-after S  a run still going after S seconds goes on as a background\n"
	        "                         job, its result says which (default 50; 0: never)\n"
	        "  -h, --help             show this help\n"
	        "\n"
	        "See hs-mcp(1).\n");
}

int
hs_cmd_mcp(struct hs_core *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "image", required_argument, NULL, 'i' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "config", required_argument, NULL, 'C' }, /* taken by main.c */
		{ "approval", required_argument, NULL, 'A' },
		{ "handoff-after", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct hs_mcp m = { .c = c, .cancel_fd = -1, .handoff_s = 50 };
	char err[1024];
	int o;

	optind = 1;
	while ((o = getopt_long(argc, argv, "+b:i:w:h", opts, NULL)) != -1) {
		switch (o) {
		case 'b': m.backend = optarg; break;
		case 'i': m.image = optarg; break;
		case 'w': m.workspace = optarg; break;
		case 'C': break;
		case 'A':
			if (hs_conf_set_cli(c->conf, "approval", optarg, err, sizeof(err)) < 0) {
				hs_die_msg("--approval: %s", err);
				return HS_EXIT_USAGE;
			}
			break;
		case 'H': {
			char *end;
			errno = 0;
			long long v = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 || v > 86400) {
				hs_die_msg("--handoff-after: '%s' is not a number of seconds from 0 to 86400",
				           optarg);
				return HS_EXIT_USAGE;
			}
			m.handoff_s = v;
			break;
		}
		case 'h': usage(stdout); return 0;
		default: return HS_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		hs_die_msg("mcp takes no arguments (see hs mcp --help)");
		return HS_EXIT_USAGE;
	}
	m.mode = hs_approval_mode_resolve(c, NULL, -1);
	if (m.mode < 0) {
		hs_die_msg("unknown approval mode in the config (deny, ask or approve)");
		return HS_EXIT_USAGE;
	}
	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		hs_die_msg("cannot create a pipe: %s", strerror(errno));
		return HS_EXIT_FAIL;
	}
	m.cancel_fd = stop_pipe[0];
	/* Only replies on the protocol stream: whatever a library or a started
	 * process (a runner, a backend's tool) writes to fd 1 goes to stderr, and
	 * nothing that outlives a command holds the client's pipe open. */
	out_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (out_fd < 0 || dup2(2, 1) < 0) {
		hs_die_msg("cannot set up stdout: %s", strerror(errno));
		return HS_EXIT_FAIL;
	}
	snprintf(m.default_name, sizeof(m.default_name), "mcp-%ld-default", (long)getpid());

	/* No SA_RESTART: a stop interrupts the read of the next message. */
	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while (!stop_requested && (n = getline(&line, &cap, stdin)) >= 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0)
			continue;
		if ((size_t)n > MCP_MAX_LINE)
			reply_error(NULL, RPC_INVALID, "invalid request: message larger than 16 MiB");
		else
			handle_line(&m, line, (size_t)n);
	}
	free(line);
	hs_mcp_close_all(&m);
	close(stop_pipe[0]);
	close(stop_pipe[1]);
	return 0;
}
