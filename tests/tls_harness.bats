#!/usr/bin/env bats
# The TLS fixtures themselves (tests/tls.bash), checked with openssl(1) and
# redis-cli --tls before rlock relies on them: each certificate fails
# verification for the one reason it was made for, and the servers speak
# TLS, and only TLS, with and without client certificates.

load helper
load tls

setup_file() {
	tls_certs
	tls_redis_start tls
	tls_redis_start mtls --tls-auth-clients yes
}

teardown_file() {
	redis_stop tls
	redis_stop mtls
}

# verify_as NAME CERT [CA]: openssl verify for host name NAME.
verify_as() {
	openssl verify -CAfile "$TLS_DIR/${3:-ca}.crt" -verify_hostname "$1" \
		"$TLS_DIR/$2.crt" 2>&1
}

@test "tls harness: each certificate verifies, or fails for its own reason" {
	run -0 verify_as localhost server
	run -0 openssl verify -CAfile "$TLS_DIR/ca.crt" -verify_ip 127.0.0.1 \
		"$TLS_DIR/server.crt"
	run -0 verify_as rlock-client client
	run ! verify_as localhost wronghost
	assert_output --partial "hostname mismatch"
	run ! verify_as localhost expired
	assert_output --partial "certificate has expired"
	run ! verify_as localhost server2
	assert_output --partial "unable to get local issuer certificate"
	run -0 verify_as localhost server2 ca2
	run ! verify_as rlock-client client2
	# Each key goes with its certificate.
	[ "$(openssl x509 -in "$TLS_DIR/client.crt" -noout -pubkey)" = \
		"$(openssl pkey -in "$TLS_DIR/client.key" -pubout)" ]
	[ "$(openssl x509 -in "$TLS_DIR/expired.crt" -noout -pubkey)" = \
		"$(openssl pkey -in "$TLS_DIR/server.key" -pubout)" ]
}

@test "tls harness: the servers speak TLS only; mutual TLS wants a known client certificate" {
	run -0 tls_cli "$(tls_port tls)" ping
	assert_output PONG
	run -0 tls_cli "$(tls_port mtls)" --cert "$TLS_DIR/client.crt" \
		--key "$TLS_DIR/client.key" ping
	assert_output PONG
	# No client certificate, or one from a CA the server does not trust.
	run tls_cli "$(tls_port mtls)" ping
	refute_output PONG
	run tls_cli "$(tls_port mtls)" --cert "$TLS_DIR/client2.crt" \
		--key "$TLS_DIR/client.key" ping
	refute_output PONG
	# A client that does not trust the test CA.
	run tls_cli "$(tls_port tls)" --cacert "$TLS_DIR/ca2.crt" ping
	assert_output --partial "certificate verify failed"
	# Plain text against the TLS port: the server drops it.
	run timeout 5 redis-cli -h 127.0.0.1 -p "$(tls_port tls)" ping
	refute_output PONG
	# The unix socket stays plain, for the tests' own commands.
	run -0 tcli tls ping
	assert_output PONG
}
