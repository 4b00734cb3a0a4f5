#!/usr/bin/env bats
# Shared (read) locks, one test per sentence of the contract's "Shared
# locks": -s holders together, excluded from -x, a waiting writer not
# starved by readers that came after it, each share's own lease (a
# SIGKILLed reader's share ends with it), fences across both modes,
# --fair across modes, 64/75/76, nesting, status, list and release
# --force. Every wait is bounded; orders are checked, not times, except
# where a share must outlive its holder (a window from the kill).

load helper

setup_file() {
	redis_start main
	closed_url
}

teardown_file() {
	redis_stop main
}

setup() {
	per_test sh
	# hold.sh NAME: COMMAND of a holder. Notes its pid, appends NAME to
	# $T/order, holds until $T/NAME.go (or $T/go) exists.
	cat > "$T/hold.sh" <<-'EOF'
	echo $$ > "$T/$1.pid"
	echo "$1" >> "$T/order"
	while [ ! -e "$T/$1.go" ] && [ ! -e "$T/go" ]; do sleep 0.02; done
	EOF
	# mark.sh NAME: appends NAME to $T/order and notes when (ms).
	cat > "$T/mark.sh" <<-'EOF'
	t=$(date +%s%3N)
	echo "$1" >> "$T/order"
	echo "$t" > "$T/$1.start.part"
	mv "$T/$1.start.part" "$T/$1.start"
	EOF
	# meet.sh NAME OTHER...: appends NAME to $T/order, says it is in,
	# then waits (10 s at most) until every OTHER is in too: status 0
	# only if they all held the lock at the same time as this one.
	cat > "$T/meet.sh" <<-'EOF'
	me=$1; shift
	echo "$me" >> "$T/order"
	touch "$T/$me.in"
	n=0
	for o in "$@"; do
		while [ ! -e "$T/$o.in" ]; do
			n=$((n + 1))
			[ $n -lt 500 ] || exit 3
			sleep 0.02
		done
	done
	EOF
}

teardown() {
	local f
	end_test_procs
	local left
	left=$(keys_without_ttl)
	rcli --scan --pattern "$L*" | while IFS= read -r f; do
		rcli del "$f" > /dev/null
	done
	[ -z "$left" ] || fail "keys without TTL: $left"
}


# reap PID MS: wait at most MS for PID to end; its status in $RC.
reap() {
	wait_ms "$2" pid_gone "$1" || fail "pid $1 still runs after $2 ms"
	RC=0
	wait "$1" || RC=$?
}

# reap_is NAME PID MS WANT: rlock NAME ends within MS with status WANT.
reap_is() {
	reap "$2" "$3"
	[ "$RC" = "$4" ] ||
		fail "$1: status $RC, want $4: $(cat "$T/$1.err" 2>/dev/null)"
}

# holder NAME [RLOCK-ARGS...]: hold $K in the background until $T/NAME.go;
# the pid of rlock in $BG. Returns once COMMAND runs.
holder() {
	local name=$1
	shift
	bg "$name" "$@" -k "$K" -- sh "$T/hold.sh" "$name"
	wait_ms 5000 test -s "$T/$name.pid" ||
		fail "$name did not start: $(cat "$T/$name.err")"
}

# end NAME PID: let holder NAME's COMMAND end; rlock must exit 0.
end() {
	touch "$T/$1.go"
	reap_is "$1" "$2" 5000 0
}

shares_are() { [ "$(rcli zcard "$L:sh")" = "$1" ]; }
writers_are() { [ "$(rcli zcard "$L:xw")" = "$1" ]; }
qlen_is() { [ "$(rcli llen "$L:q")" = "$1" ]; }
ran() { grep -qx "$1" "$T/order" 2>/dev/null; }
# order_is NAME...: what ran, in this order.
order_is() {
	[ "$(cat "$T/order")" = "$(printf '%s\n' "$@")" ] ||
		fail "order: $(tr '\n' ' ' < "$T/order")"
}
me() { echo "$(id -un)@$(hostname)"; }
# The waiting writer's claim (its score in P{K}:xw).
claim() { rcli zscore "$L:xw" "$(rcli zrange "$L:xw" 0 0)"; }
claim_is_not() { [ "$(claim)" != "$1" ]; }

@test "shared: -s holders hold KEY together" {
	local a b
	bg a -s -k "$K" -- sh "$T/meet.sh" a b
	a=$BG
	bg b -s -k "$K" -- sh "$T/meet.sh" b a
	b=$BG
	reap_is a "$a" 15000 0
	reap_is b "$b" 15000 0
	# Both let go: nothing of KEY is held, nothing left without expiry.
	run -1 "$RLOCK" status "$K"
	[ "$(rcli exists "$L" "$L:sh")" = 0 ]
}

@test "shared: -x waits while -s holds, -s while -x holds; -n gives 75" {
	local r w x s
	holder r -s
	r=$BG
	run -75 --separate-stderr "$RLOCK" -n -k "$K" -- echo must-not-run
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "rlock: '$K' is held by 1 shared holder ($(me), pid $r: sh $T/hold.sh r); not waiting (--nonblock)" ]] ||
		fail "stderr: $stderr"
	bg w -w "$(tf 20)" -k "$K" -- sh "$T/mark.sh" w
	w=$BG
	wait_until 5 writers_are 1 || fail "the writer does not wait"
	! ran w || fail "the writer ran beside a reader"
	end r "$r"
	reap_is w "$w" 5000 0
	# And the other way round.
	holder x -x
	x=$BG
	run -75 --separate-stderr "$RLOCK" -s -n -k "$K" -- echo must-not-run
	[ -z "$output" ]
	[[ $stderr == "rlock: '$K' is held by $(me) (pid $x: sh $T/hold.sh x); not waiting (--nonblock)" ]] ||
		fail "stderr: $stderr"
	bg s -s -w "$(tf 20)" -k "$K" -- sh "$T/mark.sh" s
	s=$BG
	wait_until 5 blocked_is 1 || fail "the reader does not wait"
	! ran s || fail "the reader ran beside a writer"
	end x "$x"
	reap_is s "$s" 5000 0
	order_is r w x s
}

@test "shared: a waiting writer stops new readers; those after it come after it" {
	local r1 r2 w b c
	holder r1 -s
	r1=$BG
	holder r2 -s
	r2=$BG
	bg w -w "$(tf 30)" -k "$K" -- sh "$T/mark.sh" w
	w=$BG
	wait_until 5 writers_are 1 || fail "the writer does not wait"
	# Readers that come now wait, though readers hold KEY: -n says so.
	run -75 --separate-stderr "$RLOCK" -s -n -k "$K" -- echo must-not-run
	[[ $stderr == *"is held by 2 shared holders"*"an exclusive request is waiting; not waiting (--nonblock)" ]] ||
		fail "stderr: $stderr"
	bg b -s -w "$(tf 30)" -k "$K" -- sh "$T/mark.sh" b
	b=$BG
	bg c -s -w "$(tf 30)" -k "$K" -- sh "$T/mark.sh" c
	c=$BG
	wait_until 5 blocked_is 3 || fail "the readers do not wait"
	# The readers inside leave one by one; only then the writer.
	end r1 "$r1"
	! ran w && ! ran b && ! ran c || fail "in beside r2: $(cat "$T/order")"
	end r2 "$r2"
	reap_is w "$w" 5000 0
	reap_is b "$b" 5000 0
	reap_is c "$c" 5000 0
	[ "$(sed -n 3p "$T/order")" = w ] ||
		fail "order: $(tr '\n' ' ' < "$T/order")"
}

@test "shared: the last reader's release wakes the writer; the writer's, every reader" {
	local r w a b c
	holder r -s -l "$(tf 30)"
	r=$BG
	bg w -v -w "$(tf 20)" -k "$K" -- sh "$T/hold.sh" w
	w=$BG
	wait_until 5 writers_are 1 || fail "the writer does not wait"
	touch "$T/r.go"
	reap_is r "$r" 5000 0
	wait_ms 5000 test -s "$T/w.pid" || fail "the writer did not get in"
	grep -q 'acquired after .* (woken by a release)' "$T/w.err" ||
		fail "writer: $(cat "$T/w.err")"
	# Three readers wait for the writer; its release lets them all in,
	# together (each waits for the two others inside).
	bg a -v -s -w "$(tf 20)" -k "$K" -- sh "$T/meet.sh" a b c
	a=$BG
	bg b -v -s -w "$(tf 20)" -k "$K" -- sh "$T/meet.sh" b a c
	b=$BG
	bg c -v -s -w "$(tf 20)" -k "$K" -- sh "$T/meet.sh" c a b
	c=$BG
	wait_until 5 blocked_is 3 || fail "the readers do not wait"
	end w "$w"
	reap_is a "$a" 15000 0
	reap_is b "$b" 15000 0
	reap_is c "$c" 15000 0
	for n in a b c; do
		grep -q '(woken by a release)' "$T/$n.err" ||
			fail "$n: $(cat "$T/$n.err")"
	done
}

# The last reader's wake token must reach the writer, not a reader that
# waits for the writer (which would only go back to sleep): r2 blocks
# before the writer's next attempt, so it has waited longer in BLPOP.
@test "shared: the last reader's release wakes the writer, not a reader behind it" {
	local r w r2 s0
	holder r -s -l "$(tf 30)"
	r=$BG
	bg w -v -w "$(tf 20)" -k "$K" -- sh "$T/hold.sh" w
	w=$BG
	wait_until 5 writers_are 1 || fail "the writer does not wait"
	bg r2 -s -w "$(tf 20)" -k "$K" -- sh "$T/mark.sh" r2
	r2=$BG
	wait_until 5 blocked_is 2 || fail "r2 does not wait"
	s0=$(claim)
	# The writer's next attempt (it renews its claim): it blocks again
	# after r2.
	wait_until 5 claim_is_not "$s0" || fail "the writer does not renew its claim"
	wait_until 5 blocked_is 2 || fail "the writer does not block again"
	touch "$T/r.go"
	reap_is r "$r" 5000 0
	wait_ms 5000 test -s "$T/w.pid" || fail "the writer did not get in"
	grep -q 'acquired after .* (woken by a release)' "$T/w.err" ||
		fail "writer: $(cat "$T/w.err")"
	! ran r2 || fail "r2 ran before the writer ended"
	end w "$w"
	reap_is r2 "$r2" 5000 0
}

@test "shared: a waiting writer that died stops readers for a few seconds at most" {
	local r w s
	holder r -s -l "$(tf 30)"
	r=$BG
	bg w -k "$K" -- sh "$T/mark.sh" w
	w=$BG
	wait_until 5 writers_are 1 || fail "the writer does not wait"
	kill -KILL "$w"
	bg s -s -w "$(tf 15)" -k "$K" -- sh "$T/mark.sh" s
	s=$BG
	reap_is s "$s" "$(tf_ms 10000)" 0
	# The reader got in beside r, which still holds.
	proc_alive "$r" || fail "r ended"
	! ran w
	wait_until 10 writers_are 0 || fail "the dead writer stays registered"
}

@test "shared: a writer that gives up (-w) leaves at once" {
	local r
	holder r -s
	r=$BG
	run -75 "$RLOCK" -w "$(tf 0.5)" -k "$K" -- echo must-not-run
	writers_are 0 || fail "still registered: $(rcli zrange "$L:xw" 0 -1)"
	run -0 "$RLOCK" -s -n -k "$K" -- true
}

@test "shared: a SIGKILLed reader's share ends with its own lease" {
	local r1 r2 w t0 lease start
	lease=$(tf_ms 3000)
	holder r1 -s -l "${lease}ms"
	r1=$BG
	holder r2 -s -l "$(tf 30)"
	r2=$BG
	kill -KILL "$r1"
	t0=$(now_ms)
	bg w -w "$(tf 20)" -k "$K" -- sh "$T/mark.sh" w
	w=$BG
	wait_until 5 writers_are 1 || fail "the writer does not wait"
	# r2 leaves normally; r1's share stays until its lease ends, which
	# is at least two thirds of a lease after the kill (it renewed at
	# most a third of a lease before it).
	end r2 "$r2"
	reap_is w "$w" "$(tf_ms 20000)" 0
	start=$(cat "$T/w.start")
	[ $((start - t0)) -ge $((lease * 2 / 3 - 50)) ] ||
		fail "the writer got in $((start - t0)) ms after the kill"
}

@test "shared: each share has its own lease, renewal and release" {
	local a b ta tb
	holder a -s -l "$(tf 1)"
	a=$BG
	holder b -s -l "$(tf 30)"
	b=$BG
	shares_are 2
	ta=$(rcli zscore "$L:sh" "$(rcli zrange "$L:sh" 0 0)")
	# a renews its short lease on its own: still in after three leases.
	sleep "$(tf 3)"
	shares_are 2 || fail "a share lapsed"
	proc_alive "$a" && proc_alive "$b"
	tb=$(rcli zscore "$L:sh" "$(rcli zrange "$L:sh" 0 0)")
	[ "${tb%.*}" -gt "${ta%.*}" ] || fail "no renewal: $ta $tb"
	end a "$a"
	shares_are 1
	[ "$(rcli exists "$L")" = 1 ]
	end b "$b"
	[ "$(rcli exists "$L" "$L:sh")" = 0 ]
}

@test "shared: fencing tokens strictly increase across both modes" {
	local f1 f2 f3 f4 a b
	f1=$("$RLOCK" -k "$K" -- sh -c 'echo $RLOCK_FENCE')
	bg a -s -k "$K" -- sh -c 'echo $RLOCK_FENCE; sh "$T/meet.sh" a b'
	a=$BG
	bg b -s -k "$K" -- sh -c 'echo $RLOCK_FENCE; sh "$T/meet.sh" b a'
	b=$BG
	reap_is a "$a" 15000 0
	reap_is b "$b" 15000 0
	f2=$(cat "$T/a.out")
	f3=$(cat "$T/b.out")
	f4=$("$RLOCK" -x -k "$K" -- sh -c 'echo $RLOCK_FENCE')
	[ "$f2" != "$f3" ] || fail "two shares, one fence: $f2"
	[ "$f1" -lt "$f2" ] && [ "$f1" -lt "$f3" ] &&
		[ "$f2" -lt "$f4" ] && [ "$f3" -lt "$f4" ] ||
		fail "fences $f1 $f2 $f3 $f4"
}

@test "shared: a nested -s re-enters under -s and under -x" {
	run -0 --separate-stderr "$RLOCK" -s -k "$K" -- sh -c \
		'"$RLOCK" -s -n -k "$RLOCK_KEY" -- sh -c "echo in \$RLOCK_TOKEN"; echo "out $RLOCK_TOKEN"'
	[ "${#lines[@]}" = 2 ]
	[ "${lines[0]#in }" = "${lines[1]#out }" ] || fail "$output"
	[ -z "$stderr" ]
	run -0 --separate-stderr "$RLOCK" -x -k "$K" -- \
		"$RLOCK" -s -n -k "$K" -- echo nested
	assert_output nested
	[ -z "$stderr" ]
	# Nested exclusive under exclusive, as before.
	run -0 "$RLOCK" -k "$K" -- "$RLOCK" -n -k "$K" -- echo nested
	assert_output nested
}

@test "shared: a nested -x under -s is no upgrade: 75 at once, with a line" {
	run -75 --separate-stderr timeout "$(tf 10)" "$RLOCK" -s -k "$K" -- \
		"$RLOCK" -x -w 60 -k "$K" -- echo must-not-run
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	[[ $stderr == "rlock: '$K' is held shared by an ancestor of this rlock; an exclusive lock would be an upgrade, which rlock does not do: take '$K' exclusively in the ancestor" ]] ||
		fail "stderr: $stderr"
	# -E replaces 75, as for any lock not obtained.
	run -9 "$RLOCK" -s -k "$K" -- "$RLOCK" -E 9 -k "$K" -- true
}

@test "shared: -s with -N, or with --redlock, is a usage error (64)" {
	usage_error "--shared does not go with --limit" -s -N 2 -k "$K" -- true
	usage_error "--shared does not go with --limit" -N 1 --shared -k "$K" -- true
	usage_error "--shared does not go with --redlock" -s --redlock \
		-u "$CLOSED_URL" -u "$CLOSED_URL/1" -u "$CLOSED_URL/2" -k "$K" -- true
	# The last of -s and -x counts, as in flock.
	holder x -s -x
	run -75 "$RLOCK" -s -n -k "$K" -- true
}

@test "shared: a KEY used as a semaphore and as a shared lock: 76" {
	local h
	holder h -N 2
	h=$BG
	run -76 --separate-stderr "$RLOCK" -s -n -k "$K" -- echo must-not-run
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "rlock: "*"in use as a semaphore (--limit 2)"* ]] ||
		fail "stderr: $stderr"
	end h "$h"
	holder s -s
	run -76 --separate-stderr "$RLOCK" -N 2 -n -k "$K" -- echo must-not-run
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "rlock: "*"in use as a shared lock (--shared)"* ]] ||
		fail "stderr: $stderr"
}

@test "shared: --fair serves both modes in arrival order, readers at the head together" {
	local x r1 r2 w3 r4
	holder x -x
	x=$BG
	bg r1 --fair -s -k "$K" -- sh "$T/meet.sh" r1 r2
	r1=$BG
	wait_until 5 qlen_is 1 || fail "r1 not queued"
	bg r2 --fair -s -k "$K" -- sh "$T/meet.sh" r2 r1
	r2=$BG
	wait_until 5 qlen_is 2 || fail "r2 not queued"
	bg w3 --fair -x -k "$K" -- sh "$T/mark.sh" w3
	w3=$BG
	wait_until 5 qlen_is 3 || fail "w3 not queued"
	bg r4 --fair -s -k "$K" -- sh "$T/mark.sh" r4
	r4=$BG
	wait_until 5 qlen_is 4 || fail "r4 not queued"
	end x "$x"
	reap_is r1 "$r1" 15000 0
	reap_is r2 "$r2" 15000 0
	reap_is w3 "$w3" 5000 0
	reap_is r4 "$r4" 5000 0
	[ "$(sed -n 1p "$T/order")" = x ] &&
		[ "$(sed -n 2,3p "$T/order" | sort | tr '\n' ' ')" = "r1 r2 " ] &&
		[ "$(sed -n 4,5p "$T/order" | tr '\n' ' ')" = "w3 r4 " ] ||
		fail "order: $(tr '\n' ' ' < "$T/order")"
}

@test "shared: status shows the mode and every shared holder, text and JSON" {
	local a b
	holder a -s -l "$(tf 10)"
	a=$BG
	holder b -s -l "$(tf 10)"
	b=$BG
	run -0 --separate-stderr "$RLOCK" status "$K"
	[ -z "$stderr" ]
	assert_line --index 0 "$K: held (shared, 2 holders)"
	assert_line "  holder      $(me), pid $a"
	assert_line "  holder      $(me), pid $b"
	assert_line "  command     sh $T/hold.sh a"
	[ "$(grep -c '^  fence ' <<< "$output")" = 2 ]
	[ "$(grep -c '^  lease left  ' <<< "$output")" = 2 ]
	run -0 "$RLOCK" status --json "$K"
	jq -e --arg me "$(id -un)" --arg host "$(hostname)" \
		--argjson a "$a" --argjson b "$b" '
		.[0] | .held == true and .mode == "shared" and .limit == null and
		(.holders | length == 2) and
		([.holders[].pid] | sort == ([$a, $b] | sort)) and
		all(.holders[]; .user == $me and .host == $host and
		    (.command | startswith("sh ")) and .since_ms > 0 and
		    .lease_ms > 0 and .lease_left_ms > 0 and .fence > 0) and
		(.holders[0].fence != .holders[1].fence)' <<< "$output" ||
		fail "json: $output"
	run -0 "$RLOCK" status --prometheus "$K"
	assert_line --regexp "^rlock_held\\{key=\"$K\"\\} 1\$"
	# An exclusive holder keeps "mutex".
	end a "$a"
	end b "$b"
	holder x -x
	run -0 "$RLOCK" status --json "$K"
	[ "$(jq -r '.[0].mode' <<< "$output")" = mutex ]
}

@test "shared: list shows a shared KEY once" {
	local a b
	holder a -s
	a=$BG
	holder b -s
	b=$BG
	run -0 --separate-stderr "$RLOCK" list "$K"
	[ "${#lines[@]}" = 1 ] || fail "list: $output"
	[[ ${lines[0]} == "$K"$'\t'"$(me), pid "[0-9]*" +1"$'\t'*$'\tshared 2\t'* ]] ||
		fail "list: $output"
	run -0 "$RLOCK" list --json "$K"
	[ "$(jq -r 'length' <<< "$output")" = 1 ]
	[ "$(jq -r '.[0].mode' <<< "$output")" = shared ]
}

@test "shared: release --force breaks every share; the holders learn it" {
	local a b
	holder a -s -l "$(tf 1)" --on-lost term
	a=$BG
	holder b -s -l "$(tf 1)" --on-lost term
	b=$BG
	run -0 --separate-stderr "$RLOCK" release --force "$K"
	[ -z "$stderr" ]
	[ "${#lines[@]}" = 2 ] || fail "output: $output"
	assert_line "broke '$K', held by $(me), pid $a: sh $T/hold.sh a"
	assert_line "broke '$K', held by $(me), pid $b: sh $T/hold.sh b"
	[ "$(rcli exists "$L" "$L:sh")" = 0 ]
	reap_is a "$a" "$(tf_ms 5000)" 70
	reap_is b "$b" "$(tf_ms 5000)" 70
	run -1 "$RLOCK" release --force "$K"
	run -0 "$RLOCK" -x -n -k "$K" -- true
}
