/* SPDX-License-Identifier: MIT */
/*
 * pb.c - protocol-buffers wire format (see pb.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "pb.h"

void
pb_buf_free(struct pb_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void
pb_raw(struct pb_buf *b, const void *p, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n > b->cap) {
		size_t nc = b->cap ? b->cap : 64;
		while (nc < b->len + n)
			nc *= 2;
		uint8_t *nd = realloc(b->data, nc);
		if (!nd) {
			b->failed = 1;
			return;
		}
		b->data = nd;
		b->cap = nc;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void
raw_varint(struct pb_buf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;
	do {
		t[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	pb_raw(b, t, n);
}

static void
tag(struct pb_buf *b, uint32_t field, uint32_t wire)
{
	raw_varint(b, ((uint64_t)field << 3) | wire);
}

void
pb_varint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	tag(b, field, 0);
	raw_varint(b, v);
}

void
pb_uint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	if (v)
		pb_varint(b, field, v);
}

void
pb_bool(struct pb_buf *b, uint32_t field, int v)
{
	if (v)
		pb_varint(b, field, 1);
}

void
pb_bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n)
{
	tag(b, field, 2);
	raw_varint(b, n);
	pb_raw(b, p, n);
}

void
pb_str(struct pb_buf *b, uint32_t field, const char *s)
{
	if (s && s[0])
		pb_bytes(b, field, s, strlen(s));
}

void
pb_str_rep(struct pb_buf *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s ? s : "", s ? strlen(s) : 0);
}

void
pb_float(struct pb_buf *b, uint32_t field, float f)
{
	uint32_t u;
	uint8_t t[4];
	memcpy(&u, &f, 4);
	for (int i = 0; i < 4; i++)
		t[i] = (uint8_t)(u >> (8 * i));
	tag(b, field, 5);
	pb_raw(b, t, 4);
}

void
pb_msg(struct pb_buf *b, uint32_t field, const struct pb_buf *m)
{
	if (m->failed)
		b->failed = 1;
	pb_bytes(b, field, m->data, m->len);
}

void
pb_reader_init(struct pb_reader *r, const void *p, size_t n)
{
	r->p = p;
	r->end = r->p + n;
}

static int
read_varint(struct pb_reader *r, uint64_t *v)
{
	uint64_t x = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return -1;
		uint8_t c = *r->p++;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

int
pb_next(struct pb_reader *r, struct pb_field *f)
{
	uint64_t t;
	if (r->p >= r->end)
		return 0;
	if (read_varint(r, &t) < 0 || (t >> 3) == 0 || (t >> 3) > 0x1fffffff)
		return -1;
	memset(f, 0, sizeof(*f));
	f->num = (uint32_t)(t >> 3);
	f->wire = (uint32_t)(t & 7);
	switch (f->wire) {
	case 0:
		return read_varint(r, &f->v) < 0 ? -1 : 1;
	case 1:
	case 5: {
		size_t n = f->wire == 1 ? 8 : 4;
		if ((size_t)(r->end - r->p) < n)
			return -1;
		for (size_t i = 0; i < n; i++)
			f->v |= (uint64_t)r->p[i] << (8 * i);
		r->p += n;
		return 1;
	}
	case 2: {
		uint64_t n;
		if (read_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p))
			return -1;
		f->p = r->p;
		f->n = (size_t)n;
		r->p += n;
		return 1;
	}
	default:
		return -1;
	}
}

int
pb_copy_str(const struct pb_field *f, char *out, size_t len)
{
	if (f->wire != 2 || len == 0)
		return -1;
	size_t n = f->n < len - 1 ? f->n : len - 1;
	memcpy(out, f->p, n);
	out[n] = '\0';
	return 0;
}
