#!/usr/bin/env bats
# --redisson: rlock and a Redisson-protocol client on one lock. The
# client is node-redisson (npm, installed by .ci/deps into RLOCK_NODE_DIR),
# driven by tests/redisson.js, whose fair lock is written from
# shared/REDISSON.md (node-redisson has none). Both directions: each
# excludes the other, neither deletes or extends the other's hold,
# re-entries survive, a fair queue of both is served in arrival order,
# and a lost lease or a SIGKILL behaves as for rlock's own lock.
# run-bats: alone

load helper

setup_file() {
	redis_start main
	closed_url
	local d=${RLOCK_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rlock/node}
	export NODE_PATH=$d/node_modules
	[ -f "$NODE_PATH/node-redisson/package.json" ] || {
		echo "node-redisson is not in $d: run .ci/deps" >&2
		return 1
	}
	export JS=$BATS_TEST_DIRNAME/redisson.js
}

teardown_file() {
	redis_stop main
}

setup() {
	per_test rd
	# mark.sh NAME: appends NAME to $T/order and notes when (ms).
	cat > "$T/mark.sh" <<-'EOF2'
	t=$(date +%s%3N)
	echo "$1" >> "$T/order"
	echo "$t" > "$T/$1.start"
	EOF2
}

teardown() {
	end_test_procs
	local left
	left=$(keys_without_ttl)
	[ -z "$left" ] || fail "keys without TTL: $left"
}

# nd NAME STEP...: tests/redisson.js in the background (redisson.js's
# steps), stdout and stderr in $T/NAME.out and .err; its pid in PIDS.
nd() {
	local name=$1
	shift
	node "$JS" "$REDIS_SOCK" "$@" > "$T/$name.out" 2> "$T/$name.err" &
	PIDS+=("$!")
	ND=$!
}

# said NAME WORD: node NAME has printed WORD.
said() { grep -q "^$2\b" "$T/$1.out" 2>/dev/null; }

# at NAME WORD: when node NAME printed WORD (epoch ms).
at() { sed -n "s/^$2 //p" "$T/$1.out"; }

# queued N: Redisson's fair queue of $K holds N waiters.
queued() { [ "$(rcli llen "redisson_lock_queue:{$K}")" = "$1" ]; }

# rheld: $K, a Redisson lock, is held by anyone.
rheld() { [ "$(rcli exists "$K")" = 1 ]; }

@test "a Redisson holder excludes rlock: -n is 75, naming it" {
	nd j lock "$K" print locked waitfile "$T/go" unlock "$K"
	wait_until 10 said j locked
	run -75 --separate-stderr "$RLOCK" --redisson -n -k "$K" -- echo no
	[ -z "$output" ]
	[ "$stderr" = "rlock: '$K' is held by a Redisson client; not waiting (--nonblock)" ]
	# The field is Redisson's own, ID:THREAD, counting one entry.
	[[ $(rcli hkeys "$K") =~ ^[0-9a-f-]{36}:[0-9a-f-]{36}$ ]]
}

@test "-w starts COMMAND within 300 ms of Redisson's unlock, woken by it" {
	nd j lock "$K" print locked waitfile "$T/go" print unlocking \
	    unlock "$K"
	wait_until 10 said j locked
	bg w --redisson -v -w 20 -k "$K" -- sh "$T/mark.sh" w
	wait_until 5 grep -q "waiting for" "$T/w.err"
	touch "$T/go"
	reap "$BG" 10000
	[ "$RC" = 0 ]
	local d=$(( $(cat "$T/w.start") - $(at j unlocking) ))
	[ "$d" -lt 300 ] || fail "COMMAND started ${d}ms after the unlock"
	# Woken by the message: Redisson's lease (30 s) had long to run.
	grep -q "woken by a release" "$T/w.err"
}

@test "an rlock holder excludes Redisson, which gets it once released" {
	bg h --redisson -k "$K" -- sh -c 'sh "$T/mark.sh" h; while [ ! -e "$T/go" ]; do sleep 0.02; done'
	wait_until 5 rheld
	run -0 node "$JS" "$REDIS_SOCK" trylock "$K" 300
	[ "$output" = "busy $K" ]
	# rlock's own field, its token and thread 1, counting one.
	[[ $(rcli hgetall "$K" | tr '\n' ' ') =~ ^[0-9a-f-]{36}:1\ 1\ $ ]]
	nd j print started trylock "$K" 20000 print done
	wait_until 10 said j started
	nap 0.3
	touch "$T/go"
	reap "$BG" 5000
	wait_until 10 said j done
	grep -qx "got $K" "$T/j.out"
}

@test "re-entries of a Redisson holder survive: one unlock of two holds" {
	nd j lock "$K" lock "$K" print twice unlock "$K" print once \
	    waitfile "$T/go" unlock "$K" print free
	wait_until 10 said j once
	[ "$(rcli hvals "$K")" = 1 ]
	run -75 "$RLOCK" --redisson -n -k "$K" -- true
	run -0 "$RLOCK" status --redisson "$K"
	[[ $output == *"held 1 time(s)"* ]]
	touch "$T/go"
	wait_until 10 said j free
	run -0 "$RLOCK" --redisson -n -k "$K" -- true
}

@test "neither deletes or extends the other's hold" {
	# A Redisson hold with a lease of its own: rlock's attempts leave it.
	nd j locklease "$K" 3000 print locked
	wait_until 10 said j locked
	local t0 t1
	t0=$(rcli pttl "$K")
	run -75 "$RLOCK" --redisson -w 0.5 -k "$K" -- true
	t1=$(rcli pttl "$K")
	[ "$t1" -lt "$t0" ] || fail "pttl $t0 then $t1"
	[ "$(rcli hvals "$K")" = 1 ]
	rcli del "$K" > /dev/null
	# rlock's hold: Redisson's unlock refuses it, rlock's lease goes on.
	bg h --redisson -l 1s -k "$K" -- sh -c 'while [ ! -e "$T/go" ]; do sleep 0.02; done'
	wait_until 5 rheld
	run -1 node "$JS" "$REDIS_SOCK" unlock "$K"
	[[ $stderr$output == *"not locked by current client"* ]]
	nap 1.2
	rheld
	touch "$T/go"
	reap "$BG" 5000
	[ "$RC" = 0 ]
}

@test "a lost lease: rlock acts on it and never touches the new holder" {
	bg h --redisson -l 1s -k "$K" -- sleep 30
	wait_until 5 rheld
	# Another client takes KEY over (as after an expiry).
	rcli del "$K" > /dev/null
	rcli hset "$K" other:7 1 > /dev/null
	rcli pexpire "$K" 5000 > /dev/null
	reap "$BG" 3000
	[ "$RC" = 70 ]
	grep -q "lost" "$T/h.err"
	[ "$(rcli hgetall "$K" | tr '\n' ' ')" = "other:7 1 " ]
	local t=$(rcli pttl "$K")
	[ "$t" -le 5000 ] && [ "$t" -gt 2000 ]
	rcli del "$K" > /dev/null
}

@test "a SIGKILLed rlock holder frees KEY for Redisson when its lease ends" {
	bg h --redisson -l 1s -k "$K" -- sleep 30
	wait_until 5 rheld
	kill -KILL "$BG"
	local k=$(now_ms)
	# lock(), not tryLock(): node-redisson's tryLock gives up when its
	# first wait for a message times out.
	nd j lock "$K" print done unlock "$K"
	wait_until 10 said j done
	local d=$(( $(at j done) - k ))
	# Not before the lease (1 s) ended.
	[ "$d" -ge 900 ] || fail "got it ${d}ms after the kill"
}

@test "a SIGKILLed waiter leaves nothing behind, plain or --fair" {
	bg h --redisson --fair -k "$K" -- sh -c 'while [ ! -e "$T/go" ]; do sleep 0.02; done'
	local h=$BG
	wait_until 5 rheld
	bg w1 --redisson -w 20 -k "$K" -- true
	bg w2 --redisson --fair -w 20 -k "$K" -- true
	wait_until 5 queued 1
	nd f fair "$K" F:1 print got fairunlock "$K" F:1
	wait_until 10 queued 2
	kill -KILL "${PIDS[@]:1:2}"
	# rlock's release passes over the dead rlock waiter at the head, as
	# its own queue's do: the Redisson fair waiter behind it is served.
	touch "$T/go"
	reap "$h" 3000
	wait_until 2 said f got
	wait_until 5 queued 0
	[ "$(rcli pubsub numsub "redisson_lock__channel:{$K}" | tail -1)" = 0 ]
}

@test "a fair queue of Redisson and rlock waiters is served in arrival order" {
	nd a fair "$K" A:1 print A waitfile "$T/go" fairunlock "$K" A:1
	wait_until 10 said a A
	bg r1 --redisson --fair -w 30 -k "$K" -- sh "$T/mark.sh" r1
	wait_until 5 queued 1
	nd b fair "$K" B:1 print B sleep 100 fairunlock "$K" B:1
	wait_until 10 queued 2
	bg r2 --redisson --fair -w 30 -k "$K" -- sh "$T/mark.sh" r2
	wait_until 5 queued 3
	nd c fair "$K" C:1 print C sleep 100 fairunlock "$K" C:1
	wait_until 10 queued 4
	run -0 "$RLOCK" status --redisson "$K"
	[[ $output == *"waiting     4 (--fair)"* ]]
	touch "$T/go"
	wait_until 15 said c C
	local r1 b r2 c
	r1=$(cat "$T/r1.start") b=$(at b B) r2=$(cat "$T/r2.start") c=$(at c C)
	[ "$r1" -le "$b" ] && [ "$b" -le "$r2" ] && [ "$r2" -le "$c" ] ||
		fail "order: r1 $r1, B $b, r2 $r2, C $c"
}

@test "RLOCK_FENCE strictly increases across Redisson's holders" {
	run -0 "$RLOCK" --redisson -k "$K" -- sh -c 'echo $RLOCK_FENCE'
	local f1=$output
	run -0 node "$JS" "$REDIS_SOCK" lock "$K" unlock "$K"
	run -0 "$RLOCK" --redisson -k "$K" -- sh -c 'echo $RLOCK_FENCE'
	[ "$output" -gt "$f1" ]
	# Beside Redisson's keys, in KEY's Cluster slot.
	[ "$(rcli exists "rlock:{$K}:fence")" = 1 ]
	# A KEY with a '{' gets no braces, as Redisson's names.
	run -0 "$RLOCK" --redisson -k "a{$K}b" -- true
	[ "$(rcli exists "rlock:a{$K}b:fence")" = 1 ]
}

@test "status --redisson: the Redisson holder, rlock's holder, the last run" {
	nd j lock "$K" print locked waitfile "$T/go" unlock "$K"
	wait_until 10 said j locked
	run -0 "$RLOCK" status --redisson "$K"
	[[ ${lines[0]} == "$K: held (Redisson lock)" ]]
	[[ $output == *"holder      a Redisson client"* ]]
	[[ $output == *"(Redisson's ID:THREAD), held 1 time(s)"* ]]
	run -0 "$RLOCK" status --redisson --json "$K"
	[ "$(jq -r '.[0].mode' <<< "$output")" = redisson ]
	[ "$(jq -r '.[0].holders[0].reentries' <<< "$output")" = 1 ]
	run -0 "$RLOCK" status --redisson --prometheus "$K"
	[[ $output == *"rlock_held{key=\"$K\"} 1"* ]]
	touch "$T/go"
	wait_until 10 eval '! rheld'
	"$RLOCK" --redisson -k "$K" -- true
	run -1 "$RLOCK" status --redisson "$K"
	[[ $output == *"last run"* ]]
}

@test "release --force --redisson: forceUnlock, and the waiter wakes" {
	nd j lock "$K" print locked waitfile "$T/go"
	wait_until 10 said j locked
	bg w --redisson -v -w 20 -k "$K" -- sh "$T/mark.sh" w
	wait_until 5 grep -q "waiting for" "$T/w.err"
	run -0 "$RLOCK" release --force --redisson "$K"
	[[ $output == "broke '$K', held by"* ]]
	reap "$BG" 3000
	[ "$RC" = 0 ]
	# rlock's own holder hears it within a second.
	bg h --redisson -k "$K" -- sleep 30
	wait_until 5 rheld
	nap 0.5
	run -0 "$RLOCK" release --force --redisson "$K"
	reap "$BG" 3000
	[ "$RC" = 70 ]
}

@test "-N, -s, --min-hold and --redlock do not go with --redisson" {
	usage_error "--limit does not go with --redisson" --redisson -N 2 -k k true
	usage_error "--shared does not go with --redisson" --redisson -s -k k true
	usage_error "--min-hold does not go with --redisson" --redisson --min-hold 1 -k k true
	usage_error "--redlock does not go with --redisson" --redisson --redlock -u redis://a -u redis://b -u redis://c -k k true
	printf 'redisson\n' > "$T/c.conf"
	RLOCK_URL=$CLOSED_URL run -78 "$RLOCK" --config "$T/c.conf" -k k true
}

@test "without --redisson, a Redisson lock at rlock's key is a 76 naming it" {
	nd j lock "{$K}" print locked waitfile "$T/go" unlock "{$K}"
	wait_until 10 said j locked
	run -76 --separate-stderr "$RLOCK" --prefix '' -n -k "$K" -- true
	[[ $stderr == *"WRONGTYPE"*"most likely a Redisson lock"*"--redisson"* ]]
}
