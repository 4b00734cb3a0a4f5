#!/usr/bin/env python3
"""herd.py SOCKET N ROUNDS GO BASE CONF [::: CONF]...: what a herd costs
Redis: N processes that try one KEY at the same instant, of which one
runs and the others skip (a cron fleet's minute).

CONF is NAME CMD [ARG...]; "%d" in an ARG becomes the round's number, so
each round has a KEY of its own (--min-hold keeps the last one's). Each
round runs every CONF (in an order that rotates): N processes are forked
and held at a gate (a pipe), which then opens for all of them at once;
status 0 counts as ran, 75 as skipped, anything else as failed. A CMD
whose winner must hold until the others are done waits for the file GO,
made once all but one have ended. Redis's used_cpu_sys + used_cpu_user
(connections, parsing and replies included) and INFO commandstats are
read before and after on one connection of our own.

Prints per CONF: NAME cpu_ms_p50 cpu_ratio ran skipped failed wall_ms_p50,
the ratio the median of the same-round CONF / BASE, then per CONF a line
"NAME: COMMAND calls/run usec/run ..." from commandstats (the last
round's), the commands that cost most first.
"""
import os
import sys
import time

from benchlib import Redis, configs, pct


def herd(n, cmd, go):
    """Run the herd; (ran, skipped, failed, wall ms)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    r, w = os.pipe()
    kids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            try:
                os.close(w)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                os.read(r, 1)
                os.close(r)
                os.execvp(cmd[0], cmd)
            finally:
                os._exit(127)
        kids.append(pid)
    os.close(r)
    os.close(devnull)
    t0 = time.monotonic()
    os.close(w)
    ran = skipped = failed = 0
    for k in range(n):
        _, st = os.wait()
        code = os.waitstatus_to_exitcode(st)
        if code == 0:
            ran += 1
        elif code == 75:
            skipped += 1
        else:
            failed += 1
        if k == n - 2:
            open(go, 'w').close()
    wall = (time.monotonic() - t0) * 1000
    os.unlink(go)
    return ran, skipped, failed, wall


def calls(r):
    out = {}
    for line in r.call('INFO', 'commandstats').splitlines():
        if line.startswith('cmdstat_'):
            name, rest = line[len('cmdstat_'):].split(':', 1)
            f = dict(kv.split('=') for kv in rest.split(','))
            out[name] = (int(f['calls']), int(f['usec']))
    return out


def main():
    sock, n, rounds, go, base = sys.argv[1], int(sys.argv[2]), \
        int(sys.argv[3]), sys.argv[4], sys.argv[5]
    cs = configs(sys.argv[6:])
    r = Redis(sock)
    cpu = {c[0]: [] for c in cs}
    wall = {c[0]: [] for c in cs}
    seen = {c[0]: [0, 0, 0] for c in cs}
    stats = {}
    for rnd in range(rounds):
        for k in range(len(cs)):
            name, cmd = cs[(rnd + k) % len(cs)]
            cmd = [a.replace('%d', str(rnd)) for a in cmd]
            s0, c0 = calls(r), r.stats()[1]
            ran, skipped, failed, ms = herd(n, cmd, go)
            c1, s1 = r.stats()[1], calls(r)
            cpu[name].append((c1 - c0) / 1000)
            wall[name].append(ms)
            for i, v in enumerate((ran, skipped, failed)):
                seen[name][i] += v
            # Less our own INFO commands.
            stats[name] = {c: (v[0] - s0.get(c, (0, 0))[0],
                               v[1] - s0.get(c, (0, 0))[1])
                           for c, v in s1.items() if c != 'info'}
    for name, _ in cs:
        ratio = [a / b for a, b in zip(cpu[name], cpu[base]) if b > 0]
        print('%s %.1f %.2f %d %d %d %.0f' % (
            name, pct(cpu[name], 50), pct(ratio, 50), seen[name][0],
            seen[name][1], seen[name][2], pct(wall[name], 50)))
    for name, _ in cs:
        rows = sorted(((v[1], c, v[0]) for c, v in stats[name].items()
                       if v[0] > 0), reverse=True)
        print('%s: %s' % (name, ' '.join(
            '%s %.2f/%.1fus' % (c, k / n, u / n) for u, c, k in rows)))


main()
