#!/usr/bin/env bats
# Every key a script touches is one of its KEYS (the contract's Keys
# guarantee: Cluster, and servers that check declared keys), and every
# command it runs is one its RUNS lines declare (they make its ACL
# pre-check and the ACL table of the documentation: src/lua-text.sh).
# Checked on what Redis itself saw: redis-cli MONITOR against this file's
# server while rlock runs each script in its modes (run, extend, nested
# run, -n, -w, --fair with a waiter giving up, -N, --min-hold, a lost
# lease, -s with a writer waiting, status, list, release --force); the
# --redlock scripts and the --fair heartbeat (every 30 s) are run by
# hand, with the keys rlock gives them. tests/lua_monitor.py reads the
# log.

load helper

BATS_TEST_TIMEOUT=$(tf 120)

R() { "$RLOCK" "$@" 3>&-; }
queued() { [ "$(rcli llen "rlock:{$1}:q")" = "$2" ]; }
slots() { [ "$(rcli zcard "rlock:{$1}:sem")" = "$2" ]; }
shares() { [ "$(rcli zcard "rlock:{$1}:sh")" = "$2" ]; }
writers_wait() { [ "$(rcli zcard "rlock:{$1}:xw")" = "$2" ]; }

# sh -c "$HOLD" sh FILE: hold until FILE is gone. A holder holds until
# the waiters it is for are seen waiting, however slowly they start
# (under valgrind each rlock takes seconds to reach Redis).
HOLD='while [ -e "$1" ]; do sleep 0.05; done'

# by_hand SCRIPT NKEYS KEY... ARG...: EVALSHA the script as rlock embeds it.
by_hand() {
	local top=$BATS_TEST_DIRNAME/.. sha
	sha=$(sh "$top/src/lua-text.sh" "$top/src/lua/lib" \
	    "$top/src/lua/$1.lua" | rcli -x script load)
	shift
	rcli evalsha "$sha" "$@" >/dev/null
}

# Each mode once, the lock in the state its scripts act on.
exercise() {
	local t=$BATS_FILE_TMPDIR p p2 q w1 w2 g i W
	W=$(tf 60)
	timeout "$(tf 20)" "$RLOCK" -k m-plain -l "$(tf 1)" -- \
		sleep "$(tf 1.2)"
	timeout "$(tf 20)" "$RLOCK" -k m-nest -- "$RLOCK" -k m-nest -- true
	# Busy: -n is skipped (and counted), -w waits and wins.
	touch "$t/busy"
	R -k m-busy -l "$(tf 5)" -- sh -c "$HOLD" sh "$t/busy" &
	p=$!
	wait_until 20 held m-busy
	timeout "$(tf 20)" "$RLOCK" -n -k m-busy -- true && return 1
	R -w "$W" -k m-busy -- true &
	w1=$!
	wait_until 20 blocked_is 1
	rm "$t/busy"
	wait "$p"
	wait "$w1"
	# --fair: one waiter gives up (dequeue, at a signal), two are served
	# in turn.
	touch "$t/fair"
	R -k m-fair -l "$(tf 5)" -- sh -c "$HOLD" sh "$t/fair" &
	p=$!
	wait_until 20 held m-fair
	R --fair -w "$W" -k m-fair -- true &
	w1=$!
	wait_until 20 queued m-fair 1
	R --fair -w "$W" -k m-fair -- true &
	w2=$!
	wait_until 20 queued m-fair 2
	"$RLOCK" --fair -w "$W" -k m-fair -- true 3>&- &
	g=$!
	wait_until 20 queued m-fair 3
	kill -TERM "$g"
	wait "$g" && return 1
	queued m-fair 2
	R status m-fair >/dev/null
	rm "$t/fair"
	wait "$p"
	wait "$w1"
	wait "$w2"
	# -N: two slots, a third waits; then broken by force.
	touch "$t/sem"
	p=""
	for i in 1 2 3; do
		R -N 2 -w "$W" -k m-sem -l "$(tf 5)" -- \
			sh -c "$HOLD" sh "$t/sem" &
		p="$p $!"
	done
	wait_until 20 slots m-sem 2
	wait_until 20 blocked_is 1
	R status --json m-sem >/dev/null
	rm "$t/sem"
	for i in $p; do wait "$i" || return 1; done
	R -N 2 -k m-sem -l "$(tf 1)" -- sleep "$(tf 20)" &
	p=$!
	wait_until 20 slots m-sem 1
	R release --force m-sem >/dev/null
	wait "$p" || true
	R -N 2 --min-hold 2s -k m-sem -- true
	# --min-hold, then status and list of what rests.
	R --min-hold "$(tf 2)" -k m-hold -- true
	R status m-hold >/dev/null
	R list >/dev/null
	R list --json >/dev/null
	# A mutex holder and its --fair waiter, broken by force.
	R -k m-force -l "$(tf 1)" -- sleep "$(tf 20)" &
	p=$!
	wait_until 20 held m-force
	R --fair -w "$W" -k m-force -- true &
	w1=$!
	wait_until 20 queued m-force 1
	R release --force m-force >/dev/null
	wait "$w1"
	wait "$p" || true
	# A lease lost: the holder records its run as lost.
	R -k m-lost -l "$(tf 1)" -- sleep "$(tf 5)" &
	p=$!
	wait_until 20 held m-lost
	rcli del 'rlock:{m-lost}' >/dev/null
	wait "$p" && return 1
	# -s: two shares, a writer that waits for them (its claim), one that
	# gives up (dequeue, at a signal), a reader behind the writer with a
	# nested -s; a --fair share; a share broken by force.
	touch "$t/shared"
	R -s -k m-shared -l "$(tf 5)" -- sh -c "$HOLD" sh "$t/shared" &
	p=$!
	R -s -k m-shared -l "$(tf 5)" -- sh -c "$HOLD" sh "$t/shared" &
	p2=$!
	wait_until 20 shares m-shared 2
	R -w "$W" -k m-shared -- true &
	w1=$!
	wait_until 20 writers_wait m-shared 1
	timeout "$(tf 20)" "$RLOCK" -s -n -k m-shared -- true && return 1
	"$RLOCK" -w "$W" -k m-shared -- true 3>&- &
	g=$!
	wait_until 20 writers_wait m-shared 2
	kill -TERM "$g"
	wait "$g" && return 1
	writers_wait m-shared 1
	R -s -w "$W" -k m-shared -- "$RLOCK" -s -k m-shared -- true &
	w2=$!
	wait_until 20 blocked_is 2
	R status m-shared >/dev/null
	rm "$t/shared"
	wait "$p"
	wait "$p2"
	wait "$w1"
	wait "$w2"
	R -s --fair -w "$W" -k m-shared -- true
	R -s -k m-shared -l "$(tf 1)" -- sleep "$(tf 20)" &
	p=$!
	wait_until 20 shares m-shared 1
	R release --force m-shared >/dev/null
	wait "$p" || true
	# By hand, with the keys rlock gives them.
	q='rlock:{m-hand}'
	rcli set "$q" tok px 5000 >/dev/null
	by_hand heartbeat 1 "$q:w" tok "$(printf 'u\037h\0371\037c')" 90000 0
	by_hand fence_raise 3 "$q" "$q:fence" "$q:meta" tok 5 604800000
	by_hand undo 2 "$q" "$q:meta" tok
	by_hand wake 1 "$q:tok" 1 5000
	return 0
}

setup_file() {
	redis_start main
	export MON=$BATS_FILE_TMPDIR/monitor.log
	redis-cli -s "$REDIS_SOCK" monitor > "$MON" 3>&- &
	export MON_PID=$!
	wait_until 20 grep -q . "$MON" || redis-cli -s "$REDIS_SOCK" ping >/dev/null
	# In the background, so that set -e still ends exercise at its first
	# failing step (it would not within "exercise || rc=$?"), and the
	# first test shows its log and that step instead of a bare
	# "setup_file failed".
	(
		trap 'echo "exercise: $BASH_COMMAND failed" \
		    "(${FUNCNAME[*]} at lines ${BASH_LINENO[*]})"' ERR
		exercise
	) > "$BATS_FILE_TMPDIR/exercise.log" 2>&1 &
	local rc=0
	wait "$!" || rc=$?
	echo "$rc" > "$BATS_FILE_TMPDIR/exercise.rc"
	rcli ping >/dev/null
	kill "$MON_PID"
	wait "$MON_PID" 2>/dev/null || true
}

teardown_file() {
	redis_stop main
}

@test "monitor: the modes ran as planned" {
	[ "$(cat "$BATS_FILE_TMPDIR/exercise.rc")" = 0 ] ||
		fail "$(cat "$BATS_FILE_TMPDIR/exercise.log")"
	grep -q '\[0 lua\]' "$MON" || fail "MONITOR saw no script's commands"
}

@test "monitor: every key a script touches is in its KEYS" {
	run python3 "$BATS_TEST_DIRNAME/lua_monitor.py" "$REDIS_SOCK" "$MON" \
	    "$BATS_TEST_DIRNAME/.." keys
	echo "$output"
	[ "$status" = 0 ]
	# Every script ran, so none went unchecked.
	assert_line "12 scripts run: acquire dequeue extend fence_raise force_release heartbeat inspect is_ours record release undo wake"
}

@test "monitor: every command a script runs is in its RUNS lines" {
	run python3 "$BATS_TEST_DIRNAME/lua_monitor.py" "$REDIS_SOCK" "$MON" \
	    "$BATS_TEST_DIRNAME/.."
	echo "$output"
	[ "$status" = 0 ]
}
