#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A TCP proxy on 127.0.0.1 whose path can be stalled and cut by signals.

  proxy.py LISTEN_PORT UPSTREAM_PORT [PIDFILE]

  SIGUSR1  stall: stop forwarding in both directions and stop accepting;
           connections stay open, bytes wait in the kernel's buffers (a
           black hole, as a partition looks to both ends)
  SIGUSR2  resume: forward again (what waited is delivered, late), accept
  SIGHUP   cut: reset every connection; new ones are accepted and reset
           at once, until SIGUSR2
  SIGTERM  exit

Loopback only. One thread, selectors; every connection's pending bytes
are buffered both ways so a slow side never blocks the other connections.
Each state change is logged on stderr with CLOCK_MONOTONIC ns.
"""

import os
import selectors
import signal
import socket
import struct
import sys
import time

LINGER0 = struct.pack("ii", 1, 0)


def log(msg):
    sys.stderr.write("proxy %d %s\n" % (time.monotonic_ns(), msg))
    sys.stderr.flush()


class Pipe:
    """One client connection and its upstream connection."""

    def __init__(self, c, u):
        self.c, self.u = c, u
        self.buf = {c: bytearray(), u: bytearray()}	# bytes to write TO

    def peer(self, s):
        return self.u if s is self.c else self.c


class Proxy:
    def __init__(self, lport, uport):
        self.uport = uport
        self.sel = selectors.DefaultSelector()
        self.ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", lport))
        self.ls.listen(512)
        self.ls.setblocking(False)
        self.pipes = {}		# socket -> Pipe
        self.state = "run"
        self.pending = []	# signals to act on, in order
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        for sig in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP,
                    signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.on_signal)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        self.listening = False
        self.update_listen()

    def on_signal(self, sig, frame):
        self.pending.append(sig)

    def update_listen(self):
        want = self.state != "stall"
        if want and not self.listening:
            self.sel.register(self.ls, selectors.EVENT_READ, "listen")
        elif not want and self.listening:
            self.sel.unregister(self.ls)
        self.listening = want

    def interest(self, s):
        """What to wait for on s, given the state and the buffers."""
        if self.state != "run":
            return 0
        p = self.pipes[s]
        ev = 0
        # Read only while the peer's buffer is small (back-pressure).
        if len(p.buf[p.peer(s)]) < 1 << 20:
            ev |= selectors.EVENT_READ
        if p.buf[s]:
            ev |= selectors.EVENT_WRITE
        return ev

    def refresh(self, s):
        if s not in self.pipes:
            return
        ev = self.interest(s)
        try:
            key = self.sel.get_key(s)
        except KeyError:
            key = None
        if ev == 0:
            if key:
                self.sel.unregister(s)
        elif key is None:
            self.sel.register(s, ev, "conn")
        elif key.events != ev:
            self.sel.modify(s, ev, "conn")

    def refresh_all(self):
        for s in list(self.pipes):
            self.refresh(s)

    def close_pipe(self, p, reset):
        for s in (p.c, p.u):
            if s in self.pipes:
                del self.pipes[s]
                try:
                    self.sel.unregister(s)
                except (KeyError, ValueError):
                    pass
                try:
                    if reset:
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                     LINGER0)
                    s.close()
                except OSError:
                    pass

    def accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except BlockingIOError:
                return
            except OSError as e:
                log("accept: %s" % e)
                return
            if self.state == "cut":
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER0)
                c.close()
                continue
            u = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            u.settimeout(1.0)
            try:
                u.connect(("127.0.0.1", self.uport))
            except OSError:
                # Upstream down: the client sees what it would see.
                u.close()
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER0)
                c.close()
                continue
            for s in (c, u):
                s.setblocking(False)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            p = Pipe(c, u)
            self.pipes[c] = self.pipes[u] = p
            self.refresh(c)
            self.refresh(u)

    def io(self, s, ev):
        p = self.pipes.get(s)
        if p is None:
            return
        peer = p.peer(s)
        if ev & selectors.EVENT_READ:
            try:
                data = s.recv(65536)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:
                data = b""
            if data == b"":
                # One side went away: flush what we hold for the other
                # side (best effort) and close both, as a proxy does.
                try:
                    if p.buf[peer]:
                        peer.send(p.buf[peer])
                except OSError:
                    pass
                self.close_pipe(p, reset=False)
                return
            if data:
                p.buf[peer] += data
                self.refresh(peer)
        if ev & selectors.EVENT_WRITE and p.buf[s]:
            try:
                n = s.send(p.buf[s])
                del p.buf[s][:n]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self.close_pipe(p, reset=True)
                return
        self.refresh(s)
        self.refresh(peer)

    def act(self, sig):
        if sig == signal.SIGUSR1:
            self.state = "stall"
        elif sig == signal.SIGUSR2:
            self.state = "run"
        elif sig == signal.SIGHUP:
            self.state = "cut"
            n = 0
            for p in {id(p): p for p in self.pipes.values()}.values():
                self.close_pipe(p, reset=True)
                n += 1
            log("cut %d connections" % n)
        elif sig in (signal.SIGTERM, signal.SIGINT):
            raise SystemExit(0)
        log("state %s (%d connections)" % (self.state, len(self.pipes) // 2))
        self.update_listen()
        self.refresh_all()

    def run(self):
        while True:
            for key, ev in self.sel.select(timeout=1.0):
                if key.data == "wake":
                    try:
                        while os.read(self.wake_r, 512):
                            pass
                    except BlockingIOError:
                        pass
                elif key.data == "listen":
                    self.accept()
                else:
                    self.io(key.fileobj, ev)
            while self.pending:
                self.act(self.pending.pop(0))


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    p = Proxy(int(sys.argv[1]), int(sys.argv[2]))
    if len(sys.argv) > 3:
        with open(sys.argv[3] + ".tmp", "w") as f:
            f.write("%d\n" % os.getpid())
        os.rename(sys.argv[3] + ".tmp", sys.argv[3])
    log("listening on 127.0.0.1:%s, upstream 127.0.0.1:%s" %
        (sys.argv[1], sys.argv[2]))
    try:
        p.run()
    except SystemExit:
        log("exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
