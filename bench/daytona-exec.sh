#!/bin/bash
# SPDX-License-Identifier: MIT
# Daytona backend: latency of one command through `hs run -b daytona -s`
# (persistent session: re-attach, upload, async exec, polls, logs) against
# the plain API call a user would make instead (one synchronous session
# exec with curl), both against the loopback emulator.  One run, N=20 each.
# This measures the backend's protocol overhead only; a real Daytona adds
# its network round trips to every call on both sides.
set -eu
top_srcdir=${top_srcdir:-.} top_builddir=${top_builddir:-.}
. "$top_srcdir/tests/daytona/lib.sh"
HS=$top_builddir/core/hs
N=20
"$HS" run -b daytona -s bench -- true </dev/null
t0=$(date +%s%N)
for i in $(seq $N); do "$HS" run -b daytona -s bench -- true </dev/null; done
t1=$(date +%s%N)
id=$(emu state | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandboxes"][0]["id"])')
# The key goes to curl through a 0600 header file, not its command line.
(umask 077; printf 'Authorization: Bearer %s\nContent-Type: application/json\n' "$DAYTONA_API_KEY" >"$T/hdr")
api() { curl -sf -H @"$T/hdr" "$@"; }
api -X POST -d '{"sessionId":"bench"}' "$DAYTONA_API_URL/toolbox/$id/toolbox/process/session" >/dev/null
t2=$(date +%s%N)
for i in $(seq $N); do
	api -X POST -d '{"command":"true"}' "$DAYTONA_API_URL/toolbox/$id/toolbox/process/session/bench/exec" >/dev/null
done
t3=$(date +%s%N)
serve_ms=$(python3 - "$HS" $N <<'PY'
import json, subprocess, sys, time
hs, n = sys.argv[1], int(sys.argv[2])
p = subprocess.Popen([hs, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def call(req):
    p.stdin.write(json.dumps(req) + "\n"); p.stdin.flush()
    while True:
        r = json.loads(p.stdout.readline())
        if r.get("id") == req["id"] and "event" not in r:
            return r
call({"id": 0, "op": "open", "backend": "daytona", "session": "bs"})
call({"id": 1, "op": "exec", "session": "bs", "command": "true"})
t = time.monotonic()
for i in range(n):
    call({"id": i + 2, "op": "exec", "session": "bs", "command": "true"})
print(int((time.monotonic() - t) * 1000 / n))
call({"id": 99, "op": "close", "session": "bs"}); p.stdin.close(); p.wait()
PY
)
"$HS" session close bench >/dev/null 2>&1 || true
hs_ms=$(( (t1 - t0) / N / 1000000 )); api_ms=$(( (t3 - t2) / N / 1000000 ))
[ -n "${HS_BENCH_TSV:-}" ] && printf 'daytona emulator (hs serve)\t%s\tone API call (curl)\t%s\n' "$serve_ms" "$api_ms" >>"$HS_BENCH_TSV"
echo "daytona: hs run -s (re-attach + exec) ${hs_ms} ms/command; curl sync exec ${api_ms} ms/command;" \
	"ratio $(awk "BEGIN{printf \"%.1f\", $hs_ms/($api_ms>0?$api_ms:1)}")x;" \
	"hs serve exec ${serve_ms} ms/command, ratio $(awk "BEGIN{printf \"%.1f\", $serve_ms/($api_ms>0?$api_ms:1)}")x (emulator on loopback)"
