#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""plot.py TSV SVG - the latency of one `true` per backend, from the rows
the benchmarks of one `make bench` run wrote (what, hs ms, alternative,
alternative ms), as a horizontal bar chart on a log scale: one bar for hs,
one for what a user would do instead.  Standard library only (SVG by hand)."""
import math
import sys
from xml.sax.saxutils import escape


def main():
    rows = []
    for line in open(sys.argv[1]):
        f = line.rstrip("\n").split("\t")
        if len(f) == 4:
            rows.append((f[0], float(f[1]), f[2], float(f[3])))
    if not rows:
        sys.exit("plot.py: no rows in %s" % sys.argv[1])
    lo = min(min(r[1], r[3]) for r in rows if min(r[1], r[3]) > 0)
    hi = max(max(r[1], r[3]) for r in rows)
    lmin, lmax = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    left, width, bar, gap = 330, 520, 13, 12
    height = 60 + len(rows) * (2 * bar + gap) + 30

    def x(v):
        v = max(v, 10 ** lmin)
        return left + (math.log10(v) - lmin) / (lmax - lmin) * width

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">'
           % (left + width + 90, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="20" font-size="14">Latency of one `true` (ms, log scale): hs (dark) vs the alternative (light)</text>']
    for e in range(lmin, lmax + 1):
        xx = x(10 ** e)
        out.append('<line x1="%.1f" y1="35" x2="%.1f" y2="%d" stroke="#ddd"/>' % (xx, xx, height - 25))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (xx, height - 10, 10 ** e))
    y = 45
    for what, hs, alt, alt_ms in rows:
        ratio = alt_ms / hs if hs > 0 else 0
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (left - 6, y + bar - 3, escape(what)))
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="#2b5d8a"/>' % (left, y, x(hs) - left, bar))
        out.append('<text x="%.1f" y="%d">%.2f ms</text>' % (x(hs) + 4, y + bar - 3, hs))
        y += bar
        out.append('<text x="%d" y="%d" text-anchor="end" fill="#666">%s</text>' % (left - 6, y + bar - 3, escape(alt)))
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="#9cc3e4"/>' % (left, y, x(alt_ms) - left, bar))
        out.append('<text x="%.1f" y="%d" fill="#666">%.2f ms (%s)</text>'
                   % (x(alt_ms) + 4, y + bar - 3, alt_ms,
                      ("%.1fx" % ratio) if ratio >= 1 else ("hs %.1fx slower" % (1 / ratio) if ratio else "")))
        y += bar + gap
    out.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")
    print("plot: %d rows -> %s" % (len(rows), sys.argv[2]))


main()
