# SPDX-License-Identifier: MIT
# Shared setup for the daytona tests: private dirs, and the loopback Daytona
# emulator (tests/daytona/emulator.py) on a free port, stopped on exit.
: "${top_builddir:=.}" "${top_srcdir:=.}"
T=$(mktemp -d /tmp/hs-dt-XXXXXX) || exit 99
EMU_PID=
dt_cleanup() {
	[ -n "$EMU_PID" ] && kill "$EMU_PID" 2>/dev/null && wait "$EMU_PID" 2>/dev/null
	rm -rf "$T"
}
trap dt_cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
command -v python3 >/dev/null || {
	[ "${HS_REQUIRE_SERVICES:-0}" = 1 ] && fail "python3 is needed for the daytona emulator"
	echo "SKIP: python3 is needed for the daytona emulator"; exit 77; }
mkdir -p "$T/conf/hs" "$T/state" "$T/cache" "$T/run" "$T/emu" "$T/scratch-parent"
chmod 700 "$T/run"
export XDG_CONFIG_HOME="$T/conf" XDG_STATE_HOME="$T/state" XDG_CACHE_HOME="$T/cache" XDG_RUNTIME_DIR="$T/run"
export HOME="$T"
# Test keys are random per run; the emulator reads its own from the environment.
DAYTONA_EMU_KEY="dtn-test-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
export DAYTONA_EMU_KEY DAYTONA_API_KEY="$DAYTONA_EMU_KEY"
unset DAYTONA_TARGET
python3 "$top_srcdir/tests/daytona/emulator.py" --port-file "$T/port" --root "$T/emu" &
EMU_PID=$!
for i in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
[ -s "$T/port" ] || fail "the daytona emulator did not start"
export DAYTONA_API_URL="http://127.0.0.1:$(cat "$T/port")"
DT_SCRATCH="$T/scratch-parent/hs-daytona"
cat > "$XDG_CONFIG_HOME/hs/hs.conf" <<CONF
daytona = { scratch_dir = "$DT_SCRATCH"; poll_ms = 50; start_timeout = 20; };
CONF
# emu PATH [JSON]: call a control endpoint of the emulator.
DT_EMU="$top_srcdir/tests/daytona/emulator.py"
export DT_EMU
emu() { python3 "$DT_EMU" --ctl "$DAYTONA_API_URL" "$@"; }
