#!/usr/bin/env bats
# Behind twemproxy (nutcracker), which closes the connection on a command it
# does not take (CONFIG, EVALSHA_RO, SCAN, BLPOP, SSUBSCRIBE...): rlock works
# without what it can do without, and otherwise exits with one line naming
# the command; never "cannot reach" for a proxy that answered, never a hang.

load helper

setup_file() {
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	command -v nutcracker >/dev/null || skip "nutcracker is not installed"
	redis_start main
	nutcracker_start
}

teardown_file() {
	nutcracker_stop
	redis_stop main
}

# nutcracker_start: twemproxy in front of the main server (TCP), with its
# own configuration in the file's temp dir; exports PROXY_URL and NC_PID.
nutcracker_start() {
	local dir=$BATS_FILE_TMPDIR/nc try port stats
	mkdir -p "$dir"
	for try in 1 2 3 4 5; do
		port=$(closed_port 20000 12000) && stats=$(closed_port 20000 12000) || continue
		[ "$port" != "$stats" ] || continue
		cat >"$dir/nc.yml" <<-EOF
		rlock:
		  listen: 127.0.0.1:$port
		  hash: fnv1a_64
		  distribution: ketama
		  redis: true
		  auto_eject_hosts: false
		  servers:
		   - 127.0.0.1:$REDIS_PORT:1
		EOF
		nutcracker -c "$dir/nc.yml" -a 127.0.0.1 -s "$stats" \
			-o "$dir/nc.log" 3>&- &
		NC_PID=$!
		if wait_until 5 proxy_up "$port"; then
			export NC_PID PROXY_URL=redis://127.0.0.1:$port
			return 0
		fi
		kill "$NC_PID" 2>/dev/null
		wait "$NC_PID" 2>/dev/null || true
	done
	echo "could not start nutcracker" >&2
	return 1
}

proxy_up() {
	kill -0 "$NC_PID" 2>/dev/null &&
		[ "$(redis-cli -p "$1" ping 2>/dev/null)" = PONG ]
}

nutcracker_stop() {
	[ -n "${NC_PID:-}" ] || return 0
	kill "$NC_PID" 2>/dev/null
	wait "$NC_PID" 2>/dev/null || true
}

HOLDERS=()

teardown() {
	stop_bg "${HOLDERS[@]}"
	HOLDERS=()
}

held() { [ "$(rcli exists "rlock:{$1}")" = 1 ]; }
free() { [ "$(rcli exists "rlock:{$1}")" = 0 ]; }

# hold KEY: a holder through the proxy until $BATS_TEST_TMPDIR/go exists.
hold() {
	RLOCK_URL=$PROXY_URL "$RLOCK" -k "$1" -- sh -c \
		"until [ -e '$BATS_TEST_TMPDIR/go' ]; do sleep 0.05; done" 3>&- &
	HOLDERS+=("$!")
	wait_until 10 held "$1"
}

@test "a run through twemproxy takes the lock, renews it and releases it" {
	export RLOCK_URL=$PROXY_URL
	# Renewed every 200 ms while it runs: lost, it would exit 70.
	run -0 --separate-stderr timeout 10 "$RLOCK" -l 600ms -k pk1 -- sh -c \
		'sleep 1.5; echo "ran with $RLOCK_FENCE"'
	assert_output --regexp '^ran with [0-9]+$'
	assert_equal "$stderr" ""
	free pk1
	# The fence is kept on the server behind the proxy.
	[ "$(rcli exists 'rlock:{pk1}:fence')" = 1 ]
}

@test "-v says the eviction check was skipped: the proxy refused CONFIG" {
	export RLOCK_URL=$PROXY_URL
	run -0 --separate-stderr timeout 10 "$RLOCK" -v -k pk2 -- true
	[ "$(grep -c 'maxmemory-policy' <<<"$stderr")" = 1 ]
	assert_equal "$(grep 'maxmemory-policy' <<<"$stderr")" \
		"rlock: cannot check the server's maxmemory-policy: the server or a proxy in front of it refused CONFIG (it closed the connection); going on without the check (it must be noeviction)"
	free pk2
}

@test "a nested run through twemproxy re-enters its parent's lock" {
	export RLOCK_URL=$PROXY_URL
	run -0 --separate-stderr timeout 10 "$RLOCK" -k pk7 -- \
		"$RLOCK" -v -k pk7 -- echo inner
	assert_output inner
	assert_equal "$(grep -v maxmemory-policy <<<"$stderr")" \
		"rlock: 'pk7' is already held by our ancestor: re-entering"
	free pk7
}

@test "-n behind a holder through twemproxy: not obtained" {
	hold pk3
	export RLOCK_URL=$PROXY_URL
	run -75 --separate-stderr timeout 10 "$RLOCK" -n -k pk3 -- true
	assert_equal "$(wc -l <<<"$stderr")" 1
	assert_regex "$stderr" "^rlock: 'pk3' is held by .*; not waiting \(--nonblock\)$"
	touch "$BATS_TEST_TMPDIR/go"
	wait_until 10 free pk3
}

@test "a waiter behind a holder through twemproxy gets the lock without BLPOP" {
	hold pk4
	export RLOCK_URL=$PROXY_URL
	timeout 20 "$RLOCK" -v -w 15 -k pk4 -- echo got \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	local w=$!
	HOLDERS+=("$w")
	wait_until 10 grep -q "^rlock: waiting for 'pk4'" "$BATS_TEST_TMPDIR/err"
	# Not a wait for anything: time for a waiter that reconnects at
	# every closed BLPOP to show it (hundreds of times a second).
	nap 1
	touch "$BATS_TEST_TMPDIR/go"
	wait_until 10 pid_gone "$w"
	run -0 wait "$w"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/out")" got
	# Closed on twice in a row, then no more BLPOP: it looks instead.
	run -0 grep -c 'wake-up connection lost' "$BATS_TEST_TMPDIR/err"
	assert_output 2
	grep -q 'refused BLPOP (it closed the connection on it): looking every' \
		"$BATS_TEST_TMPDIR/err"
	grep -q "^rlock: acquired 'pk4' after" "$BATS_TEST_TMPDIR/err"
	! grep -q 'cannot reach' "$BATS_TEST_TMPDIR/err"
	free pk4
	[ "$(rcli llen 'rlock:{pk4}:q')" = 0 ]
}

@test "a --fair waiter through twemproxy: one line naming SSUBSCRIBE, 76" {
	hold pk5
	export RLOCK_URL=$PROXY_URL
	run -76 --separate-stderr timeout 10 "$RLOCK" --fair -w 10 -k pk5 -- true
	assert_equal "$stderr" "rlock: $PROXY_URL/0: the server or a proxy in front of it refused SSUBSCRIBE (it closed the connection on it); --fair needs it"
	# It left no place in the queue behind.
	[ "$(rcli exists 'rlock:{pk5}:q')" = 0 ]
	touch "$BATS_TEST_TMPDIR/go"
	wait_until 10 free pk5
}

@test "status through twemproxy: held, then free (EVALSHA for EVALSHA_RO)" {
	hold pk6
	export RLOCK_URL=$PROXY_URL
	run -0 --separate-stderr timeout 10 "$RLOCK" status pk6
	assert_line --index 0 "pk6: held (mutex)"
	assert_equal "$stderr" ""
	run -0 --separate-stderr timeout 10 "$RLOCK" status --json pk6
	assert_output --partial '"key":"pk6","held":true'
	run -0 --separate-stderr timeout 10 "$RLOCK" status --prometheus pk6
	assert_line 'rlock_held{key="pk6"} 1'
	touch "$BATS_TEST_TMPDIR/go"
	wait_until 10 free pk6
	run -1 --separate-stderr timeout 10 "$RLOCK" status pk6
	assert_line --index 0 "pk6: free"
	assert_equal "$stderr" ""
}

@test "list through twemproxy: one line naming SCAN, 76, not 'cannot reach'" {
	export RLOCK_URL=$PROXY_URL
	run -76 --separate-stderr timeout 10 "$RLOCK" list
	assert_output ""
	assert_equal "$stderr" "rlock: $PROXY_URL/0: the server or a proxy in front of it refused SCAN (it closed the connection on it); rlock list needs it (rlock status KEY does not)"
	run -76 --separate-stderr timeout 10 "$RLOCK" list --json 'pk*'
	assert_output ""
	assert_equal "$(wc -l <<<"$stderr")" 1
}

@test "a database through twemproxy: one line naming SELECT, 76" {
	run -76 --separate-stderr timeout 10 "$RLOCK" -u "$PROXY_URL/1" -k pk8 -- true
	assert_output ""
	assert_equal "$stderr" "rlock: $PROXY_URL/1: the server or a proxy in front of it refused SELECT (it closed the connection on it)"
	run -76 --separate-stderr timeout 10 "$RLOCK" -u "$PROXY_URL/1" status pk8
	assert_equal "$(wc -l <<<"$stderr")" 1
	assert_regex "$stderr" 'refused SELECT'
	free pk8
}
