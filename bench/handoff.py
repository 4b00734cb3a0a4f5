#!/usr/bin/env python3
"""handoff.py DIR W: hand-off latencies of the benchmark's rounds.

DIR holds, for each round R and each configuration C (flock, plain, fair),
C.W.R.sec (the sections' start/end lines) and, for rlock, C.W.R.trace (its
RLOCK_TRACE events). Every round ran all three configurations one after
the other, at the same time of day, on the same machine.

Command level: for consecutive sections (by start time), next start minus
previous end. Lock level (from the trace): each release to the first grant
after it. Prints one line per configuration:

  C cmd_p50 cmd_p99 lock_p50 lock_p99 n rounds overlaps ratio lo hi

in microseconds. cmd_p50 is the median over the rounds of each round's
p50, p99 and the lock figures are over all samples pooled. ratio is the
median over the rounds of (C's p50 / flock's p50 in the same round), lo
and hi its smallest and largest: a round where the machine was busy slows
both, so the ratio is steadier than either figure. overlaps counts sections
that started before the previous one ended (must be 0 for a mutex).
"""
import os
import sys


def pct(xs, p):
    if not xs:
        return float('nan')
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def sections(path):
    starts, ends = {}, {}
    for line in open(path):
        what, ns, tag = line.split()
        (starts if what == 'start' else ends)[tag] = int(ns)
    secs = sorted((starts[t], ends[t]) for t in starts if t in ends)
    gaps = [(b[0] - a[1]) / 1000.0 for a, b in zip(secs, secs[1:])]
    overlaps = sum(1 for a, b in zip(secs, secs[1:]) if b[0] < a[1])
    return gaps, overlaps


def lock_level(path):
    if not os.path.exists(path):
        return []
    ev = sorted((int(ns), what) for what, ns, _ in
                (l.split() for l in open(path)))
    out, pending = [], None
    for ns, what in ev:
        if what == 'release':
            pending = ns
        elif what == 'grant' and pending is not None:
            out.append((ns - pending) / 1000.0)
            pending = None
    return out


def main():
    d, w = sys.argv[1], sys.argv[2]
    rounds = sorted({int(f.split('.')[2]) for f in os.listdir(d)
                     if f.startswith('flock.%s.' % w) and f.endswith('.sec')})
    per = {}
    for c in ('flock', 'plain', 'fair'):
        r50, cmd, lock, ov = {}, [], [], 0
        for r in rounds:
            base = os.path.join(d, '%s.%s.%d' % (c, w, r))
            if not os.path.exists(base + '.sec'):
                continue
            gaps, o = sections(base + '.sec')
            r50[r] = pct(gaps, 50)
            cmd += gaps
            ov += o
            lock += lock_level(base + '.trace')
        per[c] = (r50, cmd, lock, ov)
    f50 = per['flock'][0]
    for c in ('flock', 'plain', 'fair'):
        r50, cmd, lock, ov = per[c]
        ratios = [r50[r] / f50[r] for r in r50 if f50.get(r)]
        print("%s %.0f %.0f %.0f %.0f %d %d %d %.2f %.2f %.2f" % (
            c, pct(list(r50.values()), 50), pct(cmd, 99), pct(lock, 50),
            pct(lock, 99), len(cmd), len(r50), ov, pct(ratios, 50),
            min(ratios or [float('nan')]), max(ratios or [float('nan')])))


main()
