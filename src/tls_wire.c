// SPDX-License-Identifier: MIT
/*
 * Telling what is at the other end when the handshake does not go: a
 * plain-text port (peeked, or probed on a second connection), or, the
 * other way round, a TLS port a plain connection reached (tls_probe).
 * Nothing sent here is a command or a secret.
 */
#include "tls.h"
#include "tls_int.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sig.h"
#include "util.h"

/* A TLS record starts with its content type: 20..23 (change cipher spec,
 * alert, handshake, application data), then the major version 3. */
int
tls_looks_like_tls(const unsigned char *buf, size_t len)
{
	return len >= 1 && buf[0] >= 20 && buf[0] <= 23 &&
	    (len < 2 || buf[1] == 3);
}

/*
 * The first bytes the server sent, peeked before OpenSSL reads them: a
 * plain-text server that answers our hello at all ("-ERR", "HTTP/1.1
 * 400") is worth naming as such. 1 plain text, 0 TLS or nothing yet, -1
 * EOF or error (errno).
 */
int
tls_peek_plain(int fd)
{
	unsigned char b[2];
	ssize_t n;

	do
		n = recv(fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		errno = 0;
	if (n <= 0)
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 :
		    -1;
	return tls_looks_like_tls(b, (size_t)n) ? 0 : 1;
}

/*
 * A Redis on a plain-text port takes our hello for the start of an inline
 * command, and as the hello holds NUL bytes it never sees the command end:
 * it waits, silent, as a hung TLS server would. So when the server has
 * said nothing by half the time, a second connection to the same address
 * sends "*x" (not a command: a malformed request); a plain Redis answers
 * "-ERR Protocol error", a TLS port drops it. The probe lives only within
 * the handshake's deadline, and nothing it sends is a command or a secret.
 */
static void
probe_start(struct tls_probe_state *pr, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	pr->started = 1;
	if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0 ||
	    (pr->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) < 0)
		return;
	if (connect(pr->fd, (struct sockaddr *)&ss, len) < 0 &&
	    errno != EINPROGRESS) {
		close(pr->fd);
		pr->fd = -1;
	}
}

void
tls_probe_end(struct tls_probe_state *pr)
{
	if (pr->fd >= 0)
		close(pr->fd);
	pr->fd = -1;
}

/* The probe's socket is ready: 1 a plain Redis answered, else 0. */
static int
probe_step(struct tls_probe_state *pr, short revents)
{
	char b[8];
	ssize_t n;

	if (!pr->sent && (revents & POLLOUT)) {
		pr->sent = 1;
		if (send(pr->fd, "*x\r\n", 4, MSG_NOSIGNAL) == 4)
			return 0;
	} else if (pr->sent && (revents & (POLLIN | POLLHUP | POLLERR))) {
		n = recv(pr->fd, b, sizeof(b), MSG_DONTWAIT);
		if (n > 0 && b[0] == '-') {
			tls_probe_end(pr);
			return 1;
		}
	} else {
		return 0;
	}
	tls_probe_end(pr);
	return 0;
}

/*
 * Wait for the fd as the handshake wants, by deadline, with the probe
 * above once the server has been silent for half the time (tls_int.h).
 * HS_ERRNO's ECANCELED: a stop signal, sig.h.
 */
enum hs_wait
tls_wait_fd(int fd, short want, int64_t start, int64_t deadline,
    struct tls_probe_state *pr, int heard)
{
	int64_t probe_at = start + (deadline - start) / 2, now, until;
	struct pollfd p[3];
	int n;

	while ((now = mono_ms()) < deadline) {
		if (!pr->started && !heard && now >= probe_at)
			probe_start(pr, fd);
		p[0] = (struct pollfd){ .fd = fd, .events = want };
		p[1] = (struct pollfd){ .fd = pr->fd, .events = pr->sent ?
		    POLLIN : POLLOUT };
		until = !pr->started && !heard ? probe_at : deadline;
		n = sig_poll(p, pr->fd >= 0 ? 2 : 1, deadline_poll_ms(until));
		if (n < 0 && errno != EINTR)
			return HS_ERRNO;
		if (n <= 0)
			continue;
		if (pr->fd >= 0 && p[1].revents && probe_step(pr,
		    p[1].revents))
			return HS_PLAIN;
		if (p[0].revents)
			return HS_GO;
	}
	return HS_TIMEOUT;
}

/* Wait for one event on fd by deadline, with no probe: 1 ready, 0 not. */
static int
wait_one(int fd, short events, int64_t deadline)
{
	struct tls_probe_state none = { .fd = -1, .started = 1 };

	return tls_wait_fd(fd, events, 0, deadline, &none, 1) == HS_GO;
}

int
tls_probe(const struct sockaddr *sa, socklen_t salen, int64_t deadline)
{
	SSL_CTX *pctx = NULL;
	SSL *ssl = NULL;
	unsigned char b[2];
	int fd, yes = 0, e, rc, r;
	socklen_t elen = sizeof(e);
	ssize_t n;
	char err[256];

	/* Without OpenSSL there is no telling; the plain failure stands. */
	if (tls_lib_load(err, sizeof(err)) != 0)
		return 0;
	if ((fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) < 0)
		return 0;
	if (connect(fd, sa, salen) < 0 && (errno != EINPROGRESS ||
	    !wait_one(fd, POLLOUT, deadline) || getsockopt(fd, SOL_SOCKET,
	    SO_ERROR, &e, &elen) < 0 || e != 0))
		goto out;
	/* A context of its own: the user may not have asked for TLS. */
	if ((pctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    (ssl = SSL_new(pctx)) == NULL || SSL_set_fd(ssl, fd) != 1)
		goto out;
	SSL_set_verify(ssl, SSL_VERIFY_NONE, NULL);
	/* Sends the hello, then wants to read: all we need. An answer
	 * already there may have been read: an alert is TLS too. */
	if ((rc = SSL_connect(ssl)) == 1) {
		yes = 1;	/* a slow caller: the whole handshake is done */
		goto out;
	}
	if (SSL_get_error(ssl, rc) != SSL_ERROR_WANT_READ) {
		r = ERR_GET_REASON(ERR_peek_error());
		yes = r >= SSL_AD_REASON_OFFSET && r < SSL_AD_REASON_OFFSET +
		    256;
		goto out;
	}
	if (!wait_one(fd, POLLIN, deadline))
		goto out;
	n = recv(fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
	yes = n > 0 && tls_looks_like_tls(b, (size_t)n);
out:
	SSL_free(ssl);
	SSL_CTX_free(pctx);
	ERR_clear_error();
	close(fd);
	return yes;
}
