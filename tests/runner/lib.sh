# SPDX-License-Identifier: MIT
# Shared setup for the hs-runner shell tests.
: "${top_builddir:=.}"
R="$top_builddir/runner/hs-runner"
H="$top_builddir/tests/runner/hsr-run"
T=$(mktemp -d /tmp/hsr-sh-XXXXXX) || exit 99
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_fail DESCRIPTION PATTERN COMMAND...: the command must fail with
# a message matching PATTERN.
expect_fail() {
	desc=$1 pat=$2; shift 2
	if out=$("$@" 2>&1); then fail "$desc: succeeded"; fi
	echo "$out" | grep -q -- "$pat" || fail "$desc: message '$out' lacks '$pat'"
	echo "ok: $desc"
}
