#!/usr/bin/env bats
# The topology harness itself (tests/topology.bash), with redis-cli only:
# Sentinel (up, failover by kill -9 and by SENTINEL FAILOVER, announced and
# writable), Cluster (up, one slot migrated with its keys, ASK while it
# moves), N independent masters, and that nothing is left running. Known
# good here before rlock's topology tests rely on it. About 12 s.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load.bash'
load '/usr/lib/bats/bats-assert/load.bash'
load ../topology

BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-60}
unset REDISCLI_AUTH TOPO_PASSWORD TOPO_SENTINEL_PASSWORD

setup_file() {
	export TOPO_DIR=$BATS_FILE_TMPDIR/topo
	mkdir -p "$TOPO_DIR"
	# Missing fails, not skips: .ci/deps installs it. After TOPO_DIR:
	# teardown_file's topo_down needs it, or bats loses this failure.
	command -v redis-sentinel >/dev/null || {
		echo "redis-sentinel is not installed (.ci/deps installs it)" >&2
		return 1
	}
}

teardown_file() {
	topo_down
}

setup() {
	topo_load
}

teardown() {
	[ -n "${BATS_TEST_COMPLETED:-}" ] || topo_logs 8 >&3
	[ -z "${SUB:-}" ] || kill "$SUB" 2>/dev/null || true
}

# Sentinel S's answer for the master, as a port.
announced() { topo_cli "$1" sentinel get-master-addr-by-name mymaster | sed -n 2p; }

all_announce() {
	local s
	for s in $SENTINEL_PORTS; do
		[ "$(announced "$s")" = "$1" ] || return 1
	done
}

role() { topo_cli "$1" role | head -1; }
replica_has() { [ "$(topo_cli "$1" get "$2")" = "$3" ]; }

@test "sentinel: a master, its replica and three sentinels that agree" {
	sentinel_up
	[[ $SENTINEL_URL =~ ^redis\+sentinel://127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+/mymaster$ ]] ||
		fail "URL: $SENTINEL_URL"
	read -ra s <<< "$SENTINEL_PORTS"
	[ "${#s[@]}" = 3 ]
	all_announce "$SENTINEL_MASTER_PORT"
	[ "$(role "$SENTINEL_MASTER_PORT")" = master ]
	[ "$(role "$SENTINEL_REPLICA_PORT")" = slave ]
	for p in "${s[@]}"; do
		m=" $(topo_cli "$p" sentinel master mymaster | paste -sd' ') "
		[[ $m == *" num-slaves 1 "* && $m == *" num-other-sentinels 2 "* &&
			$m == *" quorum 2 "* && $m == *" down-after-milliseconds 1000 "* &&
			$m == *" failover-timeout 5000 "* ]] || fail "sentinel $p:$m"
	done
	[ "$(topo_cli "$SENTINEL_MASTER_PORT" set t:k v px 60000)" = OK ]
	topo_wait 5 replica_has "$SENTINEL_REPLICA_PORT" t:k v
}

@test "sentinel: kill -9 of the master, the replica is announced and takes writes" {
	old=$SENTINEL_MASTER_PORT repl=$SENTINEL_REPLICA_PORT
	pid=$(topo_pid "$old")
	sentinel_kill_master
	[ "$SENTINEL_KILLED" = "$old" ]
	! _topo_alive "$pid" || fail "PID $pid still runs after kill -9"
	run topo_pid "$old"
	assert_failure
	sentinel_wait_failover "$old"
	[ "$SENTINEL_MASTER_PORT" = "$repl" ]
	all_announce "$repl"
	[ "$(role "$repl")" = master ]
	[ "$(topo_cli "$repl" set t:k2 v px 60000)" = OK ]
}

@test "sentinel: the killed node rejoins; SENTINEL FAILOVER back is announced" {
	old=$SENTINEL_KILLED cur=$SENTINEL_MASTER_PORT
	sentinel_rejoin "$old"
	[ "$(role "$old")" = slave ]
	topo_wait 5 replica_has "$old" t:k2 v
	# The event a long-lived client would listen to.
	timeout 30 redis-cli -p "${SENTINEL_PORTS%% *}" subscribe +switch-master \
		> "$BATS_TEST_TMPDIR/events" 2>&1 3>&- &
	SUB=$!
	sentinel_failover
	[ "$SENTINEL_MASTER_PORT" = "$old" ]
	[ "$SENTINEL_REPLICA_PORT" = "$cur" ]
	all_announce "$old"
	[ "$(topo_cli "$old" set t:k3 v px 60000)" = OK ]
	switched() { grep -q "^mymaster 127.0.0.1 $cur 127.0.0.1 $old\$" "$BATS_TEST_TMPDIR/events"; }
	topo_wait 5 switched || fail "events: $(cat "$BATS_TEST_TMPDIR/events")"
}

@test "cluster: three masters own all 16384 slots, state ok everywhere" {
	TOPO_PASSWORD=cluster-pw cluster_up
	read -ra m <<< "$CLUSTER_PORTS"
	[ "${#m[@]}" = 3 ]
	[ -z "$CLUSTER_REPLICA_PORTS" ]
	[ "$CLUSTER_URL" = "redis+cluster://:cluster-pw@127.0.0.1:${m[0]},127.0.0.1:${m[1]},127.0.0.1:${m[2]}" ]
	# topo_cli knows each node's password.
	for p in "${m[@]}"; do
		info=$(topo_cli "$p" cluster info)
		[[ $info == *cluster_state:ok* ]]
		[[ $info == *cluster_slots_assigned:16384* ]]
		[[ $info == *cluster_known_nodes:3* ]]
		[ "$(role "$p")" = master ]
	done
	run env -u REDISCLI_AUTH redis-cli -p "${m[0]}" ping
	assert_output --partial NOAUTH
}

@test "cluster: one key's slot moves to another master with its keys" {
	read -r slot owner <<< "$(cluster_key_owner 'rlock:{job}')"
	[ "$slot" = "$(topo_cli "$owner" cluster keyslot 'rlock:{job}:fence')" ]
	[ "$slot" = "$(cluster_keyslot job)" ]	# the hash tag alone counts
	topo_cli "$owner" set 'rlock:{job}' tok px 60000 > /dev/null
	topo_cli "$owner" set 'rlock:{job}:fence' 7 > /dev/null
	# A neighbour in another slot of the same owner stays behind.
	for t in a b c d e f g h i j k l m n o p; do
		read -r other o <<< "$(cluster_key_owner "$t")"
		[ "$o" = "$owner" ] && [ "$other" != "$slot" ] && break
	done
	[ "$o" = "$owner" ]
	topo_cli "$owner" set "rlock:{$t}" x px 60000 > /dev/null
	cluster_migrate_key 'rlock:{job}'
	[ "$CLUSTER_MIGRATE_FROM" = "$owner" ]
	to=$CLUSTER_MIGRATE_TO
	[ "$to" != "$owner" ]
	for p in $CLUSTER_PORTS; do
		[ "$(cluster_slot_owner "$slot" "$p")" = "$to" ]
	done
	[ "$(topo_cli "$to" get 'rlock:{job}:fence')" = 7 ]
	ttl=$(topo_cli "$to" pttl 'rlock:{job}')
	[ "$ttl" -gt 0 ] && [ "$ttl" -le 60000 ]
	[ "$(topo_cli "$to" cluster countkeysinslot "$slot")" = 2 ]
	[ "$(topo_cli "$owner" cluster countkeysinslot "$slot")" = 0 ]
	[ "$(topo_cli "$owner" cluster countkeysinslot "$other")" = 1 ]
	assert_equal "$(topo_cli "$owner" get 'rlock:{job}')" "MOVED $slot 127.0.0.1:$to"
}

@test "cluster: mid-migration the source answers ASK for a key it no longer has" {
	read -r slot from <<< "$(cluster_key_owner 'rlock:{job}')"
	to=$(for p in $CLUSTER_PORTS; do [ "$p" = "$from" ] || echo "$p"; done | head -1)
	cluster_migrate_begin "$slot" "$to"
	# Still here: served; missing: ASK to the target.
	[ "$(topo_cli "$from" get 'rlock:{job}:fence')" = 7 ]
	assert_equal "$(topo_cli "$from" get 'rlock:{job}:meta')" "ASK $slot 127.0.0.1:$to"
	# Where a client that follows the ASK writes it.
	[ "$(cluster_asking "$to" set 'rlock:{job}:meta' m px 60000)" = OK ]
	cluster_migrate_keys "$slot"
	assert_equal "$(topo_cli "$from" get 'rlock:{job}:fence')" "ASK $slot 127.0.0.1:$to"
	[ "$(topo_cli "$to" get 'rlock:{job}:fence')" = "MOVED $slot 127.0.0.1:$from" ]
	cluster_migrate_end "$slot"
	[ "$(topo_cli "$to" get 'rlock:{job}:fence')" = 7 ]
	[ "$(topo_cli "$to" get 'rlock:{job}:meta')" = m ]
	[ "$(cluster_slot_owner "$slot")" = "$to" ]
	[ ! -e "$TOPO_DIR/migrating.$slot" ]
}

@test "masters: three independent masters; one killed and restarted empty" {
	masters_up 3
	read -ra p <<< "$MASTERS_PORTS"
	[ "${#p[@]}" = 3 ]
	[ "${#MASTERS_UARGS[@]}" = 6 ]
	assert_equal "${MASTERS_UARGS[*]}" "-u redis://127.0.0.1:${p[0]} -u redis://127.0.0.1:${p[1]} -u redis://127.0.0.1:${p[2]}"
	for q in "${p[@]}"; do
		[ "$(role "$q")" = master ]
		topo_cli "$q" set t:k v px 60000 > /dev/null
	done
	pid=$(topo_pid "${p[1]}")
	masters_kill 1
	run topo_pid "${p[1]}"
	assert_failure
	run topo_cli "${p[1]}" ping
	assert_output --partial refused
	topo_pid "${p[0]}" && topo_pid "${p[2]}"
	masters_restart 1
	[ "$(topo_pid "${p[1]}")" != "$pid" ]
	[ "$(topo_cli "${p[1]}" exists t:k)" = 0 ]
	[ "$(topo_cli "${p[0]}" exists t:k)" = 1 ]
}

@test "a port another server took first is given up for a new one" {
	# A server that is not ours, on a port the harness is then handed.
	f=$BATS_TEST_TMPDIR/foreign
	mkdir -p "$f"
	busy=$(topo_free_port)
	redis-server --port "$busy" --bind 127.0.0.1 --dir "$f" --save '' \
		--daemonize yes --pidfile "$f/pid" 3>&-
	topo_wait 5 topo_cli "$busy" ping
	eval "$(declare -f topo_free_port | sed '1s/topo_free_port/real_free_port/')"
	topo_free_port() {
		if [ ! -e "$TOPO_DIR/handed" ]; then
			touch "$TOPO_DIR/handed"
			echo "$busy"
		else
			real_free_port "$@"
		fi
	}
	p=$(_topo_start server)
	[ "$p" != "$busy" ]
	[ -d "$TOPO_DIR/n$busy.failed.1" ]
	grep -q 'Address already in use' "$TOPO_DIR/n$busy.failed.1/log"
	[ "$(topo_cli "$p" info server | grep -c "process_id:$(topo_pid "$p")")" = 1 ]
	run topo_pid "$busy"
	assert_failure
	kill -0 "$(cat "$f/pid")"	# not ours: untouched
	kill "$(cat "$f/pid")"
	topo_kill "$p"
	rm -rf "$TOPO_DIR/n$p" "$TOPO_DIR/n$busy.failed.1" "$TOPO_DIR/handed"
}

@test "topo_kill will not signal a PID that does not name our port" {
	sleep 60 3>&- &
	stranger=$!
	mkdir -p "$TOPO_DIR/n1"
	echo "$stranger" > "$TOPO_DIR/n1/pid"
	run topo_pid 1
	assert_failure
	topo_kill 1 KILL
	kill -0 "$stranger"
	kill "$stranger"
	rm -rf "$TOPO_DIR/n1"
}

@test "topo_down stops every node by PID and nothing is left" {
	mapfile -t pids < <(topo_pids)
	# 5 sentinel-set nodes, 3 cluster masters, 3 masters.
	[ "${#pids[@]}" = 11 ] || fail "pids: ${pids[*]}"
	ports=$(cd "$TOPO_DIR" && ls -d n[0-9]* | grep -v failed | sed 's/^n//')
	topo_down
	for p in "${pids[@]}"; do
		# One read of /proc: a PID that ends between two looks is gone.
		! _topo_alive "$p" ||
			fail "PID $p still runs: $(tr '\0' ' ' < "/proc/$p/cmdline")"
	done
	[ -z "$(topo_pids)" ]
	for port in $ports; do
		[ -z "$(ss -Hltn "( sport = :$port )")" ] || fail "port $port still listens"
	done
}
