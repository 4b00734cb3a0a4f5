# helper.bash: shared set-up for the bats suite. Each file gets its own
# redis-server (unix socket in a temp dir, plus a free loopback TCP port),
# started by the harness and stopped by PID. Nothing here uses pkill.
bats_require_minimum_version 1.5.0
# bats loads this file again for every test, and the libraries' load.bash
# find their parts with one $(dirname) per part: 15 forks, a third of a
# short test's time on a 2-core machine. So their parts are sourced from
# the load.bash lines, without the forks (the load.bash itself when it
# does not read as expected).
_load_lib() {
	local line n=0
	while IFS= read -r line; do
		[[ $line =~ ^source\ \"\$\(dirname\ \"\$\{BASH_SOURCE\[0\]\}\"\)/([a-z_/]+\.bash)\"$ ]] ||
			continue
		# shellcheck disable=SC1090
		source "$1/${BASH_REMATCH[1]}" || return 1
		n=$((n + 1))
	done < "$1/load.bash"
	[ "$n" -gt 0 ] || load "$1/load.bash"
}
_load_lib /usr/lib/bats/bats-support
_load_lib /usr/lib/bats/bats-assert

: "${RLOCK:?set RLOCK to the rlock binary}"

# Under `make valgrind` every rlock takes about a second more to start and
# is several times slower at whatever it does. The durations tests wait for,
# bound or give rlock (a lease, a timeout) are scaled by TIME_FACTOR: 1, or
# 5 under valgrind; the environment may set it (a number, fraction allowed).
# Within a test they scale together, so a window stays the same fraction
# of the lease or timeout it is measured against.
if [ -z "${TIME_FACTOR:-}" ]; then
	TIME_FACTOR=1
	[ -z "${RLOCK_UNDER_VALGRIND:-}" ] || TIME_FACTOR=5
fi
if ! [[ $TIME_FACTOR =~ ^[0-9]*\.?[0-9]+$ && $TIME_FACTOR =~ [1-9] ]]; then
	echo "TIME_FACTOR must be a positive number, not '$TIME_FACTOR'" >&2
	exit 1
fi

# _milli DECIMAL: DECIMAL (2, 0.25, .5) in thousandths, rounded down.
_milli() {
	local i=${1%%.*} f=000
	[[ $1 != *.* ]] || f=${1#*.}000
	echo $(( 10#${i:-0} * 1000 + 10#${f:0:3} ))
}
# (Without a subshell: this runs again for every test.)
_i=${TIME_FACTOR%%.*} _f=000
[[ $TIME_FACTOR != *.* ]] || _f=${TIME_FACTOR#*.}000
TF_MILLI=$(( 10#${_i:-0} * 1000 + 10#${_f:0:3} ))
unset _i _f

# tf_ms MS: MS (a whole number) scaled by TIME_FACTOR, in whole ms.
tf_ms() { echo $(( ($1 * TF_MILLI + 500) / 1000 )); }

# tf SECONDS: SECONDS (fraction allowed) scaled, in seconds, as timeout(1),
# sleep(1) and rlock's DUR take them: tf 0.3 is 0.3, or 1.5 under valgrind.
tf() {
	local ms s
	ms=$(tf_ms "$(_milli "$1")")
	s=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
	s=${s%0}
	s=${s%0}
	s=${s%0}
	echo "${s%.}"
}

# dur_text MS: a duration of less than a minute as rlock's messages give
# it (500ms, 2.5s), for messages about a scaled one.
dur_text() {
	if [ "$1" -lt 1000 ]; then
		echo "${1}ms"
	else
		echo "$(($1 / 1000)).$(($1 % 1000 / 100))s"
	fi
}

BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-$(( (90 * TF_MILLI + 999) / 1000 ))}
# The environment of the developer's shell must not leak into tests.
unset RLOCK_URL REDIS_URL RLOCK_PASSWORD REDISCLI_AUTH RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE \
	RLOCK_TLS_CACERT RLOCK_TLS_CERT RLOCK_TLS_KEY
# Nor the machine's /etc/rlock.conf (conffile.bats writes its own).
unset RLOCK_CONFIG
export RLOCK_SYSCONFDIR=/nonexistent/rlock-tests

# own_port N: N moved into this file's class of ports. tests/run-bats
# gives each of its parallel workers the ports P with
# P % RLOCK_TEST_PORTS_MOD == RLOCK_TEST_PORTS_REM, so a port picked here
# (for a server, or to stay closed) is one no other file running at the
# same time picks.
own_port() {
	local m=${RLOCK_TEST_PORTS_MOD:-1}
	echo $(( $1 - $1 % m + ${RLOCK_TEST_PORTS_REM:-0} ))
}

# closed_port BASE SPAN: print a loopback port of this file's class, from
# BASE to BASE+SPAN, where nothing listens now (a port to stay closed, or
# one for a server the test starts). Below 32768 no outgoing connection
# holds it (the ephemeral range here is 32768-60999).
closed_port() {
	local p
	for p in $(seq 1 50); do
		p=$(own_port $(( (RANDOM % $2) + $1 )))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# redis_start NAME [redis-server args...]: start a server in
# $BATS_FILE_TMPDIR/NAME; sets and exports REDIS_SOCK, REDIS_PORT,
# REDIS_PIDFILE and RLOCK_URL (the unix socket).
redis_start() {
	local name=$1 dir port try
	shift
	dir=$BATS_FILE_TMPDIR/$name
	mkdir -p "$dir"
	for try in 1 2 3 4 5 6 7 8 9 10; do
		port=$(own_port $(( (RANDOM << 1 | RANDOM & 1) % 30000 + 20000 )))
		rm -f "$dir/pid" "$dir/log"
		redis-server --port "$port" --bind 127.0.0.1 \
			--unixsocket "$dir/redis.sock" --unixsocketperm 700 \
			--save '' --appendonly no --dir "$dir" \
			--daemonize yes --pidfile "$dir/pid" --logfile "$dir/log" \
			"$@" || continue
		if redis_wait_up "$dir/redis.sock"; then
			export REDIS_SOCK=$dir/redis.sock REDIS_PORT=$port
			export REDIS_PIDFILE=$dir/pid
			export RLOCK_URL=unix://$REDIS_SOCK
			return 0
		fi
		redis_stop_dir "$dir"
	done
	echo "could not start redis-server" >&2
	return 1
}

redis_wait_up() { # SOCK
	local i
	for i in $(seq 1 100); do
		# NOAUTH also proves the server is up (a --requirepass server).
		redis-cli -s "$1" ping 2>/dev/null | grep -qE 'PONG|NOAUTH' && return 0
		nap 0.05
	done
	return 1
}

# Stop the server whose pidfile is in DIR, by PID, and wait until it is gone.
redis_stop_dir() {
	local dir=$1 pid i
	[ -f "$dir/pid" ] || return 0
	pid=$(cat "$dir/pid")
	# Only if that PID is still a redis-server (PID reuse guard).
	grep -q redis /proc/"$pid"/cmdline 2>/dev/null || return 0
	kill "$pid" 2>/dev/null
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		nap 0.05
	done
	kill -9 "$pid" 2>/dev/null
}

redis_stop() { redis_stop_dir "$BATS_FILE_TMPDIR/${1:-main}"; }

rcli() { redis-cli -s "$REDIS_SOCK" "$@"; }

# blocked [N]: at least N (default 1) waiters wait on the test's server:
# blocked in a BLPOP on wake tokens, or subscribed (--fair), not counting
# a holder's own listener (named rlock-holder).
blocked() {
	[ "$(rcli client list | grep -v ' name=rlock-holder ' |
	    grep -cE ' flags=[a-zA-Z]*b| cmd=s?subscribe ')" -ge "${1:-1}" ]
}

# wait_until SECONDS COMMAND...: poll COMMAND every 20 ms until it succeeds;
# fail after SECONDS (fraction allowed) times TIME_FACTOR. The only way
# tests wait for something to happen.
wait_until() {
	local end
	end=$(( $(now_ms) + $(tf_ms "$(_milli "$1")") ))
	shift
	until "$@"; do
		_now
		[ "$_NOW_MS" -lt "$end" ] || return 1
		nap 0.02
	done
}

# Keys rlock left in Redis that have no expiry (must always be none), in
# one round trip (tests/no_ttl.lua); an error is printed, so checks fail.
IFS= read -r -d '' NO_TTL_LUA < "${BASH_SOURCE[0]%/*}/no_ttl.lua" || true
keys_without_ttl() {
	rcli --raw eval_ro "$NO_TTL_LUA" 0 2>&1 | sed '/^$/d'
	return 0
}

# Bash's own clock (the one date(1) reads): the wait loops call this every
# 10-20 ms, and a date(1) process each time was most of the suite's CPU.
# nap SECONDS: sleep(1) without a fork, for the poll loops, which run it
# thousands of times in a suite: a read that times out on a FIFO nobody
# writes to (opened read-write, so the open does not block either).
nap() {
	local fifo=${BATS_FILE_TMPDIR:-${BATS_RUN_TMPDIR:-/tmp}}/.nap
	[ -p "$fifo" ] || mkfifo "$fifo" 2>/dev/null || [ -p "$fifo" ] ||
		{ sleep "$1"; return 0; }
	read -r -t "$1" _ <> "$fifo" || true
}

now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $(( t / 1000 )); }
# _now: the same into _NOW_MS, without even a subshell (for the poll loops).
_now() { local t=${EPOCHREALTIME/[.,]/}; _NOW_MS=$(( t / 1000 )); }

# redis_restart [-9] [NAME [redis-server args...]]: restart NAME's server
# on the same socket, port and dir, without persistence (its data is lost).
# Stopped by PID with SIGTERM (a clean shutdown), or SIGKILL with -9 (a
# crash; also works on a SIGSTOPped server). Returns when it answers PING.
redis_restart() {
	local sig=TERM name dir pid i
	if [ "${1:-}" = -9 ]; then
		sig=KILL
		shift
	fi
	name=${1:-main}
	[ $# -gt 0 ] && shift
	dir=$BATS_FILE_TMPDIR/$name
	pid=$(cat "$dir/pid" 2>/dev/null)
	if [ -n "$pid" ] && grep -q redis /proc/"$pid"/cmdline 2>/dev/null; then
		kill -"$sig" "$pid" 2>/dev/null
		[ "$sig" = KILL ] || kill -CONT "$pid" 2>/dev/null
		for i in $(seq 1 200); do
			proc_alive "$pid" || break
			nap 0.01
		done
		proc_alive "$pid" && return 1
	fi
	rm -f "$dir/pid"
	redis-server --port "$REDIS_PORT" --bind 127.0.0.1 \
		--unixsocket "$dir/redis.sock" --unixsocketperm 700 \
		--save '' --appendonly no --dir "$dir" \
		--daemonize yes --pidfile "$dir/pid" --logfile "$dir/log" \
		"$@" || return 1
	for i in $(seq 1 500); do
		redis-cli -s "$dir/redis.sock" ping 2>/dev/null | grep -q PONG &&
			return 0
		nap 0.01
	done
	return 1
}

# proc_alive PID: PID exists and is not a zombie (a killed child that its
# parent has not reaped yet counts as gone).
proc_alive() {
	local st
	read -r st 2>/dev/null < /proc/"$1"/stat || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

# pid_gone PID: PID has exited (a zombie its parent has not reaped yet
# counts as gone).
pid_gone() { ! proc_alive "$1"; }

# reap PID MS: wait at most MS (scaled) for PID, a child of this shell, to
# end; its exit status in $RC.
reap() {
	wait_ms "$2" pid_gone "$1" || fail "pid $1 still runs after $2 ms"
	RC=0
	wait "$1" || RC=$?
}

# held KEY [NAME]: the lock on KEY is held (rlock:{KEY} exists) on NAME's
# server (redis_start NAME), by default the one $REDIS_SOCK names.
held() {
	local sock=$REDIS_SOCK
	[ $# -lt 2 ] || sock=$BATS_FILE_TMPDIR/$2/redis.sock
	[ "$(redis-cli -s "$sock" exists "rlock:{$1}")" = 1 ]
}

# lock_gone KEY: rlock:{KEY} does not exist (released, or its lease ran
# out); its holder record may still be there.
lock_gone() { [ "$(rcli exists "rlock:{$1}")" = 0 ]; }

# released KEY: neither rlock:{KEY} nor its holder record
# rlock:{KEY}:meta exists, as a release leaves them.
released() { [ "$(rcli exists "rlock:{$1}" "rlock:{$1}:meta")" = 0 ]; }

# wait_ms MS COMMAND...: like wait_until (MS scaled too), in milliseconds,
# polling every 10 ms.
wait_ms() {
	local end=$(( $(now_ms) + $(tf_ms "$1") ))
	shift
	until "$@"; do
		_now
		[ "$_NOW_MS" -lt "$end" ] || return 1
		nap 0.01
	done
}

# The unset at the top runs again when each test loads this file, after
# setup_file's redis_start exported RLOCK_URL: give it back its value.
if [ -n "${REDIS_SOCK:-}" ]; then
	export RLOCK_URL=unix://$REDIS_SOCK
fi

# Under `make valgrind` $RLOCK is a memcheck wrapper: valgrind adds its own
# variables to COMMAND's environment, keeps fds of its own open, and its
# command line (what ps shows) is not the one rlock scrubs.
under_valgrind() { [ -n "${RLOCK_UNDER_VALGRIND:-}" ]; }
# skip_under_valgrind WHY: for what cannot work under valgrind at all.
skip_under_valgrind() {
	! under_valgrind || skip "under valgrind: $1"
}

# usage_error REGEX RLOCK-ARGS...: rlock exits 64 with exactly two lines on
# stderr, "rlock: " + REGEX and the Try line, nothing on stdout, and does
# so even when Redis is unreachable ($CLOSED_URL, set by the calling file:
# usage errors are said before any connection).
usage_error() {
	local re=$1
	shift
	RLOCK_URL=$CLOSED_URL run -64 --separate-stderr "$RLOCK" "$@"
	[ -z "$output" ] || fail "stdout: $output"
	[ "${#stderr_lines[@]}" -eq 2 ] || fail "stderr: $stderr"
	[[ ${stderr_lines[0]} =~ ^rlock:\ .*$re ]] ||
		fail "first line: ${stderr_lines[0]} (want $re)"
	[ "${stderr_lines[1]}" = "Try 'rlock --help' for more information." ] ||
		fail "second line: ${stderr_lines[1]}"
}

# per_test PREFIX: for a setup. One test's names: K its key (PREFIX and
# the test's number), L that key in Redis, T its directory (exported:
# the COMMAND scripts written there read it), PIDS its background
# processes (empty), which end_test_procs stops.
per_test() {
	K=$1$BATS_TEST_NUMBER
	L="rlock:{$K}"
	T=$BATS_TEST_TMPDIR
	export T
	PIDS=()
}

# bg NAME RLOCK-ARGS...: rlock in the background, stdout and stderr in
# $T/NAME.out and $T/NAME.err; its pid in $BG, and in PIDS.
bg() {
	local name=$1
	shift
	"$RLOCK" "$@" > "$T/$name.out" 2> "$T/$name.err" 3>&- &
	BG=$!
	PIDS+=("$BG")
}

# closed_url: for a setup_file. CLOSED_URL, exported, is a loopback
# port where nothing listens: contacting Redis there fails with 69, so
# another status proves its cause came before any contact.
closed_url() {
	local p
	p=$(closed_port 40000 20000) || return 1
	export CLOSED_URL=redis://127.0.0.1:$p
}

# stop_bg PID...: for a teardown. SIGTERM to each process, then wait for
# each (children of the test's shell), whatever their status.
stop_bg() {
	local p
	for p in "$@"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "$@"; do
		wait "$p" 2>/dev/null || true
	done
}

# end_test_procs: for a teardown. Let go what waits for $T/go, then
# SIGKILL every process in PIDS and in $T/*.pid that still runs (woken
# first from a SIGSTOP).
end_test_procs() {
	local p f
	touch "$T/go"
	for f in "$T"/*.pid; do
		[ -s "$f" ] && PIDS+=("$(cat "$f")")
	done
	for p in "${PIDS[@]}"; do
		kill -CONT "$p" 2>/dev/null
		proc_alive "$p" && kill -KILL "$p" 2>/dev/null
	done
	return 0
}

# blocked_is N: N clients of the file's server are blocked (BLPOP, a
# subscription's wait), not counting a holder that listens for a
# release --force (its connection is named rlock-holder).
blocked_is() {
	[ "$(rcli client list | grep ' flags=[a-zA-Z]*b' |
	    grep -cv ' name=rlock-holder ')" = "$1" ]
}
