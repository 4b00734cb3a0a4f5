#!/usr/bin/env bats
# make install / uninstall into a DESTDIR, with PREFIX=/usr as a Debian
# package would: every file where the shells and man(1) look by default,
# with the right modes, and all of them gone after uninstall. Uses the
# already-built $RLOCK (make -o: never rebuilds it). Then the flags a
# packager gives (CPPFLAGS, CFLAGS, LDFLAGS, STATIC, WERROR) on the lines
# make would run (make -n).

load helper

setup_file() {
	export TOP
	TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
	export BIN
	BIN=$(readlink -f "$RLOCK")
	export DEST=$BATS_FILE_TMPDIR/dest
}

# inst TARGET [VAR=VALUE...]: make TARGET into $DEST with PREFIX=/usr.
inst() {
	local target=$1
	shift
	# Not the variables of a `make check PREFIX=...` that runs us.
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make --no-print-directory -C "$TOP" -o "$BIN" "$target" \
		DESTDIR="$DEST" PREFIX=/usr BIN="$BIN" "$@"
}

# files [TREE]: the files make install puts (relative to $DEST) and their
# modes: every page of TREE's man/ (default $TOP's) in the section its
# name ends with.
files() {
	local f
	echo "usr/bin/rlock 755"
	for f in "${1:-$TOP}"/man/*.[1-9]; do
		echo "usr/share/man/man${f##*.}/${f##*/} 644"
	done
	echo "usr/share/bash-completion/completions/rlock 644"
	echo "usr/share/fish/vendor_completions.d/rlock.fish 644"
}

# zsh: the file must be in a directory of Debian zsh's default $fpath.
zsh_file() {
	find "$DEST" -name _rlock -type f
}

setup() {
	rm -rf "$DEST"
}

@test "make install puts every file in place with its mode" {
	run inst install
	assert_success
	local f mode
	while read -r f mode; do
		[ -f "$DEST/$f" ] || fail "missing: $f"
		[ "$(stat -c %a "$DEST/$f")" = "$mode" ] ||
			fail "$f: mode $(stat -c %a "$DEST/$f"), not $mode"
	done < <(files)
	run zsh_file
	assert_output --regexp '/_rlock$'
	[ "$(stat -c %a "$output")" = 644 ]
	cmp "$BIN" "$DEST/usr/bin/rlock"
	cmp "$TOP/man/rlock.1" "$DEST/usr/share/man/man1/rlock.1"
	cmp "$TOP/man/rlock.conf.5" "$DEST/usr/share/man/man5/rlock.conf.5"
}

@test "the installed binary runs" {
	inst install >/dev/null
	run "$DEST/usr/bin/rlock" --version
	assert_success
	assert_output --regexp '^rlock [0-9]'
}

@test "man -l reads the installed page" {
	inst install >/dev/null
	run env MANWIDTH=80 MANPAGER=cat man -l "$DEST/usr/share/man/man1/rlock.1"
	assert_success
	assert_output --partial "run a command while holding a lock in Redis"
	assert_output --partial "EXIT STATUS"
}

@test "zsh finds the installed _rlock in its default fpath" {
	inst install >/dev/null
	local f dir
	f=$(zsh_file)
	dir=${f%/_rlock}
	dir=${dir#"$DEST"}
	# Debian's zsh reads /usr/share/zsh/vendor-completions, not
	# /usr/share/zsh/site-functions, for PREFIX=/usr.
	zsh -f -c 'print -rl -- $fpath' | grep -qxF -- "$dir" ||
		fail "installed in $dir, which is not in zsh's default \$fpath"
}

@test "fish finds the installed rlock.fish in its default path" {
	inst install >/dev/null
	run env -u XDG_DATA_DIRS fish -c \
		'printf "%s\n" $fish_complete_path'
	assert_success
	assert_line "/usr/share/fish/vendor_completions.d"
}

@test "bash-completion's directory is the one it reads" {
	inst install >/dev/null
	local dir=/usr/share/bash-completion/completions
	if pkg-config --exists bash-completion 2>/dev/null; then
		dir=$(pkg-config --variable=completionsdir bash-completion)
	fi
	[ -f "$DEST$dir/rlock" ]
}

@test "make uninstall removes every installed file" {
	inst install >/dev/null
	[ -n "$(find "$DEST" -type f)" ]
	run inst uninstall
	assert_success
	run find "$DEST" -type f
	assert_output ""
}

@test "make install and uninstall take every page of man/, by its section" {
	local t=$BATS_TEST_TMPDIR/tree f mode
	mkdir -p "$t"
	cp -r "$TOP/Makefile" "$TOP/man" "$TOP/completions" "$t/"
	# Pages of other sections, as rlock.conf(5) and rlock(7) would be.
	printf '.TH RLOCK.CONF 5\n' > "$t/man/rlock-test.conf.5"
	printf '.TH RLOCK-TEST 7\n' > "$t/man/rlock-test.7"
	TOP=$t run inst install
	assert_success
	while read -r f mode; do
		[ -f "$DEST/$f" ] || fail "missing: $f"
		[ "$(stat -c %a "$DEST/$f")" = "$mode" ] ||
			fail "$f: mode $(stat -c %a "$DEST/$f"), not $mode"
	done < <(files "$t")
	cmp "$t/man/rlock-test.conf.5" "$DEST/usr/share/man/man5/rlock-test.conf.5"
	cmp "$t/man/rlock-test.7" "$DEST/usr/share/man/man7/rlock-test.7"
	TOP=$t run inst uninstall
	assert_success
	run find "$DEST" -type f
	assert_output ""
}

# The link line make would run for rlock (nothing is built). Not the
# variables of a `make STATIC=0 check` that runs us: make puts those in
# its recipes' environment too.
link_line() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u STATIC \
		make --no-print-directory -C "$TOP" -n -W src/main.c rlock \
		BIN=rlock "$@" | grep -- ' -o rlock '
}

@test "STATIC: hiredis and libuuid linked from their .a when both exist" {
	local a b
	a=$(cc -print-file-name=libhiredis.a)
	b=$(cc -print-file-name=libuuid.a)
	run -0 link_line STATIC=0
	refute_output --partial -Bstatic
	run -0 link_line STATIC=1
	assert_output --partial '-Wl,-Bstatic'
	assert_output --regexp '-Bstatic .*-lhiredis.*-luuid.* -Wl,-Bdynamic'
	run -0 link_line
	if [ -f "$a" ] && [ -f "$b" ]; then
		assert_output --partial -Bstatic
	else
		refute_output --partial -Bstatic
	fi
}

# The compile line make would run for src/main.c into a build directory of
# its own (nothing is built), under the environment VAR=VALUE... and none
# of the flags of a `make WERROR=1 check` that runs us.
compile_line() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u WERROR -u CPPFLAGS \
		-u CFLAGS -u LDFLAGS "$@" \
		make --no-print-directory -C "$TOP" -n \
		BUILD="$BATS_TEST_TMPDIR/b" "$BATS_TEST_TMPDIR/b/main.o" |
		grep -- " -c -o $BATS_TEST_TMPDIR/b/main.o "
}

@test "CPPFLAGS, CFLAGS and LDFLAGS from the environment reach the compile and the link" {
	run -0 compile_line CPPFLAGS=-DRL_CPP_MARK CFLAGS='-O1 -DRL_C_MARK'
	assert_output --partial ' -DRL_CPP_MARK '
	assert_output --partial ' -O1 -DRL_C_MARK '
	LDFLAGS=-Wl,-z,now run -0 link_line
	assert_output --partial ' -Wl,-z,now '
}

@test "-Werror only when WERROR=1" {
	run -0 compile_line
	refute_output --partial -Werror
	run -0 compile_line WERROR=1
	assert_output --partial ' -Werror '
	run -0 compile_line WERROR=0
	refute_output --partial -Werror
}
