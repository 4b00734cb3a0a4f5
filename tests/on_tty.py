#!/usr/bin/env python3
"""on_tty.py SECONDS KEYS COMMAND...: run COMMAND on a terminal of its
own (a new pseudo-terminal, its controlling one, COMMAND the foreground
job) and type KEYS there once COMMAND sleeps, which it does reading the
terminal: "pw\\n" is a line, "\\x03" the ^C that signals the foreground
job. What COMMAND writes there is copied to stdout; COMMAND's status is
ours (128+N when a signal ended it), 124 when it still runs after
SECONDS (then it is killed).
"""
import os
import pty
import select
import signal
import sys
import time


def execed(pid, me):
    """Is pid no longer the copy of us it was forked as (its exec done,
    so the terminal is its own)?"""
    try:
        return os.readlink("/proc/%d/exe" % pid) != me
    except OSError:
        return False


def state(pid):
    """The process state letter of pid (S: asleep), or '' once gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def main():
    limit, keys, argv = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
    keys = keys.encode().decode("unicode_escape").encode("latin-1")
    # A key typed before the child has made the terminal its own (forkpty
    # returns to us first) is lost: wait for COMMAND itself to sleep.
    me = os.path.realpath("/proc/self/exe")
    pid, fd = pty.fork()
    if pid == 0:
        # A job started with & by a shell without job control (make
        # check runs the bats files so) inherits INT and QUIT ignored:
        # on a terminal of its own, the foreground job hears them.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        os.execvp(argv[0], argv)
    end = time.monotonic() + limit
    typed, out = False, b""
    while True:
        if not typed and execed(pid, me) and state(pid) == "S":
            os.write(fd, keys)
            typed = True
        if select.select([fd], [], [], 0.02)[0]:
            try:
                out += os.read(fd, 4096)
            except OSError:
                pass
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > end:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            st = None
            break
    sys.stdout.write(out.decode(errors="replace"))
    if st is None:
        return 124
    if os.WIFSIGNALED(st):
        return 128 + os.WTERMSIG(st)
    return os.WEXITSTATUS(st)


sys.exit(main())
