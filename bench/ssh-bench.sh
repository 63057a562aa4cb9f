#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/ssh-bench.sh - a `true` through `hs serve` on the ssh backend vs
# `ssh host true` and vs multiplexed ssh (ControlMaster), in one run, as
# ratios.  Starts its own sshd on a free loopback port (tests/ssh/lib.sh).
# Usage: HS=core/hs bash bench/ssh-bench.sh [N_HS=200] [N_SSH=10] [N_MUX=20]
set -u
HS=${HS:?set HS to the hs binary}
N_HS=${1:-200} N_SSH=${2:-10} N_MUX=${3:-20}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/ssh/lib.sh"
t=$(mktemp -d /tmp/hs-sshbench.XXXXXX)
chmod 755 "$t"
trap 'ssh -o ControlPath="$t/cm" -O exit x >/dev/null 2>&1; ssh_stop "$t/s"; pkill -f "$t/" 2>/dev/null; rm -rf "$t"' EXIT
mkdir -m 700 "$t/run"
export XDG_STATE_HOME=$t/state XDG_CONFIG_HOME=$t/config XDG_CACHE_HOME=$t/cache XDG_RUNTIME_DIR=$t/run
unset SSH_AUTH_SOCK
ssh_start "$t/s" || exit 1
P=$(cat "$t/s/port")
ssh_conf "$t/s" "$P" "$t/hs.conf"
export HS_CONFIG=$t/hs.conf
U=$(id -un)
O=(-p "$P" -i "$t/s/userkey" -o UserKnownHostsFile="$t/s/known_hosts" -o BatchMode=yes -o LogLevel=ERROR)

ms() { python3 -c "import sys; print('%.2f' % ((float(sys.argv[2]) - float(sys.argv[1])) * 1000 / int(sys.argv[3])))" "$@"; }
now() { date +%s.%N; }

serve_ms() { # BACKEND N: mean ms of `true` in one warm hs serve session
timeout 300 python3 - "$HS" "$2" "$1" <<'PY'
import json, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
def req(o):
    p.stdin.write(json.dumps(o) + "\n"); p.stdin.flush()
    while True:
        r = json.loads(p.stdout.readline())
        if r.get("id") == o["id"] and "event" not in r: return r
assert req({"id": 0, "op": "open", "backend": sys.argv[3], "session": "bench"})["ok"]
for i in range(10): req({"id": 1 + i, "op": "exec", "session": "bench", "command": "true", "timeout": 10})
n = int(sys.argv[2]); t = time.time()
for i in range(n): assert req({"id": 100 + i, "op": "exec", "session": "bench", "command": "true", "timeout": 10})["ok"]
print("%.2f" % ((time.time() - t) * 1000 / n))
req({"id": 99, "op": "close", "session": "bench"}); p.stdin.close(); p.wait(timeout=30)
PY
}
hs_ms=$(serve_ms ssh "$N_HS") || { echo "hs serve (ssh) failed"; exit 1; }
local_ms=$(serve_ms local "$N_HS") || { echo "hs serve (local) failed"; exit 1; }


ssh "${O[@]}" "$U@127.0.0.1" true || { echo "plain ssh failed"; exit 1; }
a=$(now); for _ in $(seq "$N_SSH"); do ssh "${O[@]}" "$U@127.0.0.1" true; done; b=$(now)
ssh_ms=$(ms "$a" "$b" "$N_SSH")

ssh "${O[@]}" -o ControlMaster=yes -o ControlPath="$t/cm" -o ControlPersist=60 -fN "$U@127.0.0.1"
ssh "${O[@]}" -o ControlPath="$t/cm" "$U@127.0.0.1" true
a=$(now); for _ in $(seq "$N_MUX"); do ssh "${O[@]}" -o ControlPath="$t/cm" "$U@127.0.0.1" true; done; b=$(now)
mux_ms=$(ms "$a" "$b" "$N_MUX")

if [ -n "${HS_BENCH_TSV:-}" ]; then
	printf 'ssh (hs serve)\t%s\tssh host true\t%s\n' "$hs_ms" "$ssh_ms" >>"$HS_BENCH_TSV"
	printf 'ssh (hs serve)\t%s\tssh, ControlMaster\t%s\n' "$hs_ms" "$mux_ms" >>"$HS_BENCH_TSV"
fi
python3 - "$hs_ms" "$ssh_ms" "$mux_ms" "$N_HS" "$N_SSH" "$N_MUX" "$local_ms" <<'PY'
import sys
h, s, m = map(float, sys.argv[1:4]); l = float(sys.argv[7])
print("ssh backend, `true` per command (sshd on 127.0.0.1, ed25519):")
print("  hs serve (one warm connection, n=%s)     %8.2f ms" % (sys.argv[4], h))
print("  ssh host true (n=%s)                     %8.2f ms   ratio %6.1fx  (target >= 50x)" % (sys.argv[5], s, s / h))
print("  ssh ControlMaster/ControlPath (n=%s)     %8.2f ms   ratio %6.1fx  (target >= 15x)" % (sys.argv[6], m, m / h))
print("  for scale: hs serve, local backend      %8.2f ms   (the core + runner floor; ssh adds %.2f ms)" % (l, h - l))
PY
