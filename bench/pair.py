#!/usr/bin/env python3
"""pair.py DIR A B: command-level hand-off of two configurations measured
in the same rounds (DIR/A.R and DIR/B.R: bench/section.c's start/end
lines). For each round, the p50 of the gaps between one section's end and
the next one's start. Prints

  A_p50 B_p50 ratio lo hi n overlaps

A_p50 and B_p50 the medians over the rounds, ratio the median of the
same-round ratios B/A (lo, hi: the smallest and largest), n the gaps of B,
overlaps the sections of either that started before the previous ended.
"""
import os
import sys


def pct(xs, p):
    if not xs:
        return float('nan')
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def gaps(path):
    starts, ends = {}, {}
    for line in open(path):
        what, ns, tag = line.split()
        (starts if what == 'start' else ends)[tag] = int(ns)
    secs = sorted((starts[t], ends[t]) for t in starts if t in ends)
    g = [(b[0] - a[1]) / 1000.0 for a, b in zip(secs, secs[1:])]
    return g, sum(1 for x in g if x < 0)


def main():
    d, a, b = sys.argv[1:4]
    rounds = sorted({f.split('.')[1] for f in os.listdir(d)
                     if f.startswith(a + '.')})
    pa, pb, ratios, n, ov = [], [], [], 0, 0
    for r in rounds:
        fa, fb = os.path.join(d, a + '.' + r), os.path.join(d, b + '.' + r)
        if not (os.path.exists(fa) and os.path.exists(fb)):
            continue
        ga, oa = gaps(fa)
        gb, ob = gaps(fb)
        x, y = pct(ga, 50), pct(gb, 50)
        pa.append(x)
        pb.append(y)
        ratios.append(y / x)
        n += len(gb)
        ov += oa + ob
    print("%.0f %.0f %.2f %.2f %.2f %d %d" % (
        pct(pa, 50), pct(pb, 50), pct(ratios, 50), min(ratios), max(ratios),
        n, ov))


main()
