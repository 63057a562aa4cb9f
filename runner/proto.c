/* SPDX-License-Identifier: MIT */
/* hs-runner wire protocol: frame encoding and incremental decoding. */
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void hsr_buf_init(struct hsr_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void hsr_buf_free(struct hsr_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void hsr_buf_consume(struct hsr_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

static int buf_reserve(struct hsr_buf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->failed)
		return -1;
	if (b->cap - b->len >= n)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2) {
			b->failed = 1;
			return -1;
		}
		cap *= 2;
	}
	p = realloc(b->data, cap);
	if (!p) {
		b->failed = 1;
		return -1;
	}
	b->data = p;
	b->cap = cap;
	return 0;
}

void hsr_buf_put(struct hsr_buf *b, const void *p, size_t n)
{
	if (n == 0 || buf_reserve(b, n) < 0)
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void hsr_buf_u8(struct hsr_buf *b, uint8_t v)
{
	hsr_buf_put(b, &v, 1);
}

void hsr_buf_u16(struct hsr_buf *b, uint16_t v)
{
	uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	hsr_buf_put(b, x, 2);
}

void hsr_buf_u32(struct hsr_buf *b, uint32_t v)
{
	uint8_t x[4];

	for (int i = 0; i < 4; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	hsr_buf_put(b, x, 4);
}

void hsr_buf_u64(struct hsr_buf *b, uint64_t v)
{
	uint8_t x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	hsr_buf_put(b, x, 8);
}

static void buf_strn(struct hsr_buf *b, const char *s, size_t n)
{
	hsr_buf_u32(b, (uint32_t)n);
	hsr_buf_put(b, s, n);
}

void hsr_buf_str(struct hsr_buf *b, const char *s)
{
	buf_strn(b, s ? s : "", s ? strlen(s) : 0);
}

size_t hsr_frame_begin(struct hsr_buf *b, uint8_t type)
{
	size_t start = b->len;

	hsr_buf_u32(b, 0);
	hsr_buf_u8(b, type);
	return start;
}

void hsr_frame_end(struct hsr_buf *b, size_t start)
{
	uint32_t n;

	if (b->failed || b->len < start + 5)
		return;
	n = (uint32_t)(b->len - start - 4);
	for (int i = 0; i < 4; i++)
		b->data[start + i] = (uint8_t)(n >> (8 * i));
}

void hsr_reader_init(struct hsr_reader *r, const void *p, size_t len)
{
	r->p = p;
	r->left = len;
	r->err = 0;
}

static const uint8_t *reader_take(struct hsr_reader *r, size_t n)
{
	const uint8_t *p;

	if (r->err || r->left < n) {
		r->err = 1;
		return NULL;
	}
	p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

uint8_t hsr_get_u8(struct hsr_reader *r)
{
	const uint8_t *p = reader_take(r, 1);

	return p ? p[0] : 0;
}

uint16_t hsr_get_u16(struct hsr_reader *r)
{
	const uint8_t *p = reader_take(r, 2);

	return p ? (uint16_t)(p[0] | p[1] << 8) : 0;
}

uint32_t hsr_get_u32(struct hsr_reader *r)
{
	const uint8_t *p = reader_take(r, 4);
	uint32_t v = 0;

	if (!p)
		return 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t hsr_get_u64(struct hsr_reader *r)
{
	const uint8_t *p = reader_take(r, 8);
	uint64_t v = 0;

	if (!p)
		return 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

const char *hsr_get_str(struct hsr_reader *r, uint32_t *len)
{
	uint32_t n = hsr_get_u32(r);
	const uint8_t *p = reader_take(r, n);

	*len = p ? n : 0;
	return p ? (const char *)p : "";
}

void hsr_decoder_init(struct hsr_decoder *d, uint32_t max_frame)
{
	memset(d, 0, sizeof(*d));
	d->max_frame = max_frame ? max_frame : HSR_MAX_FRAME;
}

void hsr_decoder_free(struct hsr_decoder *d)
{
	free(d->buf);
	memset(d, 0, sizeof(*d));
}

uint8_t *hsr_decoder_reserve(struct hsr_decoder *d, size_t len)
{
	/* Returned frames point into buf, so compacting here is what ends
	 * their validity, as documented. */
	if (d->pos) {
		memmove(d->buf, d->buf + d->pos, d->len - d->pos);
		d->len -= d->pos;
		d->pos = 0;
	}
	if (d->cap - d->len < len || !d->buf) {
		size_t cap = d->cap ? d->cap : 4096;
		uint8_t *p;

		while (cap - d->len < len) {
			if (cap > SIZE_MAX / 2)
				return NULL;
			cap *= 2;
		}
		p = realloc(d->buf, cap);
		if (!p)
			return NULL;
		d->buf = p;
		d->cap = cap;
	}
	return d->buf + d->len;
}

void hsr_decoder_commit(struct hsr_decoder *d, size_t n)
{
	d->len += n;
}

int hsr_decoder_feed(struct hsr_decoder *d, const void *data, size_t len)
{
	uint8_t *p = hsr_decoder_reserve(d, len);

	if (!p)
		return -1;
	memcpy(p, data, len);
	d->len += len;
	return 0;
}

int hsr_decoder_next(struct hsr_decoder *d, struct hsr_frame *f)
{
	const uint8_t *p;
	uint32_t n;

	if (d->error)
		return -1;
	if (d->len - d->pos < 4)
		return 0;
	p = d->buf + d->pos;
	n = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	if (n == 0 || n > d->max_frame) {
		d->error = 1;
		return -1;
	}
	if (d->len - d->pos - 4 < n)
		return 0;
	f->type = p[4];
	f->payload = p + 5;
	f->len = n - 1;
	d->pos += 4 + (size_t)n;
	return 1;
}

/* Checks the structure of an EXEC payload without copying anything. */
static int exec_check(struct hsr_reader *r)
{
	uint32_t n, len, flags;

	hsr_get_u64(r);
	flags = hsr_get_u32(r);
	for (int i = 0; i < 6; i++)
		hsr_get_u64(r);
	hsr_get_str(r, &len);
	for (int k = 0; k < 2 && !r->err; k++) {
		n = hsr_get_u32(r);
		if (n > r->left / 4) /* each string needs at least its length */
			return -1;
		for (uint32_t i = 0; i < n && !r->err; i++)
			hsr_get_str(r, &len);
	}
	if (flags & HSR_EXEC_PTY) {
		uint16_t rows = hsr_get_u16(r), cols = hsr_get_u16(r);

		if (rows < HSR_PTY_MIN || rows > HSR_PTY_MAX || cols < HSR_PTY_MIN ||
		    cols > HSR_PTY_MAX)
			return -1;
	}
	return r->err ? -1 : 0;
}

/* Returns n bytes at the reader, or NULL (with err set) when fewer are left. */
static const uint8_t *get_fixed(struct hsr_reader *r, size_t n)
{
	const uint8_t *p = r->p;

	if (r->err || r->left < n) {
		r->err = 1;
		return NULL;
	}
	r->p += n;
	r->left -= n;
	return p;
}

int hsr_msg_decode(const struct hsr_frame *f, int from_daemon, struct hsr_msg *m)
{
	struct hsr_reader r;

	memset(m, 0, sizeof(*m));
	m->type = f->type;
	hsr_reader_init(&r, f->payload, f->len);
	switch (f->type) {
	case HSR_F_HELLO:
		m->vmin = hsr_get_u32(&r);
		m->vmax = hsr_get_u32(&r);
		m->str = hsr_get_str(&r, &m->str_len);
		break;
	case HSR_F_ERROR:
		m->id = hsr_get_u64(&r);
		m->code = hsr_get_u32(&r);
		m->str = hsr_get_str(&r, &m->str_len);
		break;
	case HSR_F_EXEC:
		if (exec_check(&r) < 0)
			return -1;
		m->data = f->payload;
		m->len = f->len;
		return 0;
	case HSR_F_STDIN:
		m->id = hsr_get_u64(&r);
		m->data = r.p;
		m->len = r.left;
		r.left = 0;
		break;
	case HSR_F_STDIN_EOF:
	case HSR_F_CANCEL:
	case HSR_F_OK:
		m->id = hsr_get_u64(&r);
		break;
	case HSR_F_SIGNAL:
		m->id = hsr_get_u64(&r);
		m->signo = hsr_get_u32(&r);
		break;
	case HSR_F_OUTPUT:
	case HSR_F_STATE:
		m->id = hsr_get_u64(&r);
		m->stream = hsr_get_u8(&r);
		m->offset = hsr_get_u64(&r);
		m->data = r.p;
		m->len = r.left;
		r.left = 0;
		if (f->type == HSR_F_OUTPUT && m->stream != 1 && m->stream != 2)
			return -1;
		if (f->type == HSR_F_STATE && m->stream != HSR_STREAM_STATE)
			return -1;
		break;
	case HSR_F_EXIT:
		m->id = hsr_get_u64(&r);
		m->exit_code = (int32_t)hsr_get_u32(&r);
		m->timed_out = hsr_get_u8(&r);
		m->cancelled = hsr_get_u8(&r);
		m->dropped[1] = hsr_get_u64(&r);
		m->dropped[2] = hsr_get_u64(&r);
		for (int s = 1; s <= 3; s++)
			m->total[s] = hsr_get_u64(&r);
		m->restarted = hsr_get_u8(&r);
		m->jobs = hsr_get_u32(&r);
		m->str = hsr_get_str(&r, &m->str_len);
		break;
	case HSR_F_PUT:
		m->id = hsr_get_u64(&r);
		m->flags = hsr_get_u32(&r);
		m->mode = hsr_get_u32(&r);
		m->str = hsr_get_str(&r, &m->str_len);
		m->data = r.p;
		m->len = r.left;
		r.left = 0;
		break;
	case HSR_F_GET:
		m->id = hsr_get_u64(&r);
		m->str = hsr_get_str(&r, &m->str_len);
		break;
	case HSR_F_FILE_DATA:
		m->id = hsr_get_u64(&r);
		m->final = hsr_get_u8(&r);
		m->offset = hsr_get_u64(&r);
		m->data = r.p;
		m->len = r.left;
		r.left = 0;
		break;
	case HSR_F_ACK:
		m->id = hsr_get_u64(&r);
		m->stream = hsr_get_u8(&r);
		m->offset = hsr_get_u64(&r);
		if (m->stream > HSR_STREAM_STATE)
			return -1;
		break;
	case HSR_F_CREDIT:
		m->id = hsr_get_u64(&r);
		m->value = hsr_get_u64(&r);
		break;
	case HSR_F_ATTACH:
		if (!from_daemon) {
			m->value = hsr_get_u64(&r);
			break;
		}
		m->count = hsr_get_u32(&r);
		if (m->count > r.left / HSR_ATTACH_ENTRY_SIZE ||
		    (size_t)m->count * HSR_ATTACH_ENTRY_SIZE != r.left)
			return -1;
		m->data = r.p;
		m->len = r.left;
		r.left = 0;
		break;
	case HSR_F_PING:
	case HSR_F_PONG:
		m->value = hsr_get_u64(&r);
		break;
	case HSR_F_WAITING:
		m->id = hsr_get_u64(&r);
		m->final = hsr_get_u8(&r);
		break;
	case HSR_F_RESIZE:
		m->id = hsr_get_u64(&r);
		m->rows = hsr_get_u16(&r);
		m->cols = hsr_get_u16(&r);
		if (m->rows < HSR_PTY_MIN || m->rows > HSR_PTY_MAX || m->cols < HSR_PTY_MIN ||
		    m->cols > HSR_PTY_MAX)
			return -1;
		break;
	case HSR_F_JOBS:
		m->value = hsr_get_u64(&r);
		if (!from_daemon)
			break;
		m->count = hsr_get_u32(&r);
		m->data = r.p;
		m->len = r.left;
		r.left = 0;
		break;
	case HSR_F_SHUTDOWN:
		m->value = hsr_get_u32(&r);
		break;
	case HSR_F_EGRESS_LISTEN:
		m->value = hsr_get_u64(&r);
		if (from_daemon && ((m->port = hsr_get_u32(&r)) == 0 || m->port > 65535))
			return -1;
		break;
	case HSR_F_READ:
		m->id = hsr_get_u64(&r);
		m->value = hsr_get_u64(&r);
		m->stream = hsr_get_u8(&r);
		m->offset = hsr_get_u64(&r);
		m->mode = hsr_get_u32(&r);
		break;
	case HSR_F_RANGE:
		m->id = hsr_get_u64(&r);
		m->stream = hsr_get_u8(&r);
		m->offset = hsr_get_u64(&r);
		m->value = hsr_get_u64(&r);
		m->final = hsr_get_u8(&r);
		m->data = r.p;
		m->len = r.left;
		r.left = 0;
		break;
	case HSR_F_EGRESS_DATA:
		m->id = hsr_get_u64(&r);
		m->data = r.p;
		m->len = r.left;
		r.left = 0;
		break;
	case HSR_F_EGRESS_CONN:
	case HSR_F_EGRESS_EOF:
	case HSR_F_EGRESS_CLOSE:
		m->id = hsr_get_u64(&r);
		break;
	case HSR_F_SPILL:
		m->id = hsr_get_u64(&r);
		m->value = hsr_get_u64(&r);
		break;
	case HSR_F_KEY:
	case HSR_F_CHALLENGE:
		m->data = get_fixed(&r, 32);
		m->len = 32;
		break;
	case HSR_F_AUTH:
		if (from_daemon) {
			m->keyed = hsr_get_u8(&r);
			m->data = get_fixed(&r, 32);
			m->len = 32;
		}
		m->proof = get_fixed(&r, 32);
		break;
	default:
		return -1;
	}
	/* Trailing bytes are an error: they would mean the peer speaks a
	 * layout this version does not know, so nothing may be guessed. */
	if (r.err || r.left)
		return -1;
	return 0;
}

/* Appends the 32 bytes at p, or 32 zeros when p is NULL. */
static void buf_fixed(struct hsr_buf *b, const uint8_t *p, size_t n)
{
	static const uint8_t zero[32];

	hsr_buf_put(b, p ? p : zero, n);
}

void hsr_msg_encode(struct hsr_buf *b, const struct hsr_msg *m, int from_daemon)
{
	size_t start = hsr_frame_begin(b, m->type);

	switch (m->type) {
	case HSR_F_HELLO:
		hsr_buf_u32(b, m->vmin);
		hsr_buf_u32(b, m->vmax);
		buf_strn(b, m->str ? m->str : "", m->str ? m->str_len : 0);
		break;
	case HSR_F_ERROR:
		hsr_buf_u64(b, m->id);
		hsr_buf_u32(b, m->code);
		buf_strn(b, m->str ? m->str : "", m->str ? m->str_len : 0);
		break;
	case HSR_F_STDIN:
		hsr_buf_u64(b, m->id);
		hsr_buf_put(b, m->data, m->len);
		break;
	case HSR_F_STDIN_EOF:
	case HSR_F_CANCEL:
	case HSR_F_OK:
		hsr_buf_u64(b, m->id);
		break;
	case HSR_F_SIGNAL:
		hsr_buf_u64(b, m->id);
		hsr_buf_u32(b, m->signo);
		break;
	case HSR_F_OUTPUT:
	case HSR_F_STATE:
		hsr_buf_u64(b, m->id);
		hsr_buf_u8(b, m->stream);
		hsr_buf_u64(b, m->offset);
		hsr_buf_put(b, m->data, m->len);
		break;
	case HSR_F_EXIT:
		hsr_buf_u64(b, m->id);
		hsr_buf_u32(b, (uint32_t)m->exit_code);
		hsr_buf_u8(b, m->timed_out);
		hsr_buf_u8(b, m->cancelled);
		hsr_buf_u64(b, m->dropped[1]);
		hsr_buf_u64(b, m->dropped[2]);
		for (int s = 1; s <= 3; s++)
			hsr_buf_u64(b, m->total[s]);
		hsr_buf_u8(b, m->restarted);
		hsr_buf_u32(b, m->jobs);
		buf_strn(b, m->str ? m->str : "", m->str ? m->str_len : 0);
		break;
	case HSR_F_PUT:
		hsr_buf_u64(b, m->id);
		hsr_buf_u32(b, m->flags);
		hsr_buf_u32(b, m->mode);
		buf_strn(b, m->str ? m->str : "", m->str ? m->str_len : 0);
		hsr_buf_put(b, m->data, m->len);
		break;
	case HSR_F_GET:
		hsr_buf_u64(b, m->id);
		buf_strn(b, m->str ? m->str : "", m->str ? m->str_len : 0);
		break;
	case HSR_F_FILE_DATA:
		hsr_buf_u64(b, m->id);
		hsr_buf_u8(b, m->final);
		hsr_buf_u64(b, m->offset);
		hsr_buf_put(b, m->data, m->len);
		break;
	case HSR_F_ACK:
		hsr_buf_u64(b, m->id);
		hsr_buf_u8(b, m->stream);
		hsr_buf_u64(b, m->offset);
		break;
	case HSR_F_CREDIT:
		hsr_buf_u64(b, m->id);
		hsr_buf_u64(b, m->value);
		break;
	case HSR_F_ATTACH:
		if (from_daemon) {
			hsr_buf_u32(b, m->count);
			hsr_buf_put(b, m->data, m->len);
		} else {
			hsr_buf_u64(b, m->value);
		}
		break;
	case HSR_F_PING:
	case HSR_F_PONG:
		hsr_buf_u64(b, m->value);
		break;
	case HSR_F_WAITING:
		hsr_buf_u64(b, m->id);
		hsr_buf_u8(b, m->final);
		break;
	case HSR_F_RESIZE:
		hsr_buf_u64(b, m->id);
		hsr_buf_u16(b, m->rows);
		hsr_buf_u16(b, m->cols);
		break;
	case HSR_F_JOBS:
		hsr_buf_u64(b, m->value);
		if (from_daemon) {
			hsr_buf_u32(b, m->count);
			hsr_buf_put(b, m->data, m->len);
		}
		break;
	case HSR_F_SHUTDOWN:
		hsr_buf_u32(b, (uint32_t)m->value);
		break;
	case HSR_F_EGRESS_LISTEN:
		hsr_buf_u64(b, m->value);
		if (from_daemon)
			hsr_buf_u32(b, m->port);
		break;
	case HSR_F_EGRESS_DATA:
		hsr_buf_u64(b, m->id);
		hsr_buf_put(b, m->data, m->len);
		break;
	case HSR_F_EGRESS_CONN:
	case HSR_F_EGRESS_EOF:
	case HSR_F_EGRESS_CLOSE:
		hsr_buf_u64(b, m->id);
		break;
	case HSR_F_READ:
		hsr_buf_u64(b, m->id);
		hsr_buf_u64(b, m->value);
		hsr_buf_u8(b, m->stream);
		hsr_buf_u64(b, m->offset);
		hsr_buf_u32(b, m->mode);
		break;
	case HSR_F_RANGE:
		hsr_buf_u64(b, m->id);
		hsr_buf_u8(b, m->stream);
		hsr_buf_u64(b, m->offset);
		hsr_buf_u64(b, m->value);
		hsr_buf_u8(b, m->final);
		hsr_buf_put(b, m->data, m->len);
		break;
	case HSR_F_SPILL:
		hsr_buf_u64(b, m->id);
		hsr_buf_u64(b, m->value);
		break;
	case HSR_F_KEY:
	case HSR_F_CHALLENGE:
		buf_fixed(b, m->data, 32);
		break;
	case HSR_F_AUTH:
		if (from_daemon) {
			hsr_buf_u8(b, m->keyed);
			buf_fixed(b, m->data, 32);
		}
		buf_fixed(b, m->proof, 32);
		break;
	default:
		break;
	}
	hsr_frame_end(b, start);
}

void hsr_exec_encode(struct hsr_buf *b, uint64_t id, uint32_t flags,
		     int64_t deadline_ms, int64_t grace_ms, uint64_t head,
		     uint64_t tail, uint64_t credit, uint64_t keep, const char *cwd,
		     const char *const *argv, const char *const *envp)
{
	hsr_exec_encode_pty(b, id, flags & ~HSR_EXEC_PTY, deadline_ms, grace_ms, head, tail,
			    credit, keep, cwd, argv, envp, 0, 0);
}

void hsr_exec_encode_pty(struct hsr_buf *b, uint64_t id, uint32_t flags,
			 int64_t deadline_ms, int64_t grace_ms, uint64_t head,
			 uint64_t tail, uint64_t credit, uint64_t keep, const char *cwd,
			 const char *const *argv, const char *const *envp,
			 uint16_t rows, uint16_t cols)
{
	size_t start = hsr_frame_begin(b, HSR_F_EXEC);
	uint32_t n;

	hsr_buf_u64(b, id);
	hsr_buf_u32(b, flags);
	hsr_buf_u64(b, (uint64_t)deadline_ms);
	hsr_buf_u64(b, (uint64_t)grace_ms);
	hsr_buf_u64(b, head);
	hsr_buf_u64(b, tail);
	hsr_buf_u64(b, credit);
	hsr_buf_u64(b, keep); /* was reserved (0) before HSR_EXEC_KEEP */
	hsr_buf_str(b, cwd);
	for (n = 0; argv && argv[n]; n++)
		;
	hsr_buf_u32(b, n);
	for (uint32_t i = 0; i < n; i++)
		hsr_buf_str(b, argv[i]);
	for (n = 0; envp && envp[n]; n++)
		;
	hsr_buf_u32(b, n);
	for (uint32_t i = 0; i < n; i++)
		hsr_buf_str(b, envp[i]);
	if (flags & HSR_EXEC_PTY) {
		hsr_buf_u16(b, rows);
		hsr_buf_u16(b, cols);
	}
	hsr_frame_end(b, start);
}

/* Copies a wire string into *pool as a C string; refuses embedded NULs. */
static char *pool_str(char **pool, const char *s, uint32_t len)
{
	char *out = *pool;

	if (memchr(s, '\0', len))
		return NULL;
	memcpy(out, s, len);
	out[len] = '\0';
	*pool += len + 1;
	return out;
}

struct hsr_exec_req *hsr_exec_decode(const uint8_t *p, size_t len)
{
	struct hsr_reader r;
	struct hsr_exec_req *q;
	uint32_t argc, envc, slen;
	const char *s;
	char *pool;
	size_t need;

	hsr_reader_init(&r, p, len);
	if (exec_check(&r) < 0 || r.left) {
		errno = EINVAL;
		return NULL;
	}
	/* Every string is at least 4 bytes on the wire, so argc and envc are
	 * bounded by the frame size and the sums below cannot overflow. */
	hsr_reader_init(&r, p, len);
	hsr_get_u64(&r);
	hsr_get_u32(&r);
	for (int i = 0; i < 6; i++)
		hsr_get_u64(&r);
	hsr_get_str(&r, &slen);
	argc = hsr_get_u32(&r);
	for (uint32_t i = 0; i < argc; i++)
		hsr_get_str(&r, &slen);
	envc = hsr_get_u32(&r);
	if (argc == 0) {
		errno = EINVAL;
		return NULL;
	}
	need = sizeof(*q) + sizeof(char *) * ((size_t)argc + envc + 2) + len;
	q = calloc(1, need);
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	q->argv = (char **)(q + 1);
	q->envp = q->argv + argc + 1;
	pool = (char *)(q->envp + envc + 1);

	hsr_reader_init(&r, p, len);
	q->id = hsr_get_u64(&r);
	q->flags = hsr_get_u32(&r);
	q->deadline_ms = (int64_t)hsr_get_u64(&r);
	q->grace_ms = (int64_t)hsr_get_u64(&r);
	q->head = hsr_get_u64(&r);
	q->tail = hsr_get_u64(&r);
	q->credit = hsr_get_u64(&r);
	q->keep = hsr_get_u64(&r);
	s = hsr_get_str(&r, &slen);
	if (!(q->cwd = pool_str(&pool, s, slen)))
		goto bad;
	argc = hsr_get_u32(&r);
	for (uint32_t i = 0; i < argc; i++) {
		s = hsr_get_str(&r, &slen);
		if (!(q->argv[i] = pool_str(&pool, s, slen)))
			goto bad;
	}
	envc = hsr_get_u32(&r);
	for (uint32_t i = 0; i < envc; i++) {
		s = hsr_get_str(&r, &slen);
		if (!(q->envp[i] = pool_str(&pool, s, slen)) || !strchr(q->envp[i], '=') ||
		    q->envp[i][0] == '=')
			goto bad;
	}
	if (q->flags & HSR_EXEC_PTY) {
		q->rows = hsr_get_u16(&r);
		q->cols = hsr_get_u16(&r);
	}
	if (q->deadline_ms < 0 || q->grace_ms < 0)
		goto bad;
	return q;
bad:
	free(q);
	errno = EINVAL;
	return NULL;
}

void hsr_attach_entry_encode(struct hsr_buf *b, const struct hsr_attach_entry *e)
{
	hsr_buf_u64(b, e->id);
	hsr_buf_u8(b, (uint8_t)(e->finished != 0));
	for (int s = 1; s <= 3; s++) {
		hsr_buf_u64(b, e->acked[s]);
		hsr_buf_u64(b, e->end[s]);
	}
}

void hsr_attach_entry_decode(const struct hsr_msg *m, uint32_t i, struct hsr_attach_entry *e)
{
	struct hsr_reader r;

	memset(e, 0, sizeof(*e));
	if (i >= m->count)
		return;
	hsr_reader_init(&r, m->data + (size_t)i * HSR_ATTACH_ENTRY_SIZE, HSR_ATTACH_ENTRY_SIZE);
	e->id = hsr_get_u64(&r);
	e->finished = hsr_get_u8(&r);
	for (int s = 1; s <= 3; s++) {
		e->acked[s] = hsr_get_u64(&r);
		e->end[s] = hsr_get_u64(&r);
	}
}

const char *hsr_frame_name(int type)
{
	static const char *const names[] = {
		"?", "HELLO", "ERROR", "EXEC", "STDIN", "STDIN_EOF", "SIGNAL",
		"CANCEL", "OUTPUT", "EXIT", "STATE", "PUT", "GET", "FILE_DATA",
		"OK", "ACK", "CREDIT", "ATTACH", "PING", "PONG", "SHUTDOWN",
		"KEY", "CHALLENGE", "AUTH", "JOBS", "WAITING", "RESIZE", "READ", "RANGE", "SPILL",
		"EGRESS_LISTEN", "EGRESS_CONN", "EGRESS_DATA", "EGRESS_EOF", "EGRESS_CLOSE",
	};

	if (type < 1 || type > HSR_F_MAX_TYPE || !names[type])
		return "UNKNOWN";
	return names[type];
}

int hsr_jobs_entry_next(struct hsr_reader *r, struct hsr_job_entry *e)
{
	if (r->left == 0 || r->err)
		return 0;
	e->id = hsr_get_u64(r);
	e->alive = hsr_get_u8(r);
	e->procs = hsr_get_u32(r);
	e->log_bytes[0] = 0;
	e->log_bytes[1] = hsr_get_u64(r);
	e->log_bytes[2] = hsr_get_u64(r);
	e->command = hsr_get_str(r, &e->command_len);
	return !r->err;
}

void hsr_jobs_entry_encode(struct hsr_buf *b, const struct hsr_job_entry *e)
{
	hsr_buf_u64(b, e->id);
	hsr_buf_u8(b, (uint8_t)e->alive);
	hsr_buf_u32(b, e->procs);
	hsr_buf_u64(b, e->log_bytes[1]);
	hsr_buf_u64(b, e->log_bytes[2]);
	buf_strn(b, e->command, e->command_len);
}
