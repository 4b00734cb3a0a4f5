#!/usr/bin/env bats
# The watcher (src/watch.c), the guard of a SIGKILLed rlock: what rlock
# starts for itself costs nothing to a run that does not get the lock,
# nor leaves anything behind.

load helper

setup_file() {
	redis_start main
}

teardown_file() {
	redis_stop main
}

setup() {
	per_test watch
	# hold.sh: hold until $T/go exists.
	cat > "$T/hold.sh" <<-'EOF'
	while [ ! -e "$T/go" ]; do sleep 0.02; done
	EOF
}

teardown() {
	end_test_procs
	rcli del "$L" "$L:meta" > /dev/null
	return 0
}

# forks TRACE: the processes (not threads) strace saw made.
forks() {
	grep -E '^[0-9]+ +(fork|vfork|clone|clone3)\(' "$1" |
	    grep -v CLONE_THREAD || true
}

# traced TRACE RLOCK-ARGS...: rlock under strace -f, its process and
# thread creations in TRACE. LeakSanitizer (make asan) cannot run under
# ptrace: off for these runs.
traced() {
	local trace=$1
	shift
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	    strace -f -qq -o "$trace" -e trace=fork,vfork,clone,clone3 \
	    "$RLOCK" "$@"
}

@test "a run that does not get the lock forks nothing: -n, -w" {
	skip_under_valgrind "valgrind's own processes"
	command -v strace > /dev/null || fail "strace is not installed"
	bg holder -k "$K" -- sh "$T/hold.sh"
	wait_ms 3000 held "$K" || fail "not held"
	run -75 traced "$T/n.trace" -n -k "$K" -- true
	[ -z "$(forks "$T/n.trace")" ] || fail "-n: $(forks "$T/n.trace")"
	run -75 traced "$T/w.trace" -w 200ms -k "$K" -- true
	[ -z "$(forks "$T/w.trace")" ] || fail "-w: $(forks "$T/w.trace")"
	# The trace sees a run that forks.
	touch "$T/go"
	reap "$BG" 5000
	run -0 traced "$T/ran.trace" -k "$K" -- true
	[ -n "$(forks "$T/ran.trace")" ] ||
		fail "no fork seen: $(cat "$T/ran.trace")"
}

@test "no zombie under a parent that never reaps: run, exec failure, skip" {
	# A subreaper (as a container's PID 1 is) that reaps rlock alone.
	cat > "$T/subreaper.py" <<-'EOF'
	import ctypes, os, shlex, sys, time
	libc = ctypes.CDLL(None, use_errno=True)
	if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
	    sys.exit("prctl: %s" % os.strerror(ctypes.get_errno()))
	me = str(os.getpid())
	def children():
	    out = []
	    for p in filter(str.isdigit, os.listdir("/proc")):
	        try:
	            with open("/proc/%s/stat" % p) as f:
	                st = f.read().rsplit(")", 1)[1].split()
	        except OSError:
	            continue
	        if st[1] == me:
	            out.append((p, st[0]))
	    return out
	codes = []
	for run in sys.argv[1:]:
	    argv = shlex.split(run)
	    pid = os.fork()
	    if pid == 0:
	        try:
	            os.execvp(argv[0], argv)
	        finally:
	            os._exit(99)
	    codes.append(str(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])))
	print(" ".join(codes))
	# Whatever still runs ends first (a process rlock left would be
	# adopted here, and its end a zombie).
	end = time.monotonic() + 3
	while time.monotonic() < end and any(s != "Z" for _, s in children()):
	    time.sleep(0.01)
	print("children:", " ".join("%s:%s" % c for c in children()))
	EOF
	bg holder -k "$K" -- sh "$T/hold.sh"
	wait_ms 3000 held "$K" || fail "not held"
	run -0 --separate-stderr timeout "$(tf 30)" python3 "$T/subreaper.py" \
	    "$RLOCK -k $K.free -- true" \
	    "$RLOCK -k $K.free -- $T/no-such-command" \
	    "$RLOCK -k $K.free --on-lost kill -- sh -c 'kill -TERM \$\$'" \
	    "$RLOCK -n -k $K -- true"
	assert_output $'0 127 143 75\nchildren: '
	touch "$T/go"
	reap "$BG" 5000
}
