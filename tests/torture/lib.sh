# lib.sh: shell functions for tests/torture/run.sh (bash). Everything lives
# in $TR_ROOT (a temp dir); every process we start is stopped by its PID,
# after checking that the PID is still what we started. Every wait is
# bounded. Nothing here uses pkill or killall.

: "${TR_ROOT:?}" "${RLOCK:?}" "${STAMP:?}"
TR_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# is_our PID WORD: PID is alive and its command line mentions WORD (a
# guard against PID reuse before we signal it).
is_our() {
	[ -n "$1" ] && [ -r /proc/"$1"/cmdline ] &&
		tr '\0' ' ' < /proc/"$1"/cmdline 2>/dev/null | grep -qF -- "$2"
}

# alive PID: exists and is not a zombie.
alive() {
	local st
	read -r st 2>/dev/null < /proc/"$1"/stat || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

# wait_gone MS PID...: wait until all PIDs are gone; 1 if some remain.
wait_gone() {
	local end=$(( $(now_ms) + $1 )) p left
	shift
	while :; do
		left=0
		for p in "$@"; do alive "$p" && left=1; done
		[ $left = 0 ] && return 0
		[ "$(now_ms)" -lt "$end" ] || return 1
		sleep 0.02
	done
}

# ------------------------------------------------------------ redis-server

# redis_start NAME [redis-server args...]: a private server in
# $TR_ROOT/NAME on a free loopback port and a unix socket. The args are
# kept for redis_restart.
redis_start() {
	local name=$1 dir=$TR_ROOT/$1 port
	shift
	mkdir -p "$dir"
	: > "$dir/args"
	[ $# = 0 ] || printf '%s\n' "$@" > "$dir/args"
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		port=$(( (RANDOM << 1 | RANDOM & 1) % 30000 + 20000 ))
		echo "$port" > "$dir/port"
		redis_spawn "$name" && return 0
	done
	echo "torture: could not start redis-server $name" >&2
	return 1
}

redis_spawn() {
	local name=$1 dir=$TR_ROOT/$1 i args=()
	mapfile -t args < "$dir/args"
	rm -f "$dir/pid"
	redis-server --port "$(cat "$dir/port")" --bind 127.0.0.1 \
		--unixsocket "$dir/redis.sock" --unixsocketperm 700 \
		--dir "$dir" --daemonize yes --pidfile "$dir/pid" \
		--logfile "$dir/log" --save '' --appendonly no \
		"${args[@]}" || return 1
	for i in $(seq 1 300); do
		redis-cli -s "$dir/redis.sock" ping 2>/dev/null | grep -q PONG &&
			return 0
		sleep 0.01
	done
	return 1
}

redis_pid() { cat "$TR_ROOT/$1/pid" 2>/dev/null; }
redis_port() { cat "$TR_ROOT/$1/port"; }
redis_sock() { echo "$TR_ROOT/$1/redis.sock"; }
rcli() { local n=$1; shift; timeout 10 redis-cli -s "$(redis_sock "$n")" "$@"; }

# redis_stop NAME [SIG]: stop by PID (SIGTERM: a clean shutdown; KILL: a
# crash), continuing it first if it was stopped; wait until it is gone.
redis_stop() {
	local name=$1 sig=${2:-TERM} pid
	pid=$(redis_pid "$name")
	is_our "$pid" redis-server || return 0
	kill -"$sig" "$pid" 2>/dev/null
	[ "$sig" = KILL ] || kill -CONT "$pid" 2>/dev/null
	if ! wait_gone 10000 "$pid"; then
		kill -KILL "$pid" 2>/dev/null
		wait_gone 5000 "$pid"
	fi
	rm -f "$TR_ROOT/$name/pid"
}

# redis_restart NAME SIG: stop (SIG) and start again on the same port,
# socket, dir and args; persistence, if any, is in the args.
redis_restart() {
	redis_stop "$1" "$2"
	redis_spawn "$1"
}

# keys_without_ttl NAME: print every key that has no expiry (must be none).
keys_without_ttl() {
	local k
	rcli "$1" --scan | while IFS= read -r k; do
		[ "$(rcli "$1" pttl "$k")" = -1 ] && printf '%s\n' "$k"
	done
	return 0
}

# ------------------------------------------------------------ the proxy

proxy_start() { # NAME LISTEN_PORT UPSTREAM_PORT
	local dir=$TR_ROOT/$1 i
	mkdir -p "$dir"
	rm -f "$dir/pid"
	python3 "$TR_HERE/proxy.py" "$2" "$3" "$dir/pid" 2>>"$dir/log" &
	for i in $(seq 1 200); do
		[ -s "$dir/pid" ] && return 0
		sleep 0.02
	done
	return 1
}

proxy_signal() { # NAME SIG
	local pid
	pid=$(cat "$TR_ROOT/$1/pid" 2>/dev/null)
	is_our "$pid" proxy.py && kill -"$2" "$pid"
}

proxy_stop() {
	local pid
	pid=$(cat "$TR_ROOT/$1/pid" 2>/dev/null)
	is_our "$pid" proxy.py || return 0
	kill "$pid"
	wait_gone 5000 "$pid" || kill -KILL "$pid"
}

# ------------------------------------------------------------ workers

# Set by each scenario before workers_start:
#   SC        the scenario's dir (log, pids, stderr)
#   KEY       the lock name
#   URLS      array: worker i uses ${URLS[i % ${#URLS[@]}]}
#   WARGS     array: rlock options for every worker
#   FAIR_EVERY  every Nth worker adds --fair (0: none)
#   SECTION_MS  "MIN MAX" for the section length
#   LONG_PCT    percent of sections drawn from LONG_MS "MIN MAX" instead:
#               long enough to be running when a fault costs the lease
#   SECTIONS=1  the section is a script's: a sh takes the lock with
#               `rlock lock --export`, runs it, and gives it back with
#               `rlock unlock` (even sections) or by ending (odd ones)
#   ORDER_STAMP 1: each --fair rlock's RLOCK_TRACE goes to a file of its
#               worker, and the worker copies its `queued` event (when it
#               had its place in the queue) to the log as one of its own,
#               for check.py --order (with LAUNCH_STAMP=1)
WORKERS=${WORKERS:-16}

# The worker's sh under SECTIONS=1; "$@" are rlock's options.
# shellcheck disable=SC2016
SECTION_SH='v=$("$RLOCK" lock --export -u "$U" -k "$K" "$@") || exit
eval "$v"
"$STAMP" "$LOG" section "$MS" || exit
[ $((MS % 2)) = 1 ] || "$RLOCK" unlock -k "$K"'

worker() { # I
	local i=$1 n=0 pid rc ms url args trace=
	local min=${SECTION_MS% *} max=${SECTION_MS#* }
	url=${URLS[i % ${#URLS[@]}]}
	args=("${WARGS[@]}")
	if [ "${FAIR_EVERY:-0}" -gt 0 ] && [ $((i % FAIR_EVERY)) = 0 ]; then
		args+=(--fair)
		[ "${ORDER_STAMP:-0}" = 1 ] && trace=$SC/trace.w$i
	fi
	while [ ! -e "$SC/stop" ]; do
		n=$((n + 1))
		ms=$(( min + RANDOM % (max - min + 1) ))
		if [ $((RANDOM % 100)) -lt "${LONG_PCT:-0}" ]; then
			ms=$(( ${LONG_MS% *} + RANDOM % (${LONG_MS#* } - ${LONG_MS% *} + 1) ))
		fi
		[ "${LAUNCH_STAMP:-0}" = 1 ] &&
			TORTURE_ID=w$i.$n "$STAMP" "$SC/log" launch
		[ -z "$trace" ] || : > "$trace"
		if [ "${SECTIONS:-0}" = 1 ]; then
			TORTURE_ID=w$i.$n U=$url K=$KEY LOG=$SC/log MS=$ms \
				RLOCK_TRACE=$trace sh -c "$SECTION_SH" sh \
				"${args[@]}" 2>>"$SC/err/w$i" &
		else
			TORTURE_ID=w$i.$n RLOCK_TRACE=$trace "$RLOCK" -u "$url" \
				-k "$KEY" "${args[@]}" \
				-- "$STAMP" "$SC/log" section "$ms" 2>>"$SC/err/w$i" &
		fi
		pid=$!
		echo "$pid" > "$SC/pids/w$i"
		wait "$pid"
		rc=$?
		TORTURE_ID=w$i.$n "$STAMP" "$SC/log" exit "$rc"
		# "queued NS PID" (rlock's clock is stamp's) as "queued NS - ID".
		[ -z "$trace" ] || awk -v id="w$i.$n" '$1 == "queued" {
			print "queued", $2, "-", id; exit }' "$trace" >> "$SC/log"
		# A refused connection returns at once: do not spin on it.
		case $rc in 69|75|76) sleep 0.0$((RANDOM % 5 + 1)) ;; esac
	done
}

workers_start() {
	local i
	mkdir -p "$SC/pids" "$SC/err"
	rm -f "$SC/stop"
	: > "$SC/workers"
	for i in $(seq 0 $((WORKERS - 1))); do
		# (bash reports each SIGKILLed rlock on the loop's stderr)
		worker "$i" 2>>"$SC/worker-stderr" &
		echo $! >> "$SC/workers"
	done
}

# workers_stop: ask the loops to end and wait (bounded). A loop still
# there after the bound is a hang: report it, then kill by PID.
workers_stop() {
	local w p hung=0
	touch "$SC/stop"
	# shellcheck disable=SC2046,SC2013
	if ! wait_gone 30000 $(cat "$SC/workers"); then
		hung=1
		echo "  HANG: worker loops still running 30 s after stop:" >&2
		for p in "$SC"/pids/w*; do
			p=$(cat "$p")
			if alive "$p"; then
				ps -o pid,stat,etime,args -p "$p" >&2
				ps -o pid,stat,etime,args --ppid "$p" >&2
			fi
		done
		for p in "$SC"/pids/w*; do
			p=$(cat "$p")
			is_rlock "$p" && kill -KILL "$p"
		done
		# shellcheck disable=SC2013
		for w in $(cat "$SC/workers"); do
			alive "$w" && kill -KILL "$w"
		done
	fi
	# shellcheck disable=SC2013
	for w in $(cat "$SC/workers"); do wait "$w" 2>/dev/null; done
	echo "$hung" > "$SC/hung"
	return $hung
}

# is_rlock PID: PID runs our $RLOCK binary (builtins only: this is on the
# injector's hot path, where a fork costs the race).
is_rlock() { [ -n "$1" ] && [ /proc/"$1"/exe -ef "$RLOCK" ]; }

# rlock_pids [holder|waiter|any]: the worker rlock processes now alive, of
# that kind (a holder is one with a child: its COMMAND).
rlock_pids() {
	local f p kind=${1:-any} kids
	for f in "$SC"/pids/w*; do
		read -r p 2>/dev/null < "$f" || continue
		is_rlock "$p" || continue
		kids=
		read -r kids 2>/dev/null < /proc/"$p"/task/"$p"/children
		case $kind in
		holder) [ -n "$kids" ] || continue ;;
		waiter) [ -z "$kids" ] || continue ;;
		esac
		echo "$p"
	done
}

pick() { # WORDS...: one at random
	[ $# -gt 0 ] || return 1
	shift $((RANDOM % $#))
	echo "$1"
}

# section_env PID VAR: VAR from the environment of rlock PID's COMMAND.
section_env() {
	local kid
	kid=$(cat /proc/"$1"/task/"$1"/children 2>/dev/null)
	kid=${kid%% *}
	[ -n "$kid" ] || return 1
	tr '\0' '\n' < /proc/"$kid"/environ 2>/dev/null |
		sed -n "s/^$2=//p"
}

fault() { # WHAT...: one injected fault, in the log
	"$STAMP" "$SC/log" fault "$(echo "$*" | tr ' ' '_')"
}

# freeze_holder MS: SIGSTOP one holding rlock (not its COMMAND) for MS;
# its section is marked `frozen` for the checker. Prints the PID.
freeze_holder() {
	local p id fence
	# shellcheck disable=SC2046
	p=$(pick $(rlock_pids holder)) || return 1
	is_rlock "$p" && kill -STOP "$p" || return 1
	id=$(section_env "$p" TORTURE_ID)
	fence=$(section_env "$p" RLOCK_FENCE)
	[ -n "$id" ] && TORTURE_ID=$id RLOCK_FENCE=$fence \
		"$STAMP" "$SC/log" frozen
	fault "SIGSTOP rlock holder $p (${id:-?}) for ${1}ms"
	sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"
	kill -CONT "$p" 2>/dev/null
	echo "$p"
}

msleep() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
