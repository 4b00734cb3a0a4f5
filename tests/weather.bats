#!/usr/bin/env bats
# Weather and bounds (the contract's Guarantees): a waiter that has
# reached Redis rides out what production Redis does to it (a crash and
# restart, max clients, BUSY, LOADING) and gets the lock, instead of
# exiting 69; -w DUR, -n and a run without -w against a server that holds
# writes back exit within the bound the contract states; a holder's
# release rides out the same weather until its lease ends. Each test has a
# server of its own (restarted, reconfigured or paused under it).

load helper

setup() {
	K=weather$BATS_TEST_NUMBER
	T=$BATS_TEST_TMPDIR
	export T
	PIDS=()
	SRV=s$BATS_TEST_NUMBER
	redis_start "$SRV" "${SRV_ARGS[@]}"
}

teardown() {
	local p
	touch "$T/go"
	for p in "${PIDS[@]}"; do
		proc_alive "$p" && kill -KILL "$p" 2>/dev/null
	done
	rcli client unpause > /dev/null 2>&1
	redis_stop "$SRV"
	return 0
}

SRV_ARGS=()

# waiter NAME RLOCK-ARGS...: an rlock in the background whose COMMAND
# notes that it ran ($T/NAME.ran) and appends NAME to $T/order; its status
# goes to $T/NAME.st, its stderr to $T/NAME.err, the pid of rlock itself
# to $T/NAME.pid.
waiter() {
	local name=$1
	shift
	# (bats runs this under set -e: a status that is not 0 must not end
	# the subshell before it is written.)
	( st=0; "$RLOCK" -k "$K" "$@" -- sh -c \
		'touch "$T/$0.ran"; echo "$0" >> "$T/order"' "$name" \
		2> "$T/$name.err" & echo $! > "$T/$name.pid"
	  wait $! || st=$?; echo "$st" > "$T/$name.st" ) &
	PIDS+=($!)
	wait_until 5 test -s "$T/$name.pid"
	PIDS+=("$(cat "$T/$name.pid")")
}
done_all() {
	local n
	for n; do [ -s "$T/$n.st" ] || return 1; done
}
# ran NAME...: each exited 0 and its COMMAND ran.
ran() {
	local n
	for n; do
		[ "$(cat "$T/$n.st")" = 0 ] && [ -e "$T/$n.ran" ] ||
			fail "$n: exit $(cat "$T/$n.st"): $(cat "$T/$n.err")"
	done
}
# qlen_is N: the --fair queue of $K holds N waiters.
qlen_is() { [ "$(rcli llen "rlock:{$K}:q")" = "$1" ]; }
# subscribed N: N clients or more listen on a channel (--fair waiters).
subscribed() {
	[ "$(rcli client list | grep -cE ' ssub=[1-9]| sub=[1-9]')" -ge "$1" ]
}
# order_is NAME...: the waiters' COMMANDs ran in this order.
order_is() {
	[ "$(cat "$T/order" 2>/dev/null)" = "$(printf '%s\n' "$@")" ] ||
		fail "order: $(tr '\n' ' ' < "$T/order")"
}


@test "weather: kill -9 of Redis, restarted at once without its data: plain -w, plain and --fair -w waiters get the lock" {
	# The holder's key is gone with the restart: the waiters must reach
	# the new server and take the free lock, not exit 69 at the refused
	# connection.
	"$RLOCK" -k "$K" -- sh -c 'while [ ! -e "$T/go" ]; do sleep 0.05; done' &
	PIDS+=($!)
	wait_until 5 held "$K"
	waiter w -w "$(tf 30)"
	waiter p
	waiter f --fair -w "$(tf 30)"
	wait_until 5 blocked 3
	redis_restart -9 "$SRV"
	wait_until 20 done_all w p f
	ran w p f
}

@test "weather: kill -9 and restart with AOF: the holder's key survives, the waiters ride it out and get the lock after it" {
	# With appendfsync always the key survives the crash: the waiters
	# must wait on through the restart for the holder, then get the lock
	# one after the other.
	redis_restart "$SRV" --appendonly yes --appendfsync always
	"$RLOCK" -k "$K" -- sh -c 'while [ ! -e "$T/go" ]; do sleep 0.05; done; touch "$T/h.end"' &
	PIDS+=($!)
	wait_until 5 held "$K"
	waiter w -w "$(tf 30)"
	waiter p
	waiter f --fair -w "$(tf 30)"
	wait_until 5 blocked 3
	redis_restart -9 "$SRV" --appendonly yes --appendfsync always
	[ "$(rcli exists "rlock:{$K}")" = 1 ]
	nap "$(tf 1.5)"
	# Nobody got in while the holder held it.
	[ ! -e "$T/w.st" ] && [ ! -e "$T/p.st" ] && [ ! -e "$T/f.st" ]
	touch "$T/go"
	wait_until 20 done_all w p f
	ran w p f
}

# Issue 34: after a restart with AOF, the README's deploy queue ran d1 d2
# d3 d7 d8 d9 d10 d5 d6 d4: the waiters that came back first passed over
# those nobody heard yet (their subscriptions went with the old process),
# who joined again at the back. Here the head and one in the middle are
# stopped through the restart and go on only once another one is back:
# the queue must be as it was, and served in order.
@test "weather: a --fair queue keeps its order through a restart with AOF, the last ones back included" {
	local i q
	redis_restart "$SRV" --appendonly yes --appendfsync always
	"$RLOCK" -k "$K" -- sh -c 'while [ ! -e "$T/go" ]; do sleep 0.05; done' &
	PIDS+=($!)
	wait_until 5 held "$K"
	for i in 1 2 3 4 5 6; do
		waiter "d$i" --fair -w "$(tf 60)"
		wait_until 5 qlen_is "$i" || fail "d$i not queued"
	done
	q=$(rcli lrange "rlock:{$K}:q" 0 -1)
	kill -STOP "$(cat "$T/d1.pid")" "$(cat "$T/d4.pid")"
	redis_restart -9 "$SRV" --appendonly yes --appendfsync always
	wait_until 10 subscribed 1 || fail "none back: $(rcli client list)"
	kill -CONT "$(cat "$T/d1.pid")" "$(cat "$T/d4.pid")"
	wait_until 10 subscribed 6 || fail "not back: $(rcli client list)"
	[ "$(rcli lrange "rlock:{$K}:q" 0 -1)" = "$q" ] ||
		fail "the queue was $q, now $(rcli lrange "rlock:{$K}:q" 0 -1)"
	touch "$T/go"
	wait_until 30 done_all d1 d2 d3 d4 d5 d6
	ran d1 d2 d3 d4 d5 d6
	order_is d1 d2 d3 d4 d5 d6
	[ -z "$(keys_without_ttl)" ]
}

# The grace a restart gives (its waiters have yet to subscribe again) is
# no refuge for a dead one: a head SIGKILLed while the server was down is
# passed over once the grace is over (3 s from the first one back), well
# before its turn (6 s), and the others keep their order.
@test "weather: a --fair head killed while Redis was down is passed over soon after the restart" {
	local i t0 t1
	redis_restart "$SRV" --appendonly yes --appendfsync always
	"$RLOCK" -k "$K" -- sh -c 'while [ ! -e "$T/go" ]; do sleep 0.05; done' &
	PIDS+=($!)
	wait_until 5 held "$K"
	for i in 1 2 3; do
		waiter "d$i" --fair -w "$(tf 60)"
		wait_until 5 qlen_is "$i" || fail "d$i not queued"
	done
	# Frozen first, so that it never sees d1's socket close.
	kill -STOP "$(cat "$REDIS_PIDFILE")"
	kill -KILL "$(cat "$T/d1.pid")"
	redis_restart -9 "$SRV" --appendonly yes --appendfsync always
	wait_until 10 subscribed 2 || fail "not back: $(rcli client list)"
	t0=$(now_ms)
	touch "$T/go"
	wait_until 30 done_all d2 d3
	t1=$(now_ms)
	ran d2 d3
	order_is d2 d3
	[ ! -e "$T/d1.ran" ]
	[ $((t1 - t0)) -lt "$(tf_ms 5000)" ] ||
		fail "d2 and d3 ran $((t1 - t0)) ms after the holder"
	[ -z "$(keys_without_ttl)" ]
}

@test "weather: max clients: none of 16 -w waiters exits 69 while the server answered; all run" {
	rcli config set maxclients 6 > /dev/null
	"$RLOCK" -k "$K" -- sh -c 'while [ ! -e "$T/go" ]; do sleep 0.05; done' &
	PIDS+=($!)
	wait_until 5 held "$K"
	local i names=()
	for i in $(seq 1 16); do
		waiter "m$i" -w "$(tf 40)"
		names+=("m$i")
	done
	nap "$(tf 1)"
	touch "$T/go"
	wait_until 40 done_all "${names[@]}"
	ran "${names[@]}"
}

@test "weather: BUSY (a runaway script): a -w 5 waiter rides it out and gets the lock after SCRIPT KILL" {
	rcli config set busy-reply-threshold 50 > /dev/null
	rcli eval 'while true do end' 0 > /dev/null 2>&1 &
	PIDS+=($!)
	wait_until 5 sh -c "redis-cli -s '$REDIS_SOCK' ping 2>&1 | grep -q BUSY"
	waiter b -v -w "$(tf 5)"
	wait_until 5 grep -q BUSY "$T/b.err"
	nap 0.3
	[ ! -e "$T/b.st" ]
	rcli script kill
	wait_until 5 done_all b
	ran b
}

@test "weather: LOADING at the first contact of a -w run: it waits for the load and gets the lock" {
	# 1500 keys at 2 ms each: the server answers LOADING for 3 s.
	local i
	for i in $(seq 1 1500); do echo "SET fill:$i x"; done | rcli > /dev/null
	rcli save > /dev/null
	redis_stop "$SRV"
	redis-server --port "$REDIS_PORT" --bind 127.0.0.1 \
		--unixsocket "$REDIS_SOCK" --unixsocketperm 700 \
		--save '' --appendonly no --dir "${REDIS_SOCK%/*}" \
		--daemonize yes --pidfile "$REDIS_PIDFILE" \
		--logfile "${REDIS_SOCK%/*}/log" \
		--key-load-delay 2000 --loading-process-events-interval-bytes 1024
	wait_until 5 sh -c "redis-cli -s '$REDIS_SOCK' ping 2>&1 | grep -q LOADING"
	waiter l -v -w "$(tf 20)"
	wait_until 20 done_all l
	ran l
	grep -q 'LOADING' "$T/l.err"
}

# bounded LIMIT_MS RLOCK-ARGS...: rlock against paused writes exits 69
# within LIMIT_MS (scaled). The limit is the contract's (Bounds: DUR + 1 s
# for -w, --connect-timeout + 1 s for an attempt) plus 500 ms for a
# loaded machine to schedule us: rlock's own work is a few ms, and what
# was seen before the bound was kept overshot by seconds.
bounded() {
	local limit t0 t1
	limit=$(tf_ms "$1")
	shift
	t0=$(now_ms)
	run -69 --separate-stderr timeout 30 "$RLOCK" -k "$K" "$@" -- true
	t1=$(now_ms)
	[ $((t1 - t0)) -lt "$limit" ] ||
		fail "took $((t1 - t0)) ms (limit $limit): $stderr"
	[[ $stderr =~ ^rlock:\ cannot\ reach ]] || fail "stderr: $stderr"
}

@test "weather: a first contact that gets no answer at all is tried again under -w, and gets the lock" {
	# Every command held back, the login's PING too: the first contact
	# times out, and the wait tries again until the pause ends.
	rcli client pause "$(tf_ms 2000)" all > /dev/null
	waiter f -w "$(tf 10)" --connect-timeout "$(tf 0.5)" -v
	wait_until "$(tf 20)" done_all f || fail "still waiting: $(cat "$T/f.err")"
	ran f
	grep -q 'no answer within' "$T/f.err" || fail "no silent try: $(cat "$T/f.err")"
	# Nothing of the first try's token stays behind: not the lock, not
	# a key without a TTL.
	[ "$(rcli exists "rlock:{$K}")" = 0 ]
	[ -z "$(keys_without_ttl)" ]
}

@test "bounds: -w 3 against paused writes exits 69 within 3 s + 1 s; -w 1 within 2 s" {
	rcli client pause "$(tf_ms 30000)" write
	bounded $((3000 + 1000 + 500)) -w "$(tf 3)"
	bounded $((1000 + 1000 + 500)) -w "$(tf 1)"
	rcli client unpause
	# The attempts and their undo left nothing behind.
	nap 0.2
	[ "$(rcli exists "rlock:{$K}")" = 0 ]
	[ -z "$(keys_without_ttl)" ]
}

@test "bounds: --connect-timeout 2s -w 3 against paused writes exits within 4 s" {
	rcli client pause "$(tf_ms 30000)" write
	bounded $((3000 + 1000 + 500)) --connect-timeout "$(tf 2)" -w "$(tf 3)"
}

@test "bounds: -n and a run without -w against paused writes exit within --connect-timeout + 1 s" {
	rcli client pause "$(tf_ms 30000)" write
	bounded $((2000 + 1000 + 500)) --connect-timeout "$(tf 2)" -n
	bounded $((2000 + 1000 + 500)) --connect-timeout "$(tf 2)"
}

@test "weather: -w DUR that runs out while Redis is down: 69, saying since when; refused at the first contact: 69 at once" {
	"$RLOCK" -k "$K" -- sh -c 'while [ ! -e "$T/go" ]; do sleep 0.05; done' &
	PIDS+=($!)
	wait_until 5 held "$K"
	waiter d -w "$(tf 2)"
	wait_until 5 blocked 1
	redis_stop "$SRV"
	wait_until 10 done_all d || fail "still waiting: $(cat "$T/d.err")"
	[ "$(cat "$T/d.st")" = 69 ] || fail "exit $(cat "$T/d.st"): $(cat "$T/d.err")"
	grep -q '(unreachable since [0-9:]*, for ' "$T/d.err" ||
		fail "stderr: $(cat "$T/d.err")"
	# A URL that never worked is most likely wrong: no retry. (The
	# server's port is in this file's class: no other file takes it.)
	RLOCK_URL=redis://127.0.0.1:$REDIS_PORT run -69 --separate-stderr \
		timeout 5 "$RLOCK" -k "$K" -w 30 -- true
	[[ $stderr =~ Connection\ refused ]] || fail "stderr: $stderr"
}

# redis_crash: SIGKILL the test's server and wait until it is gone (a
# clean shutdown can take seconds to end the process).
redis_crash() {
	local pid
	pid=$(cat "$REDIS_PIDFILE")
	grep -q redis /proc/"$pid"/cmdline 2>/dev/null || return 1
	kill -KILL "$pid"
	wait_until 5 pid_gone "$pid"
}

# holder_until_go RLOCK-ARGS...: a holder of KEY in the background whose
# COMMAND waits for $T/go, notes its end ($T/h.end) and exits 3; its
# stderr in $T/h.err, its pid in $H.
holder_until_go() {
	"$RLOCK" -k "$K" "$@" -- sh -c 'while [ ! -e "$T/go" ]; do
	    sleep 0.05; done; touch "$T/h.end"; exit 3' 2> "$T/h.err" &
	H=$!
	PIDS+=($H)
	wait_until 5 held "$K"
}

# taker NAME RLOCK-ARGS...: a waiter (as waiter does) whose COMMAND
# also saves `status --json KEY` as it holds KEY ($T/NAME.json): the
# last run recorded is then the one before its own.
taker() {
	local name=$1
	shift
	( st=0; "$RLOCK" -k "$K" "$@" -- sh -c '"$1" status --json "$2" \
		> "$T/$0.json" && touch "$T/$0.ran"' "$name" "$RLOCK" "$K" \
		2> "$T/$name.err" || st=$?; echo "$st" > "$T/$name.st" ) &
	PIDS+=($!)
}

# handed_on: the taker w got KEY from the holder's release, which
# waited out the weather: the holder exits with COMMAND's status (3),
# said once that it tries again and then that it released, and w saw
# the holder's run recorded.
handed_on() {
	wait_until 10 done_all w
	ran w
	wait_until 5 pid_gone "$H" || fail "holder still runs: $(cat "$T/h.err")"
	local rc=0
	wait "$H" || rc=$?
	[ "$rc" = 3 ] || fail "holder: exit $rc: $(cat "$T/h.err")"
	[ "$(grep -c "cannot release '$K' yet" "$T/h.err")" = 1 ] ||
		fail "holder: $(cat "$T/h.err")"
	grep -q "^rlock: released '$K' after " "$T/h.err" ||
		fail "holder: $(cat "$T/h.err")"
	jq -e '.[0].last_run | .exit_status == 3 and .lease_lost == false' \
		"$T/w.json" || fail "status: $(cat "$T/w.json")"
}

# The holder's lease is 15 s, renewed every 5 s: at COMMAND's end at
# least 10 s of it are left. A taker with -w 5 s that starts once the
# weather is over, 2 s later, gives up before that lease ends: it gets
# KEY only if the release waited for the weather and went through.

@test "release: COMMAND ends while Redis is down, back 2 s later with AOF: the lock passes on at once, the run is recorded" {
	redis_restart "$SRV" --appendonly yes --appendfsync always
	holder_until_go -l "$(tf 15)"
	redis_crash
	touch "$T/go"
	wait_until 5 test -e "$T/h.end"
	nap "$(tf 2)"
	redis_restart "$SRV" --appendonly yes --appendfsync always
	taker w -w "$(tf 5)"
	handed_on
}

@test "release: COMMAND ends while a script runs BUSY: after SCRIPT KILL the lock passes on at once, the run is recorded" {
	rcli config set busy-reply-threshold 50 > /dev/null
	holder_until_go -l "$(tf 15)"
	rcli eval 'while true do end' 0 > /dev/null 2>&1 &
	PIDS+=($!)
	wait_until 5 sh -c "redis-cli -s '$REDIS_SOCK' ping 2>&1 | grep -q BUSY"
	touch "$T/go"
	wait_until 5 test -e "$T/h.end"
	nap "$(tf 2)"
	rcli script kill > /dev/null
	taker w -w "$(tf 5)"
	handed_on
}

@test "release: --min-hold's release meets BUSY: after SCRIPT KILL it keeps KEY to the hold's end only, the run is recorded" {
	rcli config set busy-reply-threshold 50 > /dev/null
	holder_until_go -l "$(tf 15)" --min-hold "$(tf 4)"
	rcli eval 'while true do end' 0 > /dev/null 2>&1 &
	PIDS+=($!)
	wait_until 5 sh -c "redis-cli -s '$REDIS_SOCK' ping 2>&1 | grep -q BUSY"
	touch "$T/go"
	wait_until 5 test -e "$T/h.end"
	nap "$(tf 2)"
	rcli script kill > /dev/null
	# Released with the hold's end as KEY's expiry, not the lease's.
	wait_until 5 pid_gone "$H" || fail "holder still runs: $(cat "$T/h.err")"
	[ "$(rcli pttl "rlock:{$K}")" -le "$(tf_ms 4000)" ] ||
		fail "PTTL $(rcli pttl "rlock:{$K}")"
	taker w -w "$(tf 5)"
	handed_on
}

@test "release: Redis never comes back: the release is retried until the lease's end, then rlock exits with COMMAND's status" {
	local t0 dt
	holder_until_go -l "$(tf 3)"
	redis_crash
	touch "$T/go"
	wait_until 5 test -e "$T/h.end"
	t0=$(now_ms)
	wait_until 6 pid_gone "$H" || fail "holder still runs: $(cat "$T/h.err")"
	dt=$(( $(now_ms) - t0 ))
	local rc=0
	wait "$H" || rc=$?
	echo "# COMMAND's end to rlock's exit: ${dt}ms" >&3
	[ "$rc" = 3 ] || fail "holder: exit $rc: $(cat "$T/h.err")"
	# The last extend was at most a third of the lease old: tried on
	# for 2/3 of the lease at least, and not past its end (plus the
	# retries' spacing, for a loaded machine).
	[ "$dt" -ge "$(tf_ms 1500)" ] && [ "$dt" -lt "$(tf_ms 4000)" ] ||
		fail "exit after ${dt}ms: $(cat "$T/h.err")"
	[ "$(grep -c "cannot release '$K' yet" "$T/h.err")" = 1 ] ||
		fail "holder: $(cat "$T/h.err")"
	grep -q "^rlock: warning: could not release '$K' in .* of trying: .*lease ends now" \
		"$T/h.err" || fail "holder: $(cat "$T/h.err")"
}
