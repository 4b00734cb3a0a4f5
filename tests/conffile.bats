#!/usr/bin/env bats
# Configuration files (rlock.conf(5)): the system file, the user's file,
# $RLOCK_CONFIG and --config; the precedence of command line, environment,
# user file, system file; every 78 (one "rlock: FILE[:LINE]: " line,
# before Redis is contacted); the owner and mode rule; -v.
# The system file is $RLOCK_SYSCONFDIR/rlock.conf here (a hook for tests:
# /etc is the machine's).

load helper

setup_file() {
	redis_start main
	closed_url
}

teardown_file() {
	redis_stop main
	redis_stop auth
}

setup() {
	ETC=$BATS_TEST_TMPDIR/etc
	XDG=$BATS_TEST_TMPDIR/xdg
	mkdir -p "$ETC" "$XDG/rlock"
	chmod 755 "$ETC" "$XDG" "$XDG/rlock"
	unset RLOCK_CONFIG
	export RLOCK_SYSCONFDIR=$ETC XDG_CONFIG_HOME=$XDG
	SYS=$ETC/rlock.conf
	USR=$XDG/rlock/rlock.conf
	LIVE=unix://$REDIS_SOCK
}

# conf FILE LINE...: write FILE with one LINE a line, mode 644.
conf() {
	local f=$1
	shift
	printf '%s\n' "$@" > "$f"
	chmod 644 "$f"
}

# held_under PREFIX: run a holder of key k with the arguments given after
# --, and exit with 0 if, while it holds, k is held under PREFIX.
held_under() {
	local prefix=$1
	shift
	[ "$1" = -- ] && shift
	"$RLOCK" "$@" -k k -- "$RLOCK" -u "$LIVE" --prefix "$prefix" \
		status k >/dev/null
}

# config_error REGEX RLOCK-ARGS...: 78, one line "rlock: " + REGEX on
# stderr, nothing on stdout, with Redis unreachable unless the arguments
# say otherwise (so it was not contacted first).
config_error() {
	local re=$1
	shift
	RLOCK_URL=$CLOSED_URL run -78 --separate-stderr "$RLOCK" "$@"
	[ -z "$output" ] || fail "stdout: $output"
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	[[ ${stderr_lines[0]} =~ ^rlock:\ $re ]] ||
		fail "line: ${stderr_lines[0]} (want $re)"
}

@test "no file at all: the built-in defaults, nothing said" {
	run -0 --separate-stderr "$RLOCK" -v -k k -- true
	[[ $stderr != *configuration* ]]
	held_under rlock: -- -u "$LIVE"
}

@test "the system file applies" {
	conf "$SYS" "prefix = sys:"
	held_under sys: -- -u "$LIVE"
}

@test "precedence: the user file over the system file" {
	conf "$SYS" "prefix = sys:"
	conf "$USR" "prefix = usr:"
	held_under usr: -- -u "$LIVE"
	! held_under sys: -- -u "$LIVE"
}

@test "precedence: the user file at \$HOME/.config without XDG_CONFIG_HOME" {
	export HOME=$BATS_TEST_TMPDIR/home
	mkdir -p "$HOME/.config/rlock"
	conf "$HOME/.config/rlock/rlock.conf" "prefix = home:"
	conf "$SYS" "prefix = sys:"
	unset XDG_CONFIG_HOME
	held_under home: -- -u "$LIVE"
	# A relative XDG_CONFIG_HOME is invalid (the XDG spec): ignored.
	XDG_CONFIG_HOME=rel held_under home: -- -u "$LIVE"
}

@test "precedence: a later file's url lines replace an earlier file's" {
	unset RLOCK_URL
	conf "$SYS" "url = $CLOSED_URL"
	conf "$USR" "url = $LIVE"
	run -1 --separate-stderr "$RLOCK" status k
	[ -z "$stderr" ]
	# And the system file's URL is used when it is the only one.
	rm "$USR"
	run -69 --separate-stderr "$RLOCK" status k
	[[ $stderr == *"check url in $SYS:1"* ]] || fail "$stderr"
}

@test "precedence: the environment over the user file (RLOCK_URL, REDIS_URL)" {
	conf "$USR" "url = $CLOSED_URL"
	RLOCK_URL=$LIVE run -1 --separate-stderr "$RLOCK" status k
	[ -z "$stderr" ]
	unset RLOCK_URL
	REDIS_URL=$LIVE run -1 --separate-stderr "$RLOCK" status k
	[ -z "$stderr" ]
	# Without them, the file's.
	run -69 --separate-stderr "$RLOCK" status k
	[[ $stderr == *"check url in $USR:1" ]] || fail "$stderr"
}

@test "precedence: RLOCK_TLS_CACERT over the file's tls-cacert" {
	local junk=$BATS_TEST_TMPDIR/junk.pem
	echo "not a certificate" > "$junk"
	conf "$USR" "tls-cacert = $junk"
	RLOCK_URL=$CLOSED_URL run -64 --separate-stderr "$RLOCK" --tls status k
	[[ $stderr == *"tls-cacert ($USR:1) $junk"* ]] || fail "$stderr"
	RLOCK_TLS_CACERT=$junk RLOCK_URL=$CLOSED_URL run -64 \
		--separate-stderr "$RLOCK" --tls status k
	[[ $stderr == *"RLOCK_TLS_CACERT $junk"* ]] || fail "$stderr"
	[[ $stderr != *"$USR"* ]] || fail "$stderr"
	# The command line over both.
	cp "$junk" "$BATS_TEST_TMPDIR/cli.pem"
	RLOCK_TLS_CACERT=$junk RLOCK_URL=$CLOSED_URL run -64 \
		--separate-stderr "$RLOCK" --tls \
		--tls-cacert "$BATS_TEST_TMPDIR/cli.pem" status k
	[[ $stderr == *"--tls-cacert $BATS_TEST_TMPDIR/cli.pem"* ]] ||
		fail "$stderr"
}

@test "precedence: the command line over the environment and the files" {
	conf "$USR" "url = $CLOSED_URL" "prefix = usr:"
	RLOCK_URL=$CLOSED_URL run -1 --separate-stderr "$RLOCK" -u "$LIVE" \
		status k
	[ -z "$stderr" ]
	held_under cli: -- -u "$LIVE" --prefix cli:
	! held_under usr: -- -u "$LIVE" --prefix cli:
}

@test "precedence: RLOCK_PASSWORD over the file's password-file, which works" {
	redis_start auth --requirepass s3cret
	local pf=$BATS_TEST_TMPDIR/pw
	echo s3cret > "$pf"
	chmod 600 "$pf"
	conf "$USR" "password-file = $pf"
	run -1 --separate-stderr "$RLOCK" -u "unix://$REDIS_SOCK" status k
	[ -z "$stderr" ]
	RLOCK_PASSWORD=wrong run -77 --separate-stderr "$RLOCK" \
		-u "unix://$REDIS_SOCK" status k
	# A password in the URL given on the command line beats it too.
	run -77 --separate-stderr "$RLOCK" -u "unix://:wrong@$REDIS_SOCK" \
		status k
	redis_stop auth
}

@test "--config FILE replaces both files; so does RLOCK_CONFIG" {
	conf "$SYS" "prefix = sys:"
	conf "$USR" "prefix = usr:"
	local c=$BATS_TEST_TMPDIR/c.conf
	conf "$c" "prefix = cfg:"
	held_under cfg: -- -u "$LIVE" --config "$c"
	RLOCK_CONFIG=$c held_under cfg: -- -u "$LIVE"
	# Replaces, not adds: a --config without a prefix leaves the default.
	conf "$c" "lease = 30s"
	held_under rlock: -- -u "$LIVE" --config "$c"
	RLOCK_CONFIG=$c held_under rlock: -- -u "$LIVE"
	# --config over RLOCK_CONFIG.
	conf "$BATS_TEST_TMPDIR/d.conf" "prefix = d:"
	RLOCK_CONFIG=$c held_under d: -- -u "$LIVE" \
		--config "$BATS_TEST_TMPDIR/d.conf"
}

@test "-v names each file read, one line each, in order" {
	conf "$SYS" "prefix = sys:"
	conf "$USR" "prefix = usr:"
	run -0 --separate-stderr "$RLOCK" -v -u "$LIVE" -k k -- true
	grep -F "configuration file" <<< "$stderr" > "$BATS_TEST_TMPDIR/v"
	run cat "$BATS_TEST_TMPDIR/v"
	[ "${#lines[@]}" -eq 2 ] || fail "$output"
	[ "${lines[0]}" = "rlock: read the configuration file $SYS" ]
	[ "${lines[1]}" = "rlock: read the configuration file $USR" ]
	# Without -v, nothing.
	run -0 --separate-stderr "$RLOCK" -u "$LIVE" -k k -- true
	[ -z "$stderr" ]
	run -0 --separate-stderr "$RLOCK" -v --config "$SYS" -u "$LIVE" \
		-k k -- true
	[ "$(grep -c "configuration file" <<< "$stderr")" = 1 ]
	[[ $stderr == *"read the configuration file $SYS"* ]]
}

@test "comments, blank lines, blanks around '=', CRLF" {
	printf '%s\n' "# a comment" "" "   " "	# indented comment" \
		"  prefix   =   a#b:   # a comment after a blank" \
		"lease=5s" "on-lost = kill" $'kill-after = 2s\r' > "$USR"
	chmod 644 "$USR"
	held_under 'a#b:' -- -u "$LIVE"
}

@test "flags: standing alone, '= yes' and '= no' (a later file clears)" {
	local junk=$BATS_TEST_TMPDIR/junk.pem
	echo "not a certificate" > "$junk"
	# --tls is on: the CA file is loaded, and refused.
	conf "$USR" "tls" "tls-cacert = $junk"
	RLOCK_URL=$CLOSED_URL run -64 --separate-stderr "$RLOCK" status k
	[[ $stderr == *"holds no usable CA"* ]] || fail "$stderr"
	conf "$USR" "tls = yes" "tls-cacert = $junk"
	RLOCK_URL=$CLOSED_URL run -64 --separate-stderr "$RLOCK" status k
	[[ $stderr == *"holds no usable CA"* ]] || fail "$stderr"
	# tls = no in the user file clears the system file's tls.
	conf "$SYS" "tls"
	conf "$USR" "tls = no" "tls-cacert = $junk"
	run -1 --separate-stderr "$RLOCK" -u "$LIVE" status k
	[ -z "$stderr" ]
	# ... but not the command line's --tls.
	RLOCK_URL=$CLOSED_URL run -64 --separate-stderr "$RLOCK" --tls \
		status k
}

@test "url several times with redlock: the masters; redlock = no: the last" {
	unset RLOCK_URL
	conf "$USR" "redlock" "url = $LIVE?db=1" "url = $LIVE?db=2" \
		"url = $LIVE?db=3"
	run -0 --separate-stderr "$RLOCK" -k rk -- true
	[ -z "$stderr" ] || fail "$stderr"
	run -1 --separate-stderr "$RLOCK" status --json rk
	[[ $output == *'"key": "rk"'* || $output == *'"key":"rk"'* ]] ||
		fail "$output"
	# Two masters: the count is the file's to fix, 78 at its url line.
	conf "$USR" "redlock" "url = $LIVE?db=1" "url = $LIVE?db=2"
	run -78 --separate-stderr "$RLOCK" -k rk -- true
	[[ $stderr =~ ^rlock:\ $USR:3:\ --redlock\ needs\ an\ odd\ number.*got\ 2 ]] ||
		fail "$stderr"
	[ "${#stderr_lines[@]}" -eq 1 ]
	# redlock = no: one server, the last url.
	conf "$USR" "redlock = no" "url = $CLOSED_URL" "url = $LIVE"
	run -1 --separate-stderr "$RLOCK" status k
	[ -z "$stderr" ]
}

@test "78: an unknown name" {
	conf "$USR" "# ok" "prefix = p:" "colour = blue"
	config_error "$USR:3: unknown name 'colour'" -k k -- true
	conf "$USR" "--lease = 5s"
	config_error "$USR:1: unknown name '--lease' \(write a long option without its dashes\)" \
		-k k -- true
}

@test "78: names that are not allowed: key, command, password, timeout" {
	local n
	conf "$USR" "key = nightly"
	config_error "$USR:1: 'key' is not allowed" -k k -- true
	conf "$USR" "command = rm -rf /"
	config_error "$USR:1: 'command' is not allowed" -k k -- true
	conf "$USR" "password = s3cret"
	config_error "$USR:1: 'password' is not allowed: .*password-file" \
		-k k -- true
	[[ $stderr != *s3cret* ]]
	for n in timeout nonblock limit fair min-hold max-hold quiet \
	    verbose config json tls-insecure; do
		conf "$USR" "$n = 1"
		config_error "$USR:1: '$n' is not allowed" -k k -- true
	done
	# A password inside a URL is a password too, and not shown.
	conf "$USR" "url = redis://:s3cret@127.0.0.1:6379"
	config_error "$USR:1: url holds a password" -k k -- true
	[[ $stderr != *s3cret* ]]
}

@test "78: bad values, checked as the command line checks them" {
	conf "$USR" "lease = 5x"
	config_error "$USR:1: --lease: invalid duration '5x'" -k k -- true
	conf "$USR" "lease = 10ms"
	config_error "$USR:1: --lease must be at least 100ms" -k k -- true
	conf "$USR" "kill-after = -1"
	config_error "$USR:1: --kill-after: invalid duration" -k k -- true
	conf "$USR" "connect-timeout = 0"
	config_error "$USR:1: --connect-timeout must be more than 0" \
		-k k -- true
	conf "$USR" "on-lost = stop"
	config_error "$USR:1: --on-lost: unknown action 'stop'" -k k -- true
	conf "$USR" "url = http://nowhere"
	config_error "$USR:1: bad Redis URL" -k k -- true
	conf "$USR" "prefix = {}"
	config_error "$USR:1: --prefix" -k k -- true
	conf "$USR" "lease ="
	config_error "$USR:1: lease needs a value" -k k -- true
	conf "$USR" "lease"
	config_error "$USR:1: lease needs a value" -k k -- true
	conf "$USR" "tls = maybe"
	config_error "$USR:1: tls is a flag" -k k -- true
	conf "$USR" "lease 5s"
	config_error "$USR:1: expected 'lease = VALUE'" -k k -- true
	conf "$USR" "= 5s"
	config_error "$USR:1: a setting needs a name" -k k -- true
	printf 'prefix = a\0b\n' > "$USR"
	config_error "$USR:1: holds a NUL byte" -k k -- true
	# A bad value in the system file is an error even when the user
	# file or the command line sets that name too.
	conf "$SYS" "lease = 5x"
	conf "$USR" "lease = 5s"
	config_error "$SYS:1: --lease: invalid duration" -l 10s -k k -- true
}

@test "78: files a setting names, when used, with the setting's line" {
	conf "$USR" "password-file = $BATS_TEST_TMPDIR/nope"
	config_error "$USR:1: cannot read password-file .*nope: No such file" \
		-k k -- true
	conf "$USR" "tls-cacert = $BATS_TEST_TMPDIR/nope"
	config_error "$USR:1: cannot read tls-cacert" --tls -k k -- true
	conf "$USR" "tls-cacertdir = $USR"
	config_error "$USR:1: cannot read tls-cacertdir .*: Not a directory" \
		--tls -k k -- true
	conf "$USR" "tls-key = $USR"
	config_error "$USR:1: tls-key without tls-cert" --tls -k k -- true
}

@test "78: a missing --config or RLOCK_CONFIG file; missing defaults are fine" {
	config_error "cannot read --config $BATS_TEST_TMPDIR/nope: No such file" \
		--config "$BATS_TEST_TMPDIR/nope" -k k -- true
	RLOCK_CONFIG=$BATS_TEST_TMPDIR/nope config_error \
		"cannot read RLOCK_CONFIG $BATS_TEST_TMPDIR/nope: No such file" \
		-k k -- true
	config_error "$BATS_TEST_TMPDIR: is a directory" \
		--config "$BATS_TEST_TMPDIR" -k k -- true
	rm -rf "$ETC" "$XDG"
	run -0 --separate-stderr "$RLOCK" -u "$LIVE" -k k -- true
	[ -z "$stderr" ]
	# /dev/null names no file: RLOCK_CONFIG=/dev/null reads none.
	conf "$BATS_TEST_TMPDIR/x" "x"
	RLOCK_CONFIG=/dev/null run -0 --separate-stderr "$RLOCK" -u "$LIVE" \
		-k k -- true
}

@test "78: a file its group or anyone may write" {
	conf "$USR" "prefix = p:"
	chmod 664 "$USR"
	config_error "$USR: refused: writable by its group \(mode 0664" \
		-k k -- true
	chmod 646 "$USR"
	config_error "$USR: refused: writable by anyone" -k k -- true
	chmod 600 "$USR"
	held_under p: -- -u "$LIVE"
}

@test "78: a file in a directory others may write; a sticky one is fine" {
	conf "$USR" "prefix = p:"
	chmod 777 "$XDG/rlock"
	config_error "$USR: refused: its directory $XDG/rlock is writable by others" \
		-k k -- true
	chmod 1777 "$XDG/rlock"
	held_under p: -- -u "$LIVE"
}

@test "78: a file owned by another user (not root); root's passes" {
	[ "$(id -u)" = 0 ] || skip "chown needs root"
	conf "$USR" "prefix = p:"
	chown nobody "$USR"
	config_error "$USR: refused: owned by uid $(id -u nobody)" -k k -- true
	chown 0 "$USR"
	held_under p: -- -u "$LIVE"
	# A user other than root reads root's file: the system file's case.
	local d
	d=$(mktemp -d /tmp/rlock-conf.XXXXXX)
	chmod 755 "$d"
	conf "$d/rlock.conf" "lease = 5x"
	# (Its own user file: none, as the test's directory is root's.)
	unset XDG_CONFIG_HOME
	export HOME=/nonexistent
	RLOCK_SYSCONFDIR=$d run -78 --separate-stderr setpriv \
		--reuid=nobody --regid=nogroup --clear-groups \
		"$RLOCK" -u "$CLOSED_URL" -k k -- true
	# The line was read (and its value refused), not the file.
	[[ $stderr == "rlock: $d/rlock.conf:1: --lease"* ]] || fail "$stderr"
	conf "$d/rlock.conf" "prefix = p:"
	RLOCK_SYSCONFDIR=$d run -69 --separate-stderr setpriv \
		--reuid=nobody --regid=nogroup --clear-groups \
		"$RLOCK" -u "$CLOSED_URL" -k k -- true
	rm -rf "$d"
}

# as_nobody ARGS...: rlock ARGS run as the user nobody (run sets status,
# output and stderr), with no user file unless the caller's HOME has one.
as_nobody() {
	run --separate-stderr setpriv --reuid=nobody --regid=nogroup \
		--clear-groups "$RLOCK" "$@"
}

# A system file written under umask 077 cannot be read by the users who
# run rlock. Its settings (a prefix, a lease) are not to be missed
# silently, -u or not: runs with and without them would not exclude each
# other. So 78, and the line says how to fix it.
@test "78: a default file that exists but cannot be read, -u or not; the line names the fix" {
	[ "$(id -u)" = 0 ] || skip "setpriv needs root"
	local d
	d=$(mktemp -d /tmp/rlock-conf.XXXXXX)
	chmod 755 "$d"
	conf "$d/rlock.conf" "prefix = p:"
	chmod 600 "$d/rlock.conf"
	unset XDG_CONFIG_HOME
	export HOME=/nonexistent RLOCK_SYSCONFDIR=$d
	as_nobody -u "$CLOSED_URL" -k k -- echo must-not-run
	[ "$status" -eq 78 ] || fail "status $status: $stderr"
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	[ "$stderr" = "rlock: cannot read $d/rlock.conf: Permission denied; make it readable (chmod a+r $d/rlock.conf; it holds no secret), or read no configuration file (--config /dev/null, or RLOCK_CONFIG=/dev/null)" ] ||
		fail "stderr: $stderr"
	# Each cure the line names works (69: Redis was contacted).
	RLOCK_CONFIG=/dev/null as_nobody -u "$CLOSED_URL" -k k -- true
	[ "$status" -eq 69 ] || fail "status $status: $stderr"
	as_nobody --config /dev/null -u "$CLOSED_URL" -k k -- true
	[ "$status" -eq 69 ] || fail "status $status: $stderr"
	chmod a+r "$d/rlock.conf"
	as_nobody -u "$CLOSED_URL" -k k -- true
	[ "$status" -eq 69 ] || fail "status $status: $stderr"
	# The user's own file: u+r.
	mkdir -p "$d/home/.config/rlock"
	conf "$d/home/.config/rlock/rlock.conf" "prefix = p:"
	chown -R nobody "$d/home"
	chmod 200 "$d/home/.config/rlock/rlock.conf"
	HOME=$d/home as_nobody -u "$CLOSED_URL" -k k -- true
	[ "$status" -eq 78 ] || fail "status $status: $stderr"
	[[ $stderr == "rlock: cannot read $d/home/.config/rlock/rlock.conf: Permission denied; make it readable (chmod u+r $d/home/.config/rlock/rlock.conf), or read no configuration file"* ]] ||
		fail "stderr: $stderr"
	rm -rf "$d"
}

# sudo without -H (and su without -) keeps the caller's HOME: root, or
# another user, finds that user's file. It is theirs, not ours: its
# settings (a password-file read with our rights, sent to a server it
# names) are theirs to choose. Skipped with a warning, as ssh reads only
# the running user's own ~/.ssh/config; never "chown it".
@test "another user's HOME (sudo without -H): their file is skipped with a warning, not 78" {
	[ "$(id -u)" = 0 ] || skip "chown needs root"
	local d w
	d=$(mktemp -d /tmp/rlock-conf.XXXXXX)
	chmod 755 "$d"
	mkdir -p "$d/alice/.config/rlock"
	conf "$d/alice/.config/rlock/rlock.conf" "prefix = alice:"
	chown -R nobody "$d/alice"
	unset XDG_CONFIG_HOME
	w="rlock: warning: skipping $d/alice/.config/rlock/rlock.conf: \$HOME is uid $(id -u nobody)'s, not yours (sudo without -H? su without -?); only your own file is read, or one given with --config FILE"
	HOME=$d/alice run -0 --separate-stderr "$RLOCK" -u "$LIVE" -k k -- \
		echo ran
	[ "$output" = ran ]
	[ "$stderr" = "$w" ] || fail "stderr: $stderr"
	HOME=$d/alice held_under rlock: -- -q -u "$LIVE"
	! HOME=$d/alice held_under alice: -- -q -u "$LIVE"
	# -q silences the warning, as any.
	HOME=$d/alice run -0 --separate-stderr "$RLOCK" -q -u "$LIVE" -k k -- \
		true
	[ -z "$stderr" ] || fail "stderr: $stderr"
	# Found through XDG_CONFIG_HOME: the same.
	XDG_CONFIG_HOME=$d/alice/.config run -0 --separate-stderr "$RLOCK" \
		-u "$LIVE" -k k -- true
	[[ $stderr == "rlock: warning: skipping $d/alice/.config/rlock/rlock.conf: \$XDG_CONFIG_HOME is uid "* ]] ||
		fail "stderr: $stderr"
	# Named on purpose, the file is used as the rule says: owned by
	# neither us nor root, 78.
	config_error "$d/alice/.config/rlock/rlock.conf: refused: owned by uid" \
		--config "$d/alice/.config/rlock/rlock.conf" -k k -- true
	# A user (nobody) under root's HOME that it cannot read (sudo -u
	# without -H): skipped, saying why.
	mkdir -p "$d/root/.config/rlock"
	conf "$d/root/.config/rlock/rlock.conf" "lease = 5x"
	chmod 700 "$d/root"
	export RLOCK_SYSCONFDIR=$d/nothing
	HOME=$d/root as_nobody -u "$CLOSED_URL" -k k -- true
	[ "$status" -eq 69 ] || fail "status $status: $stderr"
	[ "${stderr_lines[0]}" = "rlock: warning: skipping $d/root/.config/rlock/rlock.conf: Permission denied, and \$HOME is root's, not yours (sudo without -H? su without -?); only your own file is read, or one given with --config FILE" ] ||
		fail "stderr: $stderr"
	# A root-owned HOME it can read (a service user's) is read, as
	# root's files are: its line is refused (78), so it was read.
	chmod 755 "$d/root"
	HOME=$d/root as_nobody -u "$CLOSED_URL" -k k -- true
	[ "$status" -eq 78 ] || fail "status $status: $stderr"
	[[ $stderr == "rlock: $d/root/.config/rlock/rlock.conf:1: --lease"* ]] ||
		fail "stderr: $stderr"
	rm -rf "$d"
}

@test "78 before Redis is contacted: no connection reaches the server" {
	conf "$USR" "url = $LIVE" "lease = 5x"
	local before after
	before=$(redis-cli -s "$REDIS_SOCK" info stats |
		sed -n 's/^total_connections_received:\([0-9]*\).*/\1/p')
	run -78 --separate-stderr "$RLOCK" -k k -- true
	run -78 --separate-stderr "$RLOCK" status k
	after=$(redis-cli -s "$REDIS_SOCK" info stats |
		sed -n 's/^total_connections_received:\([0-9]*\).*/\1/p')
	# One connection: the second redis-cli's own.
	[ "$after" -eq $((before + 1)) ] || fail "$before -> $after"
}

@test "every mode reads the files: run, status, list, release" {
	conf "$USR" "prefix = m:"
	held_under m: -- -u "$LIVE"
	"$RLOCK" -u "$LIVE" -k k -- "$RLOCK" -u "$LIVE" status k
	"$RLOCK" -u "$LIVE" --prefix m: -k k -- "$RLOCK" -u "$LIVE" list |
		grep -q '^k' ||
		fail "list did not use the file's prefix"
	run -1 --separate-stderr "$RLOCK" -u "$LIVE" release --force k
	conf "$USR" "lease = 5x"
	config_error "$USR:1:" -k k -- true
	config_error "$USR:1:" status k
	config_error "$USR:1:" list
	config_error "$USR:1:" release --force k
	# --config after the subcommand word, as the other connection
	# options may be.
	local c=$BATS_TEST_TMPDIR/c.conf
	conf "$c" "on-lost = x"
	config_error "$c:1:" status --config "$c" k
	config_error "$c:1:" --config "$c" list
}

@test "--help and --version do not read the files" {
	conf "$USR" "lease = 5x"
	run -0 --separate-stderr "$RLOCK" --help
	[ -z "$stderr" ]
	run -0 --separate-stderr "$RLOCK" --version
	[ -z "$stderr" ]
}

@test "rlock.conf(5)'s example file reads as it says" {
	local man=$BATS_TEST_DIRNAME/../man/rlock.conf.5
	awk '/^A fleet.s system file:/ { on = 1; next }
	    on && /^\.Bd/ { next } on && /^\.Ed/ { exit } on' "$man" > "$USR"
	chmod 644 "$USR"
	grep -q '^url = rediss://' "$USR" || fail "$(cat "$USR")"
	# Its password-file and CA file are not on this machine: with the
	# environment's password and a plain URL neither is read, and the
	# file's lines all pass (69: Redis was contacted).
	RLOCK_PASSWORD=x RLOCK_URL=$CLOSED_URL run -69 --separate-stderr \
		"$RLOCK" -v -k k -- true
	[[ $stderr == *"read the configuration file $USR"* ]] || fail "$stderr"
	# With the file's own rediss:// URL, its CA file is needed.
	unset RLOCK_URL
	RLOCK_PASSWORD=x run -78 --separate-stderr "$RLOCK" -k k -- true
	[[ $stderr == "rlock: $USR:3: cannot read tls-cacert"* ]] ||
		fail "$stderr"
}
