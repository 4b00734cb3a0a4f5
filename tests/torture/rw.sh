# rw.sh: the readers/writer scenario of tests/torture/run.sh (bash,
# sourced after lib.sh). 12 reader loops (rlock -s, sections of 50-300
# ms, so that readers are nearly always inside) and 3 writer loops
# (rlock -x, 5-20 ms) on one KEY; checked by check_rw.py: no moment with a
# writer beside anyone, readers seen together, no reader getting in while
# a writer waits, no writer waiting longer than the sections already
# inside when it came, fences from one counter.

RW_READERS=${RW_READERS:-12}
RW_WRITERS=${RW_WRITERS:-3}

rw_worker() { # I KIND(r|w) MIN MAX
	local i=$1 kind=$2 min=$3 max=$4 n=0 pid rc ms mode=-s
	[ "$kind" = w ] && mode=-x
	while [ ! -e "$SC/stop" ]; do
		n=$((n + 1))
		ms=$(( min + RANDOM % (max - min + 1) ))
		TORTURE_ID=$kind$i.$n "$STAMP" "$SC/log" launch
		TORTURE_ID=$kind$i.$n "$RLOCK" -u "${URLS[0]}" -k "$KEY" \
			"${WARGS[@]}" "$mode" -- "$STAMP" "$SC/log" section "$ms" \
			2>>"$SC/err/$kind$i" &
		pid=$!
		echo "$pid" > "$SC/pids/$kind$i"
		wait "$pid"
		rc=$?
		TORTURE_ID=$kind$i.$n "$STAMP" "$SC/log" exit "$rc"
		case $rc in 69|75|76) sleep 0.0$((RANDOM % 5 + 1)) ;; esac
		# A writer comes back after a pause, so that readers fill the
		# lock again before it waits anew.
		[ "$kind" = w ] && msleep $((100 + RANDOM % 200))
	done
}

rw_workers_start() {
	local i
	mkdir -p "$SC/pids" "$SC/err"
	rm -f "$SC/stop"
	: > "$SC/workers"
	for i in $(seq 1 "$RW_READERS"); do
		rw_worker "$i" r 50 300 2>>"$SC/worker-stderr" &
		echo $! >> "$SC/workers"
	done
	for i in $(seq 1 "$RW_WRITERS"); do
		rw_worker "$i" w 5 20 2>>"$SC/worker-stderr" &
		echo $! >> "$SC/workers"
	done
}

sc_rw() {
	begin rw "12 readers (-s, 50-300 ms) and 3 writers (-x, 5-20 ms), -l 1s"
	redis_start rw || { nostart; return; }
	URLS=("$(unix_url rw)"); WARGS=(-l 1s -w 20s)
	[ -n "${TORTURE_VERBOSE:-}" ] && WARGS+=(-v)
	rw_workers_start; run_for "$SECS"
	local ok=1 hung nottl line el
	workers_stop
	hung=$(cat "$SC/hung")
	sleep 0.2
	nottl=$(keys_without_ttl rw)
	el=$(( $(now_ms) - T0 ))
	line=$(python3 "$HERE/check_rw.py" --label rw --json "$SC/result.json" \
		"$SC/log") || ok=0
	[ -n "$nottl" ] && ok=0
	[ "$hung" = 1 ] && ok=0
	printf '  %s\n' "$line" | head -12
	echo "  runtime=$((el / 1000)).$(printf %03d $((el % 1000)))s" \
		"keys-without-ttl=$(printf '%s' "$nottl" | grep -c .) hung=$hung"
	[ -n "$nottl" ] && echo "  KEYS WITHOUT TTL: $nottl"
	TOTAL_SECTIONS=$((TOTAL_SECTIONS + $(python3 -c '
import json, sys; print(json.load(open(sys.argv[1]))["sections"])' \
		"$SC/result.json" 2>/dev/null || echo 0)))
	RESULTS+=("rw $( [ $ok = 1 ] && echo ok || echo FAIL) $(printf '%s\n' \
		"$line" | sed -n 1p)")
	[ $ok = 1 ] || FAILED+=(rw)
	redis_stop rw
}
