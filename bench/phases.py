#!/usr/bin/env python3
"""phases.py LOG ROUNDS NAME...: where each command's wall time went.

LOG is bench/phases.c's stamps of a `rounds -p phases.so N CMD ::: ...`
run, ROUNDS that run's output (one wall time per command per round), NAME
one label per command. Runs follow each other in LOG in the order rounds
ran them (the order rotates: round r runs command (r + k) % n k-th), each
opening with its "t0" stamp. A run's stamps, its own and its COMMAND's
(the child's are named child-...), sorted by time, cut its wall time into
intervals "a -> b", numbered where an event repeats (send2: the second
round trip). The last, "exit -> end", is the driver's wall time after the
exit stamp: exit handlers, the kernel's teardown, waking the driver.

Prints, per NAME, the median of each interval over the runs, in us, and
the median wall time; the intervals' medians need not add up to it
exactly. Beside each, the median of the minor page faults the process
that stamped its end took since its previous stamp (its fork, for its
first).
"""
import sys
from collections import OrderedDict


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float('nan')
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def runs(path):
    out, cur, t0 = [], None, None
    for line in open(path):
        ev, ns, pid, flt = line.split()
        ns, pid, flt = int(ns), int(pid), int(flt)
        if ev == 't0':
            if ns != t0:
                t0 = ns
                cur = {'t0': ns, 'top': pid, 'ev': []}
                out.append(cur)
            continue
        if cur is not None:
            cur['ev'].append((ns, ev, pid, flt))
    return out


def intervals(run, wall_us):
    seen, prev, prev_ns, res = {}, 't0', run['t0'], []
    faults = {}  # pid -> faults at its last stamp
    for ns, ev, pid, flt in sorted(run['ev']):
        name = ev if pid == run['top'] else 'child-' + ev
        seen[name] = seen.get(name, 0) + 1
        label = name + (str(seen[name]) if name in ('send', 'recv') else '')
        # A process's first stamp counts from its fork (an exec keeps
        # the count).
        res.append(('%s -> %s' % (prev, label), (ns - prev_ns) / 1000.0,
                    flt - faults.get(pid, 0)))
        faults[pid] = flt
        prev, prev_ns = label, ns
    end = run['t0'] + wall_us * 1000
    res.append(('%s -> end' % prev, (end - prev_ns) / 1000.0, 0))
    return res


def main():
    log, rounds, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    walls = [[float(v) for v in l.split()] for l in open(rounds) if l.strip()]
    n = len(names)
    rs = runs(log)
    if len(rs) != n * len(walls):
        sys.exit('phases.py: %d runs stamped, %d ran' % (len(rs),
                                                         n * len(walls)))
    per = [OrderedDict() for _ in names]
    for j, run in enumerate(rs):
        r, k = divmod(j, n)
        c = (r + k) % n
        for label, us, flt in intervals(run, walls[r][c]):
            per[c].setdefault(label, []).append((us, flt))
    for c, name in enumerate(names):
        print('%s: wall %.0f us (median of %d)' % (
            name, pct([w[c] for w in walls], 50), len(walls)))
        print('  %-36s %7s %7s' % ('interval', 'us', 'faults'))
        for label, xs in per[c].items():
            print('  %-36s %7.0f %7d' % (label, pct([x[0] for x in xs], 50),
                                        pct([x[1] for x in xs], 50)))


main()
