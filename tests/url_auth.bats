#!/usr/bin/env bats
# URLs and credentials: TCP and unix sockets, database selection, passwords
# from the URL, --password-file and the environment, ACL users, 69 and 77,
# the connect timeout on a silent server, and no password in ps or in
# COMMAND's environment.

load helper

setup_file() {
	redis_start main
	export MAIN_SOCK=$REDIS_SOCK MAIN_PORT=$REDIS_PORT MAIN_URL=$RLOCK_URL
	# redis_start checks with redis-cli ping, which reads REDISCLI_AUTH.
	REDISCLI_AUTH=s3cret redis_start auth --requirepass s3cret
	export AUTH_SOCK=$REDIS_SOCK AUTH_PORT=$REDIS_PORT
	redis-cli -s "$AUTH_SOCK" --no-auth-warning -a s3cret \
		acl setuser alice on '>pw' '~*' '&*' '+@all' >/dev/null
	redis_start silent
	export SILENT_PORT=$REDIS_PORT SILENT_PIDFILE=$REDIS_PIDFILE
	# Back to main for rcli, keys_without_ttl and the default RLOCK_URL.
	export REDIS_SOCK=$MAIN_SOCK REDIS_PORT=$MAIN_PORT RLOCK_URL=$MAIN_URL
	CLOSED_PORT=$(closed_port 40000 20000) || return 1
	export CLOSED_PORT
}

teardown_file() {
	[ -z "${SILENT_PIDFILE:-}" ] ||
		kill -CONT "$(cat "$SILENT_PIDFILE")" 2>/dev/null || true
	redis_stop silent
	redis_stop auth
	redis_stop main
}

teardown() {
	# A test that stopped the silent server must not leave it stopped.
	[ -z "${SILENT_PIDFILE:-}" ] ||
		kill -CONT "$(cat "$SILENT_PIDFILE")" 2>/dev/null || true
	[ -z "${BG:-}" ] || { kill -TERM "$BG" 2>/dev/null; wait "$BG" || true; }
	[ -z "${HOLDER:-}" ] ||
		{ kill -TERM "$HOLDER" 2>/dev/null; wait "$HOLDER" || true; }
	BG= HOLDER=
	redis_stop gone
	local left
	left=$(keys_without_ttl)
	[ -z "$left" ] || fail "keys without TTL: $left"
}

acli() { redis-cli -s "$AUTH_SOCK" --no-auth-warning -a s3cret "$@"; }

# COMMAND that prints whether KEY is held, as seen on the auth server.
held_on_auth='redis-cli -s "$AUTH_SOCK" --no-auth-warning -a s3cret exists "rlock:{$RLOCK_KEY}"'

@test "TCP URL: the lock is taken on that server" {
	run -0 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$MAIN_PORT" -k tcp \
		-- sh -c 'redis-cli -s "$MAIN_SOCK" exists "rlock:{tcp}"'
	[ "$output" = 1 ]
	[ -z "$stderr" ]
	RLOCK_URL=redis://127.0.0.1:$MAIN_PORT/0 run -0 "$RLOCK" -k tcp -- \
		sh -c 'redis-cli -s "$MAIN_SOCK" exists "rlock:{tcp}"'
	[ "$output" = 1 ]
	REDIS_URL=redis://localhost:$MAIN_PORT run -0 env -u RLOCK_URL \
		"$RLOCK" -k tcp -- sh -c 'redis-cli -s "$MAIN_SOCK" exists "rlock:{tcp}"'
	[ "$output" = 1 ]
}

@test "unix socket URL works" {
	run -0 --separate-stderr "$RLOCK" -u "unix://$MAIN_SOCK" -k sock -- \
		sh -c 'redis-cli -s "$MAIN_SOCK" exists "rlock:{sock}"'
	[ "$output" = 1 ]
	[ -z "$stderr" ]
}

# in_db URL DB: rlock via URL holds its key in database DB and no other.
in_db() {
	run -0 --separate-stderr "$RLOCK" -u "$1" -k dbkey -- sh -c '
		redis-cli -s "$MAIN_SOCK" -n "$1" exists "rlock:{dbkey}"
		redis-cli -s "$MAIN_SOCK" -n 0 exists "rlock:{dbkey}"' sh "$2"
	[ -z "$stderr" ] || fail "$stderr"
	[ "${lines[0]}" = 1 ] || fail "$1: not in db $2"
	[ "${lines[1]}" = 0 ] || fail "$1: in db 0"
	local k
	for k in $(redis-cli -s "$MAIN_SOCK" -n "$2" --scan); do
		[ "$(redis-cli -s "$MAIN_SOCK" -n "$2" pttl "$k")" != -1 ] ||
			fail "$1: $k left without TTL"
	done
	[ "$(redis-cli -s "$MAIN_SOCK" -n "$2" exists "rlock:{dbkey}")" = 0 ]
}

@test "/db and ?db=N select the database" {
	in_db "redis://127.0.0.1:$MAIN_PORT/5" 5
	in_db "redis://127.0.0.1:$MAIN_PORT?db=6" 6
	in_db "unix://$MAIN_SOCK?db=7" 7
	redis-cli -s "$MAIN_SOCK" -n 5 flushdb >/dev/null
	redis-cli -s "$MAIN_SOCK" -n 6 flushdb >/dev/null
	redis-cli -s "$MAIN_SOCK" -n 7 flushdb >/dev/null
}

@test "/0?db=2: the database given twice is refused (64), not guessed" {
	local u
	for u in "redis://127.0.0.1:$MAIN_PORT/0?db=2" \
	    "redis://127.0.0.1:$MAIN_PORT/2?db=2"; do
		run -64 --separate-stderr "$RLOCK" -u "$u" -k k -- \
			echo must-not-run
		[ -z "$output" ]
		[ "${stderr_lines[0]}" = "rlock: bad Redis URL '$u' (-u): the database is given twice (/N and ?db=N); give it once" ]
		RLOCK_URL=$u run -64 --separate-stderr "$RLOCK" status k
		[[ ${stderr_lines[0]} == *"(RLOCK_URL): the database is given twice"* ]]
	done
	# Either one alone still selects it.
	in_db "redis://127.0.0.1:$MAIN_PORT/?db=6" 6
	redis-cli -s "$MAIN_SOCK" -n 6 flushdb >/dev/null
}

@test "a database the server does not have: 76, one line" {
	run -76 --separate-stderr "$RLOCK" -u "unix://$MAIN_SOCK?db=999" -k k -- \
		echo must-not-run
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "rlock: unix://$MAIN_SOCK?db=999: cannot select the database: "*"DB index is out of range"* ]]
}

@test "password in the URL, TCP and unix" {
	run -0 --separate-stderr "$RLOCK" -u "redis://:s3cret@127.0.0.1:$AUTH_PORT" \
		-k a1 -- sh -c "$held_on_auth"
	[ "$output" = 1 ]
	[ -z "$stderr" ]
	run -0 --separate-stderr "$RLOCK" -u "unix://:s3cret@$AUTH_SOCK" -k a1 -- \
		sh -c "$held_on_auth"
	[ "$output" = 1 ]
	# Percent-encoded: s3cret is s%33cret.
	run -0 "$RLOCK" -u "redis://:s%33cret@127.0.0.1:$AUTH_PORT" -k a1 -- true
}

@test "password from --password-file (mode 600): no warning" {
	local f=$BATS_TEST_TMPDIR/pw
	printf 's3cret\nignored second line\n' > "$f"
	chmod 600 "$f"
	run -0 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$AUTH_PORT" \
		--password-file "$f" -k a2 -- sh -c "$held_on_auth"
	[ "$output" = 1 ]
	[ -z "$stderr" ]
	# A file others can read still works, with a one-line warning.
	chmod 644 "$f"
	run -0 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$AUTH_PORT" \
		--password-file "$f" -k a2 -- true
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "rlock: warning: --password-file $f is accessible by others"* ]]
	run -0 --separate-stderr "$RLOCK" -q -u "redis://127.0.0.1:$AUTH_PORT" \
		--password-file "$f" -k a2 -- true
	[ -z "$stderr" ]
}

@test "--password-file that cannot be read: 64 before contacting Redis" {
	run -64 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$CLOSED_PORT" \
		--password-file "$BATS_TEST_TMPDIR/none" -k a2 -- true
	[ "${#stderr_lines[@]}" -ge 1 ]
	[[ ${stderr_lines[0]} == "rlock: cannot read --password-file $BATS_TEST_TMPDIR/none: No such file or directory" ]]
}

@test "empty --password-file: 64, saying the file is empty" {
	local f=$BATS_TEST_TMPDIR/pw
	: > "$f"
	chmod 600 "$f"
	run -64 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$AUTH_PORT" \
		--password-file "$f" -k a2 -- echo must-not-run
	[ -z "$output" ]
	[ "$stderr" = "rlock: --password-file $f is empty" ]
	# The password is the first line, not the first non-empty one.
	printf '\ns3cret\n' > "$f"
	run -64 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$AUTH_PORT" \
		--password-file "$f" -k a2 -- echo must-not-run
	[ "$stderr" = "rlock: --password-file $f has an empty first line (the password goes on the first line)" ]
}

@test "password from RLOCK_PASSWORD, and from REDISCLI_AUTH" {
	RLOCK_PASSWORD=s3cret run -0 --separate-stderr "$RLOCK" \
		-u "redis://127.0.0.1:$AUTH_PORT" -k a3 -- sh -c "$held_on_auth"
	[ "$output" = 1 ]
	[ -z "$stderr" ]
	REDISCLI_AUTH=s3cret run -0 --separate-stderr "$RLOCK" \
		-u "unix://$AUTH_SOCK" -k a3 -- sh -c "$held_on_auth"
	[ "$output" = 1 ]
	[ -z "$stderr" ]
}

@test "which password wins: file over URL, URL over environment" {
	local f=$BATS_TEST_TMPDIR/pw
	printf 's3cret\n' > "$f"
	chmod 600 "$f"
	run -0 "$RLOCK" -u "redis://:wrong@127.0.0.1:$AUTH_PORT" \
		--password-file "$f" -k a4 -- true
	RLOCK_PASSWORD=wrong run -0 "$RLOCK" \
		-u "redis://:s3cret@127.0.0.1:$AUTH_PORT" -k a4 -- true
	RLOCK_PASSWORD=wrong REDISCLI_AUTH=s3cret run -77 "$RLOCK" \
		-u "redis://127.0.0.1:$AUTH_PORT" -k a4 -- true
}

# refused STATUS... : rlock exits 77 with one line that names the server
# (password hidden), says what to check, and never shows "wrongpw".
refused() {
	run -77 --separate-stderr "$@"
	[ -z "$output" ] || fail "COMMAND ran: $output"
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	[[ $stderr == "rlock: "*"refused us: "*"check the user and password"* ]] ||
		fail "stderr: $stderr"
	[[ $stderr != *wrongpw* ]] || fail "password shown: $stderr"
}

@test "wrong password: 77, one line, the password not shown" {
	refused "$RLOCK" -u "redis://:wrongpw@127.0.0.1:$AUTH_PORT" -k a5 -- \
		echo must-not-run
	[[ $stderr == "rlock: redis://:***@127.0.0.1:$AUTH_PORT/0 refused us: "* ]]
	RLOCK_PASSWORD=wrongpw refused "$RLOCK" -u "unix://$AUTH_SOCK" -k a5 -- \
		echo must-not-run
	printf 'wrongpw\n' > "$BATS_TEST_TMPDIR/pw"
	chmod 600 "$BATS_TEST_TMPDIR/pw"
	refused "$RLOCK" -u "unix://$AUTH_SOCK" --password-file \
		"$BATS_TEST_TMPDIR/pw" -k a5 -- echo must-not-run
}

# A server that wants no password refuses the AUTH, which is answered
# before anything else is sent: no acquire runs, nothing is held.
@test "a password for a server that wants none: 77, and the lock is not left held" {
	local f0 f1
	run -0 "$RLOCK" -u "unix://$MAIN_SOCK" -k a7 -- true
	f0=$(redis-cli -s "$MAIN_SOCK" get "rlock:{a7}:fence")
	refused "$RLOCK" -u "unix://:notneeded@$MAIN_SOCK" -k a7 -- \
		echo must-not-run
	[[ $stderr == *"without any password configured"* ]] ||
		fail "stderr: $stderr"
	f1=$(redis-cli -s "$MAIN_SOCK" get "rlock:{a7}:fence")
	[ "$f1" = "$f0" ] || fail "an acquire ran ($f0, $f1)"
	run redis-cli -s "$MAIN_SOCK" exists "rlock:{a7}" "rlock:{a7}:meta"
	[ "$output" = 0 ] || fail "the lock is held: $output"
	run -0 "$RLOCK" -n -u "unix://$MAIN_SOCK" -k a7 -- echo free
	[ "$output" = free ]
}

@test "no password for a server that wants one: 77" {
	refused "$RLOCK" -u "redis://127.0.0.1:$AUTH_PORT" -k a6 -- \
		echo must-not-run
	[[ $stderr == *NOAUTH* ]]
	refused "$RLOCK" -n -w 1 -u "unix://$AUTH_SOCK?db=2" -k a6 -- \
		echo must-not-run
}

@test "ACL user: right password works, wrong one is 77" {
	run -0 --separate-stderr "$RLOCK" -u "redis://alice:pw@127.0.0.1:$AUTH_PORT" \
		-k acl -- sh -c "$held_on_auth"
	[ "$output" = 1 ]
	[ -z "$stderr" ]
	# User in the URL, password from the environment.
	RLOCK_PASSWORD=pw run -0 "$RLOCK" -u "unix://alice@$AUTH_SOCK" -k acl \
		-- true
	refused "$RLOCK" -u "redis://alice:wrongpw@127.0.0.1:$AUTH_PORT" -k acl \
		-- echo must-not-run
	[[ $stderr == *"redis://alice:***@127.0.0.1:$AUTH_PORT/0 refused us"* ]]
	refused "$RLOCK" -u "redis://bob:s3cret@127.0.0.1:$AUTH_PORT" -k acl \
		-- echo must-not-run
}

@test "a read-only ACL user: 77 with the permission hint, not 76" {
	acli acl setuser ro on '>pw' '~*' '&*' '+@all' '-@write' >/dev/null
	run -77 --separate-stderr "$RLOCK" \
		-u "redis://ro:pw@127.0.0.1:$AUTH_PORT" -k ro -- echo must-not-run
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	# Redis's words inside a script ("The user executing the script
	# can't..."), or the command named; either way what to do about it.
	[[ $stderr == "rlock: redis://ro:***@127.0.0.1:$AUTH_PORT/0 refused us: acquire: "*"ACL SETUSER"* ]] ||
		fail "stderr: $stderr"
	# Nothing was written.
	[ "$(acli exists "rlock:{ro}" "rlock:{ro}:fence")" = 0 ]
	# The same for keys it may only read (%R~), refused before the script.
	acli acl setuser rk on '>pw' '%R~*' '&*' '+@all' >/dev/null
	run -77 --separate-stderr "$RLOCK" \
		-u "redis://rk:pw@127.0.0.1:$AUTH_PORT" -k ro -- echo must-not-run
	[[ $stderr == *" refused us: acquire: "*"ACL SETUSER"* ]] ||
		fail "stderr: $stderr"
	acli acl deluser ro rk >/dev/null
}

@test "nothing listening: 69 at once, one line" {
	local t0 el
	t0=$(now_ms)
	# The default --connect-timeout, scaled as the bound is: "at once"
	# is well within it.
	run -69 --separate-stderr "$RLOCK" -u "redis://127.0.0.1:$CLOSED_PORT" \
		--connect-timeout "$(tf 5)" -k down -- echo must-not-run
	el=$(( $(now_ms) - t0 ))
	[ -z "$output" ]
	[ "$stderr" = "rlock: cannot reach redis://127.0.0.1:$CLOSED_PORT/0: Connection refused; check -u" ]
	[ "$el" -lt "$(tf_ms 2000)" ] || fail "took ${el}ms"
	run -69 --separate-stderr "$RLOCK" -u "unix://$BATS_TEST_TMPDIR/none.sock" \
		-k down -- echo must-not-run
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "rlock: cannot reach unix://$BATS_TEST_TMPDIR/none.sock"* ]]
	# With a password: hidden in the message.
	run -69 --separate-stderr "$RLOCK" \
		-u "redis://:wrongpw@127.0.0.1:$CLOSED_PORT" -k down -- true
	[[ $stderr != *wrongpw* ]]
}

@test "unreachable: the message names where the URL came from" {
	local url=redis://127.0.0.1:$CLOSED_PORT want
	want="rlock: cannot reach $url/0: Connection refused"
	run -69 --separate-stderr env -u RLOCK_URL REDIS_URL="$url" "$RLOCK" \
		-k down -- echo must-not-run
	[ "$stderr" = "$want; check REDIS_URL" ]
	# An empty RLOCK_URL counts as unset.
	RLOCK_URL= REDIS_URL=$url run -69 --separate-stderr "$RLOCK" status down
	[ "$stderr" = "$want; check REDIS_URL" ]
	RLOCK_URL=$url REDIS_URL=redis://127.0.0.1:1 run -69 --separate-stderr \
		"$RLOCK" -k down -- echo must-not-run
	[ "$stderr" = "$want; check RLOCK_URL" ]
	REDIS_URL=redis://127.0.0.1:1 run -69 --separate-stderr "$RLOCK" \
		-u "$url" -k down -- echo must-not-run
	[ "$stderr" = "$want; check -u" ]
	# No URL anywhere: the default, and where to give another.
	run --separate-stderr env -u RLOCK_URL -u REDIS_URL "$RLOCK" \
		--connect-timeout "$(tf 1)" -k down -- echo must-not-run
	if [ "$status" = 69 ]; then
		[[ $stderr == "rlock: cannot reach redis://127.0.0.1:6379/0: "*"; check that Redis runs there, or give -u or RLOCK_URL" ]] ||
			fail "stderr: $stderr"
	fi
}

@test "a server that answered, then went away mid-wait: no 'check RLOCK_URL'" {
	local url sock=$BATS_FILE_TMPDIR/gone/redis.sock
	redis_start gone
	url=redis://127.0.0.1:$REDIS_PORT
	export REDIS_SOCK=$MAIN_SOCK REDIS_PORT=$MAIN_PORT
	"$RLOCK" -u "$url" -k mw -- sleep 60 3>&- 2>/dev/null &
	HOLDER=$!
	wait_until 5 held mw gone || fail "no holder"
	RLOCK_URL=$url "$RLOCK" -w "$(tf 3)" -k mw -- echo must-not-run \
		> "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" 3>&- &
	BG=$!
	# The waiter had its answer (busy) and blocks on the wake-up (the
	# holder's own BLPOP, named rlock-holder, is not the waiter's).
	wait_until 5 eval "redis-cli -s '$sock' client list |
		grep ' flags=[a-zA-Z]*b' | grep -qv ' name=rlock-holder '" ||
		fail "no waiter"
	redis_stop gone
	reap "$BG" "$(tf_ms 10000)"
	BG=
	[ "$RC" = 69 ] || fail "status $RC: $(cat "$BATS_TEST_TMPDIR/err")"
	[ ! -s "$BATS_TEST_TMPDIR/out" ]
	run cat "$BATS_TEST_TMPDIR/err"
	[ "${#lines[@]}" = 1 ] || fail "$output"
	[[ $output == "rlock: cannot reach $url/0: "* ]] || fail "$output"
	# The URL worked a moment before: checking it is not the cure.
	[[ $output != *check* ]] || fail "$output"
}

# silent ARGS...: against the stopped server, --connect-timeout 1.6 (scaled)
# gives 69 in about that time, not twice it. The timeout is long enough
# that the slack below it (1.5 s) covers starting rlock on a busy machine:
# with 0.5 s, two runs in a loaded make check took 1.6 s.
silent() {
	local t0 el
	t0=$(now_ms)
	run -69 --separate-stderr timeout "$(tf 20)" "$RLOCK" \
		--connect-timeout "$(tf 1.6)" "$@" -k silent -- echo must-not-run
	el=$(( $(now_ms) - t0 ))
	[ -z "$output" ] || fail "COMMAND ran"
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	[[ $stderr == "rlock: cannot reach "*"no answer within $(tf_ms 1600)ms"* ]] ||
		fail "stderr: $stderr"
	[ "$el" -ge "$(tf_ms 1550)" ] || fail "gave up after ${el}ms"
	[ "$el" -lt "$(tf_ms 3100)" ] ||
		fail "took ${el}ms for --connect-timeout $(tf 1.6)"
}

@test "--connect-timeout on a server that accepts but never answers: 69" {
	kill -STOP "$(cat "$SILENT_PIDFILE")"
	silent -u "redis://127.0.0.1:$SILENT_PORT"
	silent -u "redis://127.0.0.1:$SILENT_PORT/3"
	silent -u "redis://:pw@127.0.0.1:$SILENT_PORT"
	kill -CONT "$(cat "$SILENT_PIDFILE")"
	# Awake again, the same server works.
	run -0 "$RLOCK" --connect-timeout "$(tf 0.5)" \
		-u "redis://127.0.0.1:$SILENT_PORT" -k silent -- true
}

@test "-w bounds connecting too: a silent server costs the -w, not --connect-timeout" {
	local t0 el w
	w=$(tf_ms 1000)
	kill -STOP "$(cat "$SILENT_PIDFILE")"
	t0=$(now_ms)
	run -69 --separate-stderr timeout "$(tf 30)" "$RLOCK" \
		--connect-timeout "$(tf 10)" -w "$(tf 1)" \
		-u "redis://127.0.0.1:$SILENT_PORT" -k silent -- echo must-not-run
	el=$(( $(now_ms) - t0 ))
	kill -CONT "$(cat "$SILENT_PIDFILE")"
	[ -z "$output" ] || fail "COMMAND ran"
	[[ $stderr =~ ^"rlock: cannot reach redis://127.0.0.1:$SILENT_PORT/0: PING: no answer within "[0-9]+"ms (unreachable since "[0-9:]+", for "[0-9.]+"s) (--timeout $(dur_text "$w")); check -u"$ ]] ||
		fail "stderr: $stderr"
	[ "$el" -lt "$(tf_ms 5000)" ] || fail "took ${el}ms for -w $(tf 1)"
	# A shorter --connect-timeout bounds each try; the first contact is
	# tried again (the contract's Weather) until -w is spent.
	kill -STOP "$(cat "$SILENT_PIDFILE")"
	t0=$(now_ms)
	run -69 --separate-stderr timeout "$(tf 30)" "$RLOCK" \
		--connect-timeout "$(tf 1.6)" -w "$(tf 3)" \
		-u "redis://127.0.0.1:$SILENT_PORT" -k silent -- echo must-not-run
	el=$(( $(now_ms) - t0 ))
	kill -CONT "$(cat "$SILENT_PIDFILE")"
	[ -z "$output" ] || fail "COMMAND ran"
	[[ $stderr == *"no answer within "*"(unreachable since "* ]] ||
		fail "stderr: $stderr"
	[ "$el" -ge "$(tf_ms 2900)" ] || fail "gave up after ${el}ms of -w $(tf 3)"
	# -w counts from the run's start, the first connect's try included:
	# within -w + 1 s (the contract's Bounds).
	[ "$el" -lt "$(tf_ms 4000)" ] || fail "took ${el}ms for -w $(tf 3)"
	# Once the lock is held, the full --connect-timeout is back: a release
	# held up for 1 s by a stalled server still gets through, no warning.
	run -0 --separate-stderr "$RLOCK" --connect-timeout "$(tf 10)" \
		-w "$(tf 0.3)" -u "redis://127.0.0.1:$SILENT_PORT" -k silent -- \
		sh -c 'kill -STOP $1; (sleep "$2"; kill -CONT $1) & exit 0' sh \
		"$(cat "$SILENT_PIDFILE")" "$(tf 1)"
	[ -z "$stderr" ] || fail "stderr: $stderr"
	[ "$(redis-cli -p "$SILENT_PORT" exists "rlock:{silent}")" = 0 ]
}

@test "ps and /proc/PID/cmdline do not show the password" {
	# The process ps shows is valgrind, whose argv rlock cannot scrub.
	skip_under_valgrind "ps shows valgrind's own command line"
	"$RLOCK" -u "redis://:s3cret@127.0.0.1:$AUTH_PORT" -k pw -- sleep 5 \
		3>&- >/dev/null 2>&1 &
	BG=$!
	wait_until 5 sh -c '[ "$(redis-cli -s "$AUTH_SOCK" --no-auth-warning -a s3cret exists "rlock:{pw}")" = 1 ]'
	run -0 ps -o args= -p "$BG"
	[[ $output == *"-u redis://:"*"@127.0.0.1:$AUTH_PORT -k pw -- sleep 5"* ]] ||
		fail "not our process? $output"
	[[ $output != *s3cret* ]] || fail "ps shows: $output"
	run -0 tr '\0' ' ' < "/proc/$BG/cmdline"
	[[ $output == *"redis://:"* ]]
	[[ $output != *s3cret* ]] || fail "cmdline shows: $output"
}

@test "COMMAND's environment does not get the password" {
	local f=$BATS_TEST_TMPDIR/pw
	printf 's3cret\n' > "$f"
	chmod 600 "$f"
	run -0 "$RLOCK" -u "redis://:s3cret@127.0.0.1:$AUTH_PORT" -k env -- env
	[[ $output == *RLOCK_TOKEN=* ]]
	[[ $output != *s3cret* ]] || fail "env: $output"
	run -0 "$RLOCK" -u "unix://$AUTH_SOCK" --password-file "$f" -k env -- env
	[[ $output == *RLOCK_TOKEN=* ]]
	[[ $output != *s3cret* ]] || fail "env: $output"
	run -0 "$RLOCK" -u "unix://$AUTH_SOCK" --password-file "$f" -k env -- \
		sh -c 'cat /proc/$$/cmdline; echo; cat /proc/$$/environ' 
	[[ $output != *s3cret* ]] || fail "child sees: $output"
	# Unless the user put it there: COMMAND inherits the environment.
	RLOCK_PASSWORD=s3cret run -0 "$RLOCK" -u "unix://$AUTH_SOCK" -k env -- env
	[[ $output == *RLOCK_PASSWORD=s3cret* ]]
}
