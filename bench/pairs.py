#!/usr/bin/env python3
"""pairs.py FILE [BASE]: figures of bench/rounds output.

FILE has one line per round, one wall time (us) per column, all columns of
a line measured in the same round. Prints one line per column:

  col p50 p90 ratio lo hi n

p50 and p90 over the rounds; ratio is the median over the rounds of (this
column / column BASE (default 0) of the same round), lo and hi the 10th
and 90th percentile of those ratios. A busy moment of the machine slows
every column of its round, so the ratio is steadier than either figure.
"""
import sys


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float('nan')
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def main():
    rows = [[float(v) for v in line.split()] for line in open(sys.argv[1])
            if line.strip()]
    base = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if not rows:
        sys.exit("pairs.py: no rounds in %s" % sys.argv[1])
    for c in range(len(rows[0])):
        col = [r[c] for r in rows]
        ratios = [r[c] / r[base] for r in rows if r[base] > 0]
        print("%d %.0f %.0f %.3f %.3f %.3f %d" % (
            c, pct(col, 50), pct(col, 90), pct(ratios, 50),
            pct(ratios, 10), pct(ratios, 90), len(rows)))


main()
