#!/usr/bin/env bats
# `make check-distributed`, over TLS: the mutual-exclusion workload
# (tests/mx.sh) on every topology with every node on a TLS port only
# (tests/topology.bash's TOPO_TLS; replication, the cluster bus and the
# sentinels over TLS as well), under the fault each is meant to survive.

load ../helper
load ../topology
load ../tls

# helper.bash set 90 s; a topology and its fault take longer.
BATS_TEST_TIMEOUT=$(tf 300)
MX=$BATS_TEST_DIRNAME/../mx.sh

setup_file() {
	tls_certs
}

setup() {
	export TOPO_DIR=$BATS_TEST_TMPDIR/topo TOPO_TLS=$BATS_FILE_TMPDIR/pki
	export RLOCK_TLS_CACERT=$TOPO_TLS/ca.crt
	mkdir -p "$TOPO_DIR"
	PIDS=()
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	topo_down
}

mx() { # OPTIONS -- RLOCK-ARGS: run tests/mx.sh, keep its line in $output
	run timeout 280 bash "$MX" -q -t 260 "$@"
	echo "$output" >&3
	assert_success
	assert_output --partial ' OK'
}

@test "mx tls: sentinel, the master killed mid-run" {
	sentinel_up
	[[ $SENTINEL_URL == rediss+sentinel://* ]]
	( sleep 2; sentinel_kill_master ) &
	PIDS+=("$!")
	mx -W 4 -m 10 -g 20 --allow-announced -- -l 2s -u "$SENTINEL_URL"
}

@test "mx tls: cluster, the key's slot migrated mid-run" {
	cluster_up
	[[ $CLUSTER_URL == rediss+cluster://* ]]
	( sleep 1.5; cluster_migrate_key '{mxc}' ) &
	PIDS+=("$!")
	mx -W 4 -m 10 -k mxc -- -u "$CLUSTER_URL"
	assert_output --partial ' retries=0 '
}

@test "mx tls: redlock, 5 masters, 2 of them SIGKILLed mid-run" {
	masters_up 5
	[[ $MASTERS_URLS == rediss://* ]]
	( sleep 1.5; masters_kill 0; sleep 1; masters_kill 3 ) &
	PIDS+=("$!")
	mx -W 4 -m 10 -- --redlock "${MASTERS_UARGS[@]}"
	assert_output --partial ' retries=0 '
}

@test "mx tls: single node with --fair" {
	masters_up 1
	mx -W 4 -m 10 -- --fair -u "${MASTERS_URLS%% *}"
}
