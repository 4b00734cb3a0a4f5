# tls.bash: the TLS fixtures, loaded after helper.bash by the files that
# need TLS. tls_certs makes a CA and certificates with openssl(1) in the
# file's temp dir; tls_redis_start starts Debian's redis-server with its
# plain port off and a TLS port on (plus a unix socket, for the tests' own
# redis-cli), stopped by PID like every other server (redis_stop NAME).

# tls_certs: make, once per file, in $TLS_DIR ($BATS_FILE_TMPDIR/pki):
#   ca.crt ca.key            the test CA (the one rlock is told to trust)
#   server.crt server.key    for localhost and 127.0.0.1, signed by ca;
#                            a client certificate too (the cluster bus
#                            makes its nodes show one to each other)
#   wronghost.crt            for wrong.example only (key server.key)
#   expired.crt              localhost, 127.0.0.1; expired in 2020
#   client.crt client.key    a client certificate signed by ca
#   ca2.crt ca2.key          a second CA, which nothing trusts
#   client2.crt              client.key's certificate, signed by ca2
#   server2.crt              localhost, 127.0.0.1, signed by ca2
# EC P-256 keys: quick to make. An expired certificate needs a start date
# in the past, which `openssl x509` (3.0) cannot set: `openssl ca` can.
tls_certs() {
	export TLS_DIR=$BATS_FILE_TMPDIR/pki
	local d=$TLS_DIR
	[ -f "$d/done" ] && return 0
	mkdir -p "$d/ca.db"
	(
		set -e
		cd "$d"
		ec() { echo -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes; }
		# shellcheck disable=SC2046
		{
		openssl req -x509 $(ec) -keyout ca.key -out ca.crt -days 30 \
			-subj /CN=rlock-test-ca
		openssl req -x509 $(ec) -keyout ca2.key -out ca2.crt -days 30 \
			-subj /CN=rlock-other-ca
		openssl req $(ec) -keyout server.key -out server.csr \
			-subj /CN=localhost
		openssl req $(ec) -keyout client.key -out client.csr \
			-subj /CN=rlock-client
		}
		printf '%s\n' 'subjectAltName=DNS:localhost,IP:127.0.0.1' \
			'extendedKeyUsage=serverAuth,clientAuth' > server.ext
		printf '%s\n' 'subjectAltName=DNS:wrong.example' \
			'extendedKeyUsage=serverAuth' > wrong.ext
		printf '%s\n' 'extendedKeyUsage=clientAuth' > client.ext
		sign() { # sign CSR CA EXT OUT
			openssl x509 -req -in "$1" -CA "$2.crt" -CAkey "$2.key" \
				-CAcreateserial -days 30 -extfile "$3" -out "$4"
		}
		sign server.csr ca server.ext server.crt
		sign server.csr ca wrong.ext wronghost.crt
		sign server.csr ca2 server.ext server2.crt
		sign client.csr ca client.ext client.crt
		sign client.csr ca2 client.ext client2.crt
		: > ca.db/index.txt
		echo 1000 > ca.db/serial
		cat > ca.cnf <<-'EOF'
		[ca]
		default_ca = test_ca
		[test_ca]
		database = ca.db/index.txt
		new_certs_dir = ca.db
		serial = ca.db/serial
		default_md = sha256
		policy = any
		unique_subject = no
		[any]
		commonName = supplied
		[server]
		subjectAltName = DNS:localhost,IP:127.0.0.1
		extendedKeyUsage = serverAuth,clientAuth
		EOF
		openssl ca -batch -config ca.cnf -cert ca.crt -keyfile ca.key \
			-in server.csr -out expired.crt -notext \
			-startdate 20200101000000Z -enddate 20200201000000Z \
			-extensions server
	) > "$d/log" 2>&1 || { cat "$d/log" >&2; return 1; }
	touch "$d/done"
}

# tls_redis_start NAME [redis-server args...]: a server in
# $BATS_FILE_TMPDIR/NAME with --port 0 and a free --tls-port (server.crt,
# trusting ca.crt, client certificates not required unless the args say
# --tls-auth-clients yes; later args win). Its port is in NAME/port.
tls_redis_start() {
	local name=$1 dir port _
	shift
	tls_certs || return 1
	dir=$BATS_FILE_TMPDIR/$name
	mkdir -p "$dir"
	: > "$dir/args"
	[ $# = 0 ] || printf '%s\0' "$@" > "$dir/args"
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		port=$(own_port $(( (RANDOM << 1 | RANDOM & 1) % 30000 + 20000 )))
		_tls_spawn "$dir" "$port" "$@" || continue
		# A taken port stops the server before its socket appears.
		if redis_wait_up "$dir/redis.sock"; then
			echo "$port" > "$dir/port"
			return 0
		fi
		redis_stop_dir "$dir"
	done
	echo "could not start a TLS redis-server" >&2
	return 1
}

# tls_redis_restart [-9] NAME: stop NAME's server (SIGTERM, or SIGKILL:
# a crash) and start it again on its port with its arguments; its data is
# gone. Returns when it answers.
tls_redis_restart() {
	local sig=TERM dir port pid args=()
	if [ "$1" = -9 ]; then
		sig=KILL
		shift
	fi
	dir=$BATS_FILE_TMPDIR/$1
	port=$(cat "$dir/port")
	mapfile -d '' args < "$dir/args"
	pid=$(cat "$dir/pid" 2>/dev/null)
	if [ -n "$pid" ] && grep -q redis /proc/"$pid"/cmdline 2>/dev/null; then
		kill -"$sig" "$pid" 2>/dev/null
		kill -CONT "$pid" 2>/dev/null
		wait_until 10 eval "! proc_alive $pid" || return 1
	fi
	_tls_spawn "$dir" "$port" "${args[@]}" &&
		redis_wait_up "$dir/redis.sock"
}

# _tls_spawn DIR PORT ARGS...: start the server of DIR on TLS port PORT.
_tls_spawn() {
	local dir=$1 port=$2
	shift 2
	rm -f "$dir/pid" "$dir/log"
	redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 \
		--tls-cert-file "$TLS_DIR/server.crt" \
		--tls-key-file "$TLS_DIR/server.key" \
		--tls-ca-cert-file "$TLS_DIR/ca.crt" \
		--tls-auth-clients no \
		--unixsocket "$dir/redis.sock" --unixsocketperm 700 \
		--save '' --appendonly no --dir "$dir" \
		--daemonize yes --pidfile "$dir/pid" --logfile "$dir/log" \
		"$@" 3>&-
}

# tls_port NAME: the TLS port of NAME's server.
tls_port() { cat "$BATS_FILE_TMPDIR/$1/port"; }

# tcli NAME ARGS...: redis-cli on NAME's unix socket (no TLS needed).
tcli() { redis-cli -s "$BATS_FILE_TMPDIR/$1/redis.sock" "${@:2}"; }

# tls_cli PORT ARGS...: redis-cli over TLS to 127.0.0.1:PORT, trusting the
# test CA; ARGS may add --cert/--key, or override --cacert.
tls_cli() {
	local port=$1
	shift
	redis-cli -h 127.0.0.1 -p "$port" --tls --cacert "$TLS_DIR/ca.crt" "$@"
}
