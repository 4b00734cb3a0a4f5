#!/usr/bin/env bats
# TLS against Debian's redis-server on a TLS port (tests/tls.bash): every
# failure of the issue as a named test with its exact line and status, no
# byte of a command or a password in clear text, and the lock's whole
# behaviour over TLS (run, -n, -w, --fair, -N, re-entrancy, status, list,
# release --force, a SIGKILLed holder, a lease lost when the server
# restarts), and --redlock over three TLS masters.

load helper
load tls

setup_file() {
	tls_certs
	tls_redis_start tls
	tls_redis_start mtls --tls-auth-clients yes
	tls_redis_start wronghost --tls-cert-file "$TLS_DIR/wronghost.crt"
	tls_redis_start expired --tls-cert-file "$TLS_DIR/expired.crt"
	tls_redis_start stall
	tls_redis_start auth --requirepass s3cretpw
	redis_start plain
}

teardown_file() {
	local n
	# m1-m3: the --redlock test's masters, left running when it fails.
	for n in tls mtls wronghost expired stall auth plain m1 m2 m3; do
		redis_stop "$n"
	done
}

setup() {
	export RLOCK_TLS_CACERT=$TLS_DIR/ca.crt
	P=$(tls_port tls)
	export RLOCK_URL=rediss://localhost:$P
	T=$BATS_TEST_TMPDIR
	BG=()
}

teardown() {
	rm -f "$T/go"
	stop_bg "${BG[@]}"
	[ -z "$(keys_without_ttl_tls tls)" ] || fail "keys without TTL"
}

# Keys left on NAME's server without an expiry (must be none).
keys_without_ttl_tls() {
	local k
	tcli "$1" --scan | while IFS= read -r k; do
		[ "$(tcli "$1" pttl "$k")" = -1 ] && printf '%s\n' "$k"
	done
	return 0
}

# sh -c "$HOLD" sh FILE: hold until FILE is gone.
HOLD='while [ -e "$1" ]; do sleep 0.05; done'

# one_line STATUS LINE RLOCK-ARGS...: exactly that status, nothing on
# stdout, and exactly LINE on stderr.
one_line() {
	local st=$1 line=$2
	shift 2
	run -"$st" --separate-stderr timeout "$(tf 30)" "$RLOCK" "$@"
	[ -z "$output" ] || fail "stdout: $output"
	[ "$stderr" = "$line" ] || fail "stderr: $stderr
want:   $line"
}

# ---------------------------------------------------------------- errors

@test "tls: a server certificate from an unknown CA -> 77, says which CA and the cure" {
	local line="rlock: rediss://localhost:$P/0: TLS: the server's certificate is signed by an unknown CA (issuer \"rlock-test-ca\"); give that CA with --tls-cacert FILE (or RLOCK_TLS_CACERT)"
	one_line 77 "$line" --tls-cacert "$TLS_DIR/ca2.crt" -k k -- echo no
	# The system store knows no test CA either.
	RLOCK_TLS_CACERT='' one_line 77 "$line" -k k -- echo no
	# The subcommands say the same.
	one_line 77 "$line" status --tls-cacert "$TLS_DIR/ca2.crt" k
}

@test "tls: a certificate for another host name -> 77, names both; --tls-sni accepts it" {
	local w
	w=$(tls_port wronghost)
	one_line 77 "rlock: rediss://localhost:$w/0: TLS: the server's certificate is for wrong.example, not localhost (host name mismatch); connect by a name it lists, or name one with --tls-sni" \
		-u "rediss://localhost:$w" -k k -- echo no
	one_line 77 "rlock: rediss://127.0.0.1:$w/0: TLS: the server's certificate is for wrong.example, not 127.0.0.1 (host name mismatch); connect by a name it lists, or name one with --tls-sni" \
		-u "rediss://127.0.0.1:$w" -k k -- echo no
	run -0 --separate-stderr "$RLOCK" -u "rediss://127.0.0.1:$w" \
		--tls-sni wrong.example -k k -- echo ran
	assert_output ran
	[ -z "$stderr" ]
	# An IP address is checked against the IP names of the right one.
	run -0 "$RLOCK" -u "rediss://127.0.0.1:$P" -k k -- echo ran
	assert_output ran
}

@test "tls: an expired server certificate -> 77, says when" {
	one_line 77 "rlock: rediss://localhost:$(tls_port expired)/0: TLS: the server's certificate expired on 2020-02-01 00:00 UTC; renew it on the server (or check this machine's clock)" \
		-u "rediss://localhost:$(tls_port expired)" -k k -- echo no
}

@test "tls: a server that requires a client certificate, none given -> 77" {
	one_line 77 "rlock: rediss://localhost:$(tls_port mtls)/0: TLS: the server requires a client certificate; give one with --tls-cert FILE and --tls-key FILE (or RLOCK_TLS_CERT, RLOCK_TLS_KEY)" \
		-u "rediss://localhost:$(tls_port mtls)" -k k -- echo no
}

@test "tls: a client certificate the server refuses -> 77; a good one, from options or the environment, works" {
	local m
	m=$(tls_port mtls)
	one_line 77 "rlock: rediss://localhost:$m/0: TLS: the server refused our client certificate (tlsv1 alert unknown ca); give --tls-cert one that a CA the server trusts (its tls-ca-cert-file) signed, and that is valid now" \
		-u "rediss://localhost:$m" --tls-cert "$TLS_DIR/client2.crt" \
		--tls-key "$TLS_DIR/client.key" -k k -- echo no
	run -0 --separate-stderr "$RLOCK" -u "rediss://localhost:$m" \
		--tls-cert "$TLS_DIR/client.crt" --tls-key "$TLS_DIR/client.key" \
		-k k -- echo ran
	assert_output ran
	[ -z "$stderr" ]
	RLOCK_TLS_CERT=$TLS_DIR/client.crt RLOCK_TLS_KEY=$TLS_DIR/client.key \
		run -0 --separate-stderr "$RLOCK" -u "rediss://localhost:$m" \
		-k k -- echo env
	assert_output env
}

@test "tls: OpenSSL is loaded only by a run that uses TLS" {
	# COMMAND's parent is rlock, holding the lock: its maps show what it
	# loaded by then.
	run "$RLOCK" -u "unix://$REDIS_SOCK" -k k -- sh -c 'cat /proc/$PPID/maps'
	assert_success
	assert_output --partial '/libc.so'
	refute_output --partial 'libssl'
	refute_output --partial 'libcrypto'
	run "$RLOCK" -k k -- sh -c 'cat /proc/$PPID/maps'
	assert_success
	assert_output --partial 'libssl.so'
	assert_output --partial 'libcrypto.so'
}

@test "tls: no loadable OpenSSL -> 71 and one line for TLS; a plain run and --version go on" {
	# An empty libssl.so.3 first on the library path: dlopen refuses it.
	mkdir -p "$T/nossl"
	: > "$T/nossl/libssl.so.3"
	run -71 --separate-stderr env LD_LIBRARY_PATH="$T/nossl" \
	    "$RLOCK" -k k -- echo no
	assert_output ''
	[[ $stderr == "rlock: TLS needs OpenSSL's libssl.so.3, which cannot be loaded: $T/nossl/libssl.so.3: "* ]] ||
		fail "$stderr"
	[ "${#stderr_lines[@]}" = 1 ] || fail "$stderr"
	run -0 env LD_LIBRARY_PATH="$T/nossl" "$RLOCK" \
	    -u "unix://$REDIS_SOCK" -k k -- echo plain
	assert_output plain
	run -0 env LD_LIBRARY_PATH="$T/nossl" "$RLOCK" --version
	assert_output --partial "TLS needs OpenSSL's libssl.so.3, which cannot be loaded"
}

@test "tls: rediss:// against a plain port -> 69, says so, within --connect-timeout" {
	local t0
	t0=$(now_ms)
	one_line 69 "rlock: cannot reach rediss://127.0.0.1:$REDIS_PORT/0: TLS: that port speaks plain text, not TLS (rediss:// or --tls against a plain Redis port); use redis:// there, or the server's TLS port" \
		-u "rediss://127.0.0.1:$REDIS_PORT" --connect-timeout "$(tf 2)" \
		-k k -- echo no
	# No hang (the answer comes at half of --connect-timeout; the window
	# is wide, as a loaded machine takes seconds to start rlock at all).
	[ $(( $(now_ms) - t0 )) -lt "$(tf_ms 10000)" ] ||
		fail "took $(( $(now_ms) - t0 )) ms"
	# --tls with a redis:// URL is the same (and named as TLS).
	one_line 69 "rlock: cannot reach rediss://127.0.0.1:$REDIS_PORT/0: TLS: that port speaks plain text, not TLS (rediss:// or --tls against a plain Redis port); use redis:// there, or the server's TLS port" \
		--tls -u "redis://127.0.0.1:$REDIS_PORT" \
		--connect-timeout "$(tf 2)" -k k -- echo no
}

@test "tls: redis:// against a TLS port -> 69, says so" {
	one_line 69 "rlock: cannot reach redis://127.0.0.1:$P/0: that port speaks TLS, not plain text (redis:// against a TLS port); use rediss:// (or --tls)" \
		-u "redis://127.0.0.1:$P" -k k -- echo no
}

@test "tls: a server that never finishes the handshake -> 69 within --connect-timeout" {
	local pid t0 took
	pid=$(cat "$BATS_FILE_TMPDIR/stall/pid")
	kill -STOP "$pid"
	t0=$(now_ms)
	run -69 --separate-stderr "$RLOCK" -u "rediss://localhost:$(tls_port stall)" \
		--connect-timeout "$(tf 1)" -k k -- echo no
	took=$(( $(now_ms) - t0 ))
	kill -CONT "$pid"
	[ "$stderr" = "rlock: cannot reach rediss://localhost:$(tls_port stall)/0: TLS: no handshake within --connect-timeout: the server took the connection and never answered our TLS hello" ] ||
		fail "stderr: $stderr"
	# It waited the timeout out, and did not hang (a wide window: a
	# loaded machine takes seconds to start rlock at all).
	[ "$took" -ge "$(tf_ms 1000)" ] && [ "$took" -lt "$(tf_ms 10000)" ] ||
		fail "took $took ms"
}

@test "tls: --tls-insecure connects to the expired one, with one warning" {
	run -0 --separate-stderr "$RLOCK" --tls-insecure \
		-u "rediss://localhost:$(tls_port expired)" -k k -- echo ran
	assert_output ran
	[ "$stderr" = "rlock: warning: --tls-insecure: the server's certificate is not verified, so anyone on the network path can pose as it and read the password and every command" ]
}

# relay PORT: a socat that records in $T/wire every byte sent to it and
# forwards it to PORT, on a port of this file's class below the ephemeral
# range, in PX; its pid in RELAY and BG. Another port when a program on
# the machine took the one picked before socat could bind it.
relay() {
	local try
	for try in 1 2 3 4 5; do
		PX=$(closed_port 20000 12000) || continue
		socat -r "$T/wire" TCP-LISTEN:"$PX",bind=127.0.0.1,reuseaddr,fork \
			TCP:127.0.0.1:"$1" 3>&- &
		RELAY=$!
		wait_until 5 eval "! proc_alive $RELAY ||
		    (exec 9<>/dev/tcp/127.0.0.1/$PX) 2>/dev/null"
		if proc_alive "$RELAY"; then
			BG+=("$RELAY")
			return 0
		fi
		wait "$RELAY" 2>/dev/null || true
	done
	fail "no port for the relay in 5 tries"
}

@test "tls: no byte of a command or the password crosses in clear text" {
	command -v socat >/dev/null || fail "socat missing (.ci/deps)"
	# A relay that records every byte rlock sends.
	relay "$(tls_port auth)"
	RLOCK_PASSWORD=s3cretpw run -0 --separate-stderr "$RLOCK" \
		-u "rediss://localhost:$PX" -k wire -- echo ran
	assert_output ran
	[ -s "$T/wire" ]
	! grep -qa -e s3cretpw -e EVALSHA -e AUTH -e wire "$T/wire" ||
		fail "clear text on the wire"
	# The relay does see them without TLS (so the check can fail).
	kill "$RELAY"
	wait "$RELAY" 2>/dev/null || true
	: > "$T/wire"
	relay "$REDIS_PORT"
	run -0 "$RLOCK" -u "redis://127.0.0.1:$PX" -k wire -- true
	grep -qa EVALSHA "$T/wire"
}

# ---------------------------------------------------------------- the lock

@test "tls: run passes the status and the fence; nothing is left without expiry" {
	run -0 --separate-stderr "$RLOCK" -k r -- sh -c 'echo "$RLOCK_FENCE"'
	[[ $output =~ ^[0-9]+$ ]]
	[ -z "$stderr" ]
	run -3 "$RLOCK" -k r -- sh -c 'exit 3'
	[ "$(tcli tls exists 'rlock:{r}')" = 0 ]
}

@test "tls: -n and -w against a holder; a plain waiter is woken by the release" {
	touch "$T/go"
	"$RLOCK" -k w -- sh -c "$HOLD" sh "$T/go" & BG+=($!)
	wait_until 5 held w tls
	run -75 --separate-stderr "$RLOCK" -n -k w -- echo no
	[[ $stderr == "rlock: 'w' is held by "*"(pid "*"); not waiting (--nonblock)" ]]
	run -75 --separate-stderr "$RLOCK" -w "$(tf 0.3)" -k w -- echo no
	(sleep "$(tf 0.5)"; rm -f "$T/go") &
	local t0=$(now_ms)
	run -0 --separate-stderr "$RLOCK" -w "$(tf 20)" -k w -- echo got
	assert_output got
	# Woken by the release, not by the 30 s lease.
	[ $(( $(now_ms) - t0 )) -lt "$(tf_ms 10000)" ]
}

@test "tls: --fair waiters are served in order" {
	touch "$T/go"
	"$RLOCK" --fair -k f -- sh -c "$HOLD" sh "$T/go" & BG+=($!)
	wait_until 5 held f tls
	"$RLOCK" --fair -k f -- sh -c 'echo 1 >> "$1"' sh "$T/order" & BG+=($!)
	wait_until 5 eval "[ \"\$(tcli tls llen 'rlock:{f}:q')\" = 1 ]"
	"$RLOCK" --fair -k f -- sh -c 'echo 2 >> "$1"' sh "$T/order" & BG+=($!)
	wait_until 5 eval "[ \"\$(tcli tls llen 'rlock:{f}:q')\" = 2 ]"
	rm -f "$T/go"
	wait_until 20 eval "[ \"\$(wc -l < '$T/order' 2>/dev/null)\" = 2 ]"
	[ "$(cat "$T/order")" = "$(printf '1\n2')" ]
}

@test "tls: -N 2 lets two in, the third waits for a slot" {
	touch "$T/go"
	"$RLOCK" -N 2 -k n -- sh -c "$HOLD" sh "$T/go" & BG+=($!)
	"$RLOCK" -N 2 -k n -- sh -c "$HOLD" sh "$T/go" & BG+=($!)
	wait_until 5 eval "[ \"\$(tcli tls zcard 'rlock:{n}:sem')\" = 2 ]"
	run -75 "$RLOCK" -N 2 -n -k n -- echo no
	(sleep "$(tf 0.3)"; rm -f "$T/go") &
	run -0 "$RLOCK" -N 2 -w "$(tf 20)" -k n -- echo slot
	assert_output slot
}

@test "tls: a nested rlock of the same KEY re-enters" {
	run -0 --separate-stderr timeout "$(tf 20)" "$RLOCK" -k re -- \
		"$RLOCK" -k re -- echo inner
	assert_output inner
	[ -z "$stderr" ]
}

@test "tls: status, list and release --force" {
	touch "$T/go"
	"$RLOCK" -l "$(tf 3)" -k s -- sh -c "$HOLD" sh "$T/go" & BG+=($!)
	wait_until 5 held s tls
	run -0 --separate-stderr "$RLOCK" status s
	[[ $output == s:*held* ]]
	run -0 --separate-stderr "$RLOCK" status --json s
	[ "$(jq -r '.[0].held' <<< "$output")" = true ]
	run -0 --separate-stderr "$RLOCK" list
	[[ $output == s$'\t'* ]]
	run -0 --separate-stderr "$RLOCK" release --force s
	[ "$(tcli tls exists 'rlock:{s}')" = 0 ]
	# The holder learns at its next extend and exits 70.
	wait "${BG[0]}" && fail "the broken holder exited 0" || true
	BG=()
}

@test "tls: renewals over TLS; the idle watch is not fooled by TLS records" {
	# Several lease/3 renewals on the renewal thread's connection, which
	# the supervisor and then the thread watch while idle: a TLS record
	# that is no reply (a session ticket) must not count as a drop.
	run -0 --separate-stderr "$RLOCK" -v -l "$(tf 0.6)" -k renew -- \
		sleep "$(tf 2)"
	[[ $stderr == *"acquired 'renew'"*"released 'renew'"* ]]
	[[ $stderr != *dropped* && $stderr != *cannot* ]] || fail "$stderr"
}

@test "tls: a SIGKILLed holder frees the lock at its lease's end" {
	"$RLOCK" -l "$(tf 1)" -k kill -- sleep 60 & BG+=($!)
	wait_until 5 held kill tls
	kill -KILL "${BG[0]}"
	run -0 --separate-stderr "$RLOCK" -w "$(tf 10)" -k kill -- echo after
	assert_output after
}

@test "tls: the server restarts and forgets the lock: --on-lost acts, exit 70" {
	"$RLOCK" -l "$(tf 1.5)" -k lost -- sleep 60 > "$T/out" 2> "$T/err" &
	BG+=($!)
	wait_until 5 held lost tls
	tls_redis_restart tls
	wait_until 20 eval "! kill -0 ${BG[0]} 2>/dev/null"
	run wait "${BG[0]}"
	[ "$status" = 70 ] || fail "status $status: $(cat "$T/err")"
	grep -q "lost the lock 'lost'" "$T/err"
	BG=()
	# And the restarted server serves TLS again.
	run -0 "$RLOCK" -k lost -- echo again
	assert_output again
}

# ---------------------------------------------------------------- redlock

@test "tls: --redlock over three TLS masters: run, contention, status" {
	local u=()
	tls_redis_start m1
	tls_redis_start m2
	tls_redis_start m3
	# Three handshakes within one --connect-timeout, which valgrind runs
	# one thread at a time: its default 5 s is what a loaded machine
	# overran under valgrind; scaled here as every bound is.
	u=(-u "rediss://localhost:$(tls_port m1)" -u "rediss://127.0.0.1:$(tls_port m2)"
		-u "rediss://localhost:$(tls_port m3)" --connect-timeout "$(tf 5)")
	run -0 --separate-stderr "$RLOCK" --redlock "${u[@]}" -k rl -- echo ran
	assert_output ran
	[ -z "$stderr" ]
	touch "$T/go"
	"$RLOCK" --redlock "${u[@]}" -k rl -- sh -c "$HOLD" sh "$T/go" & BG+=($!)
	wait_until 5 eval "[ \"\$(tcli m1 exists 'rlock:{rl}')\" = 1 ]"
	run -75 "$RLOCK" --redlock "${u[@]}" -n -k rl -- echo no
	run -0 "$RLOCK" --redlock "${u[@]}" status rl
	(sleep "$(tf 0.3)"; rm -f "$T/go") &
	run -0 "$RLOCK" --redlock "${u[@]}" -w "$(tf 20)" -k rl -- echo got
	assert_output got
	redis_stop m1
	redis_stop m2
	redis_stop m3
}
