#!/usr/bin/env bats
# Signals and endings: the lock is released however COMMAND ends, signals
# to rlock reach COMMAND (or, before it starts, end rlock within a second:
# reading a file, connecting, waiting), a SIGKILLed rlock does not
# leave COMMAND running unguarded, and COMMAND starts with the signal
# dispositions rlock was started with, none blocked, and rlock's stdin and
# stdout.

load helper

SIGS="INT TERM HUP QUIT USR1 USR2"

setup_file() {
	# One Redis per file, which tests stop and restart: never in parallel.
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	redis_start main
}

teardown_file() {
	redis_stop main
}

setup() {
	per_test sig
	# trap.sh SIG: exit 42 from a trap of SIG, after noting it.
	cat > "$T/trap.sh" <<-'EOF'
	trap 'echo "got $1" >> "$T/marker"; kill $! 2>/dev/null; exit 42' "$1"
	echo $$ > "$T/cmd.pid"
	sleep 30 & wait
	EOF
	# hold.sh: hold until $T/go exists.
	cat > "$T/hold.sh" <<-'EOF'
	echo $$ > "$T/cmd.pid"
	while [ ! -e "$T/go" ]; do sleep 0.02; done
	EOF
}

teardown() {
	local p f
	for f in "$T"/*.pid; do
		[ -s "$f" ] && PIDS+=("$(cat "$f")")
	done
	for p in "${PIDS[@]}"; do
		proc_alive "$p" && kill -KILL "$p" 2>/dev/null
	done
	rcli client unpause > /dev/null
	rcli del "$L" "$L:meta" > /dev/null
	return 0
}

# bg_rlock RLOCK-ARGS...: rlock in the background, pid in $BG. bash starts
# background jobs with SIGINT and SIGQUIT ignored, and a suite run under
# nohup(1) ignores SIGHUP (which rlock then rightly keeps ignoring): env
# gives every signal its default action, as a job started from a terminal
# would have them.
bg_rlock() {
	env --default-signal "$RLOCK" "$@" > "$T/out" 2> "$T/err" \
	    3>&- &
	BG=$!
	PIDS+=("$BG")
}

# wait_cmd: wait for COMMAND to write $T/cmd.pid; its pid in $CMD.
wait_cmd() {
	wait_ms 5000 test -s "$T/cmd.pid" || fail "COMMAND did not start"
	CMD=$(cat "$T/cmd.pid")
}

death_ms() { # PID MS (scaled)
	local end=$(( $(now_ms) + $(tf_ms "$2") ))
	while proc_alive "$1"; do
		[ "$(now_ms)" -lt "$end" ] || return 1
		nap 0.005
	done
	now_ms
}

signum() { kill -l "$1"; }

# The lock is free right now: the key is gone and another rlock gets it.
assert_released() {
	released "$K" || fail "key still there: $(rcli pttl "$L")ms left"
	run -0 "$RLOCK" -n -k "$K" true
	run keys_without_ttl
	assert_output ''
}

@test "released when COMMAND exits 0" {
	run -0 --separate-stderr "$RLOCK" -k "$K" -- true
	[ -z "$stderr" ]
	assert_released
}

@test "released when COMMAND exits non-zero, with its status" {
	run -3 --separate-stderr "$RLOCK" -k "$K" -- sh -c 'exit 3'
	[ -z "$stderr" ]
	assert_released
}

@test "released when COMMAND is killed by a signal: 128+N" {
	run -137 "$RLOCK" -k "$K" -- sh -c 'kill -KILL $$'
	assert_released
	run -143 "$RLOCK" -k "$K" -- sh -c 'kill -TERM $$'
	assert_released
}

# forwarded SIG: SIG sent to rlock reaches COMMAND, whose trap exits 42;
# rlock exits 42 and the lock is free at once.
forwarded() {
	local sig=$1 t0 t1
	rm -f "$T/cmd.pid" "$T/marker"
	bg_rlock -k "$K" -- sh "$T/trap.sh" "$sig"
	wait_cmd
	[ "$(rcli exists "$L")" = 1 ]
	t0=$(now_ms)
	kill -"$sig" "$BG"
	reap "$BG" 3000
	t1=$(now_ms)
	[ "$RC" = 42 ] || fail "SIG$sig: status $RC: $(cat "$T/err")"
	[ "$(cat "$T/marker")" = "got $sig" ] || fail "SIG$sig not forwarded"
	[ $((t1 - t0)) -lt "$(tf_ms 1000)" ] ||
		fail "SIG$sig: exit after $((t1 - t0))ms"
	assert_released
}

@test "SIGINT to rlock is forwarded; COMMAND's status; released" {
	forwarded INT
}

@test "SIGTERM to rlock is forwarded; COMMAND's status; released" {
	forwarded TERM
}

@test "SIGHUP to rlock is forwarded; COMMAND's status; released" {
	forwarded HUP
}

@test "SIGQUIT to rlock is forwarded; COMMAND's status; released" {
	forwarded QUIT
}

@test "SIGUSR1 to rlock is forwarded; COMMAND's status; released" {
	forwarded USR1
}

@test "SIGUSR2 to rlock is forwarded; COMMAND's status; released" {
	forwarded USR2
}

@test "a forwarded signal that kills COMMAND: 128+N, released" {
	local sig
	for sig in $SIGS; do
		rm -f "$T/cmd.pid"
		bg_rlock -k "$K" -- sh -c 'echo $$ > "$T/cmd.pid"; exec sleep 30'
		wait_cmd
		kill -"$sig" "$BG"
		reap "$BG" 3000
		[ "$RC" = $((128 + $(signum "$sig"))) ] ||
			fail "SIG$sig: status $RC: $(cat "$T/err")"
		assert_released
	done
}

@test "rlock keeps the lock while COMMAND handles a forwarded signal" {
	cat > "$T/slow.sh" <<-'EOF'
	trap 'echo got >> "$T/marker"' TERM
	echo $$ > "$T/cmd.pid"
	while [ ! -e "$T/go" ]; do sleep 0.02; done
	exit 7
	EOF
	bg_rlock -l "$(tf 1)" -k "$K" -- sh "$T/slow.sh"
	wait_cmd
	kill -TERM "$BG"
	wait_ms 2000 test -s "$T/marker" || fail "SIGTERM not forwarded"
	# Past a whole lease: rlock still waits for COMMAND and renews.
	sleep "$(tf 1.2)"
	proc_alive "$BG" || fail "rlock ended before COMMAND"
	[ "$(rcli pttl "$L")" -gt 0 ]
	touch "$T/go"
	reap "$BG" 3000
	[ "$RC" = 7 ]
	assert_released
}

@test "a signal while waiting: 128+N at once, COMMAND never runs, no trace" {
	local sig before t0 t1
	bg_rlock -k "$K" -- sh "$T/hold.sh"
	HOLDER=$BG
	wait_cmd
	before=$(our_keys)
	for sig in $SIGS; do
		bg_rlock -k "$K" -- sh -c 'touch "$T/ran"'
		wait_ms 3000 waiting 1 || fail "waiter not waiting"
		t0=$(now_ms)
		kill -"$sig" "$BG"
		reap "$BG" 3000
		t1=$(now_ms)
		[ "$RC" = $((128 + $(signum "$sig"))) ] ||
			fail "SIG$sig: status $RC: $(cat "$T/err")"
		[ $((t1 - t0)) -lt "$(tf_ms 1000)" ] ||
			fail "SIG$sig: exit after $((t1 - t0))ms"
		[ ! -e "$T/ran" ] || fail "COMMAND ran after SIG$sig"
		waiting 0 || fail "still waiting in Redis after SIG$sig"
		[ "$(our_keys)" = "$before" ] ||
			fail "Redis changed after SIG$sig: $(our_keys |
			    diff <(echo "$before") -)"
	done
	touch "$T/go"
	reap "$HOLDER" 3000
	[ "$RC" = 0 ]
	assert_released
}

@test "a SIGHUP its caller ignored (nohup) does not end a wait" {
	bg_rlock -k "$K" -- sh "$T/hold.sh"
	HOLDER=$BG
	wait_cmd
	env --default-signal --ignore-signal=HUP "$RLOCK" -k "$K" -- \
	    sh -c 'touch "$T/ran"' > "$T/out" 2> "$T/err" 3>&- &
	BG=$!
	PIDS+=("$BG")
	wait_ms 3000 waiting 1 || fail "waiter not waiting"
	kill -HUP "$BG"
	# Time for a wait that heard it to end (before the fix: 129).
	nap 0.2
	touch "$T/go"
	reap "$BG" 5000
	[ "$RC" = 0 ] || fail "status $RC: $(cat "$T/err")"
	[ -e "$T/ran" ]
	reap "$HOLDER" 3000
	assert_released
}

@test "a SIGCHLD its caller ignored: COMMAND's status, and ignored in COMMAND" {
	# Ignored, the kernel would reap COMMAND and rlock never hear it end
	# (before the fix: held until timeout killed it).
	run -3 timeout -s KILL "$(tf 10)" env --default-signal \
	    --ignore-signal=CHLD "$RLOCK" -k "$K" -- sh -c 'exit 3'
	assert_released
	# Under valgrind the disposition rlock sets before the exec is
	# valgrind's bookkeeping, not the kernel's: the exec does not see it.
	under_valgrind && return
	sigstate --default-signal --ignore-signal=CHLD
	local ign
	ign=$(printf '%s\n' "${lines[@]}" | sed -n 's/^SigIgn:[[:space:]]*//p')
	[ $(( 0x$ign & 0x10000 )) = $(( 0x10000 )) ] ||
		fail "SIGCHLD not ignored in COMMAND: SigIgn $ign"
}

# group_once SIG TRIES: rlock leads its own process group (setsid: no
# terminal, as under cron, systemd or a supervisor); SIG sent to that
# whole group reaches COMMAND exactly once, TRIES times in a row.
group_once() {
	local sig=$1 i n
	# count.pl SIG: counts SIG; exits 10 + the count, a while after the
	# first (time for a second one to come).
	cat > "$T/count.pl" <<-'EOF'
	my $n = 0;
	$SIG{$ARGV[0]} = sub { $n++ };
	open(my $f, ">", "$ENV{T}/cmd.pid"); print $f "$$\n"; close($f);
	select(undef, undef, undef, 0.01) until $n;
	select(undef, undef, undef, $ARGV[1]);
	exit 10 + $n;
	EOF
	for ((i = 1; i <= $2; i++)); do
		rm -f "$T/cmd.pid"
		env --default-signal setsid "$RLOCK" -k "$K" -- \
		    perl "$T/count.pl" "$sig" "$(tf 0.15)" > "$T/out" \
		    2> "$T/err" 3>&- &
		BG=$!
		PIDS+=("$BG")
		wait_cmd
		[ "$(ps -o pgid= -p "$BG" | tr -d ' ')" = "$BG" ] ||
			fail "rlock does not lead its process group"
		kill -"$sig" -- -"$BG"
		reap "$BG" 5000
		n=$((RC - 10))
		[ "$n" = 1 ] ||
			fail "try $i: SIG$sig reached COMMAND $n times (status $RC: $(cat "$T/err"))"
	done
	assert_released
}

@test "SIGINT to rlock's whole process group reaches COMMAND once (30 tries)" {
	group_once INT 30
}

@test "SIGTERM to rlock's whole process group reaches COMMAND once (30 tries)" {
	group_once TERM 30
}

@test "without a terminal, a forwarded signal reaches COMMAND's children too" {
	local kid
	rm -f "$T/cmd.pid"
	# setsid: no controlling terminal, even under a developer's make check.
	env --default-signal setsid "$RLOCK" -k "$K" -- sh -c \
	    'sleep 30 & echo $! > "$T/kid"; echo $$ > "$T/cmd.pid"; wait' \
	    > "$T/out" 2> "$T/err" 3>&- &
	BG=$!
	PIDS+=("$BG")
	wait_cmd
	wait_ms 3000 test -s "$T/kid" || fail "no child"
	kid=$(cat "$T/kid")
	PIDS+=("$kid")
	kill -TERM "$BG"
	reap "$BG" 3000
	[ "$RC" = 143 ] || fail "status $RC: $(cat "$T/err")"
	wait_ms 2000 pid_gone "$kid" || fail "COMMAND's child runs on"
	assert_released
}

# Every other signal whose default action ends a process (the fault
# signals as sent by kill), and real-time ones: none may kill rlock.
MORE_SIGS="ALRM VTALRM PROF IO PWR XCPU XFSZ STKFLT SYS TRAP ABRT BUS FPE ILL SEGV RTMIN RTMIN+5 RTMAX"
# Under valgrind the fault and real-time ones are valgrind's: it ends the
# process on a fault signal rlock blocks (for its signalfd) even as sent by
# kill, and keeps real-time signals for itself. make check and make asan
# send them all.
! under_valgrind || MORE_SIGS="ALRM VTALRM PROF IO PWR XCPU XFSZ STKFLT ABRT"

@test "every other terminating signal (ALRM, real-time...) is forwarded to COMMAND; released" {
	local sig n
	for sig in $MORE_SIGS; do
		n=$(signum "$sig")
		rm -f "$T/cmd.pid" "$T/marker"
		bg_rlock -k "$K" -- sh "$T/trap.sh" "$n"
		wait_cmd
		kill -"$n" "$BG"
		reap "$BG" 3000
		[ "$RC" = 42 ] || fail "SIG$sig: status $RC: $(cat "$T/err")"
		[ "$(cat "$T/marker")" = "got $n" ] || fail "SIG$sig not forwarded"
		released "$K" || fail "SIG$sig: lock left held"
	done
	assert_released
}

@test "every other terminating signal ends a --fair wait: 128+N, no trace in Redis" {
	local sig n before
	bg_rlock -k "$K" -- sh "$T/hold.sh"
	HOLDER=$BG
	wait_cmd
	before=$(our_keys)
	for sig in $MORE_SIGS; do
		n=$(signum "$sig")
		bg_rlock --fair -k "$K" -- sh -c 'touch "$T/ran"'
		wait_ms 3000 queued 1 || fail "SIG$sig: waiter not queued"
		kill -"$n" "$BG"
		reap "$BG" 3000
		[ "$RC" = $((128 + n)) ] || fail "SIG$sig: status $RC: $(cat "$T/err")"
		[ ! -e "$T/ran" ] || fail "COMMAND ran after SIG$sig"
		[ "$(our_keys)" = "$before" ] ||
			fail "Redis changed after SIG$sig: $(our_keys |
			    diff <(echo "$before") -)"
	done
	touch "$T/go"
	reap "$HOLDER" 3000
	[ "$RC" = 0 ]
	assert_released
}

# queued N: the --fair queue holds N waiters, each with its entry in :w
# (beside the field 'server', the queue's own).
queued() {
	[ "$(rcli llen "$L:q")" = "$1" ] &&
		[ "$(rcli hkeys "$L:w" | grep -cvx server)" = "$1" ]
}

# This test's keys in Redis (earlier tests' keys expire meanwhile).
our_keys() { rcli --scan --pattern "$L*" | sort; }

# waiting N: N Redis clients sit waiting for a wake-up (blocked in a
# command, or subscribed), as rlock's waiters do; a holder listening for a
# release --force (named rlock-holder) is not one.
waiting() {
	[ "$(rcli client list | grep -v ' name=rlock-holder ' |
	    grep -cE ' flags=[a-zA-Z]*b| sub=[1-9]| psub=[1-9]| ssub=[1-9]')" = "$1" ]
}

# Signals heard at every moment before COMMAND: while rlock reads a file
# that gives nothing (a FIFO nobody writes to, a terminal nobody types
# on), while a server takes the connection and never answers, and while
# an acquire waits out a CLIENT PAUSE.

# asleep PID: PID's main thread sleeps in the kernel (an open, a read, a
# poll): whatever comes next, rlock is waiting for it.
asleep() {
	local st
	read -r st 2>/dev/null < /proc/"$1"/stat || return 1
	st=${st##*) }
	[ "${st%% *}" = S ]
}

# stopped_at_once SIG RLOCK-ARGS...: rlock, started in the background
# with RLOCK-ARGS, falls asleep; SIG then ends it within a second with
# 128+N, and COMMAND (one that touches $T/ran) never ran.
stopped_at_once() {
	local sig=$1 t0 t1
	shift
	rm -f "$T/ran"
	bg_rlock "$@"
	wait_ms 5000 asleep "$BG" || fail "rlock $* never waited"
	t0=$(now_ms)
	kill -"$sig" "$BG"
	reap "$BG" 3000
	t1=$(now_ms)
	[ "$RC" = $((128 + $(signum "$sig"))) ] ||
		fail "SIG$sig: status $RC: $(cat "$T/err")"
	[ $((t1 - t0)) -lt "$(tf_ms 1000)" ] ||
		fail "SIG$sig: exit after $((t1 - t0))ms"
	[ ! -e "$T/ran" ] || fail "COMMAND ran"
}

@test "--config FIFO nobody writes to: SIGTERM ends rlock at once (143)" {
	mkfifo "$T/conf"
	stopped_at_once TERM --config "$T/conf" -k "$K" -- touch "$T/ran"
}

@test "--password-file FIFO nobody writes to: SIGTERM ends rlock at once (143)" {
	mkfifo "$T/pw"
	stopped_at_once TERM --password-file "$T/pw" -k "$K" -- \
	    touch "$T/ran"
	stopped_at_once HUP --password-file "$T/pw" -k "$K" -- touch "$T/ran"
}

@test "--password-file /dev/stdin on a terminal nobody types on: ^C ends rlock (130)" {
	# ^C is typed once rlock sleeps, reading the terminal.
	run python3 "$BATS_TEST_DIRNAME/on_tty.py" "$(tf 5)" '\x03' \
	    "$RLOCK" --password-file /dev/stdin -k "$K" -- touch "$T/ran"
	[ "$status" = 130 ] || fail "status $status: $output"
	[ ! -e "$T/ran" ] || fail "COMMAND ran"
}

# silent_url: a TCP listener that takes connections (the kernel does)
# and never reads nor answers, as a server that hangs; its URL in
# $SILENT_URL.
silent_url() {
	local port
	port=$(closed_port 20000 12000) || fail "no free port"
	cat > "$T/silent.py" <<-'PY'
	import signal, socket, sys
	s = socket.socket()
	s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	s.bind(('127.0.0.1', int(sys.argv[1])))
	s.listen(64)
	open(sys.argv[2], 'w').close()
	signal.pause()
	PY
	python3 "$T/silent.py" "$port" "$T/silent.ready" 3>&- &
	PIDS+=("$!")
	wait_ms 5000 test -e "$T/silent.ready" || fail "no listener"
	SILENT_URL=redis://127.0.0.1:$port
}

@test "first contact with a server that never answers: SIGTERM ends -n at once (143, not 69)" {
	silent_url
	stopped_at_once TERM --connect-timeout 30s -u "$SILENT_URL" -n \
	    -k "$K" -- touch "$T/ran"
}

@test "first contact with a server that never answers: SIGTERM ends a wait without -w at once" {
	silent_url
	stopped_at_once TERM --connect-timeout 30s -u "$SILENT_URL" \
	    -k "$K" -- touch "$T/ran"
	stopped_at_once INT --connect-timeout 30s -u "$SILENT_URL" \
	    -k "$K" -- touch "$T/ran"
}

@test "first contact with a server that never answers: SIGTERM ends -w 30s at once" {
	silent_url
	stopped_at_once TERM --connect-timeout 30s -u "$SILENT_URL" -w 30s \
	    -k "$K" -- touch "$T/ran"
}

@test "a server that never answers: SIGTERM ends status, list and release at once" {
	silent_url
	stopped_at_once TERM status --connect-timeout 30s -u "$SILENT_URL" \
	    "$K"
	stopped_at_once TERM list --connect-timeout 30s -u "$SILENT_URL"
	stopped_at_once TERM release --force --connect-timeout 30s \
	    -u "$SILENT_URL" "$K"
}

@test "an acquire in flight under CLIENT PAUSE: SIGINT ends rlock within a second (130), nothing held" {
	local t0 t1
	# The scripts cached, as on a server in use.
	run -0 "$RLOCK" -k "$K" -- true
	rcli client pause "$(tf_ms 5000)" WRITE > /dev/null
	bg_rlock -l "$(tf 2)" -k "$K" -- touch "$T/ran"
	# Its acquire is there, held back by the pause.
	wait_ms 3000 blocked_is 1 || fail "no acquire in flight"
	t0=$(now_ms)
	kill -INT "$BG"
	reap "$BG" 3000
	t1=$(now_ms)
	rcli client unpause > /dev/null
	[ "$RC" = 130 ] || fail "status $RC: $(cat "$T/err")"
	[ $((t1 - t0)) -lt "$(tf_ms 1000)" ] ||
		fail "exit $((t1 - t0))ms after SIGINT"
	[ ! -e "$T/ran" ] || fail "COMMAND ran"
	# Taken back, or at worst gone with its lease.
	wait_ms 3000 released "$K" ||
		fail "still held: $(rcli pttl "$L")ms left"
	run keys_without_ttl
	assert_output ''
}

# sigkilled ACTION SCRIPT: SIGKILL an rlock -l 1s (scaled) --on-lost ACTION
# that runs SCRIPT, while a second rlock waits for the key. Unless ACTION is
# ignore, COMMAND must die at once. Sets T0 (the SIGKILL), TD (COMMAND's
# death), TEXP (key seen gone), ORPHAN, and leaves the second in $BG.
sigkilled() {
	cat > "$T/second.sh" <<-'EOF'
	date +%s%3N > "$T/second"
	o=$(cat "$T/cmd.pid")
	st=$(cut -d' ' -f3 /proc/"$o"/stat 2>/dev/null)
	if [ -n "$st" ] && [ "$st" != Z ]; then echo "$o" > "$T/overlap"; fi
	EOF
	bg_rlock -l "$(tf 1)" --on-lost "$1" -k "$K" -- sh -c "$2"
	HOLDER=$BG
	wait_cmd
	ORPHAN=$CMD
	"$RLOCK" -l "$(tf 1)" -k "$K" -- sh "$T/second.sh" > "$T/out2" \
	    2> "$T/err2" 3>&- &
	BG=$!
	PIDS+=("$BG")
	wait_ms 3000 waiting 1 || fail "second rlock not waiting"
	T0=$(now_ms)
	kill -KILL "$HOLDER"
	# No more than the lease left: nothing renews it now.
	P=$(rcli pttl "$L")
	[ "$P" -gt 0 ] && [ "$P" -le "$(tf_ms 1000)" ] ||
		fail "PTTL $P after SIGKILL"
	TD=
	if [ "$1" != ignore ]; then
		TD=$(death_ms "$ORPHAN" 3000) || fail "orphan alive 3s after"
		echo "# $1: SIGKILL of rlock to orphan's death $((TD - T0))ms" >&3
		[ $((TD - T0)) -lt "$(tf_ms 500)" ] ||
			fail "orphan died $((TD - T0))ms after rlock"
	fi
	wait_ms 3000 released "$K" || fail "key still there 3s after SIGKILL"
	TEXP=$(now_ms)
	echo "# $1: SIGKILL to key gone $((TEXP - T0))ms" >&3
	[ $((TEXP - T0)) -le "$(tf_ms 1500)" ] ||
		fail "expired $((TEXP - T0))ms after"
}

@test "SIGKILLed rlock (--on-lost term): COMMAND gets SIGTERM at once" {
	local t2
	sigkilled term 'echo $$ > "$T/cmd.pid"; exec sleep 60'
	reap "$BG" 5000
	[ "$RC" = 0 ] || fail "second: $RC $(cat "$T/err2")"
	[ ! -e "$T/overlap" ] || fail "two holders ran at once"
	t2=$(cat "$T/second")
	[ "$t2" -ge "$TD" ] || fail "second started before the orphan died"
	[ $((t2 - T0)) -lt "$(tf_ms 2000)" ]
}

@test "SIGKILLed rlock (--on-lost kill): COMMAND gets SIGKILL at once" {
	sigkilled kill 'trap "" TERM; echo $$ > "$T/cmd.pid"
	    while :; do sleep 0.05; done'
	reap "$BG" 5000
	[ "$RC" = 0 ] || fail "second: $RC $(cat "$T/err2")"
	[ ! -e "$T/overlap" ] || fail "two holders ran at once"
	[ "$(cat "$T/second")" -ge "$TD" ]
}

@test "SIGKILLed rlock (--on-lost ignore): COMMAND runs on, as documented" {
	sigkilled ignore 'echo $$ > "$T/cmd.pid"; exec sleep 60'
	reap "$BG" 5000
	[ "$RC" = 0 ] || fail "second: $RC $(cat "$T/err2")"
	# Nothing stops it: it outlived the lease and overlapped the second.
	proc_alive "$ORPHAN" || fail "orphan of --on-lost ignore died"
	[ "$(cat "$T/overlap")" = "$ORPHAN" ]
	kill -KILL "$ORPHAN"
	wait_ms 2000 pid_gone "$ORPHAN"
}

# The processes COMMAND started: the children of pid $1 and theirs.
descendants() {
	local kid
	for kid in $(ps -o pid= --ppid "$1"); do
		echo "$kid"
		descendants "$kid"
	done
}

# tree_killed ACTION HOW N SCRIPT: an rlock --on-lost ACTION runs sh -c
# SCRIPT, which starts N processes below it (SCRIPT writes COMMAND's pid
# to $T/cmd.pid first); rlock is started by HOW: `setsid` (no terminal,
# as under cron) or `tty` (the foreground job of a terminal, under a
# shell that stays: rlock leads no session whose end would hang it up).
# Once they all run, rlock is SIGKILLed. Sets KIDS (their pids) and RL.
tree_killed() {
	local n=$3 i
	rm -f "$T/cmd.pid"
	if [ "$2" = setsid ]; then
		env --default-signal setsid "$RLOCK" -l "$(tf 1)" --on-lost "$1" -k "$K" \
		    -- sh -c "$4" > "$T/out" 2> "$T/err" 3>&- &
		BG=$!
		PIDS+=("$BG")
	else
		command -v script > /dev/null ||
			fail "script(1) is not installed"
		env --default-signal script -qefc "$RLOCK -l $(tf 1) --on-lost $1 \
		    -k $K -- sh -c '$4'; sleep $(tf 10)" /dev/null \
		    < /dev/null > "$T/out" 2> "$T/err" 3>&- &
		BG=$!
		PIDS+=("$BG")
	fi
	wait_cmd
	RL=$(ps -o ppid= -p "$CMD" | tr -d ' ')
	if [ "$2" = tty ]; then
		[ "$(ps -o tpgid= -p "$CMD" | tr -d ' ')" = \
		    "$(ps -o pgid= -p "$RL" | tr -d ' ')" ] ||
			fail "rlock is not the terminal's foreground job"
	fi
	wait_ms 3000 eval '[ "$(descendants "$CMD" | wc -l)" = "$n" ]' ||
		fail "COMMAND started $(descendants "$CMD" | wc -l), not $n"
	KIDS=$(descendants "$CMD")
	i=0
	for p in $KIDS; do echo "$p" > "$T/kid$((i++)).pid"; done
	kill -KILL "$RL"
}

all_gone() {
	local p
	for p in "$@"; do pid_gone "$p" || return 1; done
}

# sigkill_tree ACTION HOW: for --on-lost term or kill, COMMAND's children
# (one in the background, and a pipeline) are ended at once when rlock is
# SIGKILLed; with its SIGTERM trapped, term's signal is seen as SIGTERM.
sigkill_tree() {
	local sig=TERM
	[ "$1" = kill ] && sig=KILL
	tree_killed "$1" "$2" 1 \
	    'echo $$ > "$T/cmd.pid"; sleep 100 & wait'
	wait_ms 3000 all_gone $CMD $KIDS ||
		fail "$1, $2: still running after rlock's SIGKILL: $(ps -o pid=,args= -p "$CMD,${KIDS//$'\n'/,}")"
	tree_killed "$1" "$2" 2 \
	    'echo $$ > "$T/cmd.pid"; sleep 100 | cat'
	wait_ms 3000 all_gone $CMD $KIDS ||
		fail "$1, $2: pipeline runs on after rlock's SIGKILL: $(ps -o pid=,args= -p "$CMD,${KIDS//$'\n'/,}")"
	tree_killed "$1" "$2" 1 'echo $$ > "$T/cmd.pid"
	    trap "echo TERM > \"$T/marker\"; exit 9" TERM; sleep 100 & wait'
	wait_ms 3000 all_gone $CMD $KIDS || fail "$1, $2: trap: still running"
	if [ "$sig" = TERM ]; then
		[ "$(cat "$T/marker")" = TERM ] || fail "COMMAND got no SIGTERM"
	else
		[ ! -e "$T/marker" ] || fail "COMMAND got SIGTERM, not SIGKILL"
	fi
}

@test "SIGKILLed rlock (--on-lost term), no terminal: COMMAND's children end too" {
	sigkill_tree term setsid
}

@test "SIGKILLed rlock (--on-lost kill), no terminal: COMMAND's children end too" {
	sigkill_tree kill setsid
}

@test "SIGKILLed rlock (--on-lost term) on a terminal: COMMAND's children end too" {
	sigkill_tree term tty
}

@test "SIGKILLed rlock (--on-lost kill) on a terminal: COMMAND's children end too" {
	sigkill_tree kill tty
}

@test "SIGKILLed rlock (--on-lost ignore): COMMAND's children run on" {
	tree_killed ignore setsid 2 \
	    'echo $$ > "$T/cmd.pid"; sleep 100 | cat'
	# Until the lease lapses and after: nothing stops them.
	wait_ms 3000 released "$K" || fail "key still there 3s after SIGKILL"
	proc_alive "$CMD" || fail "COMMAND of --on-lost ignore died"
	for p in $KIDS; do proc_alive "$p" || fail "$p died"; done
}

@test "SIGKILLed rlock: a process COMMAND started in a session of its own runs on" {
	# setsid(1) needs no fork in a background job: $! is the daemon.
	tree_killed term setsid 2 'echo $$ > "$T/cmd.pid"
	    setsid sleep 100 & echo $! > "$T/daemon"; sleep 100 & wait'
	local d
	d=$(cat "$T/daemon")
	wait_ms 3000 all_gone $CMD $(echo "$KIDS" | grep -vx "$d") ||
		fail "COMMAND's other child runs on"
	wait_ms 3000 released "$K" || fail "key still there 3s after SIGKILL"
	proc_alive "$d" || fail "the process in a session of its own died"
}

@test "the watcher ends with rlock, and leaves alone what a finished COMMAND left" {
	bg_rlock -k "$K" -- sh -c 'sleep 100 & echo $! > "$T/left.pid"
	    echo $$ > "$T/cmd.pid"
	    while [ ! -e "$T/go" ]; do sleep 0.02; done'
	wait_cmd
	local w
	w=$(ps -o pid=,comm= --ppid "$BG" | awk '$2 == "rlock-watch" { print $1 }')
	[ -n "$w" ] || fail "no watcher beside COMMAND: $(ps -o pid=,comm= --ppid "$BG")"
	touch "$T/go"
	reap "$BG" 5000
	[ "$RC" = 0 ]
	# Its pipe is not held open by what COMMAND left running.
	wait_ms 3000 pid_gone "$w" || fail "the watcher outlived rlock"
	proc_alive "$(cat "$T/left.pid")" ||
		fail "COMMAND's child, left running after a normal end, died"
	assert_released
}

@test "COMMAND reads rlock's stdin" {
	run -0 bash -c 'printf "abc\ndef\n" | "$RLOCK" -k "$1" -- cat' _ "$K"
	assert_output $'abc\ndef'
	assert_released
}

@test "COMMAND writing to a closed pipe dies of SIGPIPE: yes | head -1" {
	# The default SIGPIPE action given to rlock: COMMAND gets the one
	# rlock was started with (a make check under a caller that ignores
	# it would see yes(1) exit 1).
	run -0 timeout "$(tf 10)" bash -c \
	    'env --default-signal=PIPE "$RLOCK" -k "$1" -- yes | head -n 1
	    echo "rlock ${PIPESTATUS[0]}"' \
	    _ "$K"
	assert_output $'y\nrlock 141'
	assert_released
}

@test "COMMAND that closes its stdout: its own status, no fuss" {
	run -5 --separate-stderr "$RLOCK" -k "$K" -- \
	    sh -c 'exec >&-; echo after >&2; exit 5'
	[ "$stderr" = after ]
	assert_released
}

# sigstate ENV-ARGS...: COMMAND's SigBlk and SigIgn lines in $output, rlock
# started by env(1) with ENV-ARGS, and SIGPIPE and SIGINT blocked (none may
# stay blocked in COMMAND).
sigstate() {
	run -0 env "$@" --block-signal=PIPE,INT "$RLOCK" -k "$K" -- \
	    grep -E '^Sig(Blk|Ign)' /proc/self/status
	assert_line "$(printf 'SigBlk:\t0000000000000000')"
}

@test "COMMAND starts with no blocked signals and rlock's ignored set" {
	local want
	want=$(env --default-signal grep '^SigIgn' /proc/self/status)
	sigstate --default-signal
	assert_line "$want"
	# SIGPIPE (bit 13) is not ignored: rlock ignores it for itself only.
	[ $(( 0x${want##*[[:space:]]} & 0x1000 )) = 0 ]
}

@test "a SIGPIPE ignored by rlock's caller stays ignored in COMMAND" {
	# As systemd starts services, and as flock(1) passes it on.
	sigstate --default-signal --ignore-signal=PIPE,USR2
	local ign
	ign=$(printf '%s\n' "${lines[@]}" | sed -n 's/^SigIgn:[[:space:]]*//p')
	[ $(( 0x$ign & 0x1000 )) = $(( 0x1000 )) ] ||
		fail "SIGPIPE not ignored in COMMAND: SigIgn $ign"
	[ $(( 0x$ign & 0x800 )) = $(( 0x800 )) ] ||
		fail "SIGUSR2 not ignored in COMMAND: SigIgn $ign"
}

@test "COMMAND keeps an ignored libc-reserved signal (33), threads or not" {
	# glibc's first thread puts a handler on signal 33 (SIGSETXID), and
	# rlock's renewal thread starts before COMMAND; an exec resets a
	# handled signal to its default. libc refuses sigaction() on it, so
	# the caller here ignores it with the system call (x86-64's number).
	[ "$(uname -m)" = x86_64 ] || skip "the raw rt_sigaction is x86-64's"
	run -0 python3 -c '
import ctypes, os, sys
class K(ctypes.Structure):
    _fields_ = [("h", ctypes.c_void_p), ("f", ctypes.c_ulong),
                ("r", ctypes.c_void_p), ("m", ctypes.c_ulong)]
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(13, 33, ctypes.byref(K(1, 0, None, 0)), None, 8) != 0:
    sys.exit("rt_sigaction: errno %d" % ctypes.get_errno())
os.execvp(sys.argv[1], sys.argv[1:])' "$RLOCK" -k "$K" -- \
	    grep '^SigIgn' /proc/self/status
	local ign=${output##*[[:space:]]}
	[ $(( 0x$ign >> 32 & 1 )) = 1 ] || fail "signal 33 not ignored: $output"
}

@test "on a terminal: COMMAND has the tty, and ^C reaches it once" {
	# Missing fails, not skips: .ci/deps installs bsdutils.
	command -v script > /dev/null || fail "script(1) is not installed"
	# COMMAND notes each signal; after the ^C it sends rlock a SIGUSR1,
	# which rlock must forward (so forwarding works and is logged).
	cat > "$T/tty.pl" <<-'EOF2'
	sub note { open(my $f, ">>", "$ENV{T}/marker"); print $f "@_\n"; }
	my %got;
	$SIG{INT} = sub { $got{int}++; note("int") };
	$SIG{USR1} = sub { $got{usr1}++; note("usr1") };
	# Not system("tty > ..."): perl ignores SIGINT while it waits for a
	# child, and a ^C typed once the file is written could come then.
	open(my $t, ">", "$ENV{T}/tty.new");
	print $t readlink("/proc/self/fd/0"), "\n";
	close($t);
	rename("$ENV{T}/tty.new", "$ENV{T}/tty");
	for (1 .. 100) { last if $got{int}; select(undef, undef, undef, 0.05) }
	kill("USR1", getppid());
	for (1 .. 100) { last if $got{usr1}; select(undef, undef, undef, 0.05) }
	select(undef, undef, undef, 0.3);
	exit 5;
	EOF2
	# ^C makes the kernel signal the whole foreground group, COMMAND
	# included: rlock must not send it a second one. It is typed once
	# COMMAND runs with its traps set (it wrote $T/tty); the terminal's
	# input stays open until COMMAND got both signals, and a while more.
	run -5 timeout "$(tf 20)" bash -c '(
	    end=$((SECONDS + $2))
	    until [ -s "$T/tty" ] || [ $SECONDS -ge $end ]; do sleep 0.05; done
	    printf "\003"
	    until grep -qs usr1 "$T/marker" || [ $SECONDS -ge $end ]; do
	        sleep 0.05
	    done
	    sleep "$3" ) |
	    script -qefc "exec $RLOCK -v -k $1 -- perl $T/tty.pl" /dev/null' \
	    _ "$K" $(( $(tf_ms 10000) / 1000 )) "$(tf 1)"
	grep -q '^/dev/pts/' "$T/tty" || fail "stdin is $(cat "$T/tty")"
	[ "$(cat "$T/marker")" = $'int\nusr1' ] ||
		fail "signals: $(cat "$T/marker")"
	assert_output --partial "forwarding signal $(signum USR1) to COMMAND"
	refute_output --partial "forwarding signal $(signum INT) to COMMAND"
	assert_released
}
