#!/usr/bin/env bats
# contrib/rlock.rules.yml, the alert rules the documentation shows for
# status --prometheus: valid (promtool check rules), doing what their
# comments say on a night that ran, one that did not, and one that hangs
# (promtool test rules tests/rlock.rules.test.yml), and asking only for
# series rlock writes.

load helper

setup_file() {
	redis_start main
}

teardown_file() {
	redis_stop main
}

RULES=$BATS_TEST_DIRNAME/../contrib/rlock.rules.yml

@test "prom rules: promtool checks them" {
	run -0 promtool check rules "$RULES"
	assert_output --partial 'SUCCESS: 3 rules found'
}

@test "prom rules: promtool's unit tests pass (ran, did not run, hangs)" {
	run -0 promtool test rules "$BATS_TEST_DIRNAME/rlock.rules.test.yml"
	assert_output --partial SUCCESS
}

@test "prom rules: every rlock_ series they use is one status --prometheus writes" {
	local m help n=0
	"$RLOCK" -k nightly-report -- true
	help=$("$RLOCK" status --prometheus nightly-report | sed -n 's/^# TYPE \([a-z_]*\) gauge$/\1/p')
	for m in $(grep -o 'rlock_[a-z_]*' "$RULES" | sort -u); do
		printf '%s\n' "$help" | grep -qx "$m" || fail "$m: not written"
		n=$((n + 1))
	done
	[ "$n" -ge 3 ]
}
