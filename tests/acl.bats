#!/usr/bin/env bats
# Least privilege. The ACL user of "A Redis user for rlock" (README and man
# page; the line is read from there) runs every mode; a user missing any
# one of its rules gets 77 and one line naming that rule, before anything
# is written: never 70, never a release half done, never a waiter left to
# the lease's end. Redis 7's default for a new user (resetchannels) is the
# case the issue found: every run exited 70.

load helper

# Each test runs rlock some 30 to 60 times: on a loaded machine that
# takes longer than helper.bash's 90 s.
BATS_TEST_TIMEOUT=$(tf 240)

setup_file() {
	redis_start main
	local top=$BATS_TEST_DIRNAME/..
	ACL_RULES=$(sed -n 's/^    ACL SETUSER rlock on >PASSWORD //p' \
		"$top/README.md")
	export ACL_RULES
}

teardown_file() {
	redis_stop main
}

setup() {
	rcli flushall >/dev/null
	export U="unix://app:pw@$REDIS_SOCK"
}

teardown() {
	local p
	for p in ${BG:-}; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null || true
	done
	rcli acl deluser app >/dev/null
}

# sh -c "$HOLD" sh FILE: hold until FILE is gone.
HOLD='while [ -e "$1" ]; do sleep 0.05; done'
slots() { [ "$(rcli zcard "rlock:{$1}:sem")" = "$2" ]; }

# as_user RULE...: the user app (password pw) with exactly these rules.
as_user() {
	rcli acl setuser app reset on '>pw' "$@" >/dev/null
	[ "$(rcli acl getuser app | head -1)" = flags ] ||
		fail "ACL SETUSER app $* failed"
}

# refused RULE-TEXT CMD...: 77, nothing on stdout, and exactly the one line
# "rlock: URL refused us: WHAT: the ACL user lacks RULE-TEXT, ...; add ..."
refused() {
	local rule=$1
	shift
	run -77 --separate-stderr "$@"
	[ -z "$output" ] || fail "stdout: $output"
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "stderr: $stderr"
	[[ ${stderr_lines[0]} == "rlock: unix://app:***@$REDIS_SOCK?db=0 refused us: "*": the ACL user lacks $rule, for "*"; add "*": ACL SETUSER app "*' (every permission rlock needs: "A Redis user for rlock" in rlock(1))' ]] ||
		fail "line: ${stderr_lines[0]} (want the lack of $rule)"
}

@test "acl: the README and the man page give the same line" {
	[ -n "$ACL_RULES" ]
	grep -qF "ACL SETUSER rlock on >PASSWORD $ACL_RULES" \
		"$BATS_TEST_DIRNAME/../man/rlock.1"
}

@test "acl: the documented user runs every mode, and nothing more is said" {
	# shellcheck disable=SC2086
	as_user $ACL_RULES
	run -0 --separate-stderr "$RLOCK" -u "$U" -k a -- echo ran
	assert_output ran
	[ -z "$stderr" ]
	# CONFIG (the eviction warning) is not among the rules: with -v, a
	# line says the policy could not be checked, and nothing else.
	run -0 --separate-stderr "$RLOCK" -v -u "$U" -k v -- true
	[[ $stderr == *"cannot check the server's maxmemory-policy (CONFIG GET: NOPERM"* ]]
	[[ $stderr != *lacks* ]]
	# A plain waiter (BLPOP), woken by the holder's release; the holders
	# hold until their file goes.
	local go=$BATS_TEST_TMPDIR/go
	touch "$go"
	"$RLOCK" -u "$U" -k w -- sh -c "$HOLD" sh "$go" & BG=$!
	wait_until 5 held w
	# The holder comes with -n's answer: no +hgetall needed to name it.
	run -75 --separate-stderr "$RLOCK" -u "$U" -n -k w -- true
	[[ $stderr == "rlock: 'w' is held by $(id -un)@$(hostname) (pid $BG: sh -c "*"); not waiting (--nonblock)" ]] ||
		fail "$stderr"
	(sleep "$(tf 0.3)"; rm -f "$go") &
	run -0 --separate-stderr "$RLOCK" -u "$U" -w "$(tf 10)" -k w -- echo got
	assert_output got
	[ -z "$stderr" ]
	# --fair: subscribed, queued, heartbeating, handed the turn.
	touch "$go"
	"$RLOCK" -u "$U" --fair -k f -- sh -c "$HOLD" sh "$go" & BG="$BG $!"
	wait_until 5 held f
	(sleep "$(tf 0.3)"; rm -f "$go") &
	run -0 --separate-stderr "$RLOCK" -u "$U" --fair -w "$(tf 10)" -k f \
		-- echo fair
	assert_output fair
	[ -z "$stderr" ]
	# -N 2: two holders, a third waits for a slot.
	touch "$go"
	"$RLOCK" -u "$U" -N 2 -k n -- sh -c "$HOLD" sh "$go" & BG="$BG $!"
	"$RLOCK" -u "$U" -N 2 -k n -- sh -c "$HOLD" sh "$go" & BG="$BG $!"
	wait_until 5 slots n 2
	(sleep "$(tf 0.3)"; rm -f "$go") &
	run -0 --separate-stderr "$RLOCK" -u "$U" -N 2 -w "$(tf 10)" -k n \
		-- echo slot
	assert_output slot
	[ -z "$stderr" ]
	# The operator's subcommands, on a lock held now.
	"$RLOCK" -u "$U" -k s -- sleep "$(tf 30)" & BG="$BG $!"
	wait_until 5 held s
	run -0 --separate-stderr "$RLOCK" -u "$U" status s
	[[ $output == s:*held* ]]
	[ -z "$stderr" ]
	run -0 --separate-stderr "$RLOCK" -u "$U" list
	[[ $output == s$'\t'* ]]
	run -0 --separate-stderr "$RLOCK" -u "$U" release --force s
	[ "$(rcli exists 'rlock:{s}')" = 0 ]
	[ -z "$(keys_without_ttl)" ]
}

# Each mode in turn until one fails: its status and lines in $status and
# $stderr (run's), and in $BEFORE and $AFTER every key and value there
# was before and after the last one run. Fast: acquire asks for what waiting would need
# even when the lock is free.
every_mode() {
	local args
	for args in "-k a -- true" "--fair -k b -- true" "-N 2 -k c -- true" \
	    "status held" "list" "release --force held"; do
		# Wake tokens of the modes before go: they expire within 5 s.
		BEFORE=$(dump 1)
		# shellcheck disable=SC2086
		run --separate-stderr "$RLOCK" -u "$U" $args
		[ "$status" = 0 ] || break
	done
	AFTER=$(dump 0)
}

# dump 1|0: every key with its type and a hash of its value, sorted, in
# one round trip; with 1, wake tokens are deleted first.
dump() {
	rcli eval "local r = {}
		if ARGV[1] == '1' then
			for _, k in ipairs(redis.call('KEYS', '*:tok')) do
				redis.call('DEL', k)
			end
		end
		for _, k in ipairs(redis.call('KEYS', '*')) do
			r[#r + 1] = k .. ' ' .. redis.call('TYPE', k).ok .. ' ' ..
			    redis.sha1hex(redis.call('DUMP', k))
		end
		table.sort(r)
		return r" 0 "$1"
}

# without_each FIRST LAST: for the rules FIRST..LAST (from 1) of the line,
# a user with all the others gets 77 naming it, with nothing written.
without_each() {
	local rule others r line nth=0
	for rule in $ACL_RULES; do
		case $rule in
		reset*|-@all) continue ;;
		esac
		nth=$((nth + 1))
		[ "$nth" -ge "$1" ] && [ "$nth" -le "$2" ] || continue
		others=()
		for r in $ACL_RULES; do
			[ "$r" = "$rule" ] || others+=("$r")
		done
		rcli flushall >/dev/null
		# A lock some other client holds, for status, list, release.
		rcli set 'rlock:{held}' tok px 60000 >/dev/null
		as_user "${others[@]}"
		every_mode
		line=${stderr_lines[0]:-}
		[ "$status" = 77 ] ||
			fail "without $rule: status $status ($stderr)"
		[ "${#stderr_lines[@]}" -eq 1 ] ||
			fail "without $rule: $stderr"
		case $rule in
		'&'*) want="lacks $rule or +spublish, for SPUBLISH" ;;
		*) want="lacks $rule, for " ;;
		esac
		[[ $line == *"refused us: "*": the ACL user $want"* ]] ||
			fail "without $rule: $line"
		# Refused before any write, and what is left expires.
		[ "$BEFORE" = "$AFTER" ] ||
			fail "without $rule: written: $(diff <(echo "$BEFORE") <(echo "$AFTER"))"
		[ -z "$(keys_without_ttl)" ]
	done
	[ "$nth" -ge "$1" ] || fail "only $nth rules"
}

@test "acl: without any one of rules 1-9, 77 naming it, nothing written" {
	without_each 1 9
}

@test "acl: without any one of rules 10-18, 77 naming it, nothing written" {
	without_each 10 18
}

@test "acl: without any one of rules 19-27, 77 naming it, nothing written" {
	without_each 19 27
}

@test "acl: without any one of rules 28 on, 77 naming it, nothing written" {
	without_each 28 99
}

# The README's table row for a mode: its rules, whole.
mode_rules() {
	local row
	row=$(grep -F "| $1 |" "$BATS_TEST_DIRNAME/../README.md" |
		sed -n 's/^| [^|]* | `\([^`]*\)`.*/\1/p')
	[ -n "$row" ] || fail "no row '$1' in the README's table"
	echo "$row"
}

# man_rules MARK: the rules of the man page's row whose .It line is MARK
# in rlock(7)'s THE ACL USER (its .Li lines that follow).
man_rules() {
	M=$1 awk '$0 == ".Sh THE ACL USER" { sec = 1 }
		sec && $0 == ENVIRON["M"] { on = 1; next }
		on && /^\.Li / { sub(/^\.Li /, ""); out = out (out ? " " : "") $0; next }
		on { exit } END { print out }' "$BATS_TEST_DIRNAME/../man/rlock.7"
}

# The one table: src/acl-rows.sh makes each mode's rules from the RUNS
# lines of the scripts it runs (those make the scripts' pre-check too).
@test "acl: the README's and the man page's rows are the ones made from the scripts" {
	local mode rules mark n=0
	while IFS='|' read -r mode rules; do
		n=$((n + 1))
		if [ "$mode" = all ]; then
			[ "~rlock:* &rlock:* ${ACL_RULES#resetkeys ~rlock:\* resetchannels &rlock:\* -@all }" = "$rules" ] ||
				fail "the README's line is not: $rules"
			continue
		fi
		[ "$(mode_rules "$mode")" = "$rules" ] ||
			fail "README row $mode: want $rules"
		case $mode in
		run,*) mark='.It run, Fl w' ;;
		*-n*) mark='.It run with Fl n' ;;
		*fair*) mark='.It Fl \-fair' ;;
		*'`-s`'*) mark='.It Fl s' ;;
		*-N*) mark='.It Fl N' ;;
		*status*) mark='.It Cm status' ;;
		*list*) mark='.It Cm list' ;;
		*release*) mark='.It Cm release Fl \-force' ;;
		*) fail "no man page row for $mode" ;;
		esac
		[ "$(man_rules "$mark")" = "$rules" ] ||
			fail "man page row $mode: $(man_rules "$mark"), want $rules"
	done < <(sh "$BATS_TEST_DIRNAME/../src/acl-rows.sh")
	[ "$n" = 9 ]
}

# row_mode MODE: run MODE (a README row) as the user app, its lock free or,
# for the operator's subcommands, held by another client; the scripts not
# in the server's cache.
row_mode() {
	rcli flushall >/dev/null
	# Not cached: +eval is needed then (EVALSHA answers NOSCRIPT).
	rcli script flush >/dev/null
	rcli set 'rlock:{held}' tok px 60000 >/dev/null
	case $1 in
	run,*) set -- -w "$(tf 5)" -k a -- true ;;
	*-n*) set -- -n -k a -- true ;;
	*fair*) set -- --fair -w "$(tf 5)" -k a -- true ;;
	*'`-s`'*) set -- -s -w "$(tf 5)" -k a -- true ;;
	*-N*) set -- -N 2 -w "$(tf 5)" -k a -- true ;;
	*status*) set -- status held ;;
	*list*) set -- list ;;
	*release*) set -- release --force held ;;
	esac
	run --separate-stderr "$RLOCK" -u "$U" "$@"
}

# Issue 26: a status user made exactly from the documented row got 77
# (inspect.lua ran EXISTS, which the row lacked). Every row now: its user
# runs the mode, and lacks any one rule of it, 77 naming that rule.
@test "acl: a user made of each row runs that mode; without any one rule, 77 naming it" {
	local mode rules rule r others want
	while IFS='|' read -r mode rules; do
		[ "$mode" != all ] || continue
		# shellcheck disable=SC2086
		as_user $rules
		row_mode "$mode"
		[ "$status" = 0 ] && [ -z "$stderr" ] ||
			fail "$mode with its row: status $status: $stderr"
		for rule in $rules; do
			others=()
			for r in $rules; do
				[ "$r" = "$rule" ] || others+=("$r")
			done
			as_user "${others[@]}"
			row_mode "$mode"
			[ "$status" = 77 ] ||
				fail "$mode without $rule: status $status ($stderr)"
			case $rule in
			'&'*) want="lacks $rule or +s*, for S" ;;
			+spublish) want="lacks *+spublish, for SPUBLISH" ;;
			*) want="lacks $rule, for " ;;
			esac
			[[ ${stderr_lines[0]} == *"the ACL user "$want* ]] ||
				fail "$mode without $rule: $stderr"
			[ -z "$(keys_without_ttl)" ]
		done
	done < <(sh "$BATS_TEST_DIRNAME/../src/acl-rows.sh")
}

@test "acl: the table's run row runs, waits and records; without +blpop, -n runs and counts a skip" {
	local rules
	rules=$(mode_rules 'run, `-w` (a plain waiter)')
	# shellcheck disable=SC2086
	as_user $rules
	run -0 --separate-stderr "$RLOCK" -u "$U" -k a -- echo ran
	assert_output ran
	[ -z "$stderr" ]
	local go=$BATS_TEST_TMPDIR/go
	touch "$go"
	"$RLOCK" -k a -- sh -c "$HOLD" sh "$go" & BG="$BG $!"
	wait_until 5 held a
	(sleep "$(tf 0.3)"; rm -f "$go") &
	run -0 --separate-stderr "$RLOCK" -u "$U" -w "$(tf 10)" -k a -- echo waited
	assert_output waited
	[ -z "$stderr" ]
	# The same without +blpop: -n, and a run skipped while held.
	# shellcheck disable=SC2086
	as_user ${rules/+blpop/}
	run -0 --separate-stderr "$RLOCK" -u "$U" -n -k b -- echo ran
	[ -z "$stderr" ]
	touch "$go"
	"$RLOCK" -k b -- sh -c "$HOLD" sh "$go" & BG="$BG $!"
	wait_until 5 held b
	run -75 --separate-stderr "$RLOCK" -u "$U" -n -q -k b -- true
	[ "$(rcli hget 'rlock:{b}:last' skips)" = 1 ]
	rm -f "$go"
}

# A cron fleet's skip is one script call that asks only what it writes,
# the skip count: without its rights 77 naming one, nothing written;
# without a right only a holder needs (+lpush, the release's wake-up), a
# skip counted: the holder's rights are asked when it gets KEY.
@test "acl: -n that finds KEY held asks only for the skip count's rights" {
	local go=$BATS_TEST_TMPDIR/go before
	touch "$go"
	"$RLOCK" -k h -- sh -c "$HOLD" sh "$go" & BG=$!
	wait_until 5 held h
	# shellcheck disable=SC2086
	as_user ${ACL_RULES/+hset /}
	before=$(dump 0)
	refused '+hset' "$RLOCK" -u "$U" -n -k h -- true
	[ "$(dump 0)" = "$before" ] || fail "written: $(diff <(echo "$before") <(dump 0))"
	# shellcheck disable=SC2086
	as_user ${ACL_RULES/+pexpire /}
	refused '+pexpire' "$RLOCK" -u "$U" -n -k h -- true
	[ "$(dump 0)" = "$before" ] || fail "written: $(diff <(echo "$before") <(dump 0))"
	# shellcheck disable=SC2086
	as_user ${ACL_RULES/+lpush /}
	run -75 --separate-stderr "$RLOCK" -u "$U" -n -k h -- true
	[[ $stderr == "rlock: 'h' is held by $(id -un)@"*" (pid "*": sh -c "*"); not waiting (--nonblock)" ]] ||
		fail "$stderr"
	[ "$(rcli hget 'rlock:{h}:last' skips)" = 1 ]
	[ -z "$(keys_without_ttl)" ]
	rm -f "$go"
}

@test "acl: Redis 7's default user (resetchannels): 77 naming the channels, not 70; no half release" {
	as_user '~*' '+@all' resetchannels
	refused '&rlock:* or +spublish' "$RLOCK" -u "$U" -k k -- echo must-not-run
	[[ $stderr == *"for SPUBLISH on channel rlock:{k}:wake; add them: ACL SETUSER app &rlock:* +spublish"* ]]
	# Nothing was taken, so there is nothing to release or to wait for.
	[ "$(rcli dbsize)" = 0 ]
	# A waiter with that user, while another client holds the lock, is
	# told at once rather than left to the holder's lease.
	"$RLOCK" -k k -- sleep "$(tf 30)" & BG=$!
	wait_until 5 held k
	local t0=$(now_ms)
	refused '&rlock:* or +spublish' "$RLOCK" -u "$U" -k k -- true
	[ $(( $(now_ms) - t0 )) -lt "$(tf_ms 5000)" ]
	refused '&rlock:* or +ssubscribe' "$RLOCK" -u "$U" --fair -k k -- true
	# The holder's lock is untouched.
	[ "$(rcli exists 'rlock:{k}')" = 1 ]
	# The channels alone cure it.
	rcli acl setuser app '&rlock:*' >/dev/null
	run -0 --separate-stderr "$RLOCK" -u "$U" -k other -- echo ran
	assert_output ran
}

@test "acl: a permission taken away while the lock is held: released all the same, a waiter woken, one warning" {
	# shellcheck disable=SC2086
	as_user $ACL_RULES
	local go=$BATS_TEST_TMPDIR/go
	touch "$go"
	"$RLOCK" -u "$U" -k k -- sh -c "$HOLD" sh "$go" \
		2>"$BATS_TEST_TMPDIR/err" & local holder=$!
	BG="$BG $holder"
	wait_until 5 held k
	# A waiter (the default user) sleeps until the release wakes it.
	"$RLOCK" -w "$(tf 20)" -k k -- echo woken >"$BATS_TEST_TMPDIR/out" &
	local waiter=$!
	BG="$BG $waiter"
	wait_until 5 blocked
	# The run can no longer be recorded: that step alone is refused.
	rcli acl setuser app -hset >/dev/null
	local t0=$(now_ms)
	rm -f "$go"
	wait "$holder" || fail "holder: $? ($(cat "$BATS_TEST_TMPDIR/err"))"
	wait "$waiter" || fail "waiter: $?"
	# Woken by the release, not by the 30 s lease's end.
	[ $(( $(now_ms) - t0 )) -lt "$(tf_ms 10000)" ]
	[ "$(cat "$BATS_TEST_TMPDIR/out")" = woken ]
	run cat "$BATS_TEST_TMPDIR/err"
	[ "${#lines[@]}" -eq 1 ] || fail "stderr: $output"
	[[ $output == "rlock: warning: release done, but Redis refused a step after it (waking waiters, recording the run): recording the run: "* ]] ||
		fail "line: $output"
	[ "$(rcli exists 'rlock:{k}')" = 0 ]
	[ -z "$(keys_without_ttl)" ]
}

# taken_away RULE RLOCK-ARGS...: the documented user holds KEY k (held
# until $go is gone) with these arguments, loses RULE meanwhile, and ends:
# rlock's status in $status, its stderr in $output.
taken_away() {
	local rule=$1 go=$BATS_TEST_TMPDIR/go p
	shift
	# shellcheck disable=SC2086
	as_user $ACL_RULES
	touch "$go"
	"$RLOCK" -u "$U" "$@" -k k -- sh -c "$HOLD" sh "$go" \
		2>"$BATS_TEST_TMPDIR/err" & p=$!
	BG="$BG $p"
	wait_until 5 taken k
	rcli acl setuser app "$rule" >/dev/null
	rm -f "$go"
	status=0
	wait "$p" || status=$?
	output=$(cat "$BATS_TEST_TMPDIR/err")
}
taken() { [ "$(rcli exists "rlock:{$1}")" = 1 ] || slots "$1" 1; }
one_warning() { # STEP
	[ "$(printf '%s\n' "$output" | wc -l)" = 1 ] || fail "stderr: $output"
	[[ $output == "rlock: warning: release done, but Redis refused a step after it (waking waiters, recording the run): $1: "* ]] ||
		fail "line: $output"
}

@test "acl: a permission lost while holding -N, --min-hold, or PEXPIRE: released (or kept) all the same, nothing without an expiry" {
	# -N: the ZREM frees the slot; the meta's DEL after it is refused.
	taken_away -del -N 2
	[ "$status" = 0 ] || fail "-N: status $status: $output"
	one_warning "freeing the slot"
	[ "$(rcli zcard 'rlock:{k}:sem')" = 0 ]
	[ -z "$(keys_without_ttl)" ]
	rcli flushall >/dev/null
	# --min-hold: KEY kept to its end, though neither the meta nor the
	# last run can be written.
	taken_away -hset --min-hold "$(tf 20)"
	[ "$status" = 0 ] || fail "--min-hold: status $status: $output"
	one_warning "marking the run ended"
	[ "$(rcli pttl 'rlock:{k}')" -gt "$(tf_ms 10000)" ]
	[ -z "$(keys_without_ttl)" ]
	rcli flushall >/dev/null
	# PEXPIRE refused: the record and the wake token would stay forever;
	# they are not written.
	taken_away -pexpire
	[ "$status" = 0 ] || fail "-pexpire: status $status: $output"
	one_warning "recording the run"
	[[ $output == *"lacks +pexpire on rlock:{k}:last" ]] || fail "$output"
	[ "$(rcli exists 'rlock:{k}')" = 0 ]
	[ -z "$(keys_without_ttl)" ]
}

@test "acl: a refusal Redis words itself is 77 and named too (BLPOP, SCAN, keys)" {
	# Not through a script: the commands rlock sends itself.
	# shellcheck disable=SC2086
	as_user $ACL_RULES
	rcli acl setuser app -scan >/dev/null
	refused '+scan' "$RLOCK" -u "$U" list
	[[ $stderr == *"refused us: SCAN: the ACL user lacks +scan, for SCAN; add it: ACL SETUSER app +scan"* ]]
	# Keys outside the prefix: another --prefix than the ACL allows.
	# shellcheck disable=SC2086
	as_user $ACL_RULES
	refused '~other:*' "$RLOCK" -u "$U" --prefix other: -k k -- true
}
