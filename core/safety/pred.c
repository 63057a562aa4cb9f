/* SPDX-License-Identifier: MIT */
/*
 * pred.c - argument predicates: paths, globs, substrings, SQL, mounts.
 *
 * Paths are compared in a normal form: "~" for the home directory (from
 * "~", "$HOME", or the configured home spelled out), "." and ".." and
 * repeated slashes resolved, and a trailing glob component ("/ *" without the space)
 * replaced by the directory it ranges over, because "rm -rf /STAR" deletes
 * what "rm -rf /" would.
 */
#include "config.h"

#include <ctype.h>
#include <fnmatch.h>
#include <string.h>
#include <strings.h>

#include <hs/backend.h>

#include "core/safety/internal.h"
#include "core/safety/mounts.h"

static int
has_glob(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == '*' || s[i] == '?' || s[i] == '[')
			return 1;
	return 0;
}

/* Append s to buf as snprintf(buf, cap, "...%s") would: truncated, always terminated. */
static size_t
put_str(char *buf, size_t pos, size_t cap, const char *s)
{
	while (*s && pos + 1 < cap)
		buf[pos++] = *s++;
	buf[pos] = '\0';
	return pos;
}

int
hs_path_norm(const struct hs_policy *p, const char *in, const char *cwd, char *out, size_t outlen,
	     int *partial)
{
	char tmp[1024];
	const char *comp[128], *s;
	size_t clen[128], nc = 0, i, pos = 0, l;
	int home = 0;

	*partial = 0;
	if (!in || !*in || in[0] == HS_SH_DYN_CHAR)
		return 0;
	if (in[0] == '~') {
		if (in[1] && in[1] != '/') {
			/* ~user: only ~root has a known place. */
			if (strncmp(in, "~root", 5) || (in[5] && in[5] != '/'))
				return 0;
			put_str(tmp, put_str(tmp, 0, sizeof(tmp), "/root"), sizeof(tmp), in + 5);
		} else {
			home = 1;
			put_str(tmp, 0, sizeof(tmp), in + 1);
		}
	} else if (in[0] == '/') {
		if (p->home && p->home_len > 1 && !strncmp(in, p->home, p->home_len) &&
		    (in[p->home_len] == '/' || !in[p->home_len])) {
			home = 1;
			put_str(tmp, 0, sizeof(tmp), in + p->home_len);
		} else {
			put_str(tmp, 0, sizeof(tmp), in);
		}
	} else if (hs_cwd_is_unknown(cwd)) {
		return 0;
	} else if (cwd) {
		if (cwd[0] == '~') {
			home = 1;
			pos = put_str(tmp, 0, sizeof(tmp), cwd + 1);
		} else {
			pos = put_str(tmp, 0, sizeof(tmp), cwd);
		}
		pos = put_str(tmp, pos, sizeof(tmp), "/");
		put_str(tmp, pos, sizeof(tmp), in);
		pos = 0;
	} else {
		return 0;
	}
	for (s = tmp; *s;) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		l = strcspn(s, "/");
		if (memchr(s, HS_SH_DYN_CHAR, l)) {
			/* Known only up to here: judge the directory it is inside. */
			*partial = 1;
			break;
		}
		if (has_glob(s, l)) {
			*partial = 2;
			break;
		}
		if (l == 1 && s[0] == '.') {
			/* nothing */
		} else if (l == 2 && s[0] == '.' && s[1] == '.') {
			if (nc)
				nc--;
			else if (home)
				home = 0; /* above home: the parent of ~ is not known, call it / */
		} else if (nc < 128) {
			comp[nc] = s;
			clen[nc++] = l;
		}
		s += l;
	}
	if (*partial == 2)
		*partial = 0; /* a glob ranges over the directory: same as the directory */
	if (home)
		out[pos++] = '~';
	for (i = 0; i < nc && pos + clen[i] + 2 < outlen; i++) {
		out[pos++] = '/';
		memcpy(out + pos, comp[i], clen[i]);
		pos += clen[i];
	}
	if (pos == 0)
		out[pos++] = '/';
	out[pos] = '\0';
	return 1;
}

/* fnmatch(pat, path, FNM_PATHNAME) == 0, first comparing the literal prefix measured at load. */
static int
set_pat_match(const struct hs_pathset *set, size_t k, const char *pat, const char *path)
{
	size_t ll = set->litlen[k];

	if (!hs_prefix_eq(pat, path, ll))
		return 0;
	if (set->literal[k])
		return !path[ll];
	return !fnmatch(pat, path, FNM_PATHNAME);
}

static int
set_match_one(const struct hs_pathset *set, const char *path)
{
	size_t k;
	int hit = 0;

	for (k = 0; k < set->n; k++) {
		const char *pat = set->pats[k];

		if (pat[0] == '!') {
			if (set_pat_match(set, k, pat + 1, path))
				return 0;
		} else if (!hit && set_pat_match(set, k, pat, path)) {
			hit = 1;
		}
	}
	return hit;
}

static int
set_match_under(const struct hs_pathset *set, const char *path)
{
	char buf[1024];
	char *slash;

	put_str(buf, 0, sizeof(buf), path);
	for (;;) {
		if (set_match_one(set, buf))
			return 1;
		slash = strrchr(buf, '/');
		if (!slash || slash == buf)
			break;
		*slash = '\0';
	}
	return 0;
}

static int
path_pred(const struct hs_policy *p, const struct hs_pred *pr, const char *word, const char *cwd)
{
	char norm[1024];
	int partial;

	if (!hs_path_norm(p, word, cwd, norm, sizeof(norm), &partial))
		return 0;
	if (pr->kind == HS_P_PATH)
		return !partial && set_match_one(pr->set, norm);
	return set_match_under(pr->set, norm);
}

/*
 * "$X", "$X/", "/dev/$X", "~/$X": a value known only at run time
 * decides the path.  With the values before it taken as empty (an unset
 * variable), the path it still names, or the directory the run-time part
 * is inside, is in the set; a word that is all run-time counts as "/".
 */
static int
unknown_pred(const struct hs_policy *p, const struct hs_pred *pr, const char *word, const char *cwd)
{
	const char *rest = word, *eq = strchr(word, '=');
	char norm[1024];
	int partial;

	if (!strchr(word, HS_SH_DYN_CHAR)) {
		/* A relative path from a directory known only at run time (cd "$X"; rm -rf .). */
		if (hs_cwd_is_unknown(cwd) && word[0] && word[0] != '/' && word[0] != '~' && word[0] != '-')
			return set_match_one(pr->set, "/");
		return 0;
	}
	if (word[0] == '-' && eq)
		rest = word = eq + 1; /* --output=$X */
	while (*rest == HS_SH_DYN_CHAR)
		rest++;
	if (rest != word && *rest != '/')
		return *rest ? 0 : set_match_one(pr->set, "/");
	if (!hs_path_norm(p, rest, cwd, norm, sizeof(norm), &partial))
		return 0;
	return set_match_one(pr->set, norm);
}

/* Paths hide in words like of=/dev/sda, --file=~/.ssh/id_rsa or @~/.aws/credentials. */
static int
path_pred_word(const struct hs_policy *p, const struct hs_pred *pr, const char *word, const char *cwd)
{
	const char *eq, *at;

	if (word[0] != '-' && path_pred(p, pr, word, cwd))
		return 1;
	eq = strchr(word, '=');
	if (eq && path_pred(p, pr, eq[1] == '@' ? eq + 2 : eq + 1, cwd))
		return 1;
	at = strrchr(word, '@');
	if (at && (at == word || at[-1] == '=') && path_pred(p, pr, at + 1, cwd))
		return 1;
	return 0;
}

static int
has_pred(const char *word, const char *alts, size_t altlen)
{
	const char *a = alts, *end = alts + altlen, *bar;
	size_t wl = strlen(word), l, i;
	int c0;

	while (a < end) {
		bar = memchr(a, '|', (size_t)(end - a));
		l = bar ? (size_t)(bar - a) : (size_t)(end - a);
		if (l && l <= wl) {
			/* strncasecmp() folds with tolower() too: a cheap first look. */
			c0 = tolower((unsigned char)a[0]);
			for (i = 0; i + l <= wl; i++)
				if (tolower((unsigned char)word[i]) == c0 && !strncasecmp(word + i, a, l))
					return 1;
		}
		a += l + 1;
	}
	return 0;
}

int
hs_pred_match(const struct hs_policy *p, const struct hs_pred *pr, const char *word, const char *cwd)
{
	struct hs_mount m;

	if (!word)
		return 0;
	switch (pr->kind) {
	case HS_P_GLOB:
		if (!hs_prefix_eq(pr->arg, word, pr->litlen))
			return 0;
		if (pr->literal)
			return !word[pr->litlen];
		return !fnmatch(pr->arg, word, 0);
	case HS_P_IGLOB:
		return !fnmatch(pr->arg, word, FNM_CASEFOLD);
	case HS_P_PATH:
	case HS_P_UNDER:
		return path_pred_word(p, pr, word, cwd);
	case HS_P_UNKNOWN:
		return unknown_pred(p, pr, word, cwd);
	case HS_P_HAS:
		return has_pred(word, pr->arg, pr->arglen);
	case HS_P_SQL:
		return hs_sql_destructive(word);
	case HS_P_MOUNT:
		/*
		 * Only a SRC:DST spec, or a --mount spec with type=bind or a
		 * volume-opt=device=, can name a host source.
		 */
		if (!strchr(word, ':') && !strstr(word, "type=") && !strstr(word, "volume-opt="))
			return 0;
		if (hs_mount_assess(word, p->home, NULL, &m) != 0 || m.kind != HS_MOUNT_HOST)
			return 0;
		return hs_pred_match(p, pr->inner, m.source, NULL);
	case HS_P_VALUE:
		if (strncmp(word, pr->arg, pr->arglen) || word[pr->arglen] != '=')
			return 0;
		return hs_pred_match(p, pr->inner, word + pr->arglen + 1, cwd);
	}
	return 0;
}
