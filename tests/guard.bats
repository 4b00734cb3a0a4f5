#!/usr/bin/env bats
# Guard-rails: settings of the server that would break the lock silently.

load helper

setup_file() {
	redis_start main
}

teardown_file() {
	redis_stop main
}

teardown() {
	rcli config set maxmemory-policy noeviction >/dev/null
}

@test "an evicting maxmemory-policy is warned about once, not fatal" {
	rcli config set maxmemory-policy volatile-lru
	run -0 --separate-stderr "$RLOCK" -k guard -- echo ran
	assert_output "ran"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "${stderr_lines[0]}" == "rlock: warning: the server's maxmemory-policy is volatile-lru"*"noeviction" ]]
}

@test "-q does not silence the eviction warning: the lock may be granted twice" {
	rcli config set maxmemory-policy allkeys-lru
	run -0 --separate-stderr "$RLOCK" -q -k guard -- true
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	[[ "${stderr_lines[0]}" == "rlock: warning: the server's maxmemory-policy is allkeys-lru"*"noeviction" ]]
}

@test "noeviction: no warning" {
	run -0 --separate-stderr "$RLOCK" -k guard -- true
	[ -z "$stderr" ]
}

@test "a server that refuses CONFIG is not reported" {
	rcli acl setuser noconfig on '>pw' '~*' '&*' +@all -config >/dev/null
	rcli config set maxmemory-policy volatile-lru
	run -0 --separate-stderr "$RLOCK" -u "unix://noconfig:pw@$REDIS_SOCK" \
		-k guard -- true
	[ -z "$stderr" ]
	rcli acl deluser noconfig >/dev/null
}
