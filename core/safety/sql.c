/* SPDX-License-Identifier: MIT */
/*
 * sql.c - is this SQL text destructive?
 *
 * DROP and TRUNCATE anywhere, and DELETE FROM without a WHERE in the same
 * statement, count as destructive.  Keywords are matched as whole words
 * outside string literals and comments, case-insensitively, so a mention
 * inside a quoted value does not count.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "core/safety/internal.h"

static int
kw_at(const char *s, size_t i, size_t n, const char *kw)
{
	size_t l = strlen(kw);

	if (i + l > n || strncasecmp(s + i, kw, l))
		return 0;
	if (i > 0 && (isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_'))
		return 0;
	return i + l == n || !(isalnum((unsigned char)s[i + l]) || s[i + l] == '_');
}

int
hs_sql_destructive(const char *sql)
{
	size_t n = strlen(sql), i = 0;
	int in_delete = 0, has_where = 0;
	char q;

	while (i <= n) {
		char c = i < n ? sql[i] : ';';

		if (c == '\'' || c == '"' || c == '`') {
			q = c;
			for (i++; i < n && sql[i] != q; i++)
				;
			i++;
			continue;
		}
		if (c == '-' && i + 1 < n && sql[i + 1] == '-') {
			while (i < n && sql[i] != '\n')
				i++;
			continue;
		}
		if (c == ';') {
			if (in_delete && !has_where)
				return 1;
			in_delete = has_where = 0;
			i++;
			continue;
		}
		if (kw_at(sql, i, n, "drop") || kw_at(sql, i, n, "truncate"))
			return 1;
		if (kw_at(sql, i, n, "delete"))
			in_delete = 1;
		else if (kw_at(sql, i, n, "where"))
			has_where = 1;
		i++;
	}
	return 0;
}
