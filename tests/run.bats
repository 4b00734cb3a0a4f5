#!/usr/bin/env bats
# Running COMMAND: exit status passthrough, 128+N, 126/127, -c, argv and
# environment, stdio, inherited fds, re-entrancy, and what is left in Redis.

load helper

setup_file() {
	redis_start main
}

teardown_file() {
	redis_stop main
}

# Whatever a test did, rlock must not leave a key without an expiry.
teardown() {
	local left
	left=$(keys_without_ttl)
	[ -z "$left" ] || fail "keys without TTL: $left"
}

# The lock is free: its key and its holder metadata are gone.
assert_free() {
	run -0 rcli exists "rlock:{$1}" "rlock:{$1}:meta"
	[ "$output" = 0 ] || fail "'$1' still held: $(rcli get "rlock:{$1}")"
}

@test "exit status 0, 3 and 255 pass through" {
	run -0 --separate-stderr "$RLOCK" -k st -- true
	[ -z "$stderr" ]
	run -3 --separate-stderr "$RLOCK" -k st -- sh -c 'exit 3'
	[ -z "$stderr" ]
	run -255 --separate-stderr "$RLOCK" -k st -- sh -c 'exit 255'
	[ -z "$stderr" ]
	assert_free st
}

@test "COMMAND killed by signal N: 128+N, lock released" {
	run -143 --separate-stderr "$RLOCK" -k sig -- sh -c 'kill -TERM $$'
	assert_free sig
	run -137 --separate-stderr "$RLOCK" -k sig -- sh -c 'kill -KILL $$'
	assert_free sig
	run -138 --separate-stderr "$RLOCK" -k sig -- sh -c 'kill -USR1 $$'
	assert_free sig
}

@test "COMMAND not executable: 126, one line, lock released" {
	printf '#!/bin/sh\necho ran\n' > "$BATS_TEST_TMPDIR/noexec"
	chmod 644 "$BATS_TEST_TMPDIR/noexec"
	run -126 --separate-stderr "$RLOCK" -k ex -- "$BATS_TEST_TMPDIR/noexec"
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "rlock: cannot run '$BATS_TEST_TMPDIR/noexec': Permission denied" ]]
	assert_free ex
	run -126 --separate-stderr "$RLOCK" -k ex -- "$BATS_TEST_TMPDIR"
	[ "${#stderr_lines[@]}" -eq 1 ]
	assert_free ex
}

@test "COMMAND not found: 127, one line, lock released at once" {
	run -127 --separate-stderr "$RLOCK" -k ex -- no-such-command-$$
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "rlock: cannot run 'no-such-command-$$': No such file or directory" ]]
	assert_free ex
	# Not just expired later: free right now for the next one.
	run -0 "$RLOCK" -n -k ex -- true
	run -127 "$RLOCK" -k ex -- ./relative/no-such-file
}

@test "-c runs through /bin/sh" {
	run -7 --separate-stderr "$RLOCK" -k c -c 'echo "$0"; echo a b c | wc -w; exit 7'
	[ -z "$stderr" ]
	[ "${lines[0]}" = sh ]
	[ "$(echo "${lines[1]}" | tr -d ' ')" = 3 ]
	run -127 "$RLOCK" -k c -c 'no-such-command-xyz 2>/dev/null'
}

@test "argv reaches COMMAND untouched: no shell, no splitting" {
	run -0 --separate-stderr "$RLOCK" -k av -- printf '[%s]\n' 'a b' '*' '' \
		'-n' '--' '$HOME' '"q"' "tab	x" '-k' 'x;y'
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 10 ]
	[ "${lines[0]}" = '[a b]' ]
	[ "${lines[1]}" = '[*]' ]
	[ "${lines[2]}" = '[]' ]
	[ "${lines[3]}" = '[-n]' ]
	[ "${lines[4]}" = '[--]' ]
	[ "${lines[5]}" = '[$HOME]' ]
	[ "${lines[6]}" = '["q"]' ]
	[ "${lines[7]}" = '[tab	x]' ]
	[ "${lines[8]}" = '[-k]' ]
	[ "${lines[9]}" = '[x;y]' ]
}

@test "without --, options after COMMAND stay COMMAND's" {
	run -0 "$RLOCK" -k av printf '%s,' -- -w 1 -n
	[ "$output" = "--,-w,1,-n," ]
}

@test "COMMAND's environment: ours plus RLOCK_KEY, RLOCK_TOKEN, RLOCK_FENCE" {
	run -0 --separate-stderr env -i PATH="$PATH" FOO='bar baz' \
		RLOCK_URL="$RLOCK_URL" "$RLOCK" -k 'my key' -- env
	[ -z "$stderr" ]
	local sorted own='^$'
	# What the memcheck wrapper, Debian's valgrind script and valgrind
	# itself add to the environment rlock is started with.
	! under_valgrind ||
		own='^(PWD|LD_PRELOAD|LD_LIBRARY_PATH|GLIBC(PP|XX)_FORCE_NEW)='
	sorted=$(printf '%s\n' "${lines[@]}" | grep -Ev "$own" | sort |
		sed 's/^RLOCK_TOKEN=.*/RLOCK_TOKEN=T/;s/^RLOCK_FENCE=.*/RLOCK_FENCE=F/')
	[ "$sorted" = "$(printf '%s\n' "FOO=bar baz" "PATH=$PATH" \
		"RLOCK_FENCE=F" "RLOCK_KEY=my key" "RLOCK_TOKEN=T" \
		"RLOCK_URL=$RLOCK_URL")" ]
	local tok fence
	tok=$(printf '%s\n' "${lines[@]}" | sed -n 's/^RLOCK_TOKEN=//p')
	fence=$(printf '%s\n' "${lines[@]}" | sed -n 's/^RLOCK_FENCE=//p')
	[[ $tok =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]
	[[ $fence =~ ^[1-9][0-9]*$ ]]
}

@test "RLOCK_TOKEN is the token stored in Redis, fresh for every run" {
	run -0 "$RLOCK" -k tk -- sh -c \
		'echo "$RLOCK_TOKEN"; redis-cli -s "$REDIS_SOCK" get "rlock:{tk}"'
	[ "${lines[0]}" = "${lines[1]}" ]
	local first=${lines[0]}
	run -0 "$RLOCK" -k tk -- sh -c 'echo "$RLOCK_TOKEN"'
	[ "$output" != "$first" ]
}

@test "RLOCK_FENCE strictly increases, also after the keys are gone" {
	local f prev=0 i
	for i in 1 2 3 4 5 6; do
		case $i in
		4) rcli del 'rlock:{fz}:fence' >/dev/null ;;	# as if expired
		5) rcli flushdb >/dev/null ;;
		esac
		f=$("$RLOCK" -k fz -- sh -c 'echo "$RLOCK_FENCE"')
		[[ $f =~ ^[0-9]+$ ]] || fail "run $i: fence '$f'"
		[ "$f" -gt "$prev" ] || fail "run $i: fence $f after $prev"
		prev=$f
	done
	# The counter itself expires, but only long after any lease.
	run -0 rcli pttl 'rlock:{fz}:fence'
	[ "$output" -gt 86400000 ]
}

@test "stdin, stdout and stderr pass through" {
	run -0 --separate-stderr bash -c \
		'seq 1 20000 | "$1" -k io -- sh -c "wc -l; echo oops >&2"' _ "$RLOCK"
	[ "$(echo "$output" | tr -d ' ')" = 20000 ]
	[ "$stderr" = oops ]
	run -0 bash -c 'printf "a\nb\n" | "$1" -k io -- cat' _ "$RLOCK"
	[ "$output" = "$(printf 'a\nb')" ]
}

# fd numbers and targets of the shell running this.
list_fds='cd /proc/$$/fd && for f in *; do echo "$f $(readlink "$f")"; done'

@test "COMMAND inherits no Redis socket nor any other fd of rlock" {
	run -0 sh -c "$list_fds"
	local baseline own='^$'
	baseline=$(printf '%s\n' "${lines[@]}" | cut -d' ' -f1)
	# The memcheck wrapper's log, opened before rlock starts.
	! under_valgrind || own='^9 .*/valgrind/logs/[0-9]+\.[0-9]+\.log$'
	run -0 "$RLOCK" -k fd -- sh -c "$list_fds"
	[[ $output != *socket:* ]] || fail "socket inherited: $output"
	[[ $output != *signalfd* ]] || fail "signalfd inherited: $output"
	[ "$(printf '%s\n' "${lines[@]}" | grep -Ev "$own" | cut -d' ' -f1)" = \
	    "$baseline" ] || fail "fds differ: $output vs $baseline"
	# Also over TCP.
	RLOCK_URL=redis://127.0.0.1:$REDIS_PORT run -0 "$RLOCK" -k fd -- \
		sh -c "$list_fds"
	[[ $output != *socket:* ]] || fail "socket inherited: $output"
}

@test "nested rlock of the same KEY runs at once (re-entrant)" {
	run -0 --separate-stderr timeout "$(tf 10)" "$RLOCK" -k re -- \
		"$RLOCK" -k re -- echo inner
	[ "$output" = inner ]
	[ -z "$stderr" ]
	run -5 --separate-stderr timeout "$(tf 10)" "$RLOCK" -k re -- \
		"$RLOCK" -n -k re -- sh -c 'echo inner-n; exit 5'
	[ "$output" = inner-n ]
	[ -z "$stderr" ]
	# Through a shell and a grandchild, with -c.
	run -0 timeout "$(tf 10)" "$RLOCK" -k re -c \
		"sh -c '\"$RLOCK\" -n -k re -c \"echo deep\"'"
	[ "$output" = deep ]
	assert_free re
}

@test "the nested run neither releases nor shortens the outer lock" {
	run -0 timeout "$(tf 10)" "$RLOCK" -l "$(tf 30)" -k re2 -- sh -c '
		"$1" -n -l 1s -k re2 -- true || exit 9
		redis-cli -s "$REDIS_SOCK" get "rlock:{re2}"
		echo "$RLOCK_TOKEN"
		redis-cli -s "$REDIS_SOCK" pttl "rlock:{re2}"' sh "$RLOCK"
	[ "${lines[0]}" = "${lines[1]}" ]
	[ "${lines[2]}" -gt "$(tf_ms 20000)" ]
	assert_free re2
}

@test "a nested rlock of another KEY does not bypass its holder" {
	rcli set 'rlock:{other}' someone px 30000 >/dev/null
	run -75 --separate-stderr timeout "$(tf 10)" "$RLOCK" -k outer -- \
		"$RLOCK" -n -k other -- echo must-not-run
	[ -z "$output" ]
	[[ $stderr == "rlock: 'other' is held by "* ]]
	rcli del 'rlock:{other}' >/dev/null
}

@test "same KEY under another --prefix: a lock of its own, released" {
	run -0 --separate-stderr timeout "$(tf 10)" "$RLOCK" -k pk -- sh -c '
		outer=$RLOCK_TOKEN
		"$1" --prefix other: -l "$2" -k pk -- sh -c "
			[ \"\$RLOCK_TOKEN\" != \"$outer\" ] || echo same-token
			sleep $3
			redis-cli -s \"\$REDIS_SOCK\" get \"other:{pk}\"
			echo \"\$RLOCK_TOKEN\""' sh "$RLOCK" "$(tf 1)" "$(tf 1.5)"
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 2 ] || fail "$output"
	# Renewed past its 1 s lease, so supervised, not just exec'd.
	[ "${lines[0]}" = "${lines[1]}" ]
	# And released when it ended, not left to expire.
	run -0 rcli exists 'other:{pk}' 'other:{pk}:meta'
	[ "$output" = 0 ]
	assert_free pk
}

@test "a forged RLOCK_TOKEN does not bypass the holder" {
	run -75 --separate-stderr timeout "$(tf 10)" "$RLOCK" -k forged -- sh -c '
		RLOCK_TOKEN=$(cat /proc/sys/kernel/random/uuid) \
		"$1" -n -k forged -- echo must-not-run' sh "$RLOCK"
	[ -z "$output" ]
	[[ $stderr == "rlock: 'forged' is held by "* ]]
	run -75 timeout "$(tf 10)" "$RLOCK" -k forged -- sh -c '
		RLOCK_TOKEN=not-a-uuid "$1" -n -k forged -- echo must-not-run' \
		sh "$RLOCK"
}

@test "holder metadata while held; lock and meta gone after release" {
	run -0 --separate-stderr "$RLOCK" -l 1s -k meta -- sh -c '
		echo "pid=$PPID fence=$RLOCK_FENCE token=$RLOCK_TOKEN"
		redis-cli -s "$REDIS_SOCK" pttl "rlock:{meta}"
		redis-cli -s "$REDIS_SOCK" pttl "rlock:{meta}:meta"
		redis-cli -s "$REDIS_SOCK" --raw hgetall "rlock:{meta}:meta"'
	[ -z "$stderr" ]
	local -A m
	local i want
	eval "$(echo "${lines[0]}" | sed 's/\([a-z]*\)=\([^ ]*\)/local \1=\2;/g')"
	# PTTL of the lock and of its meta: set, and within the lease.
	[ "${lines[1]}" -gt 0 ]
	[ "${lines[1]}" -le 1000 ]
	[ "${lines[2]}" -gt 0 ]
	[ "${lines[2]}" -le 1000 ]
	for ((i = 3; i + 1 < ${#lines[@]}; i += 2)); do
		m[${lines[i]}]=${lines[i + 1]}
	done
	[ "${m[host]}" = "$(hostname)" ] || fail "host ${m[host]}"
	[ "${m[pid]}" = "$pid" ] || fail "pid ${m[pid]} want $pid"
	[ "${m[user]}" = "$(id -un)" ] || fail "user ${m[user]}"
	[[ ${m[cmd]} == "sh -c "* ]] || fail "cmd ${m[cmd]}"
	[ "${m[lease]}" = 1000 ] || fail "lease ${m[lease]}"
	[ "${m[fence]}" = "$fence" ] || fail "fence ${m[fence]} want $fence"
	# since: server ms, a moment ago.
	want=$(rcli time | { read -r s; read -r us; echo $((s * 1000 + us / 1000)); })
	[ $((want - m[since])) -ge 0 ] && [ $((want - m[since])) -lt 10000 ] ||
		fail "since ${m[since]} vs now $want"
	assert_free meta
}

# The holder's user name as the record of KEY gives it, COMMAND running
# with the environment given: ENV... is passed to env(1).
holder_user() { # KEY ENV...
	local key=$1
	shift
	env "$@" "$RLOCK" -k "$key" -- \
		redis-cli -s "$REDIS_SOCK" --raw hget "rlock:{$key}:meta" user
}

@test "holder's user: \$USER only when \$HOME is that user's, else NSS" {
	local me mine theirs
	me=$(id -un)
	mine=$BATS_TEST_TMPDIR/home
	mkdir "$mine"
	# A directory of another user: ours to make as root, / otherwise.
	if [ "$(id -u)" = 0 ]; then
		theirs=$BATS_TEST_TMPDIR/theirs
		mkdir "$theirs"
		chown 65534 "$theirs"
	else
		theirs=/
	fi
	# su -m, sudo -E: the invoker's USER and HOME kept after a switch.
	run -0 holder_user u1 USER=someone-else LOGNAME=someone-else HOME="$theirs"
	[ "$output" = "$me" ] || fail "kept USER believed: $output"
	# What login, su, sudo, cron and systemd set: believed without NSS.
	run -0 holder_user u2 USER=alias-of-me HOME="$mine"
	[ "$output" = alias-of-me ] || fail "USER with our HOME: $output"
	run -0 holder_user u3 -u USER LOGNAME=alias-of-me HOME="$mine"
	[ "$output" = alias-of-me ] || fail "LOGNAME with our HOME: $output"
	# No names, no HOME, a relative HOME, a name no record can carry.
	run -0 holder_user u4 -u USER -u LOGNAME HOME="$mine"
	[ "$output" = "$me" ] || fail "no USER: $output"
	run -0 holder_user u5 -u HOME USER=alias-of-me
	[ "$output" = "$me" ] || fail "no HOME: $output"
	run -0 holder_user u6 USER=alias-of-me HOME=.
	[ "$output" = "$me" ] || fail "relative HOME: $output"
	run -0 holder_user u7 -u LOGNAME USER=$'a\x1fb' HOME="$mine"
	[ "$output" = "$me" ] || fail "control byte in USER: $output"
	run -0 holder_user u8 -u LOGNAME USER= HOME="$mine"
	[ "$output" = "$me" ] || fail "empty USER: $output"
}

@test "nothing without an expiry after every kind of ending" {
	run -0 "$RLOCK" -k ttl -- true
	run -1 "$RLOCK" -k ttl -- false
	run -127 "$RLOCK" -k ttl -- no-such-command-$$
	run -137 "$RLOCK" -k ttl -- sh -c 'kill -9 $$'
	run -0 timeout "$(tf 10)" "$RLOCK" -k ttl -- "$RLOCK" -k ttl -- true
	rcli set 'rlock:{ttl2}' someone px 5000 >/dev/null
	run -75 "$RLOCK" -n -k ttl2 -- true
	run -75 "$RLOCK" -w 0.2 -k ttl2 -- true
	rcli del 'rlock:{ttl2}' >/dev/null
	run -0 keys_without_ttl
	[ -z "$output" ]
	# And something was written (the fence counter), so the check
	# above looked at real keys.
	run -0 rcli exists 'rlock:{ttl}:fence'
	[ "$output" = 1 ]
	assert_free ttl
}

@test "a nested -N run does not re-enter an expired slot of its token" {
	# A slot of the inherited token whose score (its lease end) is past:
	# extend.lua would call it lost, so it is not held, and the nested
	# run must take a slot of its own.
	local tok
	tok=$(cat /proc/sys/kernel/random/uuid)
	rcli ZADD 'rlock:{semre}:sem' 1000 "$tok" >/dev/null
	rcli SET 'rlock:{semre}:limit' 2 PX 60000 >/dev/null
	rcli PEXPIRE 'rlock:{semre}:sem' 60000 >/dev/null
	run -0 timeout "$(tf 10)" env RLOCK_KEY=semre RLOCK_TOKEN="$tok" \
		"$RLOCK" -N 2 -k semre -- sh -c \
		'redis-cli -s "$1" ZRANGE "rlock:{semre}:sem" 0 -1' sh "$REDIS_SOCK"
	# Its own slot, not the expired one.
	[ -n "$output" ]
	[[ $output != *"$tok"* ]]
}
