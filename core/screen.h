/* SPDX-License-Identifier: MIT */
/*
 * screen.h - the screen a terminal would show for an output stream: the
 * stream's bytes fed through a terminal emulator (libvterm) at a size,
 * then read back as rows of UTF-8 text, the cursor and whether the
 * alternate screen is on.  Pure: no I/O, nothing but the bytes given;
 * hs_screen_render runs it in a contained child process.
 */
#ifndef HS_SCREEN_H
#define HS_SCREEN_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_gen.h>

/* The largest screen rendered, each way (the PTY window size's bound too). */
#define HS_SCREEN_SIZE_MAX 1000
/* The default size when the stream's own terminal size is not known. */
#define HS_SCREEN_ROWS_DEFAULT 24
#define HS_SCREEN_COLS_DEFAULT 80
/* The most bytes of a stream rendered (the tail of a longer stream). */
#define HS_SCREEN_FEED_MAX (1u << 20)
/*
 * The work one render may do, in cell updates: a byte can cost a whole
 * screen's worth (a line feed that scrolls, a screen erase), so a bigger
 * screen is fed fewer bytes (hs_screen_feed_bound).
 */
#define HS_SCREEN_WORK (1u << 29)
/* The longest row of cols columns in bytes: six characters of four bytes a cell. */
#define HS_SCREEN_ROW_MAX(cols) ((size_t)(cols) * 24)

struct VTerm;

struct hs_screen {
	struct VTerm *vt;
	int rows, cols;
	int alternate;  /* the alternate screen is on */
	int partial;    /* the stream's start was not fed: rendered from a later point */
	uint64_t fed;   /* bytes fed so far */
	unsigned char pend[4]; /* a UTF-8 character cut between two feeds */
	int npend, need;
	int esc, rep_plain;    /* the escape sequence state REP is tracked in */
	int seq_digits, seq_args, seq_other; /* the current sequence's bytes so far */
	unsigned rep_n;
	unsigned char last[4]; /* the last character shown, for REP */
	int nlast;
};

/*
 * A blank screen of rows x cols (rows 1..HS_SCREEN_SIZE_MAX, cols
 * 2..HS_SCREEN_SIZE_MAX: libvterm 0.1.4 writes out of bounds for a wide
 * character on a one-column screen), cursor at the top left, UTF-8 input.
 * s must not move while in use.  Returns 0, or -1 for a size out of range.
 */
int hs_screen_init(struct hs_screen *s, int rows, int cols);
/*
 * How many bytes of a stream to feed s at most: HS_SCREEN_FEED_MAX, fewer
 * for a screen so big that HS_SCREEN_WORK would not cover them (279620
 * for 24x80, 536 for 1000x1000).
 */
size_t hs_screen_feed_bound(const struct hs_screen *s);
/*
 * Line feeds start a new line at its first column (newline mode), as a
 * terminal's output processing (onlcr) shows a program's "\n": for a stream
 * that did not pass through a terminal.  Call before feeding.
 */
void hs_screen_newline(struct hs_screen *s);
/*
 * Feed len bytes of the stream; a sequence cut between two feeds goes on in
 * the next.  Malformed UTF-8 shows as U+FFFD, C1 controls are dropped.
 */
void hs_screen_feed(struct hs_screen *s, const void *buf, size_t len);
/*
 * Feed a whole stream of len bytes, at most max of them: a longer stream is
 * fed from a point near its end where a terminal would start afresh (the
 * last screen clear or reset, else a line or escape sequence start), with
 * the alternate screen set as the skipped part left it, and s->partial set.
 * cut: bytes are missing just before the last max of buf (a bounded
 * capture's dropped middle), so those are fed from a fresh start and the
 * render is partial even when len <= max.
 */
void hs_screen_feed_tail(struct hs_screen *s, const void *buf, size_t len, size_t max, int cut);
/*
 * Row r (0-based) as UTF-8 text in a new NUL-terminated buffer (*len set):
 * a wide character once for its two cells, combining characters after
 * their base, unprintable cells as spaces, trailing blanks trimmed.
 * NULL when r is out of range or on OOM.
 */
char *hs_screen_row(const struct hs_screen *s, int r, size_t *len);
/* The cursor (0-based row and column). */
void hs_screen_cursor(const struct hs_screen *s, int *row, int *col);
/*
 * Into an open map: "screen": {"rows": [...], "cursor": {"row", "col"},
 * "size": {"rows", "cols"}, "alternate": bool, "partial": bool}.
 */
void hs_screen_json(yajl_gen g, const struct hs_screen *s);
void hs_screen_free(struct hs_screen *s);

/* A rendered screen as plain data: what a render child sends back. */
struct hs_screen_shot {
	int rows, cols;
	int crow, ccol;      /* the cursor */
	int alternate, partial;
	char **row;          /* rows NUL-terminated UTF-8 rows */
	size_t *len;         /* their lengths */
};

/* s's rows, cursor and flags into *shot.  Returns 0, or -1 on OOM. */
int hs_screen_snap(const struct hs_screen *s, struct hs_screen_shot *shot);
/* Into an open map: "screen" as hs_screen_json describes it. */
void hs_screen_shot_json(yajl_gen g, const struct hs_screen_shot *s);
void hs_screen_shot_free(struct hs_screen_shot *s);
/*
 * The wire form of a shot ("HSS1", rows, cols, cursor row and column,
 * alternate, partial as 32-bit numbers, then each row as a 32-bit length
 * and its bytes), in a new buffer of *len bytes; NULL on OOM.
 */
char *hs_screen_shot_encode(const struct hs_screen_shot *s, size_t *len);
/* The largest wire form of a rows x cols shot. */
size_t hs_screen_shot_max(int rows, int cols);
/*
 * A shot from its wire form, trusted in nothing: the size must be rows x
 * cols, the cursor on the screen, the flags 0 or 1, each row valid UTF-8
 * without control characters and at most HS_SCREEN_ROW_MAX(cols) bytes,
 * and nothing may follow the last row.  Returns 0, or -1 with a one-line
 * reason in err.
 */
int hs_screen_shot_parse(const void *buf, size_t len, int rows, int cols, struct hs_screen_shot *shot,
                         char *err, size_t errlen);

/*
 * Feed s a whole kept stream all[0..len): in newline mode when newline is
 * set (output that came through a pipe, not a terminal), at most
 * hs_screen_feed_bound bytes of it; cut: the stream's middle was dropped
 * and its last tail_len bytes are the tail, so it renders from there,
 * partial.
 */
void hs_screen_stream(struct hs_screen *s, const void *all, size_t len, int newline, int cut, size_t tail_len);

struct hs_capture;
/*
 * Into an open map: "screen" (as hs_screen_json) for the bytes a bounded
 * capture kept, rendered in this process (hs_screen_stream).  "screen":
 * null for a bad size or on OOM.  hs itself renders through
 * hs_screen_render instead, in a contained child.
 */
void hs_screen_capture_json(yajl_gen g, const struct hs_capture *c, int rows, int cols, int newline);

/*
 * The screen of a capture's kept bytes, rendered by a child process that
 * can only compute (core/screen-box.c): `hs __screen`, its descriptors
 * closed but a pipe in and a pipe out, resource limits, no_new_privs and a
 * seccomp filter of read, write, exit and memory calls; killed at a 5 s
 * deadline.  Its answer is parsed by hs_screen_shot_parse.  Returns 0 with
 * *shot filled, or -1 with a one-line reason in err.
 */
int hs_screen_render(const struct hs_capture *c, int rows, int cols, int newline, struct hs_screen_shot *shot,
                     char *err, size_t errlen);
/* `hs __screen ROWS COLS NEWLINE CUT TAIL_LEN INPUT_LEN [FAULT]`: the render child. */
int hs_screen_child_main(int argc, char **argv);

#endif /* HS_SCREEN_H */
