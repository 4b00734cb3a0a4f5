#!/usr/bin/env python3
"""tput.py SOCKET MS CLIENTS ROUNDS BASE CONF [::: CONF]...: lock cycles
per second through each CONF, and per second of Redis CPU.

CONF is NAME CMD [ARG...], a process that does one lock cycle; "%d" in an
ARG becomes the client's number (distinct keys). Each round runs every
CONF (in an order that rotates) as bench/load does: CLIENTS processes
running CMD again and again for MS ms. Redis's used_cpu_sys + used_cpu_user
is read before and after. Per CONF and round:

  rate    cycles per second of wall time: on a small machine the clients'
          processes, not Redis, set it
  util    Redis's CPU over the same wall time (1.0 = one core)
  percpu  cycles per second of Redis CPU: what one Redis core sustains
          through CONF when the clients are elsewhere

Prints per CONF: NAME rate_p50 util_p50 percpu_p50 percpu_ratio failed,
the ratio the median of the same-round CONF / BASE.
"""
import os
import subprocess
import sys

from benchlib import Redis, configs, pct


def main():
    sock, ms, clients, rounds, base = sys.argv[1], sys.argv[2], \
        sys.argv[3], int(sys.argv[4]), sys.argv[5]
    load = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        '..', 'build', 'load')
    cs = configs(sys.argv[6:])
    r = Redis(sock)
    fig = {n: [] for n, _ in cs}
    failed = {n: 0 for n, _ in cs}
    for rnd in range(rounds):
        for k in range(len(cs)):
            name, cmd = cs[(rnd + k) % len(cs)]
            c0 = r.stats()[1]
            out = subprocess.run([load, ms, clients] + cmd, check=True,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL).stdout.split()
            c1 = r.stats()[1]
            ok, bad, wall = int(out[0]), int(out[1]), int(out[2])
            failed[name] += bad
            fig[name].append((ok * 1e6 / wall, (c1 - c0) / wall,
                              ok * 1e6 / (c1 - c0) if c1 > c0 else 0))
    for name, _ in cs:
        f = fig[name]
        ratio = [a[2] / b[2] for a, b in zip(f, fig[base]) if b[2] > 0]
        print('%s %.0f %.3f %.0f %.2f %d' % (
            name, pct([x[0] for x in f], 50), pct([x[1] for x in f], 50),
            pct([x[2] for x in f], 50), pct(ratio, 50), failed[name]))


main()
