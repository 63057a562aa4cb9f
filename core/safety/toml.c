/* SPDX-License-Identifier: MIT */
/*
 * toml.c - the strict TOML subset reader (see toml.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/safety/toml.h"

struct cur {
	const char *p, *end;
	unsigned line;
	char *err;
	size_t errlen;
};

static int
fail(struct cur *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(c->err, c->errlen, "line %u: %s", c->line, msg);
	return -1;
}

static void
skip_ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
}

/* After a value or header: only blanks and a comment until the line ends. */
static int
end_of_line(struct cur *c)
{
	skip_ws(c);
	if (c->p < c->end && *c->p == '#')
		while (c->p < c->end && *c->p != '\n')
			c->p++;
	if (c->p < c->end && *c->p == '\r')
		c->p++;
	if (c->p < c->end && *c->p != '\n')
		return fail(c, "unexpected '%c' after the value", *c->p);
	if (c->p < c->end)
		c->p++;
	c->line++;
	return 0;
}

static int
bare_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '-';
}

static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Append the UTF-8 encoding of cp to out (room for 4 bytes is guaranteed). */
static size_t
put_utf8(char *out, unsigned long cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A "basic" or 'literal' one-line string at c->p; *out is malloc'd. */
static int
string(struct cur *c, char **out)
{
	char q = *c->p++;
	const char *start = c->p;
	size_t cap = 0;

	while (c->p < c->end && *c->p != q && *c->p != '\n') {
		if (q == '"' && *c->p == '\\' && c->p + 1 < c->end && c->p[1] != '\n')
			c->p++, cap++;
		c->p++, cap++;
	}
	if (c->p >= c->end || *c->p != q)
		return fail(c, "unterminated string");
	if (c->p == start && c->p + 1 < c->end && c->p[1] == q)
		return fail(c, "multi-line strings are not supported");
	char *s = malloc(cap * 4 + 1), *o = s;
	if (!s)
		return fail(c, "out of memory");
	for (const char *p = start; p < c->p; p++) {
		unsigned char ch = (unsigned char)*p;
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
			free(s);
			return fail(c, "control character in a string");
		}
		if (q == '\'' || ch != '\\') {
			*o++ = (char)ch;
			continue;
		}
		if (++p >= c->p) {
			free(s);
			return fail(c, "unterminated string");
		}
		switch (*p) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case 'b': *o++ = '\b'; break;
		case 't': *o++ = '\t'; break;
		case 'n': *o++ = '\n'; break;
		case 'f': *o++ = '\f'; break;
		case 'r': *o++ = '\r'; break;
		case 'u':
		case 'U': {
			int nd = *p == 'u' ? 4 : 8;
			unsigned long cp = 0;
			for (int i = 0; i < nd; i++) {
				int h = p + 1 < c->p ? hexval(*++p) : -1;
				if (h < 0) {
					free(s);
					return fail(c, "bad \\u escape");
				}
				cp = cp * 16 + (unsigned long)h;
			}
			if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
				free(s);
				return fail(c, "bad \\u escape");
			}
			o += put_utf8(o, cp);
			break;
		}
		default:
			free(s);
			return fail(c, "unknown escape '\\%c'", *p);
		}
	}
	*o = '\0';
	c->p++; /* closing quote */
	*out = s;
	return 0;
}

/* A bare or quoted key (or section name). */
static int
key(struct cur *c, char **out)
{
	if (c->p < c->end && (*c->p == '"' || *c->p == '\''))
		return string(c, out);
	const char *start = c->p;
	while (c->p < c->end && bare_char(*c->p))
		c->p++;
	if (c->p == start)
		return c->p < c->end ? fail(c, "expected a key, found '%c'", *c->p)
		                     : fail(c, "expected a key");
	*out = strndup(start, (size_t)(c->p - start));
	return *out ? 0 : fail(c, "out of memory");
}

static int
value(struct cur *c, char **out, int *type)
{
	if (c->p >= c->end || *c->p == '\n')
		return fail(c, "missing value");
	if (*c->p == '"' || *c->p == '\'') {
		*type = HS_TOML_STRING;
		return string(c, out);
	}
	const char *start = c->p;
	while (c->p < c->end && bare_char(*c->p))
		c->p++;
	size_t n = (size_t)(c->p - start);
	if ((n == 4 && memcmp(start, "true", 4) == 0) || (n == 5 && memcmp(start, "false", 5) == 0)) {
		*type = HS_TOML_BOOL;
	} else {
		size_t i = (n > 0 && (*start == '-' || *start == '+')) ? 1 : 0;
		if (i == n || n - i > 18)
			return fail(c, "unsupported value (only strings, true/false and integers)");
		for (; i < n; i++)
			if (start[i] < '0' || start[i] > '9')
				return fail(c, "unsupported value (only strings, true/false and integers)");
		*type = HS_TOML_INT;
	}
	*out = strndup(start, n);
	return *out ? 0 : fail(c, "out of memory");
}

static void
wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

int
hs_toml_parse(struct hs_toml *t, const char *buf, size_t len, char *err, size_t errlen)
{
	struct cur c = { buf, buf + len, 1, err, errlen };
	const char *section = "";
	size_t cap = 0, scap = 0;

	memset(t, 0, sizeof(*t));
	if (len > HS_TOML_MAX_BYTES) {
		snprintf(err, errlen, "file is larger than %u bytes", HS_TOML_MAX_BYTES);
		return -1;
	}
	if (memchr(buf, '\0', len)) {
		snprintf(err, errlen, "file contains a NUL byte");
		return -1;
	}
	while (c.p < c.end) {
		skip_ws(&c);
		if (c.p >= c.end)
			break;
		if (*c.p == '#' || *c.p == '\n' || *c.p == '\r') {
			if (end_of_line(&c) < 0)
				goto bad;
			continue;
		}
		if (*c.p == '[') {
			char *name = NULL;
			c.p++;
			if (c.p < c.end && *c.p == '[') {
				fail(&c, "arrays of tables are not supported");
				goto bad;
			}
			skip_ws(&c);
			if (key(&c, &name) < 0)
				goto bad;
			skip_ws(&c);
			if (c.p >= c.end || *c.p != ']') {
				free(name);
				fail(&c, c.p < c.end && *c.p == '.' ? "dotted section names are not supported"
				                                     : "expected ']'");
				goto bad;
			}
			c.p++;
			for (size_t i = 0; i < t->n_sections; i++)
				if (strcmp(t->sections[i], name) == 0) {
					fail(&c, "section [%s] appears twice", name);
					free(name);
					goto bad;
				}
			if (t->n_sections == scap) {
				size_t nc = scap ? scap * 2 : 8;
				char **ns = nc <= HS_TOML_MAX_ENTRIES ? realloc(t->sections, nc * sizeof(*ns)) : NULL;
				if (!ns) {
					free(name);
					fail(&c, "too many sections");
					goto bad;
				}
				t->sections = ns;
				scap = nc;
			}
			t->sections[t->n_sections++] = name;
			section = name;
			if (end_of_line(&c) < 0)
				goto bad;
			continue;
		}
		struct hs_toml_entry e = { 0 };
		if (key(&c, &e.key) < 0)
			goto bad;
		skip_ws(&c);
		if (c.p < c.end && *c.p == '.') {
			free(e.key);
			fail(&c, "dotted keys are not supported");
			goto bad;
		}
		if (c.p >= c.end || *c.p != '=') {
			free(e.key);
			fail(&c, "expected '=' after the key");
			goto bad;
		}
		c.p++;
		skip_ws(&c);
		if (value(&c, &e.value, &e.type) < 0) {
			free(e.key);
			goto bad;
		}
		e.section = strdup(section);
		int dup = e.section && hs_toml_get(t, section, e.key) != NULL;
		if (!e.section || dup || (t->n == cap && cap >= HS_TOML_MAX_ENTRIES)) {
			fail(&c, !e.section ? "out of memory" : dup ? "key '%s' appears twice"
			                                            : "too many keys", e.key);
			free(e.section);
			free(e.key);
			wipe_free(e.value);
			goto bad;
		}
		if (t->n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct hs_toml_entry *ne = realloc(t->e, nc * sizeof(*ne));
			if (!ne) {
				free(e.section);
				free(e.key);
				wipe_free(e.value);
				fail(&c, "out of memory");
				goto bad;
			}
			t->e = ne;
			cap = nc;
		}
		t->e[t->n++] = e;
		if (end_of_line(&c) < 0)
			goto bad;
	}
	return 0;
bad:
	hs_toml_free(t);
	return -1;
}

const struct hs_toml_entry *
hs_toml_get(const struct hs_toml *t, const char *section, const char *key)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->e[i].section, section) == 0 && strcmp(t->e[i].key, key) == 0)
			return &t->e[i];
	return NULL;
}

void
hs_toml_free(struct hs_toml *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->e[i].section);
		free(t->e[i].key);
		wipe_free(t->e[i].value);
	}
	free(t->e);
	for (size_t i = 0; i < t->n_sections; i++)
		free(t->sections[i]);
	free(t->sections);
	memset(t, 0, sizeof(*t));
}
