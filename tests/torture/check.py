#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mutual-exclusion checker for the torture runs (issue 6).

Reads event logs written by tests/torture/stamp (one line per event,
"EVENT NS FENCE ID [ARG]", NS on CLOCK_MONOTONIC of the one machine):

  start / end / told / gone   written by a critical section (COMMAND)
  exit  ID ARG=status         written by the worker after rlock returned
  frozen ID                   the injector SIGSTOPped this section's rlock
  fault ARG=what              the injector did something (counted)
  launch ID                   the worker is about to start this rlock
  queued ID                   a --fair rlock first had its place in the
                              queue (its RLOCK_TRACE, copied by the worker)

A section runs from `start` to the first of `end` and `gone` (`gone` is
written by a watcher when the section's process is gone, even after a
SIGKILL). It was told at its first `told` (the --on-lost SIGTERM, or the
kernel's PDEATHSIG when rlock died).

The guarantee checked ("no two commands run at once unless the first
was told its lease was lost before the second started"): when a section
B starts, count the sections A that started before it and still run; at
most N-1 of them may be untold at B's start. More than N-1 running at all
is an *overlap*; more than N-1 untold is a *violation*. A violation whose
untold sections include one whose rlock had been SIGSTOPped (`frozen`)
before B started is the frozen-supervisor limitation: counted apart, and
fatal unless --allow-frozen.

Order (--order, N=1): a --fair waiter A had its place in the queue
(`queued`) before another rlock B was launched, and both ran: A must
start first, whatever the weather in between (the queue survives a
restart with AOF, and a live waiter keeps its place). One that timed
out, was killed or never ran leaves the order: only pairs that both ran
are compared. Every B (plain or --fair) counts, since a plain waiter
never overtakes a live --fair one either.

Fences: with N=1, sections ordered by start must carry strictly
increasing fences. With N>1 (holders overlap, so start order is not grant
order), fences must be distinct, and a section that started after another
one ended must carry a larger fence.

Exit status: 0 when all holds, 1 on any violation, 2 on bad input.
`check.py --self-test` runs the checker on hand-made logs.
"""

import argparse
import bisect
import heapq
import json
import os
import sys
import tempfile

INF = float("inf")


class Section:
    __slots__ = ("id", "fence", "start", "end", "gone", "told", "exit",
                 "frozen", "launch", "exit_at", "queued")

    def __init__(self, sid):
        self.id = sid
        self.fence = None
        self.start = None
        self.end = None
        self.gone = None
        self.told = None
        self.exit = None
        self.frozen = None
        self.launch = None
        self.exit_at = None
        self.queued = None

    def stop(self):
        """When the section stopped running (INF if never seen to)."""
        t = [x for x in (self.end, self.gone) if x is not None]
        return min(t) if t else INF


def parse(paths):
    secs, faults, bad = {}, [], 0
    for path in paths:
        with open(path, "r", errors="replace") as f:
            for line in f:
                w = line.split()
                if len(w) < 4:
                    bad += 1
                    continue
                ev, fence, sid = w[0], w[2], w[3]
                arg = " ".join(w[4:])
                try:
                    ns = int(w[1])
                except ValueError:
                    bad += 1
                    continue
                if ev == "fault":
                    faults.append((ns, arg))
                    continue
                s = secs.get(sid)
                if s is None:
                    s = secs[sid] = Section(sid)
                if fence != "-" and s.fence is None:
                    try:
                        s.fence = int(fence)
                    except ValueError:
                        bad += 1
                if ev == "start":
                    s.start = ns if s.start is None else min(s.start, ns)
                elif ev == "end":
                    s.end = ns if s.end is None else min(s.end, ns)
                elif ev == "gone":
                    s.gone = ns if s.gone is None else min(s.gone, ns)
                elif ev == "told":
                    s.told = ns if s.told is None else min(s.told, ns)
                elif ev == "launch":
                    s.launch = ns if s.launch is None else min(s.launch, ns)
                elif ev == "queued":
                    s.queued = ns if s.queued is None else min(s.queued, ns)
                elif ev == "frozen":
                    s.frozen = ns if s.frozen is None else min(s.frozen, ns)
                elif ev == "exit":
                    s.exit_at = ns
                    try:
                        s.exit = int(arg)
                    except ValueError:
                        bad += 1
                else:
                    bad += 1
    return secs, faults, bad


def ms(ns):
    return "%.3fms" % (ns / 1e6)


def fence_repeats(fenced):
    """One message for each section given a fence an earlier one had."""
    errors, seen = [], {}
    for s in fenced:
        if s.fence in seen:
            errors.append("fence %d given to %s and %s" %
                          (s.fence, seen[s.fence], s.id))
        seen[s.fence] = s.id
    return errors


def order_errors(ran, t0):
    """Service order against arrival order (--order): (pairs compared,
    one message per section B that started before a section A queued
    before B's launch)."""
    queued = sorted(s.queued for s in ran if s.queued is not None)
    pairs = 0
    for b in ran:
        if b.launch is not None:
            pairs += bisect.bisect_left(queued, b.launch)
    errors = []
    # From the last start back: the earliest queued among later starts.
    first = None
    for b in sorted(ran, key=lambda s: (s.start, s.id), reverse=True):
        if b.launch is not None and first is not None and \
                first.queued < b.launch:
            errors.append("%s (queued %s) started at %s, after %s "
                          "(launched %s, started %s)"
                          % (first.id, ms(first.queued - t0),
                             ms(first.start - t0), b.id,
                             ms(b.launch - t0), ms(b.start - t0)))
        if b.queued is not None and (first is None or
                                     b.queued < first.queued):
            first = b
    return pairs, errors


def check(secs, n, t0=None, order=False, unfenced=()):
    """Returns a result dict; problems are in r["violations"] etc."""
    ran = sorted((s for s in secs.values() if s.start is not None),
                 key=lambda s: (s.start, s.id))
    if t0 is None:
        t0 = ran[0].start if ran else 0
    r = {
        "sections": len(ran),
        "attempts": sum(1 for s in secs.values() if s.exit is not None),
        "overlaps": 0, "announced": 0, "violations": [], "frozen": [],
        "fence_errors": [], "unterminated": [],
        "exit70": sum(1 for s in secs.values() if s.exit == 70),
        "told": sum(1 for s in ran if s.told is not None),
        "exits": {},
        "max_holders": 0,
        "longest_idle_ms": 0,
        "order_pairs": None, "order_errors": [],
    }
    for s in secs.values():
        if s.exit is not None:
            r["exits"][s.exit] = r["exits"].get(s.exit, 0) + 1
    active = []		# heap of (stop, seq, section)
    last_stop = None	# when the last section stopped, if none runs
    for seq, b in enumerate(ran):
        while active and active[0][0] <= b.start:
            last_stop = heapq.heappop(active)[0]
        # Liveness: how long the lock stayed unused between sections.
        if not active and last_stop is not None:
            idle = (b.start - last_stop) / 1e6
            r["longest_idle_ms"] = max(r["longest_idle_ms"], round(idle))
        running = [a for (_, _, a) in active]
        if len(running) + 1 > r["max_holders"]:
            r["max_holders"] = len(running) + 1
        if len(running) >= n:
            r["overlaps"] += 1
            untold = [a for a in running
                      if a.told is None or a.told >= b.start]
            if len(untold) < n:
                r["announced"] += 1
            else:
                frozen = [a for a in untold
                          if a.frozen is not None and a.frozen < b.start]
                d = {
                    "later": b.id, "later_start": ms(b.start - t0),
                    "later_fence": b.fence,
                    "running": [{
                        "id": a.id, "fence": a.fence,
                        "start": ms(a.start - t0),
                        "stop": "never" if a.stop() == INF
                        else ms(a.stop() - t0),
                        "told": "never" if a.told is None
                        else ms(a.told - t0),
                        "frozen": a.frozen is not None,
                        "exit": a.exit} for a in running],
                }
                # Only the frozen ones make up the excess: the limitation.
                if len(untold) - len(frozen) < n:
                    r["frozen"].append(d)
                else:
                    r["violations"].append(d)
        if b.stop() == INF:
            r["unterminated"].append(b.id)
        heapq.heappush(active, (b.stop(), seq, b))
    # ... and after the last one, up to the last rlock's exit (waiters
    # that gave up on a lock nobody used).
    stops = [s.stop() for s in ran]
    exits = [s.exit_at for s in secs.values() if s.exit_at is not None]
    if stops and exits and max(stops) != INF and max(exits) > max(stops):
        idle = (max(exits) - max(stops)) / 1e6
        r["longest_idle_ms"] = max(r["longest_idle_ms"], round(idle))
    fenced = [s for s in ran if s.fence is not None]
    if n == 1:
        for a, b in zip(fenced, fenced[1:]):
            if b.fence <= a.fence:
                r["fence_errors"].append(
                    "%s (fence %d, start %s) then %s (fence %d, start %s)"
                    % (a.id, a.fence, ms(a.start - t0), b.id, b.fence,
                       ms(b.start - t0)))
    else:
        r["fence_errors"].extend(fence_repeats(fenced))
        # Start order is not grant order here, but a section that ended
        # before B's rlock was even launched was granted before B.
        ended = [(s.stop(), s.fence, s.id) for s in fenced]
        heapq.heapify(ended)
        best, best_id = None, None
        for s in sorted((s for s in fenced if s.launch is not None),
                        key=lambda s: s.launch):
            while ended and ended[0][0] < s.launch:
                _, f, sid = heapq.heappop(ended)
                if best is None or f > best:
                    best, best_id = f, sid
            if best is not None and s.fence <= best:
                r["fence_errors"].append(
                    "%s (fence %d) launched after %s (fence %d) ended"
                    % (s.id, s.fence, best_id, best))
    if order:
        r["order_pairs"], r["order_errors"] = order_errors(ran, t0)
    # Another client's sections (--unfenced ID prefixes) carry no fence.
    missing = [s.id for s in ran if s.fence is None and
               not s.id.startswith(tuple(unfenced))]
    if missing:
        r["fence_errors"].append("%d sections without a fence (%s...)" %
                                 (len(missing), missing[0]))
    return r


def report(r, label, faults, allow_frozen, out=sys.stdout, verbose=True,
           tolerate=False):
    ok = (tolerate or not r["violations"]) and not r["fence_errors"] and \
        not r["unterminated"] and (allow_frozen or not r["frozen"]) and \
        not r["order_errors"]
    exits = " ".join("%s:%d" % (k, v) for k, v in sorted(r["exits"].items()))
    inc = {a["id"] for d in r["violations"] + r["frozen"]
           for a in d["running"]}
    r["incidents"] = len(inc)
    print("%s: sections=%d attempts=%d faults=%d overlaps=%d announced=%d "
          "frozen_supervisor=%d violations=%d incidents=%d fence_errors=%d "
          "lost70=%d told=%d max_holders=%d unterminated=%d "
          "longest_idle=%dms exits=[%s]%s %s" %
          (label, r["sections"], r["attempts"], len(faults), r["overlaps"],
           r["announced"], len(r["frozen"]), len(r["violations"]),
           len(inc), len(r["fence_errors"]), r["exit70"], r["told"], r["max_holders"],
           len(r["unterminated"]), r["longest_idle_ms"], exits,
           "" if r["order_pairs"] is None else
           " order_pairs=%d order_errors=%d" % (r["order_pairs"],
                                                len(r["order_errors"])),
           "OK" if ok else "FAIL"), file=out)
    if verbose:
        for d in r["violations"][:10]:
            print("  %s: %s" % ("overlap outside the contract" if tolerate
                                else "VIOLATION", json.dumps(d)), file=out)
        for d in r["frozen"][:5]:
            print("  frozen supervisor (known limitation): %s" %
                  json.dumps(d), file=out)
        for e in r["fence_errors"][:10]:
            print("  FENCE: %s" % e, file=out)
        for u in r["unterminated"][:10]:
            print("  UNTERMINATED: %s never seen to stop" % u, file=out)
        for e in r["order_errors"][:10]:
            print("  ORDER: %s" % e, file=out)
    return ok


# ---------------------------------------------------------------- self-test

def self_test():
    ms1 = 1000000
    cases = [
        # (name, N, allow_frozen, lines, expect_ok, expect dict subset)
        ("sequential", 1, False, """
start 0 1 a
end 10 1 a 0
start 11 2 b
gone 20 2 b
exit 21 - a 0
exit 22 - b 0
""", True, {"sections": 2, "overlaps": 0}),
        ("overlap, first never told", 1, False, """
start 0 1 a
start 5 2 b
end 10 1 a 0
end 15 2 b 0
""", False, {"overlaps": 1, "violations": 1}),
        ("overlap, first told before", 1, False, """
start 0 1 a
told 4 1 a
start 5 2 b
end 10 1 a 143
end 15 2 b 0
exit 16 - a 70
""", True, {"overlaps": 1, "announced": 1, "exit70": 1}),
        ("overlap, first told after the second started", 1, False, """
start 0 1 a
start 5 2 b
told 6 1 a
end 10 1 a 143
end 15 2 b 0
""", False, {"violations": 1}),
        ("SIGKILLed: only gone", 1, False, """
start 0 1 a
told 1 1 a
gone 30 1 a
start 20 2 b
end 40 2 b 0
""", True, {"announced": 1}),
        ("never seen to stop", 1, False, """
start 0 1 a
start 50 2 b
end 60 2 b 0
""", False, {"violations": 1, "unterminated": 1}),
        ("fence goes backwards", 1, False, """
start 0 5 a
end 10 5 a 0
start 11 4 b
end 20 4 b 0
""", False, {"fence_errors": 1}),
        ("fence repeats", 1, False, """
start 0 5 a
end 10 5 a 0
start 11 5 b
end 20 5 b 0
""", False, {"fence_errors": 1}),
        ("fence repeats, two holders", 2, False, """
start 0 5 a
start 1 5 b
end 10 5 a 0
end 11 5 b 0
""", False, {"fence_errors": 1}),
        ("frozen supervisor, not allowed", 1, False, """
start 0 1 a
frozen 2 1 a
start 5 2 b
end 10 1 a 0
end 15 2 b 0
""", False, {"frozen": 1, "violations": 0}),
        ("frozen supervisor, allowed", 1, True, """
start 0 1 a
frozen 2 1 a
start 5 2 b
end 10 1 a 0
end 15 2 b 0
""", True, {"frozen": 1}),
        ("touching is not overlapping", 1, False, """
start 0 1 a
end 10 1 a 0
start 10 2 b
end 20 2 b 0
""", True, {"overlaps": 0}),
        ("-N 2: two at once is fine", 2, False, """
start 0 1 a
start 5 2 b
end 10 1 a 0
end 15 2 b 0
""", True, {"overlaps": 0, "max_holders": 2}),
        ("-N 2: three at once", 2, False, """
start 0 1 a
start 5 2 b
start 6 3 c
end 10 1 a 0
end 15 2 b 0
end 15 3 c 0
""", False, {"overlaps": 1, "violations": 1, "max_holders": 3}),
        ("-N 2: three at once, one told", 2, False, """
start 0 1 a
told 3 1 a
start 5 2 b
start 6 3 c
end 10 1 a 143
end 15 2 b 0
end 15 3 c 0
""", True, {"overlaps": 1, "announced": 1}),
        ("-N 2: start order is not grant order", 2, False, """
launch 0 - a
launch 0 - b
start 1 2 a
start 2 1 b
end 10 2 a 0
end 10 1 b 0
launch 1 - c
start 11 3 c
end 12 3 c 0
""", True, {"fence_errors": 0}),
        ("-N 2: granted before, started after another ended", 2, False, """
launch 0 - a
launch 0 - b
start 1 5 a
end 10 5 a 0
start 11 4 b
end 12 4 b 0
""", True, {"fence_errors": 0}),
        ("-N 2: launched after another ended, older fence", 2, False, """
launch 0 - a
start 1 5 a
end 10 5 a 0
launch 11 - b
start 12 4 b
end 13 4 b 0
""", False, {"fence_errors": 1}),
        # --order: h holds; a is queued before b and c are launched.
        ("order: served in arrival order", 1, False, """
start 0 1 h
launch 1 - a
queued 2 - a
launch 3 - b
queued 4 - b
launch 5 - c
end 10 1 h 0
start 11 2 a
end 12 2 a 0
start 13 3 b
end 14 3 b 0
start 15 4 c
end 16 4 c 0
""", True, {"order_pairs": 3, "order_errors": 0}, True),
        ("order: a later arrival served first", 1, False, """
start 0 1 h
launch 1 - a
queued 2 - a
launch 3 - b
queued 4 - b
end 10 1 h 0
start 11 2 b
end 12 2 b 0
start 13 3 a
end 14 3 a 0
""", False, {"order_pairs": 1, "order_errors": 1}, True),
        # Launched before a was queued: b may go first (it may have
        # joined first); c, which timed out, leaves the order.
        ("order: not waiting at the same time, or never served", 1,
         False, """
start 0 1 h
launch 1 - b
launch 2 - a
queued 3 - a
queued 4 - b
launch 5 - c
queued 6 - c
end 10 1 h 0
start 11 2 b
end 12 2 b 0
start 13 3 a
end 14 3 a 0
exit 20 - c 75
""", True, {"order_pairs": 0, "order_errors": 0}, True),
    ]
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for name, n, allow, text, want_ok, want, *order in cases:
            p = os.path.join(d, "log")
            with open(p, "w") as f:
                for ln in text.strip().splitlines():
                    w = ln.split()
                    w[1] = str(int(w[1]) * ms1)
                    f.write(" ".join(w) + "\n")
            secs, faults, bad = parse([p])
            r = check(secs, n, order=bool(order))
            with open(os.devnull, "w") as null:
                ok = report(r, name, faults, allow, out=null)
            got = {k: (len(v) if isinstance(v, list) else v)
                   for k, v in r.items()}
            # A case of the order check that got no answer from it fails.
            if order and r["order_pairs"] is None:
                got["order_pairs"] = "none"
            mism = {k: (got[k], v) for k, v in want.items() if got[k] != v}
            if ok != want_ok or mism or bad:
                failed += 1
                print("self-test FAILED: %s: ok=%s (want %s) %s" %
                      (name, ok, want_ok, mism))
        # The command line too: an overlap must make it exit non-zero.
        p = os.path.join(d, "cli.log")
        with open(p, "w") as f:
            f.write("start 0 1 a\nstart 5000000 2 b\n"
                    "end 10000000 1 a 0\nend 15000000 2 b 0\n")
        with open(os.devnull, "w") as null:
            import subprocess
            rc = subprocess.call([sys.executable, __file__, p], stdout=null)
        if rc != 1:
            failed += 1
            print("self-test FAILED: the command line exited %d on an "
                  "overlap" % rc)
    print("check.py self-test: %d cases, %d failed" % (len(cases) + 1,
                                                        failed))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="*")
    ap.add_argument("-N", type=int, default=1, help="holders allowed")
    ap.add_argument("--label", default="check")
    ap.add_argument("--allow-frozen", action="store_true",
                    help="frozen-supervisor overlaps are reported only")
    ap.add_argument("--tolerate-overlaps", action="store_true",
                    help="violations are reported only (a run outside the "
                    "contract, e.g. Redis lost its data); fences still count")
    ap.add_argument("--order", action="store_true",
                    help="service order must be arrival order (--fair "
                    "waiters' queued events; N=1)")
    ap.add_argument("--json", help="also write the result here")
    ap.add_argument("--unfenced", action="append", default=[],
                    help="sections whose ID starts so have no fence")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.logs:
        ap.error("no log given")
    secs, faults, bad = parse(a.logs)
    if bad:
        print("%s: %d unreadable lines" % (a.label, bad), file=sys.stderr)
        return 2
    r = check(secs, a.N, order=a.order, unfenced=a.unfenced)
    ok = report(r, a.label, faults, a.allow_frozen,
                tolerate=a.tolerate_overlaps)
    if a.json:
        r["faults"] = len(faults)
        r["fault_list"] = [f for _, f in faults]
        r["ok"] = ok
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1, default=str)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
