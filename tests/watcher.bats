#!/usr/bin/env bats
# The watcher (src/watch.c), the guard of a SIGKILLed rlock: COMMAND's
# tree gets --on-lost's signal at once and, for term, SIGKILL when the
# holder would have sent it, before the lease ends, even when every
# process of it traps SIGTERM; and what rlock starts for itself costs
# nothing to a run that does not get the lock, nor leaves anything
# behind. Whether a SIGKILL lands before the lease ends is a question of
# milliseconds: tests/run-bats runs this file by itself.
# run-bats: alone

load helper

setup_file() {
	redis_start main
}

teardown_file() {
	redis_stop main
}

setup() {
	per_test watch
	# Every process of COMMAND's tree has this in its environment.
	MARK=watch-$$-$BATS_TEST_NUMBER
	# trapper.sh: note a SIGTERM and go on, for ever; its own pid in
	# $T/$1.pid. sleep(1) gets SIGTERM too, and dies of it: a new one
	# comes at once.
	cat > "$T/trapper.sh" <<-'EOF'
	trap 'echo "$$" >> "$T/terms"' TERM
	echo $$ > "$T/$1.pid"
	while :; do sleep 0.1; done
	EOF
	# job.sh: COMMAND, a trapper with a trapper child.
	cat > "$T/job.sh" <<-'EOF'
	sh "$T/trapper.sh" kid &
	exec sh "$T/trapper.sh" cmd
	EOF
	# hold.sh: hold until $T/go exists.
	cat > "$T/hold.sh" <<-'EOF'
	while [ ! -e "$T/go" ]; do sleep 0.02; done
	EOF
}

# marked: the processes that run with $MARK in their environment (a
# zombie shows none), one pid a line.
marked() {
	grep -lzxF "WATCH_MARK=$MARK" /proc/[0-9]*/environ 2>/dev/null |
	    cut -d/ -f3
}

teardown() {
	local p
	for p in $(marked); do
		kill -KILL "$p" 2>/dev/null
	done
	end_test_procs
	rcli del "$L" "$L:meta" > /dev/null
	return 0
}

# tree_runs: COMMAND and its child run their loops.
tree_runs() {
	[ -s "$T/cmd.pid" ] && [ -s "$T/kid.pid" ] &&
	    [ "$(marked | wc -l)" -ge 3 ]
}

# sigkill_trapper RLOCK-ARGS...: rlock RLOCK-ARGS -- job.sh, started
# outside our session as cron would (setsid), SIGKILLed once the whole
# tree runs. Sets T0 (the SIGKILL) and RL.
sigkill_trapper() {
	env --default-signal setsid "$RLOCK" "$@" -k "$K" -- \
	    env "WATCH_MARK=$MARK" sh "$T/job.sh" > "$T/out" 2> "$T/err" 3>&- &
	RL=$!
	PIDS+=("$RL")
	wait_ms 5000 tree_runs || fail "COMMAND's tree did not start: $(cat "$T/err")"
	T0=$(now_ms)
	kill -KILL "$RL"
}

@test "SIGKILLed rlock: a tree that traps SIGTERM is SIGKILLed before the next holder gets in" {
	sigkill_trapper -l "$(tf 3)"
	# The next holder gets KEY once the lease has run out: nothing of
	# the first run may be left then.
	cat > "$T/second.sh" <<-'EOF'
	grep -lzxF "WATCH_MARK=$1" /proc/[0-9]*/environ 2>/dev/null |
	    cut -d/ -f3 > "$T/left"
	[ ! -s "$T/left" ] ||
	    ps -o pid=,stat=,args= -p "$(paste -sd, "$T/left")" >> "$T/left"
	true
	EOF
	run -0 timeout "$(tf 15)" "$RLOCK" -k "$K" -w "$(tf 10)" -- \
	    sh "$T/second.sh" "$MARK"
	echo "# SIGKILL to the second holder: $(( $(now_ms) - T0 ))ms" >&3
	[ ! -s "$T/left" ] ||
		fail "the first COMMAND's tree ran on: $(cat "$T/left")"
	# Both were told first.
	[ "$(sort -u "$T/terms" | wc -l)" = 2 ] ||
		fail "SIGTERM reached $(sort -u "$T/terms" | paste -sd' ')"
	[ -z "$(marked)" ] || fail "still running: $(marked)"
}

@test "SIGKILLed rlock: --kill-after is the grace when it fits the lease" {
	local p d
	# The lease alone would leave about 3 s (half of 6 s) to SIGKILL.
	sigkill_trapper -l "$(tf 6)" --kill-after "$(tf 0.2)"
	for p in $(cat "$T/cmd.pid" "$T/kid.pid"); do
		d=$(death_ms "$p" 5000) || fail "$p alive 5s after"
		echo "# SIGKILL of rlock to $p's death: $((d - T0))ms" >&3
		[ $((d - T0)) -lt "$(tf_ms 1500)" ] ||
			fail "$p died $((d - T0))ms after rlock"
	done
	[ "$(sort -u "$T/terms" | wc -l)" = 2 ] || fail "no SIGTERM first"
	wait_ms 2000 eval '[ -z "$(marked)" ]' || fail "left: $(marked)"
}

death_ms() { # PID MS (scaled)
	local end=$(( $(now_ms) + $(tf_ms "$2") ))
	while proc_alive "$1"; do
		[ "$(now_ms)" -lt "$end" ] || return 1
		nap 0.005
	done
	now_ms
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
