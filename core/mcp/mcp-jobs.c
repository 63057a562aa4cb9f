/* SPDX-License-Identifier: MIT */
/*
 * mcp-jobs.c - the job and file tools of `hs mcp`: job_list, job_output,
 * job_kill (background execs "jN" and what the session shell left running,
 * "sID", as serve's job op names them), read_file and write_file (through
 * the runner, gated like serve's put_file/get_file).
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/job-ops.h"
#include "core/json.h"
#include "core/mcp/mcp.h"
#include "core/serve/serve-req.h"

#define SHELL_JOBS_MAX 64

/* Bytes as key (UTF-8 text when valid, else base64) and "encoding" saying which. */
static void
bytes_json(yajl_gen g, const char *key, const void *buf, size_t len)
{
	if (hs_utf8_valid(buf, len)) {
		hs_json_key(g, key);
		yajl_gen_string(g, buf, len);
		hs_json_kstr(g, "encoding", "utf8");
		return;
	}
	char *enc = malloc(4 * ((len + 2) / 3) + 1);
	size_t n = enc ? hs_base64_encode(buf, len, enc) : 0;
	hs_json_key(g, key);
	yajl_gen_string(g, (const unsigned char *)(enc ? enc : ""), n);
	hs_json_kstr(g, "encoding", "base64");
	free(enc);
}

/* A job name: 'j' with *n (a background exec), 's' with *id (a session-shell job), else 0. */
static int
job_kind(const char *name, unsigned *n, unsigned long long *id)
{
	char end;
	if (name && sscanf(name, "j%u%c", n, &end) == 1)
		return 'j';
	if (name && sscanf(name, "s%llu%c", id, &end) == 1)
		return 's';
	return 0;
}

/* The session and job a job tool names; 'j' or 's' with *ms and the job's number or id. */
static int
job_target(struct hs_mcp *m, yajl_val args, struct hs_mcp_sess **ms, unsigned *n,
           unsigned long long *id, char *err, size_t errlen)
{
	const char *name = hs_serve_str(args, "job");
	int kind = job_kind(name, n, id);
	if (!kind) {
		snprintf(err, errlen, "job must name a job as job_list shows it: \"j1\" (a background "
		         "run) or \"s123\" (left running by a command)");
		return 0;
	}
	*ms = hs_mcp_session(m, hs_serve_str(args, "session"), err, errlen);
	return *ms ? kind : 0;
}

/* The background exec numbered n, its events taken first; NULL with err. */
static struct hs_job *
exec_job(struct hs_mcp_sess *ms, unsigned n, char *err, size_t errlen)
{
	if (hs_conn_pump(&ms->hs.cn, 0, err, errlen) < 0)
		return NULL;
	struct hs_job *j = hs_conn_job(&ms->hs.cn, n);
	if (!j)
		snprintf(err, errlen, "no job j%u in session '%s' (see job_list)", n, ms->shown);
	return j;
}

/* The session-shell job with runner id id (into buf); NULL with err. */
static struct hs_shell_job *
shell_job(struct hs_mcp_sess *ms, unsigned long long id, struct hs_shell_job *buf, char *err,
          size_t errlen)
{
	int n = hs_conn_shell_jobs(&ms->hs.cn, buf, SHELL_JOBS_MAX, err, errlen);
	for (int i = 0; i < n; i++)
		if (buf[i].id == id)
			return &buf[i];
	if (n >= 0)
		snprintf(err, errlen, "no job s%llu in session '%s' (see job_list)", id, ms->shown);
	return NULL;
}

int
hs_mcp_job_list(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	struct hs_shell_job sj[SHELL_JOBS_MAX];
	struct hs_mcp_sess *ms = hs_mcp_session(m, hs_serve_str(args, "session"), err, errlen);
	if (!ms || hs_conn_pump(&ms->hs.cn, 0, err, errlen) < 0)
		return -1;
	int ns = hs_conn_shell_jobs(&ms->hs.cn, sj, SHELL_JOBS_MAX, err, errlen);
	if (ns < 0)
		return -1;
	yajl_gen_map_open(out);
	hs_json_kstr(out, "session", ms->shown);
	hs_json_key(out, "jobs");
	yajl_gen_array_open(out);
	for (const struct hs_job *j = ms->hs.cn.jobs; j; j = j->next) {
		char name[32];
		snprintf(name, sizeof(name), "j%u", j->number);
		yajl_gen_map_open(out);
		hs_json_kstr(out, "job", name);
		hs_json_kstr(out, "kind", j->holds_shell ? "handed_off" : "background");
		hs_json_kstr(out, "command", j->command);
		hs_job_state_json(out, j);
		yajl_gen_map_close(out);
	}
	for (int i = 0; i < ns; i++) {
		yajl_gen_map_open(out);
		hs_shell_job_json(out, &sj[i]);
		hs_json_kstr(out, "kind", "shell");
		yajl_gen_map_close(out);
	}
	yajl_gen_array_close(out);
	yajl_gen_map_close(out);
	return 0;
}

/* Cut a chunk at max bytes, not inside a UTF-8 sequence when it can help it (a chunk
 * read with 3 bytes to spare shows where the sequence at max ends). */
static size_t
chunk_len(const char *data, size_t len, size_t max)
{
	if (len <= max)
		return len;
	size_t n = max;
	for (int back = 0; back < 3 && n > 0 && ((unsigned char)data[n] & 0xC0) == 0x80; back++)
		n--;
	return n ? n : max;
}

/*
 * The screen of job j for job_output's screen: the shot, and its rows as
 * the call's text content (what a person would read).  0, or -1 with err.
 */
static int
job_screen(struct hs_mcp *m, yajl_val args, const struct hs_job *j, struct hs_screen_shot *shot,
           char *err, size_t errlen)
{
	struct hs_job_op_err e;
	if (hs_job_screen(args, j, shot, &e) < 0) {
		snprintf(err, errlen, "screen: %s", e.why);
		return -1;
	}
	size_t total = 1;
	for (int r = 0; r < shot->rows; r++)
		total += shot->len[r] + 1;
	free(m->call_text);
	if (!(m->call_text = malloc(total)))
		return 0; /* the structured content has the rows too */
	size_t at = 0;
	for (int r = 0; r < shot->rows; r++) {
		memcpy(m->call_text + at, shot->row[r], shot->len[r]);
		at += shot->len[r];
		m->call_text[at++] = '\n';
	}
	m->call_text[at] = '\0';
	return 0;
}

int
hs_mcp_job_output(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	struct hs_mcp_sess *ms;
	unsigned n = 0;
	unsigned long long id = 0;
	int kind = job_target(m, args, &ms, &n, &id, err, errlen);
	const char *st = hs_serve_str(args, "stream");
	uint64_t off = hs_serve_uint(args, "offset", 0);
	uint64_t max = hs_serve_uint(args, "max_bytes", HS_MCP_CHUNK_MAX);
	if (!kind)
		return -1;
	if (st && strcmp(st, "stdout") && strcmp(st, "stderr")) {
		snprintf(err, errlen, "stream must be \"stdout\" or \"stderr\"");
		return -1;
	}
	int stream = st && !strcmp(st, "stderr") ? 2 : 1;
	int screen = hs_serve_true(args, "screen");
	if (screen && kind != 'j') {
		snprintf(err, errlen, "screen is for a job started by run (\"jN\"), not for %s",
		         hs_serve_str(args, "job"));
		return -1;
	}
	if (max == 0 || max > HS_MCP_CHUNK_MAX)
		max = HS_MCP_CHUNK_MAX;

	char *data = NULL;
	const char *bytes;
	struct hs_screen_shot shot;
	size_t len = 0, total = 0;
	uint64_t next = 0, from = off;
	int gap = 0;
	struct hs_job *j = NULL;
	struct hs_shell_job sj[SHELL_JOBS_MAX], *s = NULL;
	if (kind == 'j') {
		if (!(j = exec_job(ms, n, err, errlen)))
			return -1;
		if (screen && job_screen(m, args, j, &shot, err, errlen) < 0)
			return -1;
		data = hs_capture_from(&j->cap[stream], off, &len, &next, &gap);
		if (!data) {
			snprintf(err, errlen, "out of memory");
			if (screen)
				hs_screen_shot_free(&shot);
			return -1;
		}
		bytes = data;
		total = (size_t)j->cap[stream].total;
		if (off > total)
			from = total;
	} else {
		size_t at = 0;
		if (!(s = shell_job(ms, id, sj, err, errlen)) ||
		    hs_conn_shell_job_read(&ms->hs.cn, s, stream, off, (size_t)max + 3, (void **)&data,
		                           &at, &len, &total, err, errlen) < 0)
			return -1;
		bytes = data ? data + at : "";
		from = at;
		next = at + len;
	}
	size_t take = chunk_len(bytes, len, (size_t)max);
	if (take < len)
		next = from + take;
	yajl_gen_map_open(out);
	hs_json_kstr(out, "job", hs_serve_str(args, "job"));
	hs_json_kstr(out, "stream", stream == 1 ? "stdout" : "stderr");
	hs_json_kint(out, "offset", (long long)from);
	bytes_json(out, "data", bytes, take);
	hs_json_kint(out, "next_offset", (long long)next);
	hs_json_kint(out, "total_bytes", (long long)total);
	hs_json_kbool(out, "gap", gap);
	if (j)
		hs_job_state_json(out, j);
	else
		hs_json_kbool(out, "running", s->alive);
	if (screen) {
		hs_screen_shot_json(out, &shot);
		hs_screen_shot_free(&shot);
	}
	yajl_gen_map_close(out);
	free(data);
	return 0;
}

/* The running background job ("jN") a job_write or job_resize names; NULL with err. */
static struct hs_job *
input_job(struct hs_mcp *m, yajl_val args, struct hs_mcp_sess **ms, char *err, size_t errlen)
{
	unsigned n = 0;
	unsigned long long id = 0;
	int kind = job_target(m, args, ms, &n, &id, err, errlen);
	if (kind == 's')
		snprintf(err, errlen, "%s was left running by a command and takes no input: start the "
		         "program with run and pty or stdin_open true to drive it", hs_serve_str(args, "job"));
	return kind == 'j' ? exec_job(*ms, n, err, errlen) : NULL;
}

static void
job_done_json(yajl_gen out, yajl_val args, const struct hs_job *j)
{
	yajl_gen_map_open(out);
	hs_json_kstr(out, "job", hs_serve_str(args, "job"));
	hs_job_state_json(out, j);
}

int
hs_mcp_job_write(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	const char *text = hs_serve_str(args, "text"), *b64 = hs_serve_str(args, "base64");
	int eof = hs_serve_true(args, "eof");
	struct hs_mcp_sess *ms;
	struct hs_job_op_err e;
	if ((text && b64) || (!text && !b64 && !eof)) {
		snprintf(err, errlen, "job_write needs \"text\" or \"base64\" (not both), or \"eof\": true");
		return -1;
	}
	const void *data = text;
	size_t len = text ? strlen(text) : 0;
	unsigned char *dec = NULL;
	if (b64) {
		size_t bl = strlen(b64);
		long dl = (dec = malloc(bl / 4 * 3 + 3)) ? hs_base64_decode(b64, bl, dec) : -1;
		if (dl < 0) {
			snprintf(err, errlen, dec ? "base64 is not valid base64" : "out of memory");
			free(dec);
			return -1;
		}
		data = dec;
		len = (size_t)dl;
	}
	struct hs_job *j = input_job(m, args, &ms, err, errlen);
	int rc = j ? hs_job_write(&ms->hs, j, data, len, eof, &e) : -1;
	free(dec);
	if (j && rc < 0)
		snprintf(err, errlen, "%s%s", !strcmp(e.code, "denied") ? "job_write refused: " : "", e.why);
	if (rc < 0)
		return -1;
	job_done_json(out, args, j);
	hs_json_kint(out, "written", (long long)len);
	yajl_gen_map_close(out);
	return 0;
}

int
hs_mcp_job_resize(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	struct hs_mcp_sess *ms;
	struct hs_job_op_err e;
	struct hs_job *j = input_job(m, args, &ms, err, errlen);
	if (!j)
		return -1;
	if (hs_job_resize(&ms->hs, j, args, &e) < 0) {
		snprintf(err, errlen, "%s", e.why);
		return -1;
	}
	job_done_json(out, args, j);
	hs_json_kint(out, "rows", (long long)j->pty_rows);
	hs_json_kint(out, "cols", (long long)j->pty_cols);
	yajl_gen_map_close(out);
	return 0;
}

int
hs_mcp_output_read(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	struct hs_job_op_err e;
	struct hs_mcp_sess *ms = hs_mcp_session(m, hs_serve_str(args, "session"), err, errlen);
	if (!ms || hs_conn_pump(&ms->hs.cn, 0, err, errlen) < 0)
		return -1;
	yajl_gen_map_open(out);
	if (hs_output_range_json(&ms->hs, args, out, &e) < 0) {
		snprintf(err, errlen, "%s", e.why);
		return -1;
	}
	yajl_gen_map_close(out);
	return 0;
}

int
hs_mcp_job_kill(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	struct hs_mcp_sess *ms;
	unsigned n = 0;
	unsigned long long id = 0;
	int kind = job_target(m, args, &ms, &n, &id, err, errlen), killed;
	if (!kind)
		return -1;
	if (kind == 'j') {
		struct hs_job *j = exec_job(ms, n, err, errlen);
		if (!j)
			return -1;
		killed = !j->done && hs_conn_job_kill(&ms->hs.cn, j) == 0;
	} else {
		struct hs_shell_job sj[SHELL_JOBS_MAX], *s = shell_job(ms, id, sj, err, errlen);
		if (!s)
			return -1;
		int k = hs_conn_shell_job_signal(&ms->hs.cn, s->id, SIGTERM, err, errlen);
		if (k < 0)
			return -1;
		killed = k == 0;
	}
	yajl_gen_map_open(out);
	hs_json_kstr(out, "job", hs_serve_str(args, "job"));
	hs_json_kbool(out, "killed", killed);
	yajl_gen_map_close(out);
	return 0;
}

/* The session and absolute path a file tool names, past the gate; NULL with err. */
static struct hs_mcp_sess *
file_target(struct hs_mcp *m, yajl_val args, int put, const char **path, char *err, size_t errlen)
{
	*path = hs_serve_str(args, "path");
	if (!*path || (*path)[0] != '/') {
		snprintf(err, errlen, "path must be an absolute path inside the sandbox");
		return NULL;
	}
	struct hs_mcp_sess *ms = hs_mcp_session(m, hs_serve_str(args, "session"), err, errlen);
	if (!ms)
		return NULL;
	struct hs_approval_out v;
	if (!hs_session_file_gate(&ms->hs, *path, put, &v)) {
		snprintf(err, errlen, "%s", v.why);
		return NULL;
	}
	return ms;
}

int
hs_mcp_read_file(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	const char *path;
	struct hs_mcp_sess *ms = file_target(m, args, 0, &path, err, errlen);
	void *buf = NULL;
	size_t len = 0;
	char e[1024];
	if (!ms)
		return -1;
	if (hs_conn_get(&ms->hs.cn, path, HS_MCP_FILE_MAX, &buf, &len, e, sizeof(e)) < 0) {
		snprintf(err, errlen, "read_file: %s (at most %u bytes are read: read a larger file in "
		         "parts with run, e.g. head -c, tail -c or dd)", e, HS_MCP_FILE_MAX);
		return -1;
	}
	yajl_gen_map_open(out);
	hs_json_kstr(out, "path", path);
	hs_json_kint(out, "size", (long long)len);
	bytes_json(out, "content", buf, len);
	yajl_gen_map_close(out);
	free(buf);
	return 0;
}

int
hs_mcp_write_file(struct hs_mcp *m, yajl_val args, yajl_gen out, char *err, size_t errlen)
{
	const char *text = hs_serve_str(args, "content");
	const char *enc = hs_serve_str(args, "encoding");
	uint64_t mode = hs_serve_uint(args, "mode", 0644);
	const char *path;
	if (!text || (enc && strcmp(enc, "utf8") && strcmp(enc, "base64")) || mode > 07777) {
		snprintf(err, errlen, "write_file needs \"content\" (a string), \"encoding\" utf8 or "
		         "base64, and \"mode\" (permission bits, at most 07777)");
		return -1;
	}
	size_t tl = strlen(text);
	int b64 = enc && !strcmp(enc, "base64");
	if ((b64 ? tl / 4 * 3 : tl) > HS_MCP_FILE_MAX) {
		snprintf(err, errlen, "write_file: content is larger than %u bytes: write it in parts "
		         "(e.g. write_file pieces and join them with cat in run)", HS_MCP_FILE_MAX);
		return -1;
	}
	unsigned char *dec = NULL;
	const void *data = text;
	size_t len = tl;
	if (b64) {
		long dl;
		dec = malloc(tl / 4 * 3 + 3);
		if (!dec || (dl = hs_base64_decode(text, tl, dec)) < 0) {
			snprintf(err, errlen, dec ? "content is not valid base64" : "out of memory");
			free(dec);
			return -1;
		}
		data = dec;
		len = (size_t)dl;
	}
	struct hs_mcp_sess *ms = file_target(m, args, 1, &path, err, errlen);
	int rc = ms ? hs_conn_put(&ms->hs.cn, path, (uint32_t)mode, data, len, 1, err, errlen) : -1;
	free(dec);
	if (rc < 0)
		return -1;
	yajl_gen_map_open(out);
	hs_json_kstr(out, "path", path);
	hs_json_kint(out, "size", (long long)len);
	yajl_gen_map_close(out);
	return 0;
}
