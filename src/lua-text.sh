#!/bin/sh
# lua-text.sh LIBDIR SCRIPT.lua: print SCRIPT as rlock sends it to Redis:
# the files of LIBDIR whose local functions it calls in front (name order:
# acl.lua's checks first), comment lines, indentation and blank lines out.
# Every byte of it is in rlock's read-only data, and every NOSCRIPT sends
# it whole: the comments were over half of it, the libraries a script does
# not call the rest of the excess, each one's closures made anew per call.
# A library that calls another's functions pulls it in too (a second pass).
set -eu
libdir=$1 script=$2
uses() { # FILE...: do they call (or pass on: "f," "f)") a function of $lib?
	names=$(sed -n 's/^local function \([A-Za-z_0-9]*\).*/\1/p' "$lib" |
		paste -sd'|')
	[ -n "$names" ] && grep -Eq "\\b($names)[(,)]" "$@"
}
want=""
for _pass in 1 2; do
	want_next=""
	for lib in "$libdir"/*.lua; do
		# shellcheck disable=SC2086 # want: paths without spaces
		if uses "$script" $want; then want_next="$want_next $lib"; fi
	done
	want=$want_next
done
# Only whole-line comments go: a "--" after code may be inside a string.
# shellcheck disable=SC2086
cat $want "$script" | sed -e '/^[[:space:]]*--/d' -e 's/^[[:space:]]*//' \
	-e '/^$/d'
