#!/usr/bin/env bats
# What README.md and the man page say about the protocol matches what the
# scripts do (for other clients who follow the documents).

load helper

setup() {
	TOP=$BATS_TEST_DIRNAME/..
}

# pushes FILE: the list pushes (LPUSH/RPUSH) FILE names for a wake token.
pushes() {
	grep -oE '\b[LR]PUSH\b' "$1" | sort -u | tr '\n' ' '
}

@test "README and the man page name the push that wakes a waiter on P{K}:tok as release does" {
	local lua
	lua=$(cat "$TOP/src/lua/lib/queue.lua" "$TOP/src/lua/release.lua" |
	    grep -oE "'[LR]PUSH'" | tr -d "'" | sort -u | tr '\n' ' ')
	[ "$lua" = "LPUSH " ] || fail "scripts push with: $lua"
	for f in README.md man/rlock.1; do
		[ -z "$(pushes "$TOP/$f")" ] || [ "$(pushes "$TOP/$f")" = "$lua" ] ||
			fail "$f says $(pushes "$TOP/$f")where the scripts $lua"
	done
}
