/* SPDX-License-Identifier: MIT */
/*
 * Inside tls.c, tls_why.c and tls_wire.c only: the session, and what
 * the three share. tls.h is the interface.
 */
#ifndef RLOCK_TLS_INT_H
#define RLOCK_TLS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "tls_lib.h"

/*
 * OpenSSL's names call through the table tls_lib.c fills (tls_lib.h):
 * the code reads as plain OpenSSL. The headers' own macros (SSL_CTX_set_
 * mode, sk_GENERAL_NAME_num, ...) expand to these names, so they follow.
 */
#define ASN1_STRING_get0_data		(tls_lib.ASN1_STRING_get0_data)
#define ASN1_STRING_length		(tls_lib.ASN1_STRING_length)
#define ASN1_TIME_to_tm			(tls_lib.ASN1_TIME_to_tm)
#define ERR_clear_error			(tls_lib.ERR_clear_error)
#define ERR_peek_error			(tls_lib.ERR_peek_error)
#define ERR_reason_error_string		(tls_lib.ERR_reason_error_string)
#define GENERAL_NAMES_free		(tls_lib.GENERAL_NAMES_free)
#define OPENSSL_sk_num			(tls_lib.OPENSSL_sk_num)
#define OPENSSL_sk_value		(tls_lib.OPENSSL_sk_value)
#define OpenSSL_version			(tls_lib.OpenSSL_version)
#define SSL_CTX_check_private_key	(tls_lib.SSL_CTX_check_private_key)
#define SSL_CTX_ctrl			(tls_lib.SSL_CTX_ctrl)
#define SSL_CTX_free			(tls_lib.SSL_CTX_free)
#define SSL_CTX_load_verify_dir		(tls_lib.SSL_CTX_load_verify_dir)
#define SSL_CTX_load_verify_locations	(tls_lib.SSL_CTX_load_verify_locations)
#define SSL_CTX_new			(tls_lib.SSL_CTX_new)
#define SSL_CTX_set_client_cert_cb	(tls_lib.SSL_CTX_set_client_cert_cb)
#define SSL_CTX_set_default_passwd_cb	(tls_lib.SSL_CTX_set_default_passwd_cb)
#define SSL_CTX_set_default_verify_paths \
	(tls_lib.SSL_CTX_set_default_verify_paths)
#define SSL_CTX_set_options		(tls_lib.SSL_CTX_set_options)
#define SSL_CTX_set_verify		(tls_lib.SSL_CTX_set_verify)
#define SSL_CTX_use_PrivateKey_file	(tls_lib.SSL_CTX_use_PrivateKey_file)
#define SSL_CTX_use_certificate_chain_file \
	(tls_lib.SSL_CTX_use_certificate_chain_file)
#define SSL_connect			(tls_lib.SSL_connect)
#define SSL_ctrl			(tls_lib.SSL_ctrl)
#define SSL_free			(tls_lib.SSL_free)
#define SSL_get0_param			(tls_lib.SSL_get0_param)
#define SSL_get0_peer_certificate	(tls_lib.SSL_get0_peer_certificate)
#define SSL_get_error			(tls_lib.SSL_get_error)
#define SSL_get_ex_data			(tls_lib.SSL_get_ex_data)
#define SSL_get_ex_data_X509_STORE_CTX_idx \
	(tls_lib.SSL_get_ex_data_X509_STORE_CTX_idx)
#define SSL_get_verify_result		(tls_lib.SSL_get_verify_result)
#define SSL_is_init_finished		(tls_lib.SSL_is_init_finished)
#define SSL_new				(tls_lib.SSL_new)
#define SSL_pending			(tls_lib.SSL_pending)
#define SSL_read_ex			(tls_lib.SSL_read_ex)
#define SSL_set_connect_state		(tls_lib.SSL_set_connect_state)
#define SSL_set_ex_data			(tls_lib.SSL_set_ex_data)
#define SSL_set_fd			(tls_lib.SSL_set_fd)
#define SSL_set_verify			(tls_lib.SSL_set_verify)
#define SSL_shutdown			(tls_lib.SSL_shutdown)
#define SSL_write_ex			(tls_lib.SSL_write_ex)
#define TLS_client_method		(tls_lib.TLS_client_method)
#define X509_NAME_get_text_by_NID	(tls_lib.X509_NAME_get_text_by_NID)
#define X509_STORE_CTX_get_current_cert \
	(tls_lib.X509_STORE_CTX_get_current_cert)
#define X509_STORE_CTX_get_error	(tls_lib.X509_STORE_CTX_get_error)
#define X509_STORE_CTX_get_error_depth	(tls_lib.X509_STORE_CTX_get_error_depth)
#define X509_STORE_CTX_get_ex_data	(tls_lib.X509_STORE_CTX_get_ex_data)
#define X509_VERIFY_PARAM_set1_host	(tls_lib.X509_VERIFY_PARAM_set1_host)
#define X509_VERIFY_PARAM_set1_ip_asc	(tls_lib.X509_VERIFY_PARAM_set1_ip_asc)
#define X509_VERIFY_PARAM_set_hostflags \
	(tls_lib.X509_VERIFY_PARAM_set_hostflags)
#define X509_free			(tls_lib.X509_free)
#define X509_get0_notAfter		(tls_lib.X509_get0_notAfter)
#define X509_get0_notBefore		(tls_lib.X509_get0_notBefore)
#define X509_get_default_cert_dir	(tls_lib.X509_get_default_cert_dir)
#define X509_get_default_cert_dir_env	(tls_lib.X509_get_default_cert_dir_env)
#define X509_get_default_cert_file_env	(tls_lib.X509_get_default_cert_file_env)
#define X509_get_ext_d2i		(tls_lib.X509_get_ext_d2i)
#define X509_get_issuer_name		(tls_lib.X509_get_issuer_name)
#define X509_get_subject_name		(tls_lib.X509_get_subject_name)
#define X509_up_ref			(tls_lib.X509_up_ref)
#define X509_verify_cert_error_string	(tls_lib.X509_verify_cert_error_string)

struct tls_session {
	SSL *ssl;
	int fd;
	int failed;		/* no close_notify after a failure */
	int asked_cert;		/* the server asked us for a certificate */
	int have_cert;		/* and we have one (--tls-cert) */
	/* The first verification failure, for its message. */
	int verr, vdepth;
	X509 *vcert;		/* the certificate it was about; owned */
	int status;		/* after EPROTO: 69 or 77 */
	char err[256];
};

/* tls_why.c: OpenSSL's deepest queued reason, for a one-line message. */
const char *tls_ssl_reason(void);

/*
 * tls_why.c: what the error OpenSSL queued for s means, as 69 or 77 and
 * the line with its cure in err. name is the server's name we verified.
 */
int tls_explain(struct tls_session *s, const char *name, char *err,
    size_t errlen);

/* tls_wire.c: the second connection that tells a plain port (see there). */
struct tls_probe_state {
	int fd;			/* -1: not started or over */
	int sent;
	int started;
};

void tls_probe_end(struct tls_probe_state *pr);

/* How a wait in the handshake ended: go on, or why it stopped. */
enum hs_wait { HS_GO, HS_PLAIN, HS_TIMEOUT, HS_ERRNO };

/*
 * tls_wire.c: wait for fd as the handshake wants (want) by deadline,
 * probing for a plain port once the server was silent for half the time
 * since start: HS_GO ready, HS_TIMEOUT, HS_PLAIN a plain Redis there, or
 * HS_ERRNO.
 */
enum hs_wait tls_wait_fd(int fd, short want, int64_t start, int64_t deadline,
    struct tls_probe_state *pr, int heard);

/* tls_wire.c: the server's first bytes, peeked: 1 plain text, 0 TLS or
 * none yet, -1 EOF or error (errno). */
int tls_peek_plain(int fd);

#endif
