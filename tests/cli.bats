#!/usr/bin/env bats
# Command line: usage errors (64, one "rlock: " line plus the Try line,
# reported before Redis is contacted), --help, --version, key limits.

load helper

setup_file() {
	redis_start main
	# 69 there: a 64 proves the usage error came first.
	closed_url
}

teardown_file() {
	redis_stop main
}

@test "the closed port really is unreachable: 69, not 64" {
	RLOCK_URL=$CLOSED_URL run -69 --separate-stderr "$RLOCK" -k k -- true
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr =~ ^rlock:\ cannot\ reach\ redis://127.0.0.1: ]]
}

@test "--help: usage on stdout, exit 0, nothing on stderr" {
	run -0 --separate-stderr "$RLOCK" --help
	[ -z "$stderr" ]
	[[ ${lines[0]} == Usage:* ]]
	[[ $output == *"-k, --key KEY"* ]]
	[[ $output == *"--timeout DUR"* ]]
	[[ $output == *"rlock status"* ]]
	run -0 --separate-stderr "$RLOCK" -h
	[[ ${lines[0]} == Usage:* ]]
}

@test "--help: each paragraph once, no line left over from an edit" {
	run -0 --separate-stderr "$RLOCK" --help
	local h
	for h in Usage: Options: Environment: 'Exit status:' DUR: \
	    Subcommands:; do
		[ "$(grep -c "^$h" <<< "$output")" = 1 ] || fail "$h not once"
	done
	# A line of its own opens with a word or an option, never a number
	# (the exit statuses continue the "Exit status:" line).
	! grep -n '^[0-9]' <<< "$output" || fail "a dangling line"
	[ "$(grep -c '' <<< "$output")" -le 60 ]
	! grep -n '.\{81\}' <<< "$output" || fail "a line over 80 columns"
}

@test "--help wins over a bad URL and a missing key" {
	RLOCK_URL=http://nowhere run -0 --separate-stderr "$RLOCK" --help
	[[ ${lines[0]} == Usage:* ]]
	[ -z "$stderr" ]
}

@test "--version: name and version on stdout, exit 0" {
	run -0 --separate-stderr "$RLOCK" --version
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 1 ]
	[[ $output =~ ^rlock\ [0-9]+\.[0-9]+\.[0-9]+ ]]
	run -0 "$RLOCK" -V
	[[ $output =~ ^rlock\ [0-9] ]]
}

@test "no arguments at all" {
	usage_error 'missing -k KEY'
}

@test "command without -k: missing key" {
	usage_error "missing -k KEY.*'true'" true
}

@test "-k KEY without a command" {
	usage_error 'missing command' -k k
}

@test "-- alone is not a command" {
	usage_error 'missing command' -k k --
}

@test "-c with extra arguments" {
	usage_error "-c .*'extra'" -k k -c 'echo hi' extra
}

@test "unknown long option" {
	usage_error "unknown option '--bogus'" --bogus -k k -- true
}

@test "unknown short option" {
	usage_error "unknown option '-Z'" -Z -k k -- true
}

@test "option missing its value" {
	usage_error "'--timeout' needs a value" -k k --timeout
	usage_error "'-k' needs a value" -k
	usage_error "'--config' needs a value" -k k --config
	usage_error "'--config' needs a value" status k --config
}

@test "a usage error comes before a configuration file's error (64, not 78)" {
	local c=$BATS_TEST_TMPDIR/c.conf
	echo "colour = blue" > "$c"
	chmod 644 "$c"
	usage_error "missing command" --config "$c" -k k
}

@test "long option given a value it does not take" {
	usage_error "'--nonblock' takes no value" --nonblock=yes -k k -- true
}

@test "bad durations name the option and the value" {
	usage_error "--timeout: invalid duration '5x'" -w 5x -k k -- true
	usage_error "--timeout: invalid duration '-1'" -w -1 -k k -- true
	usage_error "--timeout: invalid duration '1\.'" -w 1. -k k -- true
	usage_error "--timeout: invalid duration ''" -w '' -k k -- true
	usage_error "--timeout: invalid duration '5 s'" -w '5 s' -k k -- true
	usage_error "--lease: invalid duration '10y'" -l 10y -k k -- true
	usage_error "--kill-after: invalid duration 'abc'" --kill-after abc \
		-k k -- true
	usage_error "--connect-timeout: invalid duration '1e3'" \
		--connect-timeout 1e3 -k k -- true
}

@test "durations out of range" {
	usage_error '--lease must be at least 100ms' -l 99ms -k k -- true
	usage_error '--lease must be at least 100ms' -l 0 -k k -- true
	usage_error '--connect-timeout must be more than 0' \
		--connect-timeout 0 -k k -- true
}

@test "a duration beyond the limit: too long, and the limit named" {
	usage_error "--timeout: '99999999999999999h' is too long \\(at most 87840h, about ten years\\)$" \
		-w 99999999999999999h -k k -- true
	usage_error "--lease: '87841h' is too long \\(at most 87840h" \
		-l 87841h -k k -- true
	usage_error "--kill-after: '99999999999999999999999ms' is too long" \
		--kill-after 99999999999999999999999ms -k k -- true
	usage_error "--connect-timeout: '5270401m' is too long" \
		--connect-timeout 5270401m -k k -- true
	# The limit itself is a duration like any other.
	run -0 "$RLOCK" -w 87840h -k k -- true
}

@test "-E and -N ranges" {
	usage_error "--conflict-exit-code: '256'" -E 256 -k k -- true
	usage_error "--conflict-exit-code: '-1'" -E -1 -k k -- true
	usage_error "--limit: '0'" -N 0 -k k -- true
	usage_error "--limit: 'x'" -N x -k k -- true
}

@test "--on-lost takes term, kill or ignore" {
	usage_error "--on-lost: unknown action 'stop'" --on-lost stop -k k \
		-- true
}

@test "empty key" {
	usage_error 'the key is empty' -k '' -- true
}

@test "key longer than 512 bytes" {
	usage_error 'longer than 512 bytes' -k "$(printf 'a%.0s' {1..513})" \
		-- true
}

@test "--prefix with '{}' (an empty Cluster hash tag for every key): 64" {
	usage_error "--prefix 'a\\{\\}': a '\\{\\}' there would leave every key an empty Cluster hash tag" \
		--prefix 'a{}' -k k -- true
	usage_error "--prefix '\\{\\}x'" status --prefix '{}x' k
}

@test "key of exactly 512 bytes works" {
	local key
	key=$(printf 'k%.0s' {1..512})
	run -0 --separate-stderr "$RLOCK" -k "$key" -- sh -c \
		'printf "%s\n" "${#RLOCK_KEY}"; redis-cli -s "$REDIS_SOCK" \
		exists "rlock:{$RLOCK_KEY}"'
	[ -z "$stderr" ]
	[ "${lines[0]}" = 512 ]
	[ "${lines[1]}" = 1 ]
}

# tls_file_error MESSAGE RLOCK-ARGS...: 64 and exactly the one line
# "rlock: MESSAGE" (no Try line: the option was well-formed, its file is
# not), nothing on stdout, before any connection ($CLOSED_URL, over TLS).
tls_file_error() {
	local want=$1
	shift
	RLOCK_URL=rediss${CLOSED_URL#redis} run -64 --separate-stderr \
		"$RLOCK" "$@"
	[ -z "$output" ] || fail "stdout: $output"
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	[ "${stderr_lines[0]}" = "rlock: $want" ] ||
		fail "got: ${stderr_lines[0]} (want rlock: $want)"
}

@test "TLS files that cannot be used: 64, one line naming the file, before any connection" {
	local d=$BATS_TEST_TMPDIR
	printf 'not a certificate\n' > "$d/junk.pem"
	tls_file_error "cannot read --tls-cacert /nonexistent/ca.pem: No such file or directory" \
		--tls-cacert /nonexistent/ca.pem -k k -- true
	tls_file_error "cannot read --tls-cacert $d: Is a directory" \
		--tls-cacert "$d" -k k -- true
	tls_file_error "--tls-cacert $d/junk.pem holds no usable CA certificate: no certificate or crl found" \
		--tls-cacert "$d/junk.pem" -k k -- true
	tls_file_error "cannot read --tls-cacertdir /nonexistent/certs: No such file or directory" \
		--tls-cacertdir /nonexistent/certs -k k -- true
	tls_file_error "cannot read --tls-cert /nonexistent/c.pem: No such file or directory" \
		--tls-cert /nonexistent/c.pem --tls-key /nonexistent/k.pem -k k -- true
	tls_file_error "--tls-cert $d/junk.pem holds no usable certificate: no PEM data in it" \
		--tls-cert "$d/junk.pem" -k k -- true
	tls_file_error "--tls-key $d/junk.pem without a client certificate: give it with --tls-cert (or RLOCK_TLS_CERT)" \
		--tls-key "$d/junk.pem" -k k -- true
	# From the environment, the line names the variable.
	RLOCK_TLS_CACERT=/nonexistent/ca.pem tls_file_error \
		"cannot read RLOCK_TLS_CACERT /nonexistent/ca.pem: No such file or directory" \
		-k k -- true
	RLOCK_TLS_CERT=/nonexistent/c.pem tls_file_error \
		"cannot read RLOCK_TLS_CERT /nonexistent/c.pem: No such file or directory" \
		-k k -- true
	# The subcommands check them as early, before or after their word.
	tls_file_error "cannot read --tls-cacert /nonexistent/ca.pem: No such file or directory" \
		status --tls-cacert /nonexistent/ca.pem K
	tls_file_error "cannot read --tls-cacert /nonexistent/ca.pem: No such file or directory" \
		--tls-cacert /nonexistent/ca.pem list
	tls_file_error "cannot read --tls-cacert /nonexistent/ca.pem: No such file or directory" \
		release --force --tls-cacert /nonexistent/ca.pem K
}

@test "--tls turns TLS on for redis://; without it, TLS files are not even read" {
	RLOCK_URL=$CLOSED_URL run -64 --separate-stderr "$RLOCK" --tls \
		--tls-cacert /nonexistent/ca.pem -k k -- true
	[ "$stderr" = "rlock: cannot read --tls-cacert /nonexistent/ca.pem: No such file or directory" ]
	# A crontab's RLOCK_TLS_* do not get in the way of a plain server.
	RLOCK_TLS_CACERT=/nonexistent/ca.pem RLOCK_TLS_CERT=/nonexistent/c \
		run -0 --separate-stderr "$RLOCK" -k plain -- echo ran
	[ "$output" = ran ]
	[ -z "$stderr" ]
}

@test "TLS options: bad forms are usage errors" {
	usage_error "--tls-sni needs a name" --tls-sni "" -k k -- true
	usage_error "option '--tls-cert' needs a value" -k k --tls-cert
	usage_error "option '--tls' takes no value" --tls=yes -k k -- true
	usage_error "ambiguous option '--tls-c'" --tls-c=x -k k -- true
	usage_error "--redlock takes one redis://, rediss:// or unix:// URL per master \(URL 2 is not\)" \
		--redlock -u rediss://a -u rediss+cluster://b -u rediss://c \
		-k k -- true
}

@test "bad URL: usage error naming where it came from, password hidden" {
	usage_error "bad Redis URL 'redis://u:\*+@h:0' \(-u\): bad port" \
		-u redis://u:s3cret@h:0 -k k -- true
	[[ $stderr != *s3cret* ]]
}

@test "bad RLOCK_URL is reported before Redis is contacted" {
	run -64 --separate-stderr env RLOCK_URL='redis://h:99999' "$RLOCK" \
		-k k -- true
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ ${stderr_lines[0]} == "rlock: bad Redis URL 'redis://h:99999' (RLOCK_URL): bad port"* ]]
}

@test "run-mode options do not go with a subcommand" {
	usage_error "options of the run mode do not go with 'status'" \
		-n status k
}

@test "release needs --force and one KEY" {
	usage_error 'say so with --force' release k
	usage_error 'exactly one KEY' release --force
	usage_error 'exactly one KEY' release --force a b
}

@test "status needs a KEY; list at most one PATTERN" {
	usage_error 'at least one KEY' status
	usage_error 'at most one PATTERN' list a b
	usage_error "unknown option '-k' for status" status -k a
}

@test "COMMAND options after -k KEY belong to COMMAND" {
	run -0 --separate-stderr "$RLOCK" -k k printf '%s|' -n -w 5x --bogus
	[ "$output" = "-n|-w|5x|--bogus|" ]
	[ -z "$stderr" ]
}

connections() {
	rcli info stats | sed -n 's/^total_connections_received:\([0-9]*\).*/\1/p'
}

@test "a usage error does not even connect to a reachable Redis" {
	local before after
	before=$(connections)
	run -64 "$RLOCK" -k '' -- true
	run -64 "$RLOCK" -k k --bogus -- true
	run -64 "$RLOCK" -w 5x -k k -- true
	after=$(connections)
	# Only the second INFO's own connection is new.
	[ "$after" -eq $((before + 1)) ]
	# While a real run does connect.
	run -0 "$RLOCK" -k k -- true
	[ "$(connections)" -gt $((after + 1)) ]
}

# The system refusing rlock what it needs at start (here signalfd, failed
# by a preloaded stub) is an OS failure: one line, 71 (EX_OSERR).
@test "signalfd refused: one rlock: line, exit 71" {
	local shim=$BATS_TEST_TMPDIR/nosignalfd.so
	printf '%s\n' '#include <errno.h>' '#include <signal.h>' \
	    'int signalfd(int fd, const sigset_t *m, int fl)' \
	    '{ (void)fd; (void)m; (void)fl; errno = EMFILE; return -1; }' \
	    > "$BATS_TEST_TMPDIR/nosignalfd.c"
	cc -shared -fPIC -o "$shim" "$BATS_TEST_TMPDIR/nosignalfd.c"
	# ASan wants its runtime first; the stub only replaces signalfd.
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
	    LD_PRELOAD=$shim run -71 --separate-stderr "$RLOCK" -k k -- true
	[ -z "$output" ]
	[ "$stderr" = "rlock: cannot set up signal handling: Too many open files" ]
}

# As flock(1), where -n wins over -w in either order: the order of two
# options must not decide whether a cron line waits.
@test "-n and -w together: -n wins, in either order, as in flock" {
	local o t0 el
	for o in "-n -w 1m" "-w 1m -n" "--timeout=1m --nonblock"; do
		t0=$(now_ms)
		# The outer rlock holds nw; the inner one (not its re-entry:
		# no RLOCK_TOKEN) finds it held.
		run -75 --separate-stderr "$RLOCK" -k nw -- env -u RLOCK_TOKEN \
			"$RLOCK" $o -k nw -- echo must-not-run
		el=$(( $(now_ms) - t0 ))
		[ -z "$output" ]
		[ "$el" -lt "$(tf_ms 5000)" ] || fail "$o: waited $el ms"
		[[ $stderr == *"; not waiting (--nonblock)" ]] || fail "$o: $stderr"
	done
	run -0 --separate-stderr "$RLOCK" -v -w 1m -n -k nw -- true
	[[ $stderr == *"rlock: --timeout has no effect with --nonblock"* ]] ||
		fail "$stderr"
}

# They bound different things: --max-hold how long COMMAND may hold the
# lock, --min-hold how long the lock stays after the grant (an hourly job
# with --min-hold 50m --max-hold 30m), so a longer --min-hold is no
# contradiction: COMMAND is stopped, and the lock rests.
@test "--min-hold longer than --max-hold: COMMAND stopped (124), the lock rests to --min-hold" {
	local t0 el
	t0=$(now_ms)
	run -124 --separate-stderr "$RLOCK" --min-hold 1m --max-hold 300ms \
		--kill-after 0 -k mh -- sleep 30
	el=$(( $(now_ms) - t0 ))
	[ "$el" -lt "$(tf_ms 5000)" ] || fail "stopped after $el ms"
	[ "$(rcli pttl 'rlock:{mh}')" -gt 50000 ] || fail "pttl $(rcli pttl 'rlock:{mh}')"
	run -75 --separate-stderr "$RLOCK" -n -k mh -- echo must-not-run
	[[ $stderr == *"--min-hold until"* ]] || fail "$stderr"
	rcli del 'rlock:{mh}' >/dev/null
}
