#!/bin/sh
# embed-lua.sh OUT.c OUT.h PRELUDE.lua FILE.lua... : turn Lua scripts into C
# data with their SHA1, so rlock can EVALSHA without a SCRIPT LOAD step.
# PRELUDE (shared local functions) goes in front of every script.
set -eu
outc=$1 outh=$2 prelude=$3
shift 3
{
	echo "/* generated from src/lua/ by src/embed-lua.sh; edit those */"
	echo "#ifndef RLOCK_LUA_SCRIPTS_H"
	echo "#define RLOCK_LUA_SCRIPTS_H"
	echo "#include \"script.h\""
	for f in "$@"; do
		echo "extern const struct lua_script lua_$(basename "$f" .lua);"
	done
	echo "#endif"
} > "$outh.tmp"
{
	echo "/* generated from src/lua/ by src/embed-lua.sh; edit those */"
	echo "#include \"lua_scripts.h\""
	for f in "$@"; do
		name=$(basename "$f" .lua)
		sha=$(cat "$prelude" "$f" | sha1sum | cut -d' ' -f1)
		echo "static const char body_$name[] = {"
		cat "$prelude" "$f" | xxd -i
		echo ", 0 };"
		echo "const struct lua_script lua_$name = { \"$name\", body_$name,"
		echo "    sizeof(body_$name) - 1, \"$sha\" };"
	done
} > "$outc.tmp"
mv "$outh.tmp" "$outh"
mv "$outc.tmp" "$outc"
