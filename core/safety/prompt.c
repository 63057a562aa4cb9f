/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * prompt.c - escape commands for display, parse approval answers.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/safety/prompt.h"

/* Length of the valid UTF-8 sequence at s (1..4) and its code point, or 0. */
static size_t
utf8_seq(const unsigned char *s, size_t n, unsigned long *cp)
{
	size_t len, i;
	unsigned long v;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		v = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		v = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		v = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and out-of-range values are not valid. */
	if ((len == 2 && v < 0x80) || (len == 3 && v < 0x800) || (len == 4 && v < 0x10000) ||
	    v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

static int
hidden_unicode(unsigned long cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff || cp == 0x2028 || cp == 0x2029 || cp == 0x061c ||
	       cp == 0x00ad;
}

size_t
hs_prompt_escape(const char *in, size_t inlen, char *out, size_t outlen)
{
	const unsigned char *s = (const unsigned char *)in;
	char tmp[16];
	size_t i = 0, o = 0, l, sl;
	unsigned long cp;

	if (!outlen)
		return 0;
	while (i < inlen) {
		l = utf8_seq(s + i, inlen - i, &cp);
		if (l == 0) {
			snprintf(tmp, sizeof(tmp), "\\x%02x", s[i]);
			l = 1;
		} else if (cp == '\\') {
			snprintf(tmp, sizeof(tmp), "\\\\");
		} else if (cp == '\n') {
			snprintf(tmp, sizeof(tmp), "\\n");
		} else if (cp == '\t') {
			snprintf(tmp, sizeof(tmp), "\\t");
		} else if (cp == '\r') {
			snprintf(tmp, sizeof(tmp), "\\r");
		} else if (cp < 0x20 || cp == 0x7f) {
			snprintf(tmp, sizeof(tmp), "\\x%02lx", cp);
		} else if (hidden_unicode(cp)) {
			snprintf(tmp, sizeof(tmp), "\\u%04lx", cp);
		} else {
			memcpy(tmp, s + i, l);
			tmp[l] = '\0';
		}
		sl = strlen(tmp);
		if (o + sl + 1 > outlen)
			break;
		memcpy(out + o, tmp, sl);
		o += sl;
		i += l;
	}
	out[o] = '\0';
	return o;
}

enum hs_answer
hs_prompt_parse_answer(const char *s)
{
	static const struct {
		const char *word;
		enum hs_answer a;
	} words[] = {
		{ "o", HS_ANSWER_ONCE }, { "once", HS_ANSWER_ONCE }, { "s", HS_ANSWER_SESSION },
		{ "session", HS_ANSWER_SESSION }, { "a", HS_ANSWER_ALWAYS }, { "always", HS_ANSWER_ALWAYS },
		{ "d", HS_ANSWER_DENY }, { "deny", HS_ANSWER_DENY },
	};
	size_t n, k;

	if (!s)
		return HS_ANSWER_INVALID;
	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	for (k = 0; k < sizeof(words) / sizeof(words[0]); k++)
		if (strlen(words[k].word) == n && !strncasecmp(s, words[k].word, n))
			return words[k].a;
	return HS_ANSWER_INVALID;
}

const char *
hs_answer_name(enum hs_answer a)
{
	switch (a) {
	case HS_ANSWER_ONCE: return "once";
	case HS_ANSWER_SESSION: return "session";
	case HS_ANSWER_ALWAYS: return "always";
	case HS_ANSWER_DENY: return "deny";
	case HS_ANSWER_INVALID: break;
	}
	return "invalid";
}
