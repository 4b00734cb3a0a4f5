#!/usr/bin/env bats
# Waiting: --fair order and its queue (dead and impatient waiters, plain
# waiters that must not jump it), -N semaphores, mixed-mode refusal, the
# wait line on a terminal, and wake-ups by Redis (BLPOP / pub/sub) rather
# than polling. Every wait is bounded; timings are checked as windows
# measured from the event that should cause them.

load helper

setup_file() {
	redis_start main
}

teardown_file() {
	redis_stop main
}

setup() {
	per_test wait
	# hold.sh: COMMAND of a holder. Notes its pid, holds until $T/go
	# exists, notes when it ended (ms).
	cat > "$T/hold.sh" <<-'EOF'
	echo $$ > "$T/hold.pid"
	while [ ! -e "$T/go" ]; do sleep 0.02; done
	date +%s%3N > "$T/hold.end"
	EOF
	# mark.sh NAME: COMMAND of a waiter. Appends NAME to $T/order and
	# notes when it started (ms) in $T/NAME.start. The start is renamed
	# into place last: tests wait for it to exist, then read it and the
	# order, and a file the shell has created is empty until date writes.
	cat > "$T/mark.sh" <<-'EOF'
	t=$(date +%s%3N)
	echo "$1" >> "$T/order"
	echo "$t" > "$T/$1.start.part"
	mv "$T/$1.start.part" "$T/$1.start"
	EOF
}

teardown() {
	local f
	end_test_procs
	rcli --scan --pattern "$L*" | while IFS= read -r f; do
		rcli del "$f" > /dev/null
	done
	return 0
}

# holder [RLOCK-ARGS...]: hold $K (until $T/go) in the background; pid
# in $HOLDER. Returns once COMMAND runs.
holder() {
	bg holder "$@" -k "$K" -- sh "$T/hold.sh"
	HOLDER=$BG
	wait_ms 5000 test -s "$T/hold.pid" || fail "holder did not start"
}

# end_holder: let the holder's COMMAND finish; wait for rlock to exit 0.
end_holder() {
	touch "$T/go"
	reap "$HOLDER" 3000
	[ "$RC" = 0 ] || fail "holder: status $RC: $(cat "$T/holder.err")"
}

qlen() { rcli llen "$L:q"; }
qlen_is() { [ "$(qlen)" = "$1" ]; }
exists() { [ "$(rcli exists "$1")" = 1 ]; }
commands() {
	rcli info stats | tr -d '\r' | sed -n 's/^total_commands_processed://p'
}
start_of() { cat "$T/$1.start"; }
# reap_ok NAME PID MS: reap rlock NAME (reap), which must exit 0.
reap_ok() {
	reap "$2" "$3"
	[ "$RC" = 0 ] || fail "$1: status $RC: $(cat "$T/$1.err")"
}
# order_is NAME...: the COMMANDs (mark.sh) ran in this order.
order_is() {
	[ "$(cat "$T/order")" = "$(printf '%s\n' "$@")" ] ||
		fail "order: $(tr '\n' ' ' < "$T/order")"
}
ran_is() { [ -e "$T/order" ] && [ "$(wc -l < "$T/order")" = "$1" ]; }
# fair_waiter NAME N: a --fair waiter NAME (pid in $BG), its COMMAND
# mark.sh NAME, once it is the N-th in the queue.
fair_waiter() {
	bg "$1" --fair -k "$K" -- sh "$T/mark.sh" "$1"
	wait_until 5 qlen_is "$2" || fail "$1 not queued"
}

@test "--fair: waiters get the lock in arrival order; the queue is cleaned up" {
	local i
	holder
	for i in 1 2 3 4 5 6; do
		wait_until 5 qlen_is $((i - 1)) ||
			fail "queue has $(qlen) entries, want $((i - 1))"
		bg "w$i" --fair -k "$K" -- sh "$T/mark.sh" "$i"
		eval "W$i=\$BG"
	done
	wait_until 5 qlen_is 6 || fail "queue has $(qlen) entries, want 6"
	[ ! -e "$T/order" ] || fail "a waiter ran while held: $(cat "$T/order")"
	end_holder
	for i in 1 2 3 4 5 6; do
		eval "reap \$W$i 5000"
		[ "$RC" = 0 ] || fail "waiter $i: status $RC: $(cat "$T/w$i.err")"
	done
	[ "$(cat "$T/order")" = "$(printf '%s\n' 1 2 3 4 5 6)" ] ||
		fail "order: $(tr '\n' ' ' < "$T/order")"
	# The last one in line took the queue with it.
	run rcli pttl "$L:q"
	[ "$output" = -2 ] || [ "$output" -ge 0 ] || fail "queue pttl $output"
	run rcli hkeys "$L:w"
	assert_output ''
	run keys_without_ttl
	assert_output ''
}

# A dead head is seen at once (its wake channel has no subscriber), not
# when its turn runs out (6 s): the release hands on to B.
@test "--fair: a SIGKILLed queue head does not delay the next one" {
	local a b end
	holder
	fair_waiter a 1
	a=$BG
	fair_waiter b 2
	b=$BG
	kill -KILL "$a"
	reap "$a" 2000
	end_holder
	end=$(cat "$T/hold.end")
	wait_ms 9000 test -e "$T/b.start" ||
		fail "B still waiting $(( $(now_ms) - end ))ms after the holder"
	reap "$b" 3000
	[ "$RC" = 0 ] || fail "B: status $RC: $(cat "$T/b.err")"
	[ ! -e "$T/a.start" ] || fail "the killed waiter's COMMAND ran"
	[ "$(cat "$T/order")" = b ]
	[ $(( $(start_of b) - end )) -lt $(tf_ms 2000) ] ||
		fail "B started $(( $(start_of b) - end ))ms after the holder"
	run rcli hkeys "$L:w"
	assert_output ''
	run keys_without_ttl
	assert_output ''
}

# The dead waiter is second in line: after the head's turn it becomes the
# head, and the release must pass it over (its :w key still alive, its
# wake channel without a subscriber) rather than leave the live one behind
# it asleep until the first holder's lease (30 s) ends.
@test "--fair: a SIGKILLed waiter in mid-queue does not block those behind" {
	local a d b end
	holder
	fair_waiter a 1
	a=$BG
	fair_waiter d 2
	d=$BG
	fair_waiter b 3
	b=$BG
	kill -KILL "$d"
	reap "$d" 2000
	end_holder
	end=$(cat "$T/hold.end")
	reap "$a" 3000
	[ "$RC" = 0 ] || fail "A: status $RC: $(cat "$T/a.err")"
	wait_ms 9000 test -e "$T/b.start" ||
		fail "B still waiting $(( $(now_ms) - end ))ms after the holder"
	reap "$b" 3000
	[ "$RC" = 0 ] || fail "B: status $RC: $(cat "$T/b.err")"
	[ ! -e "$T/d.start" ] || fail "the killed waiter's COMMAND ran"
	[ "$(cat "$T/order")" = "$(printf '%s\n' a b)" ] ||
		fail "order: $(tr '\n' ' ' < "$T/order")"
	# A's hand-off, not the end of D's turn (6 s).
	[ $(( $(start_of b) - $(start_of a) )) -lt $(tf_ms 2000) ] ||
		fail "B started $(( $(start_of b) - $(start_of a) ))ms after A"
}

# Scripts take a queued waiter without a subscriber for dead (that is how
# a killed one is passed over at once), so a live one must never be queued
# before it listens.
@test "--fair: a waiter subscribes before it joins the queue" {
	local ta sub push
	holder
	# Ended by teardown, by its pid.
	redis-cli -s "$REDIS_SOCK" monitor > "$T/monitor" 3>&- &
	PIDS+=("$!")
	wait_ms 5000 test -s "$T/monitor" || fail "no MONITOR"
	bg a --fair -k "$K" -- true
	wait_until 5 qlen_is 1 || fail "A not queued"
	ta=$(rcli lindex "$L:q" 0)
	rcli ping > /dev/null	# the last line MONITOR shows us
	wait_ms 5000 grep -qi '"ping"' "$T/monitor" || fail "MONITOR lags"
	sub=$(grep -ni "\"s\?subscribe\" \"$L:wake:$ta\"" "$T/monitor" |
		head -1 | cut -d: -f1)
	push=$(grep -ni "\"rpush\" \"$L:q\" \"$ta\"" "$T/monitor" |
		head -1 | cut -d: -f1)
	[ -n "$sub" ] && [ -n "$push" ] || fail "$(cat "$T/monitor")"
	[ "$sub" -lt "$push" ] ||
		fail "queued (line $push) before subscribed (line $sub)"
}

# A release wakes the --fair head to try, and the one after it (B) only to
# look: B's attempt right after the release would reach Redis ahead of or
# beside the head's, and slow every hand-off. B still looks, within
# HANDOFF_LOOK_MS (200 ms), for a head that does not take its turn. Read
# by MONITOR: from the release's message to B to B's first acquire after.
@test "--fair: a release wakes the head to try and the one after it to look later" {
	local a b ta tb na nb rel first dt
	holder
	bg a --fair -k "$K" -- sh -c \
	    'touch "$T/a.in"; while [ ! -e "$T/go2" ]; do sleep 0.02; done'
	a=$BG
	wait_until 5 qlen_is 1 || fail "A not queued"
	ta=$(rcli lindex "$L:q" 0)
	fair_waiter b 2
	b=$BG
	tb=$(rcli lindex "$L:q" 1)
	# Ended by teardown, by its pid.
	redis-cli -s "$REDIS_SOCK" monitor > "$T/monitor" 3>&- &
	PIDS+=("$!")
	wait_ms 5000 test -s "$T/monitor" || fail "no MONITOR"
	end_holder
	wait_ms 5000 test -e "$T/a.in" || fail "A did not get the lock"
	# B's look: 200 ms after the release, or later on a busy machine.
	wait_ms 5000 grep -q "\"EVALSHA\".*\"$tb\"" "$T/monitor" ||
		fail "B never looked"
	rel=$(grep -i "\"spublish\" \"$L:wake:$tb\"" "$T/monitor" | head -1 |
		cut -d' ' -f1)
	first=$(grep "\"EVALSHA\".*\"$tb\"" "$T/monitor" | head -1 |
		cut -d' ' -f1)
	[ -n "$rel" ] && [ -n "$first" ] || fail "$(cat "$T/monitor")"
	dt=$(awk -v a="$rel" -v b="$first" 'BEGIN { printf "%d", (b - a) * 1000 }')
	echo "# B's first attempt ${dt}ms after the release woke it" >&3
	[ "$dt" -ge 150 ] || fail "B tried ${dt}ms after the release"
	# B is told first: Redis writes to the client it told last first,
	# so the head's message leaves before B's (queue.lua). What MONITOR
	# shows is the order of the publishes, not of the writes.
	nb=$(grep -in "\"spublish\" \"$L:wake:$tb\"" "$T/monitor" | head -1 |
		cut -d: -f1)
	na=$(grep -in "\"spublish\" \"$L:wake:$ta\"" "$T/monitor" | head -1 |
		cut -d: -f1)
	[ -n "$na" ] && [ -n "$nb" ] && [ "$nb" -lt "$na" ] ||
		fail "the head (line ${na:-none}) told before B (${nb:-none})"
	touch "$T/go2"
	reap "$a" 5000
	[ "$RC" = 0 ] || fail "A: status $RC: $(cat "$T/a.err")"
	reap "$b" 5000
	[ "$RC" = 0 ] || fail "B: status $RC: $(cat "$T/b.err")"
}

# A plain waiter sends its attempt right behind its BLPOP, so Redis runs it
# the moment a release's token unblocks it: the hand-off costs one round
# trip, not two. Seen in Redis: the blocked client has the attempt in its
# query buffer.
queued_behind() {
	local q
	q=$(rcli client list | grep ' flags=b' | grep -v ' name=rlock-holder ' |
		sed -n 's/.* qbuf=\([0-9]*\) .*/\1/p')
	[ "${q:-0}" -gt 0 ]
}

@test "a plain waiter's attempt waits in Redis behind its BLPOP" {
	local w
	holder
	bg w -k "$K" -- sh "$T/mark.sh" w
	w=$BG
	wait_until 5 blocked_is 1 || fail "W not blocked"
	# The BLPOP and the attempt are two writes: wait for the second.
	wait_until 5 queued_behind ||
		fail "nothing waits behind the BLPOP: $(rcli client list)"
	end_holder
	wait_ms 5000 test -e "$T/w.start" || fail "W did not get the lock"
	reap "$w" 3000
	[ "$RC" = 0 ] || fail "W: status $RC: $(cat "$T/w.err")"
	[ "$(rcli exists "$L")" = 0 ] || fail "the lock is left held"
}

# tcp_timers PID: the timer column ("tr") of each of PID's TCP
# sockets, one a line, from /proc/net/tcp (and tcp6, where there is one):
# 02 the keepalive timer is armed, 00 no timer, 01 data unacknowledged.
tcp_timers() {
	local inodes f files=()
	inodes=$(ls -l "/proc/$1/fd" 2>/dev/null |
	    sed -n 's/.*socket:\[\([0-9]*\)\]$/\1/p' | tr '\n' ' ')
	for f in /proc/net/tcp /proc/net/tcp6; do
		[ -r "$f" ] && files+=("$f")
	done
	[ "${#files[@]}" -gt 0 ] || return 0
	awk -v want=" $inodes" 'FNR > 1 && index(want, " " $10 " ") {
	    print substr($6, 1, 2) }' "${files[@]}"
}
# all_keepalive PID N: PID has N TCP sockets or more, every one with
# keepalive.
all_keepalive() {
	local t
	t=$(tcp_timers "$1")
	[ "$(grep -c . <<< "$t")" -ge "$2" ] && ! grep -qvx 02 <<< "$t"
}

# A waiter's connection waits for Redis to speak first (its BLPOP, its
# subscription): only TCP keepalive tells it that the peer vanished (a
# cut network), and keeps a NAT or firewall from dropping it as idle.
@test "a waiter's connection to Redis over TCP has keepalive" {
	local p f u="redis://127.0.0.1:$REDIS_PORT"
	holder
	bg p -u "$u" -k "$K" -- true
	p=$BG
	wait_until 5 blocked_is 1 || fail "the plain waiter is not blocked"
	bg f -u "$u" --fair -k "$K" -- true
	f=$BG
	wait_until 5 qlen_is 1 || fail "the --fair waiter is not queued"
	# The plain waiter's one connection; the --fair one's two (its
	# subscription, and the one its attempts use).
	wait_until 5 all_keepalive "$p" 1 ||
		fail "plain waiter: $(tcp_timers "$p" | tr '\n' ' ')"
	wait_until 5 all_keepalive "$f" 2 ||
		fail "--fair waiter: $(tcp_timers "$f" | tr '\n' ' ')"
	end_holder
	reap_ok p "$p" 5000
	reap_ok f "$f" 5000
}

# Redis runs the attempt behind the BLPOP even while the waiter is stopped
# (^Z): the grant then lapses unused, and another client takes KEY. The
# waiter, continued, must see that and wait on, not end as a lease lost.
meta_pid_is() { [ "$(rcli hget "$L:meta" pid)" = "$1" ]; }

@test "a plain waiter stopped past its grant's lease waits on for KEY" {
	local w o
	holder
	bg w --lease "$(tf_ms 2000)ms" -w 60 -k "$K" -- sh "$T/mark.sh" w
	w=$BG
	wait_until 5 blocked_is 1 || fail "W not blocked"
	wait_until 5 queued_behind ||
		fail "nothing waits behind the BLPOP: $(rcli client list)"
	kill -STOP "$w"
	end_holder
	wait_until 5 meta_pid_is "$w" || fail "the stopped W was not granted KEY"
	# W's lease of 2 s runs out (TIME_FACTOR: W must be seen holding it
	# above); O takes KEY and holds it.
	rm -f "$T/go"
	bg o -w 20 -k "$K" -- sh -c 'sh "$T/mark.sh" o;
	    while [ ! -e "$T/go" ]; do sleep 0.02; done'
	o=$BG
	wait_ms "$(tf_ms 10000)" test -e "$T/o.start" ||
		fail "O did not get the lock"
	kill -CONT "$w"
	# Continued, W must not end: it waits for O.
	sleep 1
	proc_alive "$w" || { reap "$w" 100; fail "W ended: $RC: $(cat "$T/w.err")"; }
	touch "$T/go"
	reap_ok o "$o" 3000
	reap_ok w "$w" 5000
	order_is o w
}

# The attempt behind the BLPOP was sent when the wait began, seconds
# before Redis ran it: --max-hold counts from the grant all the same, not
# from that send (COMMAND would be stopped at once).
@test "--max-hold of a plain waiter counts from its grant, not from its wait" {
	local w t0 t1
	holder
	bg w --max-hold "$(tf 2)" -k "$K" -- sh -c \
	    'date +%s%3N > "$T/w.in"; sleep 30'
	w=$BG
	wait_until 5 blocked_is 1 || fail "W not blocked"
	sleep "$(tf 3)"
	end_holder
	wait_ms 5000 test -s "$T/w.in" || fail "W did not get the lock"
	t0=$(cat "$T/w.in")
	reap "$w" "$(tf_ms 8000)"
	t1=$(now_ms)
	[ "$RC" = 124 ] || fail "W: status $RC: $(cat "$T/w.err")"
	[ $((t1 - t0)) -ge "$(tf_ms 1500)" ] ||
		fail "COMMAND stopped $((t1 - t0))ms after it started"
}

# The head dies during its turn, KEY free: when B was woken with it, A was
# alive and B had to let it go first. B must not sleep until A's turn is
# over (6 s).
@test "--fair: a head SIGKILLed during its turn, KEY free, is passed over soon" {
	local a b t0
	holder
	fair_waiter a 1
	a=$BG
	fair_waiter b 2
	b=$BG
	kill -STOP "$a"
	end_holder
	! exists "$L" || fail "lock still held after the holder ended"
	sleep 0.5	# the hand-off held open, not a wait for an event
	[ ! -e "$T/b.start" ] || fail "B overtook a live head"
	t0=$(now_ms)
	kill -KILL "$a"
	reap "$a" 2000
	wait_ms 9000 test -e "$T/b.start" ||
		fail "B still waiting $(( $(now_ms) - t0 ))ms after the kill"
	reap "$b" 3000
	[ "$RC" = 0 ] || fail "B: status $RC: $(cat "$T/b.err")"
	[ ! -e "$T/a.start" ] || fail "the killed waiter's COMMAND ran"
	[ $(( $(start_of b) - t0 )) -lt $(tf_ms 2000) ] ||
		fail "B started $(( $(start_of b) - t0 ))ms after the kill"
	run rcli hkeys "$L:w"
	assert_output ''
}

# A head that is alive but does not take its turn (frozen here; a host
# cut off with its connection hanging open is the same to Redis) is passed
# over once its turn (6 s) is over, without any heartbeat telling: B goes,
# and A, resumed, joins again at the back and is served after B.
@test "--fair: a frozen head is passed over when its turn is over; resumed, it runs last" {
	local a b ta t0 el
	holder
	fair_waiter a 1
	a=$BG
	ta=$(rcli lindex "$L:q" 0)
	fair_waiter b 2
	b=$BG
	kill -STOP "$a"
	end_holder
	t0=$(cat "$T/hold.end")
	wait_ms 12000 test -e "$T/b.start" ||
		fail "B still waiting $(( $(now_ms) - t0 ))ms after the release"
	el=$(( $(start_of b) - t0 ))
	# The turn is 6 s; B looks every 200 ms.
	[ "$el" -ge 5500 ] || fail "B overtook a live head after ${el}ms"
	[ "$el" -lt "$(tf_ms 8000)" ] || fail "B started ${el}ms after the release"
	[[ $(rcli lrange "$L:q" 0 -1) != *"$ta"* ]] || fail "A still queued"
	kill -CONT "$a"
	reap_ok b "$b" 3000
	reap_ok a "$a" 5000
	order_is b a
	run rcli hkeys "$L:w"
	assert_output ''
	run keys_without_ttl
	assert_output ''
}

# A head passed over joins again at the back (here the queue is empty, so
# it is the head again at once) and must get a turn of its own at the next
# release, not the end of the old one. The pass-over is written by hand:
# A's token leaves the queue, and the turn left behind names A with its
# end already past, as when a plain waiter had passed A over and taken the
# lock. Woken, A joins again; frozen, it must keep the lock from the plain
# waiter P for a whole turn (6 s) after the release.
@test "--fair: a head passed over that joins again gets a whole turn of its own" {
	local a p ta past el
	holder
	fair_waiter a 1
	a=$BG
	ta=$(rcli lindex "$L:q" 0)
	past=$(( $(rcli time | head -1) * 1000 - 1000 ))
	rcli lrem "$L:q" 0 "$ta" > /dev/null
	rcli hdel "$L:w" "$ta" > /dev/null
	rcli set "$L:turn" "$ta $past" px 12000 > /dev/null
	rcli spublish "$L:wake:$ta" turn > /dev/null
	wait_until 5 qlen_is 1 || fail "A did not join again"
	kill -STOP "$a"
	bg p -w 20 -k "$K" -- sh "$T/mark.sh" p
	p=$BG
	wait_until 5 blocked_is 1 || fail "P not blocked"
	end_holder
	wait_ms 12000 test -e "$T/p.start" || fail "P never got the lock"
	el=$(( $(start_of p) - $(cat "$T/hold.end") ))
	[ "$el" -ge 5500 ] || fail "P took A's place ${el}ms after the release"
	kill -CONT "$a"
	reap "$p" 3000
	[ "$RC" = 0 ] || fail "P: status $RC: $(cat "$T/p.err")"
	reap "$a" 5000
	[ "$RC" = 0 ] || fail "A: status $RC: $(cat "$T/a.err")"
}

# Liveness comes from the subscription and the turn, not a heartbeat: ten
# queued waiters behind a holder cost Redis about nothing while they wait.
@test "--fair: blocked waiters cost Redis almost nothing until a release" {
	local i c0 c1 d
	holder
	for i in 0 1 2 3 4 5 6 7 8 9; do
		wait_until 5 qlen_is "$i" || fail "queue has $(qlen), want $i"
		bg "w$i" --fair -k "$K" -- sh "$T/mark.sh" "w$i"
	done
	wait_until 5 qlen_is 10 || fail "queue has $(qlen), want 10"
	sleep 0.5	# the last one past its subscribing
	c0=$(commands)
	sleep 4	# the measuring window, not a wait for an event
	c1=$(commands)
	d=$(( c1 - c0 - 1 ))	# the second INFO is counted in c1
	echo "# $d commands in 4 s from 10 queued --fair waiters" >&3
	# A refresh of each :w key every 30 s, and the holder's extends.
	[ "$d" -le 8 ] || fail "$d commands in 4 s from 10 --fair waiters"
	end_holder
	wait_ms 8000 ran_is 10 || fail "only $(wc -l < "$T/order") of 10 ran"
}

# A waiter's wake-up connection drops (CLIENT KILL; a restart or a proxy
# would do the same): until it subscribes again it counts as dead and may
# lose its place, but it re-joins and is served. A is frozen meanwhile, so
# B, which reconnects at once, goes first.
@test "--fair: a waiter that loses its wake-up connection re-joins and is served" {
	local a b tb
	holder
	fair_waiter a 1
	a=$BG
	fair_waiter b 2
	b=$BG
	tb=$(rcli lindex "$L:q" 1)
	kill -STOP "$a"
	rcli client kill type pubsub > /dev/null
	head_is_b() { [ "$(rcli lrange "$L:q" 0 -1)" = "$tb" ]; }
	wait_until 5 head_is_b || fail "queue: $(rcli lrange "$L:q" 0 -1)"
	end_holder
	wait_ms 3000 test -e "$T/b.start" || fail "B did not get the lock"
	kill -CONT "$a"
	reap_ok b "$b" 3000
	reap_ok a "$a" 5000
	order_is b a
	run rcli hkeys "$L:w"
	assert_output ''
	run keys_without_ttl
	assert_output ''
}

@test "--fair -w: a waiter that gives up leaves the queue at once, exits 75" {
	local a b ta q
	holder
	# Long enough for B to start and queue behind it.
	bg a --fair -w "$(tf 1)" -k "$K" -- sh "$T/mark.sh" a
	a=$BG
	wait_until 5 qlen_is 1 || fail "A not queued"
	ta=$(rcli lindex "$L:q" 0)
	[ "$(rcli hexists "$L:w" "$ta")" = 1 ] || fail "A has no entry in :w"
	fair_waiter b 2
	b=$BG
	reap "$a" 3000
	[ "$RC" = 75 ] || fail "A: status $RC: $(cat "$T/a.err")"
	# At once: no waiting for its :w key to lapse.
	q=$(rcli lrange "$L:q" 0 -1)
	[[ $q != *"$ta"* ]] || fail "A's token still queued: $q"
	[ "$(rcli hexists "$L:w" "$ta")" = 0 ] || fail "A's entry in :w still there"
	[ "$(wc -l < "$T/a.err")" = 1 ] || fail "stderr: $(cat "$T/a.err")"
	grep -q "^rlock: .*'$K'" "$T/a.err" || fail "stderr: $(cat "$T/a.err")"
	[ ! -e "$T/a.start" ] || fail "A's COMMAND ran"
	# B, now first, is not delayed by A.
	end_holder
	reap "$b" 3000
	[ "$RC" = 0 ] || fail "B: status $RC: $(cat "$T/b.err")"
	[ $(( $(start_of b) - $(cat "$T/hold.end") )) -lt "$(tf_ms 1000)" ] ||
		fail "B started $(( $(start_of b) - $(cat "$T/hold.end") ))ms late"
}

@test "plain waiters do not jump ahead of a live --fair queue" {
	local a b p ta
	holder
	fair_waiter a 1
	a=$BG
	ta=$(rcli lindex "$L:q" 0)
	fair_waiter b 2
	b=$BG
	bg p -k "$K" -- sh "$T/mark.sh" p
	p=$BG
	wait_until 5 blocked_is 1 || fail "plain waiter not blocked"
	# Freeze the head: the lock is free, the queue's head alive but slow
	# to take its turn — the moment of a hand-off, held open. Its turn
	# (6 s, not scaled) outlasts what follows.
	kill -STOP "$a"
	end_holder
	! exists "$L" || fail "lock still held after the holder ended"
	[ "$(rcli hexists "$L:w" "$ta")" = 1 ] || fail "A's entry in :w lapsed too early"
	run -75 --separate-stderr "$RLOCK" -n -k "$K" -- sh "$T/mark.sh" n
	[ "${#lines[@]}" = 0 ]
	[[ $stderr == "rlock: "* ]] && [[ $stderr != *$'\n'* ]] ||
		fail "stderr: $stderr"
	run -75 --separate-stderr "$RLOCK" -w 0.3 -k "$K" -- sh "$T/mark.sh" n
	[ "$(rcli lindex "$L:q" 0)" = "$ta" ] ||
		fail "A's turn ran out: test inconclusive"
	[ ! -e "$T/order" ] || fail "jumped the queue: $(cat "$T/order")"
	kill -CONT "$a"
	reap "$a" 3000
	[ "$RC" = 0 ] || fail "A: status $RC"
	reap "$b" 3000
	[ "$RC" = 0 ] || fail "B: status $RC"
	reap "$p" 8000
	[ "$RC" = 0 ] || fail "P: status $RC"
	[ "$(cat "$T/order")" = "$(printf '%s\n' a b p)" ] ||
		fail "order: $(tr '\n' ' ' < "$T/order")"
}

@test "-N 3: at most 3 holders at once, and 3 are reached" {
	local i pids=() S=sem$BATS_TEST_NUMBER
	L="rlock:{$S}"
	echo 0 > "$T/cur"
	echo 0 > "$T/max"
	# job.sh ROUNDS SECONDS: count ourselves in (under flock), note the
	# maximum, hold until 3 were seen together (at most ROUNDS x 20 ms)
	# and SECONDS more, count out.
	cat > "$T/job.sh" <<-'EOF'
	exec 9> "$T/c.lock"
	flock 9
	n=$(( $(cat "$T/cur") + 1 ))
	echo $n > "$T/cur"
	[ $n -le "$(cat "$T/max")" ] || echo $n > "$T/max"
	echo ran >> "$T/ran"
	flock -u 9
	i=0
	while [ "$(cat "$T/max")" -lt 3 ] && [ $i -lt "$1" ]; do
		sleep 0.02
		i=$((i + 1))
	done
	sleep "$2"
	flock 9
	echo $(( $(cat "$T/cur") - 1 )) > "$T/cur"
	flock -u 9
	EOF
	for i in 1 2 3 4 5 6 7 8; do
		bg "j$i" -N 3 -k "$S" -- sh "$T/job.sh" \
		    $(( $(tf_ms 1000) / 20 )) "$(tf 0.3)"
		pids+=("$BG")
	done
	for i in 0 1 2 3 4 5 6 7; do
		reap "${pids[$i]}" 15000
		[ "$RC" = 0 ] || fail "job $i: status $RC: $(cat "$T/j$((i + 1)).err")"
	done
	[ "$(wc -l < "$T/ran")" = 8 ] || fail "$(wc -l < "$T/ran") jobs ran"
	[ "$(cat "$T/max")" = 3 ] || fail "max concurrency $(cat "$T/max")"
	[ "$(cat "$T/cur")" = 0 ]
	! exists "$L:sem" || fail ":sem still there"
	! exists "$L:limit" || fail ":limit still there"
	run keys_without_ttl
	assert_output ''
}

# refused ARGS...: rlock ARGS on $K exits 76 with one line naming the key
# and the mismatch, and never runs COMMAND.
refused() {
	run -76 --separate-stderr "$RLOCK" "$@" -k "$K" -- touch "$T/ran"
	[ "${#lines[@]}" = 0 ]
	[[ $stderr == "rlock: "*"'$K'"*"limit"* ]] || fail "stderr: $stderr"
	[[ $stderr != *$'\n'* ]] || fail "more than one line: $stderr"
	[ ! -e "$T/ran" ] || fail "COMMAND ran"
}

@test "mixing a mutex and -N, or two different -N, on one key: 76" {
	holder -N 3
	refused
	refused -N 2
	refused -n
	# The same -N is fine, at once, next to the holder.
	run -0 "$RLOCK" -n -N 3 -k "$K" -- true
	end_holder
	rm -f "$T/go" "$T/hold.pid"
	holder
	refused -N 2
	refused -N 3 -w 0.5
	end_holder
	run keys_without_ttl
	assert_output ''
}

@test "-N against a key a foreign client holds: 76, saying so (not a --limit mismatch)" {
	rcli set "$L" foreign-token px 20000 >/dev/null
	run -76 --separate-stderr "$RLOCK" -N 2 -k "$K" -- touch "$T/ran"
	[ -z "$output" ]
	[ "$stderr" = "rlock: '$K': the key is held by a client other than rlock (a plain SET NX lock), which --limit cannot share; only a mutex (no --limit) can wait for it" ]
	[ ! -e "$T/ran" ] || fail "COMMAND ran"
	# An rlock mutex holder is still a --limit mismatch.
	rcli del "$L" >/dev/null
	holder
	run -76 --separate-stderr "$RLOCK" -N 2 -k "$K" -- touch "$T/ran"
	[ "$stderr" = "rlock: '$K': the key is in use as a mutex (without --limit); every user of a KEY must give the same --limit" ]
	end_holder
}

@test "-N: a SIGKILLed holder frees its slot when its lease ends; fences increase" {
	local S=sem$BATS_TEST_NUMBER x y z t0 dt f
	L="rlock:{$S}"
	fence() { # NAME: COMMAND that notes its fence, then holds until go.NAME
		printf '%s' "echo \$RLOCK_FENCE > \"\$T/$1.fence\";
		    echo \$\$ > \"\$T/$1.pid\";
		    while [ ! -e \"\$T/go.$1\" ]; do sleep 0.02; done"
	}
	bg x -N 2 -l "$(tf 1)" -k "$S" -- sh -c "$(fence x)"
	x=$BG
	wait_ms 5000 test -s "$T/x.pid" || fail "X did not start"
	bg y -N 2 -l "$(tf 1)" -k "$S" -- sh -c "$(fence y)"
	y=$BG
	wait_ms 5000 test -s "$T/y.pid" || fail "Y did not start"
	run -75 "$RLOCK" -n -N 2 -k "$S" -- true
	bg z -v -N 2 -k "$S" -- sh -c "$(fence z)"
	z=$BG
	# Wait for the state the kill needs, not for a time: on a loaded
	# machine Z's start and first attempt alone can take seconds. First
	# told both slots are taken, then blocked for a release.
	wait_until 30 grep -q "waiting for '$S': all 2 slots taken" \
	    "$T/z.err" || fail "Z did not wait: $(cat "$T/z.err")"
	wait_until 5 blocked_is 1 || fail "Z not blocked: $(cat "$T/z.err")"
	t0=$(now_ms)
	kill -KILL "$x"
	wait_ms 4000 test -s "$T/z.pid" || fail "Z did not get X's slot"
	dt=$(( $(now_ms) - t0 ))
	# X's lease had between ~0.6 and 1 s (scaled) to run when it died.
	[ "$dt" -ge "$(tf_ms 400)" ] ||
		fail "Z got in ${dt}ms after the kill: too soon"
	[ "$dt" -le "$(tf_ms 2500)" ] || fail "Z got in ${dt}ms after the kill"
	grep -q "lease ran out" "$T/z.err" || fail "$(cat "$T/z.err")"
	touch "$T/go.y" "$T/go.z"
	reap "$y" 3000
	[ "$RC" = 0 ]
	reap "$z" 3000
	[ "$RC" = 0 ]
	bg w -N 2 -k "$S" -- sh -c "$(fence w)"
	touch "$T/go.w"
	reap "$BG" 3000
	[ "$RC" = 0 ]
	for f in x y z w; do
		[ -s "$T/$f.fence" ] || fail "no fence for $f"
	done
	[ "$(cat "$T/x.fence")" -lt "$(cat "$T/y.fence")" ] &&
		[ "$(cat "$T/y.fence")" -lt "$(cat "$T/z.fence")" ] &&
		[ "$(cat "$T/z.fence")" -lt "$(cat "$T/w.fence")" ] ||
		fail "fences: $(cat "$T"/[xyzw].fence | tr '\n' ' ')"
	! exists "$L:sem" || fail ":sem still there"
}

@test "wait line: drawn in place on a terminal, cleared before COMMAND" {
	local w out pre who
	holder
	# stdin not a terminal: script gives the pty no size, so the line is
	# not cut to the width of whatever terminal runs the tests.
	timeout "$(tf 10)" \
		script -eqfc "$RLOCK --fair -k $K -- echo CMD-OUTPUT" \
		/dev/null < /dev/null > "$T/pty" 2>&1 3>&- &
	w=$!
	PIDS+=("$w")
	wait_ms 5000 grep -q "1st in queue" "$T/pty" ||
		fail "no wait line: $(cat -v "$T/pty")"
	end_holder
	reap "$w" 5000
	[ "$RC" = 0 ] || fail "status $RC: $(cat -v "$T/pty")"
	out=$(cat "$T/pty")
	who="$(id -un)@$(hostname)"
	[[ $out == $'\r'"rlock: waiting for '$K': held by $who (pid $HOLDER: sh "* ]] ||
		fail "$(cat -v "$T/pty")"
	[[ $out == *CMD-OUTPUT* ]] || fail "no output: $(cat -v "$T/pty")"
	# Never scrolled: no newline before COMMAND's output, and the last
	# thing before it is a bare clear of the line.
	pre=${out%%CMD-OUTPUT*}
	[[ $pre != *$'\n'* ]] || fail "wait line scrolled: $(cat -v "$T/pty")"
	[[ $pre == *$'\r\033[K' ]] || fail "not cleared: $(cat -v "$T/pty")"
	[[ ${pre%$'\r\033[K'} == *$'\033[K' ]] ||
		fail "not cleared: $(cat -v "$T/pty")"
}

@test "wait line: nothing on stderr that is a pipe, or with -q on a terminal" {
	local w
	holder
	# A pipe: waits, gets the lock, says nothing.
	( "$RLOCK" --fair -k "$K" -- sh "$T/mark.sh" p 2>&1 > "$T/p.out" |
		cat > "$T/p.err" ) 3>&- &
	w=$!
	PIDS+=("$w")
	wait_until 5 qlen_is 1 || fail "not queued"
	# -q on a terminal: gives up after 1.2 s (a line is drawn at once and
	# redrawn every second, not scaled), quietly.
	run -75 timeout "$(tf 10)" \
		script -eqfc "$RLOCK -q -w 1.2 -k $K -- true" /dev/null < /dev/null
	[ -z "$output" ] || fail "-q printed: $(printf '%s' "$output" | cat -v)"
	end_holder
	reap "$w" 5000
	[ -e "$T/p.start" ] || fail "COMMAND did not run"
	[ ! -s "$T/p.err" ] || fail "stderr: $(cat -v "$T/p.err")"
}

@test "-v on a pipe: the waiting timeline, one plain line each" {
	holder
	bg v -v --fair -k "$K" -- true
	wait_ms 5000 grep -q "waiting for" "$T/v.err" ||
		fail "no 'waiting for': $(cat "$T/v.err")"
	end_holder
	reap "$BG" 5000
	[ "$RC" = 0 ] || fail "status $RC: $(cat "$T/v.err")"
	grep -q "^rlock: waiting for '$K': held by .*1st in queue" "$T/v.err" ||
		fail "$(cat "$T/v.err")"
	grep -q "^rlock: acquired after [0-9]*ms of waiting (woken by a release)" \
		"$T/v.err" || fail "$(cat "$T/v.err")"
	! grep -q $'[\r\033]' "$T/v.err" || fail "$(cat -v "$T/v.err")"
}

@test "--fair, 2nd in queue: the wait line shows the holder's lease, not the head's heartbeat" {
	local line left
	holder -l 30s
	bg a --fair -k "$K" -- true
	wait_until 5 qlen_is 1 || fail "A not queued"
	bg b -v --fair -k "$K" -- true
	wait_ms 5000 grep -q "2nd in queue" "$T/b.err" ||
		fail "B: $(cat "$T/b.err")"
	line=$(grep "2nd in queue" "$T/b.err" | head -1)
	[[ $line =~ lease\ ([0-9]+)\.[0-9]s\ left\;\ 2nd\ in\ queue$ ]] ||
		fail "line: $line"
	left=${BASH_REMATCH[1]}
	# A 30 s lease taken moments ago; a head's turn is 6 s.
	[ "$left" -ge 20 ] || fail "lease ${left}s left: $line"
	end_holder
	reap "$BG" 5000
}

@test "-v: one 'waiting for' line per holder, on a pipe and on a terminal" {
	local n
	holder
	# A stale wake token (a release before this holder): the waiter tries
	# again at once and finds the same holder, which -v need not repeat.
	rcli lpush "$L:tok" 1 >/dev/null
	rcli pexpire "$L:tok" 5000 >/dev/null
	run -75 --separate-stderr "$RLOCK" -v -w "$(tf 1.2)" -k "$K" -- true
	n=$(grep -c "waiting for '$K'" <<< "$stderr")
	[ "$n" = 1 ] || fail "$n lines: $stderr"
	# On a terminal -v logs; the line redrawn in place would repeat it.
	rcli lpush "$L:tok" 1 >/dev/null
	rcli pexpire "$L:tok" 5000 >/dev/null
	run -75 timeout "$(tf 10)" script -eqfc \
		"$RLOCK -v -w $(tf 1.2) -k $K -- true" /dev/null < /dev/null
	n=$(grep -o "waiting for '$K'" <<< "$output" | wc -l)
	[ "$n" = 1 ] || fail "$n times: $(printf '%s' "$output" | cat -v)"
	! grep -q $'\033' <<< "$output" ||
		fail "line drawn: $(printf '%s' "$output" | cat -v)"
	end_holder
}

# foreign_lock TOKEN: lock $K as redis-py's Lock does (SET NX PX, 30 s).
foreign_lock() { rcli set "$L" "$1" nx px 30000 >/dev/null; }
# foreign_release TOKEN: and release it early, as Lock.release() does.
foreign_release() {
	rcli eval "if redis.call('get', KEYS[1]) == ARGV[1] then
	    return redis.call('del', KEYS[1]) else return 0 end" 1 "$L" "$1" \
	    >/dev/null
}

# foreign_wait COST RLOCK-ARGS...: two waiters (RLOCK-ARGS) on a foreign
# lock cost at most COST commands a second each (at the edges of the
# window, one more; "-": not measured) while it is held, and the first
# starts within about a second of its early release.
foreign_wait() {
	local c0 c1 d win t0 dt cost=$1
	shift
	foreign_lock tok1
	bg w1 "$@" -k "$K" -- sh "$T/mark.sh" w1
	bg w2 "$@" -k "$K" -- sh "$T/mark.sh" w2
	sleep "$(tf 1.5)"	# both past their first attempt
	win=$(tf_ms 4000)
	c0=$(commands)
	sleep "$(tf 4)"	# the measuring window, not a wait for an event
	c1=$(commands)
	d=$(( c1 - c0 - 1 ))	# the second INFO is counted in c1
	echo "# $*: $d commands in ${win}ms from 2 waiters on a foreign lock" >&3
	[ "$cost" = - ] || [ "$d" -le $(( 2 * (cost * win / 1000 + 1) )) ] ||
		fail "$d commands in ${win}ms from 2 waiters"
	t0=$(now_ms)
	foreign_release tok1
	wait_ms 5000 test -s "$T/w1.start" -o -s "$T/w2.start" ||
		fail "nobody started 5 s (scaled) after the release"
	dt=$(( $(cat "$T"/w[12].start 2>/dev/null | sort -n | head -1) - t0 ))
	echo "# $*: release to the first COMMAND start: ${dt}ms" >&3
	[ "$dt" -lt "$(tf_ms 2500)" ] || fail "started ${dt}ms after the release"
	wait_ms 5000 ran_is 2 || fail "the second did not run"
	[ ! -e "$T/w1.err" ] || [ ! -s "$T/w1.err" ] || fail "$(cat "$T/w1.err")"
}

@test "a foreign lock (redis-py's) released early: a plain waiter starts within about a second" {
	foreign_wait 1
}

@test "a foreign lock (redis-py's) released early: a --fair waiter starts within about a second" {
	# The cost is the queue's (the :w refreshes, the one next in line
	# watching the head's turn), not the look's: not measured here.
	foreign_wait - --fair
}

@test "blocked waiters cost Redis nothing until a release; hand-off is prompt" {
	local i c0 c1 d first last
	holder
	for i in 0 1 2 3 4 5 6 7 8 9; do
		bg "w$i" -k "$K" -- sh "$T/mark.sh" "w$i"
	done
	wait_until 10 blocked_is 10 || fail "not all 10 waiters blocked"
	c0=$(commands)
	sleep 2	# the measuring window, not a wait for an event
	c1=$(commands)
	d=$(( c1 - c0 - 1 ))	# the second INFO is counted in c1
	[ "$d" -lt 40 ] || fail "$d commands in 2 s from 10 blocked waiters"
	end_holder
	wait_ms 8000 ran_is 10 ||
		fail "only $(wc -l < "$T/order") of 10 ran"
	first=$(cat "$T"/w*.start | sort -n | head -1)
	last=$(cat "$T"/w*.start | sort -n | tail -1)
	[ $(( first - $(cat "$T/hold.end") )) -lt "$(tf_ms 1000)" ] ||
		fail "first waiter $(( first - $(cat "$T/hold.end") ))ms late"
	# Each later hand-off is a release waking the next one, not a poll.
	[ $(( last - first )) -lt "$(tf_ms 3000)" ] ||
		fail "10 hand-offs took $(( last - first ))ms"
}

@test "a waiter on a SIGKILLed holder gets the lock soon after its lease" {
	local t0 dt
	holder -l "$(tf 1)"
	bg w -v -k "$K" -- sh "$T/mark.sh" w
	wait_until 5 blocked_is 1 || fail "waiter not blocked"
	t0=$(now_ms)
	kill -KILL "$HOLDER"
	wait_ms 5000 test -s "$T/w.start" || fail "waiter did not get the lock"
	dt=$(( $(start_of w) - t0 ))
	[ "$dt" -ge "$(tf_ms 400)" ] ||
		fail "got in ${dt}ms after the kill: before the lease"
	[ "$dt" -le "$(tf_ms 2500)" ] || fail "got in ${dt}ms after the kill"
	reap "$BG" 3000
	[ "$RC" = 0 ] || fail "status $RC: $(cat "$T/w.err")"
	grep -q "acquired after .*(the holder's lease ran out)" "$T/w.err" ||
		fail "$(cat "$T/w.err")"
}
