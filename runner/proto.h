/* SPDX-License-Identifier: MIT */
/* hs-runner wire protocol: frame encoding and incremental decoding.
 *
 * A frame is a little-endian u32 length L, then L bytes: a u8 type and the
 * type's payload.  Integers in payloads are fixed-width little-endian;
 * strings are a u32 length and that many bytes (no terminator).  The
 * layout of every frame is documented in hs-runner(7).  This file is plain
 * C with libc only, so it builds both into the static runner and into the
 * core's client library.
 */
#ifndef HSR_PROTO_H
#define HSR_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* The software version, passed by the build (-DHSR_VERSION=...). */
#ifndef HSR_VERSION
#define HSR_VERSION "unknown"
#endif

/* Protocol versions this build speaks.  A peer offers a range in HELLO and
 * the daemon answers with the highest version both sides support.
 * Version 2 added the authenticated channel (KEY, CHALLENGE, AUTH); version
 * 1 had none, so it is no longer spoken: a version 1 peer is refused with
 * HSR_E_VERSION rather than served unauthenticated.  Version 3 added the
 * session shell (HSR_EXEC_SESSION) and the shell fields of EXIT.  Version 4
 * added the pseudo-terminal (HSR_EXEC_PTY, RESIZE): a core sends neither to
 * an older daemon. */
#define HSR_PROTO_MIN 3
#define HSR_PROTO_MAX 4
/* The first version with HSR_EXEC_PTY and RESIZE. */
#define HSR_PROTO_PTY 4

/* No frame (length field value) may exceed this; the decoder refuses it. */
#define HSR_MAX_FRAME (4u * 1024u * 1024u)
/* Largest data chunk the daemon puts into one OUTPUT/STATE/FILE_DATA frame
 * and the client into one STDIN or PUT frame. */
#define HSR_CHUNK (64u * 1024u)
/* Largest chunk of command output the daemon reads from a pipe at once
 * (sent as several OUTPUT frames of at most HSR_CHUNK). */
#define HSR_OUT_CHUNK (256u * 1024u)

/* Frame types.  Append only; never renumber. */
enum hsr_frame_type {
	HSR_F_HELLO = 1,     /* both ways: u32 min, u32 max, str software version */
	HSR_F_ERROR = 2,     /* daemon: u64 id, u32 code, str message */
	HSR_F_EXEC = 3,      /* client: see hsr_exec_encode() */
	HSR_F_STDIN = 4,     /* client: u64 id, bytes */
	HSR_F_STDIN_EOF = 5, /* client: u64 id */
	HSR_F_SIGNAL = 6,    /* client: u64 id, u32 signo */
	HSR_F_CANCEL = 7,    /* client: u64 id */
	HSR_F_OUTPUT = 8,    /* daemon: u64 id, u8 stream, u64 offset, bytes */
	HSR_F_EXIT = 9,      /* daemon: u64 id, i32 code, u8 timed_out, u8 cancelled,
	                        u64 dropped[1..2], u64 total[1..3], u8 shell_restarted,
	                        u32 jobs_left, str reason */
	HSR_F_STATE = 10,    /* daemon: u64 id, u8 stream (3), u64 offset, bytes */
	HSR_F_PUT = 11,      /* client: u64 id, u32 flags, u32 mode, str path, bytes */
	HSR_F_GET = 12,      /* client: u64 id, str path */
	HSR_F_FILE_DATA = 13,/* daemon: u64 id, u8 final, u64 offset, bytes */
	HSR_F_OK = 14,       /* daemon: u64 id (a PUT completed) */
	HSR_F_ACK = 15,      /* client: u64 id, u8 stream (0 = the exit), u64 offset */
	HSR_F_CREDIT = 16,   /* client: u64 id, u64 bytes */
	HSR_F_ATTACH = 17,   /* client: u64 credit; daemon: u32 n, n entries */
	HSR_F_PING = 18,     /* client: u64 token */
	HSR_F_PONG = 19,     /* daemon: u64 token */
	HSR_F_SHUTDOWN = 20, /* client: u32 grace_ms (HSR_GRACE_DEFAULT: each command's own) */
	HSR_F_KEY = 21,      /* client: u8[32] session key (to an --attach proxy, or to
	                        provision a daemon started without one) */
	HSR_F_CHALLENGE = 22,/* client: u8[32] nonce */
	HSR_F_AUTH = 23,     /* daemon: u8 keyed, u8[32] nonce, u8[32] proof;
	                        client: u8[32] proof */
	HSR_F_JOBS = 24,     /* client: u64 token; daemon: u64 token, u32 n, n entries
	                        (see hsr_jobs_entry_next()) */
	HSR_F_WAITING = 25,  /* daemon: u64 id, u8 waiting (1: the command is blocked
	                        reading its stdin with nothing pending; 0: no longer).
	                        Sent only for an EXEC with HSR_EXEC_REPORT_WAIT */
	HSR_F_RESIZE = 26,   /* client: u64 id, u16 rows, u16 cols (a PTY command's
	                        window size) */
	HSR_F_READ = 27,     /* client: u64 token, u64 command id, u8 stream, u64 offset,
	                        u32 max: read back kept output (HSR_EXEC_KEEP) */
	HSR_F_RANGE = 28,    /* daemon: u64 token, u8 stream, u64 offset (of the first
	                        byte: the first kept one at or after the asked offset),
	                        u64 total (bytes the stream produced so far), u8 ended
	                        (the command has exited: total is final), bytes */
	HSR_F_SPILL = 29,    /* client: u64 token, u64 command id: write the command's
	                        kept output to out/ID.stdout and out/ID.stderr in the
	                        runtime dir; answered by OK or ERROR with the token */
	HSR_F_EGRESS_LISTEN = 30, /* client: u64 token; daemon: u64 token, u32 port.  The
	                             daemon listens on 127.0.0.1:port (its own network
	                             namespace) and tunnels every connection to this stream */
	HSR_F_EGRESS_CONN = 31,   /* daemon: u64 conn (a connection was accepted) */
	HSR_F_EGRESS_DATA = 32,   /* both: u64 conn, bytes */
	HSR_F_EGRESS_EOF = 33,    /* both: u64 conn (no more bytes this way: half close) */
	HSR_F_EGRESS_CLOSE = 34,  /* both: u64 conn (the connection is gone or refused) */
	                          /* A conn's window: CREDIT with the conn id (see
	                             HSR_EGRESS_ID_BIT) grants more EGRESS_DATA bytes */
	HSR_F_MAX_TYPE = 34
};

/* ERROR codes.  Append only. */
enum hsr_error_code {
	HSR_E_PROTO = 1,    /* malformed or unexpected frame */
	HSR_E_VERSION = 2,  /* no common protocol version */
	HSR_E_BUSY = 3,     /* the id is already in use */
	HSR_E_NOENT = 4,    /* no command or transfer with that id */
	HSR_E_EXEC = 5,     /* the daemon could not start the command */
	HSR_E_FILE = 6,     /* a PUT or GET failed */
	HSR_E_LIMIT = 7,    /* a resource limit was hit */
	HSR_E_STOPPING = 8, /* the daemon is shutting down */
	HSR_E_AUTH = 9      /* the stream did not prove the session key */
};

/* Egress connection ids have this bit set, so a CREDIT names either a
 * command or a tunnelled connection (command ids stay below 2^63). */
#define HSR_EGRESS_ID_BIT (UINT64_C(1) << 63)
/* EGRESS_DATA bytes the daemon sends per connection before the first CREDIT. */
#define HSR_EGRESS_WINDOW (1024u * 1024u)

/* EXEC flags. */
#define HSR_EXEC_STDIN_PIPE 0x1u /* stdin is a pipe fed by STDIN frames */
#define HSR_EXEC_WANT_STATE 0x2u /* fd 3 is a pipe read as STATE frames */
#define HSR_EXEC_MERGE_ENV 0x4u  /* envp overrides the daemon's own environment
                                    (a sandbox's image environment) instead of
                                    replacing it; the daemon's HS_* are dropped */
#define HSR_EXEC_SESSION 0x8u    /* run in the session shell: argv is SHELL, COMMAND,
                                    START_DIR, CWD ("": the shell's), then NAME=VALUE
                                    for this command only */
#define HSR_EXEC_REPORT_WAIT 0x10u /* send WAITING frames for this command (a daemon
                                      that does not know the flag ignores it) */
#define HSR_EXEC_PTY 0x20u      /* run on a new pseudo-terminal; the payload ends with
                                   u16 rows, u16 cols (protocol 4) */
#define HSR_EXEC_KEEP 0x40u      /* keep the command's whole stdout and stderr for READ
                                    and SPILL after it ended; the EXEC's keep field is
                                    the budget for kept output of the whole daemon
                                    (oldest commands' output evicted first) */

/* Bounds of a PTY window size (rows and cols each). */
#define HSR_PTY_MIN 1
#define HSR_PTY_MAX 1000

/* PUT flags. */
#define HSR_PUT_FIRST 0x1u /* first chunk: create the temporary file */
#define HSR_PUT_FINAL 0x2u /* last chunk: set the mode and rename into place */
#define HSR_PUT_NOSYNC 0x4u /* on the last chunk: rename without fsync (scratch data
                               such as the shell snapshot; still atomic, not durable) */

/* Streams as numbered in OUTPUT, STATE, ACK and the attach list. */
#define HSR_STREAM_EXIT 0
#define HSR_STREAM_STDOUT 1
#define HSR_STREAM_STDERR 2
#define HSR_STREAM_STATE 3

/* SHUTDOWN grace meaning "each command's own grace from its EXEC". */
#define HSR_GRACE_DEFAULT 0xffffffffu

/* Pending (received, not yet taken by the pipe) stdin bytes per command
 * above which the daemon refuses more: ERROR HSR_E_LIMIT and stdin closed. */
#define HSR_STDIN_MAX (16u * 1024u * 1024u)

/* Credit meaning "never throttle". */
#define HSR_CREDIT_UNLIMITED UINT64_MAX

/* A growable output buffer. */
struct hsr_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	int failed; /* set when an allocation failed; the content is then invalid */
};

void hsr_buf_init(struct hsr_buf *b);
void hsr_buf_free(struct hsr_buf *b);
/* Drops the first n bytes (they were written out). */
void hsr_buf_consume(struct hsr_buf *b, size_t n);
void hsr_buf_put(struct hsr_buf *b, const void *p, size_t n);
void hsr_buf_u8(struct hsr_buf *b, uint8_t v);
void hsr_buf_u16(struct hsr_buf *b, uint16_t v);
void hsr_buf_u32(struct hsr_buf *b, uint32_t v);
void hsr_buf_u64(struct hsr_buf *b, uint64_t v);
void hsr_buf_str(struct hsr_buf *b, const char *s);
/* Starts a frame of the given type and returns the position to pass to
 * hsr_frame_end(), which patches the length field. */
size_t hsr_frame_begin(struct hsr_buf *b, uint8_t type);
void hsr_frame_end(struct hsr_buf *b, size_t start);

/* A bounds-checked payload reader.  Any read past the end sets err and
 * yields zeros, so parsers check err once at the end. */
struct hsr_reader {
	const uint8_t *p;
	size_t left;
	int err;
};

void hsr_reader_init(struct hsr_reader *r, const void *p, size_t len);
uint8_t hsr_get_u8(struct hsr_reader *r);
uint16_t hsr_get_u16(struct hsr_reader *r);
uint32_t hsr_get_u32(struct hsr_reader *r);
uint64_t hsr_get_u64(struct hsr_reader *r);
/* Returns a pointer to len bytes of string data (not terminated). */
const char *hsr_get_str(struct hsr_reader *r, uint32_t *len);

/* One decoded frame; payload points into the decoder's buffer and stays
 * valid until the next hsr_decoder_feed(). */
struct hsr_frame {
	uint8_t type;
	const uint8_t *payload;
	size_t len;
};

/* An incremental decoder: feed it any bytes, take whole frames out. */
struct hsr_decoder {
	uint8_t *buf;
	size_t len;  /* bytes held */
	size_t pos;  /* start of the first frame not yet returned */
	size_t cap;
	uint32_t max_frame;
	int error;   /* sticky: a frame was too large or empty */
};

void hsr_decoder_init(struct hsr_decoder *d, uint32_t max_frame);
void hsr_decoder_free(struct hsr_decoder *d);
/* Copies len bytes in.  Returns 0, or -1 when out of memory. */
int hsr_decoder_feed(struct hsr_decoder *d, const void *data, size_t len);
/* Room for at least want more bytes at the end of the buffer, to read
 * into directly (no copy); hsr_decoder_commit() then adds the n bytes
 * read.  Returns NULL when out of memory.  Like hsr_decoder_feed(), it ends
 * the validity of frames returned before. */
uint8_t *hsr_decoder_reserve(struct hsr_decoder *d, size_t want);
void hsr_decoder_commit(struct hsr_decoder *d, size_t n);
/* Returns 1 and fills f when a whole frame is buffered, 0 when more bytes
 * are needed, -1 when the stream is invalid (the error is sticky). */
int hsr_decoder_next(struct hsr_decoder *d, struct hsr_frame *f);

/* A decoded message of any type except the EXEC and attach-list bodies,
 * which have their own decoders.  Fields not used by a type are zero. */
struct hsr_msg {
	uint8_t type;
	uint64_t id;
	uint8_t stream;
	uint64_t offset;
	uint64_t value;      /* CREDIT bytes, PING/PONG token, ATTACH credit, SHUTDOWN grace */
	uint32_t vmin, vmax; /* HELLO */
	uint32_t code;       /* ERROR */
	uint32_t signo;      /* SIGNAL */
	uint16_t rows, cols; /* RESIZE */
	uint32_t flags;      /* PUT */
	uint32_t mode;       /* PUT */
	int32_t exit_code;   /* EXIT */
	uint8_t timed_out, cancelled, final; /* final: FILE_DATA's, WAITING's waiting */
	uint64_t dropped[4]; /* EXIT, indexed by stream */
	uint64_t total[4];   /* EXIT, indexed by stream */
	const char *str;     /* HELLO version, ERROR message, PUT/GET path */
	uint32_t str_len;
	const uint8_t *data; /* STDIN, OUTPUT, STATE, PUT, FILE_DATA bytes; ATTACH list */
	size_t len;
	uint32_t count;      /* ATTACH reply: number of entries */
	uint8_t keyed;       /* AUTH from the daemon: it holds a key */
	uint8_t restarted;   /* EXIT: the session shell lost its state (reason in str) */
	uint32_t jobs;       /* EXIT: processes the command left running */
	const uint8_t *proof;/* AUTH: the 32-byte proof; KEY, CHALLENGE and the
	                        daemon's AUTH nonce travel in data (32 bytes) */
	uint32_t port;       /* EGRESS_LISTEN from the daemon (token in value; conn ids in id) */
};

/* Decodes and validates the payload of frame f.  Returns 0, or -1 when the
 * payload is malformed.  EXEC payloads are only checked for structure;
 * use hsr_exec_decode() to take them apart. */
int hsr_msg_decode(const struct hsr_frame *f, int from_daemon, struct hsr_msg *m);
/* Appends the frame for m (any type except EXEC and an ATTACH reply). */
void hsr_msg_encode(struct hsr_buf *b, const struct hsr_msg *m, int from_daemon);

/* A decoded EXEC request: one allocation, NUL-terminated copies. */
struct hsr_exec_req {
	uint64_t id;
	uint32_t flags;
	int64_t deadline_ms;
	int64_t grace_ms;
	uint64_t head, tail;
	uint64_t credit;
	uint16_t rows, cols; /* HSR_EXEC_PTY: the window size */
	uint64_t keep;   /* HSR_EXEC_KEEP: the budget for kept output (bytes) */
	char *cwd;
	char **argv; /* NULL-terminated */
	char **envp; /* NULL-terminated */
};

void hsr_exec_encode(struct hsr_buf *b, uint64_t id, uint32_t flags,
		     int64_t deadline_ms, int64_t grace_ms, uint64_t head,
		     uint64_t tail, uint64_t credit, uint64_t keep, const char *cwd,
		     const char *const *argv, const char *const *envp);
/* The same with the window size that HSR_EXEC_PTY in flags appends. */
void hsr_exec_encode_pty(struct hsr_buf *b, uint64_t id, uint32_t flags,
			 int64_t deadline_ms, int64_t grace_ms, uint64_t head,
			 uint64_t tail, uint64_t credit, uint64_t keep, const char *cwd,
			 const char *const *argv, const char *const *envp,
			 uint16_t rows, uint16_t cols);
/* Returns a new request (free() it), or NULL when the payload is malformed
 * (empty argv, an environment entry without '=', an embedded NUL) or
 * memory ran out; errno says which (EINVAL or ENOMEM). */
struct hsr_exec_req *hsr_exec_decode(const uint8_t *p, size_t len);

/* One command in an ATTACH reply.  Arrays are indexed by stream 1..3. */
struct hsr_attach_entry {
	uint64_t id;
	int finished;      /* the command has exited (its EXIT follows the output) */
	uint64_t acked[4]; /* the offset output will be resent from */
	uint64_t end[4];   /* bytes produced so far */
};

#define HSR_ATTACH_ENTRY_SIZE (8 + 1 + 6 * 8)
void hsr_attach_entry_encode(struct hsr_buf *b, const struct hsr_attach_entry *e);
/* Decodes entry i of an ATTACH reply decoded by hsr_msg_decode(). */
void hsr_attach_entry_decode(const struct hsr_msg *m, uint32_t i, struct hsr_attach_entry *e);

/* One background job of the session shell in a JOBS reply: the processes a
 * completed command left running.  Entry: u64 id (the command's), u8
 * alive, u32 processes, u64 stdout log bytes, u64 stderr log bytes, str
 * command. */
struct hsr_job_entry {
	uint64_t id;
	int alive;
	uint32_t procs;
	uint64_t log_bytes[3]; /* indexed by stream 1, 2 */
	const char *command;   /* not terminated */
	uint32_t command_len;
};

/* Takes the next entry of a JOBS reply's data; returns 1, or 0 at the end
 * or on a malformed entry. */
int hsr_jobs_entry_next(struct hsr_reader *r, struct hsr_job_entry *e);
void hsr_jobs_entry_encode(struct hsr_buf *b, const struct hsr_job_entry *e);

/* Returns a static name for a frame type, for messages. */
const char *hsr_frame_name(int type);

#endif
