#!/usr/bin/env bats
# Managed Redis services block commands rlock does not need: CONFIG (the
# eviction warning asks CONFIG GET), KEYS, DEBUG, CLIENT. On a server with
# all four renamed away every mode works and says nothing more than
# elsewhere; the blocked CONFIG costs the warning (and a line with -v).
# Nothing here uses those commands itself.

load helper

setup_file() {
	redis_start main --maxmemory-policy volatile-lru \
		--rename-command CONFIG "" --rename-command KEYS "" \
		--rename-command DEBUG "" --rename-command CLIENT ""
}

teardown_file() {
	redis_stop main
}

teardown() {
	local p
	for p in ${BG:-}; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null || true
	done
	# A test that failed before stopping its own server.
	redis_stop renamed
}

# sh -c "$HOLD" sh FILE: hold until FILE is gone.
HOLD='while [ -e "$1" ]; do sleep 0.05; done'

@test "managed: the server really lacks CONFIG, KEYS, DEBUG and CLIENT" {
	local c
	for c in "config get maxmemory-policy" "keys *" "debug sleep 0" \
	    "client list"; do
		# shellcheck disable=SC2086
		run rcli $c
		[[ $output == "ERR unknown command"* ]] || fail "$c: $output"
	done
}

@test "managed: every mode works and says nothing more" {
	local go=$BATS_TEST_TMPDIR/go
	run -0 --separate-stderr "$RLOCK" -k m -- echo ran
	assert_output ran
	# The evicting policy cannot be seen, so it cannot be warned about.
	[ -z "$stderr" ]
	touch "$go"
	"$RLOCK" -k w -- sh -c "$HOLD" sh "$go" & BG=$!
	wait_until 5 held w
	run -75 --separate-stderr "$RLOCK" -n -k w -- true
	[[ $stderr == "rlock: 'w' is held by "*"; not waiting (--nonblock)" ]]
	(sleep "$(tf 0.3)"; rm -f "$go") &
	run -0 --separate-stderr "$RLOCK" -w "$(tf 10)" -k w -- echo got
	assert_output got
	[ -z "$stderr" ]
	touch "$go"
	"$RLOCK" --fair -k f -- sh -c "$HOLD" sh "$go" & BG="$BG $!"
	wait_until 5 held f
	(sleep "$(tf 0.3)"; rm -f "$go") &
	run -0 --separate-stderr "$RLOCK" --fair -w "$(tf 10)" -k f -- echo fair
	assert_output fair
	[ -z "$stderr" ]
	run -0 --separate-stderr "$RLOCK" -N 2 -k n -- echo sem
	assert_output sem
	[ -z "$stderr" ]
	touch "$go"
	"$RLOCK" -k s -- sh -c "$HOLD" sh "$go" & BG="$BG $!"
	wait_until 5 held s
	run -0 --separate-stderr "$RLOCK" status s
	[ -z "$stderr" ]
	run -0 --separate-stderr "$RLOCK" list
	[[ $output == s$'\t'* ]]
	[ -z "$stderr" ]
	run -0 --separate-stderr "$RLOCK" release --force s
	[ -z "$stderr" ]
	rm -f "$go"
}

@test "managed: with -v, one line says the policy could not be checked" {
	run -0 --separate-stderr "$RLOCK" -v -k v -- true
	[ "$(grep -c maxmemory-policy <<< "$stderr")" = 1 ]
	[[ $stderr == *"rlock: cannot check the server's maxmemory-policy (CONFIG GET: ERR unknown command 'CONFIG'"*"); it must be noeviction"* ]]
}

# acquire.lua asks whether the ACL allows each command rlock may run, all
# at once (acl.lua's acl_ask); a command the server does not know makes
# that question an error. Then each is asked alone, and an unknown one is
# not checked, as before: HINCRBY only counts skipped runs, PUBLISH is
# only Redis 6's fallback for SPUBLISH.
@test "managed: a command renamed away, only asked about: runs still work" {
	redis_start renamed --rename-command HINCRBY "" --rename-command PUBLISH ""
	run rcli hincrby h f 1
	[[ $output == "ERR unknown command"* ]] || fail "HINCRBY: $output"
	run -0 --separate-stderr "$RLOCK" -k r -- echo ran
	assert_output ran
	[ -z "$stderr" ] || fail "$stderr"
	run -0 --separate-stderr "$RLOCK" -N 2 -w 1 -k r2 -- echo sem
	assert_output sem
	run rcli exists "rlock:{r}"
	assert_output 0
	# A refusal is still named, after the questions were asked again.
	rcli acl setuser app reset on '>pw' '~other:*' '&*' +@all > /dev/null
	run -77 --separate-stderr "$RLOCK" -u "unix://app:pw@$REDIS_SOCK" \
	    -k r -- echo ran
	[ -z "$output" ] || fail "stdout: $output"
	[[ $stderr == *"the ACL user lacks ~rlock:*"* ]] || fail "$stderr"
	# Named when the channel is refused, PUBLISH unknown (acl_why).
	rcli acl setuser app reset on '>pw' '~*' resetchannels +@all > /dev/null
	run -77 --separate-stderr "$RLOCK" -u "unix://app:pw@$REDIS_SOCK" \
	    -k r -- echo ran
	[[ $stderr == *"the ACL user lacks &"* ]] || fail "$stderr"
}
