/* SPDX-License-Identifier: MIT */
/*
 * OpenSSL, loaded the first time rlock needs it: a TLS connection, the
 * check whether a plain connection reached a TLS port, --version.
 * Linked, libssl and libcrypto would be mapped and relocated by every
 * run, over a unix socket too, for the start-up time and memory that most
 * runs never use. Loaded by name, they still come from the system, so
 * OpenSSL's security updates still reach rlock.
 *
 * Only tls_lib.c and tls_int.h include this file; the rest of tls*.c
 * call OpenSSL by its own names, which tls_int.h points here.
 */
#ifndef RLOCK_TLS_LIB_H
#define RLOCK_TLS_LIB_H

#include <stddef.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* Every OpenSSL function tls*.c call (nm -u on their objects). */
#define TLS_LIB_FUNCS(X) \
	X(ASN1_STRING_get0_data) X(ASN1_STRING_length) X(ASN1_TIME_to_tm) \
	X(ERR_clear_error) X(ERR_peek_error) X(ERR_reason_error_string) \
	X(GENERAL_NAMES_free) X(OPENSSL_sk_num) X(OPENSSL_sk_value) \
	X(OpenSSL_version) X(SSL_CTX_check_private_key) X(SSL_CTX_ctrl) \
	X(SSL_CTX_free) X(SSL_CTX_load_verify_dir) \
	X(SSL_CTX_load_verify_locations) X(SSL_CTX_new) \
	X(SSL_CTX_set_client_cert_cb) X(SSL_CTX_set_default_passwd_cb) \
	X(SSL_CTX_set_default_verify_paths) X(SSL_CTX_set_options) \
	X(SSL_CTX_set_verify) X(SSL_CTX_use_PrivateKey_file) \
	X(SSL_CTX_use_certificate_chain_file) X(SSL_connect) X(SSL_ctrl) \
	X(SSL_free) X(SSL_get0_param) X(SSL_get0_peer_certificate) \
	X(SSL_get_error) X(SSL_get_ex_data) \
	X(SSL_get_ex_data_X509_STORE_CTX_idx) X(SSL_get_verify_result) \
	X(SSL_is_init_finished) X(SSL_new) X(SSL_pending) X(SSL_read_ex) \
	X(SSL_set_connect_state) X(SSL_set_ex_data) X(SSL_set_fd) \
	X(SSL_set_verify) X(SSL_shutdown) X(SSL_write_ex) \
	X(TLS_client_method) X(X509_NAME_get_text_by_NID) \
	X(X509_STORE_CTX_get_current_cert) X(X509_STORE_CTX_get_error) \
	X(X509_STORE_CTX_get_error_depth) X(X509_STORE_CTX_get_ex_data) \
	X(X509_VERIFY_PARAM_set1_host) X(X509_VERIFY_PARAM_set1_ip_asc) \
	X(X509_VERIFY_PARAM_set_hostflags) X(X509_free) X(X509_get0_notAfter) \
	X(X509_get0_notBefore) X(X509_get_default_cert_dir) \
	X(X509_get_default_cert_dir_env) X(X509_get_default_cert_file_env) \
	X(X509_get_ext_d2i) X(X509_get_issuer_name) X(X509_get_subject_name) \
	X(X509_up_ref) X(X509_verify_cert_error_string)

/* Each slot has the type of the function the headers declare. */
struct tls_lib {
#define TLS_LIB_SLOT(f) __typeof__(f) *f;
	TLS_LIB_FUNCS(TLS_LIB_SLOT)
#undef TLS_LIB_SLOT
};

extern struct tls_lib tls_lib;

/*
 * Load libssl (and with it libcrypto) once, from any thread; 0, or -1
 * with the reason in err. Later calls cost a lock and a test.
 */
int tls_lib_load(char *err, size_t errlen);

#endif
