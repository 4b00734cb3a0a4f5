#!/usr/bin/env bats
# The bad-input table (issue 6): one test per row. Each asserts the exit
# status of the contract, exactly one "rlock: " line on stderr naming the
# problem (plus the Try line for usage errors), no crash (the exact status
# is asserted, so no 128+N and no sanitizer report on stderr), and nothing
# left in Redis: no key without a TTL, and no lock key when we did not get
# the lock. Servers that misbehave are started by the test that needs them
# and stopped, by PID, in teardown.

load helper

setup_file() {
	redis_start main
	export MAIN_SOCK=$REDIS_SOCK MAIN_PORT=$REDIS_PORT MAIN_URL=$RLOCK_URL
	export MAIN_PIDFILE=$REDIS_PIDFILE
	# redis_start checks with redis-cli ping, which reads REDISCLI_AUTH.
	REDISCLI_AUTH=pw redis_start auth --requirepass pw
	export AUTH_SOCK=$REDIS_SOCK AUTH_PORT=$REDIS_PORT
	redis-cli -s "$AUTH_SOCK" --no-auth-warning -a pw acl setuser noeval \
		on '>pw' '~*' '+@all' -eval -evalsha >/dev/null
	export REDIS_SOCK=$MAIN_SOCK REDIS_PORT=$MAIN_PORT
	export REDIS_PIDFILE=$MAIN_PIDFILE RLOCK_URL=$MAIN_URL
	# A loopback port where nothing listens: a usage error that still
	# comes out as 64 with -u pointing there was found before connecting.
	CLOSED_PORT=$(closed_port 20000 12000) || return 1
	export CLOSED_PORT CLOSED_URL=redis://127.0.0.1:$CLOSED_PORT
}

teardown_file() {
	redis_stop auth
	redis_stop main
}

teardown() {
	local name pg left
	# A socat this test started (in its own process group): wake it if
	# it was stopped, then end the group, by its id.
	for pg in ${SOCAT_PGIDS:-}; do
		kill -CONT -- "-$pg" 2>/dev/null
		kill -TERM -- "-$pg" 2>/dev/null
	done
	SOCAT_PGIDS=
	for name in ${EXTRA:-}; do
		left=$(REDIS_SOCK=$BATS_FILE_TMPDIR/$name/redis.sock \
			keys_without_ttl)
		redis_stop "$name"
		[ -z "$left" ] || fail "keys without TTL on $name: $left"
	done
	EXTRA=
	rcli config set maxmemory 0 >/dev/null
	rcli del filler >/dev/null
	left=$(keys_without_ttl)
	[ -z "$left" ] || fail "keys without TTL: $left"
	left=$(REDISCLI_AUTH=pw REDIS_SOCK=$AUTH_SOCK keys_without_ttl)
	[ -z "$left" ] || fail "keys without TTL on auth: $left"
}

# extra_start NAME [redis-server args...]: one more server for this test,
# stopped in teardown; sets X_SOCK and X_PORT and keeps main the default.
extra_start() {
	redis_start "$@" || return 1
	X_SOCK=$REDIS_SOCK X_PORT=$REDIS_PORT
	EXTRA="${EXTRA:-} $1"
	export REDIS_SOCK=$MAIN_SOCK REDIS_PORT=$MAIN_PORT
	export REDIS_PIDFILE=$MAIN_PIDFILE RLOCK_URL=$MAIN_URL
}

# socat_start PORT ADDRESS: a socat listening on 127.0.0.1:PORT, forking
# to ADDRESS per connection, in a process group of its own (setsid) so
# that all of it can be stopped and ended by one id. Returns once PORT
# accepts connections.
socat_start() {
	local port=$1 pid pg
	setsid socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" "$2" \
		</dev/null >/dev/null 2>&1 3>&- &
	pid=$!
	SOCAT_PGIDS="${SOCAT_PGIDS:-} $pid"
	wait_until 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null ||
		fail "socat does not listen on $port"
	# setsid made socat, not a child of it, the leader of a new group.
	pg=$(ps -o pgid= -p "$pid" | tr -d ' ')
	[ "$pg" = "$pid" ] || fail "socat $pid is in process group $pg"
	SOCAT_PG=$pg
}

# fails STATUS GLOB ARGS...: rlock ARGS exits STATUS within 20 s (scaled),
# COMMAND (which should print) did not run, and stderr is one line
# "rlock: "GLOB.
fails() {
	local st=$1 pat=$2
	shift 2
	run -"$st" --separate-stderr timeout "$(tf 20)" "$RLOCK" "$@"
	[ -z "$output" ] || fail "stdout: $output"
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	# shellcheck disable=SC2053 # $pat is a glob on purpose
	[[ $stderr == "rlock: "$pat ]] || fail "stderr: $stderr (want $pat)"
}

# no_lock KEY [SOCK]: the lock key of KEY does not exist (on main).
no_lock() {
	local n
	n=$(redis-cli -s "${2:-$MAIN_SOCK}" --no-auth-warning exists \
		"rlock:{$1}")
	[ "$n" = 0 ] || fail "lock key of '$1' left behind"
}

# ---------------------------------------------------------------- KEYs

@test "bad input: empty KEY -> 64" {
	usage_error 'the key is empty$' -k '' -- echo must-not-run
	usage_error 'the key is empty$' --key= -- echo must-not-run
}

@test "bad input: huge KEY (513 B, 128 KiB; 1 MiB stops at execve) -> 64" {
	local big
	usage_error 'the key is longer than 512 bytes$' \
		-k "$(printf 'a%.0s' {1..513})" -- echo must-not-run
	# The longest word execve(2) passes (MAX_ARG_STRLEN, 128 KiB - 1).
	big=$(head -c 131071 /dev/zero | tr '\0' k)
	usage_error 'the key is longer than 512 bytes$' -k "$big" -- true
	usage_error 'the key is longer than 512 bytes$' \
		"--key=${big:6}" -- true
	# 1 MiB in one argument never reaches rlock: the kernel refuses the
	# exec (E2BIG), so the shell's 126 is all there is to see.
	big=$(head -c 1048576 /dev/zero | tr '\0' k)
	run -126 "$RLOCK" -k "$big" -- true
	[[ $output == *"Argument list too long"* ]]
}

# The bytes 0x01..0xff as status shows them (\xHH outside printable
# ASCII, \\ for a backslash) and as JSON (\u00HH for control bytes and
# for bytes that are not UTF-8; 0x80..0xff in a row never are).
escaped_all_bytes() { # KEY
	local i c text='' json=''
	for i in $(seq 1 255); do
		c=${1:i-1:1}
		if [ "$i" -eq 92 ]; then
			text+='\\'
			json+='\\'
		elif [ "$i" -eq 34 ]; then
			text+='"'
			json+='\"'
		elif [ "$i" -ge 32 ] && [ "$i" -lt 127 ]; then
			text+=$c
			json+=$c
		else
			text+=$(printf '\\x%02x' "$i")
			case $i in
			9) json+='\t' ;;
			10) json+='\n' ;;
			13) json+='\r' ;;
			*) json+=$(printf '\\u%04x' "$i") ;;
			esac
		fi
	done
	EXP_TEXT=$text EXP_JSON=$json
}

@test "bad input: binary KEY (bytes 0x01-0xff) -> 0, shown escaped" {
	local key
	key=$(printf "$(printf '\\%03o' $(seq 1 255))")
	[ "${#key}" -eq 255 ]
	escaped_all_bytes "$key"
	printf '%s' "$key" > "$BATS_TEST_TMPDIR/want"
	run -0 --separate-stderr "$RLOCK" -k "$key" -- sh -c '
		printf "%s" "$RLOCK_KEY" > "$1/got"
		redis-cli -s "$MAIN_SOCK" exists "rlock:{$RLOCK_KEY}" > "$1/held"
		"$RLOCK" status "$RLOCK_KEY" > "$1/status" || echo "status $?"
		"$RLOCK" status --json "$RLOCK_KEY" > "$1/status.json"
		"$RLOCK" list --json > "$1/list.json"' sh "$BATS_TEST_TMPDIR"
	[ -z "$output" ] || fail "$output"
	[ -z "$stderr" ] || fail "$stderr"
	cmp "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
	[ "$(cat "$BATS_TEST_TMPDIR/held")" = 1 ]
	[ "$(head -n 1 "$BATS_TEST_TMPDIR/status")" = "$EXP_TEXT: held (mutex)" ] ||
		fail "status: $(head -n 1 "$BATS_TEST_TMPDIR/status")"
	jq -e . "$BATS_TEST_TMPDIR/status.json" >/dev/null
	jq -e 'length == 1' "$BATS_TEST_TMPDIR/list.json" >/dev/null
	grep -qF "\"key\":\"$EXP_JSON\"" "$BATS_TEST_TMPDIR/list.json" ||
		fail "list --json: $(cat "$BATS_TEST_TMPDIR/list.json")"
	grep -qF "\"key\":\"$EXP_JSON\"" "$BATS_TEST_TMPDIR/status.json"
	no_lock "$key"
}

@test "bad input: KEYs a{b}c, }{, newline, * and a -> 0, held at once" {
	local nl=$'a\nb' k
	# Nested, each -n: one KEY colliding with another would give 75.
	run -0 --separate-stderr "$RLOCK" -n -k a -- \
		"$RLOCK" -n -k 'a{b}c' -- "$RLOCK" -n -k '}{' -- \
		"$RLOCK" -n -k "$nl" -- "$RLOCK" -n -k '*' -- sh -c '
		redis-cli -s "$MAIN_SOCK" exists "rlock:{a}" "rlock:{a{b}c}" \
			"rlock:{\\}{}" "rlock:{$2}" "rlock:{*}"
		"$RLOCK" status a "a{b}c" "}{" "$2" "*" >/dev/null; echo "$?"
		"$RLOCK" list --json | jq length
		"$RLOCK" status "$2" | head -n 1' sh x "$nl"
	[ -z "$stderr" ] || fail "$stderr"
	[ "${lines[0]}" = 5 ] || fail "lock keys: $output"
	[ "${lines[1]}" = 0 ] || fail "status: $output"
	[ "${lines[2]}" = 5 ] || fail "list: $output"
	[ "${lines[3]}" = 'a\x0ab: held (mutex)' ] || fail "$output"
	# The newline KEY held, a KEY "a" and "b" are still free.
	run -0 "$RLOCK" -n -k "$nl" -- sh -c \
		'"$RLOCK" -n -k a -- true && "$RLOCK" -n -k b -- true && echo ok'
	[ "$output" = ok ]
	for k in a 'a{b}c' '}{' "$nl" '*'; do
		no_lock "$k"
	done
}

# ---------------------------------------------------------------- URLs

@test "bad input: URL without host redis://:6379 -> 64" {
	usage_error "bad Redis URL 'redis://:6379' \(-u\): no host" \
		-u redis://:6379 -k k -- echo must-not-run
}

@test "bad input: URL port 0, 65536, abc -> 64" {
	local p
	for p in 0 65536 abc -1 ''; do
		usage_error "bad Redis URL 'redis://h:$p' \(-u\): bad port" \
			-u "redis://h:$p" -k k -- echo must-not-run
	done
}

@test "bad input: URL db /x, /-1, /99999999999 -> 64" {
	local d
	for d in x -1 99999999999 1x; do
		usage_error "bad Redis URL '.*/$d' \(-u\): bad database number" \
			-u "redis://127.0.0.1:$MAIN_PORT/$d" -k k -- echo must-not-run
	done
	usage_error "bad database number" -u "unix://$MAIN_SOCK?db=-1" -k k \
		-- echo must-not-run
}

@test "bad input: URL db /999, beyond the server's databases -> 76" {
	fails 76 "redis://127.0.0.1:$MAIN_PORT/999: cannot select the database: *DB index is out of range*databases*" \
		-u "redis://127.0.0.1:$MAIN_PORT/999" -k db999 -- echo must-not-run
	fails 76 "unix://$MAIN_SOCK?db=999: cannot select the database: *" \
		-u "unix://$MAIN_SOCK?db=999" -k db999 -- echo must-not-run
	no_lock db999
}

@test "bad input: URL scheme http://x -> 64" {
	usage_error "bad Redis URL 'http://x' \(-u\): unknown scheme" \
		-u http://x -k k -- echo must-not-run
	# From the environment, the message says where the URL came from.
	RLOCK_URL=http://x run -64 --separate-stderr "$RLOCK" -k k -- true
	[[ ${stderr_lines[0]} == "rlock: bad Redis URL 'http://x' (RLOCK_URL): unknown scheme"* ]]
}

@test "bad input: bad rediss:// URLs -> 64, password hidden" {
	usage_error "bad Redis URL 'rediss://127.0.0.1:0' \(-u\): bad port" \
		-u rediss://127.0.0.1:0 -k k -- echo must-not-run
	# The password in a rediss:// URL is hidden too.
	usage_error "'rediss://:\*+@h:x' \(-u\): bad port" \
		-u rediss://:secret@h:x -k k -- true
	[[ $stderr != *secret* ]]
	usage_error "'rediss\+cluster://:\*+@a/3' \(-u\): Redis Cluster has only database 0" \
		-u rediss+cluster://:secret@a/3 -k k -- true
	[[ $stderr != *secret* ]]
}

# ------------------------------------------------------------ durations

@test "bad input: duration 0 (-w 0 is -n; -l 0, --connect-timeout 0 -> 64)" {
	run -0 --separate-stderr "$RLOCK" -w 0 -k d0 -- echo ran
	[ "$output" = ran ]
	[ -z "$stderr" ]
	# Held by another: -w 0 gives up at once, as -n does.
	run -75 --separate-stderr "$RLOCK" -k d0 -- env -u RLOCK_TOKEN \
		"$RLOCK" -w 0 -k d0 -- echo must-not-run
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	[[ $stderr == "rlock: 'd0' is held by "*"; not waiting (--nonblock)" ]]
	usage_error "--lease must be at least 100ms, not '0'" -l 0 -k d0 -- true
	usage_error '--connect-timeout must be more than 0' \
		--connect-timeout 0 -k d0 -- true
	# No grace: SIGKILL right after SIGTERM, a valid choice.
	run -0 --separate-stderr "$RLOCK" --kill-after 0 -k d0 -- echo ran
	[ "$output" = ran ]
	no_lock d0
}

# bad_dur VALUE: every DUR option refuses VALUE with 64, naming both.
bad_dur() {
	local o
	for o in -w:--timeout -l:--lease --kill-after:--kill-after \
		--connect-timeout:--connect-timeout; do
		usage_error "${o#*:}: invalid duration '$2'" "${o%%:*}" "$1" \
			-k k -- echo must-not-run
	done
}

@test "bad input: duration -1 -> 64" {
	bad_dur -1 -1
}

@test "bad input: duration 1e99 -> 64" {
	bad_dur 1e99 1e99
}

@test "bad input: duration abc -> 64" {
	bad_dur abc abc
}

@test "bad input: duration 10y -> 64" {
	bad_dur 10y 10y
}

# -------------------------------------------------------- command line

@test "bad input: missing command -> 64" {
	usage_error 'missing command to run under the lock$' -k k
	usage_error 'missing command to run under the lock$' -n -k k -w 1
}

@test "bad input: -- alone -> 64" {
	usage_error 'missing command to run under the lock$' -k k --
}

@test "bad input: unknown options, short and long -> 64" {
	usage_error "unknown option '-Z'$" -Z -k k -- echo must-not-run
	usage_error "unknown option '-Z'$" -k k -nZ -- echo must-not-run
	usage_error "unknown option '--bogus'$" --bogus -k k -- echo must-not-run
	usage_error "unknown option '--bogus'$" -k k --bogus=1 -- echo x
	usage_error "unknown option '--bogus' for status" status --bogus k
	usage_error "unknown option '-Z' for list" list -Z
}

# ------------------------------------------------------------- COMMAND

@test "bad input: COMMAND that closes stdout -> its status, released" {
	run -1 --separate-stderr "$RLOCK" -k so -- sh -c \
		'redis-cli -s "$MAIN_SOCK" exists "rlock:{so}" >&2; exec >&-; echo x'
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = 1 ] || fail "not held: $stderr"
	[[ $stderr != *rlock:* ]] || fail "rlock spoke: $stderr"
	no_lock so
	run -3 --separate-stderr "$RLOCK" -k so -- sh -c 'exec >&- 2>&-; exit 3'
	[ -z "$stderr" ]
	no_lock so
	# rlock's own stdout closed before it starts.
	run -1 --separate-stderr sh -c 'exec >&-; "$RLOCK" -k so -- sh -c "echo x"'
	[[ $stderr != *rlock:* ]] || fail "rlock spoke: $stderr"
	no_lock so
	# Started with stdin and stderr closed: COMMAND gets them closed too,
	# and rlock's messages (-v) go nowhere, least of all into the Redis
	# connection, where they would be commands (errorstats would count
	# "unknown command").
	rcli config resetstat >/dev/null
	run -0 sh -c '"$RLOCK" -v -k so -- sh -c \
		"[ -e /proc/\$\$/fd/0 ] || [ -e /proc/\$\$/fd/2 ] || echo closed" \
		<&- 2>&-'
	[ "$output" = closed ]
	[ -z "$(rcli info errorstats | grep errorstat_)" ] ||
		fail "Redis got: $(rcli info errorstats)"
	# status with stdout closed: the write error, not a silent 0.
	run -74 --separate-stderr sh -c 'exec >&-; "$RLOCK" status so'
	[ "$stderr" = "rlock: write error on standard output: Bad file descriptor" ]
	no_lock so
}

# -------------------------------------------------------------- servers

@test "bad input: server is a read-only replica -> 76, READONLY" {
	# No 5 s wait before main sends its data (the diskless default).
	rcli config set repl-diskless-sync-delay 0 >/dev/null
	extra_start replica --replicaof 127.0.0.1 "$MAIN_PORT"
	wait_until 10 sh -c 'redis-cli -s "$1" info replication |
		grep -q "^master_link_status:up"' sh "$X_SOCK" ||
		fail "replica never synced"
	local url=unix://$X_SOCK
	fails 76 "$url?db=0: acquire: Redis answered: READONLY *; that server is a read-only replica; point -u at the primary" \
		-u "$url" -k ro -- echo must-not-run
	fails 76 "*READONLY*" -u "$url" -n -k ro -- echo must-not-run
	fails 76 "*READONLY*" -u "$url" -N 3 -k ro -- echo must-not-run
	fails 76 "*READONLY*" -u "$url" --fair -w 1 -k ro -- echo must-not-run
	# Reading works on a replica: the KEY is free there.
	run -1 --separate-stderr "$RLOCK" -u "$url" status ro
	no_lock ro "$X_SOCK"
	no_lock ro
}

@test "bad input: requirepass, no password or a wrong one -> 77" {
	fails 77 "redis://127.0.0.1:$AUTH_PORT/0 refused us: PING: Redis answered: NOAUTH *; check the user and password*" \
		-u "redis://127.0.0.1:$AUTH_PORT" -k pw -- echo must-not-run
	fails 77 "unix://:***@$AUTH_SOCK?db=0 refused us: authentication failed: Redis answered: WRONGPASS *; check the user and password*" \
		-u "unix://:wrong@$AUTH_SOCK" -k pw -- echo must-not-run
	[[ $stderr != *wrong@* ]]
	RLOCK_PASSWORD=wrong fails 77 "*WRONGPASS*" -u "unix://$AUTH_SOCK" \
		-k pw -- echo must-not-run
	REDISCLI_AUTH=pw no_lock pw "$AUTH_SOCK"
}

@test "bad input: ACL user without EVAL/EVALSHA -> 77 NOPERM" {
	local url=unix://noeval:pw@$AUTH_SOCK
	fails 77 "unix://noeval:***@$AUTH_SOCK?db=0 refused us: acquire: the ACL user lacks +evalsha, for EVALSHA; add it: ACL SETUSER noeval +evalsha (every permission rlock needs: \"A Redis user for rlock\" in rlock(1))" \
		-u "$url" -k acl -- echo must-not-run
	fails 77 "*lacks +evalsha*ACL SETUSER noeval +evalsha*" -u "$url" -n \
		-k acl -- echo must-not-run
	# status reads with EVALSHA_RO, which this user may run.
	run -1 "$RLOCK" -u "$url" status acl
	assert_output "acl: free"
	# Without that too: refused, with the permission named.
	redis-cli -s "$AUTH_SOCK" --no-auth-warning -a pw acl setuser noevalro \
		on '>pw' '~*' '+@all' -eval -evalsha -eval_ro -evalsha_ro >/dev/null
	fails 77 "*lacks +evalsha*ACL SETUSER noevalro +evalsha*" \
		-u "unix://noevalro:pw@$AUTH_SOCK" status acl
	[[ $stderr != *"check the user and password"* ]]
	REDISCLI_AUTH=pw no_lock acl "$AUTH_SOCK"
}

@test "bad input: server out of memory -> 76, Redis's OOM text" {
	rcli set filler "$(head -c 65536 /dev/zero | tr '\0' x)" EX 60 >/dev/null
	rcli config set maxmemory-policy noeviction >/dev/null
	rcli config set maxmemory 1 >/dev/null
	fails 76 "$MAIN_URL?db=0: acquire: Redis answered: OOM command not allowed when used memory > 'maxmemory'.; the server is out of memory; free some, or raise its maxmemory" \
		-k oom -- echo must-not-run
	fails 76 "*OOM command not allowed*" -n -k oom -- echo must-not-run
	fails 76 "*OOM command not allowed*" --fair -w 1 -k oom -- \
		echo must-not-run
	no_lock oom
	# Redis refuses a script's first write that needs memory, but once a
	# script has written (the -N script first trims expired holders, which
	# needs none) it lets the rest through: -N may get the lock. Either
	# way, one clear outcome and nothing left without a TTL.
	run --separate-stderr timeout "$(tf 20)" "$RLOCK" -N 2 -k oom -- echo ran
	if [ "$status" -eq 0 ]; then
		[ "$output" = ran ] && [ -z "$stderr" ]
	else
		[ "$status" -eq 76 ] && [ -z "$output" ] ||
			fail "status $status: $output"
		[[ $stderr == "rlock: "*"OOM command not allowed"* ]]
		[ "${#stderr_lines[@]}" -eq 1 ]
	fi
	no_lock oom
	rcli config set maxmemory 0 >/dev/null
	run -0 "$RLOCK" -k oom -- echo ran
	[ "$output" = ran ]
}

@test "bad input: not Redis at all (a port answering HTTP) -> 76" {
	local port
	port=$(closed_port 20000 12000)
	# Reads the request line, answers as an HTTP server would, and keeps
	# the connection a while: rlock must read the garbage, not an EOF.
	socat_start "$port" \
		"SYSTEM:read l; echo HTTP/1.1 400 Bad Request; sleep 2"
	local want="redis://127.0.0.1:$port/0: PING: the answer is not in the Redis protocol (Protocol error, got \"H\" as reply type byte); is a Redis server listening there? check -u"
	fails 76 "$want" -u "redis://127.0.0.1:$port" -k http -- echo must-not-run
	fails 76 "*/3: SELECT: the answer is not in the Redis protocol*" \
		-u "redis://127.0.0.1:$port/3" -k http -- echo must-not-run
	fails 76 "*: AUTH: the answer is not in the Redis protocol*" \
		-u "redis://:pw@127.0.0.1:$port" -k http -- echo must-not-run
	fails 76 "$want" -u "redis://127.0.0.1:$port" -w 3 --fair -k http \
		-- echo must-not-run
	fails 76 "$want" -u "redis://127.0.0.1:$port" status http
	# One that answers and hangs up at once: depending on who is first,
	# garbage (76) or a closed connection (69), but one line, at once.
	port=$(closed_port 20000 12000)
	socat_start "$port" "SYSTEM:echo HTTP/1.1 400 Bad Request"
	run --separate-stderr timeout "$(tf 20)" "$RLOCK" \
		-u "redis://127.0.0.1:$port" -k http -- echo must-not-run
	[ "$status" -eq 76 ] || [ "$status" -eq 69 ] || fail "status $status"
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	[[ $stderr == "rlock: "*"redis://127.0.0.1:$port/0: "* ]]
}

@test "bad input: server answers slowly (stopped proxy) -> 69 in --connect-timeout" {
	local port t0 el ct
	port=$(closed_port 20000 12000)
	socat_start "$port" "TCP:127.0.0.1:$MAIN_PORT"
	local url=redis://127.0.0.1:$port
	ct=$(tf 1)
	run -0 "$RLOCK" --connect-timeout "$ct" -u "$url" -k slow -- echo ran
	[ "$output" = ran ]
	kill -STOP -- "-$SOCAT_PG"
	t0=$(now_ms)
	fails 69 "cannot reach $url/0: PING: no answer within $(tf_ms 1000)ms; check -u" \
		--connect-timeout "$ct" -u "$url" -k slow -- echo must-not-run
	el=$(( $(now_ms) - t0 ))
	[ "$el" -ge "$(tf_ms 900)" ] || fail "gave up after ${el}ms"
	[ "$el" -lt "$(tf_ms 3000)" ] ||
		fail "took ${el}ms for --connect-timeout $ct"
	# With -w the first contact is tried again (each try bounded by the
	# connect timeout) until -w is spent; the tries left behind by the
	# silent proxy are delivered below.
	t0=$(now_ms)
	fails 69 "cannot reach $url/0: *unreachable since *" \
		--connect-timeout "$ct" -w "$(tf 3)" -u "$url" -k slow -- \
		echo must-not-run
	el=$(( $(now_ms) - t0 ))
	[ "$el" -ge "$(tf_ms 2900)" ] || fail "gave up after ${el}ms of -w $(tf 3)"
	[ "$el" -lt "$(tf_ms 5000)" ] || fail "took ${el}ms with -w $(tf 3)"
	kill -CONT -- "-$SOCAT_PG"
	# Awake, the proxy delivers what was queued: nothing that takes a lock.
	run -0 "$RLOCK" --connect-timeout "$ct" -u "$url" -k slow -- echo ran
	no_lock slow
}

# A server that hears us only after we gave up (a network that holds our
# bytes past --connect-timeout, then delivers them all, our close last):
# nothing is sent behind a login before its answer, so what Redis reads
# late takes no lock. slow_net.py PORT UPSTREAM DELAY_S DONE: one
# connection, every chunk forwarded DELAY_S after it came, nothing
# answered back; DONE is written once Redis closed its side.
@test "bad input: a PING nobody answers in time: 69, and what Redis reads later takes no lock" {
	local port f0 f1
	cat > "$BATS_TEST_TMPDIR/slow_net.py" <<-'EOF'
	import socket, sys, time
	port, up, delay, done = (int(sys.argv[1]), int(sys.argv[2]),
	                         float(sys.argv[3]), sys.argv[4])
	ls = socket.socket()
	ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	ls.bind(('127.0.0.1', port))
	ls.listen(1)
	open(done + '.ready', 'w').close()
	c, _ = ls.accept()
	chunks = []
	while True:
	    try:
	        b = c.recv(65536)
	    except ConnectionResetError:
	        b = b''
	    if not b:
	        break
	    chunks.append((time.monotonic(), b))
	u = socket.create_connection(('127.0.0.1', up))
	for t, b in chunks:
	    time.sleep(max(0.0, t + delay - time.monotonic()))
	    u.sendall(b)
	u.shutdown(socket.SHUT_WR)
	while u.recv(65536):
	    pass
	open(done, 'w').close()
	EOF
	# The scripts cached, as on a server in use: the acquire is run.
	run -0 "$RLOCK" -u "$MAIN_URL" -k late -- true
	f0=$(redis-cli -s "$MAIN_SOCK" get "rlock:{late}:fence")
	port=$(closed_port 20000 12000)
	setsid python3 "$BATS_TEST_TMPDIR/slow_net.py" "$port" "$MAIN_PORT" \
	    "$(tf 2)" "$BATS_TEST_TMPDIR/done" 3>&- &
	SOCAT_PGIDS="${SOCAT_PGIDS:-} $!"	# ended by teardown, as a socat
	wait_until 5 test -e "$BATS_TEST_TMPDIR/done.ready"
	fails 69 "cannot reach redis://127.0.0.1:$port/0: PING: no answer within $(tf_ms 1000)ms; check -u" \
		--connect-timeout "$(tf 1)" -u "redis://127.0.0.1:$port" \
		-k late -- echo must-not-run
	wait_until "$(tf 10)" test -e "$BATS_TEST_TMPDIR/done" ||
		fail "the late bytes never reached Redis"
	# No acquire came behind the PING (it would have drawn a fence).
	f1=$(redis-cli -s "$MAIN_SOCK" get "rlock:{late}:fence")
	[ "$f1" = "$f0" ] || fail "an acquire reached Redis ($f0, $f1)"
	no_lock late
}

# hold_slot PORT: connect fd 5 of this shell to PORT and get a PONG on it.
hold_slot() {
	local pong=
	exec 5<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'PING\r\n' >&5
	read -r -t 2 -u 5 pong
	[ "$pong" = $'+PONG\r' ] && return 0
	exec 5>&-
	return 1
}

@test "bad input: maxclients reached -> 69" {
	extra_start full
	redis-cli -s "$X_SOCK" config set maxclients 1 >/dev/null
	# The one client allowed: a connection of this shell, idle once it
	# has been answered (so the server surely counts it). The redis-cli
	# above may not be gone yet: then this one is refused; try again.
	wait_until 5 hold_slot "$X_PORT" || fail "cannot take the one slot"
	fails 69 "cannot reach unix://$X_SOCK?db=0: PING: Redis answered: ERR max number of clients reached; the server has as many clients as its maxclients allows; retry later, or raise maxclients" \
		-u "unix://$X_SOCK" -k full -- echo must-not-run
	fails 69 "cannot reach redis://127.0.0.1:$X_PORT/2: cannot select the database: *max number of clients*" \
		-u "redis://127.0.0.1:$X_PORT/2" -w 5 -k full -- echo must-not-run
	exec 5>&-
	# The slot is free again once that connection is gone.
	wait_until 5 "$RLOCK" -q -u "unix://$X_SOCK" -k full -- true
	no_lock full "$X_SOCK"
}
