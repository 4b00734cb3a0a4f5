#!/usr/bin/env python3
"""handoff.py SECTION_LOG [TRACE]: hand-off latencies from a benchmark run.

Command level: for consecutive sections (by start time), next start minus
previous end. Lock level (from rlock's RLOCK_TRACE): each release to the
first grant after it. Prints "cmd_p50 cmd_p99 lock_p50 lock_p99 n overlaps"
in microseconds; overlaps counts sections that started before the previous
one ended (must be 0 for a mutex).
"""
import sys


def pct(xs, p):
    if not xs:
        return float('nan')
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def main():
    starts, ends = {}, {}
    for line in open(sys.argv[1]):
        what, ns, tag = line.split()
        (starts if what == 'start' else ends)[tag] = int(ns)
    secs = sorted((starts[t], ends[t]) for t in starts if t in ends)
    cmd = [(b[0] - a[1]) / 1000.0 for a, b in zip(secs, secs[1:])]
    overlaps = sum(1 for a, b in zip(secs, secs[1:]) if b[0] < a[1])
    lock = []
    if len(sys.argv) > 2:
        ev = sorted((int(ns), what) for what, ns, _ in
                    (l.split() for l in open(sys.argv[2])))
        pending = None
        for ns, what in ev:
            if what == 'release':
                pending = ns
            elif what == 'grant' and pending is not None:
                lock.append((ns - pending) / 1000.0)
                pending = None
    print("%.0f %.0f %.0f %.0f %d %d" % (pct(cmd, 50), pct(cmd, 99),
          pct(lock, 50), pct(lock, 99), len(cmd), overlaps))


main()
