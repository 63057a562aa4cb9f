/* SPDX-License-Identifier: MIT */
/*
 * filter.c - the egress allow rules: parsing, matching names and ports,
 * classifying addresses, ceilings.  Pure: no I/O and no globals, so the
 * unit tests drive every decision directly (tests/egress/test-egress.c).
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/egress/egress.h"

/* A decimal port 1-65535 of at most five digits; -1 when it is not one. */
static int
parse_port(const char *s)
{
	size_t n = strlen(s);
	int v = 0;

	if (n == 0 || n > 5)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v >= 1 && v <= 65535 ? v : -1;
}

static int
all_digits(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

int
hs_egress_is_ip_literal(const char *host)
{
	char buf[HS_EGRESS_HOST_MAX + 8];
	struct in_addr a4;
	struct in6_addr a6;
	size_t n = strlen(host);

	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, host, n + 1);
	/* [v6] and a zone ("fe80::1%eth0") are still literals. */
	if (buf[0] == '[' && n >= 2 && buf[n - 1] == ']') {
		memmove(buf, buf + 1, n - 2);
		buf[n - 2] = '\0';
		n -= 2;
	}
	char *pct = strchr(buf, '%');
	if (pct && strchr(buf, ':'))
		*pct = '\0';
	if (inet_pton(AF_INET6, buf, &a6) == 1 || inet_aton(buf, &a4) != 0)
		return 1;
	/* As URL parsers do (WHATWG "ends in a number"): a name whose last label
	 * is a decimal or 0x number is an IPv4 address to some resolver. */
	n = strlen(buf);
	if (n && buf[n - 1] == '.')
		buf[--n] = '\0';
	const char *last = strrchr(buf, '.');
	last = last ? last + 1 : buf;
	size_t ln = strlen(last);
	if (all_digits(last, ln))
		return 1;
	if (ln >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')) {
		size_t k = 2;
		while (k < ln && isxdigit((unsigned char)last[k]))
			k++;
		if (k == ln)
			return 1;
	}
	return 0;
}

int
hs_egress_name_valid(const char *host)
{
	size_t n = strlen(host), label = 0;

	if (n && host[n - 1] == '.')
		n--;
	if (n == 0 || n > HS_EGRESS_HOST_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)host[i];
		if (ch == '.') {
			if (label == 0 || host[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!isalnum(ch) && ch != '-' && ch != '_')
			return 0;
		if (ch == '-' && label == 0)
			return 0;
		if (++label > 63)
			return 0;
	}
	if (host[n - 1] == '-')
		return 0;
	return !hs_egress_is_ip_literal(host);
}

/* Lower-case copy of a name without its trailing dot into out (room for HOST_MAX + 1). */
static void
fold_name(const char *in, size_t n, char *out)
{
	if (n && in[n - 1] == '.')
		n--;
	for (size_t i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)in[i]);
	out[n] = '\0';
}

/* "a.b.c.d/len" or "v6/len" into r; 0, or -1. */
static int
parse_cidr(const char *s, struct hs_egress_rule *r)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	if (!slash || (size_t)(slash - s) >= sizeof(buf) || !all_digits(slash + 1, strlen(slash + 1)) ||
	    strlen(slash + 1) > 3)
		return -1;
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	int len = atoi(slash + 1);
	if (inet_pton(AF_INET, buf, r->net) == 1) {
		r->family = AF_INET;
		if (len > 32)
			return -1;
	} else if (inet_pton(AF_INET6, buf, r->net) == 1) {
		r->family = AF_INET6;
		if (len > 128)
			return -1;
	} else {
		return -1;
	}
	r->prefix = len;
	/* Host bits are cleared, so "10.1.2.3/8" means 10.0.0.0/8. */
	int bytes = r->family == AF_INET ? 4 : 16;
	for (int i = 0; i < bytes; i++) {
		int keep = len - i * 8;
		uint8_t mask = keep >= 8 ? 0xff : keep <= 0 ? 0 : (uint8_t)(0xff << (8 - keep));
		r->net[i] &= mask;
	}
	return 0;
}

int
hs_egress_rule_parse(const char *text, struct hs_egress_rule *r, char *err, size_t errlen)
{
	char body[HS_EGRESS_HOST_MAX + 8];
	const char *port_s = NULL;
	size_t n = strlen(text);

	memset(r, 0, sizeof(*r));
	if (n == 0 || n >= sizeof(body)) {
		snprintf(err, errlen, "'%.80s': an allow entry must be 1-%d characters", text,
		         HS_EGRESS_HOST_MAX);
		return -1;
	}
	memcpy(body, text, n + 1);
	if (strstr(body, "://"))
		goto bad;
	if (body[0] == '[') {
		/* "[v6::/len]:port" (or without the port). */
		char *close = strchr(body, ']');
		if (!close || (close[1] && (close[1] != ':' || !close[2])))
			goto bad;
		*close = '\0';
		if (close[1])
			port_s = close + 2;
		memmove(body, body + 1, strlen(body + 1) + 1);
	} else {
		char *c1 = strchr(body, ':'), *c2 = strrchr(body, ':');
		/* One colon: host:port.  More than one: an IPv6 CIDR without a port. */
		if (c1 && c1 == c2) {
			*c1 = '\0';
			port_s = c1 + 1;
		}
	}
	r->port = HS_EGRESS_PORT_WEB;
	if (port_s && (r->port = parse_port(port_s)) < 0) {
		snprintf(err, errlen, "'%s': the port must be a number from 1 to 65535", text);
		return -1;
	}
	if (strchr(body, '/')) {
		r->kind = HS_EGRESS_CIDR;
		if (parse_cidr(body, r) < 0) {
			snprintf(err, errlen, "'%s': not an address range (write 10.0.0.0/8 or fd00::/8)",
			         text);
			return -1;
		}
		char a[INET6_ADDRSTRLEN];
		inet_ntop(r->family, r->net, a, sizeof(a));
		if (r->port == HS_EGRESS_PORT_WEB)
			snprintf(r->text, sizeof(r->text), "%s/%d", a, r->prefix);
		else if (r->family == AF_INET6)
			snprintf(r->text, sizeof(r->text), "[%s/%d]:%d", a, r->prefix, r->port);
		else
			snprintf(r->text, sizeof(r->text), "%s/%d:%d", a, r->prefix, r->port);
		return 0;
	}
	const char *name = body;
	if (strncmp(body, "*.", 2) == 0) {
		r->kind = HS_EGRESS_SUFFIX;
		name = body + 2;
	} else {
		r->kind = HS_EGRESS_HOST;
	}
	if (hs_egress_is_ip_literal(name)) {
		snprintf(err, errlen, "'%s': an address is allowed only as a range (e.g. '%s/32'), "
		         "never by a name rule", text, name);
		return -1;
	}
	if (!hs_egress_name_valid(name) || strchr(name, '*'))
		goto bad;
	fold_name(name, strlen(name), r->host);
	/* A suffix must name a domain, not a top-level one on its own. */
	if (r->kind == HS_EGRESS_SUFFIX && !strchr(r->host, '.')) {
		snprintf(err, errlen, "'%s': a wildcard must name a domain with at least two labels "
		         "(e.g. '*.example.org')", text);
		return -1;
	}
	snprintf(r->text, sizeof(r->text), "%s%s", r->kind == HS_EGRESS_SUFFIX ? "*." : "", r->host);
	if (r->port != HS_EGRESS_PORT_WEB)
		snprintf(r->text + strlen(r->text), sizeof(r->text) - strlen(r->text), ":%d", r->port);
	return 0;
bad:
	snprintf(err, errlen, "'%s': not an allow entry (write host, *.domain, host:port or a CIDR "
	         "range)", text);
	return -1;
}

void
hs_egress_rules_free(struct hs_egress_rules *rs)
{
	free(rs->r);
	rs->r = NULL;
	rs->n = 0;
}

int
hs_egress_rules_parse(const char *const *items, size_t n, struct hs_egress_rules *out, char *err,
                      size_t errlen)
{
	out->r = calloc(n ? n : 1, sizeof(*out->r));
	out->n = 0;
	if (!out->r) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char joined[HS_EGRESS_HOST_MAX + 16];
		const char *item = items[i];
		/* "github.com:443" split at its colon: join the port back. */
		if (i + 1 < n && all_digits(items[i + 1], strlen(items[i + 1])) &&
		    !all_digits(item, strlen(item)) && !strchr(item, ':') &&
		    snprintf(joined, sizeof(joined), "%s:%s", item, items[i + 1]) < (int)sizeof(joined)) {
			item = joined;
			i++;
		}
		if (hs_egress_rule_parse(item, &out->r[out->n], err, errlen) < 0) {
			hs_egress_rules_free(out);
			return -1;
		}
		out->n++;
	}
	return 0;
}

int
hs_egress_rules_text(const struct hs_egress_rules *rs, char *buf, size_t len)
{
	size_t off = 0;

	if (len < 2)
		return -1;
	snprintf(buf, len, "-");
	for (size_t i = 0; i < rs->n; i++) {
		int n = snprintf(buf + off, len - off, "%s%s", i ? " " : "", rs->r[i].text);
		if (n < 0 || (size_t)n >= len - off)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

int
hs_egress_port_ok(const struct hs_egress_rule *r, int port)
{
	return r->port == HS_EGRESS_PORT_WEB ? port == 80 || port == 443 : port == r->port;
}

/* 1 when name (folded) is domain or below it; below only when strict. */
static int
name_under(const char *name, const char *domain, int strict)
{
	size_t n = strlen(name), d = strlen(domain);
	if (n == d)
		return !strict && strcmp(name, domain) == 0;
	return n > d && name[n - d - 1] == '.' && strcmp(name + n - d, domain) == 0;
}

/* 1 when addr (4 or 16 bytes of family) lies in r's range. */
static int
cidr_has(const struct hs_egress_rule *r, int family, const uint8_t *addr, int prefix_at_least)
{
	if (r->kind != HS_EGRESS_CIDR || r->family != family || prefix_at_least < r->prefix)
		return 0;
	int full = r->prefix / 8, rest = r->prefix % 8;
	if (memcmp(r->net, addr, (size_t)full) != 0)
		return 0;
	return rest == 0 || ((r->net[full] ^ addr[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

int
hs_egress_rule_covers(const struct hs_egress_rule *a, const struct hs_egress_rule *b)
{
	int port_ok = a->port == b->port ||
	              (a->port == HS_EGRESS_PORT_WEB && (b->port == 80 || b->port == 443));
	if (!port_ok)
		return 0;
	switch (a->kind) {
	case HS_EGRESS_HOST:
		return b->kind == HS_EGRESS_HOST && strcmp(a->host, b->host) == 0;
	case HS_EGRESS_SUFFIX:
		return (b->kind == HS_EGRESS_HOST && name_under(b->host, a->host, 1)) ||
		       (b->kind == HS_EGRESS_SUFFIX && name_under(b->host, a->host, 0));
	case HS_EGRESS_CIDR:
		return b->kind == HS_EGRESS_CIDR && cidr_has(a, b->family, b->net, b->prefix);
	default:
		return 0;
	}
}

int
hs_egress_rules_within(const struct hs_egress_rules *ceil, const struct hs_egress_rules *want,
                       char *err, size_t errlen)
{
	for (size_t i = 0; i < want->n; i++) {
		size_t k = 0;
		while (k < ceil->n && !hs_egress_rule_covers(&ceil->r[k], &want->r[i]))
			k++;
		if (k == ceil->n) {
			snprintf(err, errlen, "allow entry '%s' is not within the admin's locked allow list "
			         "(ask the admin)", want->r[i].text);
			return -1;
		}
	}
	return 0;
}

/* The address bytes of sa (4 or 16) and its family; NULL for others. */
static const uint8_t *
addr_bytes(const struct sockaddr *sa, int *family)
{
	*family = sa->sa_family;
	if (sa->sa_family == AF_INET)
		return (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
	if (sa->sa_family == AF_INET6)
		return (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
	return NULL;
}

static int
class_v4(const uint8_t *a)
{
	uint32_t v = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
	static const struct { uint32_t net; int len; int cls; } t[] = {
		{ 0xa9fea9fe, 32, HS_EGRESS_METADATA },    /* 169.254.169.254 */
		{ 0x00000000, 8, HS_EGRESS_UNSPECIFIED },  /* 0.0.0.0/8 "this network" */
		{ 0x7f000000, 8, HS_EGRESS_LOOPBACK },
		{ 0x0a000000, 8, HS_EGRESS_PRIVATE },
		{ 0xac100000, 12, HS_EGRESS_PRIVATE },
		{ 0xc0a80000, 16, HS_EGRESS_PRIVATE },
		{ 0x64400000, 10, HS_EGRESS_CGNAT },
		{ 0xa9fe0000, 16, HS_EGRESS_LINKLOCAL },
		{ 0xe0000000, 4, HS_EGRESS_MULTICAST },
		{ 0xf0000000, 4, HS_EGRESS_RESERVED },     /* future use and broadcast */
		{ 0xc0000000, 24, HS_EGRESS_RESERVED },    /* IETF protocol assignments */
		{ 0xc0000200, 24, HS_EGRESS_RESERVED },    /* documentation */
		{ 0xc6336400, 24, HS_EGRESS_RESERVED },
		{ 0xcb007100, 24, HS_EGRESS_RESERVED },
		{ 0xc6120000, 15, HS_EGRESS_RESERVED },    /* benchmarking */
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if ((v ^ t[i].net) >> (32 - t[i].len) == 0)
			return t[i].cls;
	return HS_EGRESS_PUBLIC;
}

static int
class_v6(const uint8_t *a)
{
	static const uint8_t zero[16], metadata[16] = { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54 };
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };

	if (memcmp(a, zero, 16) == 0)
		return HS_EGRESS_UNSPECIFIED;
	if (memcmp(a, zero, 15) == 0 && a[15] == 1)
		return HS_EGRESS_LOOPBACK;
	if (memcmp(a, metadata, 16) == 0)
		return HS_EGRESS_METADATA;
	/* IPv4 inside IPv6: mapped, compatible (::a.b.c.d), NAT64, 6to4, Teredo. */
	if (memcmp(a, mapped, 12) == 0 || memcmp(a, zero, 12) == 0 || memcmp(a, nat64, 12) == 0 ||
	    (a[0] == 0x20 && a[1] == 0x02) ||
	    (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0))
		return HS_EGRESS_MAPPED;
	if (a[0] == 0xff)
		return HS_EGRESS_MULTICAST;
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return HS_EGRESS_LINKLOCAL;
	if ((a[0] & 0xfe) == 0xfc || (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0))
		return HS_EGRESS_PRIVATE; /* unique local, and the old site-local */
	if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8)
		return HS_EGRESS_RESERVED; /* documentation */
	/* Only global unicast (2000::/3) is public. */
	return (a[0] & 0xe0) == 0x20 ? HS_EGRESS_PUBLIC : HS_EGRESS_RESERVED;
}

int
hs_egress_addr_class(const struct sockaddr *sa)
{
	int family;
	const uint8_t *a = addr_bytes(sa, &family);
	if (!a)
		return HS_EGRESS_RESERVED;
	return family == AF_INET ? class_v4(a) : class_v6(a);
}

const char *
hs_egress_class_name(int cls)
{
	static const char *const names[] = { "public", "loopback", "private", "link-local", "CGNAT",
	                                     "metadata", "multicast", "unspecified",
	                                     "IPv4-in-IPv6", "reserved" };
	return cls >= 0 && cls <= HS_EGRESS_RESERVED ? names[cls] : "unknown";
}

/* The CIDR rule that admits the address bytes and port, or NULL. */
static const struct hs_egress_rule *
cidr_rule(const struct hs_egress_rules *rs, int family, const uint8_t *a, int port)
{
	int full = family == AF_INET ? 32 : 128;
	for (size_t i = 0; i < rs->n; i++)
		if (cidr_has(&rs->r[i], family, a, full) && hs_egress_port_ok(&rs->r[i], port))
			return &rs->r[i];
	return NULL;
}

int
hs_egress_check_name(const struct hs_egress_rules *rs, const char *host, int port,
                     struct hs_egress_verdict *v)
{
	char name[HS_EGRESS_HOST_MAX + 1];
	size_t n = strlen(host);

	memset(v, 0, sizeof(*v));
	if (port < 1 || port > 65535) {
		snprintf(v->reason, sizeof(v->reason), "port %d is not a port", port);
		return 0;
	}
	if (hs_egress_is_ip_literal(host)) {
		/* An address only through an explicit range, and only in its plain form. */
		uint8_t a[16];
		const struct hs_egress_rule *r = NULL;
		if (inet_pton(AF_INET, host, a) == 1)
			r = cidr_rule(rs, AF_INET, a, port);
		else if (inet_pton(AF_INET6, host, a) == 1)
			r = cidr_rule(rs, AF_INET6, a, port);
		if (!r) {
			snprintf(v->reason, sizeof(v->reason), "'%.200s' is an IP address: only names "
			         "are allowed (or an address in an allowed range)", host);
			return 0;
		}
		v->rule = r;
		return v->allow = 1;
	}
	if (!hs_egress_name_valid(host)) {
		snprintf(v->reason, sizeof(v->reason), "'%.200s' is not a valid host name", host);
		return 0;
	}
	fold_name(host, n, name);
	for (size_t i = 0; i < rs->n; i++) {
		const struct hs_egress_rule *r = &rs->r[i];
		int match = r->kind == HS_EGRESS_HOST ? strcmp(name, r->host) == 0 :
		            r->kind == HS_EGRESS_SUFFIX && name_under(name, r->host, 1);
		if (match && hs_egress_port_ok(r, port)) {
			v->rule = r;
			return v->allow = 1;
		}
	}
	snprintf(v->reason, sizeof(v->reason), "'%s:%d' is not in the allow list", name, port);
	return 0;
}

int
hs_egress_check_addr(const struct hs_egress_rules *rs, const struct sockaddr *sa, int port,
                     struct hs_egress_verdict *v)
{
	int family, cls = hs_egress_addr_class(sa);
	const uint8_t *a = addr_bytes(sa, &family);
	const struct hs_egress_rule *r = a ? cidr_rule(rs, family, a, port) : NULL;

	v->allow = 0;
	v->reason[0] = '\0';
	if (r) {
		v->rule = r;
		return v->allow = 1;
	}
	if (cls == HS_EGRESS_PUBLIC && v->rule) {
		return v->allow = 1;
	}
	char text[INET6_ADDRSTRLEN] = "?";
	if (a)
		inet_ntop(family, a, text, sizeof(text));
	if (cls == HS_EGRESS_PUBLIC)
		snprintf(v->reason, sizeof(v->reason), "address %s is in no allowed range", text);
	else
		snprintf(v->reason, sizeof(v->reason), "address %s is %s; only an allowed range admits it",
		         text, hs_egress_class_name(cls));
	v->rule = NULL;
	return 0;
}
