#!/usr/bin/env bats
# The Lua scripts: each one, as embedded (src/lua-text.sh: the shared
# functions it calls in front, comments out), loads into a real Redis, and
# the SHA that rlock EVALSHAs is Redis's own.

load helper

setup_file() {
	redis_start main
	export LUA_DIR=$BATS_TEST_DIRNAME/../src/lua
	# The build $RLOCK came from: build/asan/ for build/asan/rlock,
	# build/ for ./rlock (and for make valgrind's wrapper).
	EMBEDDED=$(dirname "$RLOCK")/lua_scripts.c
	[ -f "$EMBEDDED" ] || EMBEDDED=$BATS_TEST_DIRNAME/../build/lua_scripts.c
	export EMBEDDED
}

teardown_file() {
	redis_stop main
}

@test "every script loads, with the SHA compiled into rlock" {
	# Not built is a failure: make check always builds it.
	[ -f "$EMBEDDED" ] || fail "no lua_scripts.c for $RLOCK: build it"
	local f sha n=0
	for f in "$LUA_DIR"/*.lua; do
		sha=$(sh "$LUA_DIR/../lua-text.sh" "$LUA_DIR/lib" "$f" |
		    rcli -x script load)
		[[ $sha =~ ^[0-9a-f]{40}$ ]] || fail "$(basename "$f"): $sha"
		grep -q "\"$sha\"" "$EMBEDDED" || fail "$(basename "$f"): $sha not in rlock"
		n=$((n + 1))
	done
	[ "$n" -ge 6 ]
}

@test "after SCRIPT FLUSH rlock falls back to EVAL (NOSCRIPT)" {
	"$RLOCK" -k flushed -- true
	rcli script flush
	run -0 "$RLOCK" -k flushed -- echo again
	assert_output "again"
	[ "$(rcli script exists "$(grep -o '"[0-9a-f]\{40\}"' "$EMBEDDED" | head -1 | tr -d '"')")" = 1 ]
}

# acquire.lua (its SHA in $ACQ) with KEY free, proposing FENCE
# (fence_proposed): the fence drawn. In its header's order.
acquire_proposing() { # KEY FENCE
	local k="rlock:{$1}" t=0b7c6a52-3c1e-4c64-9d7e-3f1d2a4b5c6d
	rcli evalsha "$ACQ" 14 "$k" "$k:meta" "$k:metas" "$k:fence" "$k:sem" \
	    "$k:limit" "$k:q" "$k:w" "$k:turn" "$k:last" "$k:tok" "$k:sh" \
	    "$k:xw" "$k:xtok" "$t" 5000 host 1 user cmd 604800000 1 0 \
	    "$k:wake:" 90000 0 200 '' 6000 "$k:wake" 0 4000 5000 '' "$2" |
	    sed -n 2p
	rcli del "$k" "$k:meta" > /dev/null
}

# server_ms: the server's clock (TIME), in ms.
server_ms() {
	local t
	t=$(rcli time | paste -sd' ')
	echo $(( ${t% *} * 1000 + ${t#* } / 1000 ))
}

# --redlock proposes one fence to every master (its clock a little ahead)
# so that they all draw the same and none needs the write-back. A master
# takes it when above its own clock and its counter, but never more than
# 1 s past its clock: a client clock far ahead cannot carry the fences
# past the 7 days after which the counter lapses.
@test "acquire draws the fence proposed, at most 1 s past the server's clock" {
	local now f
	ACQ=$(sh "$LUA_DIR/../lua-text.sh" "$LUA_DIR/lib" \
	    "$LUA_DIR/acquire.lua" | rcli -x script load)
	now=$(server_ms)
	f=$(acquire_proposing proposed $((now + 900)))
	[ "$f" = $((now + 900)) ] || fail "drew $f for $((now + 900))"
	# Below the counter now: the counter's next.
	f=$(acquire_proposing proposed $((now + 100)))
	[ "$f" = $((now + 901)) ] || fail "drew $f after $((now + 900))"
	now=$(server_ms)
	f=$(acquire_proposing ahead $((now + 86400000)))
	[ "$f" -ge $((now + 1000)) ] && [ "$f" -le $(( $(server_ms) + 1000 )) ] ||
		fail "drew $f for a day ahead of $now"
	# Below the server's clock: the clock.
	now=$(server_ms)
	f=$(acquire_proposing behind $((now - 60000)))
	[ "$f" -ge "$now" ] && [ "$f" -le "$(server_ms)" ] ||
		fail "drew $f for a minute behind $now"
}
