# SPDX-License-Identifier: MIT
# Sourced by the slurm tests: private dirs, a private cluster, check helpers.
set -u
HS=${top_builddir:?}/core/hs
. "${top_srcdir:-$top_builddir}/tests/slurm/cluster.sh"
T=$(mktemp -d /tmp/hs-sltest.XXXXXX)
mkdir -p "$T/config/hs" "$T/state" "$T/cache"
mkdir -m 700 "$T/run"
export XDG_STATE_HOME=$T/state XDG_CONFIG_HOME=$T/config XDG_CACHE_HOME=$T/cache XDG_RUNTIME_DIR=$T/run
sl_cleanup() {
	slurm_stop
	rm -rf "$T"
}
trap sl_cleanup EXIT
fails=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }
is() { # is NAME GOT WANT
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got [$2], want [$3]"; fi
}
has() { # has NAME TEXT REGEX
	if printf '%s\n' "$2" | grep -qE -- "$3"; then ok "$1"; else bad "$1: [$2] lacks /$3/"; fi
}
conf() { # conf 'KEY = VALUE; ...': the slurm section of the private config
	printf 'slurm = { partition = "%s"; %s };\n' "$SL_PART" "$*" > "$XDG_CONFIG_HOME/hs/hs.conf"
}
jobs_in_queue() { squeue -h -o %i 2>/dev/null | wc -l; }
record() { cat "$XDG_STATE_HOME/hs/slurm/hs-$(id -u)-$1.job" 2>/dev/null; }
record_job() { record "$1" | sed -n 's/^job=//p'; }
finish() {
	[ $fails -eq 0 ] || { echo "--- slurmctld.log"; tail -15 "$SL_DIR/slurmctld.log"; echo "--- slurmd.log"; tail -15 "$SL_DIR/slurmd.log"; }
	echo "$fails failure(s)"
	[ $fails -eq 0 ]
}
