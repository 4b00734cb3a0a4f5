#!/usr/bin/env bats
# `make check-distributed`: the mutual-exclusion workload (tests/mx.sh: 8
# workers x read-increment-write, overlaps and fences checked) on every
# topology, quiet and under the fault each one is meant to survive. Slower
# than make check: every topology is stood up, and the faults take seconds.

load ../helper
load ../topology

BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-240}
MX=$BATS_TEST_DIRNAME/../mx.sh

setup() {
	export TOPO_DIR=$BATS_TEST_TMPDIR/topo
	mkdir -p "$TOPO_DIR"
	PIDS=()
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	topo_down
}

mx() { # OPTIONS -- RLOCK-ARGS: run tests/mx.sh, keep its line in $output
	run timeout 200 bash "$MX" -q -t 180 "$@"
	echo "$output" >&3
	assert_success
	assert_output --partial ' OK'
}

@test "mx: sentinel, quiet" {
	sentinel_up
	mx -- -u "$SENTINEL_URL"
}

# A kill -9 failover may lose a lock the replica had not received yet:
# that loss must be announced (exit 70) before anyone else gets in.
@test "mx: sentinel, the master killed mid-run" {
	sentinel_up
	( sleep 2; sentinel_kill_master ) &
	PIDS+=("$!")
	mx -g 20 --allow-announced -- -l 2s -u "$SENTINEL_URL"
}

@test "mx: cluster, quiet" {
	cluster_up
	mx -k mxc -- -u "$CLUSTER_URL"
}

@test "mx: cluster, the key's slot migrated mid-run" {
	cluster_up
	( sleep 1.5; cluster_migrate_key '{mxc}' ) &
	PIDS+=("$!")
	mx -k mxc -- -u "$CLUSTER_URL"
	# A migration is waited out (ASK, TRYAGAIN): no run may fail.
	assert_output --partial ' retries=0 '
}

@test "mx: redlock, 3 masters, quiet" {
	masters_up 3
	mx -- --redlock "${MASTERS_UARGS[@]}"
}

@test "mx: redlock, 5 masters, 2 of them SIGKILLed mid-run" {
	masters_up 5
	( sleep 1.5; masters_kill 0; sleep 1; masters_kill 3 ) &
	PIDS+=("$!")
	mx -- --redlock "${MASTERS_UARGS[@]}"
	# 3 of 5 is still a majority: no run may fail.
	assert_output --partial ' retries=0 '
}

@test "mx: single node with --fair, for comparison" {
	masters_up 1
	mx -W 8 -m 10 -- --fair -u "${MASTERS_URLS%% *}"
}
