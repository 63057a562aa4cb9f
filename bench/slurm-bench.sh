#!/bin/bash
# SPDX-License-Identifier: MIT
# slurm-bench.sh - per-command cost of the slurm backend vs one srun step per
# command, on a private single-node cluster (tests/slurm/cluster.sh; root).
#
#   top_builddir=. top_srcdir=. bench/slurm-bench.sh [N]
#
# Prints the milliseconds per command of
#   srun --jobid=J --overlap /bin/true       (what a user would do: a step each)
#   hs run -b slurm -s S -- true             (a new hs process each: squeue + attach step)
#   one hs serve session                     (no step per command)
# and the session's open time (sbatch until the daemon answers).  One run.
set -u
N=${1:-20}
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-$top_builddir}
HS=$top_builddir/core/hs
. "$top_srcdir/tests/slurm/cluster.sh"
T=$(mktemp -d /tmp/hs-slbench.XXXXXX)
mkdir -p "$T/config/hs" "$T/state" "$T/cache"; mkdir -m 700 "$T/run"
export XDG_STATE_HOME=$T/state XDG_CONFIG_HOME=$T/config XDG_CACHE_HOME=$T/cache XDG_RUNTIME_DIR=$T/run
trap 'slurm_stop; rm -rf "$T"' EXIT
slurm_start
printf 'slurm = { partition = "%s"; };\n' "$SL_PART" > "$XDG_CONFIG_HOME/hs/hs.conf"
ms() { date +%s%3N; }

t0=$(ms); "$HS" run -b slurm -s b1 -- true </dev/null || exit 1; open=$(( $(ms) - t0 ))
job=$(sed -n 's/^job=//p' "$XDG_STATE_HOME"/hs/slurm/*-b1.job)

t0=$(ms); for i in $(seq "$N"); do srun --jobid="$job" --overlap --quiet /bin/true; done
step=$(( ($(ms) - t0) / N ))

t0=$(ms); for i in $(seq "$N"); do "$HS" run -b slurm -s b1 -- true </dev/null; done
hsrun=$(( ($(ms) - t0) / N ))

# One hs serve session with N commands: the median of the replies' duration_ms.
{
	echo '{"id":0,"op":"open","backend":"slurm","session":"b1"}'
	for i in $(seq "$N"); do echo "{\"id\":$i,\"op\":\"exec\",\"session\":\"b1\",\"command\":\"true\"}"; done
} > "$T/req"
"$HS" serve < "$T/req" > "$T/resp" 2>/dev/null
served=$(grep -o '"duration_ms":[0-9]*' "$T/resp" | cut -d: -f2 | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
[ "${served:-0}" -gt 0 ] || served=1
"$HS" session close b1 >/dev/null 2>&1
[ -n "${HS_BENCH_TSV:-}" ] && printf 'slurm (hs serve)\t%s\tsrun --overlap step\t%s\n' "$served" "$step" >>"$HS_BENCH_TSV"
echo "slurm backend, $N commands each (ms per command):"
echo "  srun --overlap step per command : $step"
echo "  hs run (new hs process each)    : $hsrun   ($(awk "BEGIN{printf \"%.2f\", $hsrun/$step}")x the step)"
echo "  hs serve session                : $served   ($(awk "BEGIN{printf \"%.1f\", $step/$served}")x faster than a step)"
echo "  session open (sbatch to ready)  : $open"
