#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Readers/writer checker for the torture run `rw` (shared locks).

Reads the same logs as check.py (tests/torture/stamp), whose section IDs
start with "r" (a reader: rlock -s) or "w" (a writer: rlock -x), and whose
`launch` event is written just before that rlock is started. Checks:

  beside    moments a writer's section ran beside any other section
            (reader or writer): must be 0
  together  moments a reader's section started while another reader's
            ran: must be more than 0 (readers do share the lock)
  overtook  readers whose section started while a writer was waiting
            (after its launch plus --settle ms, the time it may take to
            ask Redis at all, and before its section started): must be
            0, or a stream of readers could starve the writer
  past      per writer, how long it waited after the sections already
            running (or started) by its launch plus --settle had all
            ended: the longest must stay under --slack ms ("no writer
            waits longer than the readers already inside take"; writers
            queued before it also go first, and their sections are
            short)
  fences    distinct; a section launched after another one ended has a
            larger fence (both modes draw from one counter)

Exit status 0 when all holds, 1 otherwise, 2 on bad input.
`check_rw.py --self-test` runs it on hand-made logs.
"""

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import INF, fence_repeats, parse  # noqa: E402


def ms(ns):
    return round(ns / 1e6, 1)


def check(secs, settle_ms, slack_ms):
    ran = sorted((s for s in secs.values() if s.start is not None),
                 key=lambda s: (s.start, s.id))
    t0 = ran[0].start if ran else 0
    readers = [s for s in ran if s.id.startswith("r")]
    writers = [s for s in ran if s.id.startswith("w")]
    r = {"sections": len(ran), "readers": len(readers),
         "writers": len(writers), "beside": [], "together": 0,
         "max_readers": 0, "overtook": [], "past_ms": 0.0, "past": [],
         "fence_errors": [], "unterminated": [], "exits": {}}
    for s in secs.values():
        if s.exit is not None:
            r["exits"][s.exit] = r["exits"].get(s.exit, 0) + 1
    for s in ran:
        if s.stop() == INF:
            r["unterminated"].append(s.id)

    # Writers beside anyone, readers together: every start against the
    # sections still running then (an overlap always has a later start).
    for i, b in enumerate(ran):
        running = [a for a in ran[:i] if a.stop() > b.start]
        if b.id.startswith("w") or any(a.id.startswith("w")
                                       for a in running):
            if running:
                r["beside"].append({"later": b.id,
                                    "at": ms(b.start - t0),
                                    "running": [a.id for a in running]})
        elif running:
            r["together"] += 1
            r["max_readers"] = max(r["max_readers"], len(running) + 1)

    settle = settle_ms * 1e6
    for w in writers:
        if w.launch is None:
            continue
        asked = w.launch + settle
        # Readers that got in while the writer waited.
        for s in readers:
            if asked < s.start < w.start:
                r["overtook"].append({"reader": s.id, "writer": w.id,
                                      "reader_start": ms(s.start - t0),
                                      "writer_launch": ms(w.launch - t0),
                                      "writer_start": ms(w.start - t0)})
        inside = [s.stop() for s in ran
                  if s is not w and s.start <= asked]
        end = max([asked] + [x for x in inside if x != INF])
        past = (w.start - end) / 1e6
        if past > r["past_ms"]:
            r["past_ms"] = round(past, 1)
        if past > slack_ms:
            r["past"].append({"writer": w.id, "past_ms": round(past, 1)})

    fenced = [s for s in ran if s.fence is not None]
    r["fence_errors"].extend(fence_repeats(fenced))
    ended = sorted(fenced, key=lambda s: s.stop())
    best, j = None, 0
    for s in sorted((s for s in fenced if s.launch is not None),
                    key=lambda s: s.launch):
        while j < len(ended) and ended[j].stop() < s.launch:
            if best is None or ended[j].fence > best.fence:
                best = ended[j]
            j += 1
        if best is not None and s.fence <= best.fence:
            r["fence_errors"].append("%s (fence %d) launched after %s "
                                     "(fence %d) ended" %
                                     (s.id, s.fence, best.id, best.fence))
    missing = [s.id for s in ran if s.fence is None]
    if missing:
        r["fence_errors"].append("%d sections without a fence (%s...)" %
                                 (len(missing), missing[0]))
    return r


def ok_of(r):
    return (not r["beside"] and r["together"] > 0 and not r["overtook"]
            and not r["past"] and not r["fence_errors"]
            and not r["unterminated"] and r["writers"] > 0)


def report(r, label, out=sys.stdout):
    ok = ok_of(r)
    exits = " ".join("%s:%d" % (k, v) for k, v in sorted(r["exits"].items()))
    print("%s: sections=%d readers=%d writers=%d writer_beside=%d "
          "readers_together=%d max_readers=%d overtook=%d "
          "longest_past_inside=%.0fms fence_errors=%d unterminated=%d "
          "exits=[%s] %s" %
          (label, r["sections"], r["readers"], r["writers"],
           len(r["beside"]), r["together"], r["max_readers"],
           len(r["overtook"]), r["past_ms"], len(r["fence_errors"]),
           len(r["unterminated"]), exits, "OK" if ok else "FAIL"), file=out)
    for d in r["beside"][:5]:
        print("  WRITER BESIDE: %s" % json.dumps(d), file=out)
    for d in r["overtook"][:5]:
        print("  OVERTOOK A WAITING WRITER: %s" % json.dumps(d), file=out)
    for d in r["past"][:5]:
        print("  WAITED PAST THE READERS INSIDE: %s" % json.dumps(d),
              file=out)
    for e in r["fence_errors"][:5]:
        print("  FENCE: %s" % e, file=out)
    for u in r["unterminated"][:5]:
        print("  UNTERMINATED: %s" % u, file=out)
    return ok


def run_on(text, settle=100, slack=500):
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(text)
    try:
        secs, _, bad = parse([f.name])
    finally:
        os.unlink(f.name)
    assert bad == 0, "bad lines in a self-test log"
    return check(secs, settle, slack)


def self_test():
    m = 1000000
    good = "\n".join([
        "launch %d - r1" % (0 * m), "start %d 1 r1" % (1 * m),
        "launch %d - r2" % (2 * m), "start %d 2 r2" % (3 * m),
        # w1 launches while r1 and r2 are inside
        "launch %d - w1" % (10 * m),
        # r3 launches after w1 and waits for it
        "launch %d - r3" % (300 * m),
        "end %d 1 r1" % (400 * m), "end %d 2 r2" % (500 * m),
        "start %d 3 w1" % (501 * m), "end %d 3 w1" % (510 * m),
        "start %d 4 r3" % (511 * m), "end %d 4 r3" % (520 * m), ""])
    r = run_on(good)
    assert ok_of(r), r
    assert r["together"] == 1 and r["max_readers"] == 2, r
    # A reader that came after the writer got in first.
    bad = good.replace("start %d 4 r3" % (511 * m),
                       "start %d 4 r3" % (450 * m)).replace(
                       "end %d 4 r3" % (520 * m), "end %d 4 r3" % (460 * m))
    r = run_on(bad)
    assert r["overtook"] and not ok_of(r), r
    # A writer beside a reader.
    bad = good.replace("start %d 3 w1" % (501 * m),
                       "start %d 3 w1" % (499 * m))
    r = run_on(bad)
    assert r["beside"] and not ok_of(r), r
    # A writer that waited long after the readers inside had left.
    bad = good.replace("start %d 3 w1" % (501 * m),
                       "start %d 3 w1" % (1501 * m)).replace(
                       "end %d 3 w1" % (510 * m), "end %d 3 w1" % (1510 * m))
    bad = bad.replace("start %d 4 r3" % (511 * m),
                      "start %d 4 r3" % (1511 * m)).replace(
                      "end %d 4 r3" % (520 * m), "end %d 4 r3" % (1520 * m))
    r = run_on(bad)
    assert r["past"] and not ok_of(r), r
    # Fences: r3 launched after w1 ended but drew a smaller fence.
    bad = good.replace("start %d 3 w1" % (501 * m), "start %d 9 w1" %
                       (501 * m)).replace("end %d 3 w1" % (510 * m),
                                          "end %d 9 w1" % (510 * m))
    bad = bad.replace("launch %d - r3" % (300 * m), "launch %d - r3" %
                      (515 * m))
    r = run_on(bad)
    assert r["fence_errors"], r
    # Two readers given one fence.
    bad = good.replace("start %d 2 r2" % (3 * m), "start %d 1 r2" % (3 * m))
    bad = bad.replace("end %d 2 r2" % (500 * m), "end %d 1 r2" % (500 * m))
    r = run_on(bad)
    assert any("given to" in e for e in r["fence_errors"]), r
    # Readers never together.
    r = run_on("\n".join(["launch 0 - r1", "start 1 1 r1", "end 2 1 r1",
                          "launch 3 - w1", "start 4 2 w1", "end 5 2 w1",
                          "launch 6 - r2", "start 7 3 r2", "end 8 3 r2",
                          ""]))
    assert r["together"] == 0 and not ok_of(r), r
    print("check_rw.py self-test: 7 cases ok")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--label", default="rw")
    ap.add_argument("--settle", type=float, default=250,
                    help="ms a writer may take to ask Redis after launch")
    ap.add_argument("--slack", type=float, default=1000,
                    help="ms a writer may wait past the sections inside")
    ap.add_argument("--json")
    ap.add_argument("logs", nargs="*")
    a = ap.parse_args()
    if a.self_test:
        self_test()
        return 0
    if not a.logs:
        ap.error("no log")
    secs, _, bad = parse(a.logs)
    if bad:
        print("%s: %d unreadable lines" % (a.label, bad), file=sys.stderr)
        return 2
    r = check(secs, a.settle, a.slack)
    ok = report(r, a.label)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
