#!/bin/sh
# embed-lua.sh OUT.c OUT.h LIBDIR FILE.lua... : turn Lua scripts into C
# data with their SHA1, so rlock can EVALSHA without a SCRIPT LOAD step.
# Each script is embedded as lua-text.sh makes it: with the shared local
# functions of LIBDIR it calls in front.
set -eu
outc=$1 outh=$2 libdir=$3
shift 3
text="$(dirname "$0")/lua-text.sh"
{
	echo "/* generated from src/lua/ by src/embed-lua.sh; edit those */"
	echo "#ifndef RLOCK_LUA_SCRIPTS_H"
	echo "#define RLOCK_LUA_SCRIPTS_H"
	echo "struct lua_script;	/* script.h */"
	for f in "$@"; do
		echo "extern const struct lua_script lua_$(basename "$f" .lua);"
	done
	echo "#endif"
} > "$outh.tmp"
{
	echo "/* generated from src/lua/ by src/embed-lua.sh; edit those */"
	echo "#include \"lua_scripts.h\""
	echo "#include \"script.h\""
	for f in "$@"; do
		name=$(basename "$f" .lua)
		sh "$text" "$libdir" "$f" > "$outc.lua"
		sha=$(sha1sum < "$outc.lua" | cut -d' ' -f1)
		echo "static const char body_${name}[] = {"
		xxd -i < "$outc.lua"
		echo ", 0 };"
		echo "const struct lua_script lua_$name = { \"$name\", body_$name,"
		echo "    sizeof(body_$name) - 1, \"$sha\" };"
	done
} > "$outc.tmp"
rm -f "$outc.lua"
mv "$outh.tmp" "$outh"
mv "$outc.tmp" "$outc"
