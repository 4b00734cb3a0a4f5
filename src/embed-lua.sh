#!/bin/sh
# embed-lua.sh OUT.c OUT.h LIBDIR FILE.lua... : turn Lua scripts into C
# data with their SHA1, so rlock can EVALSHA without a SCRIPT LOAD step.
# Each script is embedded as lua-text.sh makes it: its header's locals and
# the shared local functions of LIBDIR it calls in front. Its header's
# names become C's: for acquire.lua's "-- KEYS: lock meta" and
# "-- ARGV: token", ACQUIRE_K_LOCK, ACQUIRE_K_META, ACQUIRE_A_TOKEN (their
# indexes from 0) and the counts ACQUIRE_NKEYS, ACQUIRE_NARGS; its REPLY
# lines' names the indexes of its reply's elements (lua-text.sh). A KEYS
# name is also the name of a struct lock_keys field (keys.h), so
# ACQUIRE_KEYS(a, k) gives a call every key the script always takes, each
# from the field of its name: no key is bound by hand, and a name keys.h
# lacks stops the build where the script is called.
set -eu
outc=$1 outh=$2 libdir=$3
shift 3
text="$(dirname "$0")/lua-text.sh"
# names FILE KEYS|ARGV: the header's names, one per line, '?' kept.
names() { sed -n "s/^-- $2://p" "$1" | tr -s ' \t' '\n' | sed '/^$/d'; }
# enum UPPER TAG FILE KEYS|ARGV COUNT: the C names of one header line.
enum() {
	n=0 req=0
	echo "enum {"
	for nm in $(names "$3" "$4"); do
		case $nm in *'?') ;; *) req=$((req + 1)) ;; esac
		echo "	${1}_${2}_$(echo "${nm%'?'}" | tr '[:lower:]' '[:upper:]'),"
		n=$((n + 1))
	done
	echo "	${1}_$5 = $n,"
	echo "	${1}_${5}_MIN = $req"
	echo "};"
}
# bind UPPER FILE: the macro that gives a call the required KEYS from k.
bind() {
	echo "#define ${1}_KEYS(a, k) do { \\"
	for nm in $(names "$2" KEYS); do
		case $nm in *'?') break ;; esac
		echo "	script_key((a), ${1}_K_$(echo "$nm" |
		    tr '[:lower:]' '[:upper:]'), (k)->$nm, (k)->${nm}_len); \\"
	done
	echo "} while (0)"
}
# replies UPPER FILE: the C names of its REPLY lines, "-- REPLY: a b"
# UPPER_R_A, UPPER_R_B, UPPER_R_N; "-- REPLY list: c" UPPER_LIST_C, ...
replies() {
	sed -n 's/^-- REPLY\( [a-z_]*\)\{0,1\}:/&/p' "$2" | awk -v up="$1" '
	{ k = $2 == "REPLY:" ? "R" : toupper($3); sub(/:$/, "", k)
	  if (!(k in v)) order[++n] = k
	  for (i = k == "R" ? 3 : 4; i <= NF; i++) v[k] = v[k] " " $i }
	END { for (j = 1; j <= n; j++) {
		k = order[j]; m = split(v[k], f, " ")
		print "enum {"
		for (i = 1; i <= m; i++) print "\t" up "_" k "_" toupper(f[i]) ","
		print "\t" up "_" k "_N"
		print "};"
	} }'
}
gen="/* generated from src/lua/ by src/embed-lua.sh; edit those */"
printf '%s\n' "$gen" "#ifndef RLOCK_LUA_SCRIPTS_H" "#define RLOCK_LUA_SCRIPTS_H" \
    "struct lua_script;	/* script_args.h */" > "$outh.tmp"
printf '%s\n' "$gen" "#include \"lua_scripts.h\"" \
    "#include \"script_args.h\"" > "$outc.tmp"
for f in "$@"; do
	name=$(basename "$f" .lua)
	up=$(echo "$name" | tr '[:lower:]' '[:upper:]')
	{
		enum "$up" K "$f" KEYS NKEYS
		enum "$up" A "$f" ARGV NARGS
		bind "$up" "$f"
		replies "$up" "$f"
		echo "extern const struct lua_script lua_$name;"
	} >> "$outh.tmp"
	sh "$text" "$libdir" "$f" > "$outc.lua"
	sha=$(sha1sum < "$outc.lua" | cut -d' ' -f1)
	{
		echo "static const char body_${name}[] = {"
		xxd -i < "$outc.lua"
		echo ", 0 };"
		echo "_Static_assert(${up}_NKEYS + ${up}_NARGS <= SCRIPT_MAX_ARGS,"
		echo "    \"$name.lua: raise SCRIPT_MAX_ARGS\");"
		echo "const struct lua_script lua_$name = { \"$name\", body_$name,"
		echo "    sizeof(body_$name) - 1, \"$sha\", ${up}_NKEYS,"
		echo "    ${up}_NARGS, ${up}_NKEYS_MIN, ${up}_NARGS_MIN };"
	} >> "$outc.tmp"
done
echo "#endif" >> "$outh.tmp"
rm -f "$outc.lua"
mv "$outh.tmp" "$outh"
mv "$outc.tmp" "$outc"
