#!/usr/bin/env bats
# Script sections: `rlock lock` takes KEY for the shell that runs it (its
# owner) and leaves a holder; the section ends at `rlock unlock`, at the
# owner's end however it ends, at --max-hold, or on a lost lease (the
# owner's tree then gets the --on-lost signal). Nested runs below the
# owner re-enter. Every script here runs under a bound (timeout).

load helper

setup_file() {
	redis_start main
	closed_url
	# The holders' directory, private to this file (and short: it holds
	# unix sockets).
	XDG_RUNTIME_DIR=$(mktemp -d /tmp/rlock-rt.XXXXXX)
	export XDG_RUNTIME_DIR
}

teardown_file() {
	redis_stop main
	rm -rf "$XDG_RUNTIME_DIR"
}

setup() {
	per_test sec
	export K
}

# Every holder still running (its pid ends its socket's name) and every
# background script is stopped; nothing may be left without an expiry.
teardown() {
	local s p left
	end_test_procs
	for s in "$XDG_RUNTIME_DIR"/rlock/*; do
		[ -S "$s" ] || continue
		p=${s##*.}
		[ /proc/"$p"/exe -ef "$RLOCK" ] && kill -KILL "$p" 2>/dev/null
		rm -f "$s"
	done
	left=$(keys_without_ttl)
	[ -z "$left" ] || fail "keys without TTL: $left"
}

# script NAME: stdin is the script $T/NAME.sh (its shell sees RLOCK, K, T
# and REDIS_SOCK).
script() { cat > "$T/$1.sh"; }

# last FIELD: the last run's FIELD as recorded for K.
last() { rcli hget "$L:last" "$1"; }

# started FILE: the background script wrote FILE (bounded wait).
started() { wait_ms 5000 test -e "$1" || fail "no $1: $(cat "$T"/*.err 2>&1)"; }

no_holder_left() { [ -z "$(ls "$XDG_RUNTIME_DIR/rlock" 2>/dev/null)" ]; }

@test "the owner's end releases: held for the rest of the script, then recorded" {
	script s <<-'EOF'
	"$RLOCK" lock -k "$K" || exit
	echo $$
	redis-cli -s "$REDIS_SOCK" hget "rlock:{$K}:meta" pid
	"$RLOCK" status "$K" | sed -n 's/^  command *//p'
	EOF
	run -0 --separate-stderr timeout "$(tf 10)" sh "$T/s.sh"
	[ "${lines[1]}" = "${lines[0]}" ] || fail "holder pid: $output"
	[ "${lines[2]}" = "sh $T/s.sh" ] || fail "command: $output"
	wait_ms 1000 released "$K" || fail "still held after the script"
	[ "$(last pid)" = "${lines[0]}" ]
	[ "$(last exit)" = 0 ]
	wait_ms 1000 no_holder_left || fail "left: $(ls "$XDG_RUNTIME_DIR/rlock")"
}

@test "unlock: one key, every key, a process below the owner; 1 for none" {
	script s <<-'EOF'
	for k in a b c d; do "$RLOCK" lock -k "$K.$k" || exit 9; done
	"$RLOCK" unlock -k "$K.a"; echo "one=$?"
	sh -c '"$RLOCK" unlock -k "$K.b"'; echo "below=$?"
	redis-cli -s "$REDIS_SOCK" exists "rlock:{$K.a}" "rlock:{$K.b}" \
	    "rlock:{$K.c}" "rlock:{$K.d}"
	"$RLOCK" unlock; echo "every=$?"
	redis-cli -s "$REDIS_SOCK" exists "rlock:{$K.c}" "rlock:{$K.d}"
	"$RLOCK" unlock -k "$K.a"; echo "again=$?"
	"$RLOCK" unlock; echo "none=$?"
	EOF
	run -0 --separate-stderr timeout "$(tf 10)" sh "$T/s.sh"
	assert_output "one=0
below=0
2
every=0
0
again=1
none=1"
	[ "${stderr_lines[0]}" = "rlock: unlock: this shell holds no lock '$K.a' taken with rlock lock" ]
	[ "${stderr_lines[1]}" = "rlock: unlock: this shell holds no lock taken with rlock lock" ]
	[ "$(rcli hget "rlock:{$K.a}:last" exit)" = 0 ]
	no_holder_left
	# bash runs the last command of -c in its own place: that unlock is
	# the owner itself.
	run -0 --separate-stderr timeout "$(tf 10)" bash -c \
	    '"$RLOCK" lock -k "$K" && "$RLOCK" unlock -k "$K"'
	released "$K"
}

@test "unlock from another shell, not below the owner: 1, the lock stays" {
	script s <<-'EOF'
	"$RLOCK" lock -k "$K" || exit
	touch "$T/in"
	while [ ! -e "$T/go" ]; do sleep 0.02; done
	EOF
	sh "$T/s.sh" 2> "$T/s.err" &
	PIDS+=($!)
	started "$T/in"
	run -1 --separate-stderr "$RLOCK" unlock -k "$K"
	held "$K"
}

@test "SIGKILL of the owner: released within a second, the run recorded" {
	script s <<-'EOF'
	"$RLOCK" lock -k "$K" || exit
	echo $$ > "$T/owner"
	while :; do sleep 0.02; done
	EOF
	sh "$T/s.sh" 2> "$T/s.err" &
	PIDS+=($!)
	started "$T/owner"
	held "$K"
	kill -KILL "$(cat "$T/owner")"
	wait_ms 1000 released "$K" || fail "still held a second after SIGKILL"
	[ "$(last pid)" = "$(cat "$T/owner")" ]
}

@test "SIGKILL of the holder: the owner and what it started get the --on-lost signal" {
	script s <<-'EOF'
	"$RLOCK" lock -k "$K" || exit
	sh -c 'trap "echo child >> \"$T/got\"; exit 5" TERM
	    while :; do sleep 0.02; done' &
	trap 'echo owner >> "$T/got"; wait; exit 3' TERM
	touch "$T/in"
	wait
	EOF
	sh "$T/s.sh" 2> "$T/s.err" &
	BG=$!
	PIDS+=("$BG")
	started "$T/in"
	local h=("$XDG_RUNTIME_DIR"/rlock/*)
	[ ${#h[@]} = 1 ] || fail "holders: ${h[*]}"
	kill -KILL "${h[0]##*.}"
	reap "$BG" 3000
	[ "$RC" = 3 ]
	run sort "$T/got"
	assert_output "child
owner"
}

@test "-n while held: 75 with nothing on stdout, nothing left behind" {
	"$RLOCK" -k "$K" -- sh -c 'touch "$T/in"
	    while [ ! -e "$T/go" ]; do sleep 0.02; done' 3>&- &
	PIDS+=($!)
	started "$T/in"
	run -75 --separate-stderr "$RLOCK" lock -n -k "$K"
	[ -z "$output" ]
	[[ $stderr == "rlock: '$K' is held by "*"; not waiting (--nonblock)" ]]
	run -75 --separate-stderr "$RLOCK" lock -n --export -k "$K"
	[ -z "$output" ]
	no_holder_left
}

@test "|| exit never goes on unlocked: not obtained, or no holder to leave" {
	script s <<-'EOF'
	"$RLOCK" lock -n -k "$K" || exit
	echo continued
	EOF
	"$RLOCK" -k "$K" -- sh -c 'touch "$T/in"
	    while [ ! -e "$T/go" ]; do sleep 0.02; done' 3>&- &
	PIDS+=($!)
	started "$T/in"
	run -75 --separate-stderr timeout "$(tf 10)" sh "$T/s.sh"
	[ -z "$output" ]
	touch "$T/go"
	wait_ms 5000 released "$K"
	# A holders' directory others may write to: no holder, nothing held.
	mkdir -m 755 "$T/rt" "$T/rt/rlock"
	XDG_RUNTIME_DIR=$T/rt run -71 --separate-stderr timeout "$(tf 10)" sh "$T/s.sh"
	[ -z "$output" ]
	[[ $stderr == "rlock: cannot leave a holder for '$K': "* ]]
	released "$K"
}

@test "x=\$(rlock lock) returns at once, also with stderr in the pipe" {
	script s <<-'EOF'
	x=$("$RLOCK" lock -k "$K.1"); echo "rc=$? x=[$x]"
	y=$("$RLOCK" lock -k "$K.2" 2>&1); echo "rc=$? y=[$y]"
	z=$("$RLOCK" lock -k "$K.3" || echo failed); echo "rc=$? z=[$z]"
	sleep 0.3
	redis-cli -s "$REDIS_SOCK" exists "rlock:{$K.1}" "rlock:{$K.2}" \
	    "rlock:{$K.3}"
	EOF
	for sh in bash dash zsh; do
		run -0 --separate-stderr timeout "$(tf 10)" "$sh" "$T/s.sh"
		assert_output "rc=0 x=[]
rc=0 y=[]
rc=0 z=[]
3"
		wait_ms 1000 released "$K.3" || fail "$sh: still held"
	done
}

@test "--export: eval gets RLOCK_KEY, RLOCK_TOKEN, RLOCK_FENCE, even for a hostile key" {
	HK="$K it's \$(touch pwned) \`touch pwned\` \"; touch pwned; '
x\\"
	export HK
	script s <<-'EOF'
	cd "$T" || exit
	v=$("$RLOCK" lock --export -k "$HK") || exit
	eval "$v"
	[ "$RLOCK_KEY" = "$HK" ] && echo same key
	echo "$RLOCK_TOKEN" | grep -qE '^[0-9a-f-]{36}$' && echo token
	"$RLOCK" status --json "$HK" | grep -q "\"fence\":$RLOCK_FENCE," &&
	    echo fence
	EOF
	for sh in sh bash zsh; do
		run -0 --separate-stderr timeout "$(tf 10)" "$sh" "$T/s.sh"
		assert_output "same key
token
fence"
		[ ! -e "$T/pwned" ]
	done
}

@test "re-entry below the owner, without --export: no wait, nothing released" {
	script s <<-'EOF'
	"$RLOCK" lock -k "$K" || exit
	f=$(redis-cli -s "$REDIS_SOCK" hget "rlock:{$K}:meta" fence)
	"$RLOCK" -n -k "$K" -- sh -c 'echo "run $RLOCK_KEY $RLOCK_FENCE"' |
	    sed "s/$f/F/"
	"$RLOCK" lock -n -k "$K"; echo "lock=$?"
	eval "$("$RLOCK" lock -n --export -k "$K")"; echo "export=$RLOCK_FENCE" |
	    sed "s/$f/F/"
	sh -c '"$RLOCK" lock -n -k "$K"'; echo "below=$?"
	redis-cli -s "$REDIS_SOCK" hget "rlock:{$K}:meta" fence | sed "s/$f/F/"
	"$RLOCK" unlock -k "$K"; echo "unlock=$?"
	"$RLOCK" unlock -k "$K"; echo "unlock=$?"
	EOF
	run -0 --separate-stderr timeout "$(tf 10)" sh "$T/s.sh"
	assert_output "run $K F
lock=0
export=F
below=0
F
unlock=0
unlock=1"
}

@test "re-entry with --export: a nested run and a nested lock use the token" {
	script s <<-'EOF'
	eval "$("$RLOCK" lock --export -k "$K")" || exit
	t=$RLOCK_TOKEN
	XDG_RUNTIME_DIR=/nonexistent "$RLOCK" -n -k "$K" -- \
	    sh -c 'echo "run $RLOCK_TOKEN"' | sed "s/$t/T/"
	eval "$(XDG_RUNTIME_DIR=/nonexistent "$RLOCK" lock -n --export \
	    -k "$K")"; echo "lock $RLOCK_TOKEN" | sed "s/$t/T/"
	EOF
	run -0 --separate-stderr timeout "$(tf 10)" sh "$T/s.sh"
	assert_output "run T
lock T"
	wait_ms 1000 released "$K"
}

@test "--max-hold: the owner gets SIGTERM, then the lock is released (124)" {
	script s <<-'EOF'
	trap 'echo TERM > "$T/got"; exit 3' TERM
	"$RLOCK" lock --max-hold "$MAX" -k "$K" || exit
	while :; do sleep 0.02; done
	EOF
	MAX=$(tf 0.3) run -3 --separate-stderr timeout "$(tf 10)" sh "$T/s.sh"
	[ "$(cat "$T/got")" = TERM ]
	[[ ${stderr_lines[0]} == "rlock: '$K' has been held for --max-hold "* ]]
	wait_ms 1000 released "$K"
	[ "$(last exit)" = 124 ]
}

@test "release --force: the owner and every process it started get SIGTERM" {
	script s <<-'EOF'
	"$RLOCK" lock -k "$K" || exit
	sh -c 'trap "echo child >> \"$T/got\"; exit 5" TERM
	    while :; do sleep 0.02; done' &
	trap 'echo owner >> "$T/got"; wait; exit 3' TERM
	touch "$T/in"
	wait
	EOF
	sh "$T/s.sh" 2> "$T/s.err" &
	BG=$!
	PIDS+=("$BG")
	started "$T/in"
	run -0 "$RLOCK" release --force "$K"
	reap "$BG" 3000
	[ "$RC" = 3 ]
	run sort "$T/got"
	assert_output "child
owner"
	grep -q "^rlock: lost the lock '$K': " "$T/s.err"
}

@test "--pid PID: the lock is PID's and ends with it" {
	sleep 30 &
	BG=$!
	PIDS+=("$BG")
	run -0 --separate-stderr "$RLOCK" lock --pid "$BG" -k "$K"
	[ -z "$output" ]
	[ "$(rcli hget "$L:meta" pid)" = "$BG" ]
	[ "$(rcli hget "$L:meta" cmd)" = "sleep 30" ]
	held "$K"
	kill "$BG"
	wait_ms 1000 released "$K" || fail "still held after PID ended"
	run -64 --separate-stderr "$RLOCK" lock --pid "$BG" -k "$K"
	[ "$stderr" = "rlock: --pid $BG: no such process" ]
}

@test "dash, bash and zsh: take, hold, give back, and the script's end" {
	script s <<-'EOF'
	"$RLOCK" lock -k "$K" -w 5 || exit
	redis-cli -s "$REDIS_SOCK" exists "rlock:{$K}"
	"$RLOCK" unlock -k "$K"; echo "unlock=$?"
	redis-cli -s "$REDIS_SOCK" exists "rlock:{$K}"
	"$RLOCK" lock -k "$K" -w 5 || exit
	echo $$ > "$T/owner"
	EOF
	for sh in dash bash zsh; do
		run -0 --separate-stderr timeout "$(tf 10)" "$sh" "$T/s.sh"
		assert_output "1
unlock=0
0"
		wait_ms 1000 released "$K" || fail "$sh: held after its end"
		[ "$(last pid)" = "$(cat "$T/owner")" ]
	done
}

@test "usage: no COMMAND, no -c; --pid and --export only with lock" {
	usage_error "lock takes no command \(found 'true'\)" lock -k k true
	usage_error "lock takes no command \(found '-c'\)" lock -k k -c true
	usage_error "lock: missing -k KEY" lock -n
	usage_error "unlock takes only -k KEY" unlock -n
	usage_error "--pid and --export go with 'rlock lock'" --export -k k true
}
