/* SPDX-License-Identifier: MIT */
/*
 * egress.h - network egress by allowlist (hs.conf(5) "network", "allow").
 *
 * A session with network "allowlist" has no route out of its sandbox but
 * an endpoint the runner listens on; every connection through it is
 * decided here, in the core: the request is parsed (request.c), the target
 * name matched against the allow rules and refused when it is an IP
 * literal (filter.c), resolved on the host, every resolved address
 * classified and refused when it is loopback, private, link-local, CGNAT,
 * a metadata endpoint, multicast, unspecified or an IPv4 address embedded
 * in IPv6 unless an explicit CIDR rule admits it, and the connection made
 * to the very address that was checked (resolve.c).  Nothing here trusts
 * bytes from the sandbox beyond what the parser checked.
 *
 * filter.c and request.c are pure (no I/O, no globals) so the unit tests
 * and the fuzz target drive them directly.
 */
#ifndef HS_EGRESS_H
#define HS_EGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The longest DNS name (without the trailing dot). */
#define HS_EGRESS_HOST_MAX 253

enum hs_egress_kind {
	HS_EGRESS_HOST = 0,   /* "pypi.org": exactly that name */
	HS_EGRESS_SUFFIX = 1, /* "*.npmjs.org": any name below npmjs.org (not itself) */
	HS_EGRESS_CIDR = 2,   /* "10.1.0.0/16": addresses, also special ones */
};

/* Port of a rule written without one: the web ports 80 and 443. */
#define HS_EGRESS_PORT_WEB 0

/* One allow rule. */
struct hs_egress_rule {
	int kind;                          /* enum hs_egress_kind */
	char host[HS_EGRESS_HOST_MAX + 1]; /* lower case; SUFFIX: the domain without "*." */
	int port;                          /* 1-65535, or HS_EGRESS_PORT_WEB */
	int family;                        /* CIDR: AF_INET or AF_INET6 */
	uint8_t net[16];                   /* CIDR: network address (4 or 16 bytes) */
	int prefix;                        /* CIDR: prefix length */
	char text[300];                    /* the rule as written back (audit, messages) */
};

/* An allow list. */
struct hs_egress_rules {
	struct hs_egress_rule *r;
	size_t n;
};

/*
 * Parse one entry: "host", "*.domain", "host:port", "*.domain:port",
 * "a.b.c.d/len", "a.b.c.d/len:port", "v6::/len", "[v6::/len]:port".
 * Names are folded to lower case and a trailing dot dropped.  A bare IP
 * address is refused (an address is allowed only as a CIDR, "/32").
 * Returns 0, or -1 with "'ENTRY': why" in err.
 */
int hs_egress_rule_parse(const char *text, struct hs_egress_rule *r, char *err, size_t errlen);

/*
 * Parse a list of entries into out (free with hs_egress_rules_free).  An
 * item of digits only is the port of the item before it: a list given as
 * colon-separated text ("HS_ALLOW=github.com:443") arrives split at the
 * colon.  Returns 0, or -1 with a reason.
 */
int hs_egress_rules_parse(const char *const *items, size_t n, struct hs_egress_rules *out,
                          char *err, size_t errlen);
void hs_egress_rules_free(struct hs_egress_rules *rs);

/*
 * The rules as text, space-separated (each in the form the parser reads
 * back), into buf.  An empty list is "-" (allowlist with nothing allowed).
 * Returns 0, or -1 when buf is too small.
 */
int hs_egress_rules_text(const struct hs_egress_rules *rs, char *buf, size_t len);

/* 1 when everything rule b admits, rule a admits too (a ceiling check). */
int hs_egress_rule_covers(const struct hs_egress_rule *a, const struct hs_egress_rule *b);

/*
 * Check that every rule of want lies within a rule of ceil.  Returns 0, or
 * -1 with "'ENTRY' is not within ..." in err.
 */
int hs_egress_rules_within(const struct hs_egress_rules *ceil, const struct hs_egress_rules *want,
                           char *err, size_t errlen);

/*
 * 1 when host is an IP address in any form a resolver or URL parser would
 * take as one: dotted quads, shortened or hexadecimal or octal IPv4
 * ("127.1", "0x7f.1", "2130706433"), a name whose last label is a number,
 * IPv6 with or without brackets or a zone.  Else 0.
 */
int hs_egress_is_ip_literal(const char *host);

/*
 * 1 when host is a syntactically valid DNS name (letters, digits, '-',
 * '_' and dots; labels of 1-63; at most 253 characters, a trailing dot
 * allowed).  An IP literal is not a name.
 */
int hs_egress_name_valid(const char *host);

/* Address classes; everything but PUBLIC needs an explicit CIDR rule. */
enum hs_egress_class {
	HS_EGRESS_PUBLIC = 0,
	HS_EGRESS_LOOPBACK,
	HS_EGRESS_PRIVATE,
	HS_EGRESS_LINKLOCAL,
	HS_EGRESS_CGNAT,
	HS_EGRESS_METADATA,
	HS_EGRESS_MULTICAST,
	HS_EGRESS_UNSPECIFIED,
	HS_EGRESS_MAPPED,   /* an IPv4 address inside IPv6 (mapped, compatible, NAT64, 6to4, Teredo) */
	HS_EGRESS_RESERVED, /* documentation, benchmarking, broadcast, future use */
};

/* The class of an AF_INET or AF_INET6 address (other families: RESERVED). */
int hs_egress_addr_class(const struct sockaddr *sa);
/* A static name for a class ("private", "metadata"...). */
const char *hs_egress_class_name(int cls);

/* What the filter decided about one attempt. */
struct hs_egress_verdict {
	int allow;
	const struct hs_egress_rule *rule; /* the rule that allowed it, or NULL */
	char reason[256];                  /* why it was refused; "" when allowed */
};

/*
 * First step, before any resolution: may host:port be asked for at all?
 * Refuses an IP literal (unless a CIDR rule admits that address and
 * port), an invalid name, and a name no rule matches.  On allow,
 * v->rule is the name rule (or the CIDR rule for a literal).  Returns
 * v->allow.
 */
int hs_egress_check_name(const struct hs_egress_rules *rs, const char *host, int port,
                         struct hs_egress_verdict *v);

/*
 * Second step, for each address the name resolved to: a PUBLIC address is
 * allowed under the name's rule (v->rule as the first step left it); any
 * other class only when a CIDR rule contains the address and admits port,
 * which then becomes v->rule.  Returns v->allow.
 */
int hs_egress_check_addr(const struct hs_egress_rules *rs, const struct sockaddr *sa, int port,
                         struct hs_egress_verdict *v);

/* 1 when rule r admits port (a rule without a port admits 80 and 443). */
int hs_egress_port_ok(const struct hs_egress_rule *r, int port);

/* The longest request head (request line and headers) the endpoint reads. */
#define HS_EGRESS_HEAD_MAX 8192

enum hs_egress_req_kind {
	HS_EGRESS_CONNECT = 1, /* "CONNECT host:port HTTP/1.x": a tunnel */
	HS_EGRESS_FORWARD = 2, /* "GET http://host[:port]/path HTTP/1.x": plain HTTP */
	HS_EGRESS_SOCKS = 3,   /* a SOCKS5 CONNECT (RFC 1928, no authentication) */
};

/* A parsed proxy request. */
struct hs_egress_req {
	int kind;                          /* enum hs_egress_req_kind */
	char host[HS_EGRESS_HOST_MAX + 3]; /* as asked (an IPv6 literal keeps its brackets) */
	int port;
	size_t head_len;                   /* bytes of the input the head took */
	/* FORWARD: the head (NUL-terminated) to send to the server (origin-form request line,
	 * Proxy-* and hop-by-hop headers dropped, "Connection: close" added). */
	char out[HS_EGRESS_HEAD_MAX + 64];
	size_t out_len;
};

/*
 * Parse the head of a proxy request from the first len bytes of buf.
 * Returns 1 with r filled when the head is complete, 0 when more bytes are
 * needed (len < HS_EGRESS_HEAD_MAX), -1 when the request is malformed or
 * refused (too long, not HTTP/1.x, a method other than CONNECT for an
 * authority, an https:// or userinfo URL, a Host header that disagrees with
 * the URL, two Host headers, a bare CR or LF, a NUL) with a one-line reason
 * in why.  Pure; r->out is filled only for FORWARD.
 */
int hs_egress_req_parse(const char *buf, size_t len, struct hs_egress_req *r, char *why,
                        size_t whylen);

/*
 * SOCKS5 (RFC 1928), CONNECT only and without authentication.  A client
 * first sends a greeting: returns 1 with *used set when it is complete and
 * offers "no authentication" (the endpoint answers 05 00), 0 when more bytes
 * are needed, -1 when it is not SOCKS5 or offers no usable method (answer
 * 05 FF) with a reason in why.  Pure.
 */
int hs_egress_socks_greeting(const char *buf, size_t len, size_t *used, char *why, size_t whylen);

/*
 * The request after the greeting: returns 1 with r filled (kind
 * HS_EGRESS_SOCKS, host as a name or a plain IP address, port, head_len),
 * 0 when more bytes are needed, -1 when it is malformed or not CONNECT
 * (*reply: the SOCKS reply code to send, 1 general failure or 7 command not
 * supported) with a reason in why.  Pure.
 */
int hs_egress_socks_request(const char *buf, size_t len, struct hs_egress_req *r, int *reply,
                            char *why, size_t whylen);

#endif /* HS_EGRESS_H */
