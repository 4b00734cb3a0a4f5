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
