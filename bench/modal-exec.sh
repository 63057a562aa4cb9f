#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/modal-exec.sh: per-command cost of the modal backend (direct mode,
# against the local emulator, not Modal) as a ratio to the local backend, and
# stdout throughput.  One run each; run from the build directory:
#   make bench-modal
srcdir=${srcdir:-.}
. "$srcdir/tests/modal/lib.sh"
HS=${HS:-core/hs}
start_emulator
export MODAL_TOKEN_ID=ak-emu MODAL_TOKEN_SECRET=as-emu MODAL_SERVER_URL=http://127.0.0.1:$GRPC_PORT
per() { # per BACKEND SESSION: mean ms of 20 commands in a warm session
	"$HS" run -b "$1" -s "$2" -- true >/dev/null
	local t0=$(date +%s%N)
	for _ in $(seq 20); do "$HS" run -b "$1" -s "$2" -- true >/dev/null; done
	echo $(( ($(date +%s%N) - t0) / 20000000 ))
	"$HS" session close "$2" >/dev/null 2>&1
}
m=$(per modal bm) l=$(per local bl)
[ -n "${HS_BENCH_TSV:-}" ] && printf 'modal emulator (hs run -s)\t%s\tlocal (hs run -s)\t%s\n' "$m" "$l" >>"$HS_BENCH_TSV"
echo "per command: modal ${m} ms, local ${l} ms, ratio $(awk "BEGIN{printf \"%.1f\", $m/$l}")x"
t0=$(date +%s%N)
n=$("$HS" run -b modal -- 'head -c 20000000 /dev/zero' | wc -c)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "stdout: $n bytes in $ms ms ($(awk "BEGIN{printf \"%.1f\", $n/1048576/($ms/1000)}") MiB/s)"
