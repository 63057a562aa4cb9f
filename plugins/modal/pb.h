/* SPDX-License-Identifier: MIT */
/*
 * pb.h - a small protocol-buffers wire encoder and decoder: just what the
 * Modal messages in modal.proto need (varints, length-delimited fields,
 * 32-bit floats).  Checked against protoc --decode/--encode in
 * tests/modal/pb.test.
 */
#ifndef HS_MODAL_PB_H
#define HS_MODAL_PB_H

#include <stddef.h>
#include <stdint.h>

struct pb_buf {
	uint8_t *data;
	size_t len, cap;
	int failed; /* an allocation failed; the content is incomplete */
};

void pb_buf_free(struct pb_buf *b);
void pb_raw(struct pb_buf *b, const void *p, size_t n);
void pb_varint(struct pb_buf *b, uint32_t field, uint64_t v);
/* A varint field written only when v is non-zero (proto3 default omitted). */
void pb_uint(struct pb_buf *b, uint32_t field, uint64_t v);
void pb_bool(struct pb_buf *b, uint32_t field, int v);
void pb_bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n);
/* A string field; NULL or "" is omitted. */
void pb_str(struct pb_buf *b, uint32_t field, const char *s);
/* Always written, even when empty (repeated string items). */
void pb_str_rep(struct pb_buf *b, uint32_t field, const char *s);
void pb_float(struct pb_buf *b, uint32_t field, float f);
/* A nested message from another buffer (written even when empty). */
void pb_msg(struct pb_buf *b, uint32_t field, const struct pb_buf *m);

/* One decoded field. */
struct pb_field {
	uint32_t num;
	uint32_t wire;   /* 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
	uint64_t v;      /* varint, fixed64 or fixed32 value */
	const uint8_t *p; /* length-delimited payload */
	size_t n;
};

struct pb_reader {
	const uint8_t *p, *end;
};

void pb_reader_init(struct pb_reader *r, const void *p, size_t n);
/* Next field: 1 with f set, 0 at the end, -1 on malformed input. */
int pb_next(struct pb_reader *r, struct pb_field *f);
/* Copy a length-delimited field as a string (truncated to len-1); -1 if not one. */
int pb_copy_str(const struct pb_field *f, char *out, size_t len);

#endif
