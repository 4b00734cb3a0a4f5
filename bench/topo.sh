#!/bin/bash
# topo.sh RLOCK: rlock on each topology the test harness can stand up
# (tests/topology.bash), next to one plain node over TCP in the same run:
# uncontended `rlock -k k -- true` (median, p90, and the median of the
# same-round ratios to flock's) and the hand-off with 10 plain waiters
# (command level and lock level, p50/p99). Loopback only, so the
# differences are rlock's own round trips, not the network's. Redlock on 5
# masters against one node, the figures of issue 13, is in `make bench`.
set -u
RLOCK=$1
top=$(cd "$(dirname "$0")/.." && pwd)
B=$top/build
RUNS=${BENCH_RUNS:-30}
W=${BENCH_WAITERS:-10}
export TOPO_DIR
TOPO_DIR=$(mktemp -d /tmp/rlock-topobench.XXXXXX)
# shellcheck source=../tests/topology.bash
. "$top/tests/topology.bash"

cc -O2 -o "$B/section" "$top/bench/section.c" || exit 1
cc -O2 -o "$B/rounds" "$top/bench/rounds.c" || exit 1

cleanup() {
	local p
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	topo_down >/dev/null 2>&1
	rm -rf "$TOPO_DIR"
}
trap cleanup EXIT

row() { printf '%-44s %s\n' "$1" "$2"; }

until_true() { # SECONDS CMD...
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || { echo "bench: timed out: $*" >&2; return 1; }
		sleep 0.02
	done
}

# One hand-off round of W waiters behind a gate holder, for handoff.py:
# CONF.W.1.sec (and .trace for rlock) in $R. flock's round is the ratio's
# baseline, run next to each topology's.
round() { # CONF HOLD-PREFIX...
	local conf=$1 i pids=""
	shift
	rm -f "$TOPO_DIR/go"
	"$@" sh -c "until [ -e '$TOPO_DIR/go' ]; do sleep 0.005; done" &
	sleep 0.3
	for i in $(seq "$W"); do
		RLOCK_TRACE=$R/$conf.$W.1.trace "$@" "$B/section" \
			"$R/$conf.$W.1.sec" 2 "w$i" &
		pids="$pids $!"
	done
	# Blocked by now: each has tried once and found the gate held.
	sleep 1.5
	touch "$TOPO_DIR/go"
	wait $pids
	wait
}

# bench NAME RLOCK-CONNECTION-ARGS...: one block of rows per topology.
bench() {
	local name=$1 line
	shift
	"$B/rounds" "$RUNS" flock "$TOPO_DIR/flockfile" true ::: \
		"$RLOCK" "$@" -k bench-u -- true > "$TOPO_DIR/u.txt" || exit 1
	read -r _ u50 u90 ur _ < <(python3 "$top/bench/pairs.py" \
		"$TOPO_DIR/u.txt" | sed -n 2p)
	row "$name: uncontended (median, p90)" "${u50} us, ${u90} us (${ur}x flock)"
	R=$TOPO_DIR/rounds
	rm -rf "$R"
	mkdir -p "$R"
	round flock flock "$TOPO_DIR/flockfile"
	round plain "$RLOCK" "$@" -k h --
	line=$(python3 "$top/bench/handoff.py" "$R" "$W" | grep '^plain ')
	read -r _ c50 c99 l50 l99 n _ o ratio _ _ <<< "$line"
	[ -n "${ratio:-}" ] || { echo "bench: no hand-off figures" >&2; exit 1; }
	row "$name: hand-off, $W waiters, command p50/p99" "${c50} us / ${c99} us (n=$n, overlaps=$o, ${ratio}x flock)"
	row "$name: hand-off, $W waiters, lock p50/p99" "${l50} us / ${l99} us"
}

echo "rlock on each topology ($(nproc) cores, $(redis-server --version | cut -d' ' -f3), loopback TCP)"
echo
masters_up 5 >/dev/null || { echo "bench: masters_up failed" >&2; exit 1; }
read -r -a urls <<< "$MASTERS_URLS"
bench "single node" -u "${urls[0]}"
bench "redlock, 3 masters" --redlock -u "${urls[0]}" -u "${urls[1]}" -u "${urls[2]}"
bench "redlock, 5 masters" --redlock "${MASTERS_UARGS[@]}"
echo
sentinel_up >/dev/null || { echo "bench: sentinel_up failed" >&2; exit 1; }
bench "sentinel (1 master, 1 replica, 3 sentinels)" -u "$SENTINEL_URL"
echo
cluster_up 0 >/dev/null || { echo "bench: cluster_up failed" >&2; exit 1; }
bench "cluster (3 masters)" -u "$CLUSTER_URL"
