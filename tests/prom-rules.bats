#!/usr/bin/env bats
# contrib/rlock.rules.yml, the alert rules the documentation shows for
# status --prometheus: valid (promtool check rules), doing what their
# comments say on a night that ran, one that did not, and one that hangs
# (promtool test rules tests/rlock.rules.test.yml), and asking only for
# series rlock (or node_exporter's textfile collector) writes. The README's
# alerts and its textfile recipe do what it says of them.

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
	assert_output --partial 'SUCCESS: 4 rules found'
}

@test "prom rules: promtool's unit tests pass (ran, did not run, hangs, stale file)" {
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

# readme_block START END: the indented lines of the README between the
# paragraph that starts with START and the next line that starts with END.
readme_block() {
	awk -v s="$1" -v e="$2" 'index($0, s) == 1 { on = 1 }
		on && index($0, e) == 1 { exit }
		on && /^    / { sub(/^    /, ""); print }' \
		"$BATS_TEST_DIRNAME/../README.md"
}

@test "prom rules: the README's alerts fire when it says (a hang past 03:00, a stale file)" {
	local d=$BATS_TEST_TMPDIR e i=0
	mapfile -t alerts < <(readme_block 'Alert on a job' '[contrib/')
	[ "${#alerts[@]}" = 3 ] || fail "README: ${#alerts[@]} alerts: ${alerts[*]}"
	{
		echo 'groups:'
		echo '  - name: readme'
		echo '    rules:'
		for e in "${alerts[@]}"; do
			i=$((i + 1))
			echo "      - alert: Readme$i"
			echo "        expr: '${e//\'/\'\'}'"
		done
	} > "$d/readme.rules.yml"
	# The README's night: the report hangs from 02:00 until --max-hold
	# stops it at 04:00; the last success was the night before, 02:02;
	# status fails from 02:05 on, so the file written at 02:00 stays.
	cat > "$d/readme.test.yml" <<-'EOF'
	rule_files: [readme.rules.yml]
	evaluation_interval: 1m
	tests:
	  - interval: 1m
	    input_series:
	      - series: 'rlock_running{key="nightly-report"}'
	        values: '0x119 1x119 0x59'
	      - series: 'rlock_last_success_timestamp_seconds{key="nightly-report"}'
	        values: '-79080x299'
	      - series: 'node_textfile_mtime_seconds{file="/var/lib/node_exporter/rlock.prom"}'
	        values: '0+60x119 7200x179'
	    alert_rule_test:
	      - {eval_time: 2h1m, alertname: Readme1, exp_alerts: []}
	      - {eval_time: 3h5m, alertname: Readme1, exp_alerts: [{exp_labels: {key: nightly-report}}]}
	      - {eval_time: 2h10m, alertname: Readme2, exp_alerts: []}
	      - {eval_time: 2h20m, alertname: Readme2, exp_alerts: [{exp_labels: {key: nightly-report}}]}
	      - {eval_time: 3h30m, alertname: Readme2, exp_alerts: [{exp_labels: {key: nightly-report}}]}
	      - {eval_time: 4h20m, alertname: Readme2, exp_alerts: []}
	      - {eval_time: 2h10m, alertname: Readme3, exp_alerts: []}
	      - {eval_time: 2h20m, alertname: Readme3, exp_alerts: [{exp_labels: {file: /var/lib/node_exporter/rlock.prom}}]}
	EOF
	run promtool test rules "$d/readme.test.yml"
	[ "$status" = 0 ] || fail "$output"
}

@test "prom rules: the README's textfile recipe keeps the last good file and leaves no temporary one" {
	local line d=$BATS_TEST_TMPDIR
	line=$(readme_block 'textfile collector, every five minutes' 'The output' |
		grep '^\*/5 ')
	[ -n "$line" ] || fail "no cron line in the README"
	# The command of the crontab line, in a directory of this test's,
	# with this rlock first in PATH.
	line=$(printf '%s\n' "$line" | cut -d' ' -f6- |
		sed "s|/var/lib/node_exporter|$d/tf|g")
	mkdir "$d/tf" "$d/bin"
	ln -s "$RLOCK" "$d/bin/rlock"
	"$RLOCK" -k nightly-report -- true
	PATH=$d/bin:$PATH run sh -c "$line"
	[ "$(ls "$d/tf")" = rlock.prom ] || fail "files: $(ls "$d/tf")"
	grep -qx 'rlock_held{key="nightly-report"} 0' "$d/tf/rlock.prom"
	cp "$d/tf/rlock.prom" "$d/good"
	# Redis unreachable: status fails; the last good file stays as it
	# was (its mtime tells the alert), and nothing else is left.
	closed_url
	RLOCK_URL=$CLOSED_URL PATH=$d/bin:$PATH run sh -c "$line"
	[[ $output == *"rlock: cannot reach"* ]] || fail "$output"
	[ "$(ls "$d/tf")" = rlock.prom ] || fail "files: $(ls "$d/tf")"
	cmp "$d/good" "$d/tf/rlock.prom"
}
