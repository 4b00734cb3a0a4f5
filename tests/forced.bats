#!/usr/bin/env bats
# release --force is heard at once: the holder whose lock was broken learns
# it within a second (not at its next renewal, a third of the lease later)
# and acts by its --on-lost; an element left in P{KEY}:broken is only a
# hint, never a loss by itself.

load helper

setup_file() {
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	redis_start main
}

teardown_file() {
	redis_stop main
}

setup() {
	per_test forced
	# term.sh: note a SIGTERM in $T/got and exit 3; hold until $T/go.
	cat > "$T/term.sh" <<-'EOF'
	trap 'echo TERM >> "$T/got"; exit 3' TERM
	echo $$ > "$T/cmd.pid"
	while [ ! -e "$T/go" ]; do sleep 0.02; done
	EOF
}

teardown() {
	local p
	[ -s "$T/cmd.pid" ] && PIDS+=("$(cat "$T/cmd.pid")")
	for p in "${PIDS[@]}"; do
		proc_alive "$p" && kill -KILL "$p" 2>/dev/null
	done
	rcli del "$L" "$L:meta" "$L:broken" > /dev/null
	return 0
}

# holder ARGS...: rlock ARGS -k $K (default lease: renewed every 10 s)
# running term.sh in the background, pid in $BG, once COMMAND runs.
holder() {
	rm -f "$T/cmd.pid"
	env --default-signal "$RLOCK" "$@" -k "$K" -- sh "$T/term.sh" \
	    > "$T/out" 2> "$T/err" 3>&- &
	BG=$!
	PIDS+=("$BG")
	wait_ms 5000 test -s "$T/cmd.pid" || fail "COMMAND did not start"
}

# listening: a client sits in BLPOP (the holder, on P{KEY}:broken).
listening() {
	rcli client list | grep -q ' flags=b.* cmd=blpop'
}

# let_go: COMMAND ends; the holder's status in $RC.
let_go() {
	touch "$T/go"
	RC=0
	wait "$BG" || RC=$?
}

# ended_clean: the holder, let go, exits 0 and says nothing.
ended_clean() {
	let_go
	[ "$RC" = 0 ] || fail "status $RC: $(cat "$T/err")"
	[ ! -s "$T/err" ] || fail "stderr: $(cat "$T/err")"
}

# broken_heard: release --force, then COMMAND's SIGTERM within 3 s.
broken_heard() {
	run -0 "$RLOCK" release --force "$K"
	timeout 3 sh -c 'until [ -s "$T/got" ]; do sleep 0.02; done' ||
		fail "no SIGTERM within 3 s of release --force: $(cat "$T/err")"
	[ "$(cat "$T/got")" = TERM ]
	RC=0
	wait "$BG" || RC=$?
	[ "$RC" = 70 ] || fail "status $RC: $(cat "$T/err")"
	# (sh may add "Terminated": its sleep got the SIGTERM too.)
	run grep '^rlock: ' "$T/err"
	assert_output "rlock: lost the lock '$K': Redis says another client holds or removed it; sending SIGTERM to COMMAND (pid $(cat "$T/cmd.pid"))"
}

@test "release --force while the holder listens: COMMAND gets SIGTERM at once, rlock exits 70" {
	holder
	wait_ms 5000 listening || fail "the holder does not listen"
	broken_heard
}

# holder_conns N: the file's server has N clients besides this redis-cli.
holder_conns() {
	[ "$(rcli client list | grep -cv ' cmd=client')" = "$1" ]
}

@test "a holder while COMMAND runs is two threads and two connections, one listening" {
	local threads
	holder
	wait_ms 5000 listening || fail "the holder does not listen"
	# Renewing and listening share one thread; the BLPOP has a
	# connection of its own, so that the release never waits for it.
	threads=$(sed -n 's/^Threads:[[:space:]]*//p' "/proc/$BG/status")
	[ "$threads" -le 2 ] || fail "$threads threads"
	wait_ms 3000 holder_conns 2 ||
		fail "not two connections: $(rcli client list)"
	rcli client list | grep ' name=rlock-holder ' | grep -q ' cmd=blpop' ||
		fail "no listener: $(rcli client list)"
	ended_clean
}

@test "release --force as COMMAND starts, before the holder listens: heard all the same" {
	holder
	broken_heard
}

@test "a holder that waited (its renewal thread parked) hears it as soon" {
	# A 60 s lease: the parked thread looks for its grant every 10 s.
	"$RLOCK" -k "$K" -- sh -c 'until [ -e "$T/go1" ]; do sleep 0.02; done' &
	PIDS+=($!)
	wait_ms 5000 eval '[ "$(rcli exists "$L")" = 1 ]' || fail "no first holder"
	rm -f "$T/cmd.pid"
	env --default-signal "$RLOCK" -l 60s -k "$K" -- sh "$T/term.sh" \
	    > "$T/out" 2> "$T/err" 3>&- &
	BG=$!
	PIDS+=("$BG")
	wait_ms 5000 blocked || fail "the second one does not wait"
	touch "$T/go1"
	wait_ms 5000 test -s "$T/cmd.pid" || fail "COMMAND did not start"
	sleep 0.5
	broken_heard
}

@test "release --force of a semaphore: every holder hears it" {
	local first
	holder -N 2
	first=$BG
	mv "$T/cmd.pid" "$T/first.pid"
	PIDS+=("$(cat "$T/first.pid")")
	mv "$T/term.sh" "$T/term1.sh"
	sed 's/got/got2/' "$T/term1.sh" > "$T/term.sh"
	holder -N 2
	run -0 "$RLOCK" release --force "$K"
	timeout 3 sh -c 'until [ -s "$T/got" ] && [ -s "$T/got2" ]; do
	    sleep 0.02; done' || fail "not both heard it within 3 s"
	RC=0
	wait "$first" || RC=$?
	[ "$RC" = 70 ]
	RC=0
	wait "$BG" || RC=$?
	[ "$RC" = 70 ]
}

@test "release --force with --on-lost ignore: a warning at once, COMMAND runs on, 70 at its end" {
	holder --on-lost ignore
	run -0 "$RLOCK" release --force "$K"
	timeout 3 sh -c 'until [ -s "$T/err" ]; do sleep 0.02; done' ||
		fail "no warning within 3 s of release --force"
	run cat "$T/err"
	assert_output "rlock: lost the lock '$K': Redis says another client holds or removed it; --on-lost ignore: COMMAND keeps running unguarded"
	proc_alive "$(cat "$T/cmd.pid")" || fail "COMMAND was stopped"
	[ ! -e "$T/got" ]
	let_go
	[ "$RC" = 70 ] || fail "status $RC"
}

@test "an element left in P{KEY}:broken is a hint: the holder checks and keeps its lock" {
	rcli lpush "$L:broken" 1 1 > /dev/null
	rcli pexpire "$L:broken" 5000 > /dev/null
	holder
	wait_ms 5000 listening || fail "the holder does not listen"
	wait_ms 3000 eval '[ "$(rcli llen "$L:broken")" = 0 ]' ||
		fail "the holder did not take the elements"
	ended_clean
	[ ! -e "$T/got" ]
}

@test "release --force leaves no key without an expiry" {
	holder
	wait_ms 5000 listening || fail "the holder does not listen"
	broken_heard
	run keys_without_ttl
	assert_output ''
}

@test "a holder whose user may not BLPOP runs as before" {
	rcli acl setuser noblpop on '>pw' '~*' '&*' +@all -blpop > /dev/null
	rm -f "$T/cmd.pid"
	"$RLOCK" -u "unix://noblpop:pw@$REDIS_SOCK" -n -k "$K" -- \
	    sh "$T/term.sh" > "$T/out" 2> "$T/err" 3>&- &
	BG=$!
	PIDS+=("$BG")
	wait_ms 5000 test -s "$T/cmd.pid" || fail "COMMAND did not start"
	# Its BLPOP refused (Redis counts it), and the holder goes on.
	wait_ms 5000 eval 'rcli info commandstats |
	    grep -q "^cmdstat_blpop:.*rejected_calls=[1-9]"' ||
		fail "no BLPOP was refused: $(rcli info commandstats | grep blpop)"
	let_go
	rcli acl deluser noblpop > /dev/null
	[ "$RC" = 0 ] || fail "status $RC: $(cat "$T/err")"
	[ ! -s "$T/err" ] || fail "stderr: $(cat "$T/err")"
}
