#!/usr/bin/env bats
# Shell completions: bash (driven through COMP_WORDS/COMP_CWORD), zsh
# (compinit in a private ZDOTDIR, then a real TAB in a zpty), fish
# (complete -C), and the drift check: every option of `rlock --help` is in
# each completion file and in the man page.

load helper

setup_file() {
	redis_start main
	# The completions call `rlock` by name (`rlock list` for KEYs). Each
	# call is bounded by `timeout 2` (what a TAB may cost), which a
	# memcheck'd `rlock list` can overrun (one with --redlock did): under
	# `make valgrind` they call the binary the wrapper checks, that of
	# this tree. `rlock list` is still memcheck'd where a test runs
	# $RLOCK itself (here, and in status.bats).
	local bin=$RLOCK
	! under_valgrind || bin=$BATS_TEST_DIRNAME/../rlock
	mkdir -p "$BATS_FILE_TMPDIR/bin"
	ln -sf "$(readlink -f "$bin")" "$BATS_FILE_TMPDIR/bin/rlock"
	export PATH=$BATS_FILE_TMPDIR/bin:$PATH
	export COMP_DIR=$BATS_TEST_DIRNAME/../completions
	export MAN_PAGE=$BATS_TEST_DIRNAME/../man/rlock.1
}

teardown_file() {
	redis_stop main
}

teardown() {
	local p
	for p in ${HOLDER_PID:-}; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null || true
	done
	return 0
}

# bcomp LINE: what bash completes at the end of LINE (a trailing blank
# starts a new word), one candidate a line. compopt only works inside a
# real completion, so it is a no-op here.
bcomp() {
	bash -c '
		source "$1" || exit 1
		compopt() { :; }
		fn=$(complete -p rlock | sed -n "s/.* -F \([^ ]*\) .*/\1/p")
		line=$2
		COMP_LINE=$line
		COMP_POINT=${#line}
		read -ra COMP_WORDS <<< "$line"
		[[ $line == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
		"$fn" rlock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}"
	' bcomp "$COMP_DIR/rlock.bash" "$1"
}

# fcomp LINE: what fish completes at the end of LINE, without descriptions.
fcomp() {
	fish -c 'source $argv[1]; complete -C $argv[2]' "$COMP_DIR/rlock.fish" \
		"$1" | cut -f1
}

# zcomp LINE WORD...: press TAB after LINE in an interactive zsh (in a
# pty) with our completion loaded, until every WORD shows up in the
# listing (30 s, scaled, at most: compinit under load is slow, and the
# loop ends as soon as every WORD showed); prints what the screen showed.
zcomp() {
	local zd=$BATS_TEST_TMPDIR/zdot
	mkdir -p "$zd"
	ZD=$zd FP=$COMP_DIR LIMIT=$(( $(tf_ms 30000) / 1000 )) zsh -f -c '
		zmodload zsh/zpty || exit 1
		zpty z zsh -f -i
		zpty -w z "PS1=\"> \"; fpath=(\$FP \$fpath); autoload -U compinit; compinit -u -d \$ZD/dump; zstyle \":completion:*\" menu no; LISTMAX=1000"
		zpty -n -w z "$1"$'"'"'\t'"'"'
		shift
		out= SECONDS=0
		while (( SECONDS < LIMIT )); do
			zpty -r -t z chunk && out+=$chunk || sleep 0.05
			all=1
			for w in "$@"; do [[ $out == *$w* ]] || all=0; done
			(( all )) && break
		done
		zpty -d z
		print -r -- "$out"
	' zcomp "$@" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' | tr -d '\r'
}

# KEY completion reads `rlock list`: when that fails, say so first (a
# failure, not a skip: every build has it).
needs_list() {
	"$RLOCK" list >/dev/null 2>&1 || fail "'rlock list' fails here"
}

# Take `somekey` and hold it for a while, in the background.
hold_somekey() {
	"$RLOCK" -k somekey -- sleep "$(tf 5)" &
	HOLDER_PID=$!
	# A function, so Redis is asked again on every poll.
	wait_until 5 held somekey
}

# ---- bash -------------------------------------------------------------

@test "bash: the script parses and registers a completion for rlock" {
	run bash -n "$COMP_DIR/rlock.bash"
	assert_success
	run bash -c 'source "$1" && complete -p rlock' x "$COMP_DIR/rlock.bash"
	assert_success
	assert_output --regexp '^complete -F [_a-zA-Z0-9]+ rlock$'
}

@test "bash: long options" {
	run bcomp "rlock --on"
	assert_success
	assert_output "--on-lost"
	run bcomp "rlock --k"
	assert_output "$(printf '%s\n' --key --kill-after)"
	run bcomp "rlock --"
	assert_line --partial -- "--conflict-exit-code"
	assert_line -- "--fair"
	assert_line -- "--password-file"
	refute_line -- "--json"
}

@test "bash: --on-lost offers term, kill, ignore" {
	run bcomp "rlock --on-lost "
	assert_success
	assert_output "$(printf '%s\n' term kill ignore)"
	run bcomp "rlock -k x --on-lost k"
	assert_output "kill"
	# --on-lost=VALUE reaches the function as "--on-lost" "=" "VALUE".
	run bash -c '
		source "$1"; compopt() { :; }
		COMP_WORDS=(rlock --on-lost = i) COMP_CWORD=3
		COMP_LINE="rlock --on-lost=i" COMP_POINT=17
		_rlock_module; printf "%s\n" "${COMPREPLY[@]}"' x "$COMP_DIR/rlock.bash"
	assert_output "ignore"
}

@test "bash: values of -u, durations and --password-file" {
	run bcomp "rlock -u "
	assert_output "$(printf '%s\n' redis:// rediss:// unix:// \
		redis+sentinel:// rediss+sentinel:// redis+cluster:// \
		rediss+cluster://)"
	run bcomp "rlock -u redis+s"
	assert_output "redis+sentinel://"
	run bcomp "rlock -u rediss+c"
	assert_output "rediss+cluster://"
	run bcomp "rlock -k x -w "
	assert_line "5m"
	assert_line "30s"
	run bcomp "rlock --lease "
	assert_line "30s"
	touch "$BATS_TEST_TMPDIR/pwfile"
	run bcomp "rlock --password-file $BATS_TEST_TMPDIR/pwf"
	assert_output "$BATS_TEST_TMPDIR/pwfile"
	# TLS files, a directory of CAs, and the options after a subcommand.
	touch "$BATS_TEST_TMPDIR/ca.pem"
	mkdir -p "$BATS_TEST_TMPDIR/cadir"
	run bcomp "rlock --tls-cacert $BATS_TEST_TMPDIR/ca"
	assert_line "$BATS_TEST_TMPDIR/ca.pem"
	run bcomp "rlock status --tls-cacertdir $BATS_TEST_TMPDIR/ca"
	assert_output "$BATS_TEST_TMPDIR/cadir"
	run bcomp "rlock list --tls-i"
	assert_output "--tls-insecure"
	run bcomp "rlock --tls-sni x -k "
	refute_output --partial "x"
}

@test "bash: subcommands first, and their own options" {
	run bcomp "rlock "
	assert_output "$(printf '%s\n' status list release lock unlock)"
	run bcomp "rlock st"
	assert_output "status"
	run bcomp "rlock -u unix:///x/y re"
	assert_output "release"
	run bcomp "rlock status --j"
	assert_output "--json"
	run bcomp "rlock release --f"
	assert_output "--force"
	run bcomp "rlock list --"
	assert_line -- "--json"
	assert_line -- "--url"
	refute_line -- "--key"
}

@test "bash and fish: --min-hold, --max-hold, --syslog; status --prometheus" {
	run bcomp "rlock --m"
	assert_output "$(printf '%s\n' --min-hold --max-hold)"
	run bcomp "rlock --min-hold "
	assert_line "5m"
	run bcomp "rlock --min-hold 5m -k x --max-hold "
	assert_line "2h"
	run bcomp "rlock --sy"
	assert_output "--syslog"
	run bcomp "rlock status --p"
	assert_output "$(printf '%s\n' --prometheus --password-file --prefix)"
	run bcomp "rlock list --pr"
	assert_output "--prefix"
	run fcomp "rlock --m"
	assert_output "$(printf '%s\n' --max-hold --min-hold)"
	run fcomp "rlock status --pr"
	assert_output "$(printf '%s\n' --prefix --prometheus)"
	run fcomp "rlock list --pr"
	assert_output "--prefix"
}

@test "bash: --redlock in the run mode and after a subcommand" {
	# --redisson shares the prefix.
	run bcomp "rlock --red"
	assert_success
	assert_line "--redlock"
	run bcomp "rlock -u redis://a -u redis://b -u redis://c --red"
	assert_line "--redlock"
	run bcomp "rlock status --red"
	assert_line "--redlock"
	run bcomp "rlock release --r"
	assert_line "--redlock"
	# A flag: the next word is rlock's again, not its value.
	run bcomp "rlock --redlock -k foo ech"
	assert_line "echo"
	run bcomp "rlock --redlock st"
	assert_output "status"
}

@test "bash: command names after -k KEY and after --" {
	run bcomp "rlock -k foo ech"
	assert_line "echo"
	refute_line "status"
	run bcomp "rlock -nk foo -w 5 ech"
	assert_line "echo"
	run bcomp "rlock -k foo -- ech"
	assert_line "echo"
	run bcomp "rlock --key=foo ech"
	assert_line "echo"
	# As bash splits it (COMP_WORDBREAKS has '='): --key, =, foo.
	run bash -c '
		source "$1"; compopt() { :; }
		COMP_WORDS=(rlock --key = foo ech) COMP_CWORD=4
		COMP_LINE="rlock --key=foo ech" COMP_POINT=19
		_rlock_module; printf "%s\n" "${COMPREPLY[@]}"' x "$COMP_DIR/rlock.bash"
	assert_line "echo"
	# After the command's name its arguments are its own, not rlock's.
	run bcomp "rlock -k foo ls --verb"
	assert_success
	refute_output --partial -- "--verbose"
}

@test "bash: KEY completion offers the locks held now" {
	needs_list
	hold_somekey
	run bcomp "rlock -k so"
	assert_success
	assert_output "somekey"
	run bcomp "rlock status so"
	assert_output "somekey"
	run bcomp "rlock release --force so"
	assert_output "somekey"
	run bcomp "rlock -u unix://$REDIS_SOCK status "
	assert_line "somekey"
}

# --redlock masters: one server named three times is enough to get the
# per-master headers of `rlock list --redlock` that KEY completion must
# skip, and the same lock three times that it must offer once.
three_masters() {
	local u=unix://$REDIS_SOCK
	echo "-u $u -u $u -u $u"
}

@test "bash: KEY completion with --redlock offers each lock once" {
	needs_list
	hold_somekey
	run "$RLOCK" list --redlock $(three_masters)
	assert_success
	assert_line --partial "== master 1 of 3"
	run bcomp "rlock --redlock $(three_masters) -k so"
	assert_success
	assert_output "somekey"
	run bcomp "rlock status --redlock $(three_masters) "
	assert_output "somekey"
	RLOCK_URL="unix://$REDIS_SOCK unix://$REDIS_SOCK unix://$REDIS_SOCK" \
		run bcomp "rlock --redlock -k so"
	assert_output "somekey"
}

@test "bash: KEY completion is quiet and quick when Redis is unreachable" {
	local t0
	t0=$(now_ms)
	RLOCK_URL=redis://127.0.0.1:1/0 run --separate-stderr bcomp "rlock -k "
	assert_success
	assert_output ""
	[ -z "$stderr" ]
	[ $(( $(now_ms) - t0 )) -lt "$(tf_ms 3000)" ]
}

# ---- zsh --------------------------------------------------------------

@test "zsh: _rlock parses" {
	run zsh -n "$COMP_DIR/_rlock"
	assert_success
	assert_output ""
}

@test "zsh: compinit in a fresh ZDOTDIR picks up _rlock" {
	local zd=$BATS_TEST_TMPDIR/zdot
	mkdir -p "$zd"
	printf '%s\n' "fpath=($COMP_DIR \$fpath)" \
		"autoload -U compinit; compinit -u -d $zd/dump" > "$zd/.zshrc"
	run env ZDOTDIR="$zd" zsh -i -c 'print -r -- $_comps[rlock]'
	assert_success
	assert_output "_rlock"
}

@test "zsh: TAB completes --on-lost values and subcommands" {
	run zcomp "rlock --on-lost " ignore kill term
	assert_output --partial "ignore"
	assert_output --partial "kill"
	assert_output --partial "term"
	run zcomp "rlock " status list release
	assert_output --partial "status"
	assert_output --partial "release"
	run zcomp "rlock status --" --json
	assert_output --partial -- "--json"
}

@test "zsh: TAB completes the locks held now" {
	needs_list
	hold_somekey
	run zcomp "rlock status so" somekey
	assert_output --partial "somekey"
}

@test "zsh: --redlock, repeated -u, and KEY completion over the masters" {
	run zcomp "rlock --red" --redlock
	assert_output --partial -- "--redlock"
	run zcomp "rlock status --red" --redlock
	assert_output --partial -- "--redlock"
	needs_list
	hold_somekey
	# -u may be given once per master; every one reaches `rlock list`.
	run zcomp "rlock status --redlock $(three_masters) so" somekey
	assert_output --partial "somekey"
	# The per-master headers of `rlock list --redlock` are not keys.
	# (zsh lists a match quoted: \==\ master\ 1...)
	run zcomp "rlock status --redlock $(three_masters) " somekey
	assert_output --partial "somekey"
	refute_output --partial "master"
	run zcomp "rlock --redlock $(three_masters) -k so" somekey
	assert_output --partial "somekey"
	# Only --redlock makes `rlock list` read RLOCK_URL as a list.
	RLOCK_URL="unix://$REDIS_SOCK unix://$REDIS_SOCK unix://$REDIS_SOCK" \
		run zcomp "rlock status --redlock so" somekey
	assert_output --partial "somekey"
}

@test "bash, zsh and fish: lock takes the run options and --pid, --export; unlock -k" {
	run bcomp "rlock lock --exp"
	assert_output "--export"
	run bcomp "rlock lock -n --p"
	assert_output "$(printf '%s\n' --pid --password-file --prefix)"
	run bcomp "rlock lock -k x "
	assert_output ""
	run bcomp "rlock unlock --"
	assert_output "$(printf '%s\n' --key --quiet --verbose --help)"
	run zcomp "rlock " lock unlock
	assert_output --partial "lock"
	assert_output --partial "unlock"
	run zcomp "rlock lock --exp" --export
	assert_output --partial -- "--export"
	run fcomp "rlock lock --exp"
	assert_output "--export"
	run fcomp "rlock unlock -"
	assert_line -- "--key"
	refute_line -- "--export"
}

# ---- fish -------------------------------------------------------------

@test "fish: rlock.fish parses" {
	run fish -n "$COMP_DIR/rlock.fish"
	assert_success
	assert_output ""
}

@test "fish: options, --on-lost values, subcommands, commands" {
	run fcomp "rlock --on"
	assert_output "--on-lost"
	run fcomp "rlock --on-lost "
	assert_output "$(printf '%s\n' ignore kill term)"
	run fcomp "rlock "
	assert_output "$(printf '%s\n' list lock release status unlock)"
	run fcomp "rlock status --j"
	assert_output "--json"
	run fcomp "rlock -k foo ech"
	assert_line "echo"
	refute_line "status"
}

@test "fish: KEY completion offers the locks held now" {
	needs_list
	hold_somekey
	run fcomp "rlock status so"
	assert_output "somekey"
	run fcomp "rlock -k so"
	assert_output "somekey"
}

@test "fish: --redlock, URL schemes, and KEY completion over the masters" {
	run fcomp "rlock --red"
	assert_output "$(printf '%s\n' --redisson --redlock)"
	run fcomp "rlock list --red"
	assert_output "--redlock"
	run fcomp "rlock -u redis+"
	assert_output "$(printf '%s\n' redis+cluster:// redis+sentinel://)"
	needs_list
	hold_somekey
	run fcomp "rlock status --redlock $(three_masters) so"
	assert_output "somekey"
	run fcomp "rlock status --redlock $(three_masters) "
	assert_output "somekey"
	run fcomp "rlock --redlock $(three_masters) -k so"
	assert_output "somekey"
	RLOCK_URL="unix://$REDIS_SOCK unix://$REDIS_SOCK unix://$REDIS_SOCK" \
		run fcomp "rlock --redlock -k so"
	assert_output "somekey"
}

# ---- drift ------------------------------------------------------------

# Short options: bash offers long ones only, as util-linux's do.
@test "drift: every option of --help is in each completion and the man page" {
	local o bad=0 longs shorts
	longs=$("$RLOCK" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
	shorts=$("$RLOCK" --help | grep -oE '^  -[a-zA-Z],' | tr -d ' ,' |
		sort -u)
	[ -n "$longs" ] && [ -n "$shorts" ]
	for o in $longs; do
		grep -q -- "$o\b" "$COMP_DIR/rlock.bash" ||
			{ echo "rlock.bash lacks $o"; bad=1; }
		grep -q -- "$o\b" "$COMP_DIR/_rlock" ||
			{ echo "_rlock lacks $o"; bad=1; }
		grep -qE -- "-l ${o#--}( |$)" "$COMP_DIR/rlock.fish" ||
			{ echo "rlock.fish lacks $o"; bad=1; }
		grep -q -- "Fl \\\\-${o#--}\b" "$MAN_PAGE" ||
			{ echo "rlock.1 lacks $o"; bad=1; }
	done
	for o in $shorts; do
		grep -q -- "$o[+,]" "$COMP_DIR/_rlock" ||
			{ echo "_rlock lacks $o"; bad=1; }
		grep -q -- "-s ${o#-} " "$COMP_DIR/rlock.fish" ||
			{ echo "rlock.fish lacks $o"; bad=1; }
		grep -q -- "It Fl ${o#-} ," "$MAN_PAGE" ||
			{ echo "rlock.1 lacks $o"; bad=1; }
	done
	[ "$bad" = 0 ]
}

@test "drift: the completions offer no option that --help does not know" {
	local o bad=0 longs
	longs=$("$RLOCK" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
	[ -n "$longs" ]
	for o in $(grep -v '^\s*#' "$COMP_DIR/rlock.bash" "$COMP_DIR/_rlock" |
	    grep -o -- '--[a-z][a-z-]*' | sort -u) \
	    $(grep -E '^complete ' "$COMP_DIR/rlock.fish" |
	    grep -oE -- ' -l [a-z-]+' | sed 's/^ -l /--/' | sort -u); do
		printf '%s\n' "$longs" | grep -qx -- "$o" ||
			{ echo "unknown option in a completion: $o"; bad=1; }
	done
	[ "$bad" = 0 ]
}
