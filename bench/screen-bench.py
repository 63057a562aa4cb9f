#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The cost of a job's rendered screen through hs serve: `job` `output` with
"screen": true, for a small stream and for 1 MiB of `seq` output, median of
N requests per hs given (HS, and HS_BASE to compare with an older build,
e.g. one that rendered in its own process).  Private XDG directories."""
import os, shutil, statistics, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from hsserve import Serve  # noqa: E402

N = int(os.environ.get("N", "30"))


def bench(hs):
    tmp = tempfile.mkdtemp(prefix="hs-screen-bench.")
    os.mkdir(tmp + "/run", 0o700)
    os.mkdir(tmp + "/w")
    os.environ.update(XDG_STATE_HOME=tmp + "/s", XDG_CONFIG_HOME=tmp + "/c",
                      XDG_CACHE_HOME=tmp + "/ca", XDG_RUNTIME_DIR=tmp + "/run")
    s = Serve([hs])
    ids = iter(range(1, 1 << 30))

    def call(**k):
        k["id"] = next(ids)
        return s.call(k)
    try:
        call(op="open", backend="local", session="b", approval="approve", cwd=tmp + "/w")
        for label, cmd in (("small", r"printf 'top\r\n\033[3;5Hthere'"), ("1 MiB of seq", "seq 1 150000")):
            j = call(op="exec", session="b", command=cmd, background=True)["job"]
            while call(op="job", session="b", job=j, action="poll").get("running"):
                time.sleep(0.1)
            t = []
            for _ in range(N):
                t0 = time.perf_counter()
                r = call(op="job", session="b", job=j, action="output", screen=True)
                t.append(time.perf_counter() - t0)
                assert r.get("ok") and r.get("screen"), r
            print("%s  %-13s %7.1f ms median of %d" % (hs, label, statistics.median(t) * 1000, N))
        call(op="close", session="b")
    finally:
        s.close()
        shutil.rmtree(tmp, ignore_errors=True)


for h in (os.environ.get("HS_BASE"), os.environ.get("HS", "core/hs")):
    if h:
        bench(h)
