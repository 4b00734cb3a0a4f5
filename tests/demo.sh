#!/bin/sh
# demo.sh RLOCK_BINARY: run by `make demo`. Starts a private redis-server
# (temp dir, unix socket only), runs two jobs that contend for one lock,
# shows `rlock status` while one of them holds it, and stops the server by
# its PID on the way out. Exits 0 when the jobs ran one after the other.
set -u
RLOCK=${1:?usage: demo.sh RLOCK_BINARY}
command -v redis-server >/dev/null 2>&1 || {
	echo "demo: redis-server is not installed (make deps installs it)" >&2
	exit 1
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/rlock-demo.XXXXXX") || exit 1
cleanup() {
	if [ -f "$dir/redis.pid" ]; then
		pid=$(cat "$dir/redis.pid")
		kill "$pid" 2>/dev/null
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
			sleep 0.05
			i=$((i + 1))
		done
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The demo must not join a lock of whatever runs it, nor use its Redis.
unset RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE REDIS_URL RLOCK_PASSWORD REDISCLI_AUTH

sock=$dir/redis.sock
redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 \
	--save '' --appendonly no --dir "$dir" --daemonize yes \
	--pidfile "$dir/redis.pid" --logfile "$dir/redis.log" || {
	echo "demo: redis-server did not start" >&2
	exit 1
}
i=0
until redis-cli -s "$sock" ping 2>/dev/null | grep -q PONG; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "demo: redis-server does not answer" >&2; exit 1; }
	sleep 0.05
done
export RLOCK_URL="unix://$sock"
now() { date +%s%3N; }

echo "== a private redis-server on $sock (pid $(cat "$dir/redis.pid"))"
echo "== two jobs start together; each holds the lock 'demo' for 2 s"
echo

# The job: note when it starts and ends (to check that the two never
# overlap), say so, and take 2 s.
cat > "$dir/job" <<'EOF'
echo "$1 $(date +%s%3N) start" >> "${0%/*}/events"
echo "job $1 starts (fence $RLOCK_FENCE)"
sleep 2
echo "job $1 ends"
echo "$1 $(date +%s%3N) end" >> "${0%/*}/events"
EOF

# job NAME: one contender, its rlock messages (-v) prefixed by its name.
job() {
	{
		"$RLOCK" -v -k demo -- sh "$dir/job" "$1" 2>&1
		echo $? > "$dir/$1.status"
	} | sed -u "s/^/  [$1] /"
}
t0=$(now)
job A &
job B &

# While one of them holds the lock: who is it?
i=0
until [ "$(redis-cli -s "$sock" exists 'rlock:{demo}')" = 1 ]; do
	i=$((i + 1))
	[ $i -lt 100 ] || break
	sleep 0.05
done
sleep 0.3
echo
echo "== rlock status demo"
if out=$("$RLOCK" status demo 2>&1); then
	printf '%s\n' "$out" | sed 's/^/  /'
else
	echo "  (not available in this build: $out)"
fi
echo
wait
t1=$(now)

echo
echo "== summary"
ok=1
for j in A B; do
	st=$(cat "$dir/$j.status" 2>/dev/null || echo '?')
	echo "  job $j exited $st"
	[ "$st" = 0 ] || ok=0
done
# The order of events must be: start, end, start, end.
order=$(sort -k2,2n "$dir/events" | awk '{ printf "%s ", $3 }')
first=$(sort -k2,2n "$dir/events" | awk 'NR == 1 { print $1 }')
if [ "$order" = "start end start end " ]; then
	echo "  job $first ran first; the other waited: the two never overlapped"
else
	echo "  the jobs overlapped: $order"
	ok=0
fi
echo "  $(awk -v ms=$((t1 - t0)) 'BEGIN { printf "%.1f", ms / 1000 }') s" \
	"for both (2 s each, one at a time)"
echo "  left in Redis (each with an expiry):"
redis-cli -s "$sock" --scan | while IFS= read -r k; do
	s=$(( $(redis-cli -s "$sock" pttl "$k") / 1000 ))
	if [ "$s" -ge 86400 ]; then
		echo "    $k, expires in $((s / 86400)) days"
	else
		echo "    $k, expires in $s s"
	fi
done
[ $ok = 1 ]
