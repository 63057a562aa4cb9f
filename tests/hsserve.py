# SPDX-License-Identifier: MIT
"""A client of `hs serve` for tests and benches: one JSON object per line."""
import json
import subprocess


class Serve:
    """hs serve started as argv + ["serve"]; call() returns a request's reply."""

    def __init__(self, argv):
        self.p = subprocess.Popen(list(argv) + ["serve"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

    def call(self, req):
        """Send req and return its reply (events of it are skipped)."""
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise EOFError("hs serve closed its output")
            r = json.loads(line)
            if r.get("id") == req["id"] and "event" not in r:
                return r

    def close(self, timeout=60):
        self.p.stdin.close()
        return self.p.wait(timeout=timeout)
