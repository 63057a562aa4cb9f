# SPDX-License-Identifier: MIT
# Shared by the modal tests: a private home and an emulator of Modal's gRPC
# API and of the gateway (tests/modal/emulator.py) on loopback ports.
# NOT Modal itself: the emulator runs commands on this machine.
srcdir=${srcdir:-.}
PLUGIN=${PLUGIN:-plugins/modal/.libs/modal.so}
DRIVE=${DRIVE:-tests/modal/drive}
PY=/usr/bin/python3
skip() {
	if [ "${HS_REQUIRE_SERVICES:-0}" = 1 ]; then echo "FAIL (required): $*"; exit 1; fi
	echo "SKIP: $*"; exit 77
}
command -v protoc >/dev/null || skip "protoc is not installed (Debian: protobuf-compiler)"
$PY -c 'import grpc, google.protobuf' 2>/dev/null || skip "python3-grpcio/python3-protobuf are not installed"
[ -e "$PLUGIN" ] || { echo "FAIL: $PLUGIN not built"; exit 1; }

T=$(mktemp -d /tmp/hs-modal-test.XXXXXX)
EMU_PID=
cleanup() {
	[ -n "$EMU_PID" ] && kill "$EMU_PID" 2>/dev/null && wait "$EMU_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/home" "$T/py" "$T/root" "$T/state" "$T/conf" "$T/cache" "$T/run"
chmod 700 "$T/run"
export HOME=$T/home XDG_STATE_HOME=$T/state XDG_CONFIG_HOME=$T/conf XDG_CACHE_HOME=$T/cache \
	XDG_RUNTIME_DIR=$T/run
unset MODAL_TOKEN_ID MODAL_TOKEN_SECRET MODAL_PROFILE MODAL_CONFIG_PATH MODAL_SERVER_URL \
	HS_MODAL_MODE HS_MODAL_GATEWAY_URL HS_MODAL_GATEWAY_TOKEN
protoc --python_out="$T/py" -I "$srcdir/plugins/modal" "$srcdir/plugins/modal/modal.proto" \
	"$srcdir/plugins/modal/task_command_router.proto" ||
	{ echo "FAIL: protoc"; exit 1; }

# start_emulator [--drop-after N]: sets GRPC_PORT, HTTP_PORT; log in $T/log.
start_emulator() {
	[ -n "$EMU_PID" ] && { kill "$EMU_PID"; wait "$EMU_PID" 2>/dev/null; }
	rm -f "$T/ports" "$T/log"
	$PY "$srcdir/tests/modal/emulator.py" --pydir "$T/py" --root "$T/root" --ports "$T/ports" \
		--log "$T/log" "$@" 2>"$T/emu.err" &
	EMU_PID=$!
	for _ in $(seq 100); do [ -s "$T/ports" ] && break; sleep 0.1; done
	[ -s "$T/ports" ] || { cat "$T/emu.err"; echo "FAIL: the emulator did not start"; exit 1; }
	GRPC_PORT=$(sed -n 's/^grpc=//p' "$T/ports")
	HTTP_PORT=$(sed -n 's/^http=//p' "$T/ports")
}

fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() { # check NAME CMD...
	local n=$1; shift
	if "$@"; then ok "$n"; else bad "$n"; fi
}
# result FIELD FILE: a field of the drive's "result:" line
result() { sed -n "s/.*result: .*$1=\([^ ]*\).*/\1/p" "$2" | tail -1; }
finish() { [ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"; [ $fails -eq 0 ]; }
