# SPDX-License-Identifier: MIT
# tests/docker/lib.sh - a private dockerd for the docker backend's tests,
# on its own socket, data root, exec root and pidfile under $t, with images
# built offline: hstest-bb (busybox only) and hstest-bash (the host's bash
# and its libraries, plus busybox).  Sourced by the tests; needs $t.

dk_skip() {
	if [ "${HS_REQUIRE_SERVICES:-0}" = 1 ]; then echo "FAIL: $1"; exit 1; fi
	echo "SKIP: $1"; exit 77
}

dk_start() {
	command -v dockerd >/dev/null || dk_skip "dockerd not installed (apt-get install docker.io)"
	command -v docker >/dev/null || dk_skip "docker CLI not installed (apt-get install docker.io)"
	[ "$(id -u)" = 0 ] || dk_skip "the test dockerd needs root"
	[ -x /bin/busybox ] || dk_skip "busybox not installed (apt-get install busybox-static)"
	mkdir -p "$t/dk"
	# The socket path must fit sun_path; $t comes from mktemp under /tmp.
	export DOCKER_HOST=unix://$t/dk/d.sock
	setsid dockerd --host "$DOCKER_HOST" --data-root "$t/dk/data" --exec-root "$t/dk/exec" \
		--pidfile "$t/dk/pid" --bridge=none --iptables=false --ip6tables=false \
		>"$t/dk/log" 2>&1 </dev/null &
	DK_PID=$!
	for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
	docker info >/dev/null 2>&1 || { tail -5 "$t/dk/log"; dk_skip "the test dockerd did not start"; }
}

# Stops our dockerd only (by its pid, or its pidfile after a restart) and removes its state.
dk_stop() {
	[ -s "$t/dk/pid" ] && DK_PID=$(cat "$t/dk/pid")
	if [ -n "${DK_PID:-}" ]; then
		docker ps -aq 2>/dev/null | xargs -r docker rm -f >/dev/null 2>&1
		kill "$DK_PID" 2>/dev/null
		for _ in $(seq 40); do kill -0 "$DK_PID" 2>/dev/null || break; sleep 0.25; done
		kill -9 "$DK_PID" 2>/dev/null
		DK_PID=
	fi
	# Container mounts under the exec/data roots may linger briefly.
	grep -o " $t/dk/[^ ]*" /proc/mounts 2>/dev/null | sort -r | xargs -r -n1 umount -l 2>/dev/null
}

dk_image_bb() {
	local r; r=$(mktemp -d "$t/img.XXXXXX"); mkdir -p "$r/bin" "$r/tmp"; cp /bin/busybox "$r/bin/"
	for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"; done
	tar -C "$r" -c . | docker import - hstest-bb:1 >/dev/null; rm -rf "$r"
}

dk_image_bash() {
	local r f; r=$(mktemp -d "$t/img.XXXXXX"); mkdir -p "$r/bin" "$r/tmp"
	cp /bin/busybox "$r/bin/"
	for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"; done
	cp /bin/bash "$r/bin/bash"
	for f in $(ldd /bin/bash | grep -o '/[^ ]*'); do mkdir -p "$r$(dirname "$f")"; cp -L "$f" "$r$f"; done
	tar -C "$r" -c . | docker import - hstest-bash:1 >/dev/null; rm -rf "$r"
}

# The runner must be static to run in a busybox image.  A sanitizer build's
# is dynamic: then a static one is built here from the same sources with
# musl-gcc (or skip), and HS_RUNNER points hs at it.
dk_static_runner() {
	local r=${top_builddir:?}/runner/hs-runner src=${srcdir:-.}/runner v
	file -L "$r" 2>/dev/null | grep -q dynamic || return 0
	command -v musl-gcc >/dev/null || dk_skip "hs-runner is dynamic (sanitizer build) and musl-gcc is missing"
	v=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' "$top_builddir/config.h")
	# The sources are the build's own list (RUNNER_SRCS in runner/local.mk).
	local srcs
	srcs=$(sed -n '/^RUNNER_SRCS *=/,/[^\\]$/p' "$src/local.mk" | sed 's/^RUNNER_SRCS *=//; s/\\//g')
	[ -n "$srcs" ] || dk_skip "no RUNNER_SRCS in $src/local.mk"
	# shellcheck disable=SC2086
	musl-gcc -std=gnu11 -O2 -static -D_GNU_SOURCE -DHSR_VERSION="\"$v\"" -I"$src" -I"${srcdir:-.}" -o "$t/hs-runner" \
		$(for f in $srcs; do printf '%s/%s ' "${srcdir:-.}" "$f"; done) ||
		dk_skip "cannot build a static hs-runner with musl-gcc"
	export HS_RUNNER=$t/hs-runner
}

# hstest-arm:1: hstest-bb with its config saying arm64 (the binaries stay
# this machine's), to exercise the fallback for images of another architecture.
dk_image_foreign() {
	local d; d=$(mktemp -d "$t/img.XXXXXX"); mkdir "$d/x"
	docker save hstest-bb:1 -o "$d/i.tar" && tar -C "$d/x" -xf "$d/i.tar" || return 1
	python3 - "$d/x" <<'PY' || return 1
import hashlib, json, os, sys
x = sys.argv[1]
m = json.load(open(os.path.join(x, "manifest.json")))
old = m[0]["Config"]
cfg = json.load(open(os.path.join(x, old)))
cfg["architecture"] = "arm64"
data = json.dumps(cfg).encode()
new = hashlib.sha256(data).hexdigest() + ".json"
os.remove(os.path.join(x, old))
open(os.path.join(x, new), "wb").write(data)
m[0]["Config"] = new
m[0]["RepoTags"] = ["hstest-arm:1"]
json.dump(m, open(os.path.join(x, "manifest.json"), "w"))
if os.path.exists(os.path.join(x, "repositories")):
    os.remove(os.path.join(x, "repositories"))
PY
	tar -C "$d/x" -cf "$d/o.tar" . && docker load -i "$d/o.tar" >/dev/null; rm -rf "$d"
}

# hstest-user:1 (USER hsuser, from its /etc/passwd) and hstest-uid:1 (USER 1235).
dk_image_users() {
	local r; r=$(mktemp -d "$t/img.XXXXXX"); mkdir -p "$r/bin" "$r/tmp" "$r/etc"; cp /bin/busybox "$r/bin/"
	for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"; done
	printf 'root:x:0:0:root:/:/bin/sh\nhsuser:x:1234:1234::/tmp:/bin/sh\n' >"$r/etc/passwd"
	tar -C "$r" -c . | docker import --change 'USER hsuser' - hstest-user:1 >/dev/null
	tar -C "$r" -c . | docker import --change 'USER 1235' - hstest-uid:1 >/dev/null; rm -rf "$r"
}
