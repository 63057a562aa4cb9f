/* SPDX-License-Identifier: MIT */
/*
 * shell.c - the session shell wrapper (see shell.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/shell.h"

/*
 * bash: everything the wrapper needs is a builtin, so a command costs no
 * fork beyond the shell itself.  The EXIT trap runs for `exit N` inside the
 * command too; a command killed by a signal leaves the snapshot as it was.
 */
static const char bash_wrapper[] =
	"__hs_snap=$1 __hs_cd=$2 __hs_cmd=$3; set --\n"
	"if [ -r \"$__hs_snap\" ]; then . \"$__hs_snap\"; fi\n"
	"if [ -n \"$__hs_cd\" ]; then builtin cd -- \"$__hs_cd\" || builtin exit 125; fi\n"
	"__hs_save() {\n"
	"  __hs_rc=$?; trap - EXIT; builtin unset -f __hs_save\n"
	"  { builtin printf 'builtin cd -- %q 2>/dev/null\\n' \"$PWD\"; builtin export -p;\n"
	"    builtin declare -f; builtin alias -p; } 2>/dev/null >&3\n"
	"  builtin exit $__hs_rc\n"
	"}\n"
	"trap __hs_save EXIT\n"
	"shopt -s expand_aliases\n"
	"unset __hs_cd\n"
	"eval \"$__hs_cmd\"\n";

/* POSIX sh: cwd and exported variables only (functions cannot be listed portably). */
static const char sh_wrapper[] =
	"__hs_snap=$1 __hs_cd=$2 __hs_cmd=$3; set --\n"
	"if [ -r \"$__hs_snap\" ]; then . \"$__hs_snap\"; fi\n"
	"if [ -n \"$__hs_cd\" ]; then cd -- \"$__hs_cd\" || exit 125; fi\n"
	"__hs_q() { __hs_s=$1 __hs_o=; while :; do case $__hs_s in\n"
	"  *\\'*) __hs_o=\"$__hs_o${__hs_s%%\\'*}'\\\\''\"; __hs_s=${__hs_s#*\\'};;\n"
	"  *) __hs_o=\"$__hs_o$__hs_s\"; break;; esac; done; printf \"'%s'\" \"$__hs_o\"; }\n"
	"__hs_save() {\n"
	"  __hs_rc=$?; trap - EXIT\n"
	"  { printf 'cd -- '; __hs_q \"$PWD\"; printf ' 2>/dev/null\\n'; export -p; } 2>/dev/null >&3\n"
	"  exit $__hs_rc\n"
	"}\n"
	"trap __hs_save EXIT\n"
	"unset __hs_cd\n"
	"eval \"$__hs_cmd\"\n";

/*
 * The file variants, for backends that run each command through their own
 * exec (no runner, so no fd 3): the snapshot is written next to SNAPSHOT
 * inside the sandbox and renamed over it, when the fourth argument is 1.
 * Replaying it is quiet: a variable the image made readonly is skipped.
 *
 * What a persistent shell would keep, the snapshot keeps: the umask (022
 * when the session starts) and the cwd.  What belongs to one command does
 * not reach it: a directory given with -C (the session's cwd is written
 * back, unless the session starts with this command), and the variables
 * the backend's exec set for this command, named from the fifth argument
 * on.  Each such variable is set over the snapshot for the command and put
 * back to the session's own value (or unset) afterwards, unless the
 * command itself changed it.
 */
static const char bash_file_wrapper[] =
	"__hs_snap=$1 __hs_cd=$2 __hs_cmd=$3 __hs_keep=$4 __hs_home= __hs_i=0; builtin shift 4\n"
	"__hs_pn=(\"$@\") __hs_pv=() __hs_ps=() __hs_sv=(); builtin set --\n"
	"for __hs_n in \"${__hs_pn[@]}\"; do __hs_pv+=(\"${!__hs_n}\"); builtin unset -v \"$__hs_n\" 2>/dev/null; done\n"
	"builtin umask 022\n"
	"if [[ -r $__hs_snap ]]; then __hs_new=0; . \"$__hs_snap\" 2>/dev/null; else __hs_new=1; fi\n"
	"for __hs_n in \"${__hs_pn[@]}\"; do\n"
	"  if [[ -v $__hs_n ]]; then __hs_ps+=(1) __hs_sv+=(\"${!__hs_n}\"); else __hs_ps+=(0) __hs_sv+=(''); fi\n"
	"  builtin export \"$__hs_n=${__hs_pv[__hs_i++]}\" 2>/dev/null\n"
	"done\n"
	"if [[ -n $__hs_cd ]]; then\n"
	"  [[ $__hs_new = 1 ]] || __hs_home=$PWD\n"
	"  builtin cd -- \"$__hs_cd\" || builtin exit 125\n"
	"fi\n"
	"__hs_save() {\n"
	"  __hs_rc=$?; builtin trap - EXIT; builtin unset -f __hs_save\n"
	"  if [[ $__hs_keep = 1 ]]; then\n"
	"    __hs_i=0\n"
	"    for __hs_n in \"${__hs_pn[@]}\"; do\n"
	"      if [[ -v $__hs_n && ${!__hs_n} == \"${__hs_pv[__hs_i]}\" ]]; then\n"
	"        if [[ ${__hs_ps[__hs_i]} = 1 ]]; then builtin export \"$__hs_n=${__hs_sv[__hs_i]}\"\n"
	"        else builtin unset -v \"$__hs_n\"; fi\n"
	"      fi 2>/dev/null\n"
	"      __hs_i=$((__hs_i + 1))\n"
	"    done\n"
	"    builtin unset ${!HS_*} 2>/dev/null\n"
	"    [[ -z $__hs_home ]] || PWD=$__hs_home\n"
	"    { builtin printf 'builtin '; builtin umask -p;\n"
	"      builtin printf 'builtin cd -- %q 2>/dev/null\\n' \"$PWD\"; builtin export -p;\n"
	"      builtin declare -f; builtin alias -p; } 2>/dev/null >\"$__hs_snap.$$\" &&\n"
	"    command mv -f \"$__hs_snap.$$\" \"$__hs_snap\" 2>/dev/null\n"
	"  fi\n"
	"  builtin exit $__hs_rc\n"
	"}\n"
	"command mkdir -p -m 700 \"${__hs_snap%/*}\" 2>/dev/null\n"
	"builtin trap __hs_save EXIT\n"
	"builtin shopt -s expand_aliases\n"
	"builtin unset -v __hs_cd\n"
	"builtin eval \"$__hs_cmd\"\n";

/* The same in POSIX sh: indexed names through eval stand in for arrays. */
static const char sh_file_wrapper[] =
	"__hs_snap=$1 __hs_cd=$2 __hs_cmd=$3 __hs_keep=$4 __hs_home= __hs_i=0; shift 4\n"
	"__hs_pn=$*\n"
	"for __hs_n; do __hs_i=$((__hs_i + 1)); eval \"__hs_pv$__hs_i=\\${$__hs_n}; unset $__hs_n\" 2>/dev/null; done\n"
	"set --\n"
	"umask 022\n"
	"if [ -r \"$__hs_snap\" ]; then __hs_new=0; . \"$__hs_snap\" 2>/dev/null; else __hs_new=1; fi\n"
	"__hs_i=0\n"
	"for __hs_n in $__hs_pn; do __hs_i=$((__hs_i + 1))\n"
	"  eval \"if [ \\\"\\${$__hs_n+x}\\\" = x ]; then __hs_ps$__hs_i=1 __hs_sv$__hs_i=\\${$__hs_n};\"\\\n"
	"    \" else __hs_ps$__hs_i=0; fi; export $__hs_n=\\\"\\$__hs_pv$__hs_i\\\"\" 2>/dev/null\n"
	"done\n"
	"if [ -n \"$__hs_cd\" ]; then\n"
	"  [ \"$__hs_new\" = 1 ] || __hs_home=$PWD\n"
	"  cd -- \"$__hs_cd\" || exit 125\n"
	"fi\n"
	"__hs_q() { __hs_s=$1 __hs_o=; while :; do case $__hs_s in\n"
	"  *\\'*) __hs_o=\"$__hs_o${__hs_s%%\\'*}'\\\\''\"; __hs_s=${__hs_s#*\\'};;\n"
	"  *) __hs_o=\"$__hs_o$__hs_s\"; break;; esac; done; printf \"'%s'\" \"$__hs_o\"; }\n"
	"__hs_save() {\n"
	"  __hs_rc=$?; trap - EXIT\n"
	"  if [ \"$__hs_keep\" = 1 ]; then\n"
	"    __hs_i=0\n"
	"    for __hs_n in $__hs_pn; do __hs_i=$((__hs_i + 1))\n"
	"      eval \"if [ \\\"\\${$__hs_n+x}\\\" = x ] && [ \\\"\\$$__hs_n\\\" = \\\"\\$__hs_pv$__hs_i\\\" ]; then\"\\\n"
	"        \" if [ \\\"\\$__hs_ps$__hs_i\\\" = 1 ]; then export $__hs_n=\\\"\\$__hs_sv$__hs_i\\\";\"\\\n"
	"        \" else unset $__hs_n; fi; fi\" 2>/dev/null\n"
	"    done\n"
	"    [ -z \"$__hs_home\" ] || PWD=$__hs_home\n"
	"    { printf 'umask '; umask; printf 'cd -- '; __hs_q \"$PWD\";\n"
	"      printf ' 2>/dev/null\\n'; export -p; } 2>/dev/null \\\n"
	"      >\"$__hs_snap.$$\" && mv -f \"$__hs_snap.$$\" \"$__hs_snap\" 2>/dev/null\n"
	"  fi\n"
	"  exit $__hs_rc\n"
	"}\n"
	"mkdir -p -m 700 \"${__hs_snap%/*}\" 2>/dev/null\n"
	"trap __hs_save EXIT\n"
	"unset __hs_cd\n"
	"eval \"$__hs_cmd\"\n";

const char *
hs_shell_file_wrapper(const char *shell)
{
	return hs_shell_is_bash(shell) ? bash_file_wrapper : sh_file_wrapper;
}

int
hs_shell_is_bash(const char *shell)
{
	const char *b = strrchr(shell, '/');
	b = b ? b + 1 : shell;
	return strcmp(b, "bash") == 0;
}

const char *
hs_shell_wrapper(const char *shell)
{
	return hs_shell_is_bash(shell) ? bash_wrapper : sh_wrapper;
}

/* Length of one `declare -FLAGS NAME="value"` entry of bash's export -p, or 0. */
static size_t
entry_len(const char *p, const char *end)
{
	const char *q = p;
	int inq = 0;
	while (q < end) {
		if (inq) {
			if (*q == '\\' && q + 1 < end)
				q++;
			else if (*q == '"')
				inq = 0;
		} else if (*q == '"') {
			inq = 1;
		} else if (*q == '\n') {
			return (size_t)(q - p) + 1;
		}
		q++;
	}
	return (size_t)(end - p);
}

/* Length of one `export NAME='value'` entry of POSIX sh's export -p, or 0. */
static size_t
sh_entry_len(const char *p, const char *end)
{
	const char *q = p;
	int inq = 0;
	while (q < end) {
		if (*q == '\'')
			inq = !inq;
		else if (*q == '\n' && !inq)
			return (size_t)(q - p) + 1;
		q++;
	}
	return (size_t)(end - p);
}

/* Does the entry's NAME (at p) start with HS_?  Those configure hs, never a session. */
static int
hs_name(const char *p, const char *end)
{
	return end - p > 3 && memcmp(p, "HS_", 3) == 0;
}

size_t
hs_shell_filter_snapshot(char *buf, size_t len)
{
	char *r = buf, *w = buf, *end = buf + len;
	while (r < end) {
		size_t n;
		int drop = 0;
		if ((size_t)(end - r) > 9 && memcmp(r, "declare -", 9) == 0) {
			n = entry_len(r, end);
			/* Flags run up to the first space: readonly ones are not replayed. */
			const char *f = r + 9;
			for (; f < r + n && *f != ' '; f++)
				if (*f == 'r')
					drop = 1;
			drop |= hs_name(f + 1, r + n);
		} else if ((size_t)(end - r) > 7 && memcmp(r, "export ", 7) == 0) {
			/* POSIX sh: export NAME='value', the value quoted over lines if need be. */
			n = sh_entry_len(r, end);
			drop = hs_name(r + 7, r + n);
		} else {
			const char *nl = memchr(r, '\n', (size_t)(end - r));
			n = nl ? (size_t)(nl - r) + 1 : (size_t)(end - r);
		}
		if (!drop) {
			memmove(w, r, n);
			w += n;
		}
		r += n;
	}
	return (size_t)(w - buf);
}

size_t
hs_shell_quote(char *out, const char *s)
{
	size_t n = 0;

	if (out)
		out[n] = '\'';
	n++;
	for (; *s; s++) {
		if (*s == '\'') {
			if (out)
				memcpy(out + n, "'\\''", 4);
			n += 4;
		} else {
			if (out)
				out[n] = *s;
			n++;
		}
	}
	if (out)
		out[n] = '\'';
	return n + 1;
}
