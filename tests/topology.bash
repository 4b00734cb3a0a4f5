# shellcheck shell=bash
# topology.bash: Redis topologies on 127.0.0.1 for tests (Sentinel, Cluster,
# N independent masters), on free ports, in a directory the caller owns.
# Every process is started daemonized with a pidfile, stopped by PID after
# checking that /proc/PID/cmdline still names its port (PID-reuse guard),
# never by name. Every wait is bounded. Nothing persists (--save '',
# --appendonly no). Works from bats (load 'topology') and plain bash
# (source tests/topology.bash), and from the command line:
#	bash tests/topology.bash DIR FUNCTION [ARGS...]
# runs FUNCTION with DIR's state and prints the resulting exports.
#
# Settings (read when a function runs):
#   TOPO_DIR                required. One topology of each kind per dir; the
#                           state is in TOPO_DIR/*.env (see topo_load).
#   TOPO_PASSWORD           requirepass and masterauth of the data nodes
#                           started from then on (topo_cli remembers them)
#   TOPO_SENTINEL_PASSWORD  requirepass of the sentinels (sentinel-pass too)
#   TOPO_MASTER_NAME        Sentinel master name (mymaster)
#   TOPO_NODE_TIMEOUT       cluster-node-timeout in ms (2000)
#   TOPO_WAIT               bound of each wait, in seconds (20)
#   TOPO_TLS                a directory with ca.crt, server.crt and
#                           server.key (tests/tls.bash): the nodes started
#                           from then on speak TLS only (plain port 0, the
#                           port is the TLS port; replication, the cluster
#                           bus and the sentinels' links over TLS too),
#                           topo_cli talks TLS to them, and the URLs are
#                           rediss://, rediss+sentinel://, rediss+cluster://
#
# Common
#   topo_free_port [BUS]    print a free loopback port; BUS=1: port+10000
#                           (the cluster bus) is free too
#   topo_cli PORT ARGS...   redis-cli to our node on PORT with its password,
#                           bounded by timeout(1)
#   topo_pid PORT           print the PID of our live node on PORT, or fail
#   topo_kill PORT [SIG]    signal it (default KILL), wait until it is gone
#   topo_restart PORT [ARGS...]  start it again: same port, dir and
#                           arguments, plus ARGS (its data is gone)
#   topo_pids               the PIDs of our live nodes, one a line
#   topo_down               kill -9 every node under TOPO_DIR, wait until gone
#   topo_load               re-read the exports of the *_up functions
#                           (bats: call it in setup(); arrays do not export)
#   topo_logs [LINES]       tail of every node's log (for failure output)
#   topo_wait SECS PRED [ARGS...]  poll PRED every 50 ms until it succeeds
#
# Sentinel: 1 master + 1 replica + 3 sentinels, quorum 2,
# down-after-milliseconds 1000, failover-timeout 5000.
#   sentinel_up             exports SENTINEL_URL (redis+sentinel://...,
#                           credentials from TOPO_PASSWORD), SENTINEL_NAME,
#                           SENTINEL_PORTS (the 3 sentinels),
#                           SENTINEL_MASTER_PORT, SENTINEL_REPLICA_PORT
#   sentinel_master_port    the master the sentinels announce (all must agree)
#   sentinel_failover       SENTINEL FAILOVER; returns when every sentinel
#                           announces the new master and it takes writes;
#                           swaps SENTINEL_MASTER_PORT/REPLICA_PORT. The old
#                           master stays a writable master for ~11 s more
#                           (see sentinel_wait_demoted)
#   sentinel_kill_master    kill -9 the current master (exports its port as
#                           SENTINEL_KILLED)
#   sentinel_wait_failover OLD  wait until every sentinel announces a master
#                           other than port OLD and it takes writes (after a
#                           kill: ~2.3 s); swaps the ports as above
#   sentinel_rejoin PORT    restart a killed node as a replica of the current
#                           master; wait until every sentinel sees it healthy
#   sentinel_wait_demoted PORT  wait until PORT is a replica with its link up
#
# Cluster: 3 masters (+ REPLICAS replicas each), all slots assigned by
# redis-cli --cluster create.
#   cluster_up [REPLICAS]   exports CLUSTER_URL (redis+cluster://...),
#                           CLUSTER_PORTS (masters), CLUSTER_REPLICA_PORTS
#   cluster_keyslot KEY     the hash slot of KEY
#   cluster_slot_owner SLOT [PORT]  the port of SLOT's master (PORT's view)
#   cluster_key_owner KEY   "SLOT PORT"
#   cluster_node_id PORT    the node ID of PORT
#   cluster_migrate_slot SLOT [TO]  move SLOT and its keys from its owner to
#                           master TO (default: the next master); sets
#                           CLUSTER_MIGRATE_FROM and CLUSTER_MIGRATE_TO
#   cluster_migrate_key KEY [TO]    the same for KEY's slot
#   The three steps apart, to hold a slot mid-migration (ASK redirects):
#   cluster_migrate_begin SLOT TO   SETSLOT IMPORTING (TO), MIGRATING (owner)
#   cluster_migrate_keys SLOT       GETKEYSINSLOT + MIGRATE ... KEYS until empty
#   cluster_migrate_end SLOT        SETSLOT NODE on every master; wait until
#                                   every node agrees on the new owner
#   cluster_asking PORT CMD...      ASKING then CMD on one connection: read
#                                   an importing node's keys mid-migration
#
# Independent masters (Redlock)
#   masters_up N            exports MASTERS_PORTS, MASTERS_URLS (space
#                           separated) and sets the array MASTERS_UARGS
#                           (-u URL -u URL ...)
#   masters_uargs           rebuild MASTERS_UARGS from MASTERS_URLS
#   masters_port I          the port of master I (0-based)
#   masters_kill I [SIG]    kill -9 (or SIG) master I
#   masters_restart I [ARGS...]  start master I again (empty)

_topo_err() { echo "topology: $*" >&2; }
# Bash's clock, as date(1)'s but without a process per poll.
_topo_now() { local t=${EPOCHREALTIME/[.,]/}; echo $(( t / 1000 )); }
_topo_dir() { echo "${TOPO_DIR:?set TOPO_DIR}/n$1"; }

topo_wait() {
	local end=$(( $(_topo_now) + ${1%%.*} * 1000 ))
	shift
	until "$@"; do
		[ "$(_topo_now)" -lt "$end" ] || return 1
		sleep 0.05
	done
}

# The password our node on PORT was started with (kept in its dir, so
# nodes of several topologies with different passwords can share TOPO_DIR).
_topo_pass() {
	cat "$(_topo_dir "$1")/pass" 2>/dev/null || true
}

# The redis-cli options to reach our node on PORT (TLS, if it speaks it),
# in the array TLS_ARGS. No fork: topo_cli runs often.
_topo_tls_args() {
	local d=
	TLS_ARGS=()
	read -r d 2>/dev/null < "${TOPO_DIR:?}/n$1/tls" || true
	[ -z "$d" ] || TLS_ARGS=(--tls --cacert "$d/ca.crt")
}

# The scheme of the URLs of the nodes started now: redis or rediss.
_topo_scheme() { echo "redis${TOPO_TLS:+s}"; }

topo_cli() {
	local port=$1 pass TLS_ARGS
	shift
	_topo_tls_args "$port"
	set -- "${TLS_ARGS[@]}" "$@"
	pass=$(_topo_pass "$port")
	# REDISCLI_AUTH, not -a: no warning line mixed into the output.
	if [ -n "$pass" ]; then
		REDISCLI_AUTH=$pass timeout -k 1 5 redis-cli -h 127.0.0.1 \
			-p "$port" "$@"
	else
		env -u REDISCLI_AUTH timeout -k 1 5 redis-cli -h 127.0.0.1 \
			-p "$port" "$@"
	fi
}

_topo_port_free() {
	local p=$1
	[ "$p" -lt 65536 ] || return 1
	if command -v ss >/dev/null; then
		# Any socket on that local port, listening or not.
		[ -z "$(ss -Htan "( sport = :$p )" 2>/dev/null)" ]
	else
		! (exec 9<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null
	fi
}

topo_free_port() {
	local bus=${1:-0} p
	for _ in $(seq 1 100); do
		# 20000..44999: above most fixed services, and port+10000 fits.
		p=$(( (RANDOM << 15 | RANDOM) % 25000 + 20000 ))
		# This worker's class of ports under tests/run-bats (see
		# own_port in helper.bash); the class keeps port+10000 in it.
		p=$(( p - p % ${RLOCK_TEST_PORTS_MOD:-1} + ${RLOCK_TEST_PORTS_REM:-0} ))
		[ -e "$(_topo_dir "$p")" ] && continue
		_topo_port_free "$p" || continue
		[ "$bus" = 1 ] && ! _topo_port_free $((p + 10000)) && continue
		echo "$p"
		return 0
	done
	_topo_err "no free port found"
	return 1
}

# Our node on PORT: alive, not a zombie, and its command line names the
# port (":PORT" in redis' process title, or our dir "nPORT").
_topo_ours() {
	local pid=$1 port=$2 st
	[ -n "$pid" ] || return 1
	read -r st 2>/dev/null < "/proc/$pid/stat" || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ] || return 1
	tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null |
		grep -qE "(:|/n)$port([^0-9]|\$)"
}

topo_pid() {
	local pid
	pid=$(cat "$(_topo_dir "$1")/pid" 2>/dev/null) || return 1
	_topo_ours "$pid" "$1" || return 1
	echo "$pid"
}

_topo_alive() {
	local st
	read -r st 2>/dev/null < "/proc/$1/stat" || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

_topo_gone() {
	local p
	for p in "$@"; do
		_topo_alive "$p" && return 1
	done
	return 0
}

# The server answering on PORT is the process in our pidfile (not somebody
# else's server that got the port first).
_topo_answers() {
	local port=$1 pid info
	pid=$(topo_pid "$port") || return 1
	info=$(topo_cli "$port" info server 2>/dev/null) || return 1
	[[ $info == *"process_id:$pid"* ]]
}

# _topo_spawn PORT: run the command in nPORT/cmd (one word a line, plus
# "$@"), wait until it answers on PORT. 1 if it died or never answered.
_topo_spawn() {
	local port=$1 dir cmd=()
	shift
	dir=$(_topo_dir "$port")
	mapfile -t cmd < "$dir/cmd"
	rm -f "$dir/pid"
	# No fd of ours (bats' fd 3) may stay open in the daemon.
	"${cmd[@]}" "$@" < /dev/null >> "$dir/start.err" 2>&1 3>&- 4>&- ||
		return 1
	for _ in $(seq 1 250); do
		_topo_answers "$port" && return 0
		# Port taken (it exits before writing its pidfile), or it died.
		grep -qs 'Could not create server TCP\|Failed listening' \
			"$dir/log" && return 1
		if [ -f "$dir/pid" ] && ! _topo_alive "$(cat "$dir/pid")"; then
			return 1
		fi
		sleep 0.02
	done
	return 1
}

# _topo_start KIND [ARGS...]: a new node on a free port (retried on a
# collision); KIND is server, bus (a cluster node) or sentinel (ARGS are
# then lines of sentinel.conf). Prints the port.
_topo_start() {
	local kind=$1 port dir try pw=${TOPO_PASSWORD:-}
	shift
	mkdir -p "${TOPO_DIR:?set TOPO_DIR}"
	for try in 1 2 3 4 5 6 7 8; do
		port=$(topo_free_port "$([ "$kind" = bus ] && echo 1)") ||
			return 1
		dir=$(_topo_dir "$port")
		mkdir -p "$dir" || return 1
		printf %s "${TOPO_TLS:-}" > "$dir/tls"
		if [ "$kind" = sentinel ]; then
			printf %s "${TOPO_SENTINEL_PASSWORD:-}" > "$dir/pass"
			{
				if [ -n "${TOPO_TLS:-}" ]; then
					printf '%s\n' "port 0" "tls-port $port" \
						"tls-cert-file $TOPO_TLS/server.crt" \
						"tls-key-file $TOPO_TLS/server.key" \
						"tls-ca-cert-file $TOPO_TLS/ca.crt" \
						"tls-auth-clients no" \
						"tls-replication yes"
				else
					echo "port $port"
				fi
				printf '%s\n' "bind 127.0.0.1" \
					"daemonize yes" "pidfile $dir/pid" \
					"logfile $dir/log" "dir $dir"
				[ -z "${TOPO_SENTINEL_PASSWORD:-}" ] || printf '%s\n' \
					"requirepass $TOPO_SENTINEL_PASSWORD" \
					"sentinel sentinel-pass $TOPO_SENTINEL_PASSWORD"
				printf '%s\n' "$@"
			} > "$dir/sentinel.conf"
			printf '%s\n' redis-sentinel "$dir/sentinel.conf" > "$dir/cmd"
		else
			printf %s "$pw" > "$dir/pass"
			{
				if [ -n "${TOPO_TLS:-}" ]; then
					printf '%s\n' redis-server --port 0 \
						--tls-port "$port" \
						--tls-cert-file "$TOPO_TLS/server.crt" \
						--tls-key-file "$TOPO_TLS/server.key" \
						--tls-ca-cert-file "$TOPO_TLS/ca.crt" \
						--tls-auth-clients no \
						--tls-replication yes --tls-cluster yes
				else
					printf '%s\n' redis-server --port "$port"
				fi
				printf '%s\n' \
					--bind 127.0.0.1 --dir "$dir" --save '' \
					--appendonly no --repl-diskless-sync-delay 0 \
					--daemonize yes --pidfile "$dir/pid" \
					--logfile "$dir/log"
				[ -z "$pw" ] || printf '%s\n' --requirepass "$pw" \
					--masterauth "$pw"
				[ "$kind" != bus ] || printf '%s\n' \
					--cluster-enabled yes \
					--cluster-config-file nodes.conf \
					--cluster-node-timeout "${TOPO_NODE_TIMEOUT:-2000}"
				[ $# = 0 ] || printf '%s\n' "$@"
			} > "$dir/cmd"
		fi
		if _topo_spawn "$port"; then
			echo "$port"
			return 0
		fi
		topo_kill "$port" KILL
		mv "$dir" "$dir.failed.$try"
	done
	_topo_err "could not start a $kind node (see $TOPO_DIR/n*.failed.*)"
	return 1
}

topo_kill() {
	local port=$1 sig=${2:-KILL} pid
	pid=$(topo_pid "$port") || return 0
	kill -"$sig" "$pid" 2>/dev/null || true
	[ "$sig" = KILL ] || kill -CONT "$pid" 2>/dev/null || true
	if ! topo_wait 10 _topo_gone "$pid"; then
		kill -KILL "$pid" 2>/dev/null || true
		topo_wait 5 _topo_gone "$pid" || {
			_topo_err "PID $pid (port $port) does not go away"
			return 1
		}
	fi
	rm -f "$(_topo_dir "$port")/pid"
}

topo_restart() {
	local port=$1
	shift
	topo_kill "$port" KILL || return 1
	# A cluster node's identity and slots live in nodes.conf: keep it.
	_topo_spawn "$port" "$@" || {
		_topo_err "could not restart the node on port $port"
		return 1
	}
}

topo_pids() {
	local d port
	for d in "${TOPO_DIR:?}"/n*; do
		[ -f "$d/cmd" ] || continue
		port=${d##*/n}
		[[ $port =~ ^[0-9]+$ ]] || continue
		topo_pid "$port" || true
	done
}

topo_down() {
	local pids=() p
	[ -d "${TOPO_DIR:?}" ] || return 0
	mapfile -t pids < <(topo_pids)
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
	done
	topo_wait 10 _topo_gone "${pids[@]}" || {
		_topo_err "still running after kill -9: ${pids[*]}"
		return 1
	}
	rm -f "$TOPO_DIR"/n*/pid "$TOPO_DIR"/*.env
}

topo_logs() {
	local f
	for f in "${TOPO_DIR:?}"/n*/log; do
		[ -f "$f" ] || continue
		echo "== $f"
		tail -n "${1:-15}" "$f"
	done
}

# _topo_save NAME VAR...: the exports of one topology, for topo_load.
_topo_save() {
	local f=$TOPO_DIR/$1.env v
	shift
	: > "$f"
	for v in "$@"; do
		printf 'export %s=%q\n' "$v" "${!v}" >> "$f"
	done
}

topo_load() {
	local f
	for f in "${TOPO_DIR:?}"/*.env; do
		[ -f "$f" ] || continue
		# shellcheck disable=SC1090
		. "$f"
	done
	[ -z "${MASTERS_URLS:-}" ] || masters_uargs
}

_topo_userinfo() {
	[ -z "${TOPO_PASSWORD:-}" ] || printf ':%s@' "$TOPO_PASSWORD"
}

_topo_writable() {
	[ "$(topo_cli "$1" set topo:probe x px 2000 2>/dev/null)" = OK ]
}

_topo_link_up() {
	topo_cli "$1" info replication 2>/dev/null |
		grep -q '^master_link_status:up'
}

# ------------------------------------------------------------ Sentinel

_sentinel_name() { echo "${SENTINEL_NAME:-${TOPO_MASTER_NAME:-mymaster}}"; }

# The master port sentinel S announces.
_sentinel_ask() {
	topo_cli "$1" sentinel get-master-addr-by-name "$(_sentinel_name)" \
		2>/dev/null | sed -n 2p
}

sentinel_master_port() {
	local s p first=
	for s in $SENTINEL_PORTS; do
		p=$(_sentinel_ask "$s")
		[ -n "$p" ] || return 1
		[ -z "$first" ] && first=$p
		[ "$p" = "$first" ] || return 1
	done
	[ -n "$first" ] && echo "$first"
}

# "port flags master-link-status" for each replica sentinel S knows.
_sentinel_replicas() {
	topo_cli "$1" sentinel replicas "$(_sentinel_name)" 2>/dev/null |
		awk 'NR % 2 { k = $0; next }
		k == "name" { if (p != "") print p, f, l; p = ""; f = ""; l = "" }
		k == "port" { p = $0 } k == "flags" { f = $0 }
		k == "master-link-status" { l = $0 }
		END { if (p != "") print p, f, l }'
}

# Every sentinel sees the other two and has replica PORT healthy.
_sentinel_sees() {
	local port=$1 s m
	for s in $SENTINEL_PORTS; do
		m=$(topo_cli "$s" sentinel master "$(_sentinel_name)" 2>/dev/null |
			paste -sd' ')
		[[ " $m " == *" num-other-sentinels 2 "* ]] || return 1
		_sentinel_replicas "$s" | grep -qx "$port slave ok" || return 1
	done
}

sentinel_up() {
	local name m r s ports=()
	name=$(_sentinel_name)
	m=$(_topo_start server) || return 1
	r=$(_topo_start server --replicaof 127.0.0.1 "$m") || return 1
	for _ in 1 2 3; do
		s=$(_topo_start sentinel \
			"sentinel monitor $name 127.0.0.1 $m 2" \
			${TOPO_PASSWORD:+"sentinel auth-pass $name $TOPO_PASSWORD"} \
			"sentinel down-after-milliseconds $name 1000" \
			"sentinel failover-timeout $name 5000" \
			"sentinel parallel-syncs $name 1") || return 1
		ports+=("$s")
	done
	export SENTINEL_NAME=$name SENTINEL_PORTS="${ports[*]}"
	export SENTINEL_MASTER_PORT=$m SENTINEL_REPLICA_PORT=$r SENTINEL_KILLED=
	SENTINEL_URL="$(_topo_scheme)+sentinel://$(_topo_userinfo)127.0.0.1:${ports[0]}"
	SENTINEL_URL+=",127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}/$name"
	export SENTINEL_URL
	_topo_save sentinel SENTINEL_NAME SENTINEL_PORTS SENTINEL_MASTER_PORT \
		SENTINEL_REPLICA_PORT SENTINEL_URL SENTINEL_KILLED
	topo_wait "${TOPO_WAIT:-20}" _topo_link_up "$r" || {
		_topo_err "replica $r never linked to master $m"
		return 1
	}
	topo_wait "${TOPO_WAIT:-20}" _sentinel_sees "$r" || {
		_topo_err "the sentinels never saw each other and replica $r"
		return 1
	}
}

_sentinel_moved_from() {
	local p
	p=$(sentinel_master_port) && [ "$p" != "$1" ]
}

sentinel_wait_failover() {
	local old=$1 new
	topo_wait "${TOPO_WAIT:-20}" _sentinel_moved_from "$old" || {
		_topo_err "the sentinels did not announce a master other than $old"
		return 1
	}
	new=$(sentinel_master_port) || return 1
	topo_wait "${TOPO_WAIT:-20}" _topo_writable "$new" || {
		_topo_err "new master $new never took writes"
		return 1
	}
	export SENTINEL_MASTER_PORT=$new SENTINEL_REPLICA_PORT=$old
	_topo_save sentinel SENTINEL_NAME SENTINEL_PORTS SENTINEL_MASTER_PORT \
		SENTINEL_REPLICA_PORT SENTINEL_URL SENTINEL_KILLED
}

sentinel_failover() {
	local old s r
	old=$(sentinel_master_port) || {
		_topo_err "the sentinels do not agree on a master"
		return 1
	}
	s=${SENTINEL_PORTS%% *}
	for _ in $(seq 1 100); do
		r=$(topo_cli "$s" sentinel failover "$(_sentinel_name)" 2>&1) ||
			true
		[ "$r" = OK ] && break
		# NOGOODSLAVE until a sentinel has fresh INFO from the replica.
		sleep 0.1
	done
	[ "$r" = OK ] || {
		_topo_err "SENTINEL FAILOVER: $r"
		return 1
	}
	sentinel_wait_failover "$old"
}

sentinel_kill_master() {
	local m
	m=$(sentinel_master_port) || {
		_topo_err "the sentinels do not agree on a master"
		return 1
	}
	topo_kill "$m" KILL || return 1
	export SENTINEL_KILLED=$m
	_topo_save sentinel SENTINEL_NAME SENTINEL_PORTS SENTINEL_MASTER_PORT \
		SENTINEL_REPLICA_PORT SENTINEL_URL SENTINEL_KILLED
}

# A sentinel asks a replica for INFO only every 10 s (every second during
# a failover): it may see the new link up only that much later, three
# sentinels each in turn. Hence at least 30 s, as for a demotion.
sentinel_rejoin() {
	local port=$1 m s w=${TOPO_WAIT:-20}
	[ "$w" -ge 30 ] || w=30
	m=$(sentinel_master_port) || return 1
	topo_restart "$port" --replicaof 127.0.0.1 "$m" || return 1
	if ! topo_wait "$w" _topo_link_up "$port"; then
		_topo_err "node $port never synced with $m: $(topo_cli "$port" \
			info replication 2>&1 | tr -d '\r' | grep -E \
			'^(role|master_port|master_link_status|master_sync_in_progress):' |
			paste -sd' ')"
		return 1
	fi
	if ! topo_wait "$w" _sentinel_sees "$port"; then
		for s in $SENTINEL_PORTS; do
			_topo_err "sentinel $s sees: $(_sentinel_replicas "$s" |
				paste -sd';'); $(topo_cli "$s" sentinel master \
				"$(_sentinel_name)" 2>&1 | paste -sd' ' |
				grep -o 'num-other-sentinels [0-9]*')"
		done
		_topo_err "node $port never rejoined as a healthy replica of $m"
		return 1
	fi
}

_topo_is_replica() {
	[ "$(topo_cli "$1" role 2>/dev/null | head -1)" = slave ] &&
		_topo_link_up "$1"
}

sentinel_wait_demoted() {
	local w=${TOPO_WAIT:-20}
	[ "$w" -ge 30 ] || w=30
	topo_wait "$w" _topo_is_replica "$1" || {
		_topo_err "node $1 was not turned into a replica"
		return 1
	}
}

# ------------------------------------------------------------ Cluster

_cluster_any() {
	local p
	for p in ${CLUSTER_PORTS:-} ${CLUSTER_REPLICA_PORTS:-}; do
		topo_pid "$p" > /dev/null && { echo "$p"; return 0; }
	done
	_topo_err "no cluster node is running"
	return 1
}

# CLUSTER NODES from PORT as "port flags slots...".
_cluster_nodes() {
	topo_cli "$1" cluster nodes 2>/dev/null | awk '{
		split($2, a, "@"); n = split(a[1], hp, ":")
		printf "%s %s", hp[n], $3
		for (i = 9; i <= NF; i++) printf " %s", $i
		printf "\n" }'
}

cluster_keyslot() {
	local p
	p=$(_cluster_any) || return 1
	topo_cli "$p" cluster keyslot "$1"
}

cluster_slot_owner() {
	local slot=$1 p=${2:-}
	[ -n "$p" ] || p=$(_cluster_any) || return 1
	# Skips "[slot->-id]" / "[slot-<-id]": migration marks, not ownership.
	_cluster_nodes "$p" | awk -v s="$slot" '$2 ~ /master/ {
		for (i = 3; i <= NF; i++) {
			if ($i ~ /^\[/) continue
			n = split($i, r, "-"); lo = r[1]; hi = n > 1 ? r[2] : r[1]
			if (s + 0 >= lo + 0 && s + 0 <= hi + 0) { print $1; exit }
		} }' | grep . || {
		_topo_err "no owner of slot $slot in the view of $p"
		return 1
	}
}

cluster_key_owner() {
	local slot owner
	slot=$(cluster_keyslot "$1") && owner=$(cluster_slot_owner "$slot") ||
		return 1
	echo "$slot $owner"
}

cluster_node_id() { topo_cli "$1" cluster myid; }

# Live masters in the view of a live node, by port.
_cluster_masters() {
	local p
	p=$(_cluster_any) || return 1
	_cluster_nodes "$p" | awk '$2 ~ /master/ && $2 !~ /fail/ { print $1 }' |
		sort -n
}

_cluster_ok() {
	local p n=0 want=$#
	for p in "$@"; do
		topo_cli "$p" cluster info 2>/dev/null |
			grep -q '^cluster_state:ok' || return 1
		# Each node knows all the others, none still in handshake.
		n=$(_cluster_nodes "$p" | grep -cv 'handshake\|noaddr')
		[ "$n" = "$want" ] || return 1
	done
}

# Every node sees M masters and R replicas.
_cluster_views() {
	local p
	for p in $CLUSTER_PORTS $CLUSTER_REPLICA_PORTS; do
		[ "$(_cluster_nodes "$p" | grep -c ' [a-z,]*master')" = "$1" ] &&
			[ "$(_cluster_nodes "$p" | grep -c ' [a-z,]*slave')" = "$2" ] ||
			return 1
	done
}

_cluster_links_up() {
	local p
	for p in $CLUSTER_REPLICA_PORTS; do
		_topo_link_up "$p" || return 1
	done
}

cluster_up() {
	local replicas=${1:-0} n ports=() hp=() p m=() r=() TLS_ARGS
	n=$(( 3 * (1 + replicas) ))
	for _ in $(seq 1 "$n"); do
		p=$(_topo_start bus) || return 1
		ports+=("$p")
		hp+=("127.0.0.1:$p")
	done
	# redis-cli reads REDISCLI_AUTH in --cluster mode too (and sends
	# AUTH even when it is empty).
	_topo_tls_args "${ports[0]}"
	env -u REDISCLI_AUTH ${TOPO_PASSWORD:+REDISCLI_AUTH="$TOPO_PASSWORD"} \
		timeout -k 1 60 redis-cli "${TLS_ARGS[@]}" --cluster create "${hp[@]}" \
		--cluster-replicas "$replicas" --cluster-yes \
		> "$TOPO_DIR/cluster-create.log" 2>&1 || {
		_topo_err "redis-cli --cluster create failed:" \
			"$(tail -3 "$TOPO_DIR/cluster-create.log")"
		return 1
	}
	topo_wait "${TOPO_WAIT:-20}" _cluster_ok "${ports[@]}" || {
		_topo_err "cluster_state never ok on all of ${ports[*]}"
		return 1
	}
	# Each node's own ROLE: other nodes learn of replicas later.
	for p in $(printf '%s\n' "${ports[@]}" | sort -n); do
		case $(topo_cli "$p" role | head -1) in
		master) m+=("$p") ;;
		slave) r+=("$p") ;;
		esac
	done
	export CLUSTER_PORTS="${m[*]}" CLUSTER_REPLICA_PORTS="${r[*]}"
	CLUSTER_URL="$(_topo_scheme)+cluster://$(_topo_userinfo)"
	CLUSTER_URL+=$(printf '127.0.0.1:%s,' "${m[@]}")
	export CLUSTER_URL=${CLUSTER_URL%,}
	_topo_save cluster CLUSTER_PORTS CLUSTER_REPLICA_PORTS CLUSTER_URL
	[ "${#m[@]}" = 3 ] || {
		_topo_err "expected 3 masters, got: ${m[*]}"
		return 1
	}
	topo_wait "${TOPO_WAIT:-20}" _cluster_links_up || {
		_topo_err "cluster replicas never linked: $CLUSTER_REPLICA_PORTS"
		return 1
	}
	topo_wait "${TOPO_WAIT:-20}" _cluster_views "${#m[@]}" "${#r[@]}" || {
		_topo_err "nodes disagree on who is a master and who a replica"
		return 1
	}
}

_cluster_next_master() {
	local from=$1 all first='' p take=0
	all=$(_cluster_masters) || return 1
	for p in $all; do
		[ -z "$first" ] && first=$p
		[ $take = 1 ] && { echo "$p"; return 0; }
		[ "$p" = "$from" ] && take=1
	done
	echo "$first"
}

_cluster_expect_ok() {
	local r
	r=$(topo_cli "$@" 2>&1) || true
	[ "$r" = OK ] && return 0
	_topo_err "$1: ${*:2}: $r"
	return 1
}

cluster_migrate_begin() {
	local slot=$1 to=$2 from fid tid
	from=$(cluster_slot_owner "$slot") || return 1
	[ "$from" != "$to" ] || {
		_topo_err "slot $slot is already on $to"
		return 1
	}
	fid=$(cluster_node_id "$from") && tid=$(cluster_node_id "$to") ||
		return 1
	# Importing first: a key moved before the target knows would be lost.
	_cluster_expect_ok "$to" cluster setslot "$slot" importing "$fid" &&
		_cluster_expect_ok "$from" cluster setslot "$slot" migrating \
			"$tid" || return 1
	echo "$from $to" > "$TOPO_DIR/migrating.$slot"
}

cluster_migrate_keys() {
	local slot=$1 from to keys=() r auth=()
	read -r from to < "$TOPO_DIR/migrating.$slot" || {
		_topo_err "slot $slot is not being migrated"
		return 1
	}
	r=$(_topo_pass "$to")
	[ -z "$r" ] || auth=(auth "$r")
	for _ in $(seq 1 10000); do
		# Keys with a newline in their name are not supported here.
		# (redis-cli prints an empty array as one empty line)
		mapfile -t keys < <(topo_cli "$from" cluster getkeysinslot \
			"$slot" 100 | grep -v '^$')
		[ "${#keys[@]}" = 0 ] && return 0
		r=$(topo_cli "$from" migrate 127.0.0.1 "$to" "" 0 5000 \
			"${auth[@]}" keys "${keys[@]}" 2>&1) || true
		case $r in
		OK | NOKEY) ;;
		*) _topo_err "MIGRATE from $from to $to: $r"; return 1 ;;
		esac
	done
	_topo_err "slot $slot: keys keep coming"
	return 1
}

# Every live node (masters and replicas) names TO as the owner of SLOT.
_cluster_agree() {
	local slot=$1 to=$2 p
	for p in ${CLUSTER_PORTS:-} ${CLUSTER_REPLICA_PORTS:-}; do
		topo_pid "$p" > /dev/null || continue
		[ "$(cluster_slot_owner "$slot" "$p" 2>/dev/null)" = "$to" ] ||
			return 1
	done
}

cluster_migrate_end() {
	local slot=$1 from to tid p
	read -r from to < "$TOPO_DIR/migrating.$slot" || {
		_topo_err "slot $slot is not being migrated"
		return 1
	}
	tid=$(cluster_node_id "$to") || return 1
	# The target first, then the source, then the others (redis-cli's
	# order): the source stops redirecting with ASK only once the target
	# owns the slot.
	_cluster_expect_ok "$to" cluster setslot "$slot" node "$tid" &&
		_cluster_expect_ok "$from" cluster setslot "$slot" node "$tid" ||
		return 1
	for p in $(_cluster_masters); do
		[ "$p" = "$to" ] || [ "$p" = "$from" ] && continue
		_cluster_expect_ok "$p" cluster setslot "$slot" node "$tid" ||
			return 1
	done
	rm -f "$TOPO_DIR/migrating.$slot"
	topo_wait "${TOPO_WAIT:-20}" _cluster_agree "$slot" "$to" || {
		_topo_err "nodes do not agree that $to owns slot $slot"
		return 1
	}
}

cluster_migrate_slot() {
	local slot=$1 to=${2:-} from
	from=$(cluster_slot_owner "$slot") || return 1
	[ -n "$to" ] || to=$(_cluster_next_master "$from") || return 1
	cluster_migrate_begin "$slot" "$to" &&
		cluster_migrate_keys "$slot" &&
		cluster_migrate_end "$slot" || return 1
	# shellcheck disable=SC2034 # for the caller
	CLUSTER_MIGRATE_FROM=$from CLUSTER_MIGRATE_TO=$to
}

cluster_asking() {
	local port=$1
	shift
	# One connection (redis-cli reads the lines from stdin): ASKING holds
	# for the next command only. Words with spaces or quotes not supported.
	printf '%s\n' ASKING "$*" | topo_cli "$port" | tail -n +2
}

cluster_migrate_key() {
	local slot
	slot=$(cluster_keyslot "$1") || return 1
	cluster_migrate_slot "$slot" "${2:-}"
}

# ------------------------------------------------------------ masters

masters_uargs() {
	local u
	MASTERS_UARGS=()
	for u in ${MASTERS_URLS:-}; do
		MASTERS_UARGS+=(-u "$u")
	done
}

masters_up() {
	local n=${1:?masters_up N} p ports=() urls=()
	for _ in $(seq 1 "$n"); do
		p=$(_topo_start server) || return 1
		ports+=("$p")
		urls+=("$(_topo_scheme)://$(_topo_userinfo)127.0.0.1:$p")
	done
	export MASTERS_PORTS="${ports[*]}" MASTERS_URLS="${urls[*]}"
	_topo_save masters MASTERS_PORTS MASTERS_URLS
	masters_uargs
}

masters_port() {
	local ports
	read -ra ports <<< "${MASTERS_PORTS:?no masters_up}"
	[ -n "${ports[$1]:-}" ] || {
		_topo_err "no master $1 (have ${#ports[@]})"
		return 1
	}
	echo "${ports[$1]}"
}

masters_kill() {
	local p
	p=$(masters_port "$1") || return 1
	topo_kill "$p" "${2:-KILL}"
}

masters_restart() {
	local p
	p=$(masters_port "$1") || return 1
	shift
	topo_restart "$p" "$@"
}

# ------------------------------------------------------------ command line

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	[ $# -ge 2 ] || {
		echo "usage: bash topology.bash DIR FUNCTION [ARGS...]" >&2
		exit 64
	}
	export TOPO_DIR=$1
	shift
	mkdir -p "$TOPO_DIR"
	topo_load
	"$@" || exit
	cat "$TOPO_DIR"/*.env 2>/dev/null
	true
fi

# ------------------------------------------------------- for the tests
# (topo_*.bats; they need helper.bash's wait_until and pid_gone.)

# tests/no_ttl.lua, in one round trip per node: a redis-cli per key made
# a teardown after a busy test take minutes on a loaded machine.
IFS= read -r -d '' NO_TTL_LUA < "${BASH_SOURCE[0]%/*}/no_ttl.lua" || true

# keys_without_ttl_on PORT...: "PORT: KEY" for every key without an expiry
# (an error from a node is printed too, so it fails the caller's check).
keys_without_ttl_on() {
	local p
	for p in "$@"; do
		topo_cli "$p" --raw eval_ro "$NO_TTL_LUA" 0 2>&1 |
			sed -n "/./s/^/$p: /p"
	done
	return 0
}

# bg ARGS...: run ARGS in the background (fd 3 closed, or bats would wait
# for it); its PID is $LAST, in BG for the teardown to stop.
bg() {
	"$@" 3>&- &
	LAST=$!
	BG+=("$LAST")
}

# wait_exit PID: wait (at most 10 s) for a background job; sets $STATUS.
wait_exit() {
	wait_until 10 pid_gone "$1" || fail "PID $1 still runs"
	STATUS=0
	wait "$1" || STATUS=$?
}
