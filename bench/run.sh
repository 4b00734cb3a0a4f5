#!/bin/bash
# run.sh RLOCK: rlock's benchmark, every figure of issue 13's table in one
# run, each against what runs beside it in the same rounds:
#   flock(1)            the local limit (uncontended runs, hand-offs, RSS)
#   the seed protocol   bench/seed.c: one SET k token NX PX and one
#                       compare-and-delete EVAL, the least a Redis lock can
#                       do (wall time, round trips, Redis CPU, throughput)
#   one node            for Redlock on 5 masters
#   plain TCP           for TLS (bench/tls.sh, last)
# BASE=/path/to/old/rlock adds that binary as one more column wherever
# rlock runs, interleaved in the same rounds (old vs new).
# SHORT=1: few rounds of everything, to try the script (~1 minute); the
# figures are then rough. BENCH_* variables below set each count.
# Every server is private (unix socket or free loopback ports), stopped by
# PID. The machine's load average is printed with each section's figures:
# read a figure measured under load as such.
set -u
RLOCK=$1
BASE=${BASE:-}
top=$(cd "$(dirname "$0")/.." && pwd)
B=$top/build
S=${SHORT:-0}
pick() { [ "$S" = 1 ] && echo "$2" || echo "$1"; } # FULL SHORT
PAIRS=${BENCH_PAIRS:-$(pick 60 15)}
PHASE_RUNS=${BENCH_PHASE_RUNS:-$(pick 20 8)}
CPU_CYCLES=${BENCH_CPU_CYCLES:-$(pick 20 10)}
CPU_ROUNDS=${BENCH_CPU_ROUNDS:-$(pick 9 3)}
IR_CYCLES=${BENCH_IR_CYCLES:-$(pick 30 10)}
TPUT_MS=${BENCH_TPUT_MS:-$(pick 3000 1500)}
TPUT_ROUNDS=${BENCH_TPUT_ROUNDS:-$(pick 3 1)}
CLIENTS=${BENCH_CLIENTS:-32}
# More rounds than the 20 and 4 before: with those, two builds of the
# same code differed by 0.11 in one run's 100-waiter --fair ratio; with
# these, by up to 0.03 (10 waiters) and 0.09 (100) in two runs. A row
# this close to its target needs every round it can get.
ROUNDS_10=${BENCH_ROUNDS_10:-$(pick 30 4)}
ROUNDS_100=${BENCH_ROUNDS_100:-$(pick 8 1)}
# Each hand-off waiter's hold: a hold past 250 ms has its renewal thread
# listening for a release --force when COMMAND ends.
HOLD_MS=${BENCH_HOLD_MS:-2}
BLOCK_S=${BENCH_BLOCK_SECONDS:-$(pick 10 3)}
RSS_ROUNDS=${BENCH_RSS_ROUNDS:-$(pick 3 1)}
RL_PAIRS=${BENCH_REDLOCK_PAIRS:-$(pick 30 8)}
RL_ROUNDS=${BENCH_REDLOCK_ROUNDS:-$(pick 10 3)}
MANY=${BENCH_MANY:-$(pick 1000 0)}
HERD=${BENCH_HERD:-1000}
HERD_ROUNDS=${BENCH_HERD_ROUNDS:-$(pick 3 1)}
D=$(mktemp -d /tmp/rlock-bench.XXXXXX)
export TOPO_DIR=$D/topo

if [ -n "$BASE" ]; then
	if ! BASE=$(command -v "$BASE"); then
		echo "bench: no BASE binary" >&2
		exit 1
	fi
	BASE=$(readlink -f "$BASE")
fi
cleanup() {
	local p
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	[ -d "$TOPO_DIR" ] && topo_down >/dev/null 2>&1
	if [ -f "$D/pid" ] && grep -q redis "/proc/$(cat "$D/pid")/cmdline" 2>/dev/null; then
		p=$(cat "$D/pid")
		kill "$p"
		# It writes its last log lines into $D as it exits.
		for _ in $(seq 200); do [ -d "/proc/$p" ] || break; sleep 0.01; done
	fi
	# BENCH_KEEP=DIR keeps the hand-off's files (bench/handoff.py).
	[ -z "${BENCH_KEEP:-}" ] || [ ! -d "$D/h" ] || cp -r "$D/h" "$BENCH_KEEP"
	rm -rf "$D"
}
trap cleanup EXIT
build() { # OUT SRC [CC-ARGS...]
	local out=$1 src=$2
	shift 2
	cc -O2 -Wall -Wextra -o "$B/$out" "$top/bench/$src" "$@" || exit 1
}
build section section.c
build rounds rounds.c
build load load.c
build seed seed.c $(pkg-config --cflags hiredis 2>/dev/null) \
	$(pkg-config --libs hiredis 2>/dev/null || echo -lhiredis)
build phases.so phases.c -shared -fPIC -ldl
build fork fork.c
# shellcheck source=../tests/topology.bash
. "$top/tests/topology.bash"
# 1000 waiters hold 2000 connections: Redis sizes maxclients by our limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
redis-server --port 0 --unixsocket "$D/r.sock" --save '' --appendonly no \
	--maxclients 10000 --daemonize yes --pidfile "$D/pid" \
	--logfile "$D/log" || exit 1
SOCK=$D/r.sock
export RLOCK_URL=unix://$SOCK
rc() { redis-cli -s "$SOCK" "$@"; }
for _ in $(seq 100); do rc ping >/dev/null 2>&1 && break; sleep 0.05; done

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
row() { printf '%-58s %s\n' "$1" "$2"; }
blocked() { rc info clients | sed -n 's/^blocked_clients:\([0-9]*\).*/\1/p'; }
commands() { rc info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p'; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
section() { echo; echo "== $1 (load average $(loadavg); at ${SECONDS} s)"; }
# The figures of the closing table, by key; "old:KEY" for BASE's.
declare -A FIG
fig() { FIG[$1]=$2; } # KEY VALUE
x() { echo "${1}x"; }

declare -A TOP RT

# Warm up: each binary's scripts are loaded once, as on a server in use.
"$RLOCK" -k warm -- true && "$B/seed" "$SOCK" warm true || exit 1
[ -z "$BASE" ] || "$BASE" -k warm -- true || exit 1

# A login session, cron and systemd's User= set USER; without it rlock
# asks NSS for the holder's name (getpwuid): not the usual case.
if [ -z "${USER:-}${LOGNAME:-}" ]; then
	USER=$(id -un)
	export USER
	USER_NOTE="USER was unset: set to $USER, as a login session would"
fi
echo "rlock benchmark: $(nproc) cores, Redis $(redis-server --version | cut -d' ' -f3 | cut -d= -f2), unix socket"
echo "rlock: $RLOCK${BASE:+; old: $BASE}; $(uptime)"
[ "$S" = 1 ] && echo "SHORT=1: few rounds; rough figures"
[ -z "${USER_NOTE:-}" ] || echo "$USER_NOTE"

# ------------------------------------------------------------ waiters
gate_holder() { # MODE-ARGS...: holds until $D/go exists
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

start_rlock_waiters() { # BIN W FAIR OUT: W waiters queued or blocked on h
	local bin=$1 w=$2 fair=$3 out=$4 i
	gate_holder "$bin" -k h --
	until_true 10 key_exists 'rlock:{h}' || return 1
	for i in $(seq "$w"); do
		RLOCK_TRACE=$out.trace "$bin" $([ "$fair" = 1 ] && echo --fair) \
			-k h -- "$B/section" "$out.sec" "$HOLD_MS" "w$i" &
	done
	until_true 60 waiting_rlock "$w" "$fair"
}
handoff_rlock() { # BIN W FAIR OUT
	start_rlock_waiters "$@" || return 1
	touch "$D/go"
	wait
}
handoff_flock() { # W OUT
	local w=$1 i
	gate_holder flock "$D/flockfile"
	sleep 0.1
	for i in $(seq "$w"); do
		flock "$D/flockfile" "$B/section" "$2.sec" "$HOLD_MS" "w$i" &
	done
	until_true 60 waiting_flock "$w" || return 1
	touch "$D/go"
	wait
}
handoff_conf() { # CONF W OUT
	case $1 in
	flock) handoff_flock "$2" "$3" ;;
	plain) handoff_rlock "$RLOCK" "$2" 0 "$3" ;;
	fair) handoff_rlock "$RLOCK" "$2" 1 "$3" ;;
	oldplain) handoff_rlock "$BASE" "$2" 0 "$3" ;;
	oldfair) handoff_rlock "$BASE" "$2" 1 "$3" ;;
	esac
}

# ------------------------------------------------------------ uncontended
sec_uncontended() {
	section "uncontended run: $PAIRS rounds of flock, seed, rlock${BASE:+, old}"
	cols=(flock "$D/flockfile" true ::: "$B/seed" "$SOCK" bench-s true \
		::: "$RLOCK" -k bench-u -- true)
	[ -z "$BASE" ] || cols+=(::: "$BASE" -k bench-o -- true)
	"$B/rounds" -u "$D/u" "$PAIRS" "${cols[@]}" > "$D/u.txt" || exit 1
	mapfile -t vf < <(python3 "$top/bench/pairs.py" "$D/u.txt" 0)
	mapfile -t vs < <(python3 "$top/bench/pairs.py" "$D/u.txt" 1)
	mapfile -t vc < <(python3 "$top/bench/pairs.py" "$D/u.cpu" 0)
	mapfile -t vp < <(python3 "$top/bench/pairs.py" "$D/u.flt" 0)
	names=("flock F true" "seed protocol around true" "rlock -k k -- true" "old rlock -k k -- true")
	for i in "${!vf[@]}"; do
		read -r _ p50 p90 ratio lo hi n <<< "${vf[$i]}"
		read -r _ _ _ sratio _ _ _ <<< "${vs[$i]}"
		read -r _ c50 _ cratio _ _ _ <<< "${vc[$i]}"
		read -r _ f50 _ fratio _ _ _ <<< "${vp[$i]}"
		case $i in
		0) row "${names[0]} (median, p90)" "$p50 us, $p90 us" ;;
		*) row "${names[$i]} (median, p90)" \
		    "$p50 us, $p90 us; $(x "$ratio") flock ($lo-$hi), $(x "$sratio") seed" ;;
		esac
		row "  CPU time; minor page faults (with COMMAND's)" \
		    "$c50 us ($(x "$cratio")); $f50 ($(x "$fratio"))"
		case $i in
		1) fig seed-unc "$(x "$ratio")" ;;
		2) fig unc "$(x "$ratio")"; fig unc-cpu "$(x "$cratio")"; PAIRS_N=$n ;;
		3) fig old:unc "$(x "$ratio")"; fig old:unc-cpu "$(x "$cratio")" ;;
		esac
	done

	# Where the time goes: bench/phases.c stamps, a run's own and its
	# COMMAND's, in runs of their own (the shim costs a little itself).
	pcols=("$RLOCK" -k bench-u -- true ::: flock "$D/flockfile" true)
	pnames=(rlock flock)
	[ -z "$BASE" ] || { pcols+=(::: "$BASE" -k bench-o -- true); pnames+=(old); }
	if PHASES_LOG=$D/ph.log "$B/rounds" -p "$B/phases.so" "$PHASE_RUNS" \
	    "${pcols[@]}" > "$D/ph.txt"; then
		echo "where the time goes, median us of $PHASE_RUNS runs under bench/phases.c:"
		python3 "$top/bench/phases.py" "$D/ph.log" "$D/ph.txt" "${pnames[@]}" |
			sed 's/^/  /'
	fi
}

# ------------------------------------------------------------ --redisson
# Redisson's lock (--redisson) against rlock's own, in the same rounds.
sec_redisson() {
	# An old rlock that predates --redisson has no column here.
	local base=$BASE
	[ -z "$base" ] || "$base" --help | grep -q -- --redisson || base=
	section "uncontended run: $PAIRS rounds of rlock, rlock --redisson${base:+, old --redisson}"
	cols=("$RLOCK" -k bench-u -- true ::: "$RLOCK" --redisson -k bench-r -- true)
	[ -z "$base" ] || cols+=(::: "$base" --redisson -k bench-r -- true)
	"$B/rounds" "$PAIRS" "${cols[@]}" > "$D/rs.txt" || exit 1
	mapfile -t vr < <(python3 "$top/bench/pairs.py" "$D/rs.txt" 0)
	read -r _ p50 p90 _ <<< "${vr[0]}"
	row "rlock -k k -- true (median, p90)" "$p50 us, $p90 us"
	read -r _ p50 p90 ratio lo hi _ <<< "${vr[1]}"
	row "rlock --redisson -k k -- true (median, p90)" \
	    "$p50 us, $p90 us; $(x "$ratio") rlock's ($lo-$hi)"
	fig redisson "$(x "$ratio")"
	if [ -n "$base" ]; then
		read -r _ p50 _ ratio _ <<< "${vr[2]}"
		row "old rlock --redisson (median)" "$p50 us; $(x "$ratio")"
		fig old:redisson "$(x "$ratio")"
	fi
}

# ------------------------------------------------------------ sections
# A script section, `rlock lock` then `rlock unlock` run by a shell (their
# owner), against a run of true, both uncontended. In the same rounds:
# the shell alone, whose start the section's figure is taken without
# (the run needs none), and the run from the same kind of shell.
sec_sections() {
	section "script section: $PAIRS rounds of rlock -k, sh -c 'rlock lock && rlock unlock', sh -c 'rlock -k', sh -c :"
	cols=("$RLOCK" -k bench-u -- true ::: sh -c \
		"'$RLOCK' lock -k bench-l && '$RLOCK' unlock -k bench-l" \
		::: sh -c "'$RLOCK' -k bench-w -- true; exit" ::: sh -c :)
	XDG_RUNTIME_DIR=$D "$B/rounds" "$PAIRS" "${cols[@]}" > "$D/s.txt" ||
		exit 1
	# Per round: (section - shell) / run, and section / run in sh.
	read -r p50 lo hi sh50 <<< "$(python3 -c '
import sys
rows = [[float(v) for v in l.split()] for l in open(sys.argv[1]) if l.strip()]
def med(xs, p=50):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]
a = [(r[1] - r[3]) / r[0] for r in rows]
b = [r[1] / r[2] for r in rows]
print("%.3f %.3f %.3f %.3f" % (med(a), med(a, 10), med(a, 90), med(b)))
' "$D/s.txt")"
	mapfile -t v < <(python3 "$top/bench/pairs.py" "$D/s.txt" 0)
	names=("rlock -k k -- true" "sh -c 'rlock lock && rlock unlock'" \
		"sh -c 'rlock -k k -- true; exit'" "sh -c :")
	for i in "${!v[@]}"; do
		read -r _ c50 c90 _ _ _ _ <<< "${v[$i]}"
		row "${names[$i]} (median, p90)" "$c50 us, $c90 us"
	done
	row "rlock lock + rlock unlock (less the sh) / the run" \
		"$(x "$p50") ($lo-$hi); the section in sh / the run in sh: $(x "$sh50")"
	fig sec "$(x "$p50")"
	fig sec-sh "$(x "$sh50")"
}

# ------------------------------------------------------------ round trips
sec_roundtrips() {
	section "round trips per uncontended run (client side, strace)"
	rtrips() { # NAME CMD...: one run under bench/roundtrips.py
		local name=$1 line n conns names
		shift
		if ! command -v strace >/dev/null; then
			row "$name" "n/a: no strace (make deps installs it)"
			return
		fi
		line=$(python3 "$top/bench/roundtrips.py" "$SOCK" "$@") || {
			echo "bench: $name failed under strace" >&2; exit 1; }
		read -r n conns names <<< "$line"
		row "$name" "$n on $conns connection(s): $names"
		TOP[$name]=$(tr ' ' '\n' <<< "$names" | sort -u | paste -sd, -)
		RT[$name]=$n
	}
	rtrips "rlock -k k -- true" "$RLOCK" -k bench-u -- true
	rtrips "seed protocol" "$B/seed" "$SOCK" bench-s true
	[ -z "$BASE" ] || rtrips "old rlock" "$BASE" -k bench-o -- true
	fig rtt "${RT[rlock -k k -- true]:-n/a}"
	fig old:rtt "${RT[old rlock]:-n/a}"
	fig seed-rtt "${RT[seed protocol]:-n/a}"
}

# ------------------------------------------------------------ Redis CPU
sec_cpu() {
	section "Redis CPU per uncontended lock cycle: $CPU_ROUNDS rounds of $CPU_CYCLES cycles each"
	# The commands each sends at top level, as counted above; without strace,
	# what this rlock sends today.
	ctop() { local t=${TOP[$1]:-}; echo "${t:-ping,config|get,evalsha,eval}"; }
	ccols=(rlock "$(ctop "rlock -k k -- true")" "$RLOCK" -k bench-u -- true \
		::: seed "${TOP[seed protocol]:-set,eval}" "$B/seed" "$SOCK" bench-s true \
		::: idle - true)
	[ -z "$BASE" ] || ccols+=(::: old "$(ctop "old rlock")" "$BASE" -k bench-o -- true)
	while read -r name t tr c cr n; do
		case $name in
		idle) continue ;;
		seed) row "seed protocol: commandstats usec; Redis process CPU" "$t us; $c us" ;;
		*) row "$name: commandstats usec; Redis process CPU" \
		    "$t us ($(x "$tr") seed); $c us ($(x "$cr") seed)" ;;
		esac
		case $name in
		rlock) fig cpu "$(x "$tr")"; fig cpu-rusage "$(x "$cr")" ;;
		old) fig old:cpu "$(x "$tr")"; fig old:cpu-rusage "$(x "$cr")" ;;
		esac
	done < <(python3 "$top/bench/cpu.py" "$SOCK" "$CPU_CYCLES" "$CPU_ROUNDS" seed "${ccols[@]}")
}

# ------------------------------------------------------------ throughput
sec_throughput() {
	section "lock cycles per second, $CLIENTS clients on distinct keys: $TPUT_ROUNDS rounds of $TPUT_MS ms"
	tcols=(rlock "$RLOCK" -k 'bench-t%d' -- true ::: seed "$B/seed" "$SOCK" 'bench-t%d' true)
	[ -z "$BASE" ] || tcols+=(::: old "$BASE" -k 'bench-t%d' -- true)
	while read -r name rate util percpu ratio failed; do
		row "$name: cycles/s; Redis CPU used; cycles per Redis CPU-second" \
		    "$rate; $util core; $percpu ($(x "$ratio") seed, $failed failed)"
		case $name in
		rlock) fig tput "$percpu ($(x "$ratio"))" ;;
		seed) fig seed-tput "$percpu" ;;
		old) fig old:tput "$percpu ($(x "$ratio"))" ;;
		esac
	done < <(python3 "$top/bench/tput.py" "$SOCK" "$TPUT_MS" "$CLIENTS" "$TPUT_ROUNDS" seed "${tcols[@]}")
	echo "  (on a small machine the clients' processes, not Redis, set cycles/s;"
	echo "   cycles per Redis CPU-second is what one Redis core sustains)"
}

# ------------------------------------------------------------ hand-off
# A gate holder, W waiters each holding HOLD_MS, then the gate opens. A round
# runs every configuration back to back, in an order that rotates; each
# figure is the median over the rounds, each ratio the median of the
# same-round ratios (handoff.py).
sec_handoff() {
	local w rounds r k c c50 c99 l50 l99 n nr o ratio lo hi name
	local fk50 fk90
	confs=(flock plain fair)
	[ -z "$BASE" ] || confs+=(oldplain oldfair)
	mkdir "$D/h"
	# The watcher's fork after the grant is the part of a hand-off no
	# Redis round trip explains: what a process costs this machine.
	read -r fk50 fk90 < <("$B/fork" 200) || exit 1
	for w in 10 100; do
		rounds=$([ "$w" = 10 ] && echo "$ROUNDS_10" || echo "$ROUNDS_100")
		section "hand-off, $w waiters holding $HOLD_MS ms: $rounds rounds of ${confs[*]}"
		for r in $(seq "$rounds"); do
			for k in "${!confs[@]}"; do
				c=${confs[$(( (r + k) % ${#confs[@]} ))]}
				handoff_conf "$c" "$w" "$D/h/$c.$w.$r" || exit 1
			done
		done
		while read -r c c50 c99 l50 l99 n nr o ratio lo hi _; do
			case $c in
			flock)
				row "flock: command p50/p99" \
				    "${c50} us / ${c99} us (n=$n, $nr rounds, overlaps=$o)"
				ratio=$(awk "BEGIN{printf \"%.2f\", $fk50/$c50}")
				row "  fork() of a small process (a watcher's floor)" \
				    "$fk50 us p50, $fk90 us p90: ${ratio}x flock's p50"
				continue ;;
			plain) name="rlock" ;;
			fair) name="rlock --fair" ;;
			oldplain) name="old rlock" ;;
			oldfair) name="old rlock --fair" ;;
			esac
			row "$name: lock p50/p99" "${l50} us / ${l99} us"
			row "$name: command p50/p99" \
			    "${c50} us / ${c99} us (n=$n, $nr rounds, overlaps=$o)"
			row "  $name / flock, same round (median, min-max)" \
			    "$(x "$ratio") ($(x "$lo")-$(x "$hi"))"
			if [ "${c#old}" = "$c" ]; then
				fig "ho-$w-$c" "$(x "$ratio")"
			else
				fig "old:ho-$w-${c#old}" "$(x "$ratio")"
			fi
		done < <(python3 "$top/bench/handoff.py" "$D/h" "$w" flock |
			awk -v order="${confs[*]}" 'BEGIN { n = split(order, o, " ")
			    for (i = 1; i <= n; i++) rank[o[i]] = i }
			    { print rank[$1], $0 }' | sort -n | cut -d' ' -f2-)
	done
}

# ------------------------------------------------------------ idle waiters
# Redis traffic of W idle waiters (FAIR), over BLOCK_S seconds.
idle_traffic() { # BIN W FAIR
	local c0 c1
	start_rlock_waiters "$1" "$2" "$3" "$D/idle" || return 1
	c0=$(commands); sleep "$BLOCK_S"; c1=$(commands)
	touch "$D/go"
	wait
	# One of those is our first INFO: a command is counted once it ran.
	awk "BEGIN{printf \"%.3f\", ($c1-$c0-1)/($2*$BLOCK_S)}"
}

sec_idle() {
	local v
	section "Redis commands per blocked waiter per second (100 waiters, ${BLOCK_S} s)"
	v=$(idle_traffic "$RLOCK" 100 0) || exit 1
	row "rlock, plain" "$v"
	v=$(idle_traffic "$RLOCK" 100 1) || exit 1
	row "rlock --fair" "$v"
	fig idle "$v"
	if [ -n "$BASE" ]; then
		v=$(idle_traffic "$BASE" 100 1) || exit 1
		row "old rlock --fair" "$v"
		fig old:idle "$v"
	fi
}

# ------------------------------------------------------------ RSS
sec_rss() {
	# Peak RSS of a holding rlock (after a few renewals of a 1 s lease) and
	# of a holding flock, started together and read at the same moment. A
	# round where one had ended early (a lease lost on a busy machine) is
	# left out, and counted.
	section "peak RSS (VmHWM) while holding: $RSS_ROUNDS rounds"
	hwm() { awk '/VmHWM/{print $2}' "/proc/$1/status" 2>/dev/null; }
	local rp fp np op line bad=0
	: > "$D/rss.txt"
	for _ in $(seq "$RSS_ROUNDS"); do
		"$RLOCK" -l 1s -k rss -- sleep 2.5 & rp=$!
		flock "$D/rssfile" sleep 2.5 & fp=$!
		env -u USER -u LOGNAME "$RLOCK" -l 1s -k rss-n -- sleep 2.5 & np=$!
		[ -z "$BASE" ] || { "$BASE" -l 1s -k rss-o -- sleep 2.5 & op=$!; }
		sleep 2.2
		line="$(hwm "$fp") $(hwm "$rp") $(hwm "$np") ${BASE:+$(hwm "$op")}"
		wait
		if [ "$(wc -w <<< "$line")" = "$([ -n "$BASE" ] && echo 4 || echo 3)" ]; then
			echo "$line" >> "$D/rss.txt"
		else
			bad="$bad ($line)"
		fi
	done
	[ -s "$D/rss.txt" ] || { row "no round completed" "$bad"; return; }
	[ "$bad" = 0 ] || row "rounds left out: a process ended early" \
	    "${bad#0 } (kB of flock, rlock, rlock without USER${BASE:+, old})"
	mapfile -t vr < <(python3 "$top/bench/pairs.py" "$D/rss.txt" 0)
	read -r _ f50 _ <<< "${vr[0]}"
	read -r _ r50 _ ratio _ <<< "${vr[1]}"
	row "flock" "$f50 kB"
	row "rlock" "$r50 kB ($(x "$ratio") flock)"
	fig rss "$(x "$ratio") ($r50 kB)"
	fig flock-rss "$f50 kB"
	read -r _ n50 _ ratio _ <<< "${vr[2]}"
	row "rlock, USER and LOGNAME unset (/etc/passwd or NSS)" "$n50 kB ($(x "$ratio") flock)"
	fig rss-nouser "$(x "$ratio") ($n50 kB)"
	if [ -n "$BASE" ]; then
		read -r _ o50 _ ratio _ <<< "${vr[3]}"
		row "old rlock" "$o50 kB ($(x "$ratio") flock)"
		fig old:rss "$(x "$ratio") ($o50 kB)"
	fi
}

# ------------------------------------------------------------ Redlock
sec_redlock() {
	# 5 masters on loopback TCP; "one node" is the first of them, alone.
	section "Redlock on 5 masters against one node (loopback TCP)"
	mkdir -p "$TOPO_DIR"
	masters_up 5 >/dev/null || { echo "bench: masters_up failed" >&2; exit 1; }
	read -r -a urls <<< "$MASTERS_URLS"
	one=(-u "${urls[0]}")
	five=(--redlock "${MASTERS_UARGS[@]}")
	m0() { topo_cli "$(masters_port 0)" "$@"; }
	m0_held() { [ "$(m0 exists 'rlock:{h}')" = 1 ]; }
	m0_waiting() { # N
		[ "$(m0 client list | grep -c -E 'flags=[^ ]*[Pb]')" -ge "$1" ]
	}
	rcols=("$RLOCK" "${one[@]}" -k bench-u -- true ::: "$RLOCK" "${five[@]}" -k bench-u -- true)
	[ -z "$BASE" ] || rcols+=(::: "$BASE" "${one[@]}" -k bench-o -- true \
		::: "$BASE" "${five[@]}" -k bench-o -- true)
	"$B/rounds" "$RL_PAIRS" "${rcols[@]}" > "$D/rl.txt" || exit 1
	mapfile -t vr < <(python3 "$top/bench/pairs.py" "$D/rl.txt" 0)
	read -r _ o50 o90 _ <<< "${vr[0]}"
	read -r _ r50 r90 ratio lo hi n <<< "${vr[1]}"
	row "uncontended, one node (median, p90)" "$o50 us, $o90 us"
	row "uncontended, 5 masters (median, p90)" "$r50 us, $r90 us; $(x "$ratio") one node ($lo-$hi)"
	fig rl-unc "$(x "$ratio")"
	if [ -n "$BASE" ]; then
		mapfile -t vr < <(python3 "$top/bench/pairs.py" "$D/rl.txt" 2)
		read -r _ r50 _ ratio _ <<< "${vr[3]}"
		row "old: uncontended, 5 masters / old one node" "$r50 us; $(x "$ratio")"
		fig old:rl-unc "$(x "$ratio")"
	fi

	# A waiter waits subscribed (P) or blocked (b) on each master: all W
	# so on the first master, then a moment to make their first attempt
	# (they subscribe before they try, so no release is missed).
	rl_round() { # BIN W OUT ARGS...
		local bin=$1 w=$2 out=$3 i
		shift 3
		rm -f "$D/go"
		"$bin" "$@" -k h -- sh -c "until [ -e '$D/go' ]; do sleep 0.005; done" &
		until_true 10 m0_held || return 1
		for i in $(seq "$w"); do
			RLOCK_TRACE=$out.trace "$bin" "$@" -k h -- "$B/section" \
				"$out.sec" 2 "w$i" &
		done
		until_true 60 m0_waiting "$w" || return 1
		sleep 0.2
		touch "$D/go"
		wait
	}
	rconfs=(one five)
	[ -z "$BASE" ] || rconfs+=(oldone oldfive)
	mkdir "$D/rl"
	for r in $(seq "$RL_ROUNDS"); do
		for k in "${!rconfs[@]}"; do
			c=${rconfs[$(( (r + k) % ${#rconfs[@]} ))]}
			case $c in
			one) rl_round "$RLOCK" 10 "$D/rl/$c.10.$r" "${one[@]}" ;;
			five) rl_round "$RLOCK" 10 "$D/rl/$c.10.$r" "${five[@]}" ;;
			oldone) rl_round "$BASE" 10 "$D/rl/$c.10.$r" "${one[@]}" ;;
			oldfive) rl_round "$BASE" 10 "$D/rl/$c.10.$r" "${five[@]}" ;;
			esac || exit 1
		done
	done
	for pair in "one one" "five one" "oldone oldone" "oldfive oldone"; do
		read -r c lb <<< "$pair"
		line=$(python3 "$top/bench/handoff.py" "$D/rl" 10 "$lb" "$lb" | grep "^$c ") || continue
		read -r _ c50 c99 l50 l99 n nr o cratio _ _ lratio <<< "$line"
		# One node's lock-level hand-off can be at or below zero (its
		# waiter's attempt waits in Redis behind the BLPOP): then only
		# the command-level ratio means something.
		lr=$(awk -v r="$lratio" 'BEGIN { print (r > 0 ? r "x" : "n/a") }')
		row "hand-off, 10 waiters, $c: lock p50/p99" \
		    "$l50 us / $l99 us ($lr the one node p50)"
		row "hand-off, 10 waiters, $c: command p50/p99" \
		    "$c50 us / $c99 us (n=$n, $nr rounds, overlaps=$o; $(x "$cratio") the one node, same round)"
		case $c in
		five) fig rl-p50 "$lr ($l50 us); command $(x "$cratio")"; fig rl-p99 "$l99 us" ;;
		oldfive) fig old:rl-p50 "$lr ($l50 us); command $(x "$cratio")"; fig old:rl-p99 "$l99 us" ;;
		esac
	done
	topo_down >/dev/null 2>&1
}

# ------------------------------------------------------------ many waiters
sec_many() {
	# MANY waiters on one KEY, each served exactly once (in order if --fair).
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
		left=$(rc --scan | grep -v ':fence$' | wc -l)
		echo "$served $uniq $inorder $left $(( (t1 - t0) / 1000000 ))"
	}
	many_rows() {
		local s u o l ms e
		read -r s u o l ms < <(many 1 2>"$D/many.err")
		e=$(wc -l < "$D/many.err")
		row "--fair: served / distinct / in order" \
		    "$s / $u / $o (keys left: $l, $ms ms, stderr lines: $e)"
		read -r s u o l ms < <(many 0 2>"$D/many.err")
		e=$(wc -l < "$D/many.err")
		row "plain: served / distinct" \
		    "$s / $u (keys left: $l, $ms ms, stderr lines: $e)"
	}
	if [ "$MANY" -gt 0 ]; then
		section "$MANY waiters on one key"
		many_rows
	fi
}

# ------------------------------------------------------------ herd
# HERD processes try one KEY at once, as a fleet's cron does each minute:
# one runs, the others skip. rlock with -n --min-hold (a KEY of its own
# per round), against the seed protocol whose winner holds until the
# others have ended (herd.py); Redis's CPU, connections included.
sec_herd() {
	section "a herd: $HERD runs at once on one key, $HERD_ROUNDS rounds"
	local hcols=(seed "$B/seed" "$SOCK" bench-hs%d sh -c \
		"until [ -e '$D/herd-go' ]; do sleep 0.01; done" \
		::: rlock "$RLOCK" -n --min-hold 1m -k bench-h%d -- true)
	[ -z "$BASE" ] ||
		hcols+=(::: old "$BASE" -n --min-hold 1m -k bench-ho%d -- true)
	local name c ratio ran skipped failed ms
	python3 "$top/bench/herd.py" "$SOCK" "$HERD" "$HERD_ROUNDS" \
	    "$D/herd-go" seed "${hcols[@]}" > "$D/herd.txt" || exit 1
	while read -r name c ratio ran skipped failed ms; do
		case $name in
		*:) continue ;;
		seed) row "seed protocol: Redis CPU p50; ran/skipped/failed" \
		    "$c ms; $ran/$skipped/$failed (wall p50 $ms ms)" ;;
		*) row "$name -n --min-hold: Redis CPU p50; ran/skipped/failed" \
		    "$c ms ($(x "$ratio") seed); $ran/$skipped/$failed (wall p50 $ms ms)" ;;
		esac
		case $name in
		rlock) fig herd "$(x "$ratio")" ;;
		old) fig old:herd "$(x "$ratio")" ;;
		esac
	done < "$D/herd.txt"
	echo "  commandstats per run (calls/usec), the last round:"
	grep ': ' "$D/herd.txt" | sed 's/^/    /'
}

# ------------------------------------------------------------ instructions
sec_ir() {
	section "Redis instructions per uncontended lock cycle (callgrind, $IR_CYCLES cycles)"
	local icols=(seed "$B/seed" @SOCK@ bench-i true ::: rlock "$RLOCK" -k bench-i -- true)
	[ -z "$BASE" ] || icols+=(::: old "$BASE" -k bench-i -- true)
	local out st=0 name t a st0 sa
	out=$(bash "$top/bench/redis_ir.sh" "$IR_CYCLES" "${icols[@]}") || st=$?
	if [ "$st" = 2 ]; then
		row "valgrind is not installed" "no figures"
		return
	fi
	[ "$st" = 0 ] || exit 1
	read -r _ st0 sa <<< "$(grep '^seed ' <<< "$out")"
	while read -r name t a; do
		case $name in
		seed) row "seed protocol: in its commands; whole server" "$t; $a" ;;
		*) row "$name: in its commands; whole server" \
		    "$t ($(x "$(ratio "$t" "$st0")") seed); $a ($(x "$(ratio "$a" "$sa")") seed)" ;;
		esac
		case $name in
		rlock) fig ir "$(x "$(ratio "$t" "$st0")"); $(x "$(ratio "$a" "$sa")")" ;;
		old) fig old:ir "$(x "$(ratio "$t" "$st0")"); $(x "$(ratio "$a" "$sa")")" ;;
		esac
	done <<< "$out"
}
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }

# ------------------------------------------------------------ summary
for sec in ${ONLY:-uncontended redisson sections roundtrips cpu ir throughput handoff idle rss redlock many herd}; do
	"sec_$sec"
done
# Issue 13's table: each figure as measured, BASE's beside it.
trow() { # LABEL KEY TARGET
	printf '%-50s %-18s' "$1" "${FIG[$2]:--}"
	[ -z "$BASE" ] || printf ' %-18s' "${FIG[old:$2]:--}"
	printf ' %s\n' "$3"
}
echo
echo "== issue 13's table (load average now $(loadavg); took ${SECONDS} s)"
printf '%-50s %-18s' figure rlock
[ -z "$BASE" ] || printf ' %-18s' old
printf ' %s\n' target
trow "uncontended run / flock's (${PAIRS_N:-?} pairs)" unc "<= 1.10x"
trow "  the same, CPU time" unc-cpu ""
trow "  seed protocol around true / flock's" seed-unc ""
trow "--redisson uncontended run / rlock's" redisson "<= 1.10x"
for w in 10 100; do
	trow "command-level hand-off / flock's, $w waiters" "ho-$w-plain" "<= 1.10x"
	trow "  the same, --fair" "ho-$w-fair" "<= 1.10x"
done
trow "rlock lock + rlock unlock / a run of true" sec "<= 1.5x"
trow "  the same, each from sh" sec-sh ""
trow "round trips per uncontended run (seed: ${FIG[seed-rtt]:-?})" rtt "3"
trow "Redis CPU per cycle / seed's (commandstats)" cpu "<= 1.5x"
trow "  the same, Redis process CPU (rusage)" cpu-rusage ""
trow "  Redis instructions: in commands; whole server" ir ""
trow "cycles per Redis CPU-second, $CLIENTS clients (x seed)" tput "seed: ${FIG[seed-tput]:-?}"
trow "Redis commands per blocked --fair waiter per s" idle "<= 0.05"
trow "Redis CPU of a herd of $HERD -n runs / seed's" herd "<= 1.5x"
trow "peak RSS / flock's (${FIG[flock-rss]:-?})" rss "<= 1.10x"
trow "  the same, USER and LOGNAME unset" rss-nouser ""
trow "Redlock 5 masters: lock-level hand-off p50 / one's" rl-p50 "<= 1.5x"
trow "Redlock 5 masters: lock-level hand-off p99" rl-p99 "< 5000 us"
trow "Redlock 5 masters: uncontended run / one node's" rl-unc "<= 1.3x"

# TLS against plain TCP, in the same run (bench/tls.sh).
bash "$top/bench/tls.sh" "$RLOCK" || exit 1
