#!/usr/bin/env bats
# rlock against a Redis Cluster over TLS (tls-cluster yes: clients, the
# bus and MIGRATE all on TLS ports, plain ports off) through
# rediss+cluster:// URLs: locks on every master, a slot that migrates
# under a waiter (MOVED to a TLS node), status and list on every master.

load ../helper
load ../topology
load ../tls

unset TOPO_PASSWORD TOPO_SENTINEL_PASSWORD

setup_file() {
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	tls_certs
	export TOPO_DIR=$BATS_FILE_TMPDIR/topo TOPO_TLS=$TLS_DIR
	mkdir -p "$TOPO_DIR"
	cluster_up
}

teardown_file() {
	topo_down
}

BG=()

setup() {
	topo_load
	export RLOCK_TLS_CACERT=$TLS_DIR/ca.crt
	T=$BATS_TEST_TMPDIR
}

teardown() {
	local left
	[ -e "$T/go" ] || touch "$T/go"
	stop_bg "${BG[@]}"
	[ -n "${BATS_TEST_COMPLETED:-}" ] || topo_logs 8 >&3
	left=$(keys_without_ttl_on $CLUSTER_PORTS)
	[ -z "$left" ] || fail "keys without TTL: $left"
}

owner_of() { cluster_key_owner "$1" | cut -d' ' -f2; }
held_on() { [ "$(topo_cli "$1" exists "rlock:{$2}")" = 1 ]; }
blpop_on() {
	topo_cli "$1" client list | grep 'flags=b .*cmd=blpop' |
		grep -qv ' name=rlock-holder '
}

@test "tls cluster: the nodes speak TLS only, and the URL is rediss+cluster://" {
	local p
	[[ $CLUSTER_URL == rediss+cluster://* ]]
	p=${CLUSTER_PORTS%% *}
	run timeout 5 redis-cli -h 127.0.0.1 -p "$p" ping
	refute_output PONG
	[ "$(topo_cli "$p" cluster info | grep -c 'cluster_state:ok')" = 1 ]
}

@test "tls cluster: a lock on every master, each with its fence there" {
	local c k p seen=" " n=0
	for c in $(seq 1 200); do
		k=t$c
		p=$(owner_of "$k")
		[[ $seen == *" $p "* ]] && continue
		seen+="$p "
		run -0 --separate-stderr timeout 20 "$RLOCK" -u "$CLUSTER_URL" \
			-k "$k" -- sh -c 'echo "$RLOCK_FENCE"'
		[[ $output =~ ^[0-9]+$ ]] || fail "$k: $output $stderr"
		[ "$(topo_cli "$p" get "rlock:{$k}:fence")" = "$output" ]
		n=$((n + 1))
		[ "$n" = 3 ] && break
	done
	[ "$n" = 3 ]
}

@test "tls cluster: a KEY's slot migrates while a waiter waits; the hand-off still happens" {
	local key=mig-tls slot from to hf wf
	read -r slot from <<< "$(cluster_key_owner "$key")"
	bg "$RLOCK" -u "$CLUSTER_URL" -k "$key" -- sh -c '
		echo "$RLOCK_FENCE" > "$1/holder.fence"
		until [ -e "$1/go" ]; do sleep 0.02; done' sh "$T"
	local holder=$LAST
	wait_until 10 held_on "$from" "$key" || fail "holder did not start"
	bg "$RLOCK" -u "$CLUSTER_URL" -k "$key" -- sh -c '
		echo "$RLOCK_FENCE" > "$1/waiter.fence"' sh "$T"
	local waiter=$LAST
	wait_until 10 blpop_on "$from" || fail "waiter not in BLPOP"
	cluster_migrate_key "$key"
	to=$CLUSTER_MIGRATE_TO
	[ "$to" != "$from" ]
	proc_alive "$waiter" || fail "the waiter ended during the migration"
	[ ! -e "$T/waiter.fence" ]
	touch "$T/go"
	# The holder's lease (30 s) is far off: only a wake-up gets it here.
	wait_until 10 test -s "$T/waiter.fence" ||
		fail "the waiter did not run within 10 s of the release"
	wait_exit "$holder"
	[ "$STATUS" = 0 ] || fail "holder exit $STATUS"
	wait_exit "$waiter"
	[ "$STATUS" = 0 ] || fail "waiter exit $STATUS"
	hf=$(cat "$T/holder.fence") wf=$(cat "$T/waiter.fence")
	[ "$wf" -gt "$hf" ] || fail "fence $hf, then $wf"
	[ "$(cluster_slot_owner "$slot")" = "$to" ]
	[ "$(topo_cli "$to" get "rlock:{$key}:fence")" = "$wf" ]
}

@test "tls cluster: status and list through the cluster" {
	bg "$RLOCK" -u "$CLUSTER_URL" -k st1 -- sh -c '
		until [ -e "$1/go" ]; do sleep 0.02; done' sh "$T"
	wait_until 10 held_on "$(owner_of st1)" st1
	run -0 --separate-stderr "$RLOCK" -u "$CLUSTER_URL" status st1
	assert_line "st1: held (mutex)"
	[ -z "$stderr" ]
	run -0 --separate-stderr "$RLOCK" -u "$CLUSTER_URL" list
	assert_line --regexp "^st1	"
	touch "$T/go"
	wait_exit "$LAST"
	[ "$STATUS" = 0 ]
}
