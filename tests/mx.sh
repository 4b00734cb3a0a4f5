#!/usr/bin/env bash
# mx.sh [OPTIONS] -- RLOCK-ARGS...: mutual exclusion, on any topology.
#
# W workers (8) each do M (20) read-increment-writes of one counter file,
# each under `rlock RLOCK-ARGS -k KEY -- stamp LOG incr COUNTER MS`
# (tests/torture/stamp.c: reads the counter, sleeps MS, writes it + 1,
# and logs start/end on CLOCK_MONOTONIC). A failed rlock run is retried
# until the worker has its M increments or the time bound is reached.
# Then tests/torture/check.py's checker reads the log. One line is
# printed; the run passes when
#   - the counter is exactly W*M, and every `end 0` (an increment made)
#     is accounted for;
#   - no two sections overlapped (with --allow-announced: none unless the
#     earlier holder was told its lease was lost before the later started;
#     with --tolerate-overlaps: overlaps are only reported);
#   - fences strictly increase in start order (unless --no-fence);
#   - every section was seen to end, and all this within the time bound.
# RLOCK-ARGS pick the topology: `-u redis://127.0.0.1:P`, `-u "$SENTINEL_URL"`,
# `-u "$CLUSTER_URL"`, `--redlock -u U1 -u U2 -u U3`, plus any option.
#
# Options:
#   -W N            workers (8)
#   -m M            increments per worker (20)
#   -s MS           sleep inside the section, between read and write (10)
#   -k KEY          lock key (mx-PID)
#   -t SECONDS      bound of the whole run (120)
#   -g SECONDS      a worker gives up after failing for that long in a
#                   row (15): longer than any failover, shorter than -t
#   --rlock PATH    rlock binary ($RLOCK, else ../rlock from here)
#   --stamp PATH    a built tests/torture/stamp.c (else built in the work dir)
#   --dir DIR       work dir, kept (else a temp dir, removed on success)
#   --no-fence      fences are not checked
#   --allow-announced, --tolerate-overlaps   see above
#   -q              nothing but the summary line
# Exit: 0 pass, 1 fail, 2 usage or set-up error.
set -u
here=$(cd "$(dirname "$0")" && pwd)

W=8 M=20 MS=10 KEY=mx-$$ BOUND=120 GIVEUP=15 RL=${RLOCK:-$here/../rlock} STAMP=
DIR="" FENCE=1 ALLOW=strict QUIET=0
usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	-W) W=$2; shift 2 ;;
	-m) M=$2; shift 2 ;;
	-s) MS=$2; shift 2 ;;
	-k) KEY=$2; shift 2 ;;
	-t) BOUND=$2; shift 2 ;;
	-g) GIVEUP=$2; shift 2 ;;
	--rlock) RL=$2; shift 2 ;;
	--stamp) STAMP=$2; shift 2 ;;
	--dir) DIR=$2; shift 2 ;;
	--no-fence) FENCE=0; shift ;;
	--allow-announced) ALLOW=announced; shift ;;
	--tolerate-overlaps) ALLOW=tolerate; shift ;;
	-q) QUIET=1; shift ;;
	-h | --help) usage ;;
	--) shift; break ;;
	-?*) echo "mx: unknown option $1 (RLOCK-ARGS go after --)" >&2; exit 2 ;;
	*) break ;;
	esac
done
ARGS=("$@")
for n in "$W" "$M" "$MS" "$BOUND" "$GIVEUP"; do
	[[ $n =~ ^[0-9]+$ ]] || { echo "mx: not a number: $n" >&2; exit 2; }
done
[ -x "$RL" ] || { echo "mx: rlock not found: $RL (set RLOCK or --rlock)" >&2; exit 2; }
command -v python3 > /dev/null || { echo "mx: needs python3" >&2; exit 2; }

keep=1
if [ -z "$DIR" ]; then
	DIR=$(mktemp -d "${TMPDIR:-/tmp}/mx.XXXXXX") || exit 2
	keep=0
fi
mkdir -p "$DIR/err" || exit 2
if [ -z "$STAMP" ]; then
	STAMP=$DIR/stamp
	cc -O2 -o "$STAMP" "$here/torture/stamp.c" || exit 2
fi
LOG=$DIR/log CTR=$DIR/counter
: > "$LOG"
echo 0 > "$CTR"
say() { [ "$QUIET" = 1 ] || echo "mx: $*" >&2; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
T0=$(now_ms)
DEADLINE=$(( T0 + BOUND * 1000 ))

# worker I: M increments, retrying failed attempts until the deadline,
# or until it has failed for GIVEUP seconds in a row.
worker() {
	local i=$1 done=0 n=0 id rc left ok_at
	ok_at=$(now_ms)
	while [ "$done" -lt "$M" ]; do
		left=$(( (DEADLINE - $(now_ms)) / 1000 ))
		[ "$left" -gt 0 ] || return 1
		[ $(( $(now_ms) - ok_at )) -lt $(( GIVEUP * 1000 )) ] || return 1
		n=$((n + 1))
		id=w$i.$n
		TORTURE_ID=$id timeout -k 5 "$left" "$RL" "${ARGS[@]}" \
			-k "$KEY" -- "$STAMP" "$LOG" incr "$CTR" "$MS" \
			2>> "$DIR/err/w$i"
		rc=$?
		TORTURE_ID=$id "$STAMP" "$LOG" exit "$rc"
		# rlock may fail after the increment was made (lease lost
		# at the end): the log says whether it was.
		if [ "$rc" = 0 ] || awk -v id="$id" '$1 == "end" && $4 == id &&
		    $5 == "0" { f = 1 } END { exit !f }' "$LOG"; then
			done=$((done + 1))
			ok_at=$(now_ms)
		else
			echo "$id: rlock exited $rc" >> "$DIR/err/w$i"
			sleep 0.0$((RANDOM % 5 + 1))
		fi
	done
}

say "$W workers x $M increments: $RL ${ARGS[*]} -k $KEY"
pids=()
for i in $(seq 1 "$W"); do
	worker "$i" &
	pids+=($!)
done
late=0
for p in "${pids[@]}"; do
	wait "$p" || late=$((late + 1))
done
ELAPSED=$(( $(now_ms) - T0 ))

python3 - "$here/torture" "$LOG" "$CTR" "$W" "$M" "$FENCE" "$ALLOW" \
	"$late" "$ELAPSED" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import check as C
log, ctr = sys.argv[2], sys.argv[3]
w, m, fence, allow, late, elapsed = (int(sys.argv[4]), int(sys.argv[5]),
    sys.argv[6] == "1", sys.argv[7], int(sys.argv[8]), int(sys.argv[9]))
secs, faults, bad = C.parse([log])
r = C.check(secs, 1)
made = 0
with open(log) as f:
    for line in f:
        x = line.split()
        if x[0] == "end" and x[4:] == ["0"]:
            made += 1
try:
    counter = int(open(ctr).read())
except ValueError:
    counter = -1
want = w * m
retries = r["attempts"] - made
exits = " ".join("%s:%d" % kv for kv in sorted(r["exits"].items()))
problems = []
if bad:
    problems.append("%d unreadable log lines" % bad)
if counter != want:
    problems.append("counter %d, want %d" % (counter, want))
if made != counter:
    problems.append("%d increments logged, counter says %d" % (made, counter))
if late:
    problems.append("%d workers gave up or ran out of time" % late)
if allow == "strict" and r["overlaps"]:
    problems.append("overlaps")
if allow != "tolerate" and r["violations"]:
    problems.append("overlaps the holder was not told of")
if fence and r["fence_errors"]:
    problems.append("fences: " + "; ".join(r["fence_errors"][:3]))
if r["unterminated"]:
    problems.append("sections never seen to end")
print("mx: workers=%d m=%d sections=%d increments=%d counter=%d want=%d "
      "overlaps=%d announced=%d violations=%d fence_errors=%d retries=%d "
      "max_holders=%d exits=[%s] elapsed=%.1fs %s" %
      (w, m, r["sections"], made, counter, want, r["overlaps"],
       r["announced"], len(r["violations"]), len(r["fence_errors"]),
       retries, r["max_holders"], exits, elapsed / 1000.0,
       "OK" if not problems else "FAIL (" + ", ".join(problems) + ")"))
for d in r["violations"][:3]:
    print("  overlap: %s" % d, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
rc=$?
if [ "$rc" != 0 ]; then
	# What rlock said, once per distinct message.
	cat "$DIR"/err/w* 2>/dev/null | sed 's/^w[0-9.]*: //' | sort | uniq -c |
		sort -rn | head -3 | sed 's/^/mx: /' >&2
fi
if [ "$rc" = 0 ] && [ "$keep" = 0 ]; then
	rm -rf "$DIR"
else
	echo "mx: work files in $DIR" >&2
fi
exit "$rc"
