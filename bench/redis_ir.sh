#!/bin/bash
# redis_ir.sh CYCLES NAME CMD... [::: NAME CMD...]: the instructions Redis
# executes per lock cycle, counted by callgrind, so the figures do not move
# with the machine's load as times do: "top", in the commands it is sent
# (processCommand and all below it: lookup, ACL, scripts, replies; what
# INFO commandstats times), and "all", in the whole server (accepting and
# closing the connection, reading, the event loop too). CMD does one
# cycle; @SOCK@ in it stands for the server's unix socket, which is also
# in RLOCK_URL. For each NAME and count: a server under callgrind runs 3
# cycles (the scripts loaded, as on a server in use), another runs 3 +
# CYCLES; the difference over CYCLES is the figure. Prints "NAME TOP ALL"
# per line; exits 2 without valgrind.
set -u
command -v valgrind >/dev/null || exit 2
n=$1
shift
D=$(mktemp -d /tmp/rlock-ir.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$D"' EXIT

ir() { # top|all CYCLES: instructions of a fresh server for CYCLES of cmd
	local c=$2 i opts=()
	[ "$1" = top ] &&
		opts=(--collect-atstart=no --toggle-collect=processCommand)
	rm -f "$D/out" "$D/s"
	valgrind --tool=callgrind "${opts[@]}" --callgrind-out-file="$D/out" \
		redis-server --port 0 --unixsocket "$D/s" --save '' \
		--appendonly no > "$D/log" 2>&1 &
	pid=$!
	for i in $(seq 300); do
		redis-cli -s "$D/s" ping > /dev/null 2>&1 && break
		sleep 0.05
	done
	for ((i = 0; i < c; i++)); do
		RLOCK_URL=unix://$D/s "${cmd[@]//@SOCK@/$D/s}" > /dev/null && continue
		# In $(...): the EXIT trap outside does not know this pid.
		echo "redis_ir: ${cmd[*]} failed" >&2
		kill "$pid"
		wait "$pid"
		exit 1
	done
	redis-cli -s "$D/s" shutdown nosave > /dev/null 2>&1
	wait "$pid"
	pid=
	sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$D/out" | head -1
}

conf=()
per_cycle() { # top|all: cmd's instructions per cycle
	local a b
	a=$(ir "$1" 3) || exit 1
	b=$(ir "$1" $((3 + n))) || exit 1
	echo $(( (b - a) / n ))
}
run_conf() {
	local top all
	cmd=("${conf[@]:1}")
	top=$(per_cycle top) || exit 1
	all=$(per_cycle all) || exit 1
	echo "${conf[0]} $top $all"
}
for arg in "$@" :::; do
	if [ "$arg" = ::: ]; then
		run_conf
		conf=()
	else
		conf+=("$arg")
	fi
done
