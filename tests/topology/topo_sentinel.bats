#!/usr/bin/env bats
# rlock behind Sentinel (1 master, 1 replica, 3 sentinels on loopback):
# resolving the master, status through the sentinels, a holder that keeps
# its lock through a failover while a waiter moves to the new master, and
# a promoted replica that never got the lock (the holder finds out at its
# next extend and follows --on-lost).

load ../helper
load ../topology

BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-90}

setup_file() {
	export TOPO_DIR=$BATS_FILE_TMPDIR/topo
	mkdir -p "$TOPO_DIR"
	# Missing fails, not skips: .ci/deps installs it. After TOPO_DIR:
	# teardown_file's topo_down needs it, or bats loses this failure.
	command -v redis-sentinel >/dev/null || {
		echo "redis-sentinel is not installed (.ci/deps installs it)" >&2
		return 1
	}
	sentinel_up
}

teardown_file() {
	topo_down
}

setup() {
	topo_load
	T=$BATS_TEST_TMPDIR
	PIDS=()
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	[ -n "${BATS_TEST_COMPLETED:-}" ] || topo_logs 5 >&3
}

on_master() { topo_cli "$SENTINEL_MASTER_PORT" "$@"; }
master_has() { [ "$(on_master exists "$1")" = 1 ]; }
file_exists() { [ -e "$1" ]; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

@test "sentinel: run, status and release --force through the sentinels" {
	run "$RLOCK" -u "$SENTINEL_URL" -k s1 -- sh -c 'echo "fence=$RLOCK_FENCE"'
	assert_success
	assert_output --regexp '^fence=[0-9]+$'
	"$RLOCK" -u "$SENTINEL_URL" -k s1 -- sh -c "touch $T/in; sleep 30" &
	PIDS+=("$!")
	wait_until 10 file_exists "$T/in"
	master_has 'rlock:{s1}'
	run "$RLOCK" status -u "$SENTINEL_URL" s1
	assert_success
	assert_output --partial 's1: held (mutex)'
	run "$RLOCK" release --force -u "$SENTINEL_URL" s1
	assert_success
	! master_has 'rlock:{s1}'
}

@test "sentinel: -s holders together through the sentinels; release --force breaks both" {
	local n p
	for n in a b; do
		"$RLOCK" -u "$SENTINEL_URL" -s -l 1s -k shared-s -- sh -c '
			touch "$1/$2"; sleep 30' sh "$T" "$n" 3>&- &
		PIDS+=("$!")
	done
	wait_until 10 file_exists "$T/a" || fail "a did not get in"
	wait_until 10 file_exists "$T/b" || fail "b did not get in beside a"
	run -0 --separate-stderr "$RLOCK" -u "$SENTINEL_URL" status shared-s
	assert_line --index 0 "shared-s: held (shared, 2 holders)"
	run -0 --separate-stderr "$RLOCK" -u "$SENTINEL_URL" release --force \
		shared-s
	[ "${#lines[@]}" = 2 ] || fail "release --force: $output"
	for p in "${PIDS[@]}"; do
		wait_exit "$p"
		[ "$STATUS" = 70 ] || fail "status $STATUS"
	done
}

@test "sentinel: COMMAND inherits neither the master's nor a sentinel's socket" {
	# The connection to a sentinel stays open for the re-checks while
	# COMMAND runs: it must be close-on-exec as the master's is.
	run -0 "$RLOCK" -u "$SENTINEL_URL" -k sfd -- sh -c \
		'for f in /proc/$$/fd/*; do readlink "$f" || :; done'
	[[ $output != *socket:* ]] || fail "socket inherited: $output"
}

@test "sentinel: an unknown master name is 76, no sentinel answering is 69" {
	local url=${SENTINEL_URL%/*}/nosuchmaster
	run -76 "$RLOCK" -u "$url" -k s2 -- true
	assert_output --partial "no sentinel knows a master named 'nosuchmaster'"
	run -69 "$RLOCK" --connect-timeout 1s -u \
		"redis+sentinel://127.0.0.1:$(topo_free_port)/mymaster" -k s2 -- true
	assert_output --partial 'cannot reach'
}

# The lock key reaches the replica before the failover, so the new master
# has it: the holder goes on (its next extend is on the new master) and
# the waiter, which started on the old master, gets it on the new one.
@test "sentinel: a holder keeps its lock through SENTINEL FAILOVER; the waiter moves and gets it" {
	local old=$SENTINEL_MASTER_PORT hold_end wait_start
	"$RLOCK" -l 3s -u "$SENTINEL_URL" -k fo -- sh -c \
		"touch $T/h.start; sleep 5; date +%s%N > $T/h.end" \
		> "$T/h.out" 2>&1 &
	local h=$!
	PIDS+=("$h")
	wait_until 10 file_exists "$T/h.start"
	"$RLOCK" -u "$SENTINEL_URL" -k fo -- sh -c "date +%s%N > $T/w.start" \
		> "$T/w.out" 2>&1 &
	local w=$!
	PIDS+=("$w")
	sentinel_failover
	[ "$SENTINEL_MASTER_PORT" != "$old" ]
	run timeout 20 sh -c "wait_pid() { while kill -0 \$1 2>/dev/null; do sleep 0.05; done; }; wait_pid $h; wait_pid $w"
	wait "$h" || fail "holder exit $?: $(cat "$T/h.out")"
	wait "$w" || fail "waiter exit $?: $(cat "$T/w.out")"
	hold_end=$(cat "$T/h.end")
	wait_start=$(cat "$T/w.start")
	[ "$wait_start" -gt "$hold_end" ] ||
		fail "the waiter started before the holder ended"
	# Released on the new master; nothing of the lock is left there.
	! master_has 'rlock:{fo}'
}

# The promoted replica never got the key (it is deleted there before the
# failover, as if replication had lagged): a new holder gets it on the new
# master at once, and the old holder learns it at its next extend.
@test "sentinel: the promoted replica lost the lock: the holder follows --on-lost and exits 70" {
	local rep=$SENTINEL_REPLICA_PORT
	# After the failover above, the old master takes seconds to become
	# the replica it is announced as.
	sentinel_wait_demoted "$rep"
	"$RLOCK" -l 3s --on-lost term -u "$SENTINEL_URL" -k lost -- sh -c \
		"touch $T/l.start; sleep 20" > "$T/l.out" 2>&1 &
	local h=$!
	PIDS+=("$h")
	wait_until 10 file_exists "$T/l.start"
	topo_cli "$rep" config set replica-read-only no > /dev/null
	replica_has_lock() { [ "$(topo_cli "$rep" exists 'rlock:{lost}')" = 1 ]; }
	wait_until 5 replica_has_lock
	# The holder's extends replicate as PEXPIRE, a no-op on a missing
	# key: the copy does not come back before the failover.
	topo_cli "$rep" del 'rlock:{lost}' 'rlock:{lost}:meta' > /dev/null
	sentinel_failover
	topo_cli "$rep" config set replica-read-only yes > /dev/null || true
	run timeout 15 sh -c "while kill -0 $h 2>/dev/null; do sleep 0.05; done"
	assert_success
	run wait "$h"
	[ "$status" = 70 ] || fail "holder exit $status: $(cat "$T/l.out")"
	grep -q 'lost the lock' "$T/l.out" || fail "$(cat "$T/l.out")"
}
