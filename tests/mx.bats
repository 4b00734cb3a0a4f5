#!/usr/bin/env bats
# tests/mx.sh, the mutual-exclusion workload that the topology tests run
# (8 workers x read-increment-write), against one plain redis-server; and
# that it does catch a "lock" that excludes nothing.

load helper

setup_file() {
	redis_start main
	cc -O2 -o "$BATS_FILE_TMPDIR/stamp" "$BATS_TEST_DIRNAME/torture/stamp.c"
}

teardown_file() {
	redis_stop main
}

teardown() {
	local left
	left=$(keys_without_ttl)
	[ -z "$left" ] || fail "keys without TTL: $left"
}

mx() { "$BATS_TEST_DIRNAME/mx.sh" -q --stamp "$BATS_FILE_TMPDIR/stamp" "$@"; }

@test "mx: 8 workers x 5 increments over the unix socket: exact count, no overlap" {
	run -0 mx -m 5 -- -u "$RLOCK_URL"
	assert_output --regexp '^mx: workers=8 m=5 sections=40 increments=40 counter=40 want=40 overlaps=0 .*violations=0 fence_errors=0 retries=0 max_holders=1 exits=\[0:40\] .* OK$'
}

@test "mx: RLOCK-ARGS reach rlock (TCP URL, --fair, a short lease)" {
	run -0 mx -W 4 -m 4 -s 5 -- -u "redis://127.0.0.1:$REDIS_PORT" --fair -l 2s
	assert_output --regexp 'counter=16 want=16 overlaps=0 .* OK$'
}

@test "mx: a command that takes no lock fails on overlaps and lost updates" {
	printf '#!/bin/sh\nwhile [ "$1" != -- ]; do shift; done\nshift\nRLOCK_FENCE=1 exec "$@"\n' \
		> "$BATS_TEST_TMPDIR/nolock"
	chmod +x "$BATS_TEST_TMPDIR/nolock"
	run -1 mx -m 3 -s 20 --rlock "$BATS_TEST_TMPDIR/nolock" \
		--dir "$BATS_TEST_TMPDIR/w" -- -u "$RLOCK_URL"
	assert_line --regexp '^mx: .* increments=24 counter=([0-9]|1[0-9]|2[0-3]) want=24 overlaps=[1-9].* FAIL \(counter'
}

@test "mx: an unreachable server fails within the give-up bound" {
	run -1 timeout 30 "$BATS_TEST_DIRNAME/mx.sh" -q -m 2 -g 1 \
		--dir "$BATS_TEST_TMPDIR/w" \
		--stamp "$BATS_FILE_TMPDIR/stamp" -- -u redis://127.0.0.1:1	# tcpmux: nothing listens
	assert_line --regexp '^mx: .* counter=0 want=16 .*exits=\[69:[0-9]+\].* FAIL .*gave up'
	assert_line --partial 'cannot reach'
}
