#!/usr/bin/env bats
# Cron fleets: --min-hold (once per schedule across skewed machines),
# --max-hold (a bounded run, exit 124), the record of every run in
# P{KEY}:last (status, --json, --prometheus) and the skips counted against
# it, --syslog, and 71 when the system refuses a pipe. Timings are windows
# scaled by TIME_FACTOR; nothing here asserts a speed.

load helper

setup_file() {
	# commandstats and the timing windows want the server to ourselves.
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	redis_start main
	# Four "machines": each run gets its own host name in a UTS namespace
	# when we may make one (root, as in CI); else they share ours.
	UTS_OK=
	unshare -u true 2>/dev/null && UTS_OK=1
	export UTS_OK
}

teardown_file() {
	redis_stop main
}

setup() {
	per_test cron
	export K
	# job.sh: the cron job. Notes where it ran, runs for $1 seconds.
	cat > "$T/job.sh" <<-'EOF'
	echo "$(hostname)" >> "$T/ran"
	sleep "$1"
	EOF
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do
		proc_alive "$p" && kill -KILL "$p" 2>/dev/null
	done
	return 0
}

# on_host NAME CMD...: CMD as if on machine NAME.
on_host() {
	local h=$1
	shift
	if [ -n "$UTS_OK" ]; then
		unshare -u sh -c 'hostname "$0" && exec "$@"' "$h" "$@"
	else
		"$@"
	fi
}

# skewed_cron RLOCK-ARGS...: the issue's fleet. Four machines whose cron
# fires 0.7 s apart each run `rlock -n -q -E 0 ARGS -k $K` on a 1-second
# job; all must exit 0. Prints how many times the job ran.
skewed_cron() {
	local h i t0 p st=0 pids=()
	t0=$(now_ms)
	i=0
	for h in host-a host-b host-c host-d; do
		while [ "$(now_ms)" -lt $((t0 + i * $(tf_ms 700))) ]; do
			sleep 0.01
		done
		on_host "$h" "$RLOCK" -n -q -E 0 "$@" -k "$K" -- \
		    sh "$T/job.sh" "$(tf 1)" 3>&- &
		pids+=($!)
		PIDS+=($!)
		i=$((i + 1))
	done
	for p in "${pids[@]}"; do
		wait "$p" || st=$?
	done
	[ "$st" = 0 ] || fail "a run exited $st"
	wc -l < "$T/ran"
}

json() { "$RLOCK" status --json "$K"; }

# none KEY...: not one of the Redis keys exists; some KEY...: all do.
none() { [ "$(rcli exists "$@")" = 0 ]; }
some() { [ "$(rcli exists "$@")" = "$#" ]; }

@test "--min-hold: 4 skewed cron runs of a 1s job run it once, 3 skips" {
	local n
	n=$(skewed_cron --min-hold "$(tf 10)")
	echo "# with --min-hold: the job ran $n time(s): $(tr '\n' ' ' < "$T/ran")" >&3
	[ "$n" = 1 ] || fail "ran $n times"
	run -0 json
	echo "$output" | jq -e '.[0] | .held and .last_run.exit_status == 0
	    and .last_run.skips == 3 and .holders[0].skips == 3
	    and .holders[0].finished.exit_status == 0' ||
		fail "$output"
	if [ -n "$UTS_OK" ]; then
		echo "$output" | jq -e '.[0].last_run.host == "host-a" and
		    .[0].last_run.last_skip.host == "host-d"' || fail "$output"
		run -0 "$RLOCK" status "$K"
		assert_line --regexp '^  last run    .*@host-a, pid [0-9]+: sh '
		assert_line --regexp '^  skipped     3 runs, the last by .*@host-d, pid '
	fi
}

@test "control: without --min-hold the same 4 runs run the job more than once" {
	local n
	# Host A's job ends at about 1.0 s, before host C's cron fires at
	# 1.4 s: C finds KEY free and runs the job again (D, at 2.1 s, finds
	# C's run). This is the defect --min-hold exists for.
	n=$(skewed_cron)
	echo "# without --min-hold: the job ran $n times: $(tr '\n' ' ' < "$T/ran")" >&3
	[ "$n" -ge 2 ]
}

@test "--min-hold: rlock exits at once with COMMAND's status; KEY stays held, then ends by expiry" {
	local t0 dt since
	# 8 s: room for the looks below on a busy machine; rlock itself
	# must be gone long before.
	t0=$(now_ms)
	run -3 "$RLOCK" --min-hold "$(tf 8)" -k "$K" -- sh -c 'exit 3'
	dt=$(( $(now_ms) - t0 ))
	[ "$dt" -lt "$(tf_ms 4000)" ] || fail "rlock took ${dt}ms"
	run -0 "$RLOCK" status "$K"
	assert_line --regexp '^  run ended   .*, exit 3, after '
	assert_line --regexp '^  held until  .* by --min-hold$'
	refute_line --partial 'lease left'
	run -75 --separate-stderr "$RLOCK" -n -k "$K" -- true
	[[ $stderr =~ "run ended, --min-hold until" ]] || fail "$stderr"
	# One look: meta's fields, and both expiries (together, at the end).
	run rcli eval "return {redis.call('HGET', KEYS[2], 'since'),
	    redis.call('HGET', KEYS[2], 'exit'),
	    redis.call('HGET', KEYS[2], 'hold_until'),
	    redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[2])}" \
	    2 "$L" "$L:meta"
	since=${lines[0]}
	[ "${lines[1]}" = 3 ] || fail "$output"
	[ "${lines[2]}" = $((since + $(tf_ms 8000))) ] || fail "$output"
	[ "${lines[3]}" -le "$(tf_ms 8000)" ] && [ "${lines[3]}" -gt 0 ]
	[ "${lines[4]}" -le "$(tf_ms 8000)" ] && [ "${lines[4]}" -gt 0 ]
	wait_until "$(tf 12)" none "$L" "$L:meta"
	run -1 "$RLOCK" status --json "$K"
	echo "$output" | jq -e '.[0] | .held == false and
	    .last_run.exit_status == 3 and .last_run.lease_lost == false'
	run keys_without_ttl
	assert_output ''
}

@test "--min-hold: a waiter's line says the holder's run ended and the hold's end, not a lease" {
	local line re
	run -0 "$RLOCK" --min-hold "$(tf 30)" -k "$K" -- true
	# -v logs the facts the terminal line draws, one line a holder.
	run -75 --separate-stderr "$RLOCK" -v -w "$(tf 0.5)" -k "$K" -- true
	line=$(grep "^rlock: waiting for '$K': " <<< "$stderr") ||
		fail "no wait line: $stderr"
	# A duration as rlock gives it: 708ms, 29.4s, 2m29s (TIME_FACTOR 5).
	d='([0-9.]+m?s|[0-9]+m[0-9]{2}s)'
	re="held by .* \(pid [0-9]+: true; run ended $d ago\), "
	re+="--min-hold until [0-9]{2}:[0-9]{2}:[0-9]{2}, $d left$"
	[[ $line =~ ^rlock:\ waiting\ for\ \'$K\':\ $re ]] || fail "$line"
	[[ $line != *lease* ]] || fail "$line"
	# On a terminal, the line drawn in place says the same.
	run -75 timeout "$(tf 10)" script -eqfc \
		"$RLOCK -w $(tf 0.5) -k $K -- true" /dev/null < /dev/null
	[[ $output == *"run ended "*" ago), --min-hold until "* ]] ||
		fail "$(printf '%s' "$output" | cat -v)"
	[[ $output != *lease* ]] || fail "$(printf '%s' "$output" | cat -v)"
}

@test "--min-hold: a meta gone while holding (evicted, deleted) is made anew with an expiry" {
	local m
	for m in "" "-N 2"; do
		# shellcheck disable=SC2086
		"$RLOCK" $m --min-hold "$(tf 20)" -k "$K" -- sh -c '
			for k in $(redis-cli -s "$1" --scan --pattern "$2:meta*"); do
				redis-cli -s "$1" del "$k" >/dev/null
			done' sh "$REDIS_SOCK" "$L" || fail "rlock $m: $?"
		run keys_without_ttl
		assert_output ''
		rcli flushall >/dev/null
	done
}

@test "--min-hold shorter than the job changes nothing" {
	run -0 "$RLOCK" --min-hold 0.2 -k "$K" -- sleep "$(tf 0.6)"
	# Released as without it: nothing of the lock is left.
	[ "$(rcli exists "$L" "$L:meta")" = 0 ]
	[ "$(rcli hexists "$L:last" ended)" = 1 ]
	run -0 "$RLOCK" -n -k "$K" -- echo next
	assert_output next
}

queued() { [ "$(rcli llen "$L:q")" = 1 ]; }

# waiter_after_hold MODE...: a holder with --min-hold 5 s (scaled), and a
# waiter that waits (blocked or queued) before the holder's run ends and
# releases. Both print their RLOCK_FENCE, which is the server's clock at
# their grant (fence = max(last + 1, server ms)): the waiter must get KEY
# at the hold's end or after, within a window, and without polling (woken
# by the release, which leaves KEY held; then by its own timer at the
# expiry, which the release may have made sooner than the lease's end).
waiter_after_hold() {
	local h w late
	"$RLOCK" "$@" --min-hold "$(tf 5)" -k "$K" -- sh -c \
	    'echo $RLOCK_FENCE > "$T/h"; until [ -e "$T/go" ]; do sleep 0.02; done' &
	PIDS+=($!)
	wait_until "$(tf 3)" test -s "$T/h"
	"$RLOCK" "$@" -w "$(tf 15)" -k "$K" -- sh -c 'echo $RLOCK_FENCE > "$T/w"' &
	PIDS+=($!)
	if [ "${1:-}" = --fair ]; then
		wait_until "$(tf 3)" queued
	else
		wait_until "$(tf 3)" blocked
	fi
	touch "$T/go"
	wait "${PIDS[0]}"
	# The run ended inside the hold, or this would test nothing.
	[ -n "$(rcli hget "$L:meta" hold_until)" ] || fail "hold already over"
	wait "${PIDS[1]}"
	h=$(cat "$T/h")
	w=$(cat "$T/w")
	late=$((w - h - $(tf_ms 5000)))
	echo "# ${*:-plain}: granted ${late}ms after the hold's end" >&3
	[ "$late" -ge 0 ] || fail "granted ${late}ms before the hold ended"
	[ "$late" -lt "$(tf_ms 1000)" ] || fail "granted ${late}ms late"
}

@test "--min-hold: a plain waiter gets KEY at the hold's end, not before" {
	waiter_after_hold
}

@test "--min-hold: a --fair waiter gets KEY at the hold's end, not before" {
	waiter_after_hold --fair
}

@test "--min-hold with -N: the slot stays taken until the hold's end" {
	local i
	for i in 1 2; do
		run -0 "$RLOCK" -N 2 --min-hold "$(tf 3)" -k "$K" -- true
	done
	[ "$(rcli zcard "$L:sem")" = 2 ]
	run -75 "$RLOCK" -N 2 -n -k "$K" -- true
	run -0 "$RLOCK" status --json "$K"
	echo "$output" | jq -e '.[0] | .mode == "semaphore" and
	    (.holders | length) == 2 and
	    all(.holders[]; .finished.exit_status == 0)'
	run keys_without_ttl
	assert_output ''
	wait_until "$(tf 6)" none "$L:sem"
	run -0 "$RLOCK" -N 2 -n -k "$K" -- echo again
	assert_output again
}

@test "nothing is left without an expiry: holds, skips, lost leases, --max-hold" {
	"$RLOCK" --min-hold "$(tf 2)" -k "$K" -- true
	"$RLOCK" -n -q -k "$K" -- true || true
	"$RLOCK" -w 0.1 -q -k "$K" -- true || true
	"$RLOCK" --max-hold 0.1 -k "$K-m" -- sleep 5 || true
	"$RLOCK" -l 0.3 -k "$K-l" -- sh -c 'redis-cli -s "$REDIS_SOCK" del "rlock:{$RLOCK_KEY}" >/dev/null; sleep 1' 2>/dev/null || true
	[ "$(rcli exists "$L:last" "rlock:{$K-m}:last" "rlock:{$K-l}:last")" = 3 ]
	run keys_without_ttl
	assert_output ''
	# The record outlives a monthly job's next run.
	[ "$(rcli pttl "$L:last")" -gt $((31 * 24 * 3600 * 1000)) ]
}

@test "--max-hold: a COMMAND that ignores SIGTERM is killed after --kill-after; exit 124" {
	local t0 dt
	cat > "$T/stubborn.sh" <<-'EOF'
	trap 'date +%s%3N > "$T/term"' TERM
	while :; do sleep 0.05; done
	EOF
	t0=$(now_ms)
	run -124 --separate-stderr "$RLOCK" --max-hold "$(tf 1)" \
	    --kill-after "$(tf 1)" -k "$K" -- sh "$T/stubborn.sh"
	dt=$(( $(now_ms) - t0 ))
	echo "# --max-hold 1s, --kill-after 1s: exit after ${dt}ms" >&3
	[ -s "$T/term" ] || fail "COMMAND got no SIGTERM"
	[ $(( $(cat "$T/term") - t0 )) -ge "$(tf_ms 1000)" ]
	[ "$dt" -ge "$(tf_ms 2000)" ] && [ "$dt" -lt "$(tf_ms 5000)" ]
	[[ ${stderr_lines[0]} =~ ^rlock:\ \'$K\'\ has\ been\ held\ for\ --max-hold\ .*\;\ sending\ SIGTERM ]] ||
		fail "$stderr"
	# (COMMAND's shell may say its sleep was Terminated in between.)
	[[ $stderr =~ "still runs; sending SIGKILL" ]] || fail "$stderr"
	[ "$(rcli exists "$L")" = 0 ]
	run -1 "$RLOCK" status --json "$K"
	echo "$output" | jq -e '.[0].last_run | .exit_status == 124 and
	    .lease_lost == false'
}

@test "--max-hold: the lease is never renewed past the SIGKILL, nor is a longer one asked for" {
	local since bound worst n
	cat > "$T/stubborn.sh" <<-'EOF'
	trap '' TERM
	while :; do sleep 0.05; done
	EOF
	# One process looks every 20 ms (a redis-cli each time is too slow on
	# a busy machine) at the server's TIME + PTTL of the lock, from before
	# the grant until the key is gone; it prints how many looks saw the
	# key, and the latest expiry seen.
	python3 - "$REDIS_SOCK" "$L" "$T/looks" <<-'EOF' &
	import socket, sys, time
	sock, key, out = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
	s = socket.socket(socket.AF_UNIX)
	s.connect(sock)
	f = s.makefile('rb')
	lua = (b"local t = redis.call('TIME') local p = redis.call('PTTL', "
	       b"KEYS[1]) if p < 0 then return p end return t[1] * 1000 + "
	       b"math.floor(t[2] / 1000) + p")
	args = [b'EVAL', lua, b'1', key]
	cmd = b'*%d\r\n' % len(args) + b''.join(
	    b'$%d\r\n%s\r\n' % (len(a), a) for a in args)
	open(out + '.ready', 'w').close()
	n, worst, start = 0, 0, time.monotonic()
	while time.monotonic() - start < 120:
	    s.sendall(cmd)
	    v = int(f.readline()[1:])
	    if v > 0:
	        n, worst = n + 1, max(worst, v)
	    elif n > 0:
	        break
	    time.sleep(0.02)
	open(out, 'w').write('%d %d\n' % (n, worst))
	EOF
	PIDS+=($!)
	wait_until "$(tf 30)" test -e "$T/looks.ready"
	# A 9 s lease; SIGTERM at 3 s, SIGKILL at 6 s: a lease of about 7 s
	# is asked for, renewed every 2.4 s, the last renewals shortened.
	"$RLOCK" -l "$(tf 9)" --max-hold "$(tf 3)" --kill-after "$(tf 3)" \
	    -k "$K" -- sh "$T/stubborn.sh" &
	PIDS+=($!)
	wait_until "$(tf 10)" some "$L:meta"
	run rcli hmget "$L:meta" since lease
	since=${lines[0]}
	# max-hold + kill-after + twice the drift margin (lease/100 + 2 ms)
	# + a tenth of the lease (sup_hold_bound).
	bound=$(( since + $(tf_ms 6000) + 2 * ($(tf_ms 9000) / 100 + 2) +
	    $(tf_ms 9000) / 10 ))
	[ "${lines[1]}" -le $((bound - since)) ] || fail "lease ${lines[1]}"
	wait "${PIDS[1]}" || [ $? = 124 ] || fail "exit $?"
	wait "${PIDS[0]}"
	read -r n worst < "$T/looks"
	echo "# $n looks: the lock's expiry was at most $((worst - since))ms after the grant (bound $((bound - since))ms)" >&3
	[ "$n" -ge 3 ] || fail "only $n looks at the lock"
	# Redis sets an expiry by its clock as the command runs, a little
	# after the script read TIME for `since`: 100 ms (scaled) for a busy
	# server. Renewals that ignored the bound went 4.7 s past it.
	[ "$worst" -le $((bound + $(tf_ms 100))) ] ||
		fail "expiry $((worst - bound))ms past the bound"
}

@test "last_run after success, failure, signal, lost lease and --max-hold" {
	local f
	check() { # KEY JQ-CONDITION
		run "$RLOCK" status --json "$1"
		echo "$output" | jq -e ".[0].last_run | $2" || fail "$1: $output"
	}
	all='(keys - ["user", "host", "pid", "command", "started_ms",
	    "ended_ms", "duration_ms", "exit_status", "fence", "lease_lost"]
	    | length) >= 0 and (.user | type) == "string" and
	    (.pid | type) == "number" and .ended_ms >= .started_ms and
	    .duration_ms == .ended_ms - .started_ms and (.fence | type) ==
	    "number"'
	run -0 "$RLOCK" -k "$K-ok" -- true
	check "$K-ok" "$all and .exit_status == 0 and .lease_lost == false and
	    .command == \"true\" and .last_success_ms == .ended_ms"
	run -3 "$RLOCK" -k "$K-fail" -- sh -c 'exit 3'
	check "$K-fail" "$all and .exit_status == 3 and .lease_lost == false and
	    .last_success_ms == null"
	run -137 "$RLOCK" -k "$K-sig" -- sh -c 'kill -KILL $$'
	check "$K-sig" "$all and .exit_status == 137"
	run -70 "$RLOCK" -l "$(tf 0.6)" -k "$K-lost" -- sh -c \
	    'redis-cli -s "$REDIS_SOCK" del "rlock:{$RLOCK_KEY}" > /dev/null
	     sleep "$1"' sh "$(tf 1)"
	check "$K-lost" "$all and .exit_status == 70 and .lease_lost == true"
	run -124 "$RLOCK" --max-hold "$(tf 0.3)" -k "$K-max" -- sleep 10
	check "$K-max" "$all and .exit_status == 124 and .lease_lost == false"
	run -127 "$RLOCK" -k "$K-nf" -- /nonexistent/cmd
	check "$K-nf" "$all and .exit_status == 127"
	# A failure keeps the time of the last success.
	run -0 "$RLOCK" -k "$K-ok" -- true
	f=$(json_of "$K-ok" .last_success_ms)
	run -1 "$RLOCK" -k "$K-ok" -- false
	check "$K-ok" ".exit_status == 1 and .last_success_ms == $f"
	run -1 "$RLOCK" status "$K-ok"
	assert_line --regexp '^  last ok     '
}

json_of() { "$RLOCK" status --json "$1" | jq ".[0].last_run$2"; }

@test "skips are counted against the grant that made them skip" {
	local who
	"$RLOCK" -k "$K" -- sh -c 'touch "$T/in"; while [ ! -e "$T/go" ]; do sleep 0.02; done' &
	PIDS+=($!)
	wait_until "$(tf 3)" test -e "$T/in"
	run -75 "$RLOCK" -n -q -k "$K" -- true
	run -0 "$RLOCK" -n -q -E 0 -k "$K" -- true
	run -75 "$RLOCK" -w 0.1 -q -k "$K" -- true
	run -0 "$RLOCK" status --json "$K"
	echo "$output" | jq -e '.[0].holders[0].skips == 3 and
	    .[0].last_run == null'
	touch "$T/go"
	wait "${PIDS[0]}"
	run -1 "$RLOCK" status --json "$K"
	who=$(id -un)
	echo "$output" | jq -e --arg u "$who" '.[0].last_run | .skips == 3 and
	    .last_skip.user == $u and (.last_skip.at_ms | type) == "number"'
	run -1 "$RLOCK" status "$K"
	assert_line --regexp "^  skipped     3 runs, the last by $who@"
	# A new run starts the count afresh.
	run -0 "$RLOCK" -k "$K" -- true
	run -1 "$RLOCK" status --json "$K"
	echo "$output" | jq -e '.[0].last_run | .skips == 0 and .last_skip == null'
}

@test "the record rides on the release: two scripts per uncontended run, no other write" {
	local i calls
	"$RLOCK" -k "$K-warm" -- true
	rcli config resetstat > /dev/null
	for i in 1 2 3 4 5; do
		"$RLOCK" -k "$K-$i" -- true
	done
	calls=$(rcli info commandstats | sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),.*/\1 \2/p')
	echo "$calls" | sed 's/^/# /' >&3
	# acquire and release, nothing else that runs a script or writes
	# from the client (the record is written inside the release).
	[ "$(echo "$calls" | awk '$1 == "evalsha" || $1 == "eval" { n += $2 } END { print n }')" = 10 ]
	for i in 1 2 3 4 5; do
		[ "$(rcli hget "rlock:{$K-$i}:last" exit)" = 0 ]
	done
}

# A cron fleet's minute: every host but one finds KEY held. Each such run
# costs Redis one script call, which counts the skip and names the holder
# (no HGETALL, no record.lua after it).
@test "a run skipped with -n is one script call: the count and the holder come with its answer" {
	local calls me
	me=$(id -un)
	"$RLOCK" --min-hold 1m -k "$K" -- true
	rcli config resetstat > /dev/null
	run -75 --separate-stderr "$RLOCK" -n -k "$K" -- true
	[[ $stderr =~ ^"rlock: '$K' is held by $me@"[^\ ]+" (pid "[0-9]+": true; run ended, --min-hold until "[0-9]{2}:[0-9]{2}:[0-9]{2}"); not waiting (--nonblock)"$ ]] ||
		fail "$stderr"
	calls=$(rcli info commandstats | sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),.*/\1 \2/p')
	echo "$calls" | sed 's/^/# /' >&3
	[ "$(echo "$calls" | awk '$1 == "evalsha" || $1 == "eval" { n += $2 } END { print n }')" = 1 ]
	echo "$calls" | grep -q '^hgetall ' && fail "HGETALL: $calls"
	run -0 "$RLOCK" status "$K"
	assert_line --regexp "^  skipped     1 run, the last by $me@"
}

@test "status --prometheus: valid for promtool, one series per KEY, exit as status" {
	local weird=$'we"ird\\key\nwith\xff'
	"$RLOCK" -k "$K-done" -- true
	"$RLOCK" -n -q -k "$K-done" -- true
	run -2 "$RLOCK" --min-hold "$(tf 20)" -k "$K-hold" -- sh -c 'exit 2'
	"$RLOCK" -k "$weird" -- true
	"$RLOCK" -N 3 -k "$K-sem" -- sh -c \
	    'while [ ! -e "$T/go" ]; do sleep 0.02; done' &
	PIDS+=($!)
	wait_until "$(tf 3)" some "rlock:{$K-sem}:sem"
	run -1 --separate-stderr "$RLOCK" status --prometheus "$K-done" \
	    "$K-hold" "$weird" "$K-sem" "$K-never" "$K-done"
	echo "$output" > "$T/rlock.prom"
	run -0 promtool check metrics < "$T/rlock.prom"
	run cat "$T/rlock.prom"
	assert_line "rlock_held{key=\"$K-hold\"} 1"
	assert_line "rlock_held{key=\"$K-never\"} 0"
	assert_line "rlock_held{key=\"$K-sem\"} 1"
	assert_line 'rlock_held{key="we\"ird\\key\nwith\\xff"} 0'
	assert_line "rlock_last_run_exit_status{key=\"$K-hold\"} 2"
	assert_line "rlock_last_run_exit_status{key=\"$K-done\"} 0"
	assert_line "rlock_skipped_runs{key=\"$K-done\"} 0"
	assert_line --regexp "^rlock_last_success_timestamp_seconds\\{key=\"$K-done\"\\} [0-9]+\\.[0-9]{3}\$"
	# A KEY never run has no last-run series; each family once, each
	# KEY once in it.
	refute_line --partial "rlock_last_run_end_timestamp_seconds{key=\"$K-never\"}"
	[ "$(grep -c '^# TYPE rlock_held gauge$' "$T/rlock.prom")" = 1 ]
	[ "$(grep -c "^rlock_held{key=\"$K-done\"}" "$T/rlock.prom")" = 1 ]
	run -0 "$RLOCK" status --prometheus "$K-hold" "$K-sem"
	touch "$T/go"
	wait "${PIDS[0]}"
	run -64 "$RLOCK" status --json --prometheus "$K"
	run -64 "$RLOCK" list --prometheus
}

# with_syslog SCRIPT: run SCRIPT (bash) in a private mount namespace whose
# /dev/log is a datagram socket of ours; prints what syslog(3) sent it,
# one message a line. Needs root (CI runs as root).
with_syslog() {
	[ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null ||
		skip "needs root for a private mount namespace"
	cat > "$T/syslogd.py" <<-'EOF'
	import socket, sys
	s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
	s.bind("/dev/log")
	open(sys.argv[1] + ".ready", "w").close()
	with open(sys.argv[1], "ab", buffering=0) as f:
	    while True:
	        f.write(s.recv(65536).replace(b"\n", b" ") + b"\n")
	EOF
	# /dev of our own: a tmpfs with the host's null, zero, urandom bound
	# into it, and our socket as /dev/log.
	timeout "$(tf 60)" unshare -m bash -c '
		set -e
		mkdir "$T/hostdev"
		mount --bind /dev "$T/hostdev"
		mount -t tmpfs tmpfs /dev
		for n in null zero urandom random; do
			touch /dev/$n
			mount --bind "$T/hostdev/$n" /dev/$n
		done
		ln -s /proc/self/fd /dev/fd
		python3 "$T/syslogd.py" "$T/log" & d=$!
		for i in $(seq 500); do [ -e "$T/log.ready" ] && break; sleep 0.01; done
		bash "$1" || true
		sleep 0.2
		kill $d
	' with_syslog "$1" 3>&-
	cat "$T/log"
}

@test "--syslog: one line per event, ident rlock; -q silences stderr, not syslog" {
	# The hold and the lease scale with TIME_FACTOR: under valgrind one
	# start takes half a second.
	export HOLD LEASE NAP
	HOLD=$(tf 2) LEASE=$(tf 0.5) NAP=$(tf 1)
	cat > "$T/run.sh" <<-'EOF'
	"$RLOCK" --syslog -q --min-hold "$HOLD" -k "$K" -- sh -c 'exit 3' 2> "$T/err1"
	"$RLOCK" --syslog -q -n -k "$K" -- true 2> "$T/err2"
	"$RLOCK" --syslog -q --max-hold 0.2 -k "$K-m" -- sleep 5 2> "$T/err3"
	"$RLOCK" --syslog -q -l "$LEASE" -k "$K-l" -- sh -c 'redis-cli -s "$REDIS_SOCK" del "rlock:{$RLOCK_KEY}" > /dev/null; sleep "$NAP"' 2> "$T/err4"
	"$RLOCK" --syslog -q -u redis://127.0.0.1:1 -k "$K" -- true 2> "$T/err5"
	"$RLOCK" -q -n -k "$K" -- true
	EOF
	run with_syslog "$T/run.sh"
	printf '# %s\n' "${lines[@]}" >&3
	# <14> user.info, <12> user.warning, <13> user.notice, <11> user.err
	assert_line --regexp "^<14>.* rlock\[[0-9]+\]: acquired '$K' after [0-9.]+m?s \(fence [0-9]+\)$"
	assert_line --regexp "^<12>.* rlock\[[0-9]+\]: released '$K' after [0-9.]+m?s: exit 3; --min-hold keeps it [0-9.]+m?s more$"
	assert_line --regexp "^<13>.* rlock\[[0-9]+\]: '$K' is held by .*; not waiting \(--nonblock\)$"
	assert_line --regexp "^<11>.* rlock\[[0-9]+\]: '$K-m' has been held for --max-hold 200ms; sending SIGTERM"
	assert_line --regexp "^<12>.* rlock\[[0-9]+\]: released '$K-m' after .*: exit 124$"
	assert_line --regexp "^<11>.* rlock\[[0-9]+\]: lost the lock '$K-l': Redis says another client holds or removed it"
	assert_line --regexp "^<11>.* rlock\[[0-9]+\]: cannot reach redis://127.0.0.1:1/0: "
	# Without --syslog, nothing: 9 lines from the 5 runs above.
	[ "${#lines[@]}" = 9 ] || fail "${#lines[@]} lines"
	# -q: errors still on stderr, the rest not.
	[ ! -s "$T/err1" ] && [ ! -s "$T/err2" ]
	grep -q 'max-hold' "$T/err3"
	grep -q 'cannot reach' "$T/err5"
}

@test "--syslog -q: the eviction-policy warning reaches syslog and stderr" {
	cat > "$T/run.sh" <<-'EOF'
	redis-cli -s "$REDIS_SOCK" config set maxmemory-policy allkeys-lru > /dev/null
	"$RLOCK" --syslog -q -k "$K" -- true 2> "$T/err1"
	redis-cli -s "$REDIS_SOCK" config set maxmemory-policy noeviction > /dev/null
	EOF
	run with_syslog "$T/run.sh"
	printf '# %s\n' "${lines[@]}" >&3
	# <12> user.warning
	assert_line --regexp "^<12>.* rlock\[[0-9]+\]: warning: the server's maxmemory-policy is allkeys-lru: .*; set maxmemory-policy noeviction$"
	grep -q "^rlock: warning: the server's maxmemory-policy is allkeys-lru" \
		"$T/err1" || fail "stderr: $(cat "$T/err1")"
	[ "$(rcli config get maxmemory-policy | tail -1)" = noeviction ]
}

@test "71: the system refuses a pipe for COMMAND; the run is released and recorded" {
	# valgrind needs fds of its own above the limit, and the wrapper fd 9.
	skip_under_valgrind "it cannot start with ulimit -n 6"
	# fds 0-2, the signalfd, the stop signals' one (sig.c) and the Redis
	# socket: no room for a pipe.
	run -71 --separate-stderr bash -c 'ulimit -n 6; exec "$0" -k "$1" -- true' \
	    "$RLOCK" "$K" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
	[ "$stderr" = "rlock: cannot run COMMAND: pipe: Too many open files" ] ||
		fail "$stderr"
	[ "$(rcli exists "$L")" = 0 ]
	[ "$(rcli hget "$L:last" exit)" = 71 ]
}

@test "usage: --max-hold 0, bad durations, --prometheus off status" {
	RLOCK_URL=unix:///nonexistent run -64 "$RLOCK" --max-hold 0 -k "$K" -- true
	RLOCK_URL=unix:///nonexistent run -64 "$RLOCK" --min-hold soon -k "$K" -- true
	RLOCK_URL=unix:///nonexistent run -64 "$RLOCK" --max-hold -1 -k "$K" -- true
	RLOCK_URL=unix:///nonexistent run -64 "$RLOCK" --syslog status "$K"
	RLOCK_URL=unix:///nonexistent run -64 "$RLOCK" status --prometheus --json "$K"
}
