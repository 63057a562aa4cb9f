#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh NAME BINARY SEED-DIR: run one libFuzzer target for FUZZ_TIME seconds
# (default 60) over a scratch copy of its seeds, print one summary line, and
# exit non-zero when the fuzzer found a crash (its artifact is kept).
set -u
name=$1 bin=$2 seeds=$3
time=${FUZZ_TIME:-60}
work=${FUZZ_WORK:-fuzz-work}/$name
mkdir -p "$work/corpus" "$work/artifacts"
[ -d "$seeds" ] && cp -n "$seeds"/* "$work/corpus/" 2>/dev/null
"$bin" -max_total_time="$time" -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
	"$work/corpus" >"$work/log" 2>&1
rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
if [ $rc -eq 0 ]; then
	echo "fuzz $name: ${runs:-?} runs in ${time} s, no crash ($(ls "$work/corpus" | wc -l) corpus entries)"
else
	echo "fuzz $name: FAILED after ${runs:-?} runs; see $work/log and $work/artifacts/" >&2
	tail -n 30 "$work/log" >&2
fi
exit $rc
