/* SPDX-License-Identifier: MIT */
/*
 * json.h - small conveniences over yajl's generator for hs's JSON output.
 */
#ifndef HS_JSON_H
#define HS_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_gen.h>

/* A generator for one compact JSON value (no newlines inside). */
yajl_gen hs_json_new(void);
/* Key/value helpers; they do nothing on a NULL value unless noted. */
void hs_json_str(yajl_gen g, const char *s);
void hs_json_kstr(yajl_gen g, const char *key, const char *val); /* NULL value: null */
void hs_json_kint(yajl_gen g, const char *key, long long val);
void hs_json_kbool(yajl_gen g, const char *key, int val);
void hs_json_key(yajl_gen g, const char *key);
/*
 * Emit bytes under key when they are valid UTF-8, else base64 under
 * "<key>_b64" (so non-UTF-8 output survives JSON intact).
 */
void hs_json_kbytes(yajl_gen g, const char *key, const void *buf, size_t len);
/* 1 when buf is valid UTF-8 (no overlongs, no surrogates). */
int hs_utf8_valid(const void *buf, size_t len);
/* The length of the UTF-8 sequence a lead byte starts (0: not a lead byte). */
size_t hs_utf8_seq_len(unsigned char c);
/* How many bytes at the end of buf begin a UTF-8 character cut short (0 to 3). */
size_t hs_utf8_cut(const unsigned char *buf, size_t len);
/* Base64-encode; out must hold 4*((len+2)/3)+1 bytes.  Returns the length. */
size_t hs_base64_encode(const void *buf, size_t len, char *out);
/* Decode base64; returns the decoded length or -1 on malformed input. */
long hs_base64_decode(const char *in, size_t len, unsigned char *out);
/* The generator's buffer plus a newline, malloc'd (*len set); frees g.  NULL on failure. */
char *hs_json_take(yajl_gen g, size_t *len);
/* Write the generator's buffer followed by a newline to fd, then free it. */
int hs_json_emit(yajl_gen g, int fd);

#endif /* HS_JSON_H */
