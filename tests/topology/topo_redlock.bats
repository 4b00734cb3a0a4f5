#!/usr/bin/env bats
# rlock --redlock over independent masters (tests/topology.bash): mutual
# exclusion while masters are SIGKILLed and come back empty, exit 69 below
# a majority, fencing tokens that keep increasing across a master's loss,
# the wake-up on release, status per master, usage errors, and no key
# left without an expiry. Five masters, plus three for the smaller set.
# About 15-20 s.

load ../helper
load ../topology

unset TOPO_PASSWORD TOPO_SENTINEL_PASSWORD

setup_file() {
	# The tests share the masters and look at their whole keyspaces.
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	export TOPO_DIR=$BATS_FILE_TMPDIR/topo
	mkdir -p "$TOPO_DIR"
	masters_up 5
	export M5_PORTS=$MASTERS_PORTS M5_URLS=$MASTERS_URLS
	masters_up 3
	export M3_PORTS=$MASTERS_PORTS M3_URLS=$MASTERS_URLS
	CLOSED_URL=redis://127.0.0.1:$(topo_free_port)
	export CLOSED_URL
}

teardown_file() {
	topo_down
}

BG=()

# use N: the masters_* functions and MASTERS_UARGS act on that set.
use() {
	if [ "$1" = 5 ]; then
		MASTERS_PORTS=$M5_PORTS MASTERS_URLS=$M5_URLS
	else
		MASTERS_PORTS=$M3_PORTS MASTERS_URLS=$M3_URLS
	fi
	masters_uargs
}

setup() {
	topo_load
	T=$BATS_TEST_TMPDIR
	# A master a previous test killed is back, empty, for this one.
	local p
	for p in $M5_PORTS $M3_PORTS; do
		topo_pid "$p" > /dev/null || topo_restart "$p"
	done
	use 5
}

teardown() {
	local p left
	# A master a test stopped answers again.
	for p in $M5_PORTS $M3_PORTS; do
		p=$(topo_pid "$p") && kill -CONT "$p" 2>/dev/null
	done
	[ -e "$T/go" ] || touch "$T/go"
	[ -e "$T/end" ] || touch "$T/end"
	stop_bg "${BG[@]}"
	[ -n "${BATS_TEST_COMPLETED:-}" ] || topo_logs 5 >&3
	[ -z "${LOGGING_ALL:-}" ] || log_all off
	left=$(keys_without_ttl_on $(live_ports))
	[ -z "$left" ] || fail "keys without TTL: $left"
}


live_ports() {
	local p
	for p in $M5_PORTS $M3_PORTS; do
		topo_pid "$p" > /dev/null && echo "$p"
	done
	return 0
}

rl() { "$RLOCK" --redlock "${MASTERS_UARGS[@]}" "$@"; }
nmasters() { wc -w <<< "$MASTERS_PORTS"; }

# KEY is held on at least N masters of the set in use.
held_on_n() {
	local p n=0
	for p in $MASTERS_PORTS; do
		[ "$(topo_cli "$p" exists "rlock:{$1}" 2>/dev/null)" = 1 ] &&
			n=$((n + 1))
	done
	[ "$n" -ge "$2" ]
}

count_at_least() { [ "$(cat "$T/count")" -ge "$1" ] 2>/dev/null; }

# Read-sleep-write of a counter; a second holder at once shows up as a
# failed mkdir. Fences are logged in the order the holders ran.
CS='d=$1
mkdir "$d/cs" 2>/dev/null || echo overlap >> "$d/bad"
v=$(cat "$d/count"); sleep 0.01; echo $((v + 1)) > "$d/count.new"
mv "$d/count.new" "$d/count" 2>/dev/null
echo "$RLOCK_FENCE" >> "$d/fences"
rmdir "$d/cs" 2>/dev/null'

worker() {
	local w=$1 r st
	for ((r = 0; r < 15; r++)); do
		st=0
		timeout -k 1 60 "$RLOCK" --redlock "${MASTERS_UARGS[@]}" \
			-k counter -- sh -c "$CS" sh "$T" || st=$?
		[ "$st" = 0 ] || echo "worker $w, round $r: exit $st" >> "$T/bad"
	done
}

@test "redlock: 5 masters, 2 SIGKILLed during the run, exclusion holds" {
	local w p pids=() at_kill at_back
	echo 0 > "$T/count"
	: > "$T/bad"
	: > "$T/fences"
	for w in 1 2 3 4 5 6 7 8; do
		worker "$w" 3>&- &
		pids+=($!)
		BG+=($!)
	done
	wait_until 20 count_at_least 30 || fail "no progress: $(cat "$T/count")"
	at_kill=$(cat "$T/count")
	masters_kill 0
	masters_kill 1
	# Back empty while others hold on the three that stayed: two fresh
	# masters are no majority for anyone.
	wait_until 20 count_at_least $((at_kill + 30)) ||
		fail "stuck at $(cat "$T/count") with 2 masters down"
	at_back=$(cat "$T/count")
	masters_restart 0
	masters_restart 1
	for p in "${pids[@]}"; do
		wait_until 60 pid_gone "$p" || fail "a worker still runs"
		wait "$p"
	done
	[ ! -s "$T/bad" ] || fail "$(cat "$T/bad")"
	[ "$(cat "$T/count")" = 120 ] || fail "count $(cat "$T/count")"
	[ "$at_back" -lt 110 ] || fail "the run was over by the restart ($at_back)"
	[ "$(wc -l < "$T/fences")" = 120 ]
	sort -n -u -c "$T/fences" || fail "fences out of order"
	echo "# killed at $at_kill, restarted at $at_back of 120" >&3
}

# below_majority N-ARGS...: rlock exits 69 at once, one line naming a
# master that is down, and COMMAND never runs.
below_majority() {
	local t0 el
	t0=$(now_ms)
	run -69 --separate-stderr timeout 10 "$RLOCK" --redlock \
		"${MASTERS_UARGS[@]}" "$@" -k below -- touch "$T/ran"
	el=$(( $(now_ms) - t0 ))
	[ ! -e "$T/ran" ] || fail "COMMAND ran"
	[ -z "$output" ] || fail "stdout: $output"
	[ "${#stderr_lines[@]}" = 1 ] || fail "stderr: $stderr"
	[[ $stderr =~ ^rlock:\ .*only\ [0-9]+\ of\ [35]\ masters.*redis://127\.0\.0\.1:($DOWN)[/:\ ] ]] ||
		fail "stderr: $stderr (want a master of $DOWN)"
	[ "$el" -lt 3000 ] || fail "took ${el}ms"
}

@test "redlock: 3 of 5 down: exit 69 at once (and with -w 1s), COMMAND never runs" {
	masters_kill 2
	masters_kill 3
	masters_kill 4
	DOWN="$(masters_port 2)|$(masters_port 3)|$(masters_port 4)"
	below_majority
	[[ $stderr == *"only 2 of 5"* ]] || fail "stderr: $stderr"
	below_majority -w 1s
	below_majority -n
	run -69 --separate-stderr "$RLOCK" status --redlock \
		"${MASTERS_UARGS[@]}" below
	# 2 of 3 down.
	use 3
	masters_kill 0
	masters_kill 2
	DOWN="$(masters_port 0)|$(masters_port 2)"
	below_majority
	[[ $stderr == *"only 1 of 3"* ]] || fail "stderr: $stderr"
	# One of 3 down is still a majority.
	masters_restart 2
	run -0 rl -k below -- echo ran
	[ "$output" = ran ]
}

# grant: one run of KEY fence; its RLOCK_FENCE appended to $T/fences.
grant() {
	rl -k fence -- sh -c 'echo "$RLOCK_FENCE" >> "$1"' sh "$T/fences" ||
		fail "rlock exit $?"
}

@test "redlock: RLOCK_FENCE strictly increases over grants, also after a master restarted empty" {
	local f1 f2
	: > "$T/fences"
	grant
	grant
	# Masters disagree on the last fence: master 2 is ahead (as if it
	# had granted while the others were down). A holder's fence is then
	# master 2's, and the rest of its majority must learn it.
	f1=$(tail -1 "$T/fences")
	topo_cli "$(masters_port 2)" set 'rlock:{fence}:fence' \
		$((f1 + 1000000000)) px 600000 > /dev/null
	grant
	f2=$(tail -1 "$T/fences")
	[ "$f2" -gt $((f1 + 1000000000)) ] || fail "fence $f2 ignores master 2"
	# Without master 2, the others still give more.
	masters_kill 2
	grant
	grant
	masters_restart 2
	grant
	grant
	masters_kill 0
	masters_restart 0
	grant
	masters_kill 4
	grant
	masters_restart 4
	grant
	[ "$(wc -l < "$T/fences")" = 10 ]
	sort -n -u -c "$T/fences" || fail "fences: $(paste -sd' ' "$T/fences")"
}

# Each master drew its own fence from its own clock, and they differed
# (by a millisecond, on one machine) in a fifth to a half of the grants:
# each such grant wrote the largest back to the others (fence_raise.lua),
# a round trip more before COMMAND. Now the holder proposes one fence to
# all, its clock 50 ms ahead, and masters that agree draw it: the fence is
# at least the test's clock before the run plus 50 ms (the masters share
# our clock), and a run costs each master two scripts (acquire, release),
# not three. One write-back in ten runs is allowed: a master that ran the
# acquire over 50 ms after rlock read its clock (a loaded machine) draws
# its own clock.
@test "redlock: masters draw the fence proposed to them: no write-back when they agree" {
	local p n t f
	rl -k agree -- true || fail "rlock exit $?"
	for p in $MASTERS_PORTS; do
		topo_cli "$p" config resetstat > /dev/null
	done
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		t=$(now_ms)
		f=$(rl -k agree -- sh -c 'echo "$RLOCK_FENCE"') ||
			fail "rlock exit $?"
		[ "$f" -ge $((t + 50)) ] || fail "fence $f, not the proposal"
	done
	for p in $MASTERS_PORTS; do
		n=$(cmdstat "$p" evalsha calls)
		[ "$n" -le 21 ] || fail "master $p ran $n scripts for 10 runs"
	done
}

# N clients are blocked (a waiter's BLPOP on KEY's wake tokens; not a
# holder listening for release --force) on the masters of the set in
# use, all of them together.
blocked_on_masters() {
	local p n=0 b
	for p in $MASTERS_PORTS; do
		b=$(topo_cli "$p" client list 2>/dev/null |
			grep ' flags=[a-zA-Z]*b' | grep -cv ' name=rlock-holder ')
		n=$((n + ${b:-0}))
	done
	[ "$n" -ge "$1" ]
}

# handoff DOWN...: a holder (30 s lease), a waiter that listens; the
# masters DOWN are killed while it waits; the release must wake it.
handoff() {
	local t0 el i
	rm -f "$T/go" "$T/waited"
	bg rl -l 30s -k wake -- sh -c '
		until [ -e "$1/go" ]; do sleep 0.02; done' sh "$T"
	local holder=$LAST
	wait_until 10 held_on_n wake "$(nmasters)" || fail "holder did not start"
	bg rl -k wake -- sh -c 'echo "$RLOCK_FENCE" > "$1/waited"' sh "$T"
	local waiter=$LAST
	wait_until 10 blocked_on_masters 1 || fail "the waiter does not wait"
	for i in "$@"; do
		masters_kill "$i"
	done
	[ ! -e "$T/waited" ]
	t0=$(now_ms)
	touch "$T/go"
	wait_until 10 test -s "$T/waited" ||
		fail "the waiter did not run within 10 s of the release"
	el=$(( $(now_ms) - t0 ))
	wait_exit "$holder"
	[ "$STATUS" = 0 ] || fail "holder exit $STATUS"
	wait_exit "$waiter"
	[ "$STATUS" = 0 ] || fail "waiter exit $STATUS"
	echo "# woken ${el}ms after the release (masters down: ${*:-none})" >&3
}

# log_all [off]: every command the masters of the set in use run goes to
# their slow log from now on, which is emptied (off: back to the default).
log_all() {
	local p
	LOGGING_ALL=${1:-on}
	for p in $MASTERS_PORTS; do
		topo_pid "$p" > /dev/null || continue
		if [ "$LOGGING_ALL" = off ]; then
			topo_cli "$p" config set slowlog-log-slower-than 10000
		else
			topo_cli "$p" config set slowlog-max-len 10000
			topo_cli "$p" config set slowlog-log-slower-than 0
			topo_cli "$p" slowlog reset
		fi > /dev/null
	done
	[ "$LOGGING_ALL" = on ] || LOGGING_ALL=
}

# script_sha NAME: the SHA of src/lua/NAME.lua, as compiled into $RLOCK.
script_sha() {
	local c sha
	c=$(dirname "$RLOCK")/lua_scripts.c
	[ -f "$c" ] || c=$BATS_TEST_DIRNAME/../../build/lua_scripts.c
	sha=$(grep -A1 "lua_$1 = " "$c" | grep -o '[0-9a-f]\{40\}')
	[ -n "$sha" ] || fail "no SHA of $1.lua in $c"
	echo "$sha"
}

# acquires PORT: how many acquire attempts master PORT ran since log_all
# (EVALSHA of acquire.lua).
acquires() {
	local sha
	sha=$(script_sha acquire)
	topo_cli "$1" slowlog get 10000 | { grep -cx "$sha" || true; }
}

# waiting KEY N: N waiters of KEY wait: blocked in BLPOP on the masters,
# or, as rlock did before a release woke one waiter only, subscribed to
# KEY's wake channel on the first master (so the test below fails on
# such an rlock by its count, not here).
waiting() {
	local subs
	subs=$(topo_cli "$(masters_port 0)" pubsub shardnumsub "rlock:{$1}:wake" |
		sed -n 2p)
	blocked_on_masters $(($2 - ${subs:-0}))
}

in_sections() { ls "$T"/in.* 2>/dev/null | wc -l; }
someone_in() { [ "$(in_sections)" -ge 1 ]; }

@test "redlock: a release wakes one of 10 waiters, not all of them" {
	local i p a total=0 pids=()
	bg rl -l "$(tf 120)s" -k one -- sh -c '
		touch "$1/held"; until [ -e "$1/go" ]; do sleep 0.02; done' sh "$T"
	wait_until 10 test -e "$T/held" || fail "holder did not start"
	for i in $(seq 10); do
		bg rl -l "$(tf 120)s" -k one -- sh -c '
			touch "$1/in.$2"
			until [ -e "$1/end" ]; do sleep 0.02; done' sh "$T" "$i"
		pids+=("$LAST")
	done
	wait_until 20 waiting one 10 || fail "the waiters do not all wait"
	log_all
	touch "$T/go"
	wait_until 10 someone_in || fail "nobody took the lock"
	# A window for a herd to show (each woken waiter tries at once);
	# with one waiter woken, nothing more happens in it.
	sleep "$(tf 1)"
	[ "$(in_sections)" = 1 ] || fail "$(in_sections) waiters ran"
	for p in $MASTERS_PORTS; do
		a=$(acquires "$p")
		total=$((total + a))
		# The one woken waiter's attempt, which finds every master
		# released (see the next test).
		[ "$a" -le 1 ] || fail "master $p ran $a acquire attempts"
	done
	# And the woken one did try (the count can see an attempt).
	[ "$total" -ge 3 ] || fail "only $total acquire attempts seen"
	echo "# $total acquire attempts on 5 masters after the release" >&3
	# The others waited on, and each has its turn.
	touch "$T/end"
	for i in "${pids[@]}"; do
		wait_exit "$i"
		[ "$STATUS" = 0 ] || fail "a waiter exited $STATUS"
	done
	[ "$(in_sections)" = 10 ] || fail "$(in_sections) waiters ran"
}

# monitor_has PORT PATTERN: MONITOR's file of master PORT has a line
# matching PATTERN (grep -E).
monitor_has() { grep -qE -- "$2" "$T/mon.$1"; }

# The master the waiters block on (the first) gets the holder's release
# last, once enough of the others answered to make a majority with it: the
# waiter it wakes finds a majority released and gets the lock in one
# attempt.
# Before, the release went to all five at once, and the woken waiter's
# attempt could overtake it on masters, draw a split vote, undo, and sleep
# a random pause of up to 50 ms (the p99 of a Redlock hand-off).
@test "redlock: the waiters' master is released after a majority; the woken waiter gets the lock in one attempt" {
	local p p0 holder waiter ts t0 a del att before=0 first=0
	p0=$(masters_port 0)
	bg rl -l "$(tf 60)s" -k order -- sh -c '
		until [ -e "$1/go" ]; do sleep 0.02; done' sh "$T"
	holder=$LAST
	wait_until 10 held_on_n order 5 || fail "holder did not start"
	bg rl -k order -- sh -c 'echo "$RLOCK_FENCE" > "$1/waited"' sh "$T"
	waiter=$LAST
	wait_until 10 blocked_on_masters 1 || fail "the waiter does not wait"
	for p in $MASTERS_PORTS; do
		bg redis-cli -h 127.0.0.1 -p "$p" monitor > "$T/mon.$p"
	done
	for p in $MASTERS_PORTS; do
		topo_cli "$p" echo monitor-on > /dev/null
		wait_until 5 monitor_has "$p" '"monitor-on"' ||
			fail "MONITOR on $p shows nothing"
	done
	# The other masters forget the scripts: their first answer to the
	# release is NOSCRIPT at once, and the release runs on the EVAL after
	# it. The order must wait for that, not for the NOSCRIPT.
	for p in $MASTERS_PORTS; do
		[ "$p" = "$p0" ] || topo_cli "$p" script flush > /dev/null
	done
	touch "$T/go"
	wait_until 10 test -s "$T/waited" ||
		fail "the waiter did not run within 10 s of the release"
	wait_exit "$holder"
	[ "$STATUS" = 0 ] || fail "holder exit $STATUS"
	wait_exit "$waiter"
	[ "$STATUS" = 0 ] || fail "waiter exit $STATUS"
	for p in $MASTERS_PORTS; do
		topo_cli "$p" echo monitor-off > /dev/null
		wait_until 5 monitor_has "$p" '"monitor-off"' ||
			fail "MONITOR on $p lags"
	done
	# When each master ran the holder's release: the script's own DEL of
	# the lock and its meta (MONITOR's clock is the machine's, in
	# microseconds). The first master's comes after those of two others
	# (with it, a majority of five).
	# An acquire attempt is the script's ZCOUNT of the semaphore (an
	# EVALSHA refused with NOSCRIPT runs nothing).
	del='"DEL" "rlock:{order}" "rlock:{order}:meta"'
	att='"ZCOUNT" "rlock:{order}:sem"'
	t0=$(grep -m1 -F "$del" "$T/mon.$p0" | cut -d' ' -f1 | tr -d .)
	[ -n "$t0" ] || fail "no release on the first master"
	for p in $MASTERS_PORTS; do
		a=$(grep -c -F "$att" "$T/mon.$p" || true)
		[ "$a" = 1 ] || fail "master $p ran $a acquire attempts:
$(grep -F -e "$att" -e "$del" "$T/mon.$p" | cut -c1-80)"
		# Where the one attempt came after the release.
		[ "$(grep -n -m1 -F "$del" "$T/mon.$p" | cut -d: -f1)" -lt \
		    "$(grep -n -m1 -F "$att" "$T/mon.$p" | cut -d: -f1)" ] &&
			first=$((first + 1))
		[ "$p" != "$p0" ] || continue
		ts=$(grep -m1 -F "$del" "$T/mon.$p" | cut -d' ' -f1 | tr -d .)
		[ -n "$ts" ] || fail "no release on master $p"
		[ "$ts" -ge "$t0" ] || before=$((before + 1))
	done
	[ "$before" -ge 2 ] ||
		fail "only $before masters released before the first"
	[ "$first" -ge 3 ] ||
		fail "the attempt overtook the release on $((5 - first)) masters"
}

# A master that stalls (SIGSTOP: it accepts and reads nothing) while the
# holder releases: the waiters' master is released all the same, after
# half a per-master timeout at most (lease/30: 100 ms here), and the
# waiter gets the lock on the other four; the release costs the holder one
# per-master timeout, not one per part.
@test "redlock: a master stalled at the release: the waiter still gets the lock at once" {
	local p2 pid holder waiter t0 el
	p2=$(masters_port 2)
	bg rl -l 3s -k stall -- sh -c '
		until [ -e "$1/go" ]; do sleep 0.02; done' sh "$T"
	holder=$LAST
	wait_until 10 held_on_n stall 5 || fail "holder did not start"
	bg rl -l 3s -k stall -- sh -c 'echo "$RLOCK_FENCE" > "$1/waited"' sh "$T"
	waiter=$LAST
	wait_until 10 blocked_on_masters 1 || fail "the waiter does not wait"
	pid=$(topo_pid "$p2") || fail "no master on $p2"
	kill -STOP "$pid"
	t0=$(now_ms)
	touch "$T/go"
	wait_until 10 test -s "$T/waited" ||
		fail "the waiter did not run within 10 s of the release"
	el=$(( $(now_ms) - t0 ))
	kill -CONT "$pid"
	wait_exit "$holder"
	[ "$STATUS" = 0 ] || fail "holder exit $STATUS"
	wait_exit "$waiter"
	[ "$STATUS" = 0 ] || fail "waiter exit $STATUS"
	echo "# the waiter ran ${el}ms after the release, one master stalled" >&3
	# Well under the lease (3 s), which a waiter never woken would wait.
	[ "$el" -lt "$(tf_ms 2000)" ] || fail "the waiter ran ${el}ms after"
}

# FIELD (calls, failed_calls) of COMMAND (evalsha, eval) in a master's
# INFO commandstats.
cmdstat() { # PORT COMMAND FIELD
	topo_cli "$1" info commandstats | tr -d '\r' |
		sed -n "s/^cmdstat_$2://p" | tr ',' '\n' | sed -n "s/^$3=//p"
}

# Masters restarted empty have no script cached: each script a run sends
# them is refused once (NOSCRIPT) and then sent as text. Before, the
# pipelined path asked EVALSHA a second time first: a round trip more per
# script and master.
@test "redlock: masters without the scripts: one NOSCRIPT per script, then its text" {
	local p f e
	for p in $MASTERS_PORTS; do
		topo_cli "$p" script flush > /dev/null
		topo_cli "$p" config resetstat > /dev/null
	done
	rl -k noscript -- true
	for p in $MASTERS_PORTS; do
		f=$(cmdstat "$p" evalsha failed_calls)
		e=$(cmdstat "$p" eval calls)
		[ "${e:-0}" -ge 2 ] || fail "master $p ran ${e:-0} EVALs"
		[ "$f" = "$e" ] || fail "master $p: $f EVALSHA refused for $e EVALs"
	done
}

# Two masters stalled from the start (SIGSTOP: the kernel completes the
# connect, the PING goes unanswered): a run connects every master at once,
# so each round that tries them (the first connect; the release, which
# connects them again) costs one per-master timeout (lease/30: 1 s here)
# for both together. One after another, they cost one each. Nothing but
# the PING was sent to them: when they wake, they take no lock.
@test "redlock: two stalled masters cost a run one per-master timeout per attempt, not one each" {
	local t0 el
	stall stalled 3 4
	t0=$(now_ms)
	run rl -l 30s -k stalled -- true
	el=$(( $(now_ms) - t0 ))
	kill -CONT "${STALLED[@]}"
	[ "$status" = 0 ] || fail "exit $status: $output"
	echo "# two stalled masters: the run took ${el}ms" >&3
	[ "$el" -lt "$(tf_ms 4500)" ] || fail "the run took ${el}ms"
	untouched stalled
}

# stall KEY I...: masters I... stopped (SIGSTOP; PIDs in STALLED), once a
# run on KEY cached the scripts on every master (as on masters in use: a
# late acquire is run, not refused NOSCRIPT); their fences of KEY then in
# FENCE, by port.
stall() {
	local key=$1 i p pid
	shift
	rl -k "$key" -- true
	STALLED=()
	declare -gA FENCE=()
	for i in "$@"; do
		p=$(masters_port "$i")
		pid=$(topo_pid "$p") || fail "no master on $p"
		STALLED+=("$pid")
		FENCE[$p]=$(topo_cli "$p" get "rlock:{$key}:fence")
	done
	kill -STOP "${STALLED[@]}"
}

# untouched KEY: each master stall stopped, awake and answering again,
# drew no fence of KEY (no acquire reached it: nothing is sent behind a
# login before its answer), and KEY is held on no master.
untouched() {
	local p f
	for p in "${!FENCE[@]}"; do
		wait_until 10 topo_cli "$p" ping > /dev/null ||
			fail "master $p does not answer"
		f=$(topo_cli "$p" get "rlock:{$1}:fence")
		[ "$f" = "${FENCE[$p]}" ] ||
			fail "an acquire reached master $p (${FENCE[$p]}, $f)"
	done
	for p in $MASTERS_PORTS; do
		[ "$(topo_cli "$p" exists "rlock:{$1}")" = 0 ] ||
			fail "master $p holds $1"
	done
}

# Stalled masters that leave a majority out: each try ends after one
# per-master timeout; under -w the first contact is tried again (the
# contract's Weather) until -w is spent: 69.
@test "redlock: 3 of 5 masters stalled: tried again until -w, exit 69, nothing left" {
	local t0 el
	stall stall3 2 3 4
	t0=$(now_ms)
	run -69 --separate-stderr rl -l 30s -w "$(tf 2)" -k stall3 -- echo ran
	el=$(( $(now_ms) - t0 ))
	kill -CONT "${STALLED[@]}"
	[ -z "$output" ] || fail "COMMAND ran: $output"
	[[ $stderr == *"only 2 of 5 masters"*"(3 needed)"*"PING: no answer within"*"unreachable since"* ]] ||
		fail "stderr: $stderr"
	[ "$el" -ge "$(tf_ms 1900)" ] || fail "gave up after ${el}ms of -w $(tf 2)"
	[ "$el" -lt "$(tf_ms 4500)" ] || fail "took ${el}ms"
	untouched stall3
}

# The first contact's stalled majority is weather: the run tries again,
# and gets the lock once they answer.
@test "redlock: 3 of 5 masters stalled past a try, awake within -w: the run gets the lock" {
	local p
	stall stall4 2 3 4
	( sleep "$(tf 3)"; kill -CONT "${STALLED[@]}" ) 3>&- &
	run -0 --separate-stderr rl -l 30s -w "$(tf 20)" -k stall4 -- echo ran
	kill -CONT "${STALLED[@]}"
	[ "$output" = ran ] || fail "stdout: $output; stderr: $stderr"
	for p in $MASTERS_PORTS; do
		[ "$(topo_cli "$p" exists "rlock:{stall4}")" = 0 ] ||
			fail "master $p holds stall4"
	done
}

# The waiter blocks on the first master, where another client's key
# stands in for the holder's (as after a restart and someone's grant
# there): the holder's release finds nothing of its own there, and must
# still wake the waiter, which then gets the other four.
@test "redlock: a waiter blocked on a master where the holder's key is gone is woken by the release" {
	local p0
	p0=$(masters_port 0)
	bg rl -l "$(tf 60)s" -k back -- sh -c '
		until [ -e "$1/go" ]; do sleep 0.02; done' sh "$T"
	local holder=$LAST
	wait_until 10 held_on_n back 5 || fail "holder did not start"
	topo_cli "$p0" set 'rlock:{back}' someone-else px "$(tf_ms 120000)" > /dev/null
	bg rl -k back -- sh -c 'echo "$RLOCK_FENCE" > "$1/waited"' sh "$T"
	local waiter=$LAST
	wait_until 10 blocked_on_masters 1 || fail "the waiter does not wait"
	[ ! -e "$T/waited" ]
	touch "$T/go"
	wait_until 10 test -s "$T/waited" ||
		fail "the waiter did not run within 10 s of the release"
	wait_exit "$holder"
	[ "$STATUS" = 0 ] || fail "holder exit $STATUS"
	wait_exit "$waiter"
	[ "$STATUS" = 0 ] || fail "waiter exit $STATUS"
	topo_cli "$p0" del 'rlock:{back}' > /dev/null
}

@test "redlock: a holder and a waiter: the waiter is woken by the release (well before the lease)" {
	handoff
	handoff 0 1
	use 3
	handoff
}

@test "redlock: status shows each master's view; exit 0 while held, 1 after" {
	local i p
	bg rl -l 30s -k shown -- sh -c '
		until [ -e "$1/go" ]; do sleep 0.02; done' sh "$T"
	local holder=$LAST
	wait_until 10 held_on_n shown 5 || fail "holder did not start"
	run -0 --separate-stderr "$RLOCK" status --redlock \
		"${MASTERS_UARGS[@]}" shown
	[ -z "$stderr" ] || fail "stderr: $stderr"
	i=0
	for p in $MASTERS_PORTS; do
		assert_line "== master $((i + 1)) of 5: redis://127.0.0.1:$p/0"
		i=$((i + 1))
	done
	[ "$(grep -c '^shown: held (mutex)$' <<< "$output")" = 5 ] ||
		fail "$output"
	# Two masters down: their sections say so, three still show it held.
	masters_kill 3
	masters_kill 4
	run -0 --separate-stderr "$RLOCK" status --redlock \
		"${MASTERS_UARGS[@]}" shown
	[ "$(grep -c '^shown: held (mutex)$' <<< "$output")" = 3 ] ||
		fail "$output"
	[ "$(grep -c '^unreachable: ' <<< "$output")" = 2 ] || fail "$output"
	assert_line "== master 5 of 5: redis://127.0.0.1:$(masters_port 4)/0"
	# Back empty, and one more lost: held on 2 of 5 is not held.
	masters_restart 3
	masters_restart 4
	masters_kill 2
	masters_restart 2
	run -1 --separate-stderr "$RLOCK" status --redlock \
		"${MASTERS_UARGS[@]}" shown
	[ "$(grep -c '^shown: held (mutex)$' <<< "$output")" = 2 ] ||
		fail "$output"
	[ "$(grep -c '^shown: free$' <<< "$output")" = 3 ] || fail "$output"
	# Its holder finds out at the latest when it releases.
	touch "$T/go"
	wait_exit "$holder"
	[ "$STATUS" = 70 ] || fail "holder exit $STATUS"
	run -1 --separate-stderr "$RLOCK" status --redlock \
		"${MASTERS_UARGS[@]}" shown
	[ "$(grep -c '^shown: free$' <<< "$output")" = 5 ] || fail "$output"
	run -0 --separate-stderr "$RLOCK" list --redlock "${MASTERS_UARGS[@]}"
	[ "$(grep -c '^== master ' <<< "$output")" = 5 ] || fail "$output"
	! grep -q '^shown' <<< "$output" || fail "$output"
}

@test "redlock: --min-hold on the masters that granted, the run recorded on each, a waiter at the hold's end" {
	local g w late p n=0 granted=""
	# A hold long enough to look at five masters on a busy machine.
	rl --min-hold 5s -k held -- true
	for p in $MASTERS_PORTS; do
		# A master may have missed the grant (its per-master timeout
		# on a busy machine): a majority is what holds.
		[ "$(topo_cli "$p" exists 'rlock:{held}')" = 1 ] || continue
		[ "$(topo_cli "$p" hget 'rlock:{held}:last' exit)" = 0 ] ||
			fail "no record on $p"
		topo_cli "$p" hget 'rlock:{held}:last' started >> "$T/started"
		granted+=" $p"
		n=$((n + 1))
	done
	[ "$n" -ge 3 ] || fail "kept on $n masters only"
	run -75 rl -n -q -k held -- true
	rl -w 15s -k held -- sh -c 'echo "$RLOCK_FENCE" > "$1/w"' sh "$T"
	# Each master holds until its own grant + 5 s (the masters are asked
	# in turn); one that did not grant is free. A majority (3) is free
	# from the (n - 2)th grant on. The waiter's fence is the clock of its
	# last master to grant.
	g=$(sort -n "$T/started" | sed -n "$((n - 2))p")
	w=$(cat "$T/w")
	late=$((w - g - 5000))
	echo "# granted ${late}ms after the hold's end ($n masters held)" >&3
	[ "$late" -ge 0 ] && [ "$late" -lt 1000 ] || fail "late by ${late}ms"
	# Each master's own view, and one exposition for all of them.
	run -1 --separate-stderr "$RLOCK" status --redlock --prometheus \
		"${MASTERS_UARGS[@]}" held never
	echo "$output" > "$T/p.prom"
	run -0 promtool check metrics < "$T/p.prom"
	for p in $granted; do
		grep -q "^rlock_last_run_exit_status{key=\"held\",master=\"redis://127.0.0.1:$p/0\"} 0\$" "$T/p.prom" ||
			fail "no series for $p: $(cat "$T/p.prom")"
	done
	[ "$(grep -c '^# TYPE rlock_held gauge$' "$T/p.prom")" = 1 ]
}

@test "redlock: --fair / --limit / an even number of masters are usage errors (64)" {
	local c=$CLOSED_URL
	usage_error 'fair' --redlock -u "$c" -u "$c" -u "$c" --fair -k K true
	usage_error 'limit' --redlock -u "$c" -u "$c" -u "$c" -N 2 -k K true
	usage_error 'limit' --redlock -u "$c" -u "$c" -u "$c" --limit 3 -k K true
	usage_error 'odd number' --redlock -u "$c" -u "$c" -k K true
	usage_error 'odd number' --redlock -u "$c" -u "$c" -u "$c" -u "$c" -k K true
	usage_error 'odd number' --redlock -u "$c" -k K true
	usage_error 'odd number' status --redlock -u "$c" -u "$c" -u "$c" -u "$c" K
	usage_error 'redis://, rediss:// or unix://' --redlock -u "$c" -u "$c" \
		-u "redis+cluster://127.0.0.1:1" -k K true
	# Live masters change nothing.
	run -64 rl --fair -k K -- touch "$T/ran"
	[ ! -e "$T/ran" ]
}

@test "redlock: nothing without an expiry is left on any master after the runs" {
	local p k ttl n=0 bad=()
	# Our own grant, so there is something to check however long ago the
	# other tests ran (their wake tokens expire after 5 s).
	rl -k ttlcheck -- true || fail "rlock exit $?"
	for p in $(live_ports); do
		while IFS= read -r k; do
			ttl=$(topo_cli "$p" pttl "$k")
			# -2: it expired between SCAN and PTTL; only -1
			# means "no expiry".
			[ "$ttl" = -2 ] && continue
			n=$((n + 1))
			case $k in
			*:fence) [ "$ttl" -ge 0 ] && [ "$ttl" -le 604800000 ] ;;
			# The last run's record: 40 days.
			*:last) [ "$ttl" -ge 0 ] && [ "$ttl" -le 3456000000 ] ;;
			# Every lock was released: only wake tokens may remain.
			*) [ "$ttl" -ge 0 ] && [ "$ttl" -le 30000 ] &&
				[[ $k != rlock:\{*\} ]] ;;
			esac || bad+=("$p $k $ttl")
		done < <(topo_cli "$p" --scan)
	done
	[ "${#bad[@]}" = 0 ] || fail "$(printf '%s\n' "${bad[@]}")"
	[ "$n" -ge 5 ] || fail "only $n keys: the runs left nothing to check"
	echo "# $n keys on $(live_ports | wc -l) masters" >&3
}

# A one-server waiter learns at once that its server died (its BLPOP
# connection closes); a --redlock waiter must not wait out the holder's
# 30 s lease to learn that most of its masters did. It then rides the
# outage out as weather (the contract's Weather) until its -w ends: 69.
@test "redlock: a waiter whose majority of masters dies exits 69 when its -w ends" {
	local t0 w
	bg rl -k dies -- sh -c "touch $T/held; until [ -e $T/go ]; do sleep 0.05; done"
	wait_until 10 test -e "$T/held"
	bg rl -k dies -w "$(tf 3)" -- touch "$T/ran"
	w=$LAST
	sleep 0.5	# a pause so the waiter is blocked, not an event wait
	proc_alive "$w" || fail "the waiter did not wait"
	t0=$(date +%s%N)
	masters_kill 0
	masters_kill 1
	masters_kill 2
	wait_until 10 pid_gone "$w" || fail "the waiter still waits"
	echo "# waiter ended $(( ($(date +%s%N) - t0) / 1000000 )) ms after the kills" >&3
	run wait "$w"
	[ "$status" = 69 ] || fail "waiter exit $status"
	[ ! -e "$T/ran" ]
}

# The waiter blocks on the first master; the others it only watches.
@test "redlock: a waiter whose other masters (a majority) die exits 69 when its -w ends" {
	local t0 w
	bg rl -k idle -- sh -c "touch $T/held; until [ -e $T/go ]; do sleep 0.05; done"
	wait_until 10 test -e "$T/held"
	bg rl -k idle -w "$(tf 3)" -- touch "$T/ran"
	w=$LAST
	wait_until 10 blocked_on_masters 1 || fail "the waiter does not wait"
	t0=$(now_ms)
	masters_kill 2
	masters_kill 3
	masters_kill 4
	wait_until 10 pid_gone "$w" || fail "the waiter still waits"
	echo "# waiter ended $(($(now_ms) - t0)) ms after the kills" >&3
	run wait "$w"
	[ "$status" = 69 ] || fail "waiter exit $status"
	[ ! -e "$T/ran" ]
}

@test "redlock: masters that may evict keys: the warning comes once" {
	local p
	for p in $MASTERS_PORTS; do
		topo_cli "$p" config set maxmemory-policy allkeys-lru > /dev/null
	done
	run --separate-stderr rl -k evict -- true
	for p in $MASTERS_PORTS; do
		topo_cli "$p" config set maxmemory-policy noeviction > /dev/null
	done
	[ "$status" = 0 ] || fail "exit $status: $stderr"
	[ "$(grep -c 'maxmemory-policy is allkeys-lru' <<< "$stderr")" = 1 ] ||
		fail "stderr: $stderr"
}
