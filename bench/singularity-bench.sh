#!/bin/bash
# SPDX-License-Identifier: MIT
# Per-command cost in a Singularity session: N commands through one hs serve
# session (one runner stream) vs N "apptainer exec instance://" calls, the
# way a user would run commands in an instance without hs.  Runs against
# the test stand-in (tests/singularity/apptainer; needs root): its exec is a
# python3 start plus setns, cheaper than real Apptainer's starter, so the
# ratio here is a lower bound.  One run, no assertions.
set -eu
N=${N:-50}
HS=${HS:?}
SRC=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
[ "$(id -u)" = 0 ] || { echo "bench-singularity: skipped (the stand-in needs root)"; exit 0; }
t=$(mktemp -d /tmp/hs-sbench.XXXXXX)
A=$SRC/tests/singularity/apptainer
export STANDIN_STATE=$t/standin XDG_STATE_HOME=$t/state XDG_CONFIG_HOME=$t/config \
	XDG_CACHE_HOME=$t/cache XDG_RUNTIME_DIR=$t/run
trap '"$A" instance stop bench >/dev/null 2>&1 || true; rm -rf "$t"' EXIT
mkdir -p "$t/config/hs" && mkdir -m 700 "$t/run"
printf 'singularity = { executable = "%s"; image = "docker://busybox"; };\n' "$A" >"$t/config/hs/hs.conf"
ms() { date +%s%N | cut -c1-13; }

# The image build happens here, not timed.
printf '%s\n' '{"id":0,"op":"open","backend":"singularity","session":"b1"}' \
	'{"id":1,"op":"close","session":"b1"}' | "$HS" serve >/dev/null
req() { echo '{"id":0,"op":"open","backend":"singularity","session":"b1"}'
	for i in $(seq "$N"); do echo "{\"id\":$i,\"op\":\"exec\",\"session\":\"b1\",\"command\":\"true\"}"; done
	echo '{"id":"c","op":"close","session":"b1"}'; }
req >"$t/req"
s=$(ms); "$HS" serve <"$t/req" >/dev/null; hs_ms=$(( $(ms) - s ))

sif=$(ls "$t/state/hs/singularity/sif-cache/"*.sif)
"$A" instance start --containall --no-home --cleanenv "$sif" bench >/dev/null
s=$(ms); for i in $(seq "$N"); do "$A" exec --cleanenv instance://bench /bin/sh -c true; done; ex_ms=$(( $(ms) - s ))

[ -n "${HS_BENCH_TSV:-}" ] && awk -v h="$hs_ms" -v e="$ex_ms" -v n="$N" 'BEGIN{printf "singularity stand-in (hs serve)\t%.3f\tapptainer exec (stand-in)\t%.3f\n", h/n, e/n}' >>"$HS_BENCH_TSV"
echo "bench-singularity: $N commands: hs serve session ${hs_ms} ms (incl. instance start and stop), apptainer exec each ${ex_ms} ms; ratio $(awk "BEGIN{printf \"%.1f\", $ex_ms/$hs_ms}")x"
