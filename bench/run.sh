#!/bin/bash
# run.sh RLOCK: rlock's benchmark against its own private redis-server.
# Prints one table: uncontended overhead against flock(1), hand-off latency
# with 10 and 100 waiters (fair and not) against flock's for the same
# workload, Redis commands per blocked waiter per second, the peak RSS of a
# holding rlock, and 1000 waiters served exactly once (in order if --fair).
set -u
RLOCK=$1
top=$(cd "$(dirname "$0")/.." && pwd)
B=$top/build
RUNS=${BENCH_RUNS:-100}
ROUNDS_10=${BENCH_ROUNDS_10:-60}
ROUNDS_100=${BENCH_ROUNDS_100:-10}
BLOCK_S=${BENCH_BLOCK_SECONDS:-10}
MANY=${BENCH_MANY:-1000}
D=$(mktemp -d /tmp/rlock-bench.XXXXXX)

cc -O2 -o "$B/section" "$top/bench/section.c" || exit 1
cc -O2 -o "$B/timeit" "$top/bench/timeit.c" || exit 1

cleanup() {
	local p
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	if [ -f "$D/pid" ] && grep -q redis "/proc/$(cat "$D/pid")/cmdline" 2>/dev/null; then
		p=$(cat "$D/pid")
		kill "$p"
		# It writes its last log lines into $D as it exits.
		for _ in $(seq 200); do [ -d "/proc/$p" ] || break; sleep 0.01; done
	fi
	rm -rf "$D"
}
trap cleanup EXIT
# 1000 waiters hold 2000 connections: Redis sizes maxclients by our limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
redis-server --port 0 --unixsocket "$D/r.sock" --save '' --appendonly no \
	--maxclients 10000 --daemonize yes --pidfile "$D/pid" \
	--logfile "$D/log" || exit 1
export RLOCK_URL=unix://$D/r.sock
rc() { redis-cli -s "$D/r.sock" "$@"; }
for i in $(seq 100); do rc ping >/dev/null 2>&1 && break; sleep 0.05; done

# Predicates are functions, so every poll asks Redis again.
key_exists() { [ "$(rc exists "$1")" = 1 ]; }
qlen_at_least() { [ "$(rc llen "$1")" -ge "$2" ]; }
blocked_at_least() { [ "$(blocked)" -ge "$1" ]; }

until_true() { # SECONDS CMD...: poll CMD until it succeeds
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || { echo "bench: timed out: $*" >&2; return 1; }
		sleep 0.01
	done
}
row() { printf '%-52s %s\n' "$1" "$2"; }
blocked() { rc info clients | sed -n 's/^blocked_clients:\([0-9]*\).*/\1/p'; }
commands() { rc info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p'; }

echo "rlock benchmark ($(nproc) cores, $(redis-server --version | cut -d' ' -f3), unix socket)"
echo

# 1. Uncontended: RUNS runs each, in 5 interleaved batches; the median
# (and p90) of the batches' medians (and p90s).
for i in 1 2 3 4 5; do
	"$B/timeit" $((RUNS / 5)) "$RLOCK" -k bench-u -- true >>"$D/u.rlock" || exit 1
	"$B/timeit" $((RUNS / 5)) flock "$D/flockfile" true >>"$D/u.flock" || exit 1
done
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
r50=$(cut -d' ' -f1 "$D/u.rlock" | med); r90=$(cut -d' ' -f2 "$D/u.rlock" | med)
f50=$(cut -d' ' -f1 "$D/u.flock" | med); f90=$(cut -d' ' -f2 "$D/u.flock" | med)
row "uncontended rlock -k k -- true (median, p90)" "${r50} us, ${r90} us"
row "uncontended flock FILE true (median, p90)" "${f50} us, ${f90} us"
row "ratio rlock/flock (median)" "$(awk "BEGIN{printf \"%.2f\", $r50/$f50}")"

# Commands per uncontended run, from INFO commandstats: those the client
# sends (one round trip each: no command a script runs is among them) and
# those the scripts run. Each run on a KEY of its own, after a warm-up run
# that loads the scripts.
per_run() { # N RLOCK-ARGS... (after -k)
	local n=$1 i
	shift
	"$RLOCK" -k bench-c-warm "$@" >/dev/null 2>&1
	rc config resetstat >/dev/null
	for i in $(seq "$n"); do "$RLOCK" -k "bench-c-$i" "$@" >/dev/null 2>&1; done
	rc info commandstats | sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),.*/\1 \2/p' |
		awk -v n="$n" '
		$1 == "config|resetstat" { next }
		$1 ~ /^(eval|evalsha|ping|config\|get|auth|select|hello|info|client\|.*)$/ {
			top += $2; next }
		{ inner += $2 }
		END { printf "%.2f round trips, %.2f commands in scripts", top / n, inner / n }'
	rc flushdb >/dev/null
}
row "uncontended run: Redis commands (commandstats)" "$(per_run 50 -- true)"
row "  the same with --min-hold 1m" "$(per_run 50 --min-hold 1m -- true)"
echo

# 2. Hand-off: a gate holder, W waiters each holding 2 ms, then the gate
# opens. A round runs flock, rlock and rlock --fair back to back (in an
# order that rotates), so a busy moment of a shared machine hits all three
# alike; each figure is the median over the rounds, each ratio the median
# of the same-round ratios (handoff.py).
gate_holder() { # MODE-ARGS...: holds h until $D/go exists
	rm -f "$D/go"
	"$@" sh -c "until [ -e '$D/go' ]; do sleep 0.005; done" &
}
waiting_rlock() { # W FAIR
	if [ "$2" = 1 ]; then
		[ "$(rc llen 'rlock:{h}:q')" -ge "$1" ]
	else
		blocked_at_least "$1"
	fi
}
waiting_flock() { [ "$(grep -c -- '->' /proc/locks)" -ge "$1" ]; }

start_rlock_waiters() { # W FAIR OUT: W waiters queued or blocked on h
	local w=$1 fair=$2 out=$3 i
	gate_holder "$RLOCK" -k h --
	until_true 10 key_exists 'rlock:{h}' || return 1
	for i in $(seq "$w"); do
		RLOCK_TRACE=$out.trace "$RLOCK" $([ "$fair" = 1 ] && echo --fair) \
			-k h -- "$B/section" "$out.sec" 2 "w$i" &
	done
	until_true 60 waiting_rlock "$w" "$fair"
}
handoff_rlock() { # W FAIR OUT
	start_rlock_waiters "$@" || return 1
	touch "$D/go"
	wait
}
handoff_flock() { # W OUT
	local w=$1 i
	gate_holder flock "$D/flockfile"
	sleep 0.1
	for i in $(seq "$w"); do
		flock "$D/flockfile" "$B/section" "$2.sec" 2 "w$i" &
	done
	until_true 60 waiting_flock "$w" || return 1
	touch "$D/go"
	wait
}
# Redis traffic of W idle waiters (FAIR), over BLOCK_S seconds.
idle_traffic() { # W FAIR
	local c0 c1
	start_rlock_waiters "$1" "$2" "$D/idle" || return 1
	c0=$(commands); sleep "$BLOCK_S"; c1=$(commands)
	touch "$D/go"
	wait
	# One of those is our first INFO: a command is counted once it ran.
	awk "BEGIN{printf \"%.3f\", ($c1-$c0-1)/($1*$BLOCK_S)}"
}

mkdir "$D/h"
for w in 10 100; do
	rounds=$([ "$w" = 10 ] && echo "$ROUNDS_10" || echo "$ROUNDS_100")
	for r in $(seq "$rounds"); do
		for k in 0 1 2; do
			case $(( (r + k) % 3 )) in
			0) handoff_flock "$w" "$D/h/flock.$w.$r" ;;
			1) handoff_rlock "$w" 0 "$D/h/plain.$w.$r" ;;
			2) handoff_rlock "$w" 1 "$D/h/fair.$w.$r" ;;
			esac || exit 1
		done
	done
	while read -r c c50 c99 l50 l99 n nr o ratio lo hi; do
		case $c in
		flock)
			row "hand-off, $w waiters, flock: command p50/p99" \
			    "${c50} us / ${c99} us (n=$n, $nr rounds, overlaps=$o)"
			continue ;;
		plain) name=plain ;;
		fair) name=--fair ;;
		esac
		row "hand-off, $w waiters, rlock $name: lock p50/p99" "${l50} us / ${l99} us"
		row "hand-off, $w waiters, rlock $name: command p50/p99" \
		    "${c50} us / ${c99} us (n=$n, $nr rounds, overlaps=$o)"
		row "  rlock $name / flock, same round (median, min-max)" \
		    "${ratio}x (${lo}x-${hi}x)"
	done < <(python3 "$top/bench/handoff.py" "$D/h" "$w")
done
row "Redis commands per blocked waiter per second, plain" "$(idle_traffic 100 0) (100 waiters, ${BLOCK_S} s)"
row "Redis commands per blocked waiter per second, --fair" "$(idle_traffic 100 1) (100 waiters, ${BLOCK_S} s)"
echo

# 3. Peak RSS of a holding rlock (after a few renewals of a 300 ms lease).
"$RLOCK" -l 300ms -k rss -- sleep 1.5 &
rpid=$!
sleep 1.2
row "peak RSS of a holding rlock (VmHWM)" "$(awk '/VmHWM/{print $2" "$3}' "/proc/$rpid/status")"
wait "$rpid"
echo

# 4. MANY waiters on one KEY, each served exactly once (in order if --fair).
many() { # FAIR
	local fair=$1 i order=$D/order t0 t1
	rm -f "$order"
	gate_holder "$RLOCK" -k many --
	until_true 10 key_exists 'rlock:{many}' || return 1
	for i in $(seq "$MANY"); do
		if [ "$fair" = 1 ]; then
			"$RLOCK" --fair -k many -- sh -c "echo $i >> '$order'" &
			# Known arrival order: the next starts once this one queued.
			until_true 30 qlen_at_least 'rlock:{many}:q' "$i" || {
				touch "$D/go"; wait; return 1; }
		else
			"$RLOCK" -k many -- sh -c "echo $i >> '$order'" &
		fi
	done
	[ "$fair" = 1 ] || until_true 60 blocked_at_least "$MANY"
	t0=$(date +%s%N)
	touch "$D/go"
	wait
	t1=$(date +%s%N)
	local served uniq inorder left
	served=$(wc -l < "$order")
	uniq=$(sort -u "$order" | wc -l)
	inorder=$([ "$(cat "$order")" = "$(seq "$MANY")" ] && echo yes || echo no)
	left=$(rc --scan | grep -v -e ':fence$' -e ':last$' | wc -l)
	echo "$served $uniq $inorder $left $(( (t1 - t0) / 1000000 ))"
}
read -r s u o l ms < <(many 1 2>"$D/many.err")
row "$MANY --fair waiters: served / distinct / in order" "$s / $u / $o (keys left: $l, ${ms} ms, stderr lines: $(wc -l < "$D/many.err"))"
read -r s u o l ms < <(many 0 2>"$D/many.err")
row "$MANY plain waiters: served / distinct" "$s / $u (keys left: $l, ${ms} ms, stderr lines: $(wc -l < "$D/many.err"))"
