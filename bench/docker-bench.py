#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""docker-bench.py HS IMAGE REF N M - `true` through `hs serve` (docker
backend, N times, after a warm-up) against `docker exec REF true` (M times),
printing both means and the ratio.  Python 3 standard library only."""

import os
import json
import subprocess
import sys
import time


def main():
    hs, image, ref, n, m = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    p = subprocess.Popen([hs, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def req(o):
        p.stdin.write(json.dumps(o) + "\n")
        p.stdin.flush()
        while True:
            line = p.stdout.readline()
            if not line:
                sys.exit("docker-bench: hs serve ended")
            r = json.loads(line)
            if r.get("id") == o["id"] and "event" not in r:
                return r

    t = time.time()
    r = req({"id": 0, "op": "open", "backend": "docker", "session": "bench", "image": image})
    if not r.get("ok"):
        sys.exit("docker-bench: open failed: %s" % r)
    open_ms = (time.time() - t) * 1000
    for i in range(5):
        req({"id": 1 + i, "op": "exec", "session": "bench", "command": "true", "timeout": 10})
    t = time.time()
    for i in range(n):
        r = req({"id": 10 + i, "op": "exec", "session": "bench", "command": "true", "timeout": 10})
        if not r.get("ok"):
            sys.exit("docker-bench: exec failed: %s" % r)
    hs_ms = (time.time() - t) * 1000 / n
    t = time.time()
    for _ in range(m):
        subprocess.run(["docker", "exec", ref, "true"], check=True)
    cli_ms = (time.time() - t) * 1000 / m
    req({"id": 99999, "op": "close", "session": "bench"})
    p.stdin.close()
    p.wait(timeout=30)
    print("docker backend: open (create, upload, start) %.0f ms" % open_ms)
    print("hs serve exec true:     %7.2f ms (mean of %d)" % (hs_ms, n))
    print("docker exec REF true:   %7.2f ms (mean of %d)" % (cli_ms, m))
    print("ratio: hs is %.1fx faster than docker exec (target >= 10x)" % (cli_ms / hs_ms))
    if os.environ.get("HS_BENCH_TSV"):
        with open(os.environ["HS_BENCH_TSV"], "a") as f:
            f.write("docker (hs serve)\t%.3f\tdocker exec\t%.3f\n" % (hs_ms, cli_ms))


if __name__ == "__main__":
    main()
