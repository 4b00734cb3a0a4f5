#!/usr/bin/env python3
"""lua_monitor.py SOCKET MONITOR-LOG TOP [keys]: check what rlock's
scripts ran.

MONITOR-LOG is what redis-cli MONITOR printed against the server at
SOCKET while rlock ran; TOP the source tree (its src/lua/ and
src/lua-text.sh). Each EVAL/EVALSHA (and _RO) of one of rlock's scripts
is followed in the log by the commands the script ran ([0 lua]). For
each of those, the keys Redis says it takes (COMMAND GETKEYS) must be
among the KEYS of that EVALSHA, and (--runs) its name among those the
script's own RUNS lines declare (lua-text.sh --own; not with "keys").
Prints one line per
fault, then "N scripts run: NAME..." (the ones seen); exits 1 on a fault.
"""
import hashlib
import os
import socket
import subprocess
import sys


def unrepr(s, i):
    """The sdscatrepr string at s[i] (a '"'): (bytes, index past it)."""
    out = bytearray()
    i += 1
    esc = {'n': 10, 'r': 13, 't': 9, 'a': 7, 'b': 8, '\\': 92, '"': 34}
    while s[i] != '"':
        c = s[i]
        if c == '\\':
            n = s[i + 1]
            if n == 'x':
                out.append(int(s[i + 2:i + 4], 16))
                i += 4
                continue
            out.append(esc.get(n, ord(n)))
            i += 2
            continue
        out += c.encode('latin-1')
        i += 1
    return bytes(out), i + 1


def parse(line):
    """(source, [args]) of one MONITOR line, or None."""
    b = line.find('[')
    e = line.find(']', b)
    if b < 0 or e < 0:
        return None
    src = line[b + 1:e].split(' ', 1)[-1]
    args, i = [], e + 1
    while i < len(line):
        if line[i] == '"':
            a, i = unrepr(line, i)
            args.append(a)
        else:
            i += 1
    return src, args


class Redis:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile('rb')

    def call(self, *args):
        out = b'*%d\r\n' % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b'$%d\r\n%s\r\n' % (len(a), a)
        self.s.sendall(out)
        return self.read()

    def read(self):
        line = self.f.readline()[:-2]
        t, rest = line[:1], line[1:]
        if t == b'+':
            return rest
        if t == b'-':
            return Exception(rest.decode())
        if t == b':':
            return int(rest)
        if t == b'$':
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data
        if t == b'*':
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ValueError(line)


def scripts(top):
    """sha -> (name, set of declared command names)."""
    lua = os.path.join(top, 'src', 'lua')
    text = os.path.join(top, 'src', 'lua-text.sh')
    out = {}
    for f in sorted(os.listdir(lua)):
        if not f.endswith('.lua'):
            continue
        path = os.path.join(lua, f)
        body = subprocess.run(['sh', text, os.path.join(lua, 'lib'), path],
                              check=True, capture_output=True).stdout
        own = subprocess.run(['sh', text, '--own', path],
                             capture_output=True, text=True).stdout.split()
        out[hashlib.sha1(body).hexdigest()] = (f[:-4], set(own))
    return out


def main():
    sock, log, top = sys.argv[1:4]
    keys_only = sys.argv[4:] == ['keys']
    r = Redis(sock)
    known = scripts(top)
    faults, seen, cur = [], set(), None
    for line in open(log, encoding='latin-1'):
        p = parse(line.rstrip('\n'))
        if p is None or not p[1]:
            continue
        src, args = p
        cmd = args[0].decode('latin-1').upper()
        if src != 'lua':
            cur = None
            if cmd in ('EVAL', 'EVALSHA', 'EVAL_RO', 'EVALSHA_RO'):
                sha = args[1].decode('latin-1') if cmd.startswith('EVALSHA') \
                    else hashlib.sha1(args[1]).hexdigest()
                if sha in known:
                    n = int(args[2])
                    cur = (known[sha], set(args[3:3 + n]))
            continue
        if cur is None:
            continue
        (name, runs), keys = cur
        seen.add(name)
        shown = ' '.join(a.decode('latin-1') for a in args)
        if not keys_only and cmd not in runs:
            faults.append('%s.lua runs %s, not in its RUNS lines: %s' %
                          (name, cmd, shown))
        got = r.call('COMMAND', 'GETKEYS', *args)
        for k in got if isinstance(got, list) else []:
            if k not in keys:
                faults.append('%s.lua touches %s, not in its KEYS: %s' %
                              (name, k.decode('latin-1'), shown))
    for f in sorted(set(faults)):
        print(f)
    print('%d scripts run: %s' % (len(seen), ' '.join(sorted(seen))))
    sys.exit(1 if faults else 0)


if __name__ == '__main__':
    main()
