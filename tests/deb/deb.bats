#!/usr/bin/env bats
# The Debian package (debian/), built by `make deb` from this tree once for
# the file: the build, lintian, its control fields, and its files unpacked
# with dpkg -x (not installed: the check needs no root and leaves the
# machine as it was). No server is started.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load.bash'
load '/usr/lib/bats/bats-assert/load.bash'

setup_file() {
	export TOP
	TOP=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	export DEB_DIR=$TOP/build/deb
	export ROOT=$BATS_FILE_TMPDIR/root
	# The package's flags are its own: none of these may reach its build.
	make --no-print-directory -C "$TOP" deb WERROR=1 STATIC=1 \
		CFLAGS='-O0 -DRL_LEAKED' CPPFLAGS=-DRL_LEAKED LDFLAGS=-DRL_LEAKED
	local debs=("$DEB_DIR"/rlock_*.deb)
	if [ "${#debs[@]}" != 1 ] || [ ! -f "${debs[0]}" ]; then
		echo "one rlock_*.deb expected in $DEB_DIR: ${debs[*]}" >&2
		return 1
	fi
	export DEB=${debs[0]}
	dpkg-deb -x "$DEB" "$ROOT"
}

@test "the build: no warning; dpkg-buildflags on every compile and the link, make's command line on none" {
	local log=$DEB_DIR/build.log compiles
	run grep -E '\.[ch]:[0-9]+(:[0-9]+)?: warning:' "$log"
	assert_failure 1
	compiles=$(grep -c ' -c -o build/' "$log")
	[ "$compiles" -gt 30 ] || fail "$compiles compiles in $log?"
	# dpkg-buildflags' CPPFLAGS and CFLAGS, each by one of its flags.
	[ "$(grep ' -c -o build/' "$log" | grep -c -- ' -D_FORTIFY_SOURCE=')" = \
		"$compiles" ] || fail "a compile without dpkg-buildflags' CPPFLAGS"
	[ "$(grep ' -c -o build/' "$log" | grep -c -- ' -fstack-protector-strong ')" = \
		"$compiles" ] || fail "a compile without dpkg-buildflags' CFLAGS"
	# Nor the flags of make's command line (setup_file).
	run grep -E -- '-DRL_LEAKED|-Werror( |$)' "$log"
	assert_failure 1
	run grep -- ' -o rlock ' "$log"
	assert_success
	assert_output --partial '-Wl,-z,relro'
	assert_output --partial '-Wl,-z,now'
}

@test "lintian: no error or warning" {
	run lintian --fail-on error,warning -I --pedantic "$DEB_DIR"/*.changes
	assert_success
	refute_line --regexp '^[EW]: '
}

@test "Depends names libssl3, which the dlopen hides from dpkg-shlibdeps" {
	run dpkg-deb -I "$DEB"
	assert_success
	assert_line --regexp '^ Depends: (.*, )?libssl3( \| libssl3t64)?(,|$)'
	# hiredis and libuuid linked as shared libraries (STATIC=0): dpkg-shlibdeps
	# names them; libssl is not linked.
	assert_line --regexp '^ Depends: .*libhiredis[0-9.]* '
	assert_line --regexp '^ Depends: .*libuuid1 '
	run readelf -d "$ROOT/usr/bin/rlock"
	assert_output --regexp 'NEEDED.*\[libhiredis\.so'
	assert_output --regexp 'NEEDED.*\[libuuid\.so'
	refute_output --regexp 'NEEDED.*\[libssl'
	# hardening=+all: bind now, and a position-independent executable.
	assert_output --regexp 'FLAGS.*BIND_NOW'
	assert_output --regexp 'FLAGS_1.*PIE'
}

@test "the unpacked rlock --version runs and gives the package's version" {
	local version
	version=$(dpkg-deb -f "$DEB" Version)
	run "$ROOT/usr/bin/rlock" --version
	assert_success
	assert_output --regexp "^rlock ${version%-*} "
}

@test "every page of man/ is in the package, and man -l reads it" {
	local f n=0 page title
	for f in "$TOP"/man/*.[1-9]; do
		page=$ROOT/usr/share/man/man${f##*.}/${f##*/}.gz
		[ -f "$page" ] || fail "not in the package: ${page#"$ROOT"}"
		zcat "$page" | cmp - "$f"
		# .TH NAME SECTION: man shows NAME(SECTION) in its header.
		title=$(sed -n 's/^\.TH \([^ ]*\) \([^ ]*\).*/\1(\2)/p' "$f")
		run env MANWIDTH=80 MANPAGER=cat man -l "$page"
		assert_success
		assert_line --regexp "^${title//[().]/.} "
		assert_output --partial "NAME"
		n=$((n + 1))
	done
	[ "$n" -gt 0 ]
}

@test "the three completions are where Debian's shells read them" {
	cmp "$TOP/completions/rlock.bash" \
		"$ROOT/usr/share/bash-completion/completions/rlock"
	cmp "$TOP/completions/_rlock" \
		"$ROOT/usr/share/zsh/vendor-completions/_rlock"
	cmp "$TOP/completions/rlock.fish" \
		"$ROOT/usr/share/fish/vendor_completions.d/rlock.fish"
}

@test "the package holds those files and its documentation, nothing else" {
	local f want
	want=$({
		echo usr/bin/rlock
		for f in "$TOP"/man/*.[1-9]; do
			echo "usr/share/man/man${f##*.}/${f##*/}.gz"
		done
		echo usr/share/bash-completion/completions/rlock
		echo usr/share/zsh/vendor-completions/_rlock
		echo usr/share/fish/vendor_completions.d/rlock.fish
		echo usr/share/doc/rlock/README.md.gz
		echo usr/share/doc/rlock/changelog.gz
		echo usr/share/doc/rlock/copyright
	} | sort)
	run bash -c 'cd "$ROOT" && find . -type f -o -type l | sed "s,^\./,," | sort'
	assert_success
	assert_output "$want"
}
