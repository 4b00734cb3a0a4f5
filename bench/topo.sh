#!/bin/bash
# topo.sh RLOCK: rlock on each topology the test harness can stand up
# (tests/topology.bash), next to one plain node over TCP in the same run:
# uncontended `rlock -k k -- true` (median, p90) and the hand-off with 10
# plain waiters (command level and lock level, p50/p99). Loopback only, so
# the differences are rlock's own round trips, not the network's.
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
cc -O2 -o "$B/timeit" "$top/bench/timeit.c" || exit 1

cleanup() {
	local p
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	topo_down >/dev/null 2>&1
	rm -rf "$TOPO_DIR"
}
trap cleanup EXIT

row() { printf '%-44s %s\n' "$1" "$2"; }
held() { "$RLOCK" status "$@" >/dev/null 2>&1; }

until_true() { # SECONDS CMD...
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || { echo "bench: timed out: $*" >&2; return 1; }
		sleep 0.02
	done
}

# bench NAME RLOCK-CONNECTION-ARGS...: one table row pair per topology.
bench() {
	local name=$1 log=$TOPO_DIR/sec.log trace=$TOPO_DIR/trace.log i pids=""
	shift
	read -r u50 u90 _ < <("$B/timeit" "$RUNS" "$RLOCK" "$@" -k bench-u -- true)
	row "$name: uncontended (median, p90)" "${u50} us, ${u90} us"
	rm -f "$log" "$trace" "$TOPO_DIR/go"
	"$RLOCK" "$@" -k h -- sh -c "until [ -e '$TOPO_DIR/go' ]; do sleep 0.005; done" &
	until_true 10 held "$@" h || return 1
	for i in $(seq "$W"); do
		RLOCK_TRACE=$trace "$RLOCK" "$@" -k h -- "$B/section" "$log" 2 "w$i" &
		pids="$pids $!"
	done
	# Blocked by now: each has tried once and found h held.
	sleep 1.5
	touch "$TOPO_DIR/go"
	wait $pids
	read -r c50 c99 l50 l99 n o < <(python3 "$top/bench/handoff.py" "$log" "$trace")
	row "$name: hand-off, $W waiters, command p50/p99" "${c50} us / ${c99} us (n=$n, overlaps=$o)"
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
