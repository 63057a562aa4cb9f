/* SPDX-License-Identifier: MIT */
/*
 * test-egress - the egress filter (core/egress/filter.c) and the proxy
 * request parser (core/egress/request.c): rule syntax, name and port
 * matching, IP literals in every spelling, address classes, ceilings, and
 * malformed requests.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/egress/egress.h"

static void
rules(struct hs_egress_rules *rs, const char *const *items, size_t n)
{
	char err[256] = "";
	int rc = hs_egress_rules_parse(items, n, rs, err, sizeof(err));
	if (rc != 0)
		fail_msg("rules: %s", err);
}

static void
test_rule_syntax(void **state)
{
	(void)state;
	struct hs_egress_rule r;
	char err[256];

	assert_int_equal(hs_egress_rule_parse("PyPI.org.", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, HS_EGRESS_HOST);
	assert_string_equal(r.host, "pypi.org");
	assert_int_equal(r.port, HS_EGRESS_PORT_WEB);
	assert_int_equal(hs_egress_rule_parse("*.npmjs.org", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, HS_EGRESS_SUFFIX);
	assert_string_equal(r.text, "*.npmjs.org");
	assert_int_equal(hs_egress_rule_parse("github.com:22", &r, err, sizeof(err)), 0);
	assert_int_equal(r.port, 22);
	assert_int_equal(hs_egress_rule_parse("10.1.2.3/16:5432", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, HS_EGRESS_CIDR);
	assert_string_equal(r.text, "10.1.0.0/16:5432");
	assert_int_equal(hs_egress_rule_parse("fd00::/8", &r, err, sizeof(err)), 0);
	assert_int_equal(r.family, AF_INET6);
	assert_int_equal(hs_egress_rule_parse("[fd00::/8]:443", &r, err, sizeof(err)), 0);
	assert_int_equal(r.port, 443);

	static const char *const bad[] = { "", "1.2.3.4", "127.1", "0x7f000001", "[::1]", "::1",
	                                   "*", "*.org", "a*.b.org", "host:0", "host:65536",
	                                   "host:", "host:8o", "-a.org", "a-.org", "a..org",
	                                   "10.0.0.0/33", "fd00::/129", "a b.org", "1.2.3.4:80",
	                                   "x.1", "http://pypi.org", "pypi.org/simple" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (hs_egress_rule_parse(bad[i], &r, err, sizeof(err)) != -1)
			fail_msg("'%s' was accepted", bad[i]);
		assert_non_null(strstr(err, "'"));
	}
}

static void
test_list_rejoins_ports(void **state)
{
	(void)state;
	/* HS_ALLOW=github.com:443:pypi.org arrives split at every colon. */
	static const char *const items[] = { "github.com", "443", "pypi.org" };
	struct hs_egress_rules rs;
	rules(&rs, items, 3);
	assert_int_equal(rs.n, 2);
	assert_string_equal(rs.r[0].text, "github.com:443");
	assert_string_equal(rs.r[1].text, "pypi.org");
	/* As a session record keeps them: space-separated, read back the same. */
	char text[64], small[8];
	assert_int_equal(hs_egress_rules_text(&rs, text, sizeof(text)), 0);
	assert_string_equal(text, "github.com:443 pypi.org");
	assert_int_equal(hs_egress_rules_text(&rs, small, sizeof(small)), -1);
	hs_egress_rules_free(&rs);
	rules(&rs, NULL, 0);
	assert_int_equal(hs_egress_rules_text(&rs, text, sizeof(text)), 0);
	assert_string_equal(text, "-");
	hs_egress_rules_free(&rs);
}

static void
test_ip_literals(void **state)
{
	(void)state;
	static const char *const lit[] = { "127.0.0.1", "127.1", "2130706433", "0x7f.0.0.1",
	                                   "0x7f000001", "017700000001", "1.2.3.4.", "[::1]",
	                                   "::ffff:127.0.0.1", "[fe80::1%eth0]", "example.123",
	                                   "a.0x1f", "169.254.169.254" };
	for (size_t i = 0; i < sizeof(lit) / sizeof(lit[0]); i++)
		if (!hs_egress_is_ip_literal(lit[i]))
			fail_msg("'%s' not seen as an address", lit[i]);
	static const char *const names[] = { "pypi.org", "a1.example", "0x.example", "123abc.org",
	                                     "files.pythonhosted.org." };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (hs_egress_is_ip_literal(names[i]))
			fail_msg("'%s' taken for an address", names[i]);
}

static void
test_name_matching(void **state)
{
	(void)state;
	static const char *const items[] = { "pypi.org", "*.npmjs.org", "github.com:22" };
	struct hs_egress_rules rs;
	struct hs_egress_verdict v;
	rules(&rs, items, 3);

	assert_true(hs_egress_check_name(&rs, "pypi.org", 443, &v));
	assert_string_equal(v.rule->text, "pypi.org");
	assert_true(hs_egress_check_name(&rs, "PYPI.ORG.", 80, &v));
	assert_false(hs_egress_check_name(&rs, "pypi.org", 22, &v));
	assert_non_null(strstr(v.reason, "not in the allow list"));
	assert_false(hs_egress_check_name(&rs, "evilpypi.org", 443, &v));
	assert_false(hs_egress_check_name(&rs, "pypi.org.evil.com", 443, &v));
	assert_false(hs_egress_check_name(&rs, "sub.pypi.org", 443, &v));
	assert_true(hs_egress_check_name(&rs, "registry.npmjs.org", 443, &v));
	assert_string_equal(v.rule->text, "*.npmjs.org");
	assert_true(hs_egress_check_name(&rs, "a.b.npmjs.org", 443, &v));
	assert_false(hs_egress_check_name(&rs, "npmjs.org", 443, &v));
	assert_false(hs_egress_check_name(&rs, "xnpmjs.org", 443, &v));
	assert_true(hs_egress_check_name(&rs, "github.com", 22, &v));
	assert_false(hs_egress_check_name(&rs, "github.com", 443, &v));
	/* Literals and junk, refused before any lookup. */
	assert_false(hs_egress_check_name(&rs, "127.0.0.1", 443, &v));
	assert_non_null(strstr(v.reason, "IP address"));
	assert_false(hs_egress_check_name(&rs, "[::1]", 443, &v));
	assert_false(hs_egress_check_name(&rs, "pypi.org/", 443, &v));
	assert_false(hs_egress_check_name(&rs, "pypi.org", 0, &v));
	assert_false(hs_egress_check_name(&rs, "", 443, &v));
	hs_egress_rules_free(&rs);
}

static int
check_addr(const struct hs_egress_rules *rs, const char *host, const char *addr, int port,
           const char **rule)
{
	struct sockaddr_storage ss = { 0 };
	static struct hs_egress_verdict v; /* *rule points into it */
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, addr, &s6->sin6_addr), 1);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, addr, &s4->sin_addr), 1);
	}
	if (!hs_egress_check_name(rs, host, port, &v))
		return -1;
	int ok = hs_egress_check_addr(rs, (struct sockaddr *)&ss, port, &v);
	if (rule)
		*rule = ok ? v.rule->text : v.reason;
	return ok;
}

static void
test_address_classes(void **state)
{
	(void)state;
	static const char *const items[] = { "ok.example", "10.9.0.0/16", "[fd00::/8]:443" };
	struct hs_egress_rules rs;
	const char *rule;
	rules(&rs, items, 3);

	assert_int_equal(check_addr(&rs, "ok.example", "93.184.216.34", 443, &rule), 1);
	assert_string_equal(rule, "ok.example");
	assert_int_equal(check_addr(&rs, "ok.example", "2606:2800:220:1::1", 443, NULL), 1);
	/* A permitted name that resolves to a special address is refused ... */
	static const char *const special[] = {
		"127.0.0.1", "127.255.0.9", "10.0.0.1", "172.16.3.4", "172.31.255.255", "192.168.1.1",
		"100.64.0.1", "100.127.255.254", "169.254.169.254", "169.254.1.1", "224.0.0.251",
		"239.1.1.1", "0.0.0.0", "0.1.2.3", "255.255.255.255", "240.0.0.1", "192.0.2.1",
		"198.18.0.1", "::", "::1", "fe80::1", "fd00:ec2::254", "fc00::1", "ff02::1",
		"::ffff:93.184.216.34", "::ffff:127.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1",
		"2002:7f00:1::", "2001:0:4136:e378::1", "2001:db8::1", "fec0::1", "4000::1" };
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
		if (check_addr(&rs, "ok.example", special[i], 80, &rule) != 0)
			fail_msg("'%s' was allowed", special[i]);
		assert_non_null(strstr(rule, "address"));
	}
	check_addr(&rs, "ok.example", "169.254.169.254", 80, &rule);
	assert_non_null(strstr(rule, "metadata"));
	check_addr(&rs, "ok.example", "fd00:ec2::254", 80, &rule);
	assert_non_null(strstr(rule, "metadata"));
	check_addr(&rs, "ok.example", "::ffff:127.0.0.1", 80, &rule);
	assert_non_null(strstr(rule, "IPv4-in-IPv6"));
	check_addr(&rs, "ok.example", "100.64.0.1", 80, &rule);
	assert_non_null(strstr(rule, "CGNAT"));
	/* ... unless an explicit range admits it, on its port. */
	assert_int_equal(check_addr(&rs, "ok.example", "10.9.3.4", 443, &rule), 1);
	assert_string_equal(rule, "10.9.0.0/16");
	assert_int_equal(check_addr(&rs, "ok.example", "10.10.3.4", 443, NULL), 0);
	assert_int_equal(check_addr(&rs, "ok.example", "fd12::1", 443, &rule), 1);
	assert_int_equal(check_addr(&rs, "ok.example", "fd12::1", 80, NULL), 0);
	assert_int_equal(check_addr(&rs, "ok.example", "fd00:ec2::254", 443, &rule), 1);
	/* A literal inside an allowed range is allowed in its plain form only. */
	assert_int_equal(check_addr(&rs, "10.9.0.5", "10.9.0.5", 80, &rule), 1);
	assert_int_equal(check_addr(&rs, "10.9.5", "10.9.0.5", 80, NULL), -1);
	assert_int_equal(check_addr(&rs, "10.8.0.5", "10.8.0.5", 80, NULL), -1);
	hs_egress_rules_free(&rs);
}

static void
test_ceilings(void **state)
{
	(void)state;
	static const char *const admin[] = { "pypi.org", "*.npmjs.org", "10.0.0.0/8", "git.example:22" };
	static const char *const ok[] = { "pypi.org:443", "registry.npmjs.org", "*.cdn.npmjs.org",
	                                  "*.npmjs.org:80", "10.1.0.0/16", "git.example:22" };
	static const char *const bad[] = { "pypi.org:22", "npmjs.org", "*.other.org", "files.pythonhosted.org",
	                                   "10.0.0.0/7", "11.0.0.0/8", "git.example", "10.0.0.0/8:22" };
	struct hs_egress_rules a, w;
	char err[256];
	rules(&a, admin, 4);
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		rules(&w, ok + i, 1);
		if (hs_egress_rules_within(&a, &w, err, sizeof(err)) != 0)
			fail_msg("'%s' refused: %s", ok[i], err);
		hs_egress_rules_free(&w);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rules(&w, bad + i, 1);
		if (hs_egress_rules_within(&a, &w, err, sizeof(err)) != -1)
			fail_msg("'%s' passed the ceiling", bad[i]);
		assert_non_null(strstr(err, "locked"));
		hs_egress_rules_free(&w);
	}
	hs_egress_rules_free(&a);
}

static int
parse(const char *s, struct hs_egress_req *r, char *why)
{
	return hs_egress_req_parse(s, strlen(s), r, why, 256);
}

static void
test_request_connect(void **state)
{
	(void)state;
	static struct hs_egress_req r;
	char why[256];
	const char *s = "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n"
	                "User-Agent: curl\r\n\r\n\x16\x03\x01";

	assert_int_equal(parse(s, &r, why), 1);
	assert_int_equal(r.kind, HS_EGRESS_CONNECT);
	assert_string_equal(r.host, "pypi.org");
	assert_int_equal(r.port, 443);
	assert_int_equal(r.head_len, strlen(s) - 3);
	/* Incomplete heads need more bytes; every prefix of a good one does. */
	for (size_t n = 0; n < r.head_len; n++)
		assert_int_equal(hs_egress_req_parse(s, n, &r, why, sizeof(why)), 0);
	assert_int_equal(parse("CONNECT [::1]:8443 HTTP/1.0\r\n\r\n", &r, why), 1);
	assert_string_equal(r.host, "[::1]");
	assert_int_equal(r.port, 8443);
}

static void
test_request_forward(void **state)
{
	(void)state;
	static struct hs_egress_req r;
	char why[256];

	assert_int_equal(parse("GET http://Files.Example:8080/a/b?c=d HTTP/1.1\r\n"
	                       "Host: files.example:8080\r\nProxy-Connection: keep-alive\r\n"
	                       "Proxy-Authorization: Basic eA==\r\nAccept: */*\r\n\r\n", &r, why), 1);
	assert_int_equal(r.kind, HS_EGRESS_FORWARD);
	assert_string_equal(r.host, "Files.Example");
	assert_int_equal(r.port, 8080);
	assert_int_equal(r.out_len, strlen(r.out));
	assert_string_equal(r.out, "GET /a/b?c=d HTTP/1.1\r\nHost: files.example:8080\r\n"
	                           "Accept: */*\r\nConnection: close\r\n\r\n");
	/* No Host header (HTTP/1.0): one is added; an empty path becomes "/". */
	assert_int_equal(parse("GET http://a.example HTTP/1.0\r\n\r\n", &r, why), 1);
	assert_int_equal(r.port, 80);
	assert_string_equal(r.out, "GET / HTTP/1.0\r\nHost: a.example:80\r\nConnection: close\r\n\r\n");
	assert_int_equal(parse("HEAD http://a.example?x HTTP/1.1\r\nHost: A.EXAMPLE:80\r\n\r\n", &r, why),
	                 1);
	assert_int_equal(strncmp(r.out, "HEAD /?x HTTP/1.1\r\n", 19), 0);
}

static void
test_request_malformed(void **state)
{
	(void)state;
	static struct hs_egress_req r;
	static const struct { const char *in, *why; } bad[] = {
		{ "GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n", "disagree" },
		{ "GET http://a.example/ HTTP/1.1\r\nHost: a.example:81\r\n\r\n", "disagree" },
		{ "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nhost: a.example\r\n\r\n", "two Host" },
		{ "CONNECT a.example:443 HTTP/1.1\r\nHost: b.example:443\r\n\r\n", "disagree" },
		{ "GET https://a.example/ HTTP/1.1\r\n\r\n", "CONNECT" },
		{ "GET /local HTTP/1.1\r\nHost: a.example\r\n\r\n", "absolute" },
		{ "GET http://u:p@a.example/ HTTP/1.1\r\n\r\n", "user information" },
		{ "GET http://a.example/#f HTTP/1.1\r\n\r\n", "fragment" },
		{ "CONNECT a.example HTTP/1.1\r\n\r\n", "host:port" },
		{ "CONNECT a.example:0 HTTP/1.1\r\n\r\n", "host:port" },
		{ "CONNECT a.example:99999 HTTP/1.1\r\n\r\n", "host:port" },
		{ "CONNECT a.example:443 HTTP/2.0\r\n\r\n", "HTTP/1" },
		{ "CONNECT a.example:443\r\n\r\n", "target" },
		{ "connect a.example:443 HTTP/1.1\r\n\r\n", "upper-case" },
		{ " a.example:443 HTTP/1.1\r\n\r\n", "method" },
		{ "GET http://a.example/ HTTP/1.1\nHost: a.example\n\n", "bare LF" },
		{ "GET http://a.example/ HTTP/1.1\r\nX: a\rb\r\n\r\n", "bare CR" },
		{ "CONNECT a.example:443 HTTP/1.1\r\nX: a\r\n b\r\n\r\n", "folded" },
		{ "CONNECT a.example:443 HTTP/1.1\r\n: v\r\n\r\n", "no name" },
		{ "CONNECT a.example:443 HTTP/1.1\r\nNo colon\r\n\r\n", "no name" },
		{ "CONNECT a.example:443 HTTP/1.1\r\nX(y): v\r\n\r\n", "header name" },
		{ "CONNECT a.example:443 HTTP/1.1\r\nX: \x01\r\n\r\n", "control" },
		{ "GET http://a.example/\x7f HTTP/1.1\r\n\r\n", "control" },
		{ "GET http://a ex/ HTTP/1.1\r\n\r\n", "HTTP/1" },
		{ "GET http:///x HTTP/1.1\r\n\r\n", "valid host" },
		{ "GET http://a.example:/x HTTP/1.1\r\n\r\n", "valid host" },
	};
	char why[256];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		if (parse(bad[i].in, &r, why) != -1 || !strstr(why, bad[i].why))
			fail_msg("request %zu: got '%s', wanted '%s'", i, why, bad[i].why);
	}
	/* A NUL anywhere in the head. */
	static const char nul[] = "CONNECT a.example:443 HTTP/1.1\r\nX: a\0b\r\n\r\n";
	assert_int_equal(hs_egress_req_parse(nul, sizeof(nul) - 1, &r, why, sizeof(why)), -1);
	/* A head that never ends is cut at the bound, not buffered forever. */
	size_t big = HS_EGRESS_HEAD_MAX + 100;
	char *s = malloc(big + 1);
	assert_non_null(s);
	memcpy(s, "CONNECT a.example:443 HTTP/1.1\r\n", 32);
	for (size_t i = 32; i < big; i += 8)
		memcpy(s + i, "X: yyy\r\n", big - i < 8 ? big - i : 8);
	assert_int_equal(hs_egress_req_parse(s, HS_EGRESS_HEAD_MAX - 1, &r, why, sizeof(why)), 0);
	assert_int_equal(hs_egress_req_parse(s, big, &r, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "longer"));
	free(s);
}

static void
test_socks(void **state)
{
	(void)state;
	static struct hs_egress_req r;
	char why[256];
	size_t used = 0;
	int reply;

	/* Greeting: no authentication must be among the methods. */
	assert_int_equal(hs_egress_socks_greeting("\x05", 1, &used, why, sizeof(why)), 0);
	assert_int_equal(hs_egress_socks_greeting("\x05\x02\x02", 3, &used, why, sizeof(why)), 0);
	assert_int_equal(hs_egress_socks_greeting("\x05\x02\x02\x00", 4, &used, why, sizeof(why)), 1);
	assert_int_equal(used, 4);
	assert_int_equal(hs_egress_socks_greeting("\x05\x01\x02", 3, &used, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "without authentication"));
	assert_int_equal(hs_egress_socks_greeting("\x05\x00", 2, &used, why, sizeof(why)), -1);
	assert_int_equal(hs_egress_socks_greeting("\x04\x01", 2, &used, why, sizeof(why)), -1);

	/* CONNECT to a name, to IPv4 and IPv6 addresses; every prefix needs more. */
	static const char name[] = "\x05\x01\x00\x03\x09pypi.org.\x01\xbb";
	for (size_t n = 0; n < sizeof(name) - 1; n++)
		assert_int_equal(hs_egress_socks_request(name, n, &r, &reply, why, sizeof(why)), 0);
	assert_int_equal(hs_egress_socks_request(name, sizeof(name) - 1, &r, &reply, why, sizeof(why)), 1);
	assert_int_equal(r.kind, HS_EGRESS_SOCKS);
	assert_string_equal(r.host, "pypi.org.");
	assert_int_equal(r.port, 443);
	assert_int_equal(r.head_len, sizeof(name) - 1);
	static const char v4[] = "\x05\x01\x00\x01\xa9\xfe\xa9\xfe\x00\x50";
	assert_int_equal(hs_egress_socks_request(v4, sizeof(v4) - 1, &r, &reply, why, sizeof(why)), 1);
	assert_string_equal(r.host, "169.254.169.254");
	assert_true(hs_egress_is_ip_literal(r.host));
	static const char v6[] = "\x05\x01\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00"
	                         "\x00\x00\x00\x00\x00\x00\x00\x01\x00\x16";
	assert_int_equal(hs_egress_socks_request(v6, sizeof(v6) - 1, &r, &reply, why, sizeof(why)), 1);
	assert_string_equal(r.host, "::1");
	assert_int_equal(r.port, 22);

	/* Malformed: not CONNECT (BIND, UDP ASSOCIATE), bad type, junk in the name, port 0. */
	assert_int_equal(hs_egress_socks_request("\x05\x03\x00\x01", 4, &r, &reply, why, sizeof(why)), -1);
	assert_int_equal(reply, 7);
	assert_int_equal(hs_egress_socks_request("\x05\x02\x00", 3, &r, &reply, why, sizeof(why)), -1);
	assert_int_equal(hs_egress_socks_request("\x05\x01\x00\x09\x00", 5, &r, &reply, why, sizeof(why)), -1);
	assert_int_equal(reply, 8);
	assert_int_equal(hs_egress_socks_request("\x05\x01\x01\x01", 4, &r, &reply, why, sizeof(why)), -1);
	static const char junk[] = "\x05\x01\x00\x03\x03" "a/b" "\x00\x50";
	assert_int_equal(hs_egress_socks_request(junk, sizeof(junk) - 1, &r, &reply, why, sizeof(why)), -1);
	static const char nul[] = "\x05\x01\x00\x03\x03" "a\0b" "\x00\x50";
	assert_int_equal(hs_egress_socks_request(nul, sizeof(nul) - 1, &r, &reply, why, sizeof(why)), -1);
	static const char port0[] = "\x05\x01\x00\x03\x01" "a" "\x00\x00";
	assert_int_equal(hs_egress_socks_request(port0, sizeof(port0) - 1, &r, &reply, why, sizeof(why)), -1);
	assert_int_equal(hs_egress_socks_request("\x05\x01\x00\x03\x00", 5, &r, &reply, why, sizeof(why)), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_syntax),
		cmocka_unit_test(test_list_rejoins_ports),
		cmocka_unit_test(test_ip_literals),
		cmocka_unit_test(test_name_matching),
		cmocka_unit_test(test_address_classes),
		cmocka_unit_test(test_ceilings),
		cmocka_unit_test(test_request_connect),
		cmocka_unit_test(test_request_forward),
		cmocka_unit_test(test_request_malformed),
		cmocka_unit_test(test_socks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
