#!/bin/bash
# SPDX-License-Identifier: MIT
# shell-bench.sh - what one `true` costs in an hs session, against a
# persistent shell, in one run (issue 21 item 9).  Measured interleaved,
# N rounds each after a warm-up:
#   (a) one persistent `bash --norc --noprofile` fed `true` through a pipe,
#       with a marker read back (the per-command round trip of a terminal);
#   (b) `bash -c true` spawned;
#   (c) the fork/exec floor: `/bin/true` spawned;
#   (d) `true` in a local session of one `hs serve` (client round trip);
# then, against (d) again, the same exec in a second session of that serve
# after it defined 2,000 shell functions (e), and 20,000 (e2) when the
# 2,000 case is quick (at most 3x (d); BIG=yes forces it, BIG=no skips it).  Prints medians, p90s and the ratios hs/(a) (target
# <= 2x) and hs-with-functions/hs (target: no growth with the state).
#
# Usage: HS=core/hs [HS_RUNNER=runner/hs-runner] bash bench/shell-bench.sh
#        [N=200] [WARMUP=20] [BIG=auto|yes|no]
# Writes two rows to $HS_BENCH_TSV when it is set (make bench).  Never a test.
set -u
HS=${HS:-$(dirname "$0")/../core/hs}
HS=$(cd "$(dirname "$HS")" && pwd)/$(basename "$HS")
[ -x "$HS" ] || { echo "shell-bench: no hs at $HS (set HS=/path/to/hs)" >&2; exit 1; }
command -v bash >/dev/null && command -v python3 >/dev/null ||
	{ echo "shell-bench: needs bash and python3" >&2; exit 1; }
root=$(mktemp -d "${TMPDIR:-/tmp}/hs-shell-bench.XXXXXX") || exit 1
chmod 700 "$root"
# Runner daemons this run started (their --dir is under $root), by pid.
stop_runners() {
	local p
	for p in /proc/[0-9]*; do
		[ -r "$p/cmdline" ] || continue
		if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q "hs-runner.*$root"; then
			kill "${p#/proc/}" 2>/dev/null
		fi
	done
}
trap 'stop_runners; rm -rf "$root"' EXIT
mkdir -m 700 "$root/state" "$root/run" "$root/cfg" "$root/cfg/hs"
echo 'runner_idle = 30;' >"$root/cfg/hs/hs.conf"

# A small fixed environment, the same for every contender.
env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="${HOME:-/}" LANG=C.UTF-8 \
	${HS_RUNNER:+HS_RUNNER="$HS_RUNNER"} ${HS_BENCH_TSV:+HS_BENCH_TSV="$HS_BENCH_TSV"} \
	XDG_STATE_HOME="$root/state" XDG_RUNTIME_DIR="$root/run" XDG_CONFIG_HOME="$root/cfg" \
	python3 - "$HS" "${N:-200}" "${WARMUP:-20}" "${BIG:-auto}" <<'PY'
import json, os, select, shutil, statistics, subprocess, sys, time

hs, N, W, BIG = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
BASH = shutil.which("bash")
TRUE = shutil.which("true") or "/bin/true"
BUDGET_S = 20.0  # at most this long (5 rounds at least) for each measure with functions


def die(msg):
    print("shell-bench: " + msg, file=sys.stderr)
    sys.exit(1)


class Lines:
    """Reads lines from a pipe, never blocking past a deadline."""

    def __init__(self, fd):
        self.fd, self.buf = fd, b""

    def readline(self, timeout=120.0):
        end = time.monotonic() + timeout
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line, self.buf = self.buf[:i + 1], self.buf[i + 1:]
                return line
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                die("no answer within %.0f s" % timeout)
            chunk = os.read(self.fd, 65536)
            if not chunk:
                die("the pipe closed")
            self.buf += chunk


class Serve:
    """One `hs serve`; exec() returns the reply of one command."""

    def __init__(self):
        self.p = subprocess.Popen([hs, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  bufsize=0)
        self.out, self.n = Lines(self.p.stdout.fileno()), 0

    def call(self, req):
        self.n += 1
        req["id"] = self.n
        self.p.stdin.write((json.dumps(req) + "\n").encode())
        while True:
            r = json.loads(self.out.readline())
            if r.get("event") == "approval":  # the bench's own setup, answered as an agent would
                self.p.stdin.write((json.dumps({"id": "ap", "op": "approve", "decision": "once",
                                                "request": r.get("request")}) + "\n").encode())
            elif r.get("id") == self.n and "event" not in r:
                return r

    def exec(self, session, command):
        r = self.call({"op": "exec", "session": session, "command": command, "timeout": 600})
        if not r.get("ok") or r.get("exit_code") != 0:
            die("exec in %s failed: %s" % (session, str(r)[:300]))
        return r


def persistent_bash():
    p = subprocess.Popen([BASH, "--norc", "--noprofile"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, bufsize=0)
    out = Lines(p.stdout.fileno())

    def one():
        p.stdin.write(b"true; echo __hs_bench_marker\n")
        while out.readline() != b"__hs_bench_marker\n":
            pass
    return p, one


def spawn(argv):
    def one():
        pid = os.posix_spawn(argv[0], argv, os.environ)
        os.waitpid(pid, 0)
    return one


def define(srv, session, first, last):
    """Functions hs_bench_fFIRST..LAST, 1,000 a command (a command is one argv string)."""
    for lo in range(first, last + 1, 1000):
        srv.exec(session, "".join("hs_bench_f%d() { echo %d; }\n" % (i, i)
                                  for i in range(lo, min(lo + 999, last) + 1)))
    n = int(srv.exec(session, "declare -F | wc -l")["stdout"].split()[0])
    if n < last:
        die("the session kept %d functions, not %d" % (n, last))


def timed(fn):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000.0


def measure(contenders, n, warmup, budget=None):
    """Interleaved rounds; each contender's times in ms.  budget: stop early (5 rounds at least)."""
    for _ in range(warmup):
        for _, fn in contenders:
            fn()
    times = {name: [] for name, _ in contenders}
    start = time.monotonic()
    for i in range(n):
        for name, fn in contenders:
            times[name].append(timed(fn))
        if budget and i >= 4 and time.monotonic() - start > budget:
            break
    return times


def p90(xs):
    s = sorted(xs)
    return s[max(0, -(-len(s) * 9 // 10) - 1)]


def row(label, xs):
    print("  %-58s %9.3f %9.3f   n=%d" % (label, statistics.median(xs), p90(xs), len(xs)))


def tsv(what, hs_ms, alt, alt_ms):
    path = os.environ.get("HS_BENCH_TSV")
    if path:
        with open(path, "a") as f:
            f.write("%s\t%.3f\t%s\t%.3f\n" % (what, hs_ms, alt, alt_ms))


srv = Serve()
for s in ("plain", "state"):
    r = srv.call({"op": "open", "backend": "local", "session": s})
    if not r.get("ok"):
        die("open %s failed: %s" % (s, r))
bp, pbash = persistent_bash()
try:
    d = lambda: srv.exec("plain", "true")
    t = measure([("a", pbash), ("b", spawn([BASH, "-c", "true"])), ("c", spawn([TRUE])), ("d", d)],
                N, W)
    med = {k: statistics.median(v) for k, v in t.items()}
    print("hs:   %s" % hs)
    print("Latency of one `true`, interleaved, after %d warm-up rounds (ms)" % W)
    print("  %-58s %9s %9s" % ("", "median", "p90"))
    row("(a) one persistent bash --norc --noprofile, through a pipe", t["a"])
    row("(b) bash -c true, spawned", t["b"])
    row("(c) /bin/true spawned (the fork/exec floor)", t["c"])
    row("(d) hs serve, local session exec (client round trip)", t["d"])

    # The same exec with state: functions defined in the second session.
    define(srv, "state", 1, 2000)
    e = measure([("d", d), ("e", lambda: srv.exec("state", "true"))], N, 2, BUDGET_S)
    row("(d) again, beside (e)", e["d"])
    row("(e) hs session with 2,000 functions defined", e["e"])
    e_ratio = statistics.median(e["e"]) / statistics.median(e["d"])
    big = None
    # 20,000 functions: ten times the state.  Only when 2,000 cost at most
    # 3x a plain command: a cost that grows with the state grows faster than
    # linearly here (1.5 s a command with the snapshot wrapper), and defining
    # them alone would take most of a minute.
    if BIG == "yes" or (BIG == "auto" and e_ratio <= 3.0):
        define(srv, "state", 2001, 20000)
        big = measure([("d", d), ("e", lambda: srv.exec("state", "true"))], N, 1, BUDGET_S)
        row("(e2) hs session with 20,000 functions defined", big["e"])
    else:
        print("  (e2) 20,000 functions: skipped, 2,000 already cost %.1fx a plain command "
              "(BIG=yes forces it)" % e_ratio)

    ratio_a = med["d"] / med["a"]
    print()
    print("ratio hs (d) / persistent bash (a)      %7.2fx  -> target <= 2x %s"
          % (ratio_a, "MET" if ratio_a <= 2.0 else "MISSED"))
    print("ratio hs (d) / bash -c true (b)         %7.2fx" % (med["d"] / med["b"]))
    print("ratio hs (d) / fork/exec floor (c)      %7.2fx" % (med["d"] / med["c"]))
    print("ratio hs 2,000 functions (e) / hs (d)   %7.2fx  -> target 1x, no growth with state "
          "(within 25%%) %s" % (e_ratio, "MET" if e_ratio <= 1.25 else "MISSED"))
    if big:
        r2 = statistics.median(big["e"]) / statistics.median(big["d"])
        print("ratio hs 20,000 functions (e2) / hs (d) %7.2fx  -> target 1x %s"
              % (r2, "MET" if r2 <= 1.25 else "MISSED"))
    tsv("local session (hs serve)", med["d"], "persistent bash, pipe", med["a"])
    tsv("local session, 2,000 functions", statistics.median(e["e"]), "local session, no state",
        statistics.median(e["d"]))
finally:
    for s in ("plain", "state"):
        srv.call({"op": "close", "session": s})
    srv.p.stdin.close()
    srv.p.wait(timeout=60)
    bp.stdin.close()
    bp.wait(timeout=10)
PY
