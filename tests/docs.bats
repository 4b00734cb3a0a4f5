#!/usr/bin/env bats
# What the documents say about the protocol matches what the scripts do
# (for other clients who follow them), and the documents that repeat a
# table for different readers (README.md for users, rlock(7) for operators)
# repeat it alike; the README's build line installs what the package's
# build needs.

load helper

setup() {
	TOP=$BATS_TEST_DIRNAME/..
}

# pushes FILE: the list pushes (LPUSH/RPUSH) FILE names for a wake token.
pushes() {
	grep -oE '\b[LR]PUSH\b' "$1" | sort -u | tr '\n' ' '
}

@test "the documents name the push that wakes a waiter on P{K}:tok as release does" {
	local lua f
	lua=$(cat "$TOP/src/lua/lib/queue.lua" "$TOP/src/lua/release.lua" |
	    grep -oE "'[LR]PUSH'" | tr -d "'" | sort -u | tr '\n' ' ')
	[ "$lua" = "LPUSH " ] || fail "scripts push with: $lua"
	[ "$(pushes "$TOP/man/rlock.7")" = "$lua" ] ||
		fail "rlock(7), where the keys are, says $(pushes "$TOP/man/rlock.7")"
	for f in README.md HACKING.md man/rlock.1 man/rlock.7; do
		[ -z "$(pushes "$TOP/$f")" ] || [ "$(pushes "$TOP/$f")" = "$lua" ] ||
			fail "$f says $(pushes "$TOP/$f")where the scripts $lua"
	done
}

@test "the README's ACL rules per mode are rlock(7)'s" {
	run python3 - "$TOP" <<'PY'
import re, sys
top = sys.argv[1]
rule = re.compile(r"[+~&][\w|:*@-]+")
def mode(s):
    s = re.sub(r"\(a plain waiter\)", "", s)
    return " ".join(s.replace("`", "").replace(",", " ").split()).lower()
readme = {}
for line in open(top + "/README.md", encoding="utf-8"):
    m = re.match(r"\| (run[^|]*|`[^|]*`) \| (.*) \|$", line)
    if m and ("+" in m.group(2)):
        readme[mode(m.group(1))] = set(rule.findall(m.group(2)))
man, cur = {}, None
for line in open(top + "/man/rlock.7", encoding="utf-8"):
    line = line.rstrip("\n")
    if line.startswith(".Sh "):
        cur = None
        inside = line == ".Sh THE ACL USER"
        continue
    if not locals().get("inside"):
        continue
    if line.startswith(".It "):
        item = line[4:].replace("Fl \\-", "--").replace("Fl ", "-")
        cur = mode(item.replace("Cm ", ""))
        man[cur] = set()
    elif line.startswith(".El"):
        cur = None
    elif cur is not None:
        man[cur] |= set(rule.findall(line))
bad = 0
if len(readme) < 7:
    print("README: only %d mode rows found" % len(readme)); bad = 1
for k, v in readme.items():
    if k not in man:
        print("rlock(7) has no item for the README's mode %r" % k); bad = 1
    elif v != man[k]:
        print("%s: README %s, rlock(7) %s" % (k, sorted(v - man[k]),
                                               sorted(man[k] - v))); bad = 1
for k in man:
    if k not in readme:
        print("the README has no row for rlock(7)'s mode %r" % k); bad = 1
sys.exit(bad)
PY
	[ "$status" = 0 ] || fail "$output"
}

@test "the README's build line names every package of debian/control's Build-Depends" {
	local line want p
	line=$(grep -E '^    sudo apt install .*libhiredis-dev' "$TOP/README.md")
	[ -n "$line" ] || fail "no apt line in the README"
	want=$(sed -n '/^Build-Depends:/,/^[A-Z][A-Za-z-]*:/p' "$TOP/debian/control" |
		sed '$d; s/^Build-Depends://' | tr ',' '\n' |
		sed 's/([^)]*)//; s/[[:space:]]//g' | grep -v '^debhelper-compat$' |
		grep .)
	[ "$(printf '%s\n' "$want" | wc -l)" -ge 5 ] || fail "Build-Depends: $want"
	for p in $want gcc make; do
		[[ " $line " == *" $p "* ]] || fail "the README's apt line lacks $p"
	done
}
