#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/packaging/clean-root.sh DEBDIR - install the built packages into a
# clean Debian 12 root and check them there (see docs/packaging.md):
#   * a backend package cannot be installed without the core (hs-backend-abi-N);
#   * dpkg installs every package, its dependencies being the only other
#     packages in the root;
#   * `hs backends` lists local and the six backends, none refused;
#   * `dpkg -r hermes-sandbox-docker` removes docker from `hs backends`, its
#     leftover conf.d snippet and a docker section in /etc/hs/hs.conf are
#     harmless, the other backends are still listed, `hs run` on local works,
#     `hs run -b docker` fails with a reason; purge removes the snippet;
#   * the SDK example builds from the installed hermes-sandbox-dev alone and
#     passes `hs plugin-check` and the fake-host test.
# The root is a minbase Debian 12 made by mmdebstrap from Debian's archive,
# cached as a tarball keyed by its package list and the week
# (HS_PKGTEST_CACHE, default /var/cache/hs-pkgtest), then unpacked fresh
# for every run.  Needs root.
# Exits 0 on success, 1 on a failed check, 77 when it cannot run here.
set -euo pipefail

debdir=${1:?usage: clean-root.sh DEBDIR (the directory holding the built .deb files)}
suite=${HS_PKGTEST_SUITE:-bookworm}
mirror=${HS_PKGTEST_MIRROR:-http://deb.debian.org/debian}
cache=${HS_PKGTEST_CACHE:-/var/cache/hs-pkgtest}
backends="docker ssh singularity slurm modal daytona"

skip() { echo "clean-root: SKIP: $*" >&2; exit 77; }
fail() { echo "clean-root: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || skip "needs root (chroot, mounts); run it as root"
command -v mmdebstrap >/dev/null || skip "mmdebstrap is not installed (apt-get install mmdebstrap)"
command -v unshare >/dev/null || skip "unshare is not installed (util-linux)"

# The packages under test: the newest build of each, never a dbgsym.
debs=()
for p in hermes-sandbox hermes-sandbox-runner hermes-sandbox-dev python3-hermes-sandbox $(for b in $backends; do echo hermes-sandbox-$b; done); do
	f=$(ls -t "$debdir"/${p}_*.deb 2>/dev/null | head -1 || true)
	[ -n "$f" ] || fail "no ${p}_*.deb in $debdir (build the packages first: dpkg-buildpackage -us -uc -b)"
	debs+=("$(readlink -f "$f")")
done

# Every dependency that is not one of ours becomes part of the root (first
# alternative, without version: dpkg checks the versions at install time),
# with what the SDK example needs to build.
ours='^(hermes-sandbox(-[a-z]+)?|hs-backend-abi-[0-9]+)$'
extra=$(for f in "${debs[@]}"; do dpkg-deb -f "$f" Depends Pre-Depends; done |
	sed 's/^[A-Za-z-]*: //' | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/[[:space:]]//g' |
	grep -v -E "$ours" | grep . | sort -u | tr '\n' ',')
include="${extra}gcc,make,libc6-dev,pkgconf"
# The week is part of the key: the archive moves on (point releases), and a
# root older than the libraries the packages were just built against would
# refuse them.
key=$(printf '%s %s %s %s' "$suite" "$mirror" "$include" "$(date -u +%G-%V)" | sha256sum | cut -c1-16)
tarball=$cache/root-$suite-$key.tar
mkdir -p "$cache"
# Roots made more than a week ago are stale: drop them.
find "$cache" -maxdepth 1 -name 'root-*.tar' ! -newermt '-7 days' -delete 2>/dev/null || true
if [ ! -s "$tarball" ]; then
	echo "clean-root: making a minbase $suite root with: $include"
	mmdebstrap --quiet --variant=minbase --mode=root --format=tar --include="$include" \
		"$suite" "$tarball.tmp" "$mirror" >&2 || skip "mmdebstrap could not build a $suite root from $mirror"
	mv "$tarball.tmp" "$tarball"
fi

work=$(mktemp -d /tmp/hs-pkgtest.XXXXXX)
trap 'rm -rf --one-file-system "$work"' EXIT
root=$work/root
mkdir "$root"
tar -xf "$tarball" -C "$root"
mkdir -p "$root/tmp/debs"
cp "${debs[@]}" "$root/tmp/debs/"

# The checks, run inside the root by its own /bin/sh.
cat > "$root/tmp/check.sh" <<'EOF'
set -u
backends="docker ssh singularity slurm modal daytona"
fail() { echo "clean-root: FAIL: $*" >&2; exit 1; }
ok() { echo "clean-root: ok: $*"; }
export HOME=/root XDG_CONFIG_HOME=/root/.config XDG_STATE_HOME=/root/.state XDG_CACHE_HOME=/root/.cache
export XDG_RUNTIME_DIR=/run/hs-test; mkdir -m 700 -p "$XDG_RUNTIME_DIR"
cd /tmp/debs

# 1. A backend without the core: dpkg refuses it for the missing ABI.
if dpkg -i hermes-sandbox-ssh_*.deb >/tmp/alone.log 2>&1; then fail "hermes-sandbox-ssh installed without the core"; fi
grep -q "hs-backend-abi-" /tmp/alone.log || { cat /tmp/alone.log; fail "dpkg refused hermes-sandbox-ssh but not for hs-backend-abi-N"; }
dpkg -r hermes-sandbox-ssh >/dev/null 2>&1 || fail "could not remove the half-installed hermes-sandbox-ssh"
ok "a backend package alone is refused for its hs-backend-abi dependency"

# 2. Everything, with dpkg: the dependencies must all be present already.
dpkg -i ./*.deb >/tmp/install.log 2>&1 || { cat /tmp/install.log; fail "dpkg -i of the packages failed"; }
dpkg --audit >/tmp/audit.log 2>&1; [ ! -s /tmp/audit.log ] || { cat /tmp/audit.log; fail "dpkg --audit reports problems"; }
ok "all packages installed with dpkg"

# 3. hs backends: local and every backend listed, none refused.
hs backends >/tmp/b1 2>&1 || { cat /tmp/b1; fail "hs backends exited non-zero"; }
cat /tmp/b1
hs backends --json >/tmp/b1.json 2>&1 || fail "hs backends --json exited non-zero"
for b in local $backends; do
	grep -q "\"name\":\"$b\"" /tmp/b1.json || fail "backend '$b' is not listed by hs backends"
done
if grep -q '"status":"refused"' /tmp/b1.json; then cat /tmp/b1.json; fail "a plugin was refused"; fi
ok "hs backends lists local and all six backends, none refused"

# 4. Remove docker; keep its config: the conffile stays, plus a section in hs.conf.
printf '\ndocker = {\n  image = "debian:12";\n};\n' >> /etc/hs/hs.conf
dpkg -r hermes-sandbox-docker >/tmp/remove.log 2>&1 || { cat /tmp/remove.log; fail "dpkg -r hermes-sandbox-docker failed"; }
ls /usr/lib/*/hs/backends/docker.so >/dev/null 2>&1 && fail "docker.so is still installed after dpkg -r"
[ -f /etc/hs/conf.d/docker.conf ] || fail "dpkg -r removed the conffile /etc/hs/conf.d/docker.conf (only purge should)"
hs backends >/tmp/b2 2>&1 || { cat /tmp/b2; fail "hs backends fails after removing docker (leftover config not harmless)"; }
hs backends --json >/tmp/b2.json 2>&1 || fail "hs backends --json fails after removing docker"
grep -q '"name":"docker"' /tmp/b2.json && { cat /tmp/b2; fail "docker is still listed after dpkg -r"; }
for b in local ssh singularity slurm modal daytona; do
	grep -q "\"name\":\"$b\"" /tmp/b2.json || fail "backend '$b' disappeared when docker was removed"
done
ok "docker gone from hs backends; its leftover config is accepted; the others remain"
out=$(hs run -- echo ok 2>/tmp/run.err) || { cat /tmp/run.err; fail "hs run -- echo ok failed on local with docker's config left over"; }
[ "$out" = ok ] || fail "hs run -- echo ok printed '$out'"
ok "hs run -- echo ok on local"
if hs run -b docker -- true >/tmp/d.out 2>/tmp/d.err; then fail "hs run -b docker succeeded without the docker backend"; fi
grep -qi docker /tmp/d.err || { cat /tmp/d.err; fail "hs run -b docker failed without naming docker"; }
ok "hs run -b docker fails with: $(head -1 /tmp/d.err)"
dpkg --purge hermes-sandbox-docker >/dev/null 2>&1 || fail "dpkg --purge hermes-sandbox-docker failed"
[ -e /etc/hs/conf.d/docker.conf ] && fail "purge left /etc/hs/conf.d/docker.conf"
out=$(hs run -- echo ok 2>/tmp/run.err) && [ "$out" = ok ] || { cat /tmp/run.err; fail "hs run failed after the purge"; }
ok "purge removes the snippet; hs run still works"

# 5. The SDK example, out of tree, against the installed -dev package alone.
mkdir /tmp/ex && cp /usr/share/doc/hermes-sandbox-dev/examples/* /tmp/ex/
make -C /tmp/ex >/tmp/ex.log 2>&1 || { cat /tmp/ex.log; fail "the SDK example does not build against hermes-sandbox-dev"; }
make -C /tmp/ex check >/tmp/ex-check.log 2>&1 || { cat /tmp/ex-check.log; fail "the SDK example's fake-host test failed"; }
hs plugin-check /tmp/ex/example.so >/tmp/pc.log 2>&1 || { cat /tmp/pc.log; fail "hs plugin-check refused the SDK example"; }
tail -3 /tmp/pc.log
HS_PLUGIN_DIR=/tmp/ex hs backends --json >/tmp/b3.json 2>&1 || fail "hs backends with the example plugin dir failed"
grep -q '"name":"example"' /tmp/b3.json || { cat /tmp/b3.json; fail "hs backends does not list the example plugin"; }
ok "sdk example built from hermes-sandbox-dev, passes hs plugin-check, is listed"

# 6. The Python client, installed: a command through hs serve on local, a
# denied one, and Hermes's dict shape from the adapter.
cat > /tmp/py.py <<'PY'
from hermes_sandbox import Client, Denied
from hermes_sandbox.hermes import HsEnvironment
with Client() as hs:
    with hs.open("local") as s:
        r = s.exec("echo from-python; exit 3", timeout=30)
        assert (r.exit_code, r.stdout) == (3, "from-python\n"), r.raw
        try:
            s.exec("rm -rf /", timeout=30)
            raise SystemExit("rm -rf / was not refused")
        except Denied:
            pass
env = HsEnvironment(backend="local")
out = env.execute("echo adapter; echo err >&2")
env.cleanup()
assert set(out) == {"output", "returncode"} and out["returncode"] == 0, out
assert sorted(out["output"].splitlines()) == ["adapter", "err"], out
print("python-ok")
PY
python3 /tmp/py.py >/tmp/py.log 2>&1 && grep -qx python-ok /tmp/py.log ||
	{ cat /tmp/py.log; fail "the installed Python client did not run a command through hs serve"; }
ok "python3-hermes-sandbox: exec, a denial and the Hermes adapter through the installed hs"
echo "clean-root: all checks passed"
EOF

# A private mount and PID namespace: /proc is the namespace's own, and every
# process left in the root dies with it.
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
	unshare --mount --pid --fork --mount-proc="$root/proc" \
	chroot "$root" /bin/sh /tmp/check.sh || fail "a check inside the clean root failed (see above)"
