/* SPDX-License-Identifier: MIT */
/*
 * Inside tls.c, tls_why.c and tls_wire.c only: the session, and what
 * the three share. tls.h is the interface.
 */
#ifndef RLOCK_TLS_INT_H
#define RLOCK_TLS_INT_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

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

/*
 * tls_wire.c: wait for fd as the handshake wants (want) by deadline,
 * probing for a plain port once the server was silent for half the time
 * since start. 1 ready, 0 timed out, 2 a plain Redis there, -1 errno.
 */
int tls_wait_fd(int fd, short want, int64_t start, int64_t deadline,
    struct tls_probe_state *pr, int heard);

/* tls_wire.c: the server's first bytes, peeked: 1 plain text, 0 TLS or
 * none yet, -1 EOF or error (errno). */
int tls_peek_plain(int fd);

#endif
