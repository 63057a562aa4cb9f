/* SPDX-License-Identifier: MIT */
/*
 * screen.c - render a terminal output stream into the screen a person would
 * see, through libvterm (Debian's libvterm-dev).  The stream is whatever a
 * sandboxed command wrote, so nothing in it is trusted: the size is bounded,
 * the bytes fed are bounded, answers the terminal would send back (device
 * attributes, cursor reports) are dropped, and the text read back is always
 * valid UTF-8.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vterm.h>

#include "core/capture.h"
#include "core/json.h"
#include "core/screen.h"

/* What the terminal would send back to the program: nobody reads it here. */
static void
discard_output(const char *s, size_t len, void *user)
{
	(void)s;
	(void)len;
	(void)user;
}

static int
on_termprop(VTermProp prop, VTermValue *val, void *user)
{
	struct hs_screen *s = user;
	if (prop == VTERM_PROP_ALTSCREEN)
		s->alternate = val->boolean != 0;
	return 1;
}

static const VTermScreenCallbacks screen_callbacks = {
	.settermprop = on_termprop,
};

int
hs_screen_init(struct hs_screen *s, int rows, int cols)
{
	memset(s, 0, sizeof(*s));
	if (rows < 1 || rows > HS_SCREEN_SIZE_MAX || cols < 2 || cols > HS_SCREEN_SIZE_MAX)
		return -1;
	s->vt = vterm_new(rows, cols);
	if (!s->vt)
		return -1;
	s->rows = rows;
	s->cols = cols;
	vterm_set_utf8(s->vt, 1);
	vterm_output_set_callback(s->vt, discard_output, NULL);
	VTermScreen *scr = vterm_obtain_screen(s->vt);
	vterm_screen_set_callbacks(scr, &screen_callbacks, s);
	vterm_screen_enable_altscreen(scr, 1);
	vterm_screen_reset(scr, 1);
	return 0;
}

/* Bytes on their way to libvterm, passed on a block at a time. */
struct clean_out {
	struct hs_screen *s;
	size_t n;
	char buf[4096];
};

static void
out_bytes(struct clean_out *o, const void *p, size_t n)
{
	if (o->n + n > sizeof(o->buf)) {
		vterm_input_write(o->s->vt, o->buf, o->n);
		o->n = 0;
	}
	memcpy(o->buf + o->n, p, n);
	o->n += n;
}

size_t
hs_screen_feed_bound(const struct hs_screen *s)
{
	size_t n = HS_SCREEN_WORK / ((size_t)s->rows * (size_t)s->cols);
	return n < HS_SCREEN_FEED_MAX ? n : HS_SCREEN_FEED_MAX;
}

void
hs_screen_newline(struct hs_screen *s)
{
	/* LNM, set mode 20: the stream can still turn it off. */
	vterm_input_write(s->vt, "\033[20h", 5);
}

/* Where the stream is, as far as REP needs to know (see pass_ascii). */
enum { ESC_GROUND, ESC_START, ESC_CSI, ESC_STRING, ESC_DCS };

/* A character shown in the ground state: the one REP repeats. */
static void
out_text(struct clean_out *o, const unsigned char *p, int n)
{
	struct hs_screen *s = o->s;
	if (s->esc == ESC_GROUND) {
		memcpy(s->last, p, (size_t)n);
		s->nlast = n;
	}
	out_bytes(o, p, (size_t)n);
}

/* A UTF-8 character in pend is complete: pass it on if it is one to show. */
static void
out_char(struct clean_out *o, const unsigned char *pend, int n)
{
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	uint32_t c = pend[0] & (0x7f >> n);
	for (int i = 1; i < n; i++)
		c = (c << 6) | (pend[i] & 0x3f);
	if (c >= 0x80 && c < 0xa0)
		return;
	if (c < min[n] || (c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
		out_text(o, (const unsigned char *)"\xef\xbf\xbd", 3);
	else
		out_text(o, pend, n);
}

/* The most digits of one parameter, parameters, and other bytes of one
 * escape sequence passed on; the rest of a longer one is dropped. */
#define SEQ_DIGITS_MAX 5
#define SEQ_ARGS_MAX 12
#define SEQ_OTHER_MAX 4

/*
 * An ASCII byte.  Defects of libvterm 0.1.4 are kept away here.  A CSI
 * with many ':' separators overflows its argument array, so sequences are
 * cut to SEQ_ARGS_MAX parameters of SEQ_DIGITS_MAX digits (no overflow of a
 * parameter's value either) and SEQ_OTHER_MAX leader or intermediate bytes.
 * REP (CSI Pn b, repeat the last character) loops for ever when that
 * character had no width (none yet, or a lone combining mark), so REP is
 * done here: its final byte becomes one libvterm ignores, and the character
 * goes out Pn times (to the row's end).  Any CSI ending in 'b' is
 * neutralised, whatever came before it, so a REP never reaches libvterm
 * even where this tracker and its parser disagree.
 */
static void
pass_ascii(struct clean_out *o, unsigned char c)
{
	struct hs_screen *s = o->s;
	if (c == 0x1b) {
		s->esc = ESC_START;
		s->seq_digits = s->seq_args = s->seq_other = 0;
		out_bytes(o, &c, 1);
		return;
	}
	switch (s->esc) {
	case ESC_GROUND:
		if (c >= 0x20 && c < 0x7f) {
			out_text(o, &c, 1);
			return;
		}
		break;
	case ESC_START:
		if (c == '[') {
			s->esc = ESC_CSI;
			s->rep_plain = 1;
			s->rep_n = 0;
		} else if (c == 'P') {
			s->esc = ESC_DCS;
		} else if (c == ']' || c == '_' || c == '^' || c == 'X') {
			s->esc = ESC_STRING;
		} else if (c >= 0x30 && c < 0x7f) {
			s->esc = ESC_GROUND;
		} else if (c >= 0x20 && c < 0x30 && ++s->seq_other > SEQ_OTHER_MAX) {
			return;
		}
		break;
	case ESC_DCS:
		/* DECRQSS (DCS $ q) only makes libvterm answer, and an odd request
		 * has it format the answer with an argument its format does not
		 * match: it becomes a DCS that libvterm ignores. */
		s->esc = ESC_STRING;
		if (c == '$')
			return;
		/* fall through */
	case ESC_STRING:
		if (c == 0x07)
			s->esc = ESC_GROUND;
		break;
	case ESC_CSI:
		if (c >= '0' && c <= '9') {
			if (++s->seq_digits > SEQ_DIGITS_MAX)
				return;
			if (s->rep_plain == 1)
				s->rep_n = s->rep_n * 10 + (unsigned)(c - '0');
		} else if (c == ';' || c == ':') {
			s->seq_digits = 0;
			if (++s->seq_args >= SEQ_ARGS_MAX)
				return;
			if (s->rep_plain == 1)
				s->rep_plain = 2; /* past the first parameter */
		} else if (c >= 0x20 && c < 0x40) {
			if (++s->seq_other > SEQ_OTHER_MAX)
				return;
			s->rep_plain = 0;         /* a leader or intermediate: not REP */
		} else if (c >= 0x40 && c < 0x7f) {
			s->esc = ESC_GROUND;
			if (c == 'b') {
				out_bytes(o, "~", 1);
				/* As far as the row goes, from where the cursor is now. */
				vterm_input_write(s->vt, o->buf, o->n);
				o->n = 0;
				VTermPos pos;
				vterm_state_get_cursorpos(vterm_obtain_state(s->vt), &pos);
				unsigned n = s->rep_n ? s->rep_n : 1;
				if (n > (unsigned)(s->cols - pos.col))
					n = (unsigned)(s->cols - pos.col);
				for (unsigned i = 0; s->rep_plain && s->nlast && i < n; i++)
					out_bytes(o, s->last, (size_t)s->nlast);
				return;
			}
		}
		break;
	}
	out_bytes(o, &c, 1);
}

/*
 * libvterm 0.1.4 is fed only well-formed UTF-8: what is not becomes U+FFFD
 * and the C1 controls U+0080..U+009F are dropped.  Its own decoder gives a C1
 * character a width of -1, which moves the cursor left past column 0, and a
 * character whose bytes are split by an escape sequence still decodes, so
 * "\xc2" ESC "[4h" "\x85" (insert mode, then U+0085) crashes it in a scroll
 * with a negative width.  A character cut between two feeds is held in
 * s->pend until its end arrives.
 */
void
hs_screen_feed(struct hs_screen *s, const void *buf, size_t len)
{
	const unsigned char *b = buf;
	struct clean_out o = { .s = s };
	s->fed += len;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = b[i];
		if (s->need) {
			if ((c & 0xc0) == 0x80) {
				s->pend[s->npend++] = c;
				if (s->npend == s->need) {
					out_char(&o, s->pend, s->need);
					s->need = s->npend = 0;
				}
				continue;
			}
			/* Cut short: the start of a character that never came. */
			out_text(&o, (const unsigned char *)"\xef\xbf\xbd", 3);
			s->need = s->npend = 0;
		}
		if (c < 0x80) {
			pass_ascii(&o, c);
		} else if (c >= 0xc2 && c <= 0xf4) {
			s->need = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
			s->pend[0] = c;
			s->npend = 1;
		} else {
			out_text(&o, (const unsigned char *)"\xef\xbf\xbd", 3);
		}
	}
	if (o.n)
		vterm_input_write(s->vt, o.buf, o.n);
}

/* Sequences after which a terminal shows only what follows (cursor at home). */
static const char *const fresh_starts[] = {
	"\033c", "\033[2J", "\033[H\033[J", "\033[?1049h", "\033[?1047h", "\033[?47h",
};
static const char *const alt_on[] = { "\033[?1049h", "\033[?1047h", "\033[?47h" };
static const char *const alt_off[] = { "\033[?1049l", "\033[?1047l", "\033[?47l", "\033c" };

/* The start of the last occurrence in b[0..len) of any of n patterns, or NULL. */
static const char *
last_of(const char *b, size_t len, const char *const *pats, size_t n)
{
	const char *best = NULL;
	for (size_t i = 0; i < n; i++) {
		size_t pl = strlen(pats[i]);
		const char *p = b, *hit;
		while ((hit = memmem(p, len - (size_t)(p - b), pats[i], pl))) {
			if (!best || hit > best)
				best = hit;
			p = hit + 1;
		}
	}
	return best;
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Where to start feeding the last max bytes of b[0..len) (max <= len): the
 * last fresh start among them, else the first line or escape sequence
 * start, else the first byte that begins a UTF-8 character.
 */
static size_t
sane_start(const char *b, size_t len, size_t max)
{
	size_t w = len - max;
	const char *f = last_of(b + w, max, fresh_starts, NELEM(fresh_starts));
	if (f)
		return (size_t)(f - b);
	for (size_t p = w; p < len; p++)
		if (b[p] == '\033' || (p > 0 && b[p - 1] == '\n'))
			return p;
	while (w < len && ((unsigned char)b[w] & 0xc0) == 0x80)
		w++;
	return w;
}

void
hs_screen_feed_tail(struct hs_screen *s, const void *buf, size_t len, size_t max, int cut)
{
	const char *b = buf;
	if (!cut && len <= max) {
		hs_screen_feed(s, b, len);
		return;
	}
	size_t p = sane_start(b, len, len < max ? len : max);
	/* The skipped part may have left the alternate screen on. */
	const char *on = last_of(b, p, alt_on, NELEM(alt_on));
	const char *off = last_of(b, p, alt_off, NELEM(alt_off));
	if (on && (!off || on > off))
		vterm_input_write(s->vt, alt_on[0], strlen(alt_on[0]));
	s->partial = 1;
	hs_screen_feed(s, b + p, len - p);
}

/* A character that shows: not a C0/C1 control, not a surrogate, in range. */
static int
printable(uint32_t c)
{
	return c >= 0x20 && !(c >= 0x7f && c < 0xa0) && !(c >= 0xd800 && c < 0xe000) && c <= 0x10ffff;
}

static size_t
put_utf8(char *o, uint32_t c)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | (c >> 6));
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xe0 | (c >> 12));
		o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		o[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (c >> 18));
	o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	o[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

char *
hs_screen_row(const struct hs_screen *s, int r, size_t *len)
{
	if (r < 0 || r >= s->rows)
		return NULL;
	char *out = malloc((size_t)s->cols * VTERM_MAX_CHARS_PER_CELL * 4 + 1);
	if (!out)
		return NULL;
	const VTermScreen *scr = vterm_obtain_screen(s->vt);
	size_t n = 0, keep = 0;
	for (int c = 0; c < s->cols;) {
		VTermScreenCell cell;
		/* libvterm copies the characters only up to the first 0. */
		memset(&cell, 0, sizeof(cell));
		vterm_screen_get_cell(scr, (VTermPos){ .row = r, .col = c }, &cell);
		if (printable(cell.chars[0])) {
			n += put_utf8(out + n, cell.chars[0]);
			for (int i = 1; i < VTERM_MAX_CHARS_PER_CELL && cell.chars[i]; i++)
				if (printable(cell.chars[i]))
					n += put_utf8(out + n, cell.chars[i]);
		} else {
			out[n++] = ' ';
		}
		if (out[n - 1] != ' ')
			keep = n;
		c += cell.width == 2 ? 2 : 1;
	}
	out[keep] = '\0';
	*len = keep;
	return out;
}

void
hs_screen_cursor(const struct hs_screen *s, int *row, int *col)
{
	VTermPos pos;
	vterm_state_get_cursorpos(vterm_obtain_state(s->vt), &pos);
	*row = pos.row;
	*col = pos.col;
}

int
hs_screen_snap(const struct hs_screen *s, struct hs_screen_shot *shot)
{
	memset(shot, 0, sizeof(*shot));
	shot->row = calloc((size_t)s->rows, sizeof(*shot->row));
	shot->len = calloc((size_t)s->rows, sizeof(*shot->len));
	if (!shot->row || !shot->len) {
		hs_screen_shot_free(shot);
		return -1;
	}
	shot->rows = s->rows;
	shot->cols = s->cols;
	for (int r = 0; r < s->rows; r++)
		if (!(shot->row[r] = hs_screen_row(s, r, &shot->len[r]))) {
			hs_screen_shot_free(shot);
			return -1;
		}
	hs_screen_cursor(s, &shot->crow, &shot->ccol);
	shot->alternate = s->alternate;
	shot->partial = s->partial;
	return 0;
}

void
hs_screen_shot_json(yajl_gen g, const struct hs_screen_shot *s)
{
	hs_json_key(g, "screen");
	yajl_gen_map_open(g);
	hs_json_key(g, "rows");
	yajl_gen_array_open(g);
	for (int r = 0; r < s->rows; r++)
		yajl_gen_string(g, (const unsigned char *)s->row[r], s->len[r]);
	yajl_gen_array_close(g);
	hs_json_key(g, "cursor");
	yajl_gen_map_open(g);
	hs_json_kint(g, "row", s->crow);
	hs_json_kint(g, "col", s->ccol);
	yajl_gen_map_close(g);
	hs_json_key(g, "size");
	yajl_gen_map_open(g);
	hs_json_kint(g, "rows", s->rows);
	hs_json_kint(g, "cols", s->cols);
	yajl_gen_map_close(g);
	hs_json_kbool(g, "alternate", s->alternate);
	hs_json_kbool(g, "partial", s->partial);
	yajl_gen_map_close(g);
}

void
hs_screen_shot_free(struct hs_screen_shot *s)
{
	for (int r = 0; s->row && r < s->rows; r++)
		free(s->row[r]);
	free(s->row);
	free(s->len);
	memset(s, 0, sizeof(*s));
}

void
hs_screen_json(yajl_gen g, const struct hs_screen *s)
{
	struct hs_screen_shot shot;
	if (hs_screen_snap(s, &shot) < 0) {
		hs_json_kstr(g, "screen", NULL);
		return;
	}
	hs_screen_shot_json(g, &shot);
	hs_screen_shot_free(&shot);
}

/* The header of the wire form: magic, then six 32-bit numbers. */
static const char shot_magic[4] = { 'H', 'S', 'S', '1' };
#define SHOT_HEAD (sizeof(shot_magic) + 6 * sizeof(uint32_t))

char *
hs_screen_shot_encode(const struct hs_screen_shot *s, size_t *len)
{
	size_t n = SHOT_HEAD;
	for (int r = 0; r < s->rows; r++)
		n += sizeof(uint32_t) + s->len[r];
	char *out = malloc(n), *p = out;
	if (!out)
		return NULL;
	uint32_t head[6] = { (uint32_t)s->rows, (uint32_t)s->cols, (uint32_t)s->crow,
		             (uint32_t)s->ccol, (uint32_t)s->alternate, (uint32_t)s->partial };
	memcpy(p, shot_magic, sizeof(shot_magic));
	p += sizeof(shot_magic);
	memcpy(p, head, sizeof(head));
	p += sizeof(head);
	for (int r = 0; r < s->rows; r++) {
		uint32_t l = (uint32_t)s->len[r];
		memcpy(p, &l, sizeof(l));
		memcpy(p + sizeof(l), s->row[r], s->len[r]);
		p += sizeof(l) + s->len[r];
	}
	*len = n;
	return out;
}

size_t
hs_screen_shot_max(int rows, int cols)
{
	return SHOT_HEAD + (size_t)rows * (sizeof(uint32_t) + HS_SCREEN_ROW_MAX(cols));
}

/* A row as the renderer makes it: UTF-8 with no control character. */
static int
row_ok(const char *p, size_t n)
{
	if (!hs_utf8_valid(p, n))
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return 0;
	return 1;
}

int
hs_screen_shot_parse(const void *buf, size_t len, int rows, int cols, struct hs_screen_shot *shot,
                     char *err, size_t errlen)
{
	const char *b = buf, *end = b + len;
	uint32_t h[6];
	memset(shot, 0, sizeof(*shot));
	if (len < SHOT_HEAD || memcmp(b, shot_magic, sizeof(shot_magic))) {
		snprintf(err, errlen, "the renderer's answer is not a screen (%zu bytes)", len);
		return -1;
	}
	memcpy(h, b + sizeof(shot_magic), sizeof(h));
	b += SHOT_HEAD;
	if (h[0] != (uint32_t)rows || h[1] != (uint32_t)cols || h[2] >= h[0] || h[3] > h[1] || h[4] > 1 || h[5] > 1) {
		snprintf(err, errlen, "the renderer's answer has a bad size, cursor or flag");
		return -1;
	}
	shot->row = calloc((size_t)rows, sizeof(*shot->row));
	shot->len = calloc((size_t)rows, sizeof(*shot->len));
	if (!shot->row || !shot->len) {
		hs_screen_shot_free(shot);
		snprintf(err, errlen, "out of memory for a screen of %dx%d", rows, cols);
		return -1;
	}
	shot->rows = rows;
	shot->cols = cols;
	shot->crow = (int)h[2];
	shot->ccol = (int)h[3];
	shot->alternate = (int)h[4];
	shot->partial = (int)h[5];
	for (int r = 0; r < rows; r++) {
		uint32_t l;
		if ((size_t)(end - b) < sizeof(l))
			goto bad;
		memcpy(&l, b, sizeof(l));
		b += sizeof(l);
		if (l > HS_SCREEN_ROW_MAX(cols) || (size_t)(end - b) < l || !row_ok(b, l))
			goto bad;
		if (!(shot->row[r] = malloc((size_t)l + 1))) {
			hs_screen_shot_free(shot);
			snprintf(err, errlen, "out of memory for a screen of %dx%d", rows, cols);
			return -1;
		}
		memcpy(shot->row[r], b, l);
		shot->row[r][l] = '\0';
		shot->len[r] = l;
		b += l;
	}
	if (b == end)
		return 0;
bad:
	hs_screen_shot_free(shot);
	snprintf(err, errlen, "the renderer's answer has a malformed row");
	return -1;
}

void
hs_screen_stream(struct hs_screen *s, const void *all, size_t len, int newline, int cut, size_t tail_len)
{
	if (newline)
		hs_screen_newline(s);
	size_t max = hs_screen_feed_bound(s);
	if (cut)
		hs_screen_feed_tail(s, all, len, tail_len < max ? tail_len : max, 1);
	else
		hs_screen_feed_tail(s, all, len, max, 0);
}

void
hs_screen_capture_json(yajl_gen g, const struct hs_capture *c, int rows, int cols, int newline)
{
	struct hs_screen s;
	size_t len = 0;
	char *all = hs_capture_join(c, &len);
	if (!all || hs_screen_init(&s, rows, cols) < 0) {
		free(all);
		hs_json_kstr(g, "screen", NULL);
		return;
	}
	hs_screen_stream(&s, all, len, newline, c->dropped != 0, c->tail_len);
	hs_screen_json(g, &s);
	hs_screen_free(&s);
	free(all);
}

void
hs_screen_free(struct hs_screen *s)
{
	if (s->vt)
		vterm_free(s->vt);
	s->vt = NULL;
}
