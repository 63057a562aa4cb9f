/* SPDX-License-Identifier: MIT */
/*
 * json.c - conveniences over yajl's generator.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"

yajl_gen
hs_json_new(void)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	/* Keep "/" unescaped but reject nothing: hs validates UTF-8 itself. */
	return g;
}

void
hs_json_str(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

void
hs_json_key(yajl_gen g, const char *key)
{
	hs_json_str(g, key);
}

void
hs_json_kstr(yajl_gen g, const char *key, const char *val)
{
	hs_json_str(g, key);
	if (val)
		hs_json_str(g, val);
	else
		yajl_gen_null(g);
}

void
hs_json_kint(yajl_gen g, const char *key, long long val)
{
	hs_json_str(g, key);
	yajl_gen_integer(g, val);
}

void
hs_json_kbool(yajl_gen g, const char *key, int val)
{
	hs_json_str(g, key);
	yajl_gen_bool(g, val != 0);
}

int
hs_utf8_valid(const void *buf, size_t len)
{
	const unsigned char *s = buf;
	size_t i = 0;
	while (i < len) {
		unsigned c = s[i];
		size_t n;
		unsigned cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		for (size_t k = 1; k <= n; k++) {
			if (i + k >= len || (s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
hs_base64_encode(const void *buf, size_t len, char *out)
{
	const unsigned char *s = buf;
	size_t o = 0, i = 0;
	for (; i + 2 < len; i += 3) {
		unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = b64[(v >> 6) & 63];
		out[o++] = b64[v & 63];
	}
	if (i < len) {
		unsigned v = (unsigned)s[i] << 16 | (i + 1 < len ? (unsigned)s[i + 1] << 8 : 0);
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

static int
b64val(int c)
{
	const char *p = c ? strchr(b64, c) : NULL;
	return p ? (int)(p - b64) : -1;
}

long
hs_base64_decode(const char *in, size_t len, unsigned char *out)
{
	long o = 0;
	unsigned acc = 0;
	int bits = 0;
	size_t pad = 0;
	for (size_t i = 0; i < len; i++) {
		if (in[i] == '=') {
			pad++;
			continue;
		}
		if (pad)
			return -1;
		int v = b64val((unsigned char)in[i]);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (pad > 2 || (len % 4 != 0 && pad))
		return -1;
	return o;
}

void
hs_json_kbytes(yajl_gen g, const char *key, const void *buf, size_t len)
{
	if (hs_utf8_valid(buf, len)) {
		hs_json_str(g, key);
		yajl_gen_string(g, buf, len);
		return;
	}
	char k[64];
	char *enc = malloc(4 * ((len + 2) / 3) + 1);
	snprintf(k, sizeof(k), "%s_b64", key);
	hs_json_str(g, k);
	if (!enc) {
		yajl_gen_null(g);
		return;
	}
	size_t n = hs_base64_encode(buf, len, enc);
	yajl_gen_string(g, (const unsigned char *)enc, n);
	free(enc);
}

char *
hs_json_take(yajl_gen g, size_t *len)
{
	const unsigned char *buf;
	size_t n;
	char *line = NULL;

	if (yajl_gen_get_buf(g, &buf, &n) == yajl_gen_status_ok && (line = malloc(n + 1))) {
		memcpy(line, buf, n);
		line[n] = '\n';
		*len = n + 1;
	}
	yajl_gen_free(g);
	return line;
}

int
hs_json_emit(yajl_gen g, int fd)
{
	size_t len, off = 0;
	/* One write for the line when possible, so concurrent writers never interleave. */
	char *line = hs_json_take(g, &len);
	if (!line)
		return -1;
	while (off < len) {
		ssize_t w = write(fd, line + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(line);
	return off == len ? 0 : -1;
}

/* The length of the UTF-8 sequence a lead byte starts (0: not a lead byte). */
size_t
hs_utf8_seq_len(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 0;
}

/*
 * How many bytes at the end of buf start a UTF-8 character that the next
 * chunk may complete (0 to 3).  Only a lead byte followed by fewer
 * continuation bytes than it announces is held back; anything else is
 * sent as it is.
 */
size_t
hs_utf8_cut(const unsigned char *buf, size_t len)
{
	for (size_t back = 1; back <= 3 && back <= len; back++) {
		unsigned char c = buf[len - back];
		if ((c & 0xc0) == 0x80)
			continue; /* a continuation byte: look further back */
		size_t need = hs_utf8_seq_len(c);
		return need > back ? back : 0;
	}
	return 0;
}
