#!/usr/bin/env bats
# status, list and release --force: text and --json output, exit statuses,
# SCAN over a large keyspace, breaking a lock and what its holder does then.

load helper

setup_file() {
	# Tests here share one server and look at its whole keyspace.
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	redis_start main
}

teardown_file() {
	redis_stop main
}

HOLDERS=()

# bg_rlock ARGS...: start rlock in the background (fd 3 closed, or bats
# would wait for it); its PID is in $BG and is killed in teardown.
bg_rlock() {
	"$RLOCK" "$@" 3>&- &
	BG=$!
	HOLDERS+=("$BG")
}

teardown() {
	stop_bg "${HOLDERS[@]}"
	if [ -n "${AUTH_DIR:-}" ]; then
		redis_stop_dir "$AUTH_DIR"
	fi
}

sem_count() { [ "$(rcli zcard "rlock:{$1}:sem")" = "$2" ]; }
queued() { [ "$(rcli llen "rlock:{$1}:q")" = "$2" ]; }
listening() { [ "$(rcli pubsub numsub "$1" | tail -1)" = 1 ]; }
not_listening() {
	[ "$(rcli pubsub shardnumsub "$1" | tail -1)" = 0 ] &&
		[ "$(rcli pubsub numsub "$1" | tail -1)" = 0 ]
}
server_ms() { rcli time | { read -r s; read -r u; echo $((s * 1000 + u / 1000)); }; }
me() { echo "$(id -un)@$(hostname)"; }

# wait_status PID: wait (at most 10 s) for a background rlock, set $STATUS.
wait_status() {
	wait_until 10 pid_gone "$1"
	STATUS=0
	wait "$1" || STATUS=$?
}

# fake_meta KEY META_KEY USER HOST PID CMD: holder metadata as rlock
# writes it, for states built by hand (since 5 s ago, fence 4242).
fake_meta() {
	local now
	now=$(server_ms)
	rcli hset "$2" user "$3" host "$4" pid "$5" cmd "$6" \
		since $((now - 5000)) lease 30000 fence 4242 >/dev/null
	rcli pexpire "$2" 30000 >/dev/null
}

# fake_slot_meta KEY TOKEN USER HOST PID CMD: a -N holder's meta, fields
# TOKEN:NAME of P{KEY}:metas, as acquire.lua writes it.
fake_slot_meta() {
	local now m="rlock:{$1}:metas" t=$2
	now=$(server_ms)
	rcli hset "$m" "$t:user" "$3" "$t:host" "$4" "$t:pid" "$5" \
		"$t:cmd" "$6" "$t:since" $((now - 5000)) "$t:lease" 30000 \
		"$t:fence" 4242 >/dev/null
	rcli pexpire "$m" 30000 >/dev/null
}

@test "status: a free KEY says so and exits 1" {
	run -1 "$RLOCK" status nobody-here
	assert_output "nobody-here: free"
}

@test "status: a held KEY names holder, command, since, lease and fence" {
	bg_rlock -k st-held -l 10s -- sleep 30
	wait_until 5 held st-held
	run -0 --separate-stderr "$RLOCK" status st-held
	assert_line --index 0 "st-held: held (mutex)"
	assert_line --index 1 "  holder      $(me), pid $BG"
	assert_line --index 2 "  command     sleep 30"
	date='[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}'
	assert_line --index 3 --regexp "^  since       $date .* \([0-9.]+m?s ago\)\$"
	assert_line --index 4 --regexp '^  lease left  [0-9.]+s of 10\.0s$'
	assert_line --index 5 "  fence       $(rcli get 'rlock:{st-held}:fence')"
	[ -z "$stderr" ]
}

@test "status: a 100 KB command line is stored and shown cut to 1 KiB" {
	local big cmd
	big=$(head -c 100000 /dev/zero | tr '\0' a)
	bg_rlock -k st-long -l 10s -- sh -c 'sleep 30' "$big"
	wait_until 5 held st-long
	cmd=$(rcli hget 'rlock:{st-long}:meta' cmd)
	[ "${#cmd}" = 1024 ] || fail "stored ${#cmd} bytes"
	[ "$cmd" = "sh -c sleep 30 ${big:0:1006}..." ]
	run -0 --separate-stderr "$RLOCK" status st-long
	assert_line --index 2 "  command     $cmd"
	[ "${#output}" -lt 2000 ] || fail "status printed ${#output} bytes"
	run -0 "$RLOCK" status --json st-long
	[ "$(jq -r '.[0].holders[0].command | length' <<< "$output")" = 1024 ]
}

@test "status and list answer during CLIENT PAUSE WRITE (a read-only script)" {
	local t0 el
	bg_rlock -k st-pause -l 20s -- sleep 30
	wait_until 5 held st-pause
	rcli client pause "$(tf_ms 8000)" WRITE >/dev/null
	t0=$(now_ms)
	run --separate-stderr timeout "$(tf 4)" "$RLOCK" status st-pause
	el=$(( $(now_ms) - t0 ))
	rcli client unpause >/dev/null
	[ "$status" = 0 ] || fail "status $status after ${el}ms: $stderr"
	assert_line --index 0 "st-pause: held (mutex)"
	rcli client pause "$(tf_ms 8000)" WRITE >/dev/null
	run --separate-stderr timeout "$(tf 4)" "$RLOCK" list 'st-pause*'
	rcli client unpause >/dev/null
	[ "$status" = 0 ] || fail "list: status $status: $stderr"
	[[ $output == st-pause$'\t'* ]] || fail "list: $output"
}

@test "status on a server without EVALSHA_RO (Redis 6): plain EVALSHA" {
	local dir=$BATS_TEST_TMPDIR/r6
	AUTH_DIR=$dir	# stopped by teardown
	mkdir -p "$dir"
	redis-server --port 0 --unixsocket "$dir/s" --save '' --dir "$dir" \
		--daemonize yes --pidfile "$dir/pid" --logfile "$dir/log" \
		--rename-command EVALSHA_RO "" --rename-command EVAL_RO ""
	redis_wait_up "$dir/s"
	RLOCK_URL=unix://$dir/s run -0 --separate-stderr "$RLOCK" -k st-r6 -- \
		"$RLOCK" status st-r6
	assert_line --index 0 "st-r6: held (mutex)"
	[ -z "$stderr" ]
	RLOCK_URL=unix://$dir/s run -1 "$RLOCK" status st-r6
	assert_line --index 0 "st-r6: free"
}

@test "KEYs starting with '}' or '\\': stored as P{\\KEY} (a non-empty hash tag), found by status and list" {
	local k
	bg_rlock -k '}x' -l 10s -- sleep 30
	bg_rlock -k '\y' -l 10s -- sleep 30
	wait_until 5 held '\}x'
	wait_until 5 held '\\y'
	[ "$(rcli exists 'rlock:{}x}')" = 0 ] || fail "unmarked name written"
	run -0 "$RLOCK" status '}x' '\y'
	assert_line --index 0 '}x: held (mutex)'
	assert_line '\\y: held (mutex)'
	run -0 "$RLOCK" list --json
	[ "$(jq -r '[.[].key] | sort | join(" ")' <<< "$output")" = '\y }x' ] ||
		fail "list: $output"
	for k in '}*' '?x' '[}]x' '\}x'; do
		run -0 "$RLOCK" list "$k"
		[[ $output == '}x	'* ]] && [ "${#lines[@]}" = 1 ] ||
			fail "list '$k': $output"
	done
	# A name rlock does not write is no lock of its own.
	rcli set 'rlock:{}z}' foreign px 10000 >/dev/null
	run -0 "$RLOCK" list '}*'
	[ "${#lines[@]}" = 1 ] || fail "list: $output"
	rcli del 'rlock:{}z}' >/dev/null
}

@test "status --json: one valid document with the documented fields" {
	bg_rlock -k st-json -l 10s -- sleep 30
	wait_until 5 held st-json
	run -1 "$RLOCK" status --json st-json st-json-free
	echo "$output" | python3 -m json.tool >/dev/null
	fence=$(rcli get 'rlock:{st-json}:fence')
	echo "$output" | jq -e --arg pid "$BG" --arg user "$(id -un)" \
		--arg host "$(hostname)" --arg fence "$fence" '
		length == 2 and
		(.[0] | .key == "st-json" and .held == true and
		 .mode == "mutex" and .limit == 1 and
		 (.holders | length) == 1 and .queue.length == 0 and
		 .queue.waiters == [] and
		 (.holders[0] | .user == $user and .host == $host and
		  .pid == ($pid | tonumber) and .command == "sleep 30" and
		  .lease_ms == 10000 and .lease_left_ms > 0 and
		  .lease_left_ms <= 10000 and .held_ms >= 0 and
		  .fence == ($fence | tonumber))) and
		(.[0] | .holders[0].since_ms + .holders[0].held_ms ==
		 .server_time_ms) and
		(.[1] | .key == "st-json-free" and .held == false and
		 .mode == null and .limit == null and .holders == [])'
}

@test "status: several KEYs, 0 when all are held, 1 when one is free" {
	bg_rlock -k st-a -- sleep 30
	bg_rlock -k st-b -- sleep 30
	wait_until 5 held st-a
	wait_until 5 held st-b
	run -0 "$RLOCK" status st-a st-b
	assert_line "st-a: held (mutex)"
	assert_line "st-b: held (mutex)"
	run -1 "$RLOCK" status st-a st-free st-b
	assert_line "st-free: free"
	run -1 "$RLOCK" status --json st-free st-a
	echo "$output" | jq -e 'map(.held) == [false, true]'
}

@test "status: odd bytes in KEY and command stay valid JSON, one line each" {
	key=$'odd\n"\\\xff key'
	bg_rlock -k "$key" -c $'sleep 30 # \x1b[31m "q" \\ \xfe\ttab'
	wait_until 5 held "$key"
	run -0 "$RLOCK" status --json "$key"
	echo "$output" | python3 -m json.tool >/dev/null
	echo "$output" | jq -e '.[0].key == "odd\n\"\\\u00ff key" and
		.[0].holders[0].command ==
		"sleep 30 # \u001b[31m \"q\" \\ \u00fe\ttab"'
	run -0 "$RLOCK" status "$key"
	assert_line --index 0 'odd\x0a"\\\xff key: held (mutex)'
	assert_line --index 2 '  command     sleep 30 # \x1b[31m "q" \\ \xfe\x09tab'
	run -0 "$RLOCK" list 'odd*'
	[[ "$output" == "$(printf '%s\t%s, pid %s\t' 'odd\x0a"\\\xff key' \
		"$(me)" "$BG")"* ]]
	[ "${#lines[@]}" = 1 ]
}

@test "status: a semaphore with its holders (keys written by hand)" {
	local ago since t1 t2
	now=$(server_ms)
	rcli zadd 'rlock:{sem-hand}:sem' $((now + 20000)) tokA \
		$((now + 25000)) tokB $((now - 1000)) tokGone >/dev/null
	rcli pexpire 'rlock:{sem-hand}:sem' 25000 >/dev/null
	rcli set 'rlock:{sem-hand}:limit' 3 px 25000 >/dev/null
	fake_slot_meta sem-hand tokA alice web1 11 'job a'
	fake_slot_meta sem-hand tokB bob web2 22 'job b'
	since=$(rcli hget 'rlock:{sem-hand}:metas' tokA:since)
	t1=$(server_ms)
	run -0 "$RLOCK" status sem-hand
	t2=$(server_ms)
	assert_line --index 0 "sem-hand: held (semaphore, 2 of 3 slots taken)"
	assert_line "  holder      alice@web1, pid 11"
	assert_line "  holder      bob@web2, pid 22"
	assert_line "  command     job a"
	# Alice's run began 5 s before her meta was written: "ago" is what
	# the server's clock said during the status run, in tenths, however
	# long the writes and the run took on a loaded machine.
	ago=$(printf '%s\n' "${lines[@]}" |
		sed -n 's/^  since .*(\([0-9]*\)\.\([0-9]\)s ago)$/\1\2/p' |
		head -n 1)
	[ -n "$ago" ] && [ "$ago" -ge $(( (t1 - since) / 100 - 1 )) ] &&
		[ "$ago" -le $(( (t2 - since) / 100 + 1 )) ] &&
		[ $(( t1 - since )) -ge 5000 ] ||
		fail "since ${ago:-?} tenths ago, $((t1 - since))-$((t2 - since)) ms: $output"
	refute_output --partial tokGone
	run -0 "$RLOCK" status --json sem-hand
	echo "$output" | jq -e '.[0] | .mode == "semaphore" and .limit == 3 and
		(.holders | map(.user)) == ["alice", "bob"] and
		(.holders | map(.pid)) == [11, 22] and
		(.holders[0].lease_left_ms | . > 15000 and . <= 20000) and
		.holders[0].fence == 4242 and .holders[0].lease_ms == 30000'
}

@test "status: a semaphore held by rlock -N" {
	bg_rlock -N 3 -k sem-real -l 10s -- sleep 30
	p1=$BG
	bg_rlock -N 3 -k sem-real -l 10s -- sleep 30
	p2=$BG
	wait_until 5 sem_count sem-real 2
	run -0 "$RLOCK" status sem-real
	assert_line --index 0 "sem-real: held (semaphore, 2 of 3 slots taken)"
	assert_line "  holder      $(me), pid $p1"
	assert_line "  holder      $(me), pid $p2"
	run -0 "$RLOCK" status --json sem-real
	echo "$output" | jq -e --arg p1 "$p1" --arg p2 "$p2" '.[0] |
		.limit == 3 and (.holders | map(.pid) | sort) ==
		([$p1, $p2] | map(tonumber) | sort)'
}

@test "status: the --fair queue, live waiters only, first five shown" {
	now=$(server_ms)
	rcli set 'rlock:{fq-hand}' tokH px 30000 >/dev/null
	fake_meta fq-hand 'rlock:{fq-hand}:meta' alice web1 11 'holder cmd'
	rcli rpush 'rlock:{fq-hand}:q' w1 dead w2 w3 w4 w5 w6 w7 >/dev/null
	rcli pexpire 'rlock:{fq-hand}:q' 30000 >/dev/null
	for i in 1 2 3 4 5 6 7; do
		rcli hset "rlock:{fq-hand}:w" "w$i" "$(printf \
		    '%s\037user%s\037host%s\037%s\037make t%s' \
		    $((now + 30000)) $i $i $i $i)" >/dev/null
	done
	rcli pexpire 'rlock:{fq-hand}:w' 30000 >/dev/null
	# A live waiter listens on its wake channel and has its entry in
	# P{KEY}:w, due after now; "dead" has none.
	# One client for all seven, as the waiters would be (its pid is
	# killed in teardown).
	rcli subscribe $(printf 'rlock:{fq-hand}:wake:w%s ' 1 2 3 4 5 6 7) \
		> /dev/null 3>&- &
	HOLDERS+=("$!")
	wait_until 5 listening 'rlock:{fq-hand}:wake:w7' ||
		fail "the stand-in for the waiters does not listen"
	run -0 "$RLOCK" status fq-hand
	assert_line "  waiting     7 (--fair)"
	assert_line "  next        user1@host1, pid 1: make t1"
	assert_line "  then        user2@host2, pid 2: make t2"
	assert_line "  then        user5@host5, pid 5: make t5"
	refute_output --partial user6
	refute_output --partial dead
	run -0 "$RLOCK" status --json fq-hand
	echo "$output" | jq -e '.[0].queue | .length == 7 and
		(.waiters | map(.user)) == ["user1","user2","user3","user4","user5"]
		and .waiters[0] == {"user":"user1","host":"host1","pid":1,
		"command":"make t1"}'
}

@test "status: the --fair queue of real waiters" {
	bg_rlock -k fq-real -l 10s -- sleep 30
	wait_until 5 held fq-real
	bg_rlock --fair -w 20 -k fq-real -- true
	w1=$BG
	wait_until 5 queued fq-real 1
	bg_rlock --fair -w 20 -k fq-real -- true
	wait_until 5 queued fq-real 2
	run -0 "$RLOCK" status fq-real
	assert_line "  waiting     2 (--fair)"
	assert_line "  next        $(me), pid $w1: true"
}

# Alive is subscribed (as the scripts judge it): a waiter killed a moment
# ago is gone from status at once, though its entry in P{KEY}:w lives on
# a while.
@test "status: a SIGKILLed --fair waiter is gone from the queue shown at once" {
	local w1 w2 t1
	bg_rlock -k fq-kill -l 10s -- sleep 30
	wait_until 5 held fq-kill
	bg_rlock --fair -w 20 -k fq-kill -- true
	w1=$BG
	wait_until 5 queued fq-kill 1
	t1=$(rcli lindex 'rlock:{fq-kill}:q' 0)
	bg_rlock --fair -w 20 -k fq-kill -- true
	w2=$BG
	wait_until 5 queued fq-kill 2
	kill -KILL "$w1"
	wait_until 5 pid_gone "$w1"
	wait "$w1" 2>/dev/null || true
	# The kernel closes its connections at once; Redis may take a moment
	# to see it. Its entry lives on for 90 s.
	wait_until 5 not_listening "rlock:{fq-kill}:wake:$t1" ||
		fail "Redis still counts the killed waiter's subscription"
	[ "$(rcli hexists 'rlock:{fq-kill}:w' "$t1")" = 1 ] ||
		fail "its entry is gone: test inconclusive"
	run -0 "$RLOCK" status fq-kill
	assert_line "  waiting     1 (--fair)"
	assert_line "  next        $(me), pid $w2: true"
	run -0 "$RLOCK" status --json fq-kill
	echo "$output" | jq -e ".[0].queue.length == 1 and
		.[0].queue.waiters[0].pid == $w2"
}

@test "status: an unknown holder (not written by rlock), a key without expiry" {
	rcli set 'rlock:{foreign}' sometoken >/dev/null
	run -0 "$RLOCK" status foreign
	assert_line "  holder      unknown (not written by rlock)"
	assert_line "  lease left  never expires"
	run -0 "$RLOCK" status --json foreign
	echo "$output" | jq -e '.[0].holders[0] | .user == null and
		.pid == null and .lease_left_ms == null'
	rcli del 'rlock:{foreign}' >/dev/null
}

@test "status: a KEY of the wrong type is 76, one line" {
	rcli hset 'rlock:{wrongtype}' a b >/dev/null
	run -76 --separate-stderr "$RLOCK" status wrongtype
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" = 1 ]
	assert_regex "$stderr" "^rlock: .*'wrongtype'.*WRONGTYPE"
	# list skips it instead of failing.
	run -0 "$RLOCK" list 'wrongtype*'
	assert_output ""
	rcli del 'rlock:{wrongtype}' >/dev/null
}

@test "status, release: an empty KEY is a usage error before Redis" {
	run -64 --separate-stderr "$RLOCK" -u redis://127.0.0.1:1 status ''
	assert_regex "$stderr" "^rlock: bad KEY '': empty"
	run -64 "$RLOCK" -u redis://127.0.0.1:1 release --force ''
	run -64 "$RLOCK" -u redis://127.0.0.1:1 status \
		"$(head -c 513 /dev/zero | tr '\0' k)"
}

@test "list: nothing held prints nothing (or []) and exits 0" {
	run -0 --separate-stderr "$RLOCK" --prefix empty: list
	assert_output ""
	[ -z "$stderr" ]
	run -0 "$RLOCK" --prefix empty: list --json
	assert_output "[]"
}

@test "list: one tab-separated line per lock, KEY first, no header in a pipe" {
	bg_rlock --prefix ls: -k beta -l 10s -- sleep 30
	pb=$BG
	bg_rlock --prefix ls: -k alpha -l 10s -- sleep 30
	bg_rlock --prefix ls: -N 2 -k gamma -l 10s -- sleep 30
	wait_until 5 eval \
		'[ "$(rcli exists ls:{alpha} ls:{beta} ls:{gamma}:sem)" = 3 ]'
	# A released lock leaves its :fence key behind: not a lock.
	"$RLOCK" --prefix ls: -k delta -- true
	run -0 "$RLOCK" list --prefix ls:
	[ "${#lines[@]}" = 3 ]
	keys=$(printf '%s\n' "$output" | cut -f1 | tr '\n' ' ')
	[ "$keys" = "alpha beta gamma " ]
	t=$'\t'
	assert_line --index 1 \
		--regexp "^beta$t$(me), pid $pb$t[0-9.]+s${t}mutex${t}sleep 30\$"
	assert_line --index 2 \
		--regexp "^gamma$t$(me), pid [0-9]+$t[0-9.]+s${t}sem 1/2${t}sleep 30\$"
	refute_output --partial KEY
	run -0 "$RLOCK" list --json --prefix ls:
	echo "$output" | python3 -m json.tool >/dev/null
	echo "$output" | jq -e 'map(.key) == ["alpha", "beta", "gamma"] and
		map(.mode) == ["mutex", "mutex", "semaphore"] and all(.held)'
}

@test "list: a header line only on a terminal" {
	# Missing fails, not skips: .ci/deps installs bsdutils.
	command -v script >/dev/null || fail "script(1) is not installed"
	bg_rlock --prefix tty: -k one -- sleep 30
	wait_until 5 eval '[ "$(rcli exists "tty:{one}")" = 1 ]'
	run -0 script -qec "$RLOCK list --prefix tty:" /dev/null
	assert_line --index 0 --regexp "^KEY	HOLDER	LEASE LEFT	MODE	COMMAND"
	assert_line --index 1 --regexp "^one	"
}

@test "list PATTERN: a glob over lock names, not over Redis keys" {
	for k in app.web app.db other 'a}b' a; do
		rcli set "pat:{$k}" tok px 30000 >/dev/null
	done
	# Same names under a prefix that the prefix itself, unescaped, would
	# match as a glob: must not show up.
	for k in app.web 'a}b'; do
		rcli set "pXt:{$k}" tok px 30000 >/dev/null
	done
	l() { "$RLOCK" --prefix "$1" list ${2+"$2"} | cut -f1 | tr '\n' ' '; }
	[ "$(l pat: 'app.*')" = "app.db app.web " ]
	[ "$(l pat:)" = "a app.db app.web a}b other " ]
	[ "$(l pat: 'a')" = "a " ]
	[ "$(l pat: 'a}*')" = "a}b " ]
	[ "$(l pat: '?pp.[dw]*')" = "app.db app.web " ]
	[ "$(l pat: 'app.[^d]*')" = "app.web " ]
	[ "$(l pat: 'x*')" = "" ]
	[ "$(l 'p?t:' '*')" = "" ]
	[ "$(l 'p[a]t:' '*')" = "" ]
	run -64 --separate-stderr "$RLOCK" -u redis://127.0.0.1:1 list 'app.['
	assert_regex "$stderr" "^rlock: list: bad PATTERN 'app\.\['"
}

@test "list: 200k unrelated keys, found by SCAN COUNT (never KEYS)" {
	export RLOCK_URL="unix://$REDIS_SOCK?db=3"
	r3() { redis-cli -s "$REDIS_SOCK" -n 3 "$@"; }
	# Batches of 50k keep each Lua call (which blocks Redis) short.
	for b in 0 1 2 3; do
		r3 eval 'for i = ARGV[1], ARGV[1] + 49999 do
			redis.call("SET", "junk:" .. i, "x") end' 0 $((b * 50000)) >/dev/null
	done
	# Helper keys of no lock, and a lock under another prefix.
	r3 set 'rlock:{ghost}:fence' 5 >/dev/null
	r3 hset 'rlock:{ghost}:meta' user x >/dev/null
	r3 set 'other:{ghost}' tok >/dev/null
	bg_rlock -k big -l 10s -- sleep 30
	wait_until 5 eval '[ "$(r3 exists "rlock:{big}")" = 1 ]'
	[ "$(r3 dbsize)" -ge 200000 ]
	r3 config resetstat >/dev/null
	t0=$(now_ms)
	run -0 "$RLOCK" list
	t1=$(now_ms)
	assert_output --regexp "^big	$(me), pid $BG	"
	[ "${#lines[@]}" = 1 ]
	stats=$(r3 info commandstats)
	! grep -q '^cmdstat_keys:' <<<"$stats"
	calls=$(sed -n 's/^cmdstat_scan:calls=\([0-9]*\),.*/\1/p' <<<"$stats")
	[ "$calls" -ge 150 ]
	echo "list took $((t1 - t0)) ms over $calls SCAN calls" >&3
	r3 flushdb >/dev/null
}

@test "release --force: prints whom it broke; the holder exits 70" {
	bg_rlock -k rel -l 1s --on-lost term -- sleep 30
	holder=$BG
	wait_until 5 held rel
	fence=$(rcli get 'rlock:{rel}:fence')
	run -0 --separate-stderr "$RLOCK" release --force rel
	assert_output "broke 'rel', held by $(me), pid $holder: sleep 30"
	[ -z "$stderr" ]
	[ "$(rcli exists 'rlock:{rel}' 'rlock:{rel}:meta')" = 0 ]
	[ "$(rcli get 'rlock:{rel}:fence')" = "$fence" ]
	[ -z "$(keys_without_ttl)" ]
	wait_status "$holder"
	[ "$STATUS" = 70 ]
}

@test "release --force: 1 when nothing is held" {
	run -1 --separate-stderr "$RLOCK" release --force rel-none
	assert_output ""
	assert_regex "$stderr" "^rlock: .*'rel-none' is not held"
	run -64 "$RLOCK" -u redis://127.0.0.1:1 release rel-none
}

@test "release --force: a waiter gets the lock at once, not at lease end" {
	bg_rlock -k rel-w -l "$(tf 20)" -- sleep 30
	wait_until 5 held rel-w
	bg_rlock -w "$(tf 5)" -k rel-w -- touch "$BATS_TEST_TMPDIR/got"
	waiter=$BG
	wait_until 5 blocked 1
	t0=$(now_ms)
	run -0 "$RLOCK" release --force rel-w
	wait_until 5 test -e "$BATS_TEST_TMPDIR/got"
	t1=$(now_ms)
	[ $((t1 - t0)) -lt "$(tf_ms 2000)" ]
	wait_status "$waiter"
	[ "$STATUS" = 0 ]
}

@test "release --force: the live head of the --fair queue is woken" {
	bg_rlock -k rel-f -l "$(tf 20)" -- sleep 30
	wait_until 5 held rel-f
	bg_rlock --fair -w "$(tf 10)" -k rel-f -- touch "$BATS_TEST_TMPDIR/got"
	waiter=$BG
	wait_until 5 queued rel-f 1
	# A dead waiter ahead of it must not stall the hand-off.
	rcli lpush 'rlock:{rel-f}:q' deadtoken >/dev/null
	t0=$(now_ms)
	run -0 "$RLOCK" release --force rel-f
	wait_until 5 test -e "$BATS_TEST_TMPDIR/got"
	t1=$(now_ms)
	[ $((t1 - t0)) -lt "$(tf_ms 2000)" ]
	wait_status "$waiter"
	[ "$STATUS" = 0 ]
}

@test "release --force: a semaphore loses all its holders" {
	bg_rlock -N 2 -k rel-s -l 1s --on-lost term -- sleep 30
	p1=$BG
	bg_rlock -N 2 -k rel-s -l 1s --on-lost term -- sleep 30
	p2=$BG
	wait_until 5 sem_count rel-s 2
	run -0 "$RLOCK" release --force rel-s
	[ "${#lines[@]}" = 2 ]
	assert_line "broke 'rel-s', held by $(me), pid $p1: sleep 30"
	assert_line "broke 'rel-s', held by $(me), pid $p2: sleep 30"
	[ "$(rcli exists 'rlock:{rel-s}:sem' 'rlock:{rel-s}:limit')" = 0 ]
	[ -z "$(rcli --scan --pattern 'rlock:{rel-s}:meta*')" ]
	[ -z "$(keys_without_ttl)" ]
	wait_status "$p1"
	[ "$STATUS" = 70 ]
	wait_status "$p2"
	[ "$STATUS" = 70 ]
}

# status --prometheus's samples for KEY, without HELP and TYPE.
prom() { "$RLOCK" status --prometheus "$1" | grep -v '^#'; }
not_held() { ! held "$1"; }

# Issue 27: a KEY held only by --min-hold after its run ended is resting,
# not running: text, --json and --prometheus say so, so that a monitor
# tells a job that runs from one that finished (contrib/rlock.rules.yml).
@test "status: a --min-hold window after the run is resting, not running (text, --json, --prometheus)" {
	local go=$BATS_TEST_TMPDIR/go until
	bg_rlock --min-hold "$(tf 8)" -k rest -- \
		sh -c 'until [ -e "$1" ]; do sleep 0.05; done' sh "$go"
	wait_until 5 held rest
	run -0 "$RLOCK" status rest
	assert_line --index 0 "rest: held (mutex)"
	run -0 "$RLOCK" status --json rest
	echo "$output" | jq -e '.[0] | .held and .resting == false'
	run prom rest
	assert_line 'rlock_held{key="rest"} 1'
	assert_line 'rlock_running{key="rest"} 1'
	# COMMAND ends; --min-hold keeps KEY.
	touch "$go"
	wait_until 5 pid_gone "$BG"
	until=$(rcli hget 'rlock:{rest}:meta' hold_until)
	[ -n "$until" ] && held rest || fail "no hold left: test inconclusive"
	run -0 "$RLOCK" status rest
	assert_line --index 0 --regexp '^rest: held \(mutex\), resting: the run ended; --min-hold holds it until [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} '
	assert_line --regexp '^  run ended   '
	run -0 "$RLOCK" status --json rest
	echo "$output" | jq -e --arg u "$until" '.[0] | .held and .resting and
		.holders[0].finished.hold_until_ms == ($u | tonumber)'
	run prom rest
	assert_line 'rlock_held{key="rest"} 1'
	assert_line 'rlock_running{key="rest"} 0'
	# The hold over: free, neither held nor running nor resting.
	wait_until "$(tf 12)" not_held rest
	run -1 "$RLOCK" status --json rest
	echo "$output" | jq -e '.[0] | .held == false and .resting == false'
	run prom rest
	assert_line 'rlock_held{key="rest"} 0'
	assert_line 'rlock_running{key="rest"} 0'
}

# A semaphore rests only when every holder's run has ended.
@test "status: a semaphore rests when all its holders' runs ended" {
	local go=$BATS_TEST_TMPDIR/go
	run -0 "$RLOCK" -N 2 --min-hold "$(tf 8)" -k rest-n -- true
	run -0 "$RLOCK" status --json rest-n
	echo "$output" | jq -e '.[0] | .held and .resting'
	run -0 "$RLOCK" status rest-n
	assert_line --index 0 --partial "rest-n: held (semaphore, 1 of 2 slots taken), resting: the run ended"
	bg_rlock -N 2 -k rest-n -- sh -c 'until [ -e "$1" ]; do sleep 0.05; done' sh "$go"
	wait_until 5 sem_count rest-n 2
	run -0 "$RLOCK" status --json rest-n
	echo "$output" | jq -e '.[0] | .held and .resting == false'
	run prom rest-n
	assert_line 'rlock_running{key="rest-n"} 1'
	touch "$go"
}

@test "errors: Redis unreachable is 69, one line, for every subcommand" {
	for sub in "status k" "list" "release --force k"; do
		run -69 --separate-stderr "$RLOCK" -u redis://127.0.0.1:1 $sub
		[ -z "$output" ]
		[ "${#stderr_lines[@]}" = 1 ]
		assert_regex "$stderr" '^rlock: cannot reach redis://127.0.0.1:1/0: '
	done
}

@test "errors: credentials refused is 77" {
	# redis_start's readiness check pings; the ping needs the password.
	export REDISCLI_AUTH=pw
	redis_start auth --requirepass pw
	unset REDISCLI_AUTH
	AUTH_DIR=$BATS_FILE_TMPDIR/auth
	run -1 "$RLOCK" -u "redis://:pw@127.0.0.1:$REDIS_PORT" status k
	for sub in "status k" "list" "release --force k"; do
		run -77 --separate-stderr "$RLOCK" \
			-u "redis://:bad@127.0.0.1:$REDIS_PORT" $sub
		[ "${#stderr_lines[@]}" = 1 ]
		assert_regex "$stderr" '^rlock: redis://:\*+@127.0.0.1:[0-9]+/0 refused us'
		refute_regex "$stderr" 'bad'
	done
	run -77 "$RLOCK" -u "redis://127.0.0.1:$REDIS_PORT" list
}

@test "a write error on stdout is reported, not passed for success" {
	bg_rlock -k full -- sleep 30
	wait_until 5 held full
	run -74 --separate-stderr sh -c '"$0" status full >/dev/full' "$RLOCK"
	assert_regex "$stderr" '^rlock: write error on standard output: No space left'
	# A reader that stops early is not an error.
	run -0 sh -c '"$0" list | head -c 0' "$RLOCK"
}
