/* SPDX-License-Identifier: MIT */
#include "config.h"

/*
 * getopt.c - read a program's argv with its option grammar.
 *
 * One reader serves the rules (match.c) and the wrappers (resolve.c), so
 * what a rule sees as "--hard" is what the resolver would see: short
 * options clustered (-rf) with operands attached (-ufoo) or separate,
 * long options with =VALUE or a separate operand, and long names
 * abbreviated to any unambiguous prefix (--us for --user), as GNU
 * getopt_long() reads them.
 */
#include <fnmatch.h>
#include <string.h>
#include <strings.h>

#include "core/safety/internal.h"

/* The grammar's entry for the long name s[0..n): exact, else the one option it abbreviates. */
static const struct hs_longopt *
find_long(const struct hs_progdecl *d, const char *s, size_t n, int *ambiguous)
{
	const struct hs_longopt *hit = NULL;
	size_t k;

	*ambiguous = 0;
	if (!d)
		return NULL;
	for (k = 0; k < d->nlong; k++) {
		const struct hs_longopt *lo = &d->longs[k];

		if (lo->len < n || (d->single_dash ? strncasecmp(lo->name, s, n) : memcmp(lo->name, s, n)))
			continue;
		if (lo->len == n)
			return lo;
		if (hit)
			*ambiguous = 1;
		hit = lo;
	}
	/*
	 * Only a grammar that lists every option can tell what a prefix
	 * abbreviates.  A partial one still reads a prefix of a single option
	 * that runs code as that option (tar --use-compress-prog): if the
	 * program finds it ambiguous it runs nothing at all.
	 */
	if (*ambiguous || !hit)
		return NULL;
	if (!d->complete && hit->kind != HS_OK_CODE && hit->kind != HS_OK_SPLIT && hit->kind != HS_OK_OPAQUE)
		return NULL;
	return hit;
}

static int
takes_operand(int kind)
{
	return kind == HS_OK_ARG || kind == HS_OK_CODE || kind == HS_OK_SPLIT || kind == HS_OK_OPAQUE ||
	       kind == HS_OK_INT || kind == HS_OK_CHDIR;
}

int
hs_opt_next(const struct hs_progdecl *d, const char *const *argv, int argc, struct hs_optstate *st,
	    struct hs_opt *o)
{
	const struct hs_longopt *lo;
	const char *a, *eq;
	int amb;

	memset(o, 0, sizeof(*o));
	if (st->cl) {
		a = st->cl;
	} else {
		if (st->i >= argc)
			return 0;
		a = argv[st->i];
		if (a[0] != '-' || !a[1])
			return 0;
		if (a[1] == '-' && !a[2]) {
			st->i++;
			st->dashdash = 1;
			return 0;
		}
		o->word = a;
		st->i++;
		if (a[1] == '-' || (d && d->single_dash)) {
			a += a[1] == '-' ? 2 : 1;
			eq = strchr(a, d && d->single_dash ? ':' : '=');
			o->is_long = 1;
			o->name = a;
			o->len = eq ? (size_t)(eq - a) : strlen(a);
			lo = find_long(d, o->name, o->len, &amb);
			if (lo) {
				o->lo = lo;
				o->name = lo->name;
				o->len = lo->len;
				o->kind = lo->kind;
			}
			if (eq)
				o->value = eq + 1;
			else if (takes_operand(o->kind) && st->i < argc)
				o->value = argv[st->i++];
			return 1;
		}
		a++;
	}
	/* One letter of a cluster. */
	o->word = o->word ? o->word : argv[st->i - 1];
	o->name = a;
	o->len = 1;
	lo = d && (unsigned char)*a < 128 ? d->sopt[(unsigned char)*a] : NULL;
	o->lo = lo;
	o->kind = lo ? lo->kind : HS_OK_UNKNOWN;
	st->cl = a[1] ? a + 1 : NULL;
	if (takes_operand(o->kind) || o->kind == HS_OK_OPTARG) {
		if (a[1]) {
			o->value = a + 1;
		} else if (o->kind != HS_OK_OPTARG && st->i < argc) {
			o->value = argv[st->i++];
		}
		st->cl = NULL;
	}
	return 1;
}

const char *
hs_opt_code(const struct hs_opt *o)
{
	const char *const *w;
	const char *eq, *weq, *val;
	char key[128];
	size_t kl;

	if (o->kind != HS_OK_CODE || !o->value)
		return NULL;
	if (!o->lo || !o->lo->when)
		return o->value;
	/* KEY=VALUE operands (git -c, tar --checkpoint-action): only some keys run code; ssh -o also takes "KEY VALUE". */
	eq = o->value + strcspn(o->value, "= \t");
	if (!*eq)
		eq = NULL;
	if (!eq || (size_t)(eq - o->value) >= sizeof(key))
		return NULL;
	kl = (size_t)(eq - o->value);
	memcpy(key, o->value, kl);
	key[kl] = '\0';
	for (w = o->lo->when; *w; w++) {
		char pat[128];

		weq = strchr(*w, '=');
		if (!weq || (size_t)(weq - *w) >= sizeof(pat))
			continue;
		memcpy(pat, *w, (size_t)(weq - *w));
		pat[weq - *w] = '\0';
		if (fnmatch(pat, key, FNM_CASEFOLD))
			continue;
		val = eq + 1;
		if (*eq != '=')
			val += strspn(val, " \t=");
		if (!strncmp(val, weq + 1, strlen(weq + 1)))
			return val + strlen(weq + 1);
	}
	return NULL;
}
