#!/usr/bin/env python3
"""cpu.py SOCKET CYCLES ROUNDS BASE CONF [::: CONF]...: Redis's CPU per
lock cycle, from the server's own counters, configurations interleaved.

CONF is NAME TOP CMD [ARG...]: CMD does one lock cycle; TOP names the
commands CMD sends (comma separated, as INFO commandstats names them:
config|get), "-" for none. Each round runs every CONF (in an order that
rotates) CYCLES times in a row, and reads INFO commandstats and INFO cpu
on one connection of our own before and after. Per CONF and round:

  top  the usec INFO commandstats adds up for the TOP commands, per cycle:
       the "top-level" commands. A script's own redis.call()s are counted
       in commandstats too, under their names, and inside the script's
       usec: they are not added again.
  cpu  Redis's used_cpu_sys + used_cpu_user, per cycle, less the same for
       the CONF named "idle" in the same round (our own INFO calls, the
       server's cron): all the server did for the cycle, connections,
       parsing and replies included.

Prints per CONF: NAME top_p50 top_ratio cpu_p50 cpu_ratio rounds, where
a ratio is the median over the rounds of CONF / BASE (a NAME) in the same
round. Fails if a command of a cycle fails.
"""
import subprocess
import sys

from benchlib import Redis, pct


def confs(args):
    out, cur = [], []
    for a in args + [':::']:
        if a == ':::':
            name, top, cmd = cur[0], cur[1], cur[2:]
            out.append((name, set() if top == '-' else set(top.split(',')),
                        cmd))
            cur = []
        else:
            cur.append(a)
    return out


def main():
    sock, cycles, rounds, base = sys.argv[1], int(sys.argv[2]), \
        int(sys.argv[3]), sys.argv[4]
    cs = confs(sys.argv[5:])
    r = Redis(sock)
    top = {c[0]: [] for c in cs}
    cpu = {c[0]: [] for c in cs}
    for rnd in range(rounds):
        this = {}
        for k in range(len(cs)):
            name, names, cmd = cs[(rnd + k) % len(cs)]
            u0, c0 = r.stats()
            for _ in range(cycles):
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            u1, c1 = r.stats()
            t = sum(u1.get(n, 0) - u0.get(n, 0) for n in names)
            this[name] = (t / cycles, (c1 - c0) / cycles)
        idle = this.get('idle', (0, 0))[1]
        for name in this:
            top[name].append(this[name][0])
            cpu[name].append(this[name][1] - idle)
    for name, _, _ in cs:
        tr = [a / b for a, b in zip(top[name], top[base]) if b > 0]
        cr = [a / b for a, b in zip(cpu[name], cpu[base]) if b > 0]
        print('%s %.1f %.2f %.1f %.2f %d' % (
            name, pct(top[name], 50), pct(tr, 50), pct(cpu[name], 50),
            pct(cr, 50), rounds))


main()
