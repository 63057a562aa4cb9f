#!/bin/bash
# SPDX-License-Identifier: MIT
# throughput.sh - output throughput of `hs run` vs a raw pipe, with hs's peak RSS.
#
#   HS=/path/to/hs bench/throughput.sh [BYTES] [RUNS]
#
# Sends BYTES (default 1000000000) of /dev/zero through
#   hs run -- 'head -c BYTES /dev/zero' > /dev/null      (local backend)
# and through the raw pipe
#   head -c BYTES /dev/zero | cat > /dev/null
# RUNS times each (default 3, interleaved), and prints the median MB/s of each,
# their ratio, and hs's peak RSS (GNU time's %M, the largest of the runs).
# Every run is bounded by `timeout`.
set -u

here=$(cd "$(dirname "$0")" && pwd)
HS=${HS:-$here/../core/hs}
BYTES=${1:-1000000000}
RUNS=${2:-3}
LIMIT=${THROUGHPUT_TIMEOUT:-120}

die() { echo "throughput: $*" >&2; exit 1; }
[ -x "$HS" ] || die "hs not found at $HS (set HS=/path/to/hs)"
[ -x /usr/bin/time ] || die "/usr/bin/time (GNU time) is needed for the peak RSS"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hs-throughput-XXXXXX") || die "mktemp failed"
mkdir -p "$tmp/state" "$tmp/run" "$tmp/cfg/hs" && chmod 700 "$tmp/run"
echo 'runner_idle = 30;' > "$tmp/cfg/hs/hs.conf"
cleanup() {
	# Stop any hs-runner daemon this script started (its --dir is under $tmp).
	local p
	for p in /proc/[0-9]*; do
		if { tr "\0" " " < "$p/cmdline"; } 2>/dev/null | grep -q "hs-runner.* $tmp/"; then
			kill "${p#/proc/}" 2>/dev/null
		fi
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
export XDG_STATE_HOME=$tmp/state XDG_RUNTIME_DIR=$tmp/run XDG_CONFIG_HOME=$tmp/cfg

now() { date +%s%N; }

hs_ns=() raw_ns=() rss=0
for ((i = 0; i < RUNS; i++)); do
	t0=$(now)
	timeout "$LIMIT" /usr/bin/time -f %M -o "$tmp/rss" \
		"$HS" run -- "head -c $BYTES /dev/zero" > /dev/null 2> "$tmp/hs.err"
	rc=$?
	t1=$(now)
	[ $rc -eq 0 ] || die "hs run failed (exit $rc): $(tail -n 3 "$tmp/hs.err")"
	hs_ns+=($((t1 - t0)))
	r=$(tail -n 1 "$tmp/rss")
	[ "$r" -gt "$rss" ] && rss=$r

	t0=$(now)
	timeout "$LIMIT" bash -c "head -c $BYTES /dev/zero | cat > /dev/null" || die "raw pipe failed"
	t1=$(now)
	raw_ns+=($((t1 - t0)))
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
hs_med=$(median "${hs_ns[@]}")
raw_med=$(median "${raw_ns[@]}")
# Decimal MB (10^6 bytes) per second.
mbps() { awk -v b="$BYTES" -v ns="$1" 'BEGIN {printf "%.0f", b / 1e6 / (ns / 1e9)}'; }

echo "Output throughput, $BYTES bytes of /dev/zero, median of $RUNS runs"
printf '  %-52s %8s MB/s  (%.2f s)\n' "hs run -- 'head -c $BYTES /dev/zero' > /dev/null" \
	"$(mbps "$hs_med")" "$(awk -v n="$hs_med" 'BEGIN {print n / 1e9}')"
printf '  %-52s %8s MB/s  (%.2f s)\n' "head -c $BYTES /dev/zero | cat > /dev/null" \
	"$(mbps "$raw_med")" "$(awk -v n="$raw_med" 'BEGIN {print n / 1e9}')"
awk -v h="$hs_med" -v r="$raw_med" 'BEGIN {printf "  ratio hs / raw pipe throughput: %.2f (hs takes %.2fx as long)\n", r / h, h / r}'
awk -v k="$rss" 'BEGIN {printf "  hs peak RSS: %d KiB (%.1f MiB; largest of the runs)\n", k, k / 1024}'
