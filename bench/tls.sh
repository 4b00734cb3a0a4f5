#!/bin/bash
# tls.sh RLOCK: TLS against plain TCP, in the same run, on one
# redis-server that listens on both (a TCP port and a TLS port, with a CA
# and certificate made here by tests/tls.bash): the uncontended run, and
# the command-level hand-off with 10 waiters. Each round measures both
# back to back (in turn first), so a busy moment of a shared machine hits
# both alike; each ratio is the median of the same-round ratios
# (bench/pair.py). Prints rows in run.sh's format.
set -u
RLOCK=$1
top=$(cd "$(dirname "$0")/.." && pwd)
B=$top/build
PAIRS=${BENCH_TLS_PAIRS:-60}
ROUNDS=${BENCH_TLS_ROUNDS:-20}
D=$(mktemp -d /tmp/rlock-bench-tls.XXXXXX)

# Also when run alone (run.sh builds them too).
[ -x "$B/section" ] || cc -O2 -o "$B/section" "$top/bench/section.c" || exit 1
[ -x "$B/rounds" ] || cc -O2 -o "$B/rounds" "$top/bench/rounds.c" || exit 1

cleanup() {
	local p
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	if [ -f "$D/pid" ] && grep -q redis "/proc/$(cat "$D/pid")/cmdline" 2>/dev/null; then
		p=$(cat "$D/pid")
		kill "$p"
		for _ in $(seq 200); do [ -d "/proc/$p" ] || break; sleep 0.01; done
	fi
	rm -rf "$D"
}
trap cleanup EXIT
row() { printf '%-52s %s\n' "$1" "$2"; }

# The test fixtures' CA and server certificate (tests/tls.bash).
BATS_FILE_TMPDIR=$D
# shellcheck source=../tests/tls.bash
. "$top/tests/tls.bash"
tls_certs || exit 1
free_port() {
	local p
	for _ in $(seq 100); do
		p=$(( (RANDOM << 1 | RANDOM & 1) % 30000 + 20000 ))
		(exec 9<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
	done
	return 1
}
rc() { redis-cli -s "$D/r.sock" "$@"; }
# A port found free may be taken before the server binds it (another
# program on the machine picking ports too): then the server exits, and
# the next try takes other ports. Up means answering on the TCP port.
up=
for _ in 1 2 3 4 5; do
	P=$(free_port) && Q=$(free_port) || exit 1
	redis-server --port "$P" --tls-port "$Q" --bind 127.0.0.1 \
		--tls-cert-file "$TLS_DIR/server.crt" \
		--tls-key-file "$TLS_DIR/server.key" \
		--tls-ca-cert-file "$TLS_DIR/ca.crt" --tls-auth-clients no \
		--unixsocket "$D/r.sock" --save '' --appendonly no \
		--daemonize yes --pidfile "$D/pid" --logfile "$D/log" || exit 1
	for _ in $(seq 200); do
		redis-cli -p "$P" ping >/dev/null 2>&1 && { up=1; break; }
		# Gone: its port was taken.
		if [ -f "$D/pid" ] && [ ! -d "/proc/$(cat "$D/pid")" ]; then
			break
		fi
		sleep 0.05
	done
	[ -n "$up" ] && break
	[ -f "$D/pid" ] && kill "$(cat "$D/pid")" 2>/dev/null
	rm -f "$D/pid"
done
[ -n "$up" ] || { echo "bench: the TLS server did not start: $(tail -3 "$D/log")" >&2; exit 1; }
export RLOCK_TLS_CACERT=$TLS_DIR/ca.crt
TCP=redis://127.0.0.1:$P
TLS=rediss://localhost:$Q

until_true() { # SECONDS CMD...
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || { echo "bench: timed out: $*" >&2; return 1; }
		sleep 0.01
	done
}
key_exists() { [ "$(rc exists "$1")" = 1 ]; }
blocked_at_least() {
	[ "$(rc info clients | sed -n 's/^blocked_clients:\([0-9]*\).*/\1/p')" -ge "$1" ]
}

# 1. Uncontended: PAIRS rounds, each one run over TCP and one over TLS
# (bench/rounds.c), wall and CPU time.
echo
echo "== TLS against plain TCP, one server (load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$B/rounds" -u "$D/u" "$PAIRS" "$RLOCK" -u "$TCP" -k bench-t -- true \
	::: "$RLOCK" -u "$TLS" -k bench-s -- true > "$D/u.txt" || exit 1
read -r _ t50 t90 _ _ _ _ < <(python3 "$top/bench/pairs.py" "$D/u.txt" 0 | sed -n 1p)
read -r _ s50 s90 ratio lo hi n < <(python3 "$top/bench/pairs.py" "$D/u.txt" 0 | sed -n 2p)
read -r _ c50 _ cratio _ _ _ < <(python3 "$top/bench/pairs.py" "$D/u.cpu" 0 | sed -n 2p)
row "uncontended rlock over TCP (median, p90)" "${t50} us, ${t90} us"
row "uncontended rlock over TLS (median, p90)" "${s50} us, ${s90} us"
row "  TLS / TCP, same round (median, p10-p90)" "${ratio}x (${lo}x-${hi}x, n=$n)"
row "  CPU time over TLS (with COMMAND's)" "${c50} us (${cratio}x TCP's)"

# 2. Hand-off: a gate holder, 10 waiters each holding 2 ms, the gate opens.
handoff() { # URL OUT
	local url=$1 out=$2 i
	rm -f "$D/go"
	"$RLOCK" -u "$url" -k h -- sh -c "until [ -e '$D/go' ]; do sleep 0.005; done" &
	until_true 10 key_exists 'rlock:{h}' || return 1
	for i in $(seq 10); do
		"$RLOCK" -u "$url" -k h -- "$B/section" "$out" 2 "w$i" &
	done
	until_true 60 blocked_at_least 10 || return 1
	touch "$D/go"
	wait
}
mkdir "$D/h"
for r in $(seq "$ROUNDS"); do
	if ((r % 2)); then
		handoff "$TCP" "$D/h/tcp.$r" && handoff "$TLS" "$D/h/tls.$r"
	else
		handoff "$TLS" "$D/h/tls.$r" && handoff "$TCP" "$D/h/tcp.$r"
	fi || exit 1
done
read -r a50 b50 ratio lo hi n ov < <(python3 "$top/bench/pair.py" "$D/h" tcp tls)
row "hand-off, 10 waiters, over TCP: command p50" "${a50} us"
row "hand-off, 10 waiters, over TLS: command p50" "${b50} us (n=$n, $ROUNDS rounds, overlaps=$ov)"
row "  ratio TLS/TCP, same round (median, min-max)" "${ratio}x (${lo}x-${hi}x)"
