#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/docker-bench.sh - a `true` through `hs serve` on the docker backend
# against `docker exec CONTAINER true`, in one run, as a ratio (target: at
# least 10x).  Starts its own dockerd on a private socket (root needed),
# imports a busybox image built offline, and removes everything at the end.
#   HS=core/hs bash bench/docker-bench.sh [N=100] [M=20]
set -u
HS=${HS:?set HS to the hs binary}
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d /tmp/hsdkb.XXXXXX)
. "$here/../tests/docker/lib.sh"
trap 'dk_stop; rm -rf "$t"' EXIT
mkdir -m 700 "$t/run"
export XDG_STATE_HOME=$t/state XDG_CONFIG_HOME=$t/config XDG_CACHE_HOME=$t/cache XDG_RUNTIME_DIR=$t/run
HS_REQUIRE_SERVICES=1 dk_start
dk_image_bb
docker run -d --name hsbench-ref --network none hstest-bb:1 sleep 100000 >/dev/null
timeout 300 python3 "$here/docker-bench.py" "$HS" hstest-bb:1 hsbench-ref "${N:-100}" "${M:-20}"
