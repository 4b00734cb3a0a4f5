#!/usr/bin/env python3
"""roundtrips.py ENDPOINT[,ENDPOINT...] CMD [ARG...]: count, on the client
side, the round trips CMD makes to Redis.

ENDPOINT is a unix socket path or a TCP port on loopback. CMD runs under
`strace -f`, which records every system call that moves bytes on a socket
(CMD's threads and children too). A socket connected to an ENDPOINT is
followed from its connect to its close; on it, a send that follows a
receive (or opens the connection) starts a round trip: pipelined commands
sent before reading cost one. Threads share their process's sockets (the
renewal thread's extends count). The commands are read back from the bytes
sent (RESP arrays), named as INFO commandstats names them (config|get).

Prints one line: "ROUND_TRIPS CONNECTIONS NAME NAME...", then exits with
CMD's status.
"""
import os
import re
import subprocess
import sys
import tempfile

CONTAINERS = {'config', 'script', 'client', 'cluster', 'command', 'object',
              'memory', 'xinfo', 'function', 'acl', 'latency', 'module',
              'pubsub', 'slowlog'}
SENDS = {'write', 'writev', 'send', 'sendto', 'sendmsg', 'sendmmsg'}
RECVS = {'read', 'readv', 'recv', 'recvfrom', 'recvmsg', 'recvmmsg'}
LINE = re.compile(r'^(\d+) +(\w+)\((\d+)?(.*)$')
HEX = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')


def unhex(s):
    return bytes.fromhex(s.replace('\\x', ''))


def commands(data):
    """Names of the RESP arrays in DATA (complete ones)."""
    out, i = [], 0
    while i < len(data) and data[i:i + 1] == b'*':
        j = data.find(b'\r\n', i)
        if j < 0:
            break
        n, i, args = int(data[i + 1:j]), j + 2, []
        for _ in range(n):
            j = data.find(b'\r\n', i)
            if j < 0 or data[i:i + 1] != b'$':
                return out
            ln = int(data[i + 1:j])
            args.append(data[j + 2:j + 2 + ln])
            i = j + 2 + ln + 2
        if not args:
            continue
        name = args[0].decode('latin-1').lower()
        if name in CONTAINERS and len(args) > 1:
            name += '|' + args[1].decode('latin-1').lower()
        out.append(name)
    return out


def ours(rest, endpoints):
    for ep in endpoints:
        if ep.isdigit():
            if 'htons(%s)' % ep in rest:
                return True
        else:
            m = re.search(r'sun_path="((?:\\x[0-9a-f]{2})*)"', rest)
            if m and unhex(m.group(1)).decode('latin-1') == ep:
                return True
    return False


def count(path, endpoints):
    live, trips, conns, names = {}, 0, 0, []
    pending = {}  # pid -> (call, fd, rest) of an unfinished call
    tgid = {}  # thread -> its process
    for line in open(path):
        m = LINE.match(line)
        resumed = re.match(r'^(\d+) +<\.\.\. (\w+) resumed>(.*)$', line)
        if resumed:
            pid, call, rest = resumed.groups()
            if pid not in pending:
                continue
            call, fd, head = pending.pop(pid)
            rest = head + rest
        elif m:
            pid, call, fd, rest = m.groups()
            if rest.endswith('<unfinished ...>'):
                pending[pid] = (call, fd, rest)
                continue
        else:
            continue
        result = rest.rsplit('=', 1)[-1].strip()
        if call in ('clone', 'clone3', 'fork', 'vfork'):
            new = result.split()[0]
            if new.isdigit():
                thread = 'CLONE_THREAD' in rest
                tgid[new] = tgid.get(pid, pid) if thread else new
            continue
        if fd is None:
            continue
        key = (tgid.get(pid, pid), int(fd))
        if call == 'connect':
            if ours(rest, endpoints) and (result.startswith('0') or
                                          'EINPROGRESS' in result):
                live[key] = 'recv'
                conns += 1
        elif call in ('close', 'shutdown'):
            live.pop(key, None)
        elif key in live and call in SENDS:
            if live[key] == 'recv':
                trips += 1
            live[key] = 'send'
            for s in HEX.findall(rest):
                names += commands(unhex(s))
        elif key in live and call in RECVS and not result.startswith('-'):
            live[key] = 'recv'
    return trips, conns, names


def main():
    endpoints = sys.argv[1].split(',')
    cmd = sys.argv[2:]
    fd, path = tempfile.mkstemp(prefix='rlock-rt.')
    os.close(fd)
    try:
        st = subprocess.call(['strace', '-f', '-qq', '-xx', '-s', '1048576',
                              '-e', 'trace=%network,%process,write,'
                              'writev,read,readv,close', '-o', path] + cmd,
                             stdout=subprocess.DEVNULL)
        trips, conns, names = count(path, endpoints)
    finally:
        os.unlink(path)
    print(trips, conns, ' '.join(names))
    sys.exit(st)


main()
