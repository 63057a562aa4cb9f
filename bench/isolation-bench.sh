#!/bin/bash
# SPDX-License-Identifier: MIT
# isolation-bench.sh - the cost of the local backend's isolated mode, one run.
#
#   (a) `true` in a persistent local session          (hs run -s, plain)
#   (b) `true` in a persistent isolated session       (hs run -s --isolate)
#   (c) `docker exec` of `true` in a running container (only when DOCKER_HOST
#       names a reachable dockerd; this script never starts one)
#   (d) one-shot runs, sandbox set-up and teardown included (hs run [--isolate])
#
# Prints the mean per command and the ratios isolated/plain (target: < 3)
# and docker/isolated.  Usage: HS=/path/to/hs bash bench/isolation-bench.sh [N]
set -u
HS=${HS:?set HS to the hs binary}
N=${1:-40}
t=$(mktemp -d /tmp/hs-isobench.XXXXXX)
cid=
trap '"$HS" session close isobench-plain >/dev/null 2>&1; "$HS" session close isobench-iso >/dev/null 2>&1;
      [ -n "$cid" ] && docker rm -f "$cid" >/dev/null 2>&1; rm -rf "$t"' EXIT
mkdir -p "$t"/{config,state,cache,ws} && mkdir -m 700 "$t/run"
export XDG_CONFIG_HOME=$t/config XDG_STATE_HOME=$t/state XDG_CACHE_HOME=$t/cache XDG_RUNTIME_DIR=$t/run

now() { date +%s%N; }
mean_ms() { # mean_ms N COMMAND...: mean wall time of N runs, in ms (3 decimals)
	local n=$1 s e i
	shift
	s=$(now)
	for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1 </dev/null || { echo "fail: $*" >&2; return 1; }; done
	e=$(now)
	echo "scale=3; ($e - $s) / $n / 1000000" | bc
}
ratio() { echo "scale=2; $1 / $2" | bc; }

# Warm both sessions (the isolated one builds its sandbox here).
"$HS" run -s isobench-plain -C "$t/ws" -- true </dev/null || exit 1
"$HS" run -s isobench-iso --isolate -C "$t/ws" -- true </dev/null || exit 1

plain=$(mean_ms "$N" "$HS" run -s isobench-plain -- true) || exit 1
iso=$(mean_ms "$N" "$HS" run -s isobench-iso -- true) || exit 1
oneplain=$(mean_ms $((N / 4)) "$HS" run -C "$t/ws" -- true) || exit 1
oneiso=$(mean_ms $((N / 4)) "$HS" run --isolate -C "$t/ws" -- true) || exit 1

echo "isolation-bench: N=$N on $(nproc) CPUs, $(uname -r)"
printf '  %-44s %8s ms\n' "plain local session (hs run -s)" "$plain"
printf '  %-44s %8s ms   %sx plain (target < 3)\n' "isolated session (hs run -s, --isolate)" "$iso" "$(ratio "$iso" "$plain")"
[ -n "${HS_BENCH_TSV:-}" ] && printf 'isolated local (hs run -s)\t%s\tplain local (hs run -s)\t%s\n' "$iso" "$plain" >>"$HS_BENCH_TSV"
printf '  %-44s %8s ms\n' "one-shot plain (hs run)" "$oneplain"
printf '  %-44s %8s ms   %sx plain one-shot\n' "one-shot isolated (set-up + teardown)" "$oneiso" "$(ratio "$oneiso" "$oneplain")"

if [ -n "${DOCKER_HOST:-}" ] && docker info >/dev/null 2>&1; then
	img=$(docker image ls --format '{{.Repository}}:{{.Tag}}' 2>/dev/null | grep -v '<none>' | head -1)
	if [ -n "$img" ] && cid=$(docker run -d --entrypoint /bin/sh "$img" -c 'sleep 3600' 2>/dev/null); then
		dk=$(mean_ms "$N" docker exec "$cid" true) || exit 1
		printf '  %-44s %8s ms   isolated is %sx docker exec\n' "docker exec ($img)" "$dk" "$(ratio "$iso" "$dk")"
	else
		echo "  docker exec: skipped (no local image to run at $DOCKER_HOST)"
	fi
else
	echo "  docker exec: skipped (no dockerd reachable through DOCKER_HOST; this bench never starts one)"
fi
