#!/usr/bin/env bats
# Credentials that change under a running holder: --password-file is read
# again at every connect, so a password rotated while COMMAND runs (the
# file rewritten, the ACL user given the new password and the old one
# taken away, its connections killed as a failover or a blip would) costs
# the holder nothing: it keeps its lock, releases it normally and exits
# with COMMAND's status, and a waiter queued behind it gets the lock.

load helper

setup_file() {
	redis_start main
}

teardown_file() {
	redis_stop main
}

setup() {
	rcli flushall >/dev/null
	rcli acl setuser rot reset on '>pw1' '~*' '&*' '+@all' >/dev/null
	PWF=$BATS_TEST_TMPDIR/pw
	printf 'pw1\n' > "$PWF"
	chmod 600 "$PWF"
	export U="unix://rot@$REDIS_SOCK"
}

teardown() {
	[ -z "${BG:-}" ] || { kill -TERM "$BG" 2>/dev/null; wait "$BG" || true; }
	[ -z "${WG:-}" ] || { kill -TERM "$WG" 2>/dev/null; wait "$WG" || true; }
	BG= WG=
	rcli acl deluser rot >/dev/null
	local left
	left=$(keys_without_ttl)
	[ -z "$left" ] || fail "keys without TTL: $left"
}

# rot's connections, as the server counts them.
rot_conns() { rcli client list | grep -c ' user=rot ' || true; }
has_rot_conn() { [ "$(rot_conns)" -ge 1 ]; }
lock_held() { [ "$(rcli exists "rlock:{$1}")" = 1 ]; }
# EVALSHA calls so far: the holder's extends, when nothing else runs.
evalshas() {
	rcli info commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p'
}
evalshas_above() { [ "$(evalshas)" -gt "$1" ]; }

@test "a password rotated under the holder: it keeps the lock, a waiter follows" {
	local go=$BATS_TEST_TMPDIR/go t st
	# A short lease: renewals every second, and a holder that could
	# not renew would lose the lock (70) long before COMMAND ends.
	"$RLOCK" -u "$U" --password-file "$PWF" -l "$(tf 3)s" -k rot -- \
		sh -c "until [ -e '$go' ]; do sleep 0.05; done; exit 7" \
		2>"$BATS_TEST_TMPDIR/holder.err" &
	BG=$!
	wait_until 10 has_rot_conn

	printf 'pw2\n' > "$PWF"
	rcli acl setuser rot '>pw2' '<pw1' >/dev/null
	rcli client kill user rot >/dev/null
	# The renewal thread connects again, with the new password (a
	# connection refused by AUTH stays the default user's), and
	# extends the lease there twice.
	wait_until 10 has_rot_conn
	t=$(evalshas)
	wait_until 10 evalshas_above "$((t + 1))"
	proc_alive "$BG"

	"$RLOCK" -u "$U" --password-file "$PWF" -w "$(tf 30)" -k rot -- \
		echo waiter-ran >"$BATS_TEST_TMPDIR/waiter.out" \
		2>"$BATS_TEST_TMPDIR/waiter.err" &
	WG=$!
	touch "$go"
	st=0
	wait "$BG" || st=$?
	BG=
	[ "$st" -eq 7 ] || fail "holder exited $st, not COMMAND's 7"
	run cat "$BATS_TEST_TMPDIR/holder.err"
	[ -z "$output" ] || fail "holder said: $output"
	st=0
	wait "$WG" || st=$?
	WG=
	[ "$st" -eq 0 ] || fail "waiter exited $st"
	[ "$(cat "$BATS_TEST_TMPDIR/waiter.out")" = waiter-ran ]
	run cat "$BATS_TEST_TMPDIR/waiter.err"
	[ -z "$output" ] || fail "waiter said: $output"
}

@test "a rotated password the file does not have: authentication failed, retried to the end" {
	local line st
	"$RLOCK" -u "$U" --password-file "$PWF" -l "$(tf 2)s" -k rot -- \
		sleep 60 2>"$BATS_TEST_TMPDIR/holder.err" &
	BG=$!
	# Held, not only connected: a run still on its way to the lock
	# (slow under valgrind) would be refused before holding it (77).
	wait_until 10 has_rot_conn
	wait_until 10 lock_held rot
	rcli acl setuser rot '>pw2' '<pw1' >/dev/null
	rcli client kill user rot >/dev/null
	# Refused at every reconnect until the lease runs out: lost, 70.
	st=0
	wait "$BG" || st=$?
	BG=
	[ "$st" -eq 70 ] || fail "holder exited $st, not 70"
	line=$(head -n 1 "$BATS_TEST_TMPDIR/holder.err")
	[[ $line == "rlock: warning: cannot extend the lease: authentication failed: "*"WRONGPASS"*"; retrying" ]] ||
		fail "holder said: $(cat "$BATS_TEST_TMPDIR/holder.err")"
	# Refused credentials, not an unreachable server: the lost lease
	# says what Redis answered, in 77's words.
	! grep -q "cannot reach" "$BATS_TEST_TMPDIR/holder.err"
	! grep -q "unreachable" "$BATS_TEST_TMPDIR/holder.err" ||
		fail "holder said: $(cat "$BATS_TEST_TMPDIR/holder.err")"
	line=$(grep "lost the lock" "$BATS_TEST_TMPDIR/holder.err")
	[[ $line == "rlock: lost the lock 'rot': the lease could not be extended in time: Redis refused the credentials (WRONGPASS "*"); sending SIGTERM to COMMAND (pid "*")" ]] ||
		fail "holder said: $(cat "$BATS_TEST_TMPDIR/holder.err")"
	# A new run reads the file anew: refused credentials, 77.
	run -77 --separate-stderr "$RLOCK" -u "$U" --password-file "$PWF" \
		-n -k other -- echo must-not-run
	[ -z "$output" ]
	[[ $stderr == *"refused us: "*"WRONGPASS"* ]] || fail "stderr: $stderr"
}

# A --password-file that is no regular file gives its line once: a FIFO
# whose writer has gone, a terminal whose user typed the password. Every
# login then uses what rlock read at its start, at once, and a reconnect
# too: none may wait for a writer, or a typist, who will not come.
@test "--password-file a FIFO written once: every login uses what was read, a reconnect too" {
	local go=$BATS_TEST_TMPDIR/go fifo=$BATS_TEST_TMPDIR/fifo t st
	mkfifo "$fifo"
	printf 'pw1\n' > "$fifo" &
	timeout -s KILL "$(tf 30)" "$RLOCK" -u "$U" --password-file "$fifo" \
		-l "$(tf 3)s" -k rot -- \
		sh -c "until [ -e '$go' ]; do sleep 0.05; done; exit 7" \
		2>"$BATS_TEST_TMPDIR/holder.err" &
	BG=$!
	wait_until 10 has_rot_conn || fail "never logged in"
	rcli client kill user rot >/dev/null
	# The renewal thread logs in again and extends the lease there.
	wait_until 10 has_rot_conn || fail "never logged in again"
	t=$(evalshas)
	wait_until 10 evalshas_above "$((t + 1))"
	touch "$go"
	st=0
	wait "$BG" || st=$?
	BG=
	[ "$st" -eq 7 ] || fail "holder exited $st: $(cat "$BATS_TEST_TMPDIR/holder.err")"
	run cat "$BATS_TEST_TMPDIR/holder.err"
	[ -z "$output" ] || fail "holder said: $output"
}

@test "--password-file /dev/stdin on a terminal, typed once: the run logs in with it" {
	# The password is typed once rlock sleeps, reading the terminal.
	run python3 "$BATS_TEST_DIRNAME/on_tty.py" "$(tf 10)" 'pw1\n' \
	    "$RLOCK" -u "$U" --password-file /dev/stdin -k rot -- \
	    sh -c 'echo ran; exit 7'
	[ "$status" = 7 ] || fail "status $status: $output"
	assert_output --partial ran
}
