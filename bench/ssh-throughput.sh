#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/ssh-throughput.sh - output throughput of `hs run -b ssh` against what
# the ssh transport alone moves (`ssh host 'head -c BYTES /dev/zero'`), in
# one run, as a ratio (issue 25: target >= 0.5).  Starts its own sshd on a
# free loopback port (tests/ssh/lib.sh).
# Usage: HS=core/hs bash bench/ssh-throughput.sh [BYTES=300000000] [RUNS=3]
set -u
HS=${HS:?set HS to the hs binary}
BYTES=${1:-300000000} RUNS=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/ssh/lib.sh"
t=$(mktemp -d /tmp/hs-sshtput.XXXXXX)
chmod 755 "$t"
stop_runners() { # the runners this script started: their --dir is under $t
	local p
	for p in /proc/[0-9]*; do
		if { tr "\0" " " < "$p/cmdline"; } 2>/dev/null | grep -q "hs-runner.* $t/"; then
			kill "${p#/proc/}" 2>/dev/null
		fi
	done
}
trap 'stop_runners; ssh_stop "$t/s"; rm -rf "$t"' EXIT
mkdir -m 700 "$t/run"
export XDG_STATE_HOME=$t/state XDG_CONFIG_HOME=$t/config XDG_CACHE_HOME=$t/cache XDG_RUNTIME_DIR=$t/run
unset SSH_AUTH_SOCK
ssh_start "$t/s" || exit 1
P=$(cat "$t/s/port")
ssh_conf "$t/s" "$P" "$t/hs.conf"
export HS_CONFIG=$t/hs.conf
U=$(id -un)
O=(-p "$P" -i "$t/s/userkey" -o UserKnownHostsFile="$t/s/known_hosts" -o BatchMode=yes -o LogLevel=ERROR)

now() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
mbps() { awk -v b="$BYTES" -v ns="$1" 'BEGIN {printf "%.0f", b / 1e6 / (ns / 1e9)}'; }

# A named session: the runner is installed and started once, as in use.
"$HS" run -b ssh -s tput -- true || { echo "hs run -b ssh failed"; exit 1; }
hs_ns=() ssh_ns=()
for ((i = 0; i < RUNS; i++)); do
	a=$(now)
	timeout 300 "$HS" run -b ssh -s tput -- "head -c $BYTES /dev/zero" >/dev/null || { echo "hs run failed"; exit 1; }
	b=$(now)
	hs_ns+=($((b - a)))
	a=$(now)
	timeout 300 ssh "${O[@]}" "$U@127.0.0.1" "head -c $BYTES /dev/zero" >/dev/null || { echo "ssh failed"; exit 1; }
	b=$(now)
	ssh_ns+=($((b - a)))
done
"$HS" session close tput >/dev/null 2>&1
h=$(median "${hs_ns[@]}") s=$(median "${ssh_ns[@]}")
echo "ssh output throughput, $BYTES bytes of /dev/zero, median of $RUNS runs (sshd on 127.0.0.1)"
printf '  %-58s %6s MB/s\n' "hs run -b ssh -s S -- 'head -c $BYTES /dev/zero' > /dev/null" "$(mbps "$h")"
printf '  %-58s %6s MB/s\n' "ssh host 'head -c $BYTES /dev/zero' > /dev/null" "$(mbps "$s")"
awk -v h="$h" -v s="$s" 'BEGIN {printf "  ratio hs / ssh transport alone: %.2f (target >= 0.5)\n", s / h}'
