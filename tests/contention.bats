#!/usr/bin/env bats
# Contention: -n, -w, -E, waking up on release, a crashed holder, mutual
# exclusion under parallel load, and a foreign key without expiry.

load helper

setup_file() {
	redis_start main
}

teardown_file() {
	redis_stop main
}

teardown() {
	stop_holder
	[ -z "${LINK:-}" ] || stop_bg "$LINK"
	LINK=
	rcli del 'rlock:{foreign}' >/dev/null	# ours, not rlock's
	local left
	left=$(keys_without_ttl)
	[ -z "$left" ] || fail "keys without TTL: $left"
}

# start_holder KEY [rlock options]: hold KEY in the background (COMMAND
# sleeps) until stop_holder; HOLDER is rlock's PID.
start_holder() {
	local key=$1
	shift
	"$RLOCK" "$@" -k "$key" -- sleep 60 3>&- >/dev/null 2>&1 &
	HOLDER=$!
	wait_until 5 held "$key" || fail "holder of '$key' did not start"
}

# SIGTERM goes on to COMMAND; rlock then releases and exits.
stop_holder() {
	[ -n "${HOLDER:-}" ] || return 0
	kill -TERM "$HOLDER" 2>/dev/null || true
	wait "$HOLDER" 2>/dev/null || true
	HOLDER=
}

@test "-n on a held lock: 75 and one line naming the holder" {
	start_holder busy
	run -75 --separate-stderr "$RLOCK" -n -k busy -- echo must-not-run
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ "$stderr" = "rlock: 'busy' is held by $(id -un)@$(hostname) (pid $HOLDER: sleep 60); not waiting (--nonblock)" ]
	# -w 0 is -n.
	run -75 --separate-stderr "$RLOCK" -w 0 -k busy -- echo must-not-run
	[ -z "$output" ]
	[[ $stderr == *"not waiting (--nonblock)" ]]
}

@test "-q silences the conflict message, not the status" {
	start_holder busy
	run -75 --separate-stderr "$RLOCK" -q -n -k busy -- echo must-not-run
	[ -z "$output" ]
	[ -z "$stderr" ]
}

@test "-E N replaces 75" {
	start_holder busy
	run -9 --separate-stderr "$RLOCK" -E 9 -n -k busy -- true
	[ "${#stderr_lines[@]}" -eq 1 ]
	run -0 "$RLOCK" -E 0 -q -n -k busy -- echo must-not-run
	[ -z "$output" ]
	run -9 "$RLOCK" -E 9 -w 0.2 -k busy -- true
}

@test "-w 0.5 on a held lock: 75 after about half a second" {
	start_holder busy
	local t0 el
	t0=$(now_ms)
	run -75 --separate-stderr "$RLOCK" -w "$(tf 0.5)" -k busy -- \
		echo must-not-run
	el=$(( $(now_ms) - t0 ))
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "rlock: 'busy' is still held by $(id -un)@$(hostname) (pid $HOLDER: sleep 60) after --timeout $(dur_text "$(tf_ms 500)")" ]]
	[ "$el" -ge "$(tf_ms 450)" ] || fail "gave up after ${el}ms"
	[ "$el" -lt "$(tf_ms 2500)" ] || fail "gave up after ${el}ms"
	held busy
}

# slow_link DELAY_S: a proxy to the file's server that holds every chunk
# DELAY_S in each direction, as a Redis a round trip of twice that away
# does; LINK_URL is its URL, LINK its pid (stopped by teardown).
slow_link() {
	local port
	cat > "$BATS_TEST_TMPDIR/link.py" <<-'EOF'
	import socket, sys, threading, time
	port, up, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
	def pipe(a, b):
	    try:
	        while True:
	            d = a.recv(65536)
	            if not d:
	                break
	            time.sleep(delay)
	            b.sendall(d)
	    except OSError:
	        pass
	    for s in (a, b):
	        try:
	            s.shutdown(socket.SHUT_RDWR)
	        except OSError:
	            pass
	ls = socket.socket()
	ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	ls.bind(('127.0.0.1', port))
	ls.listen(16)
	open(sys.argv[4], 'w').close()
	while True:
	    c, _ = ls.accept()
	    u = socket.create_connection(('127.0.0.1', up))
	    for a, b in ((c, u), (u, c)):
	        threading.Thread(target=pipe, args=(a, b), daemon=True).start()
	EOF
	port=$(closed_port 20000 12000)
	python3 "$BATS_TEST_TMPDIR/link.py" "$port" "$REDIS_PORT" "$1" \
		"$BATS_TEST_TMPDIR/link.ready" 3>&- &
	LINK=$!
	wait_until 5 test -e "$BATS_TEST_TMPDIR/link.ready" ||
		fail "the proxy does not listen on $port"
	LINK_URL=redis://127.0.0.1:$port
}

# flock -w 0.001 on a free lock takes it: the wait is for a holder, not
# for the way to the lock. So a -w shorter than the round trip to Redis
# still makes its attempt and hears the answer (within -w's bound).
@test "-w shorter than a round trip: a free lock is taken, a held one is 75" {
	# The scripts cached, as on a server in use: one round trip.
	run -0 "$RLOCK" -k far -- true
	slow_link 0.04
	run -0 --separate-stderr "$RLOCK" -u "$LINK_URL" -w 1ms -k far -- \
		echo ran
	[ "$output" = ran ]
	[ -z "$stderr" ] || fail "stderr: $stderr"
	start_holder far
	run -75 --separate-stderr "$RLOCK" -u "$LINK_URL" -w 1ms -k far -- \
		echo must-not-run
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	[[ $stderr == "rlock: 'far' is still held by "*" after --timeout 1ms" ]] ||
		fail "stderr: $stderr"
}

@test "a waiter wakes promptly when the holder releases, and gets it" {
	local T=$BATS_TEST_TMPDIR w t_end started
	start_holder wake
	"$RLOCK" -v -w "$(tf 20)" -k wake -- sh -c 'date +%s%N > "$1"' sh \
		"$T/started" 3>&- >/dev/null 2>"$T/waiter.err" &
	w=$!
	# Really waiting (a lease of 30 s left), well before the release.
	wait_until 5 grep -q "waiting for 'wake'" "$T/waiter.err" ||
		fail "waiter not waiting: $(cat "$T/waiter.err")"
	[ ! -e "$T/started" ]
	stop_holder
	t_end=$(now_ms)
	run -0 timeout "$(tf 10)" sh -c \
		"while kill -0 $w 2>/dev/null; do sleep 0.02; done"
	wait "$w" || fail "waiter exited $?: $(cat "$T/waiter.err")"
	started=$(( $(cat "$T/started") / 1000000 ))
	# About a second, loosely: a lost wake-up waits out the 30 s lease
	# (or the 20 s --timeout).
	[ $((started - t_end)) -lt "$(tf_ms 1500)" ] ||
		fail "COMMAND started $((started - t_end))ms after the release"
}

@test "a SIGKILLed holder's lock is free after its lease, not before" {
	local T=$BATS_TEST_TMPDIR child t_kill el
	"$RLOCK" -l "$(tf 1)" -k crash -- \
		sh -c 'echo $$ > "$1"; exec sleep 60' sh "$T/child" \
		3>&- >/dev/null 2>&1 &
	HOLDER=$!
	wait_until 5 held crash
	wait_until 5 test -s "$T/child"
	child=$(cat "$T/child")
	kill -KILL "$HOLDER"
	t_kill=$(now_ms)
	wait "$HOLDER" || true
	HOLDER=
	held crash	# the lease still runs
	run -0 --separate-stderr timeout "$(tf 10)" "$RLOCK" -w "$(tf 5)" \
		-k crash -- echo got
	el=$(( $(now_ms) - t_kill ))
	[ "$output" = got ]
	[ "$el" -ge "$(tf_ms 300)" ] || fail "got a live lease after ${el}ms"
	[ "$el" -lt "$(tf_ms 3000)" ] || fail "waited ${el}ms for a 1 s lease"
	# COMMAND did not outlive its guard.
	wait_until 3 pid_gone "$child" || fail "COMMAND $child still runs"
}

# worker DIR ROUNDS: read-increment-write DIR/count under the lock.
worker() {
	local dir=$1 rounds=$2 r
	for ((r = 0; r < rounds; r++)); do
		timeout "$(tf 60)" "$RLOCK" -w "$(tf 50)" -k counter -- sh -c '
			n=$(cat "$1"); sleep 0.01; echo $((n + 1)) > "$1"
			echo "$RLOCK_FENCE" >> "$2"' sh "$dir/count" \
			"$dir/fences" || { echo "round $r: $?" >> "$dir/errors"; return 1; }
	done
}

@test "exclusion: 8 workers x 15 read-sleep-write rounds lose no update" {
	local T=$BATS_TEST_TMPDIR i pids=()
	echo 0 > "$T/count"
	: > "$T/fences"
	for i in 1 2 3 4 5 6 7 8; do
		worker "$T" 15 3>&- &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || fail "a worker failed: $(cat "$T/errors")"
	done
	[ "$(cat "$T/count")" = 120 ] || fail "count $(cat "$T/count")"
	# Fences, in the order the holders ran, strictly increase.
	[ "$(wc -l < "$T/fences")" -eq 120 ]
	sort -n -u -c "$T/fences" || fail "fences out of order"
}

commands() {
	rcli info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p'
}

@test "a foreign key without TTL: -n fails, -w times out without busy-looping" {
	rcli set 'rlock:{foreign}' not-rlock >/dev/null
	run -75 --separate-stderr "$RLOCK" -n -k foreign -- echo must-not-run
	[ -z "$output" ]
	[ "$stderr" = "rlock: 'foreign' is held by another client; not waiting (--nonblock)" ]
	local before after t0 el
	before=$(commands)
	t0=$(now_ms)
	run -75 --separate-stderr "$RLOCK" -w "$(tf 2)" -k foreign -- \
		echo must-not-run
	el=$(( $(now_ms) - t0 ))
	after=$(commands)
	[ -z "$output" ]
	[ "$stderr" = "rlock: 'foreign' is still held by another client after --timeout $(dur_text "$(tf_ms 2000)")" ]
	[ "$el" -ge "$(tf_ms 1900)" ] || fail "gave up after ${el}ms"
	[ "$el" -lt "$(tf_ms 4000)" ] || fail "gave up after ${el}ms"
	# A few attempts a second at most: each is one script of about
	# eight commands (Redis counts those too); a busy loop makes
	# thousands. (Fewer than 100 in 2 s: as many more as -w is longer.)
	[ $((after - before)) -lt "$(tf_ms 100)" ] ||
		fail "$((after - before)) commands in ${el}ms"
	# The foreign key is left alone.
	[ "$(rcli get 'rlock:{foreign}')" = not-rlock ]
	rcli del 'rlock:{foreign}' >/dev/null
}
