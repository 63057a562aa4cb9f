/* SPDX-License-Identifier: MIT */
/*
 * show.c - `hs session show`: the egress attempts of a session, read back
 * from the audit log (the one place they are recorded, so the listing and
 * the log never disagree).
 */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "core/core.h"
#include "core/egress/policy.h"
#include "core/json.h"

/* At most this many attempts are listed: the latest. */
#define SHOW_MAX 200

static const char *
str_at(yajl_val v, const char *a, const char *b)
{
	const char *path[] = { a, b, NULL };
	yajl_val s = yajl_tree_get(v, path, yajl_t_string);
	return s ? YAJL_GET_STRING(s) : NULL;
}

static long long
int_at(yajl_val v, const char *a, const char *b)
{
	const char *path[] = { a, b, NULL };
	yajl_val s = yajl_tree_get(v, path, yajl_t_number);
	return s && YAJL_IS_INTEGER(s) ? YAJL_GET_INTEGER(s) : 0;
}

/* One attempt, as text or JSON. */
static void
show_one(yajl_val v, yajl_gen g)
{
	const char *verdict = str_at(v, "verdict", NULL), *host = str_at(v, "egress", "host");
	const char *rule = str_at(v, "egress", "rule"), *reason = str_at(v, "egress", "reason");
	const char *addr = str_at(v, "egress", "address");
	long long port = int_at(v, "egress", "port"), out = int_at(v, "egress", "bytes_out");
	long long in = int_at(v, "egress", "bytes_in");

	if (g) {
		yajl_gen_map_open(g);
		hs_json_kint(g, "ts", int_at(v, "ts", NULL));
		hs_json_kstr(g, "decision", verdict);
		hs_json_kstr(g, "kind", str_at(v, "egress", "kind"));
		hs_json_kstr(g, "host", host);
		hs_json_kint(g, "port", port);
		hs_json_kstr(g, "address", addr);
		hs_json_kstr(g, "rule", rule);
		hs_json_kstr(g, "reason", reason);
		hs_json_kint(g, "bytes_out", out);
		hs_json_kint(g, "bytes_in", in);
		yajl_gen_map_close(g);
		return;
	}
	char target[300];
	snprintf(target, sizeof(target), "%s:%lld", host ? host : "?", port);
	if (verdict && strcmp(verdict, "allow") == 0)
		printf("  egress allow %-32s %s rule %s, %lld bytes out, %lld in%s%s\n", target,
		       addr ? addr : "?", rule ? rule : "?", out, in, reason ? "; " : "",
		       reason ? reason : "");
	else
		printf("  egress deny  %-32s %s\n", target, reason ? reason : "");
}

void
hs_egress_show(struct hs_core *c, const char *session, int64_t since_ms, yajl_gen g)
{
	char path[PATH_MAX];
	const char *p = hs_core_audit_path(c, path, sizeof(path));
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	char *line = NULL, **keep = NULL;
	size_t cap = 0, n = 0;

	if (!f && fd >= 0)
		close(fd);
	keep = calloc(SHOW_MAX, sizeof(*keep));
	while (f && keep && getline(&line, &cap, f) > 0) {
		/* Cheap filter first: only egress records are parsed. */
		if (!strstr(line, "\"egress\":{") || !strstr(line, session))
			continue;
		free(keep[n % SHOW_MAX]);
		keep[n % SHOW_MAX] = strdup(line);
		n++;
	}
	if (f)
		fclose(f);
	free(line);
	if (g) {
		hs_json_key(g, "egress");
		yajl_gen_array_open(g);
	}
	size_t first = n > SHOW_MAX ? n - SHOW_MAX : 0;
	for (size_t i = first; keep && i < n; i++) {
		char *s = keep[i % SHOW_MAX];
		yajl_val v = s ? yajl_tree_parse(s, NULL, 0) : NULL;
		const char *sn = v ? str_at(v, "session", NULL) : NULL;
		if (sn && strcmp(sn, session) == 0 && int_at(v, "ts", NULL) >= since_ms)
			show_one(v, g);
		yajl_tree_free(v);
	}
	if (g)
		yajl_gen_array_close(g);
	for (size_t i = 0; keep && i < SHOW_MAX; i++)
		free(keep[i]);
	free(keep);
}
