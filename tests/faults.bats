#!/usr/bin/env bats
# The OS refusing rlock something while it holds the lock (a failed
# poll(), malloc() returning NULL), injected by tests/fault.c through
# LD_PRELOAD: rlock keeps its guarantees, or ends with 71 after stopping
# COMMAND and releasing.

load helper

setup_file() {
	redis_start main
	cc -shared -fPIC -O1 -o "$BATS_FILE_TMPDIR/fault.so" \
		"$BATS_TEST_DIRNAME/fault.c" -ldl
}

teardown_file() {
	redis_stop main
}

setup() {
	T=$BATS_TEST_TMPDIR
	# The shim and ASan both want malloc; valgrind brings its own.
	skip_under_valgrind "its malloc replaces the fault shim's"
	[[ $RLOCK != */asan/* ]] || skip "ASan replaces malloc itself"
}

@test "a failed poll() while holding: signals are still forwarded" {
	LD_PRELOAD=$BATS_FILE_TMPDIR/fault.so RLOCK_FAULT_POLL_FILE=$T/fault \
		"$RLOCK" -k pollfail -- sh -c \
		"trap 'echo got-term > $T/term; exit 7' TERM; touch $T/in;
		 while :; do sleep 0.05; done" 2> "$T/err" 3>&- &
	local rl=$!
	wait_ms 5000 test -e "$T/in" || fail "COMMAND did not start"
	# COMMAND runs, so rlock is supervising: the poll() it waits in
	# fails now, and only then comes the SIGTERM, which must still reach
	# COMMAND.
	touch "$T/fault"
	wait_ms 5000 grep -q 'warning: poll: Cannot allocate memory; retrying' \
		"$T/err" || fail "no poll failure: $(cat "$T/err")"
	kill -TERM "$rl"
	wait_ms 5000 pid_gone "$rl" || { kill -9 "$rl"; fail "rlock hangs"; }
	run wait "$rl"
	[ "$status" = 7 ] || fail "exit $status: $(cat "$T/err")"
	[ -s "$T/term" ]
	grep -q 'warning: poll: Cannot allocate memory; retrying' "$T/err"
	[ "$(rcli exists 'rlock:{pollfail}')" = 0 ]
}

@test "out of memory while holding: COMMAND stopped, lock released, exit 71" {
	# The first allocation after 700 ms fails: the renewal thread's, for
	# its first extend (at lease/3), unless something else comes first.
	LD_PRELOAD=$BATS_FILE_TMPDIR/fault.so RLOCK_FAULT_MALLOC_MS=700 \
		"$RLOCK" -l 10s -k oom -- sh -c "echo \$\$ > $T/cmd; exec sleep 60" \
		2> "$T/err" 3>&- &
	local rl=$! t0
	t0=$(now_ms)
	wait_ms 10000 pid_gone "$rl" || { kill -9 "$rl"; fail "rlock runs on"; }
	run wait "$rl"
	[ "$status" = 71 ] || fail "exit $status: $(cat "$T/err")"
	grep -q '^rlock: out of memory$' "$T/err"
	# COMMAND is gone and the lock with it, not left to its lease.
	pid_gone "$(cat "$T/cmd")"
	[ "$(rcli exists 'rlock:{oom}')" = 0 ]
	[ "$(( $(now_ms) - t0 ))" -lt "$(tf_ms 9000)" ] ||
		fail "took as long as the lease"
}
