/* SPDX-License-Identifier: MIT */
/*
 * cmd_mcp.c - `hs mcp`: JSON-RPC 2.0, one message a line on stdin/stdout
 * (MCP's stdio transport).  stdout carries replies only; logs go to stderr.
 * Methods: initialize, ping, tools/list, tools/call; notifications are
 * taken and not answered (notifications/cancelled stops a call).
 *
 * The main thread reads: it answers initialize, ping and tools/list at once,
 * routes the client's answers to our elicitation requests and takes cancels,
 * while one worker thread runs the tools/call requests in order.  Lines go
 * out whole under one mutex.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/safety/approval.h"
#include "core/cli/cmds.h"
#include "core/config/hsconf.h"
#include "core/core.h"
#include "core/json.h"
#include "core/mcp/mcp.h"
#include "core/safety/prompt.h"
#include "core/serve/serve-req.h"
#include "core/shell.h"

#define RPC_PARSE (-32700)
#define RPC_INVALID (-32600)
#define RPC_NO_METHOD (-32601)
#define RPC_PARAMS (-32602)
#define RPC_BUSY (-32000)

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
	{ "pty", "boolean|object", "Run it as a background job on a pseudo-terminal: true (24x80) or "
	  "{\"rows\": R, \"cols\": C}; type into it with job_write, read it with job_output "
	  "(screen true shows what a person would see), resize it with job_resize", 0 },
	{ "stdin_open", "boolean", "Run it as a background job whose stdin stays open for "
	  "job_write (without pty: a pipe)", 0 },
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
	{ "stdout_bytes", "integer", "Bytes the command wrote to stdout in all (more than stdout "
	  "holds when truncated)", 0 },
	{ "stderr_bytes", "integer", "Bytes it wrote to stderr in all", 0 },
	{ "output_id", "string", "Names the whole output the sandbox keeps: read any part of it "
	  "with output_read", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop output_read_in[] = {
	{ "output_id", "string", "The output_id of a run result", 1 },
	{ "session", "string", "Its session (default: \"default\")", 0 },
	{ "stream", "string", "stdout (default) or stderr", 0 },
	{ "offset", "integer", "First byte to read (default 0)", 0 },
	{ "length", "integer", "Bytes to read at most (default: the output limit; at most 4 MiB)", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop output_read_out[] = {
	{ "output_id", "string", "The output", 1 },
	{ "stream", "string", "stdout or stderr", 1 },
	{ "offset", "integer", "Where data starts (later than asked when that part was evicted: "
	  "see gap)", 1 },
	{ "data", "string", "The bytes, as text", 0 },
	{ "data_b64", "string", "The bytes, base64, when they are not UTF-8", 0 },
	{ "next_offset", "integer", "Where the next read goes on", 1 },
	{ "stdout_bytes", "integer", "The stream's size so far (stdout)", 0 },
	{ "stderr_bytes", "integer", "The stream's size so far (stderr)", 0 },
	{ "eof", "boolean", "Nothing more follows: the command ended and this is the end", 1 },
	{ "running", "boolean", "The command still runs", 1 },
	{ "gap", "object", "{offset, bytes}: what was asked but is no longer kept", 0 },
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
	  "pty (on a terminal), waiting_input (asks for input), exit_code once done, stdout_bytes, "
	  "stderr_bytes}", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop job_output_in[] = {
	{ "job", "string", "The job (\"j1\" or \"s123\", as job_list shows)", 1 },
	{ "session", "string", "Its session (default: \"default\")", 0 },
	{ "stream", "string", "stdout (default) or stderr", 0 },
	{ "offset", "integer", "Byte offset in the stream to read from (default 0; pass the last "
	  "next_offset to read on)", 0 },
	{ "max_bytes", "integer", "At most this many bytes (default and ceiling 65536)", 0 },
	{ "screen", "boolean", "Also render stdout as a terminal screen (a \"jN\" job): its rows "
	  "come as text content and in screen", 0 },
	{ "rows", "integer", "With screen: the screen's rows (default: the job's terminal size, "
	  "else 24)", 0 },
	{ "cols", "integer", "With screen: its columns (default: the job's terminal size, else 80)", 0 },
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
	{ "pty", "boolean", "It runs on a pseudo-terminal", 0 },
	{ "waiting_input", "boolean", "It is blocked reading its terminal or stdin: it asks "
	  "something (answer with job_write)", 0 },
	{ "screen", "object", "With screen true: {rows (text lines), cursor {row, col}, size "
	  "{rows, cols}, alternate (full-screen program), partial (rendered from a later point "
	  "of long output)}", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop job_write_in[] = {
	{ "job", "string", "The job (\"jN\" started by run with pty or stdin_open true)", 1 },
	{ "session", "string", "Its session (default: \"default\")", 0 },
	{ "text", "string", "Text to type (a newline is the Enter key: \"print(6*7)\\n\")", 0 },
	{ "base64", "string", "Bytes to write, as base64 (instead of text)", 0 },
	{ "eof", "boolean", "Then end the input (a terminal's EOF character, or close the pipe)", 0 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop job_write_out[] = {
	{ "job", "string", "The job", 1 },
	{ "written", "integer", "Bytes delivered", 1 },
	{ "running", "boolean", "The job still runs", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop job_resize_in[] = {
	{ "job", "string", "The job (\"jN\" started by run with pty)", 1 },
	{ "session", "string", "Its session (default: \"default\")", 0 },
	{ "rows", "integer", "Rows of the terminal window, 1 to 1000", 1 },
	{ "cols", "integer", "Columns, 1 to 1000", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const struct prop job_resize_out[] = {
	{ "job", "string", "The job", 1 },
	{ "rows", "integer", "Its terminal's rows now", 1 },
	{ "cols", "integer", "Its columns now", 1 },
	{ "running", "boolean", "The job still runs", 1 },
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
	{ "egress_warning", "string", "Set when network allowlist is mapped onto the backend's own "
	  "address filter: how much weaker that is than hs's egress endpoint", 0 },
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
	  "from next_offset until it reaches total_bytes and running is false. screen true also "
	  "renders a job's stdout as the terminal screen a person would see (for pty jobs: "
	  "REPLs, vim, top).",
	  1, 0, 0, job_output_in, job_output_out },
	{ "job_write", "Type into a job",
	  "Write text (or base64 bytes) to the terminal or open stdin of a job started by run with "
	  "pty or stdin_open true, optionally then end its input. What is written into a shell or "
	  "interpreter is judged by the safety policy like a command: a dangerous line is refused "
	  "(isError, naming the rules) and nothing is delivered.",
	  0, 1, 0, job_write_in, job_write_out },
	{ "job_resize", "Resize a job's terminal",
	  "Set the window size of a job's pseudo-terminal (run with pty); the program gets SIGWINCH.",
	  0, 0, 0, job_resize_in, job_resize_out },
	{ "output_read", "Read a run's whole output",
	  "Read any range of a finished or running command's stdout or stderr by offset, "
	  "after its result showed only the head and tail (output_id from run; the sandbox "
	  "keeps the last commands' output up to output_keep).",
	  1, 0, 0, output_read_in, output_read_out },
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
		/* "a|b": either type. */
		const char *bar = strchr(q->type, '|');
		if (bar) {
			hs_json_key(g, "type");
			yajl_gen_array_open(g);
			yajl_gen_string(g, (const unsigned char *)q->type, (size_t)(bar - q->type));
			hs_json_str(g, bar + 1);
			yajl_gen_array_close(g);
		} else {
			hs_json_kstr(g, "type", q->type);
		}
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

/* --- the protocol stream ------------------------------------------------ */

/* Whole lines, one writer at a time: replies from the reader and the worker,
 * progress notifications and elicitation requests all go out through here. */
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static void
emit(yajl_gen g)
{
	pthread_mutex_lock(&out_mu);
	hs_json_emit(g, out_fd);
	pthread_mutex_unlock(&out_mu);
}

static void
gen_id(yajl_gen g, const char *key, yajl_val id)
{
	hs_json_key(g, key);
	if (id && YAJL_IS_STRING(id))
		hs_json_str(g, YAJL_GET_STRING(id));
	else if (id && YAJL_IS_INTEGER(id))
		yajl_gen_integer(g, YAJL_GET_INTEGER(id));
	else
		yajl_gen_null(g);
}

/* 1 when a and b are the same request id (a string or an integer). */
static int
same_id(yajl_val a, yajl_val b)
{
	if (!a || !b)
		return 0;
	const char *sa = YAJL_GET_STRING(a), *sb = YAJL_GET_STRING(b);
	if (sa || sb)
		return sa && sb && !strcmp(sa, sb);
	return YAJL_IS_INTEGER(a) && YAJL_IS_INTEGER(b) && YAJL_GET_INTEGER(a) == YAJL_GET_INTEGER(b);
}

/* Start a reply to id: {"jsonrpc":"2.0","id":ID, (the caller adds result or error). */
static yajl_gen
reply_start(yajl_val id)
{
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	hs_json_kstr(g, "jsonrpc", "2.0");
	gen_id(g, "id", id);
	return g;
}

static void
reply_end(yajl_gen g)
{
	yajl_gen_map_close(g);
	emit(g);
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

/* Start a message of ours, method with its "params" map left open (id NULL: a notification). */
static yajl_gen
message_start(const char *id, const char *method)
{
	yajl_gen g = hs_json_new();
	yajl_gen_map_open(g);
	hs_json_kstr(g, "jsonrpc", "2.0");
	if (id)
		hs_json_kstr(g, "id", id);
	hs_json_kstr(g, "method", method);
	hs_json_key(g, "params");
	yajl_gen_map_open(g);
	return g;
}

static void
message_end(yajl_gen g)
{
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
	emit(g);
}

/* --- the worker's state -------------------------------------------------- */

/* A tools/call waiting for the worker or running on it (root owns id and params). */
struct call {
	yajl_val root, id, params;
	struct call *next;
};

/* Bytes of a running command's output kept for progress messages. */
#define MCP_TAIL 1024
/* Calls that may wait behind the running one before more are refused. */
#define MCP_QUEUE_MAX 64
/* At most one progress notification this often; one at least every MCP_BEAT_MS. */
#define MCP_PROGRESS_MS 250
#define MCP_BEAT_MS 1000

/* What the reader and the worker share, under mu. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t queue_cv;   /* the worker: a call queued, or the end */
	pthread_cond_t answer_cv;  /* the asker: an answer, a cancel, or the end */
	struct call *head, *tail;
	size_t queued;
	int eof;                   /* no more requests will come */
	int gone;                  /* nobody reads our output: stop as on a signal */
	int done;                  /* the worker has ended */
	struct call *running;
	int cancelled;             /* the client cancelled running (notifications/cancelled) */
	int cancel_pipe[2];        /* a byte here wakes the running command's exec loop */
	int elicit;                /* the client declared the elicitation capability */
	int64_t ask_timeout_ms;
	unsigned asks;
	char ask_id[32];           /* our elicitation waiting for its answer; "": none */
	int ask_answer;            /* enum hs_decision; -1 not yet */
	/* Progress of the running call, when it gave a progressToken. */
	yajl_val token;
	int64_t start_ms, sent_ms;
	uint64_t total, sent_total;
	char last[MCP_TAIL];       /* the output's last bytes */
	size_t last_len;
} R = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.queue_cv = PTHREAD_COND_INITIALIZER,
	.answer_cv = PTHREAD_COND_INITIALIZER,
	.cancel_pipe = { -1, -1 },
	.ask_timeout_ms = 120000,
};

/* Wake the running command's exec loop (R.mu held or not: a pipe write). */
static void
poke_running(void)
{
	if (write(R.cancel_pipe[1], "c", 1) < 0) {
		/* Full: a wake-up is already pending. */
	}
}

/* --- progress ------------------------------------------------------------ */

/* The tail of the output as message text: whole UTF-8 characters, else escaped. */
static void
gen_tail(yajl_gen g, const char *buf, size_t len)
{
	size_t skip = 0;
	while (skip < len && skip < 3 && ((unsigned char)buf[skip] & 0xc0) == 0x80)
		skip++;
	buf += skip;
	len -= skip;
	if (hs_utf8_valid(buf, len)) {
		yajl_gen_string(g, (const unsigned char *)buf, len);
		return;
	}
	char esc[4 * MCP_TAIL + 1];
	size_t n = hs_prompt_escape(buf, len, esc, sizeof(esc));
	yajl_gen_string(g, (const unsigned char *)esc, n);
}

/*
 * The progress notification due now, or NULL (R.mu held): at most one each
 * MCP_PROGRESS_MS, and only for new output unless MCP_BEAT_MS went by.
 * progress is the seconds the command has run; message the output's tail.
 */
static yajl_gen
progress_due(void)
{
	if (!R.token)
		return NULL;
	int64_t now = hs_now_ms();
	if (now - R.sent_ms < MCP_PROGRESS_MS || (R.total == R.sent_total && now - R.sent_ms < MCP_BEAT_MS))
		return NULL;
	R.sent_ms = now;
	R.sent_total = R.total;

	yajl_gen g = message_start(NULL, "notifications/progress");
	hs_json_key(g, "progressToken");
	if (YAJL_IS_STRING(R.token))
		hs_json_str(g, YAJL_GET_STRING(R.token));
	else
		yajl_gen_integer(g, YAJL_GET_INTEGER(R.token));
	char num[32];
	int n = snprintf(num, sizeof(num), "%.3f", (double)(now - R.start_ms) / 1000.0);
	hs_json_key(g, "progress");
	yajl_gen_number(g, num, (size_t)n);
	hs_json_key(g, "message");
	if (R.last_len)
		gen_tail(g, R.last, R.last_len);
	else
		hs_json_str(g, "running, no output yet");
	return g;
}

void
hs_mcp_progress(struct hs_mcp *m, const void *buf, size_t len)
{
	(void)m;
	pthread_mutex_lock(&R.mu);
	R.total += len;
	if (R.token) {
		if (len >= MCP_TAIL) {
			memcpy(R.last, (const char *)buf + len - MCP_TAIL, MCP_TAIL);
			R.last_len = MCP_TAIL;
		} else {
			size_t keep = R.last_len + len > MCP_TAIL ? MCP_TAIL - len : R.last_len;
			memmove(R.last, R.last + R.last_len - keep, keep);
			memcpy(R.last + keep, buf, len);
			R.last_len = keep + len;
		}
	}
	yajl_gen g = progress_due();
	pthread_mutex_unlock(&R.mu);
	if (g)
		message_end(g);
}

int
hs_mcp_call_cancelled(struct hs_mcp *m)
{
	(void)m;
	char buf[16];
	while (read(R.cancel_pipe[0], buf, sizeof(buf)) > 0) {
		/* Drained: the flags below say what the bytes meant. */
	}
	pthread_mutex_lock(&R.mu);
	int c = R.cancelled || R.gone || stop_requested;
	/* Called at least once a second while a command runs: a heartbeat. */
	yajl_gen g = c ? NULL : progress_due();
	pthread_mutex_unlock(&R.mu);
	if (g)
		message_end(g);
	return c;
}

/* --- approval by elicitation --------------------------------------------- */

/* The question: the command as it would run (control characters escaped) and the rules. */
static char *
ask_message(const char *command, const struct hs_analysis *a)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	size_t cl = strlen(command);
	char *esc = malloc(4 * cl + 1);
	if (esc)
		hs_prompt_escape(command, cl, esc, 4 * cl + 1);
	fprintf(f, "hs: this command needs your approval before it runs in the sandbox:\n\n    %s\n\n"
	        "It matched:\n", esc ? esc : "(out of memory)");
	free(esc);
	for (size_t i = 0; i < a->n_findings; i++)
		fprintf(f, "  - %s: %s\n", a->findings[i].rule_id, a->findings[i].description);
	if (a->opaque)
		fprintf(f, "  - opaque: %s\n", a->opaque_reason);
	fprintf(f, "\nonce: run it this time; session: allow these rules for this session; "
	        "always: add them to the allow list; deny: do not run it.");
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* elicitation/create for a command in ask mode; the answer as an enum hs_decision. */
static int
elicit_ask(void *ctx, const char *command, const struct hs_analysis *a)
{
	static const char *const choices[] = { "once", "session", "always", "deny" };
	static const char *const names[] = { "Run it once", "Allow for this session",
		                             "Always allow (allow list)", "Deny" };
	char id[32];
	(void)ctx;

	char *text = ask_message(command, a);
	if (!text)
		return HS_DECIDE_DENY;
	pthread_mutex_lock(&R.mu);
	if (R.eof || R.cancelled || stop_requested) {
		pthread_mutex_unlock(&R.mu);
		free(text);
		return HS_DECIDE_DENY; /* nobody left to answer */
	}
	snprintf(R.ask_id, sizeof(R.ask_id), "hs-elicit-%u", ++R.asks);
	snprintf(id, sizeof(id), "%s", R.ask_id);
	R.ask_answer = -1;
	pthread_mutex_unlock(&R.mu);

	yajl_gen g = message_start(id, "elicitation/create");
	hs_json_kstr(g, "message", text);
	free(text);
	hs_json_key(g, "requestedSchema");
	yajl_gen_map_open(g);
	hs_json_kstr(g, "type", "object");
	hs_json_key(g, "properties");
	yajl_gen_map_open(g);
	hs_json_key(g, "decision");
	yajl_gen_map_open(g);
	hs_json_kstr(g, "type", "string");
	hs_json_kstr(g, "title", "Decision");
	hs_json_kstr(g, "description", "Whether the command may run, and for how long");
	hs_json_key(g, "enum");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < 4; i++)
		hs_json_str(g, choices[i]);
	yajl_gen_array_close(g);
	hs_json_key(g, "enumNames");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < 4; i++)
		hs_json_str(g, names[i]);
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
	hs_json_key(g, "required");
	yajl_gen_array_open(g);
	hs_json_str(g, "decision");
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	message_end(g);

	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += R.ask_timeout_ms / 1000;
	dl.tv_nsec += (R.ask_timeout_ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&R.mu);
	int timed_out = 0;
	while (R.ask_answer < 0 && !R.eof && !R.cancelled && !stop_requested && !timed_out)
		timed_out = pthread_cond_timedwait(&R.answer_cv, &R.mu, &dl) == ETIMEDOUT;
	int d = R.ask_answer;
	int gone = R.eof || stop_requested;
	R.ask_id[0] = '\0';
	pthread_mutex_unlock(&R.mu);
	if (d < 0 && !gone) {
		/* Withdraw the question: nobody answered in time, or the call was cancelled. */
		yajl_gen n = message_start(NULL, "notifications/cancelled");
		hs_json_kstr(n, "requestId", id);
		hs_json_kstr(n, "reason", timed_out ? "no answer in time: denied" : "the tool call was cancelled");
		message_end(n);
		if (timed_out)
			hs_warn("approval asked by elicitation got no answer in %lld ms: denied",
			        (long long)R.ask_timeout_ms);
	}
	return d < 0 ? HS_DECIDE_DENY : d;
}

static const struct hs_asker elicit_asker = { NULL, elicit_ask, "elicitation" };

/* A response to a request of ours: the answer to the elicitation waiting, if it is one. */
static void
take_response(yajl_val root, yajl_val id)
{
	const char *sid = YAJL_GET_STRING(id);
	if (!sid)
		return;
	pthread_mutex_lock(&R.mu);
	if (R.ask_id[0] && !strcmp(R.ask_id, sid)) {
		/* accept with a choice decides; decline, cancel, an error or no choice deny. */
		yajl_val res = hs_serve_val(root, "result");
		const char *action = hs_serve_str(res, "action");
		const char *choice = hs_serve_str(hs_serve_val(res, "content"), "decision");
		int d = action && !strcmp(action, "accept") && choice ? hs_decision_parse(choice) : -1;
		R.ask_answer = d < 0 ? HS_DECIDE_DENY : d;
		pthread_cond_broadcast(&R.answer_cv);
	}
	pthread_mutex_unlock(&R.mu);
}

/* --- requests ------------------------------------------------------------ */

static void
do_initialize(yajl_val id, yajl_val params)
{
	const char *asked = hs_serve_str(params, "protocolVersion");
	const char *ver = "2025-06-18";
	if (asked && (!strcmp(asked, "2025-06-18") || !strcmp(asked, "2025-11-25")))
		ver = asked;
	yajl_val caps = hs_serve_val(params, "capabilities");
	yajl_val el = hs_serve_val(caps, "elicitation");
	/* An empty elicitation object means form mode; a list of modes must name form. */
	int form = el && YAJL_IS_OBJECT(el) &&
	           (YAJL_GET_OBJECT(el)->len == 0 || hs_serve_val(el, "form") != NULL);
	pthread_mutex_lock(&R.mu);
	R.elicit = form;
	pthread_mutex_unlock(&R.mu);

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

/*
 * tools/call, on the worker: a tool's failure is a result with isError,
 * never a JSON-RPC error.  A call the client cancelled gets no reply.
 */
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
	pthread_mutex_lock(&R.mu);
	int cancelled = R.cancelled;
	pthread_mutex_unlock(&R.mu);
	if (cancelled || rc == 1) {
		free(m->call_text);
		m->call_text = NULL;
	}
	if (cancelled) {
		yajl_gen_free(out);
		return;
	}
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
	if (rc == 0 && m->call_text) {
		yajl_gen_map_open(g);
		hs_json_kstr(g, "type", "text");
		hs_json_kstr(g, "text", m->call_text);
		yajl_gen_map_close(g);
	}
	free(m->call_text);
	m->call_text = NULL;
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

static void
call_free(struct call *c)
{
	yajl_tree_free(c->root);
	free(c);
}

/*
 * The worker: runs the queued tools/call requests one at a time, in order,
 * until the input ended and the queue is empty, or a stop.
 */
static void *
worker(void *arg)
{
	struct hs_mcp *m = arg;
	pthread_mutex_lock(&R.mu);
	for (;;) {
		while (!R.head && !R.eof && !R.gone && !stop_requested)
			pthread_cond_wait(&R.queue_cv, &R.mu);
		if (stop_requested || R.gone || !R.head)
			break;
		struct call *c = R.head;
		R.head = c->next;
		if (!R.head)
			R.tail = NULL;
		R.queued--;
		R.running = c;
		R.cancelled = 0;
		yajl_val tok = hs_serve_val(hs_serve_val(c->params, "_meta"), "progressToken");
		R.token = tok && (YAJL_IS_STRING(tok) || YAJL_IS_INTEGER(tok)) ? tok : NULL;
		R.start_ms = R.sent_ms = hs_now_ms();
		R.total = R.sent_total = 0;
		R.last_len = 0;
		/* Sessions opened from now on ask the client when it can be asked. */
		m->asker = R.elicit ? &elicit_asker : NULL;
		pthread_mutex_unlock(&R.mu);

		do_call(m, c->id, c->params);

		pthread_mutex_lock(&R.mu);
		R.running = NULL;
		R.token = NULL;
		call_free(c);
	}
	R.done = 1;
	pthread_mutex_unlock(&R.mu);
	/* Wake the reader waiting for us (after_eof). */
	if (write(stop_pipe[1], "", 1) < 0) {
		/* Full: it is awake already. */
	}
	return NULL;
}

/* Queue a tools/call for the worker; it takes root. */
static void
queue_call(yajl_val root, yajl_val id, yajl_val params)
{
	struct call *c = malloc(sizeof(*c));
	pthread_mutex_lock(&R.mu);
	if (!c || R.queued >= MCP_QUEUE_MAX) {
		pthread_mutex_unlock(&R.mu);
		free(c);
		reply_error(id, RPC_BUSY, "too many tool calls waiting (at most 64): wait for their results");
		yajl_tree_free(root);
		return;
	}
	*c = (struct call){ root, id, params, NULL };
	if (R.tail)
		R.tail->next = c;
	else
		R.head = c;
	R.tail = c;
	R.queued++;
	pthread_cond_signal(&R.queue_cv);
	pthread_mutex_unlock(&R.mu);
}

/* notifications/cancelled: stop the call if it runs, drop it if it waits; no reply either way. */
static void
cancel_call(yajl_val params)
{
	yajl_val rid = hs_serve_val(params, "requestId");
	struct call *drop = NULL;
	pthread_mutex_lock(&R.mu);
	if (R.running && same_id(R.running->id, rid)) {
		R.cancelled = 1;
		pthread_cond_broadcast(&R.answer_cv);
		poke_running();
	} else {
		for (struct call **p = &R.head; *p; p = &(*p)->next) {
			if (same_id((*p)->id, rid)) {
				drop = *p;
				*p = drop->next;
				R.tail = NULL;
				for (struct call *t = R.head; t; t = t->next)
					R.tail = t;
				R.queued--;
				break;
			}
		}
	}
	pthread_mutex_unlock(&R.mu);
	if (drop)
		call_free(drop);
}

/* One message line, on the reader. */
static void
handle_line(const char *line, size_t len)
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
		/* A response to a request of ours (an elicitation). */
		if (!hs_serve_val(root, "result") && !hs_serve_val(root, "error"))
			reply_error(id, RPC_INVALID, "invalid request: no \"method\"");
		else
			take_response(root, id);
	} else if (!has_id) {
		/* Notifications (initialized, cancelled, ...) are taken without a reply. */
		if (!strcmp(method, "notifications/cancelled"))
			cancel_call(params);
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
		queue_call(root, id, params);
		return;
	} else {
		snprintf(ebuf, sizeof(ebuf), "method '%s' not found", method);
		reply_error(id, RPC_NO_METHOD, ebuf);
	}
	yajl_tree_free(root);
}

/* One line as read; too long a line is refused, blank ones skipped. */
static void
take_line(char *line, size_t n)
{
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (n == 0)
		return;
	if (n > MCP_MAX_LINE)
		reply_error(NULL, RPC_INVALID, "invalid request: message larger than 16 MiB");
	else
		handle_line(line, n);
}

/*
 * The reader: stdin's lines to handle_line until EOF or a stop signal.  A
 * line longer than MCP_MAX_LINE is refused and skipped to its end.
 */
static void
read_loop(void)
{
	char *buf = NULL;
	size_t cap = 0, len = 0;
	int skipping = 0;

	while (!stop_requested) {
		struct pollfd pf[2] = { { 0, POLLIN, 0 }, { stop_pipe[0], POLLIN, 0 } };
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			hs_warn("poll: %s", strerror(errno));
			break;
		}
		if (stop_requested || pf[1].revents)
			break;
		if (!pf[0].revents)
			continue;
		if (cap - len < 65536) {
			char *nb = realloc(buf, cap + 65536 + cap / 2);
			if (!nb) {
				hs_warn("out of memory reading a message");
				break;
			}
			buf = nb;
			cap += 65536 + cap / 2;
		}
		ssize_t n = read(0, buf + len, cap - len - 1);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		size_t start = 0;
		char *nl;
		while ((nl = memchr(buf + start, '\n', len - start))) {
			*nl = '\0';
			if (!skipping)
				take_line(buf + start, (size_t)(nl - buf) - start);
			skipping = 0;
			start = (size_t)(nl - buf) + 1;
		}
		memmove(buf, buf + start, len - start);
		len -= start;
		if (len > MCP_MAX_LINE) {
			if (!skipping)
				reply_error(NULL, RPC_INVALID, "invalid request: message larger than 16 MiB");
			skipping = 1;
			len = 0;
		}
	}
	/* The last line may end at EOF without its newline. */
	if (len && !skipping && !stop_requested) {
		buf[len] = '\0';
		take_line(buf, len);
	}
	free(buf);
}

/*
 * After the end of input, while the worker finishes the calls already read:
 * when the client's end of our output closes too, nobody is left to read
 * their results, so the running command is cancelled and the rest dropped,
 * as on a stop signal.
 */
static void
after_eof(void)
{
	for (;;) {
		pthread_mutex_lock(&R.mu);
		int done = R.done;
		pthread_mutex_unlock(&R.mu);
		if (done || stop_requested) {
			poke_running();
			return;
		}
		/* No events asked for the output: poll reports its POLLERR or POLLHUP. */
		struct pollfd pf[2] = { { out_fd, 0, 0 }, { stop_pipe[0], POLLIN, 0 } };
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			return;
		if (pf[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
			pthread_mutex_lock(&R.mu);
			R.gone = 1;
			pthread_cond_broadcast(&R.queue_cv);
			pthread_cond_broadcast(&R.answer_cv);
			pthread_mutex_unlock(&R.mu);
			poke_running();
			return;
		}
		char b[16];
		while (!stop_requested && read(stop_pipe[0], b, sizeof(b)) > 0) {
			/* The worker's wake-up; a signal's byte is seen as stop_requested. */
		}
	}
}

/* --- set-up lines for clients --------------------------------------------- */

/* A space and word for a POSIX shell: as it is when that is safe, else single-quoted. */
static void
print_word(const char *w)
{
	if (*w && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,-") ==
	              strlen(w)) {
		printf(" %s", w);
		return;
	}
	char *q = malloc(hs_shell_quote(NULL, w) + 1);
	if (q)
		q[hs_shell_quote(q, w)] = '\0';
	printf(" %s", q ? q : "''");
	free(q);
}

/* Print the lines that add this server to client; -1 for an unknown client. */
static int
print_config(const char *client, const char *self, char *const *args, int nargs)
{
	yajl_gen g = hs_json_new();
	/* args as a JSON array: also a TOML inline array and a YAML flow sequence. */
	yajl_gen_array_open(g);
	for (int i = 0; i < nargs; i++)
		hs_json_str(g, args[i]);
	yajl_gen_array_close(g);
	const unsigned char *arr;
	size_t arr_len;
	yajl_gen_get_buf(g, &arr, &arr_len);
	yajl_gen q = hs_json_new();
	hs_json_str(q, self);
	const unsigned char *cmd;
	size_t cmd_len;
	yajl_gen_get_buf(q, &cmd, &cmd_len);
	int rc = 0;

	if (!strcmp(client, "claude")) {
		printf("claude mcp add hs --");
		print_word(self);
		for (int i = 0; i < nargs; i++)
			print_word(args[i]);
		printf("\n");
	} else if (!strcmp(client, "codex")) {
		printf("# ~/.codex/config.toml\n[mcp_servers.hs]\ncommand = %.*s\nargs = %.*s\n",
		       (int)cmd_len, cmd, (int)arr_len, arr);
	} else if (!strcmp(client, "hermes")) {
		printf("# ~/.hermes/config.yaml\nmcp_servers:\n  hs:\n    command: %.*s\n    args: %.*s\n",
		       (int)cmd_len, cmd, (int)arr_len, arr);
	} else if (!strcmp(client, "json")) {
		yajl_gen j = hs_json_new();
		yajl_gen_config(j, yajl_gen_beautify, 1);
		yajl_gen_config(j, yajl_gen_indent_string, "  ");
		yajl_gen_map_open(j);
		hs_json_key(j, "mcpServers");
		yajl_gen_map_open(j);
		hs_json_key(j, "hs");
		yajl_gen_map_open(j);
		hs_json_kstr(j, "command", self);
		hs_json_key(j, "args");
		yajl_gen_array_open(j);
		for (int i = 0; i < nargs; i++)
			hs_json_str(j, args[i]);
		yajl_gen_array_close(j);
		yajl_gen_map_close(j);
		yajl_gen_map_close(j);
		yajl_gen_map_close(j);
		const unsigned char *jb;
		size_t jl;
		yajl_gen_get_buf(j, &jb, &jl);
		while (jl > 0 && jb[jl - 1] == '\n')
			jl--;
		printf("%.*s\n", (int)jl, jb);
		yajl_gen_free(j);
	} else {
		rc = -1;
	}
	yajl_gen_free(g);
	yajl_gen_free(q);
	return rc;
}

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: hs mcp [--backend NAME] [--image IMAGE] [--workspace DIR]\n"
	        "              [--approval ask|deny|approve] [--ask-timeout SECONDS]\n"
	        "              [--handoff-after SECONDS] [--config FILE]\n"
	        "       hs mcp [options] --print-config claude|codex|hermes|json\n"
	        "\n"
	        "A Model Context Protocol server on stdin/stdout for agents (Claude Code,\n"
	        "Codex, Hermes, ...): tools run, check, session_open, session_close,\n"
	        "session_list, job_list, job_output, job_write, job_resize, job_kill, output_read, read_file,\n"
	        "write_file.\n"
	        "\n"
	        "  -b, --backend NAME        backend of the sessions (default: config 'backend')\n"
	        "  -i, --image IMAGE         image of the sessions (container backends)\n"
	        "  -w, --workspace DIR       host directory of the sessions' workspace\n"
	        "                            (default: config 'workspace')\n"
	        "      --config FILE         add FILE as a config layer (as hs --config)\n"
	        "      --approval MODE       ask, deny or approve; ask puts a command to the person\n"
	        "                            at the client by elicitation, and denies without one\n"
	        "      --ask-timeout SECONDS how long an elicitation waits for its answer (120)\n"
	        "      --handoff-after S     a run still going after S seconds goes on as a\n"
	        "                            background job, its result says which (default 50;\n"
	        "                            0: never)\n"
	        "      --print-config CLIENT print the lines that add this server to CLIENT\n"
	        "  -h, --help                show this help\n"
	        "\n"
	        "See hs-mcp(1).\n");
}

/* The program a client should start: this one, by its absolute path; else "hs" from PATH. */
static const char *
self_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0 || (size_t)n >= len - 1)
		return "hs";
	buf[n] = '\0';
	return buf;
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
		{ "ask-timeout", required_argument, NULL, 'T' },
		{ "handoff-after", required_argument, NULL, 'H' },
		{ "print-config", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct hs_mcp m = { .c = c, .cancel_fd = -1, .handoff_s = 50 };
	const char *print = NULL;
	/* The options given, for --print-config to pass on: "mcp", then flag and value pairs. */
	char *given[16] = { "mcp" };
	int n_given = 1;
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
		case 'T': {
			char *end;
			errno = 0;
			double s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(s > 0) || s > 86400) {
				hs_die_msg("--ask-timeout: '%s' is not a number of seconds between 0 and 86400",
				           optarg);
				return HS_EXIT_USAGE;
			}
			R.ask_timeout_ms = (int64_t)(s * 1000);
			break;
		}
		case 'P': print = optarg; continue;
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
		/* Every option left takes a value; kept while 16 words hold them. */
		static const char *const flags[] = { "--backend", "--image", "--workspace", "--config",
		                                     "--approval", "--ask-timeout", "--handoff-after" };
		const char *idx = strchr("biwCATH", o);
		if (idx && n_given + 2 <= (int)(sizeof(given) / sizeof(given[0]))) {
			given[n_given++] = (char *)flags[idx - "biwCATH"];
			given[n_given++] = optarg;
		}
	}
	if (optind < argc) {
		hs_die_msg("mcp takes no arguments (see hs mcp --help)");
		return HS_EXIT_USAGE;
	}
	if (print) {
		char self[PATH_MAX];
		int rc = print_config(print, self_path(self, sizeof(self)), given, n_given);
		if (rc == -1) {
			hs_die_msg("--print-config: unknown client '%s' (claude, codex, hermes or json)", print);
			return HS_EXIT_USAGE;
		}
		return rc < 0 || fflush(stdout) != 0 ? HS_EXIT_FAIL : 0;
	}
	m.mode = hs_approval_mode_resolve(c, NULL, -1);
	if (m.mode < 0) {
		hs_die_msg("unknown approval mode in the config (deny, ask or approve)");
		return HS_EXIT_USAGE;
	}
	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    pipe2(R.cancel_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		hs_die_msg("cannot create a pipe: %s", strerror(errno));
		return HS_EXIT_FAIL;
	}
	m.cancel_fd = R.cancel_pipe[0];
	/* Only replies on the protocol stream: whatever a library or a started
	 * process (a runner, a backend's tool) writes to fd 1 goes to stderr, and
	 * nothing that outlives a command holds the client's pipe open. */
	out_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (out_fd < 0 || dup2(2, 1) < 0) {
		hs_die_msg("cannot set up stdout: %s", strerror(errno));
		return HS_EXIT_FAIL;
	}
	snprintf(m.default_name, sizeof(m.default_name), "mcp-%ld-default", (long)getpid());

	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* Signals are not blocked in the worker: a mask would be inherited by every
	 * process it starts (runners, backend tools).  Whichever thread takes a
	 * stop, its byte in the stop pipe wakes the reader. */
	pthread_t wt;
	int werr = pthread_create(&wt, NULL, worker, &m);
	if (werr) {
		hs_die_msg("cannot start the worker thread: %s", strerror(werr));
		return HS_EXIT_FAIL;
	}

	read_loop();

	/* EOF: the calls already read still run; a stop cancels the running one. */
	pthread_mutex_lock(&R.mu);
	R.eof = 1;
	pthread_cond_broadcast(&R.queue_cv);
	pthread_cond_broadcast(&R.answer_cv);
	pthread_mutex_unlock(&R.mu);
	poke_running();
	after_eof();
	pthread_join(wt, NULL);
	while (R.head) {
		struct call *q = R.head;
		R.head = q->next;
		call_free(q);
	}
	hs_mcp_close_all(&m);
	close(stop_pipe[0]);
	close(stop_pipe[1]);
	close(R.cancel_pipe[0]);
	close(R.cancel_pipe[1]);
	return 0;
}
