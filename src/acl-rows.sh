#!/bin/sh
# acl-rows.sh [TOP]: the ACL rules each mode of rlock needs, made from the
# RUNS lines of its scripts (src/lua-text.sh): the one table the scripts'
# pre-check, the documentation's rows and tests/acl.bats share.
# Prints one line per mode, "MODE|RULES", then "all|RULES" for a user
# that runs every mode. The README ("A Redis user for rlock") and rlock(7)
# ("THE ACL USER") show them; tests/acl.bats checks that they say the
# same, and makes a user of each row and runs that mode with it.
set -eu
top=${1:-$(dirname "$0")/..}
# What each mode runs: SCRIPT:CONDITION,... (the conditions of its RUNS
# lines) and the commands rlock sends itself (+cmd). Every mode sends
# EVALSHA, and EVAL when the server lacks the script.
# shellcheck disable=SC2016 # backquotes: the README's markup
modes='run, `-w` (a plain waiter)|acquire:mutex,blpop release:mutex extend:mutex is_ours:mutex record dequeue +blpop
run with `-n`|acquire:mutex release:mutex extend:mutex is_ours:mutex record
`--fair`|acquire:mutex,fair release:mutex extend:mutex is_ours:mutex record dequeue heartbeat +ssubscribe
`-N`|acquire:sem,blpop release:sem extend:sem is_ours:sem record +blpop
`-s`|acquire:mutex,shared,blpop release:mutex,shared extend:mutex,shared is_ours:mutex,shared record +blpop
`status`|inspect
`list`|inspect +scan
`release --force`|force_release'
# rules WHAT...: the rules of one mode.
rules() {
	for w in "$@"; do
		case $w in
		+*) echo "${w#+}" ;;
		*) # shellcheck disable=SC2046 # the conditions: words
			sh "$top/src/lua-text.sh" --runs \
			"$top/src/lua/${w%%:*}.lua" $(echo "${w#*:}" | tr ',' ' ') ;;
		esac
	done | awk '
	{ c = tolower($1) }
	c ~ /\?$/ { next }
	c == "pubsub" { c = c "|" tolower($2) }
	c ~ /^(spublish|ssubscribe|publish|subscribe)$/ { chan = 1 }
	!seen[c]++ { cmds = cmds " +" c }
	END { printf "~rlock:*%s +evalsha +eval%s\n", chan ? " &rlock:*" : "",
		cmds }' | awk '{ out = ""
	  for (i = 1; i <= NF; i++) if (!seen[$i]++) out = out (out ? " " : "") $i
	  print out }'
}
printf '%s\n' "$modes" | while IFS='|' read -r mode what; do
	# shellcheck disable=SC2086 # what: words
	echo "$mode|$(rules $what)"
done
# shellcheck disable=SC2046
echo "all|$(rules $(printf '%s\n' "$modes" | cut -d'|' -f2))"
