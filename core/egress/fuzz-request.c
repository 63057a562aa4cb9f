/* SPDX-License-Identifier: MIT */
/*
 * fuzz-request.c - libFuzzer target for the egress endpoint's request
 * parser (hs_egress_req_parse, and the SOCKS5 greeting and request) and
 * the name checks that follow it: any
 * bytes a sandboxed client sends are parsed without a crash, and what a
 * parsed request reports holds together.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/egress/egress.h"

int hs_fuzz_egress(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
hs_fuzz_egress(const uint8_t *data, size_t size)
{
	static struct hs_egress_req r;
	static const char *const items[] = { "example.org", "*.example.net:8080", "10.0.0.0/8" };
	struct hs_egress_rules rs;
	struct hs_egress_verdict v;
	char why[256];

	if (hs_egress_rules_parse(items, 3, &rs, why, sizeof(why)) < 0)
		abort();
	int rc = hs_egress_req_parse((const char *)data, size, &r, why, sizeof(why));
	if (rc < -1 || rc > 1)
		abort();
	if (rc == 1) {
		/* The head lies inside the input, and the host is a string. */
		if (r.head_len > size || r.head_len > HS_EGRESS_HEAD_MAX || r.port < 1 ||
		    r.port > 65535 || !memchr(r.host, '\0', sizeof(r.host)) ||
		    (r.kind != HS_EGRESS_CONNECT && r.kind != HS_EGRESS_FORWARD))
			abort();
		if (r.kind == HS_EGRESS_FORWARD &&
		    (r.out_len > sizeof(r.out) || r.out_len < 4 ||
		     memcmp(r.out + r.out_len - 4, "\r\n\r\n", 4) != 0))
			abort();
		/* An allowed name is never an address. */
		if (hs_egress_check_name(&rs, r.host, r.port, &v) && !v.rule)
			abort();
	}
	/* The same bytes as a SOCKS5 greeting followed by a request. */
	size_t used = 0;
	int reply = 0;
	if (hs_egress_socks_greeting((const char *)data, size, &used, why, sizeof(why)) == 1) {
		if (used > size)
			abort();
		rc = hs_egress_socks_request((const char *)data + used, size - used, &r, &reply, why,
		                             sizeof(why));
		if (rc == 1 && (r.kind != HS_EGRESS_SOCKS || r.head_len > size - used || r.port < 1 ||
		                !memchr(r.host, '\0', sizeof(r.host))))
			abort();
		if (rc == 1)
			(void)hs_egress_check_name(&rs, r.host, r.port, &v);
	}
	hs_egress_rules_free(&rs);
	return 0;
}

/* The smoke test links several targets together: it calls the hs_fuzz_* names. */
#ifndef HS_FUZZ_SMOKE
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return hs_fuzz_egress(data, size);
}
#endif
