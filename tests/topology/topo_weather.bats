#!/usr/bin/env bats
# Weather on a Redis Cluster of 3 masters with a replica each: when the
# master of a lock's slot dies, its waiters (plain and --fair) ride out
# the failover (MOVED to the dead node, CLUSTERDOWN) and get the lock
# after the holder, instead of exiting 76, --fair ones in the order they
# came. The cluster comes from tests/topology.bash. About 30 s.

load ../helper
load ../topology

unset TOPO_PASSWORD TOPO_SENTINEL_PASSWORD

setup_file() {
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	export TOPO_DIR=$BATS_FILE_TMPDIR/topo
	mkdir -p "$TOPO_DIR"
	cluster_up 1
}

teardown_file() {
	topo_down
}

BG=()

setup() {
	topo_load
	T=$BATS_TEST_TMPDIR
	export T
}

teardown() {
	[ -e "$T/go" ] || touch "$T/go"
	stop_bg "${BG[@]}"
	[ -n "${BATS_TEST_COMPLETED:-}" ] || topo_logs 8 >&3
}

# waiter NAME RLOCK-ARGS...: its status in $T/NAME.st, stderr in
# $T/NAME.err, the pid of rlock itself in $T/NAME.pid; its COMMAND notes
# that it ran, and whether the holder was still running then ($T/NAME.ran
# holds "overlap"), and appends NAME to $T/order.
waiter() {
	local name=$1
	shift
	( st=0; "$RLOCK" -u "$CLUSTER_URL" -k "$K" "$@" -- sh -c \
		'[ -e "$T/h.end" ] || echo overlap > "$T/$0.ran"; touch "$T/$0.ran"
		echo "$0" >> "$T/order"' \
		"$name" 2> "$T/$name.err" & echo $! > "$T/$name.pid"
	  wait $! || st=$?; echo "$st" > "$T/$name.st" ) 3>&- &
	BG+=($!)
	wait_until 5 test -s "$T/$name.pid"
}
done_all() {
	local n
	for n; do [ -s "$T/$n.st" ] || return 1; done
}
ran() {
	local n
	for n; do
		[ "$(cat "$T/$n.st")" = 0 ] && [ -e "$T/$n.ran" ] ||
			fail "$n: exit $(cat "$T/$n.st"): $(cat "$T/$n.err")"
		[ ! -s "$T/$n.ran" ] || fail "$n ran while the holder held KEY"
	done
}
held_on() { [ "$(topo_cli "$1" exists "rlock:{$K}")" = 1 ]; }
qlen_on() { [ "$(topo_cli "$1" llen "rlock:{$K}:q")" = "$2" ]; }
# subscribed_on PORT N: N clients of that node or more listen on a channel.
subscribed_on() {
	[ "$(topo_cli "$1" client list | grep -cE ' ssub=[1-9]| sub=[1-9]')" -ge "$2" ]
}
# new_owner OLD: the slot of $K is owned by another node than OLD, which
# answers; its port in $NEW.
new_owner() {
	NEW=$(cluster_key_owner "$K" 2>/dev/null | cut -d' ' -f2) &&
		[ -n "$NEW" ] && [ "$NEW" != "$1" ] &&
		topo_cli "$NEW" ping 2>/dev/null | grep -q PONG
}
waiters_on() {
	[ "$(topo_cli "$1" client list | grep -cE 'cmd=(blpop|ssubscribe)')" -ge 2 ]
}

@test "cluster weather: kill -9 of the slot's master; plain and --fair -w waiters ride out the failover and get the lock" {
	local own
	K=wx$RANDOM
	own=$(cluster_key_owner "$K" | cut -d' ' -f2)
	bg "$RLOCK" -u "$CLUSTER_URL" -k "$K" -- sh -c \
		'while [ ! -e "$T/go" ]; do sleep 0.05; done; touch "$T/h.end"'
	wait_until 5 held_on "$own"
	# The holder's key is on the replica too (WAIT: it acknowledged
	# the writes so far), so the failover keeps it.
	[ "$(topo_cli "$own" wait 1 5000)" -ge 1 ] || fail "no replica of $own"
	waiter w -w "$(tf 60)"
	waiter f --fair -w "$(tf 60)"
	wait_until 5 waiters_on "$own"
	topo_kill "$own"
	# The waiters meet MOVED to the dead node, then CLUSTERDOWN, until
	# the replica takes over (cluster-node-timeout 2 s): none may end.
	nap "$(tf 5)"
	[ ! -e "$T/w.st" ] || fail "w: exit $(cat "$T/w.st"): $(cat "$T/w.err")"
	[ ! -e "$T/f.st" ] || fail "f: exit $(cat "$T/f.st"): $(cat "$T/f.err")"
	touch "$T/go"
	wait_until 30 done_all w f
	ran w f
}

# Issue 34, after a failover: the replica that takes over has the queue
# (WAIT), and nobody is subscribed there. The head is stopped through the
# failover and goes on once another waiter is back: on its old place, as
# the others keep theirs.
@test "cluster weather: a --fair queue keeps its order through a failover" {
	local own i q
	# A slot whose master still has a replica (an earlier test may have
	# used one up).
	for i in $(seq 1 50); do
		K=wo$RANDOM
		own=$(cluster_key_owner "$K" | cut -d' ' -f2)
		[ "$(topo_cli "$own" wait 1 1000)" -ge 1 ] && break
	done
	bg "$RLOCK" -u "$CLUSTER_URL" -k "$K" -- sh -c \
		'while [ ! -e "$T/go" ]; do sleep 0.05; done; touch "$T/h.end"'
	wait_until 5 held_on "$own"
	for i in 1 2 3 4; do
		waiter "d$i" --fair -w "$(tf 90)"
		wait_until 5 qlen_on "$own" "$i" || fail "d$i not queued"
	done
	q=$(topo_cli "$own" lrange "rlock:{$K}:q" 0 -1)
	[ "$(topo_cli "$own" wait 1 5000)" -ge 1 ] || fail "no replica of $own"
	kill -STOP "$(cat "$T/d1.pid")"
	topo_kill "$own"
	wait_until 30 new_owner "$own" || fail "no failover of $own"
	wait_until 20 subscribed_on "$NEW" 1 || fail "none back on $NEW"
	kill -CONT "$(cat "$T/d1.pid")"
	wait_until 20 subscribed_on "$NEW" 4 || fail "not all back on $NEW"
	[ "$(topo_cli "$NEW" lrange "rlock:{$K}:q" 0 -1)" = "$q" ] ||
		fail "the queue was $q, now $(topo_cli "$NEW" lrange "rlock:{$K}:q" 0 -1)"
	touch "$T/go"
	wait_until 30 done_all d1 d2 d3 d4
	ran d1 d2 d3 d4
	[ "$(cat "$T/order")" = "$(printf 'd%s\n' 1 2 3 4)" ] ||
		fail "order: $(tr '\n' ' ' < "$T/order")"
}
