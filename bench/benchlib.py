"""benchlib.py: what the bench scripts share: the percentile, the
configurations given on a command line, and a Redis
connection of their own (unix socket, RESP2) for INFO: no redis-cli
process per reading, whose connection Redis would count in the figures."""
import socket


class Redis:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile('rb')

    def call(self, *args):
        out = b'*%d\r\n' % len(args)
        for a in args:
            a = a.encode()
            out += b'$%d\r\n%s\r\n' % (len(a), a)
        self.s.sendall(out)
        line = self.f.readline()
        if line[:1] == b'$':
            n = int(line[1:])
            return self.f.read(n + 2)[:-2].decode()
        if line[:1] == b'-':
            raise RuntimeError(line.decode().strip())
        return line[1:].decode().strip()

    def stats(self):
        usec = {}
        for line in self.call('INFO', 'commandstats').splitlines():
            if line.startswith('cmdstat_'):
                name, rest = line[len('cmdstat_'):].split(':', 1)
                f = dict(kv.split('=') for kv in rest.split(','))
                usec[name] = int(f['usec'])
        cpu = 0.0
        for line in self.call('INFO', 'cpu').splitlines():
            if line.startswith(('used_cpu_sys:', 'used_cpu_user:')):
                cpu += float(line.split(':')[1])
        return usec, cpu * 1e6


def configs(args):
    """The configurations of ARGS, each a name and its command, ':::'
    between them: [(name, [arg, ...]), ...]."""
    cs, cur = [], []
    for a in args + [':::']:
        if a == ':::':
            cs.append((cur[0], cur[1:]))
            cur = []
        else:
            cur.append(a)
    return cs


def pct(xs, p):
    """The P-th percentile of XS (nearest rank), nan if empty."""
    xs = sorted(xs)
    if not xs:
        return float('nan')
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]
