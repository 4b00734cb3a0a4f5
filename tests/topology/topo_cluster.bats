#!/usr/bin/env bats
# rlock against a Redis Cluster of 3 masters (no replicas), through
# redis+cluster:// URLs: locks spread over every master stay exclusive, a
# slot that migrates under a waiter still hands the lock over (plain and
# --fair), status and list see every master, a dead seed is passed over,
# shared locks keep to their slot.
# The cluster comes from tests/topology.bash. About 20 s.

load ../helper
load ../topology

unset TOPO_PASSWORD TOPO_SENTINEL_PASSWORD

setup_file() {
	# The tests share one cluster and look at whole keyspaces.
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	export TOPO_DIR=$BATS_FILE_TMPDIR/topo
	mkdir -p "$TOPO_DIR"
	cluster_up
}

teardown_file() {
	topo_down
}

BG=()

setup() {
	topo_load
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
has_key() { [ "$(topo_cli "$1" exists "$2")" = 1 ]; }
held_on() { has_key "$1" "rlock:{$2}"; }
# A plain waiter for KEY sits in BLPOP on PORT.
blpop_on() {
	topo_cli "$1" client list | grep 'flags=b .*cmd=blpop' |
		grep -qv ' name=rlock-holder '
}
# A --fair waiter for KEY is queued on PORT and subscribed there.
fair_on() {
	[ "$(topo_cli "$1" llen "rlock:{$2}:q")" = 1 ] &&
		topo_cli "$1" client list | grep -q ' ssub=1 '
}

# The critical section: a second holder at once shows up as a failed
# mkdir; read-sleep-write loses an update if two overlap.
CS='d=$1 k=$2
mkdir "$d/$k.cs" 2>/dev/null || echo "overlap on $k" >> "$d/bad"
v=$(cat "$d/$k"); sleep 0.01; echo $((v + 1)) > "$d/$k"
rmdir "$d/$k.cs" 2>/dev/null'

# worker W: every key once, in blocks of 5 that all workers take at the
# same time (so they contend), each worker in its own order inside a block.
worker() {
	local w=$1 b i k st
	for ((b = 0; b < 10; b++)); do
		for ((i = 0; i < 5; i++)); do
			if ((w % 2)); then
				k=key$((b * 5 + (4 - i + w) % 5 + 1))
			else
				k=key$((b * 5 + (i + w) % 5 + 1))
			fi
			st=0
			timeout -k 1 20 "$RLOCK" -u "$CLUSTER_URL" -k "$k" \
				-- sh -c "$CS" sh "$T" "$k" || st=$?
			[ "$st" = 0 ] || echo "worker $w, $k: exit $st" >> "$T/bad"
		done
	done
}

@test "cluster: 50 KEYs spread over all three masters, each exclusive under 4 parallel workers" {
	local n p w pids=() per=() total=0
	for n in $(seq 1 50); do echo 0 > "$T/key$n"; done
	: > "$T/bad"
	for w in 0 1 2 3; do
		worker "$w" 3>&- &
		pids+=($!)
		BG+=($!)
	done
	for p in "${pids[@]}"; do
		wait_until 60 pid_gone "$p" || fail "a worker still runs"
		wait "$p"
	done
	[ ! -s "$T/bad" ] || fail "$(cat "$T/bad")"
	for n in $(seq 1 50); do
		[ "$(cat "$T/key$n")" = 4 ] || fail "key$n: $(cat "$T/key$n")"
	done
	# Each key's fence is on exactly one master (a master keeps only the
	# keys of slots it owns: a write elsewhere is MOVED), and the three
	# masters all have some. One SCAN per master, not a lookup per key:
	# this test must fit its time on a busy machine.
	: > "$T/fences"
	for p in $CLUSTER_PORTS; do
		topo_cli "$p" --scan --pattern 'rlock:{key*}:fence' > "$T/on.$p"
		n=$(grep -c . "$T/on.$p")
		[ "$n" -gt 0 ] || fail "no lock on master $p"
		per+=("$p:$n")
		total=$((total + n))
		cat "$T/on.$p" >> "$T/fences"
	done
	[ "$total" = 50 ] || fail "fences per master: ${per[*]}"
	for n in $(seq 1 50); do echo "rlock:{key$n}:fence"; done | sort > "$T/want"
	sort "$T/fences" | diff "$T/want" - || fail "fences: ${per[*]}"
}

# handoff_after_migration KEY [OPTIONS]: a holder, a waiter (with
# OPTIONS) blocked behind it, KEY's slot moved, then the holder ends.
handoff_after_migration() {
	local key=$1 slot from to t0 el hf wf
	shift
	read -r slot from <<< "$(cluster_key_owner "$key")"
	bg "$RLOCK" -u "$CLUSTER_URL" -k "$key" -- sh -c '
		echo "$RLOCK_FENCE" > "$1/holder.fence"
		until [ -e "$1/go" ]; do sleep 0.02; done' sh "$T"
	local holder=$LAST
	wait_until 10 held_on "$from" "$key" || fail "holder did not start"
	bg "$RLOCK" -u "$CLUSTER_URL" "$@" -k "$key" -- sh -c '
		echo "$RLOCK_FENCE" > "$1/waiter.fence"' sh "$T"
	local waiter=$LAST
	if [ "${1:-}" = --fair ]; then
		wait_until 10 fair_on "$from" "$key" || fail "waiter not queued"
	else
		wait_until 10 blpop_on "$from" || fail "waiter not in BLPOP"
	fi
	[ ! -e "$T/waiter.fence" ]
	cluster_migrate_key "$key"
	to=$CLUSTER_MIGRATE_TO
	[ "$to" != "$from" ]
	proc_alive "$waiter" || fail "the waiter ended during the migration"
	[ ! -e "$T/waiter.fence" ]
	t0=$(now_ms)
	touch "$T/go"
	# The holder's lease (30 s) is far off: only a wake-up gets it here.
	wait_until 10 test -s "$T/waiter.fence" ||
		fail "the waiter did not run within 10 s of the release"
	el=$(( $(now_ms) - t0 ))
	wait_exit "$holder"
	[ "$STATUS" = 0 ] || fail "holder exit $STATUS"
	wait_exit "$waiter"
	[ "$STATUS" = 0 ] || fail "waiter exit $STATUS"
	hf=$(cat "$T/holder.fence") wf=$(cat "$T/waiter.fence")
	[ "$wf" -gt "$hf" ] || fail "fence $hf, then $wf"
	# The waiter's grant was made on the new owner: the fence is there,
	# nothing of KEY is left on the old one.
	[ "$(cluster_slot_owner "$slot")" = "$to" ]
	[ "$(topo_cli "$to" get "rlock:{$key}:fence")" = "$wf" ]
	[ "$(topo_cli "$from" cluster countkeysinslot "$slot")" = 0 ]
	! held_on "$to" "$key"
	echo "# hand-off $el ms after the release" >&3
}

@test "cluster: a KEY's slot migrates to another master while a waiter waits; the hand-off still happens" {
	handoff_after_migration mig-plain
}

@test "cluster: the same with a --fair waiter" {
	handoff_after_migration mig-fair --fair
}

# pick_keys: one key per master, as KEYS (port:key ...).
pick_keys() {
	local c p seen=" " out=()
	for c in $(seq 1 200); do
		p=$(owner_of "st$c")
		[[ $seen == *" $p "* ]] && continue
		seen+="$p "
		out+=("st$c")
		[ "${#out[@]}" = 3 ] && break
	done
	[ "${#out[@]}" = 3 ] || fail "no key for each master"
	KEYS=("${out[@]}")
}

@test "cluster: status and list through the cluster" {
	local k
	pick_keys
	: > "$T/bad"
	for k in "${KEYS[@]}"; do
		bg "$RLOCK" -u "$CLUSTER_URL" -k "$k" -- sh -c '
			until [ -e "$1/go" ]; do sleep 0.02; done' sh "$T"
		wait_until 10 held_on "$(owner_of "$k")" "$k"
	done
	run -0 --separate-stderr "$RLOCK" -u "$CLUSTER_URL" status "${KEYS[@]}"
	for k in "${KEYS[@]}"; do
		assert_line "$k: held (mutex)"
	done
	[ -z "$stderr" ] || fail "stderr: $stderr"
	run -1 "$RLOCK" -u "$CLUSTER_URL" status "${KEYS[0]}" not-held-here
	assert_line "not-held-here: free"
	run -0 --separate-stderr "$RLOCK" -u "$CLUSTER_URL" list
	[ "${#lines[@]}" = 3 ] || fail "list: $output"
	for k in "${KEYS[@]}"; do
		assert_line --regexp "^$k	"
	done
	run -0 "$RLOCK" -u "$CLUSTER_URL" list 'st*'
	[ "${#lines[@]}" = 3 ] || fail "list st*: $output"
	touch "$T/go"
	for k in "${BG[@]}"; do
		wait_exit "$k"
		[ "$STATUS" = 0 ]
	done
	BG=()
	run -1 "$RLOCK" -u "$CLUSTER_URL" status "${KEYS[@]}"
	for k in "${KEYS[@]}"; do
		assert_line "$k: free"
	done
	run -0 "$RLOCK" -u "$CLUSTER_URL" list
	[ -z "$output" ] || fail "list after: $output"
}

# Shared locks on a Cluster: every script touches only the keys of its
# KEYS (the slot checks), BLPOP waits on two keys of one slot.
@test "cluster: -s holders together; a writer waits for them, then goes before a later reader" {
	local k=shared-c o
	o=$(owner_of "$k")
	for n in a b; do
		bg "$RLOCK" -u "$CLUSTER_URL" -s -k "$k" -- sh -c '
			touch "$1/$2"; until [ -e "$1/go" ]; do sleep 0.02; done' \
			sh "$T" "$n"
	done
	wait_until 10 test -e "$T/a" || fail "a did not get in"
	wait_until 10 test -e "$T/b" || fail "b did not get in beside a"
	run -0 --separate-stderr "$RLOCK" -u "$CLUSTER_URL" status "$k"
	assert_line --index 0 "$k: held (shared, 2 holders)"
	bg "$RLOCK" -u "$CLUSTER_URL" -w 20 -k "$k" -- sh -c \
		'echo w >> "$1/order"' sh "$T"
	wait_until 10 test "$(topo_cli "$o" zcard "rlock:{$k}:xw")" = 1 ||
		fail "the writer does not wait"
	run -75 "$RLOCK" -u "$CLUSTER_URL" -s -n -q -k "$k" -- true
	bg "$RLOCK" -u "$CLUSTER_URL" -s -w 20 -k "$k" -- sh -c \
		'echo r >> "$1/order"' sh "$T"
	wait_until 10 blpop_on "$o" || fail "the reader does not wait"
	touch "$T/go"
	for p in "${BG[@]}"; do
		wait_exit "$p"
		[ "$STATUS" = 0 ] || fail "status $STATUS"
	done
	BG=()
	[ "$(cat "$T/order")" = "$(printf 'w\nr')" ] ||
		fail "order: $(cat "$T/order")"
	run -1 "$RLOCK" -u "$CLUSTER_URL" status "$k"
}

@test "cluster: KEYs with braces ('}x', '{x', 'x}', '}', '{}', and a leading '\\') work, wake-ups and list included" {
	local k shown o
	for k in '}x' '{x' 'x}' '}' '{}' '}{' '\y' '\}' 'a{b}c'; do
		shown=${k//\\/\\\\}	# status shows a backslash as \\
		run -0 --separate-stderr timeout 20 "$RLOCK" -u "$CLUSTER_URL" \
			-k "$k" -- sh -c '"$1" -u "$2" status "$RLOCK_KEY"' sh \
			"$RLOCK" "$CLUSTER_URL"
		[ "${lines[0]}" = "$shown: held (mutex)" ] ||
			fail "-k '$k': ${lines[0]:-} $stderr"
		[ -z "$stderr" ] || fail "-k '$k': $stderr"
	done
	# A waiter on '}x' is woken by the release, and list finds it held.
	bg "$RLOCK" -u "$CLUSTER_URL" -k '}x' -- sh -c '
		until [ -e "$1/go" ]; do sleep 0.02; done' sh "$T"
	o=$(owner_of 'rlock:{\}x}')	# stored marked: the tag is "\\"
	wait_until 10 held_on "$o" '\}x'
	run -0 --separate-stderr "$RLOCK" -u "$CLUSTER_URL" list '}*'
	[[ $output == "}x	"* ]] || fail "list '}*': $output $stderr"
	run -0 "$RLOCK" -u "$CLUSTER_URL" list '?x'
	[[ $output == "}x	"* ]] || fail "list ?x: $output"
	bg "$RLOCK" -u "$CLUSTER_URL" -w 20 -k '}x' -- touch "$T/second"
	wait_until 10 blpop_on "$o" || fail "waiter not in BLPOP"
	touch "$T/go"
	wait_until 10 test -e "$T/second" || fail "waiter not woken"
	for k in "${BG[@]}"; do
		wait_exit "$k"
		[ "$STATUS" = 0 ] || fail "status $STATUS"
	done
	BG=()
}

# --redisson on a Cluster: every name rlock adds beside Redisson's keys
# is in KEY's slot (the scripts would be refused CROSSSLOT otherwise),
# for a KEY without and with a '{' (Redisson then adds no braces).
@test "cluster: --redisson keeps to KEY's slot; a --fair waiter is woken" {
	local k o
	for k in rdsn 'a{rdsn}b'; do
		run -0 --separate-stderr timeout 20 "$RLOCK" -u "$CLUSTER_URL" \
			--redisson -k "$k" -- sh -c '"$1" -u "$2" status --redisson "$RLOCK_KEY"' \
			sh "$RLOCK" "$CLUSTER_URL"
		[ "${lines[0]}" = "$k: held (Redisson lock)" ] ||
			fail "-k '$k': ${lines[0]:-} $stderr"
		[ -z "$stderr" ] || fail "-k '$k': $stderr"
	done
	o=$(owner_of rdsn)
	bg "$RLOCK" -u "$CLUSTER_URL" --redisson -k rdsn -- sh -c '
		until [ -e "$1/go" ]; do sleep 0.02; done' sh "$T"
	wait_until 10 has_key "$o" rdsn
	bg "$RLOCK" -u "$CLUSTER_URL" --redisson --fair -w 20 -k rdsn -- \
		touch "$T/second"
	wait_until 10 eval '[ "$(topo_cli "$o" llen "redisson_lock_queue:{rdsn}")" = 1 ]'
	touch "$T/go"
	wait_until 10 test -e "$T/second" || fail "waiter not woken"
	for k in "${BG[@]}"; do
		wait_exit "$k"
		[ "$STATUS" = 0 ] || fail "status $STATUS"
	done
	BG=()
}

@test "cluster: --min-hold, the last run and skips through the cluster" {
	local k
	pick_keys
	for k in "${KEYS[@]}"; do
		run -3 "$RLOCK" -u "$CLUSTER_URL" --min-hold 3s -k "$k" -- \
			sh -c 'exit 3'
		run -75 "$RLOCK" -u "$CLUSTER_URL" -n -q -k "$k" -- true
	done
	run -0 "$RLOCK" -u "$CLUSTER_URL" status --json "${KEYS[@]}"
	echo "$output" | jq -e 'length == 3 and all(.[]; .held and
	    .holders[0].finished.exit_status == 3 and
	    .last_run.exit_status == 3 and .last_run.skips == 1)' ||
		fail "$output"
	run -0 --separate-stderr "$RLOCK" -u "$CLUSTER_URL" status \
		--prometheus "${KEYS[@]}"
	echo "$output" | promtool check metrics
}

@test "cluster: a dead seed first in the URL is passed over" {
	local closed url k
	closed=$(topo_free_port)
	url="redis+cluster://127.0.0.1:$closed,${CLUSTER_URL#redis+cluster://}"
	pick_keys
	for k in "${KEYS[@]}"; do
		run -0 --separate-stderr timeout 10 "$RLOCK" -u "$url" -k "$k" \
			-- sh -c 'echo "ran $RLOCK_KEY"'
		[ "$output" = "ran $k" ]
		has_key "$(owner_of "$k")" "rlock:{$k}:fence"
	done
	run -1 timeout 10 "$RLOCK" -u "$url" status "${KEYS[@]}"
	run -0 timeout 10 "$RLOCK" -u "$url" list
	# Only dead seeds: unreachable.
	run -69 --separate-stderr timeout 10 "$RLOCK" \
		-u "redis+cluster://127.0.0.1:$closed" -k x -- echo must-not-run
	[ -z "$output" ]
	[[ $stderr == rlock:* ]] || fail "stderr: $stderr"
}
