#!/bin/sh
# lua-text.sh LIBDIR SCRIPT.lua: print SCRIPT as rlock sends it to Redis:
# the locals its header names, the files of LIBDIR whose local functions
# it calls (name order), its ACL pre-check, then the script; comment
# lines, indentation and blank lines out. Every byte of it is in rlock's
# read-only data, and every NOSCRIPT sends it whole: the comments were
# over half of it, the libraries a script does not call the rest of the
# excess, each one's closures made anew per call. A library that calls
# another's functions pulls it in too (a second pass).
# lua-text.sh --runs SCRIPT.lua [COND...]: print the commands SCRIPT's
# RUNS lines declare (its @scripts' too) whose conditions are all among
# COND, one "CMD ARG..." a line, CMD ending in '?' when optional
# (acl-rows.sh makes the ACL table of the documentation from them).
# lua-text.sh --own SCRIPT.lua: the command names of SCRIPT's own RUNS
# lines, one a line (tests/lua_monitor.py).
#
# The header, read here and by embed-lua.sh:
#   -- KEYS: lock meta last?      the keys, in order ('?': the caller may
#   -- ARGV: token lease_ms        leave it and those after it out)
# More lines of the same kind go on the list. The script reads them as
# the locals k_NAME and a_NAME, never as KEYS[i] or ARGV[i]; embed-lua.sh
# gives C the same names (SCRIPT_K_NAME, SCRIPT_A_NAME).
#   -- RUNS: GET lock; SET lock x PX 1; SPUBLISH =wake x; @extend
#   -- RUNS mutex: ...            (only when: mutex, sem, fair, blpop,
#                                  shared)
# Every command the script may run (with its libraries), with arguments
# as Redis checks them: a KEYS name, =NAME an ARGV's value, =NAME+x that
# value with "x" after it (a channel of a token), else the word itself.
# "CMD?": run where allowed, done without where not (not asked). "@name":
# what script name runs, asked here too (the acquire asks for what the
# holder and the waiter will run later). Unless the script says
#   -- PRECHECK: none
# they are all asked first (lib/acl.lua), and nothing is written when the
# caller's ACL refuses one; with
#   -- PRECHECK: called
# they are asked when the script calls acl_precheck() (below its head:
# "-- HEAD ENDS", further down). tests/lua-monitor.bats checks, under
# MONITOR, that every command a script runs is declared, on a key of its
# KEYS.
#   -- REPLY: now mode            reply{now = ..., mode = ...} returns
#   -- REPLY holders: user host   them in order, as reply_holders{...};
# r_holders = {'user', 'host'} (C: SCRIPT_R_NOW, SCRIPT_HOLDERS_USER,
# SCRIPT_R_N, SCRIPT_HOLDERS_N).
# A script that indexes KEYS or ARGV itself, uses a name its header lacks
# or declares one it never uses, or runs a command its RUNS lack, is
# refused here, and so is the build.
set -eu
die() { echo "$script: $*" >&2; exit 1; }

# runs FILE CONDS: FILE's RUNS, @ expanded: "CONDS|CMD ARG..." a line,
# CONDS comma-separated ('' for always).
runs() {
	sed -n 's/^-- RUNS: */:/p; s/^-- RUNS \([a-z,]*\): */\1:/p' "$1" |
	while IFS=: read -r c items; do
		c=$2${2:+${c:+,}}$c
		printf '%s\n' "$items" | tr ';' '\n' | while read -r item; do
			case $item in
			'') ;;
			@*) if [ -f "$(dirname "$1")/${item#@}.lua" ]; then
				runs "$(dirname "$1")/${item#@}.lua" "$c"
			else
				echo "!RUNS $item: no such script"
			fi ;;
			*) printf '%s|%s\n' "$c" "$item" ;;
			esac
		done
	done
}

# all FILE: runs FILE, failing on an @ that names no script.
all() {
	r=$(runs "$1" "")
	case $r in *'!RUNS'*) die "$(printf '%s\n' "$r" | grep '^!' |
		head -1 | cut -c2-)" ;; esac
	printf '%s\n' "$r"
}

if [ "$1" = --own ]; then
	# The commands SCRIPT's own RUNS lines name (no @), one per line.
	script=$2
	sed -n 's/^-- RUNS[a-z, ]*: *//p' "$script" | tr ';' '\n' |
		sed 's/^ *//; /^@/d; /^$/d' | cut -d' ' -f1 | tr -d '?' | sort -u
	exit 0
fi
if [ "$1" = --runs ]; then
	script=$2
	shift 2
	all "$script" | awk -F'|' -v want=" $* " '
		{ n = split($1, c, ","); ok = 1
		  for (i = 1; i <= n; i++) if (index(want, " " c[i] " ") == 0) ok = 0
		  if (ok && !seen[$2]++) print $2 }'
	exit 0
fi

libdir=$1 script=$2
# The script's code: its lines that are not comments.
code=$(sed -e '/^[[:space:]]*--/d' "$script")
header() { # KEYS|ARGV: the names, one per line
	grep -q "^-- $1:" "$script" || die "needs a '-- $1:' header line"
	sed -n "s/^-- $1://p" "$script" | tr -s ' \t' '\n' | sed '/^$/d'
}
keys=$(header KEYS) argv=$(header ARGV)
printf '%s\n' "$code" | grep -Eq '\b(KEYS|ARGV)\[' &&
	die "reads KEYS[i] or ARGV[i]: use the k_NAME and a_NAME of its header"

# questions: "COND|CMD ARG..." lines on stdin into acl(CMD, ARG...), one
# for each command asked, under its conditions.
questions() {
	# shellcheck disable=SC2086 # the names, one line
	awk -F'|' -v keys=" $(echo $keys | tr -d '?') " \
	    -v argv=" $(echo $argv | tr -d '?') " -v s="$script" '
	function die(m) { print s ": RUNS: " m > "/dev/stderr"; bad = 1; exit 1 }
	function cond(c,   n, p, i, e, out) {
		n = split(c, p, ","); out = ""
		for (i = 1; i <= n; i++) {
			if (p[i] == "mutex") e = "a_limit == \047" 1 "\047"
			else if (p[i] == "sem") e = "a_limit ~= \047" 1 "\047"
			else if (p[i] == "fair") e = "(a_join ~= \0470\047 or " \
			    "string.find(a_needs, \047f\047, 1, true))"
			else if (p[i] == "blpop") e = \
			    "string.find(a_needs, \047w\047, 1, true)"
			else if (p[i] == "shared") e = "a_shared == \047" 1 "\047"
			else die("no condition " p[i])
			out = out (out == "" ? "" : " and ") e
		}
		return out
	}
	function arg(w,   n) {
		if (w ~ /^=/) {
			n = substr(w, 2); sub(/\+x$/, "", n)
			if (index(argv, " " n " ") == 0) die("=" n ": not in ARGV")
			return "a_" n (w ~ /\+x$/ ? " .. \047x\047" : "")
		}
		if (index(keys, " " w " ")) return "k_" w
		return "\047" w "\047"
	}
	# In the order declared (the first refusal is the one named), those
	# under one condition in a row in one "if"; a call asked always is
	# not asked again under a condition after it.
	{ c[NR] = $1; call[NR] = $2 }
	END {
		if (bad) exit 1
		open = ""
		for (r = 1; r <= NR; r++) {
			n = split(call[r], w, " ")
			if (w[1] ~ /\?$/ || (c[r] != "" && call[r] in always) ||
			    seen[c[r] "|" call[r]]++)
				continue
			if (c[r] == "")
				always[call[r]] = 1
			if (c[r] != open) {
				if (open != "") print "end"
				if (c[r] != "") print "if " cond(c[r]) " then"
				open = c[r]
			}
			line = "acl(\047" w[1] "\047"
			for (i = 2; i <= n; i++) line = line ", " arg(w[i])
			print line ")"
		}
		if (open != "") print "end"
	}'
}

# The ACL pre-check, from RUNS: asked at the top, or with
# "-- PRECHECK: called" made the function acl_precheck(), which the
# script calls before its first write (it returns nil, or the refusal
# for the script to return).
precheck=""
if ! grep -q '^-- PRECHECK: none' "$script"; then
	body=$(all "$script" | questions)
	if grep -q '^-- PRECHECK: called' "$script"; then
		printf '%s\n' "$code" | grep -q 'acl_precheck()' ||
			die "PRECHECK: called, but it never calls acl_precheck()"
		precheck="local function acl_precheck()
acl_ask(function()
$body
end)
return acl_refused
end"
	elif [ -n "$body" ]; then
		precheck="acl_ask(function()
$body
end)
if acl_refused then return acl_refused end"
	fi
fi

# Every command the script's own code runs is declared.
declared=$(all "$script" | cut -d'|' -f2 | cut -d' ' -f1 | tr -d '?' |
	sort -u)
for c in $(printf '%s\n' "$code" | grep -Eo \
    "redis\.p?call\('[A-Z]+'|pcall\(redis\.call, '[A-Z]+'" |
    grep -Eo "'[A-Z]+'" | tr -d "'" | sort -u); do
	printf '%s\n' "$declared" | grep -qx "$c" ||
		die "runs $c, which its RUNS lines lack"
done

# REPLY lines: reply() and, for each named list, the function reply_NAME
# and the list r_NAME of its names, each made only if the script uses it.
replies=$(sed -n 's/^-- REPLY\( [a-z_]*\)\{0,1\}:/&/p' "$script" |
	CODE=$code awk '
	function uses(w) { return ENVIRON["CODE"] ~ ("(^|[^A-Za-z0-9_])" w "[^A-Za-z0-9_]") }
	{ k = $2 == "REPLY:" ? "" : $3; sub(/:$/, "", k)
	  if (!(k in v)) order[++n] = k
	  for (i = k == "" ? 3 : 4; i <= NF; i++) v[k] = v[k] " " $i }
	END { for (j = 1; j <= n; j++) {
		k = order[j]; m = split(v[k], f, " "); fs = ""; ns = ""
		for (i = 1; i <= m; i++) {
			fs = fs (i > 1 ? ", " : "") "t." f[i]
			ns = ns (i > 1 ? ", " : "") "\047" f[i] "\047"
		}
		fn = k == "" ? "reply" : "reply_" k
		if (uses(fn)) print "local function " fn "(t) return {" fs "} end"
		if (k != "" && uses("r_" k)) print "local r_" k " = {" ns "}"
	} }')

# Uses of names: in the code, the pre-check and the REPLY names.
used="$code
$precheck"
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
		printf '%s\n' "$used" | grep -Eq "\\b${pre}_$nm\\b" ||
			die "declares $tab $nm but never uses ${pre}_$nm"
		i=$((i + 1))
		lhs="$lhs${lhs:+, }${pre}_$nm" rhs="$rhs${rhs:+, }${tab}[$i]"
	done
	for u in $(printf '%s\n' "$used" | grep -Eo "\\b${pre}_[a-z0-9_]+" |
	    sort -u); do
		printf '%s\n' "$names" | tr -d '?' | grep -qx "${u#"${pre}"_}" ||
			die "uses $u, not in its $tab header"
	done
	[ -z "$lhs" ] || echo "local $lhs = $rhs"
}
prelude="$(locals k KEYS "$keys")
$(locals a ARGV "$argv")
$replies"

# A head: the code above a line "-- HEAD ENDS" runs before the libraries
# that only the code below it calls are made, and before the pre-check,
# so a call that ends in the head makes none of their closures (each
# `local function` is made anew on every call). It writes nothing the
# pre-check has not asked (it cannot call acl_precheck, made after it).
if grep -q '^-- HEAD ENDS$' "$script"; then
	head_text=$(sed '/^-- HEAD ENDS$/,$d' "$script")
	rest_text=$(sed '1,/^-- HEAD ENDS$/d' "$script")
else
	head_text="" rest_text=$(cat "$script")
fi
tmp=$(mktemp) htmp=$(mktemp)
trap 'rm -f "$tmp" "$htmp"' EXIT
printf '%s\n%s\n' "$precheck" "$code" > "$tmp"
printf '%s\n' "$head_text" | sed -e '/^[[:space:]]*--/d' > "$htmp"
uses() { # FILE...: do they call (or pass on: "f," "f)") a function of $lib?
	names=$(sed -n 's/^local function \([A-Za-z_0-9]*\).*/\1/p' "$lib" |
		paste -sd'|')
	[ -n "$names" ] && grep -Eq "\\b($names)[(,)]" "$@"
}
# libs FILE: the libraries FILE calls, and those they call in turn.
libs() {
	want=""
	for _pass in 1 2; do
		want_next=""
		for lib in "$libdir"/*.lua; do
			# shellcheck disable=SC2086 # want: paths without spaces
			if uses "$1" $want; then want_next="$want_next $lib"; fi
		done
		want=$want_next
	done
	echo "$want"
}
want_head=$(libs "$htmp")
want_rest=""
for lib in $(libs "$tmp"); do
	case " $want_head " in *" $lib "*) ;; *) want_rest="$want_rest $lib" ;; esac
done
# Only whole-line comments go: a "--" after code may be inside a string.
# shellcheck disable=SC2086
{ printf '%s\n' "$prelude"; cat $want_head /dev/null; \
  printf '%s\n' "$head_text"; cat $want_rest /dev/null; \
  printf '%s\n' "$precheck" "$rest_text"; } |
	sed -e '/^[[:space:]]*--/d' -e 's/^[[:space:]]*//' -e '/^$/d'
