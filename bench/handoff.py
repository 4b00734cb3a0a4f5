#!/usr/bin/env python3
"""handoff.py DIR W BASE [LOCKBASE]: hand-off latencies of the benchmark's
rounds.

DIR holds, for each round R and each configuration C (flock, plain, fair,
...; no dots in C), C.W.R.sec (the sections' start/end lines) and, for
rlock, C.W.R.trace (its RLOCK_TRACE events). Every round ran all its
configurations one after the other, in an order that rotates.

Command level: for consecutive sections (by start time), next start minus
previous end. Lock level (from the trace): each holder's release to the
next holder's grant (below zero when the grant came first). Prints one line per configuration:

  C cmd_p50 cmd_p99 lock_p50 lock_p99 n rounds overlaps ratio lo hi lratio

in microseconds. The p50s are the median over the rounds of each round's
p50, the p99s over all samples pooled. ratio is the median over the
rounds of (C's command p50 / BASE's in the same round), lo and hi its
smallest and largest: a round where the machine was busy slows all, so
the ratio is steadier than either figure. lratio is the same for the lock
level against LOCKBASE (nan without it). overlaps counts sections that
started before the previous one ended (must be 0 for a mutex).
"""
import os
import sys

from benchlib import pct


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
    """Each holder's traced release to the next holder's grant. A waiter
    whose attempt Redis ran right behind its BLPOP can log its grant
    before the releaser, still reading its own answer, logs the release:
    so holders are ordered by their grants and matched by pid, and a
    hand-off can measure below zero."""
    if not os.path.exists(path):
        return []
    rel, grant = {}, []
    for what, ns, pid in (l.split() for l in open(path)):
        if what == 'release':
            rel[pid] = int(ns)
        elif what == 'grant':
            grant.append((int(ns), pid))
    grant.sort()
    return [(g[0] - rel[p[1]]) / 1000.0 for p, g in zip(grant, grant[1:])
            if p[1] in rel]


def ratios(a, b):
    return [a[r] / b[r] for r in a if b.get(r)]


def main():
    d, w, base = sys.argv[1], sys.argv[2], sys.argv[3]
    lockbase = sys.argv[4] if len(sys.argv) > 4 else None
    confs, rounds = [], set()
    for f in sorted(os.listdir(d)):
        parts = f.split('.')
        if len(parts) == 4 and parts[1] == w and parts[3] == 'sec':
            if parts[0] not in confs:
                confs.append(parts[0])
            rounds.add(int(parts[2]))
    per = {}
    for c in confs:
        c50, l50, cmd, lock, ov = {}, {}, [], [], 0
        for r in sorted(rounds):
            b = os.path.join(d, '%s.%s.%d' % (c, w, r))
            if not os.path.exists(b + '.sec'):
                continue
            gaps, o = sections(b + '.sec')
            ll = lock_level(b + '.trace')
            c50[r] = pct(gaps, 50)
            if ll:
                l50[r] = pct(ll, 50)
            cmd += gaps
            lock += ll
            ov += o
        per[c] = (c50, l50, cmd, lock, ov)
    nan = float('nan')
    for c in confs:
        c50, l50, cmd, lock, ov = per[c]
        cr = ratios(c50, per[base][0]) if base in per else []
        lr = ratios(l50, per[lockbase][1]) if lockbase in per else []
        print("%s %.0f %.0f %.0f %.0f %d %d %d %.2f %.2f %.2f %.2f" % (
            c, pct(list(c50.values()), 50), pct(cmd, 99),
            pct(list(l50.values()), 50), pct(lock, 99), len(cmd),
            len(c50), ov, pct(cr, 50), min(cr or [nan]), max(cr or [nan]),
            pct(lr, 50)))


main()
