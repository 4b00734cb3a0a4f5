#!/usr/bin/env python3
"""foreign.py RLOCK [RUNS] [WAITERS] [SECONDS]: rlock waiting on a lock that
redis-py's Lock holds on the same key (rlock:{K}, no :meta).

Starts its own redis-server on a unix socket in a temporary directory.

1. Release latency, RUNS times (10): redis-py takes the lock (timeout 30 s),
   one `rlock -k K` waits for it; once the waiter is looking, Lock.release()
   and time until COMMAND starts (COMMAND writes its clock). Prints each
   and p50/max in ms.
2. Cost while held: WAITERS plain rlock waiters (5) wait SECONDS (10) on a
   held redis-py lock; prints the Redis commands they cost per waiter-second
   (INFO stats total_commands_processed, which counts the commands inside
   scripts too), and INFO commandstats' calls by command.

Needs redis-py (python3-redis) and redis-server.
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import redis


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_REALTIME)


def wait_for(cond, limit=10.0):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


def main():
    rlock = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    nwait = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    secs = float(sys.argv[4]) if len(sys.argv) > 4 else 10.0
    rnd = random.Random(12)
    d = tempfile.mkdtemp(prefix='rlock-foreign.')
    sock = os.path.join(d, 'redis.sock')
    srv = subprocess.Popen(['redis-server', '--port', '0', '--unixsocket',
                            sock, '--save', '', '--appendonly', 'no',
                            '--dir', d], stdout=subprocess.DEVNULL)
    try:
        r = redis.Redis(unix_socket_path=sock)
        wait_for(lambda: os.path.exists(sock) and r.ping())
        env = dict(os.environ, RLOCK_URL='unix://' + sock)
        lat = []
        for i in range(runs):
            key = 'f%d' % i
            mark = os.path.join(d, key + '.start')
            lock = r.lock('rlock:{%s}' % key, timeout=30)
            assert lock.acquire(blocking=False)
            w = subprocess.Popen([rlock, '-k', key, '--', 'sh', '-c',
                                  'date +%%s%%N > %s' % mark], env=env)
            # Waiting (its attempt takes a few ms); the release then falls
            # anywhere in its look interval.
            time.sleep(rnd.uniform(1.0, 3.0))
            assert w.poll() is None
            t0 = now_ns()
            lock.release()
            w.wait(60)      # an rlock before the look: the lease's end
            lat.append((int(open(mark).read()) - t0) / 1e6)
            print('run %d: release to COMMAND start %.1f ms' % (i + 1,
                                                                lat[-1]))
        s = sorted(lat)
        print('release to start: p50 %.1f ms, max %.1f ms (%d runs)' %
              (s[len(s) // 2] if len(s) % 2 else
               (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2, s[-1], len(s)))

        lock = r.lock('rlock:{held}', timeout=secs + 30)
        assert lock.acquire(blocking=False)
        ws = [subprocess.Popen([rlock, '-k', 'held', '--', 'true'], env=env)
              for _ in range(nwait)]
        time.sleep(1.5)              # every waiter past its first attempt
        r.config_resetstat()
        c0 = int(r.info('stats')['total_commands_processed'])
        time.sleep(secs)
        c1 = int(r.info('stats')['total_commands_processed'])
        stats = r.info('commandstats')
        n = c1 - c0 - 1              # the second INFO counts itself
        print('while held: %d commands from %d waiters in %.1f s: '
              '%.2f per waiter-second' % (n, nwait, secs,
                                          n / (nwait * secs)))
        print('  ' + ', '.join('%s %s' % (k[8:], v['calls'])
                               for k, v in sorted(stats.items())))
        lock.release()
        for w in ws:
            w.wait(secs + 60)
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(10)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == '__main__':
    main()
