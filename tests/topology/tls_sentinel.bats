#!/usr/bin/env bats
# rlock behind Sentinel over TLS: the master, its replica and the three
# sentinels listen on TLS ports only (tls-replication yes), reached through
# rediss+sentinel:// (the sentinels and the master both over TLS).

load ../helper
load ../topology
load ../tls

unset TOPO_PASSWORD TOPO_SENTINEL_PASSWORD

setup_file() {
	tls_certs
	export TOPO_DIR=$BATS_FILE_TMPDIR/topo TOPO_TLS=$TLS_DIR
	mkdir -p "$TOPO_DIR"
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
	export RLOCK_TLS_CACERT=$TLS_DIR/ca.crt
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

@test "tls sentinel: the sentinels and the master speak TLS only" {
	local s
	[[ $SENTINEL_URL == rediss+sentinel://* ]]
	for s in $SENTINEL_PORTS $SENTINEL_MASTER_PORT; do
		run timeout 5 redis-cli -h 127.0.0.1 -p "$s" ping
		refute_output PONG
	done
	[ "$(sentinel_master_port)" = "$SENTINEL_MASTER_PORT" ]
}

@test "tls sentinel: run, status and release --force through the sentinels" {
	run -0 --separate-stderr "$RLOCK" -u "$SENTINEL_URL" -k s1 -- \
		sh -c 'echo "fence=$RLOCK_FENCE"'
	assert_output --regexp '^fence=[0-9]+$'
	[ -z "$stderr" ]
	"$RLOCK" -u "$SENTINEL_URL" -k s1 -- sh -c "touch $T/in; sleep 30" 3>&- &
	PIDS+=("$!")
	wait_until 10 test -e "$T/in"
	master_has 'rlock:{s1}'
	run -0 "$RLOCK" status -u "$SENTINEL_URL" s1
	assert_output --partial 's1: held (mutex)'
	run -0 "$RLOCK" release --force -u "$SENTINEL_URL" s1
	! master_has 'rlock:{s1}'
}

@test "tls sentinel: a sentinel certificate that does not verify is 77, named" {
	local s=${SENTINEL_PORTS%% *}
	run -77 --separate-stderr "$RLOCK" --tls-cacert "$TLS_DIR/ca2.crt" \
		-u "rediss+sentinel://127.0.0.1:$s/$SENTINEL_NAME" -k s2 -- echo no
	[[ $stderr == *"sentinel 127.0.0.1:$s: 127.0.0.1:$s: TLS: the server's certificate is signed by an unknown CA"* ]] ||
		fail "stderr: $stderr"
}
