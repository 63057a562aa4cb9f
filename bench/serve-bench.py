#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""serve-bench.py - latency of a command in an `hs serve` session, in one run.

Compares, with the same N and the same shell snapshot:
  (a) `true` in a local-backend session through `hs serve` (one JSON round trip)
  (b) a bare `bash -c true` spawn (subprocess.run)
  (c) what a Python agent runtime does today: one bash per command that
      sources a snapshot file, runs the command and dumps `export -p`,
      `declare -f` and `alias -p` back to a file, which Python reads back
and also
  (d) 100 concurrent sessions in one `hs serve` (all replies, none lost)
  (e) `hs backends` and `hs run -- true` start-up.

Usage: HS=/path/to/hs python3 bench/serve-bench.py [-n N] [--warmup W]
Python 3 standard library only.  Every part is bounded in time.
"""

import argparse
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

DEADLINE_S = 60.0  # no single reply may take longer than this



def bench_row(what, hs_ms, alt, alt_ms):
    """One row of bench/latency.tsv (for the plot), when make bench asks for it."""
    path = os.environ.get("HS_BENCH_TSV")
    if path:
        with open(path, "a") as f:
            f.write("%s\t%.3f\t%s\t%.3f\n" % (what, hs_ms, alt, alt_ms))

def die(msg):
    print("serve-bench: " + msg, file=sys.stderr)
    sys.exit(1)


def p90(xs):
    s = sorted(xs)
    return s[max(0, -(-len(s) * 9 // 10) - 1)]


def ms(x):
    return "%.2f" % (x * 1000.0)


class Serve:
    """An `hs serve` child with a line reader that never blocks past a deadline."""

    def __init__(self, hs, env, errfile):
        # hs's own warnings go to a file; the bench summarises them at the end.
        self.err = open(errfile, "ab")
        self.p = subprocess.Popen([hs, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, env=env, bufsize=0)
        self.fd = self.p.stdout.fileno()
        self.buf = b""
        self.approvals = 0

    def send(self, obj):
        self.p.stdin.write((json.dumps(obj) + "\n").encode())

    def send_many(self, objs):
        self.p.stdin.write("".join(json.dumps(o) + "\n" for o in objs).encode())

    def readline(self, timeout=DEADLINE_S):
        end = time.monotonic() + timeout
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 1:]
                return json.loads(line)
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from hs serve within %.0f s" % timeout)
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    raise EOFError("hs serve closed its stdout (exit %s)" % self.p.poll())
                self.buf += chunk

    def reply(self, want_id, timeout=DEADLINE_S):
        """The final reply to request want_id (events are skipped)."""
        while True:
            m = self.readline(timeout)
            if m.get("event") == "approval":
                # Only the bench's own setup script should ever ask; answer as an agent would.
                self.approvals += 1
                self.send({"id": "ap%d" % self.approvals, "op": "approve",
                           "request": m.get("request"), "decision": "once"})
            elif m.get("id") == want_id and "event" not in m:
                return m

    def request(self, obj):
        self.send(obj)
        return self.reply(obj["id"])

    def stop(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def kill_leftover_runners(root):
    """hs-runner daemons this run started (their --dir is under our temp dir)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"hs-runner") and any(a.startswith(root.encode()) for a in argv):
            pids.append(int(d))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    return len(pids)


SETUP = r"""
cd /tmp
export PROJECT_ROOT=/srv/app/project PROJECT_NAME=hermes-demo BUILD_TYPE=release
export CC=gcc CXX=g++ CFLAGS='-O2 -g -pipe' LDFLAGS='-Wl,--as-needed'
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export VIRTUAL_ENV=/srv/app/.venv NODE_ENV=production GOPATH=/srv/go GOFLAGS=-mod=mod
export CARGO_HOME=/srv/cargo RUSTFLAGS='-C target-cpu=native' EDITOR=vi PAGER=cat
export GIT_PAGER=cat LESS=-R TZ=UTC LC_ALL=C.UTF-8
export PATH="$VIRTUAL_ENV/bin:$GOPATH/bin:$PATH"
mk() { mkdir -p -- "$1" && cd -- "$1"; }
gst() { git status --short --branch "$@"; }
runtests() { (cd "$PROJECT_ROOT" && python3 -m pytest -q -x "$@"); }
retry() { local n=0; until "$@"; do n=$((n+1)); [ "$n" -ge 3 ] && return 1; sleep 1; done; }
alias ll='ls -alF'
alias la='ls -A'
alias gd='git diff --stat'
alias ..='cd ..'
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hs", default=os.environ.get("HS") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "core", "hs"))
    ap.add_argument("-n", type=int, default=300, help="iterations per latency bench (300)")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--sessions", type=int, default=100)
    args = ap.parse_args()
    hs = os.path.abspath(args.hs)
    if not os.access(hs, os.X_OK):
        die("hs not found at %s (set HS=/path/to/hs)" % hs)
    bash = shutil.which("bash") or die("bash not found")
    N, W = args.n, args.warmup

    def make_root(base):
        root = tempfile.mkdtemp(prefix="hs-serve-bench-", dir=base)
        for d in ("state", "run", "cfg/hs", "work"):
            os.makedirs(os.path.join(root, d), mode=0o700, exist_ok=True)
        # A short idle time so runner daemons left behind go away by themselves.
        with open(os.path.join(root, "cfg/hs/hs.conf"), "w") as f:
            f.write("runner_idle = 30;\n")
        # A small, explicit environment: the snapshot size then depends on the
        # setup below, not on whoever runs the bench.  The same for every contender.
        env = {k: os.environ[k] for k in ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM")
               if k in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.update(XDG_STATE_HOME=os.path.join(root, "state"),
                   XDG_RUNTIME_DIR=os.path.join(root, "run"),
                   XDG_CONFIG_HOME=os.path.join(root, "cfg"), SHELL=bash)
        return root, env

    def open_bench_session(srv, root):
        r = srv.request({"id": "open", "op": "open", "backend": "local", "session": "bench"})
        if not r.get("ok"):
            die("open failed: %s" % r)
        r = srv.request({"id": "setup", "op": "exec", "session": "bench", "command": SETUP,
                         "timeout": 30})
        if not r.get("ok") or r.get("exit_code") != 0:
            die("setup failed: %s" % r)
        r = srv.request({"id": "chk", "op": "exec", "session": "bench", "timeout": 30,
                         "command": "echo $PROJECT_NAME; type -t retry; alias ll; pwd"})
        if r.get("stdout", "").split("\n")[:2] != ["hermes-demo", "function"]:
            die("session state did not persist: %s" % r)
        snaps = []
        for dirpath, _, files in os.walk(os.path.join(root, "run")):
            if "shell.snap" in files and "bench" in dirpath:
                snaps.append(os.path.join(dirpath, "shell.snap"))
        if len(snaps) != 1:
            die("cannot find the session's shell.snap under %s (found %s)" % (root, snaps))
        return snaps[0]

    def fstype(path):
        best, typ = "", "?"
        try:
            with open("/proc/self/mounts") as f:
                for line in f:
                    mnt, t = line.split()[1], line.split()[2]
                    if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                        best, typ = mnt, t
        except OSError:
            pass
        return typ

    # The runtime dir where hs would put it on this machine: $XDG_RUNTIME_DIR
    # if set, else /tmp (hs's fallback is /tmp/hs-$UID).  A second hs serve
    # with its runtime dir on tmpfs shows what the file system costs.
    root, env = make_root(os.environ.get("XDG_RUNTIME_DIR") or None)
    roots = [root]
    shm = None
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) and fstype(root) != "tmpfs":
        shm = make_root("/dev/shm")
        roots.append(shm[0])
    srv = srv2 = None
    errlog = os.path.join(root, "work", "hs-serve.stderr")
    try:
        # ---------------------------------------------------------------- (a)
        srv = Serve(hs, env, errlog)
        snap = open_bench_session(srv, root)
        snap_size = os.path.getsize(snap)
        if shm:
            srv2 = Serve(hs, shm[1], errlog)
            snap2 = open_bench_session(srv2, shm[0])
            if os.path.getsize(snap2) != snap_size:
                print("note: the tmpfs session's snapshot is %d bytes" % os.path.getsize(snap2))
        # (c) gets an identical copy of the snapshot.
        pysnap = os.path.join(root, "work", "py.snap")
        shutil.copyfile(snap, pysnap)
        print("hs:        %s" % hs)
        lines = open(snap, errors="replace").read().split("\n")
        print("snapshot:  %d bytes (%s: %d exported variables, %d functions, %d aliases)"
              % (snap_size, snap.replace(root, "$TMP"),
                 sum(1 for l in lines if l.startswith("declare -x")),
                 sum(1 for l in lines if l.endswith(" () ")),
                 sum(1 for l in lines if l.startswith("alias "))))
        print("runtime dir: %s (%s)%s" % (os.path.join(root, "run"), fstype(root),
              "; (a2) uses %s (tmpfs)" % os.path.join(shm[0], "run") if shm else ""))

        out = os.path.join(root, "work", "py.out")
        script = ('source %s >/dev/null 2>&1; builtin cd /tmp; shopt -s expand_aliases; eval "$1"; '
                  '__rc=$?; { export -p; declare -f; alias -p; } > %s 2>/dev/null; exit $__rc'
                  % (pysnap, out))
        server_ms = {"a": [], "a2": []}

        def exec_true(srv, key, i):  # one exec round trip through hs serve
            t0 = time.perf_counter()
            srv.send({"id": i, "op": "exec", "session": "bench", "command": "true", "timeout": 30})
            r = srv.reply(i)
            t = time.perf_counter() - t0
            if not r.get("ok") or r.get("exit_code") != 0:
                die("exec failed: %s" % r)
            if i >= W:
                server_ms[key].append(r.get("duration_ms", 0))
            return t

        def run_a(i):
            return exec_true(srv, "a", i)

        def run_a2(i):
            return exec_true(srv2, "a2", i)

        def run_b(i):  # (b) bare bash -c true
            t0 = time.perf_counter()
            p = subprocess.run([bash, "-c", "true"], env=env, capture_output=True, timeout=30)
            t = time.perf_counter() - t0
            if p.returncode != 0:
                die("bash -c true failed")
            return t

        def run_c(i):  # (c) the python-agent way: source the snapshot, dump the state back
            t0 = time.perf_counter()
            p = subprocess.run([bash, "-c", script, "agent", "true"], env=env, capture_output=True,
                               timeout=30, cwd=os.path.join(root, "work"))
            with open(out, "rb") as f:
                state = f.read()
            t = time.perf_counter() - t0
            if p.returncode != 0 or b"PROJECT_NAME" not in state:
                die("python-approach command failed: %s" % p)
            return t

        # Interleaved (a b c, b c a, c a b, ...) so that load changes on the
        # machine hit the three alike.
        fns = [("a", run_a), ("b", run_b), ("c", run_c)] + ([("a2", run_a2)] if srv2 else [])
        results = {k: [] for k, _ in fns}
        for i in range(W + N):
            for k in range(len(fns)):
                name, fn = fns[(i + k) % len(fns)]
                t = fn(i)
                if i >= W:
                    results[name].append(t)
        if os.path.getsize(snap) != snap_size:
            print("note: the snapshot changed size during the run (%d -> %d bytes)"
                  % (snap_size, os.path.getsize(snap)))
        srv.request({"id": "close", "op": "close", "session": "bench"})
        if srv2:
            srv2.request({"id": "close", "op": "close", "session": "bench"})
            srv2.stop()
            srv2 = None

        # ---------------------------------------------------------------- table
        a, b, c = results["a"], results["b"], results["c"]
        med = statistics.median

        def row(label, xs):
            print("%-62s %8s %8s" % (label, ms(med(xs)), ms(p90(xs))))

        print()
        print("Latency of one `true`, N=%d each after %d warm-up, interleaved (ms)" % (N, W))
        print("%-62s %8s %8s" % ("", "median", "p90"))
        row("(a)  hs serve, local session exec (client JSON round trip)", a)
        print("%-62s %8.2f %8.2f" % ("       hs's own duration_ms for it", med(server_ms["a"]), p90(server_ms["a"])))
        if "a2" in results:
            row("(a2) same, runtime dir on tmpfs (/dev/shm)", results["a2"])
        row("(b)  bare `bash -c true` (subprocess.run)", b)
        row("(c)  python approach: bash per cmd, source snap, dump state", c)
        print()
        bench_row("local (hs serve)", med(a) * 1000, "bash -c true", med(b) * 1000)
        bench_row("local (hs serve)", med(a) * 1000, "python: bash per command + state", med(c) * 1000)
        ra_b = med(a) / med(b)
        print("ratio (a) hs / (b) bare bash        median %.2fx  p90 %.2fx  -> target <= 2x %s"
              % (ra_b, p90(a) / p90(b), "MET" if ra_b <= 2.0 else "MISSED"))
        print("ratio (a) hs / (c) python approach  median %.2fx  p90 %.2fx"
              % (med(a) / med(c), p90(a) / p90(c)))
        if "a2" in results:
            a2 = results["a2"]
            print("ratio (a2) hs on tmpfs / (b) bash   median %.2fx  p90 %.2fx  -> target <= 2x %s"
                  % (med(a2) / med(b), p90(a2) / p90(b), "MET" if med(a2) / med(b) <= 2.0 else "MISSED"))
            print("ratio (a2) hs on tmpfs / (c) python median %.2fx  p90 %.2fx"
                  % (med(a2) / med(c), p90(a2) / p90(c)))

        # ---------------------------------------------------------------- (d)
        S = args.sessions
        print()
        t0 = time.perf_counter()
        srv.send_many([{"id": "o%d" % i, "op": "open", "backend": "local", "session": "c%d" % i} for i in range(S)])
        got = {}
        while len(got) < S:
            m = srv.readline()
            if "event" not in m and str(m.get("id", "")).startswith("o"):
                got[m["id"]] = m
        t_open = time.perf_counter() - t0
        bad = [k for k, m in got.items() if not m.get("ok")]
        if bad:
            die("%d of %d opens failed, e.g. %s" % (len(bad), S, got[bad[0]]))
        t0 = time.perf_counter()
        srv.send_many([{"id": "e%d" % i, "op": "exec", "session": "c%d" % i,
                        "command": "echo %d" % i, "timeout": 60} for i in range(S)])
        got = {}
        try:
            while len(got) < S:
                m = srv.readline()
                if "event" not in m and str(m.get("id", "")).startswith("e"):
                    if m["id"] in got:
                        die("duplicate reply for %s" % m["id"])
                    got[m["id"]] = m
        except (TimeoutError, EOFError) as ex:
            print("(d) %d concurrent sessions: only %d of %d replies arrived: %s" % (S, len(got), S, ex))
            raise SystemExit(1)
        t_exec = time.perf_counter() - t0
        wrong = [i for i in range(S) if not (got["e%d" % i].get("ok")
                 and got["e%d" % i].get("exit_code") == 0 and got["e%d" % i].get("stdout") == "%d\n" % i)]
        print("(d) %d concurrent sessions in one hs serve: opens %.0f ms wall; %d execs `echo $i` "
              "sent at once, %d/%d replies, %d wrong, %.0f ms wall"
              % (S, t_open * 1000, S, len(got), S, len(wrong), t_exec * 1000))
        if wrong:
            print("    first wrong reply: %s" % got["e%d" % wrong[0]])
        srv.send_many([{"id": "x%d" % i, "op": "close", "session": "c%d" % i} for i in range(S)])
        closed = set()
        while len(closed) < S:
            m = srv.readline()
            if "event" not in m and str(m.get("id", "")).startswith("x"):
                closed.add(m["id"])
        srv.stop()
        srv = None

        # ---------------------------------------------------------------- (e)
        def startup(argv, n):
            xs = []
            for _ in range(n):
                for attempt in range(30):
                    try:
                        t0 = time.perf_counter()
                        p = subprocess.run(argv, env=env, capture_output=True, timeout=60)
                        break
                    except OSError:  # hs being relinked by a concurrent build: wait for it
                        time.sleep(1)
                else:
                    die("cannot run %s" % argv[0])
                xs.append(time.perf_counter() - t0)
                if p.returncode != 0:
                    die("%s failed (%d): %s" % (" ".join(argv), p.returncode, p.stderr.decode()[-300:]))
            return xs

        print()
        xs = startup([hs, "backends"], 20)
        print("(e) `hs backends`            median %s ms  p90 %s ms  (n=20)" % (ms(statistics.median(xs)), ms(p90(xs))))
        xs = startup([hs, "run", "--", "true"], 50)
        print("    `hs run -- true`         median %s ms  p90 %s ms  (n=50, a new session and runner each)"
              % (ms(statistics.median(xs)), ms(p90(xs))))
        startup([hs, "run", "-s", "cli", "--", "true"], 1)
        xs = startup([hs, "run", "-s", "cli", "--", "true"], 50)
        print("    `hs run -s S -- true`    median %s ms  p90 %s ms  (n=50, an existing session)"
              % (ms(statistics.median(xs)), ms(p90(xs))))
        subprocess.run([hs, "session", "close", "cli"], env=env, capture_output=True, timeout=30)
    finally:
        for sv in (srv, srv2):
            if sv:
                sv.p.kill()
                sv.p.wait()
        n = sum(kill_leftover_runners(r) for r in roots)
        if n:
            print("(stopped %d hs-runner daemons that outlived their sessions)" % n)
        try:
            with open(errlog, errors="replace") as f:
                errs = f.read().splitlines()
        except OSError:
            errs = []
        if errs:
            print("note: hs serve wrote %d lines to stderr during the bench; first: %s"
                  % (len(errs), errs[0]))
        for r in roots:
            shutil.rmtree(r, ignore_errors=True)


if __name__ == "__main__":
    main()
