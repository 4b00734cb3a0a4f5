/* SPDX-License-Identifier: MIT */
/*
 * TLS under conn.c's own socket I/O, with OpenSSL: one SSL_CTX for the
 * process, built before any thread starts and shared by them, and one
 * session per connection, owned by the thread that owns the connection.
 * Never exits; prints only the one --tls-insecure warning. OpenSSL
 * writes without MSG_NOSIGNAL: SIGPIPE must be ignored (sig.c does).
 */
#ifndef RLOCK_TLS_H
#define RLOCK_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "tls_cfg.h"

/*
 * Once, before any connection and any thread: build the shared SSL_CTX
 * (TLS 1.2 or later; the system CA store unless cacert or cacertdir; the
 * client certificate and key if given). 0, or with a one-line reason in
 * err: 64 (a file that cannot be read or holds no usable certificate or
 * key), 69 (OpenSSL cannot make a context), 71 (OpenSSL cannot be
 * loaded). With insecure, warns once on stderr.
 */
int tls_setup(const struct tls_cfg *cfg, char *err, size_t errlen);

/* Free the shared SSL_CTX; every session must be freed first. */
void tls_teardown(void);

/* "OpenSSL 3.0.11 19 Sep 2023": the library in use, for --version. */
const char *tls_library(void);

/* Is the shared SSL_CTX built (tls_setup succeeded)? */
int tls_ready(void);

struct tls_session;

/*
 * The TLS handshake on a connected non-blocking socket fd, by deadline
 * (mono_ms()). SNI is the cfg's sni or else host (none for an IP
 * address); the server's chain and its name (host or sni: a DNS name, or
 * an IP address against the IP SANs) are verified unless insecure.
 * Returns the session, or NULL with *status 69 (network, timeout, a peer
 * that does not speak TLS) or 77 (the server's certificate does not
 * verify; the server wants or refuses our client certificate) and a
 * one-line reason, with its cure, in err.
 */
struct tls_session *tls_handshake(int fd, const char *host, int64_t deadline,
    int *status, char *err, size_t errlen);

/*
 * As read(2) and write(2) on the non-blocking fd: >0 bytes, 0 at EOF
 * (read), or -1 with errno. EAGAIN: poll the fd for *want (POLLIN or
 * POLLOUT) and call again; tls_write then wants the same bytes again
 * (they may have moved). EPROTO: a TLS failure, explained by tls_error.
 */
ssize_t tls_read(struct tls_session *s, void *buf, size_t len, short *want);
ssize_t tls_write(struct tls_session *s, const void *buf, size_t len,
    short *want);

/*
 * After tls_read or tls_write failed with EPROTO: the exit status (69 or
 * 77) and a one-line reason in err. Under TLS 1.3 the server judges our
 * client certificate after the handshake, so its refusal shows here, at
 * the first read.
 */
int tls_error(const struct tls_session *s, char *err, size_t errlen);

/*
 * Decrypted bytes already inside OpenSSL: poll() on the fd does not see
 * them, so a wait must look here first. Never true for a record only
 * partly received (tls_read would say EAGAIN): no busy loop.
 */
int tls_pending(const struct tls_session *s);

/*
 * Free the session before closing its fd. A healthy session sends its
 * close_notify without waiting for the answer; a failed one sends nothing.
 */
void tls_free(struct tls_session *s);

/*
 * Do these first bytes a server sent to a plain-text client look like TLS
 * (a TLS record: an alert or a handshake)? For "redis:// against a TLS
 * port" messages.
 */
int tls_looks_like_tls(const unsigned char *buf, size_t len);

/*
 * Does sa speak TLS? A plain-text connection that a server reset or closed
 * at our first command may have reached a TLS port: a throwaway hello
 * (no command, no secret) tells, by deadline. 1 yes, 0 no or unknown.
 */
int tls_probe(const struct sockaddr *sa, socklen_t salen, int64_t deadline);

/* The lines for the two mismatches, the cure included. */
#define TLS_PLAIN_TO_TLS "that port speaks TLS, not plain text " \
	"(redis:// against a TLS port); use rediss:// (or --tls)"
#define TLS_TLS_TO_PLAIN "TLS: that port speaks plain text, not TLS " \
	"(rediss:// or --tls against a plain Redis port); use redis:// " \
	"there, or the server's TLS port"

#endif
