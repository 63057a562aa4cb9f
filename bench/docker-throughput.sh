#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/docker-throughput.sh - output throughput of `hs run -b docker`
# against what the docker transport alone moves (`docker exec CONTAINER head
# -c BYTES /dev/zero` into the same session's container), in one run, as a
# ratio (issue 25: target >= 0.5).  Starts a private dockerd (root) with the
# busybox test image (tests/docker/lib.sh).
# Usage: top_builddir=. HS=core/hs bash bench/docker-throughput.sh [BYTES=300000000] [RUNS=3]
set -u
HS=${HS:?set HS to the hs binary}
BYTES=${1:-300000000} RUNS=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
export top_builddir=${top_builddir:-$here/..} srcdir=${srcdir:-$here/..}
t=$(mktemp -d /tmp/hsdktp.XXXXXX)
. "$here/../tests/docker/lib.sh"
trap 'dk_stop; rm -rf "$t"' EXIT
mkdir -m 700 "$t/run"
export XDG_STATE_HOME=$t/state XDG_CONFIG_HOME=$t/config XDG_CACHE_HOME=$t/cache XDG_RUNTIME_DIR=$t/run
dk_start
dk_image_bb
dk_static_runner

now() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
mbps() { awk -v b="$BYTES" -v ns="$1" 'BEGIN {printf "%.0f", b / 1e6 / (ns / 1e9)}'; }

D=("$HS" run -b docker --image hstest-bb:1 -s tput)
"${D[@]}" -- true </dev/null || { echo "hs run -b docker failed"; exit 1; }
c=hs-$(id -u)-tput
hs_ns=() dk_ns=()
for ((i = 0; i < RUNS; i++)); do
	a=$(now)
	timeout 300 "${D[@]}" -- "head -c $BYTES /dev/zero" </dev/null >/dev/null || { echo "hs run failed"; exit 1; }
	b=$(now)
	hs_ns+=($((b - a)))
	a=$(now)
	timeout 300 docker exec "$c" head -c "$BYTES" /dev/zero >/dev/null || { echo "docker exec failed"; exit 1; }
	b=$(now)
	dk_ns+=($((b - a)))
done
"$HS" session close tput >/dev/null 2>&1
h=$(median "${hs_ns[@]}") d=$(median "${dk_ns[@]}")
echo "docker output throughput, $BYTES bytes of /dev/zero, median of $RUNS runs (private dockerd)"
printf '  %-62s %6s MB/s\n' "hs run -b docker -s S -- 'head -c $BYTES /dev/zero' > /dev/null" "$(mbps "$h")"
printf '  %-62s %6s MB/s\n' "docker exec CONTAINER head -c $BYTES /dev/zero > /dev/null" "$(mbps "$d")"
awk -v h="$h" -v d="$d" 'BEGIN {printf "  ratio hs / docker transport alone: %.2f (target >= 0.5)\n", d / h}'
