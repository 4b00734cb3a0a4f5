#!/bin/sh
# lua-text.sh LIBDIR SCRIPT.lua: print SCRIPT as rlock sends it to Redis:
# the locals its header names (below), the files of LIBDIR whose local
# functions it calls (name order: acl.lua's checks first), then the
# script, comment lines, indentation and blank lines out. Every byte of it
# is in rlock's read-only data, and every NOSCRIPT sends it whole: the
# comments were over half of it, the libraries a script does not call the
# rest of the excess, each one's closures made anew per call. A library
# that calls another's functions pulls it in too (a second pass).
#
# Each script names its keys and arguments, in order, in its header:
#   -- KEYS: lock meta last?
#   -- ARGV: token lease_ms
# (more lines of the same kind go on the list; a trailing '?': the caller may leave it and those after it out). The
# script reads them as the locals k_NAME and a_NAME, never as KEYS[i] or
# ARGV[i]; embed-lua.sh gives C the same names (SCRIPT_K_NAME and
# SCRIPT_A_NAME), so neither side keeps a position by hand. A script that
# indexes KEYS or ARGV itself, uses a name its header lacks, or declares one
# it never uses is refused here, and so is the build.
set -eu
libdir=$1 script=$2
die() { echo "$script: $*" >&2; exit 1; }
# The script's code: its lines that are not comments.
code=$(sed -e '/^[[:space:]]*--/d' "$script")
header() { # KEYS|ARGV: the names, one per line
	n=$(grep -c "^-- $1:" "$script") || true
	[ "$n" -ge 1 ] || die "needs a '-- $1:' header line"
	sed -n "s/^-- $1://p" "$script" | tr -s ' \t' '\n\n' | sed '/^$/d'
}
keys=$(header KEYS) argv=$(header ARGV)
printf '%s\n' "$code" | grep -Eq '\b(KEYS|ARGV)\[' &&
	die "reads KEYS[i] or ARGV[i]: use the k_NAME and a_NAME of its header"
# locals PREFIX TABLE NAMES: "local p_x, p_y = T[1], T[2]", checking each.
locals() {
	pre=$1 tab=$2 names=$3 i=0 opt=0 lhs="" rhs=""
	for nm in $names; do
		case $nm in
		*'?') nm=${nm%'?'} opt=1 ;;
		*) [ "$opt" = 0 ] || die "$tab $nm: required after an optional one" ;;
		esac
		printf '%s\n' "$nm" | grep -Eq '^[a-z][a-z0-9_]*$' ||
			die "$tab name '$nm': lower case, digits and _ only"
		printf '%s\n' "$code" | grep -Eq "\\b${pre}_$nm\\b" ||
			die "declares $tab $nm but never uses ${pre}_$nm"
		i=$((i + 1))
		lhs="$lhs${lhs:+, }${pre}_$nm" rhs="$rhs${rhs:+, }$tab[$i]"
	done
	for used in $(printf '%s\n' "$code" | grep -Eo "\\b${pre}_[a-z0-9_]+" |
	    sort -u); do
		printf '%s\n' "$names" | tr -d '?' | grep -qx "${used#"${pre}"_}" ||
			die "uses $used, not in its $tab header"
	done
	[ -z "$lhs" ] || echo "local $lhs = $rhs"
}
prelude="$(locals k KEYS "$keys")
$(locals a ARGV "$argv")"
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
{ printf '%s\n' "$prelude"; cat $want "$script"; } |
	sed -e '/^[[:space:]]*--/d' -e 's/^[[:space:]]*//' -e '/^$/d'
