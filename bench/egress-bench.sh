#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/egress-bench.sh - throughput of one download through the egress
# endpoint (hs run --isolate --allow-host: runner, runner stream, core
# filter and relay) against the same download with direct network, in one
# run, as a ratio (issue 26 item 7; target: at least 0.5).  The server is
# python3's http.server on 127.0.0.2, named through the admin's test name
# map; curl's own average speed is compared, so start-up costs are left out.
#   HS=core/hs [RUNS=5] bash bench/egress-bench.sh [MB=200]
set -u
HS=${HS:?set HS to the hs binary}
MB=${1:-200}
t=$(mktemp -d /tmp/hs-egb.XXXXXX)
chmod 755 "$t"
pid=
trap '[ -n "$pid" ] && kill "$pid"; timeout 60 "$HS" session close egb >/dev/null 2>&1; rm -rf "$t"' EXIT
mkdir -p "$t"/{etc,state,www,ws} && mkdir -m 700 "$t/run"
export HOME=$t XDG_STATE_HOME=$t/state XDG_CACHE_HOME=$t/cache XDG_RUNTIME_DIR=$t/run HS_SYSCONFDIR_FOR_TESTS=$t/etc
unset XDG_CONFIG_HOME HS_CONFIG
head -c "$((MB * 1024 * 1024))" /dev/urandom >"$t/www/big"
P=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2",0)); print(s.getsockname()[1])')
(cd "$t/www" && exec python3 -m http.server --bind 127.0.0.2 "$P") >/dev/null 2>&1 &
pid=$!
for i in $(seq 100); do curl -s -o /dev/null "http://127.0.0.2:$P/" && break; sleep 0.1; done
printf 'locked = [ "egress_test_hosts" ];\negress_test_hosts = [ "good.test=127.0.0.2" ];\n' >"$t/etc/hs.conf"
R=(-s egb --isolate -C "$t/ws" --allow-host "good.test:$P")
"$HS" run "${R[@]}" -- true </dev/null
# RUNS interleaved runs of each; the medians are compared (the machine may be shared).
RUNS=${RUNS:-5}
d=() p=()
for i in $(seq "$RUNS"); do
	d+=("$(curl -s -o /dev/null -w '%{speed_download}' "http://127.0.0.2:$P/big")")
	p+=("$("$HS" run "${R[@]}" -- "curl -s -o /dev/null -w '%{speed_download}' http://good.test:$P/big" </dev/null)")
done
size=$("$HS" run "${R[@]}" -- "curl -s http://good.test:$P/big | wc -c" </dev/null)
python3 - "$size" "$MB" "${d[*]}" "${p[*]}" <<'PY'
import statistics, sys
size, mb = int(sys.argv[1]), int(sys.argv[2])
d = [float(x) / 1e6 for x in sys.argv[3].split()]
p = [float(x) / 1e6 for x in sys.argv[4].split()]
assert size == mb * 1024 * 1024, "the endpoint delivered %d bytes of %d" % (size, mb * 1024 * 1024)
md, mp = statistics.median(d), statistics.median(p)
print("egress: %d MB download, median of %d: direct %.0f MB/s, through the endpoint %.0f MB/s: "
      "ratio %.2f (target >= 0.5)" % (mb, len(d), md, mp, mp / md))
print("  direct   " + " ".join("%.0f" % x for x in d))
print("  endpoint " + " ".join("%.0f" % x for x in p))
PY
