// SPDX-License-Identifier: MIT
/*
 * TLS with OpenSSL 3, as a transport under conn.c: conn.c owns the
 * non-blocking socket and the poll() with its deadlines, this file owns
 * what OpenSSL needs and says (see tls.h). Debian's hiredis 0.14 has no
 * TLS of its own, and a relay thread over a socketpair would add a hop,
 * a thread and a second place to time out; a transport keeps one fd, one
 * poll and one deadline per wait.
 *
 * Why each failure gets the status it gets: a certificate that does not
 * verify, and a client certificate the server wants or refuses, are
 * refusals that retrying will not cure (77); a handshake cut off, late,
 * or answered in plain text is the network or a wrong port (69).
 */
#include "tls.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "exitcode.h"
#include "util.h"

/* A file's name in messages: the option, or the variable it came from. */
#define SRC(src, option)	((src) ? (src) : (option))

static SSL_CTX *tls_ctx;
static char *tls_sni;		/* --tls-sni, or NULL */
static int tls_insecure;
static int tls_have_cert;	/* a client certificate is configured */

struct tls_session {
	SSL *ssl;
	int fd;
	int failed;		/* no close_notify after a failure */
	int asked_cert;		/* the server asked us for a certificate */
	/* The first verification failure, for its message. */
	int verr, vdepth;
	X509 *vcert;		/* the certificate it was about; owned */
	int status;		/* after EPROTO: 69 or 77 */
	char err[256];
};

int
tls_said(const char *err)
{
	return strstr(err, "TLS: ") != NULL ||
	    strstr(err, TLS_PLAIN_TO_TLS) != NULL;
}

/* A TLS record starts with its content type: 20..23 (change cipher spec,
 * alert, handshake, application data), then the major version 3. */
int
tls_looks_like_tls(const unsigned char *buf, size_t len)
{
	return len >= 1 && buf[0] >= 20 && buf[0] <= 23 &&
	    (len < 2 || buf[1] == 3);
}

/* The deepest reason OpenSSL queued, for a one-line message. */
static const char *
ssl_reason(void)
{
	unsigned long e = ERR_peek_error();
	const char *r;

	if (e == 0)
		return "unknown error";
	r = ERR_reason_error_string(e);
	return r ? r : "unknown error";
}

/* An encrypted key must not make OpenSSL prompt on the terminal. */
static int
no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

/* The server asked for a client certificate and none is configured. */
static int
client_cert_cb(SSL *ssl, X509 **x509, EVP_PKEY **pkey)
{
	struct tls_session *s = SSL_get_app_data(ssl);

	(void)x509;
	(void)pkey;
	if (s)
		s->asked_cert = 1;
	return 0;
}

/* Keep the first failure and its certificate; OpenSSL decides. */
static int
verify_cb(int ok, X509_STORE_CTX *xs)
{
	SSL *ssl = X509_STORE_CTX_get_ex_data(xs,
	    SSL_get_ex_data_X509_STORE_CTX_idx());
	struct tls_session *s = ssl ? SSL_get_app_data(ssl) : NULL;
	X509 *cert;

	if (!ok && s && s->verr == 0) {
		s->verr = X509_STORE_CTX_get_error(xs);
		s->vdepth = X509_STORE_CTX_get_error_depth(xs);
		if ((cert = X509_STORE_CTX_get_current_cert(xs)) != NULL &&
		    X509_up_ref(cert))
			s->vcert = cert;
	}
	return ok;
}

/* A file we are told to read: readable, and not a directory. */
static int
check_file(const char *path, const char *what, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "cannot read %s %s: %s", what, path,
		    strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "cannot read %s %s: %s", what, path,
		    strerror(EISDIR));
		return -1;
	}
	close(fd);
	return 0;
}

/* 64 with "what: OpenSSL's reason" (or what alone); the half-built
 * SSL_CTX goes. */
static int
setup_fail(char *err, size_t errlen, const char *what, int why_too)
{
	unsigned long e = ERR_peek_error();
	const char *why = ssl_reason();

	/* OpenSSL's words for a file that is not PEM at all. */
	if (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) ==
	    PEM_R_NO_START_LINE)
		why = "no PEM data in it";
	if (ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) ==
	    X509_R_KEY_VALUES_MISMATCH)
		why = "it is not the key of that certificate";
	/* Our passphrase callback said no: the key is encrypted. */
	if (ERR_GET_REASON(e) == ERR_R_INTERRUPTED_OR_CANCELLED)
		why = "it is encrypted, and rlock asks for no passphrase "
		    "(decrypt it: openssl pkey -in KEY -out PLAIN)";
	snprintf(err, errlen, "%s%s%s", what, why_too ? ": " : "",
	    why_too ? why : "");
	ERR_clear_error();
	SSL_CTX_free(tls_ctx);
	tls_ctx = NULL;
	return RL_EXIT_USAGE;
}

/* Does dir hold OpenSSL's hash links ("1a2b3c4d.0"), as Debian's
 * update-ca-certificates makes them? Without them it is no store. */
static int
hashed_dir(const char *dir)
{
	struct dirent *e;
	size_t n;
	DIR *d;
	int yes = 0;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while (!yes && (e = readdir(d)) != NULL) {
		n = strspn(e->d_name, "0123456789abcdef");
		yes = n == 8 && e->d_name[8] == '.' &&
		    e->d_name[9] >= '0' && e->d_name[9] <= '9';
	}
	closedir(d);
	return yes;
}

/* The CA certificates to verify the server with. */
static int
load_cas(const struct tls_cfg *cfg, char *err, size_t errlen)
{
	char what[512];
	DIR *d;

	if (cfg->cacert && check_file(cfg->cacert, SRC(cfg->cacert_src,
	    "--tls-cacert"), err, errlen) < 0)
		return RL_EXIT_USAGE;
	if (cfg->cacertdir) {
		if ((d = opendir(cfg->cacertdir)) == NULL) {
			snprintf(err, errlen, "cannot read --tls-cacertdir "
			    "%s: %s", cfg->cacertdir, strerror(errno));
			return RL_EXIT_USAGE;
		}
		closedir(d);
	}
	if (cfg->cacert == NULL && cfg->cacertdir == NULL) {
		/* The store's hashed directory is read lazily, one CA per
		 * lookup; its bundle file (the same CAs on Debian) is parsed
		 * whole, some 140 certificates, on every run. */
		if (getenv(X509_get_default_cert_file_env()) == NULL &&
		    getenv(X509_get_default_cert_dir_env()) == NULL &&
		    hashed_dir(X509_get_default_cert_dir()) &&
		    SSL_CTX_load_verify_dir(tls_ctx,
		    X509_get_default_cert_dir()) == 1)
			return 0;
		ERR_clear_error();
		if (SSL_CTX_set_default_verify_paths(tls_ctx) != 1)
			return setup_fail(err, errlen, "cannot load the "
			    "system CA store", 1);
		return 0;
	}
	if (SSL_CTX_load_verify_locations(tls_ctx, cfg->cacert,
	    cfg->cacertdir) != 1) {
		snprintf(what, sizeof(what), "%s %s holds no usable CA "
		    "certificate", cfg->cacert ? SRC(cfg->cacert_src,
		    "--tls-cacert") : "--tls-cacertdir", cfg->cacert ?
		    cfg->cacert : cfg->cacertdir);
		return setup_fail(err, errlen, what, 1);
	}
	return 0;
}

/* Our own certificate and key, for a server that asks (mutual TLS). */
static int
load_client_cert(const struct tls_cfg *cfg, char *err, size_t errlen)
{
	const char *key = cfg->key ? cfg->key : cfg->cert;
	const char *csrc = SRC(cfg->cert_src, "--tls-cert");
	const char *ksrc = SRC(cfg->key_src, "--tls-key");
	char what[512];

	if (cfg->cert == NULL) {
		if (cfg->key == NULL)
			return 0;
		snprintf(err, errlen, "%s %s without a client certificate: give "
		    "it with --tls-cert (or RLOCK_TLS_CERT)", ksrc, cfg->key);
		return RL_EXIT_USAGE;
	}
	if (check_file(cfg->cert, csrc, err, errlen) < 0 ||
	    (cfg->key && check_file(cfg->key, ksrc, err, errlen) < 0))
		return RL_EXIT_USAGE;
	if (SSL_CTX_use_certificate_chain_file(tls_ctx, cfg->cert) != 1) {
		snprintf(what, sizeof(what), "%s %s holds no usable "
		    "certificate", csrc, cfg->cert);
		return setup_fail(err, errlen, what, 1);
	}
	if (SSL_CTX_use_PrivateKey_file(tls_ctx, key, SSL_FILETYPE_PEM) != 1) {
		if (cfg->key && ERR_GET_REASON(ERR_peek_error()) ==
		    X509_R_KEY_VALUES_MISMATCH)
			snprintf(what, sizeof(what), "%s %s", ksrc, key);
		else if (cfg->key)
			snprintf(what, sizeof(what), "%s %s holds no usable "
			    "private key", ksrc, key);
		else
			snprintf(what, sizeof(what), "%s %s holds no private "
			    "key; give it with --tls-key (or RLOCK_TLS_KEY)",
			    csrc, key);
		return setup_fail(err, errlen, what, cfg->key != NULL);
	}
	if (SSL_CTX_check_private_key(tls_ctx) != 1) {
		snprintf(what, sizeof(what), "%s %s is not the key of the "
		    "client certificate %s", cfg->key ? ksrc : csrc, key,
		    cfg->cert);
		return setup_fail(err, errlen, what, 1);
	}
	tls_have_cert = 1;
	return 0;
}

int
tls_setup(const struct tls_cfg *cfg, char *err, size_t errlen)
{
	int st;

	tls_teardown();
	ERR_clear_error();
	if ((tls_ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		snprintf(err, errlen, "cannot set up TLS: %s", ssl_reason());
		ERR_clear_error();
		return RL_EXIT_UNAVAILABLE;
	}
	SSL_CTX_set_min_proto_version(tls_ctx, TLS1_2_VERSION);
	/* A server that closes without close_notify has still said all it
	 * had to: Redis replies delimit themselves. */
	SSL_CTX_set_options(tls_ctx, SSL_OP_IGNORE_UNEXPECTED_EOF |
	    SSL_OP_NO_RENEGOTIATION);
	/* conn.c's buffer may grow (move) between a write that said
	 * EAGAIN and its retry. */
	SSL_CTX_set_mode(tls_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_default_passwd_cb(tls_ctx, no_passphrase);
	if ((st = load_cas(cfg, err, errlen)) != 0 ||
	    (st = load_client_cert(cfg, err, errlen)) != 0) {
		tls_teardown();
		return st;
	}
	if (!tls_have_cert)
		SSL_CTX_set_client_cert_cb(tls_ctx, client_cert_cb);
	tls_insecure = cfg->insecure;
	SSL_CTX_set_verify(tls_ctx, tls_insecure ? SSL_VERIFY_NONE :
	    SSL_VERIFY_PEER, verify_cb);
	tls_sni = cfg->sni ? xstrdup(cfg->sni) : NULL;
	if (tls_insecure)
		msg_warn("--tls-insecure: the server's certificate is not "
		    "verified, so anyone on the network path can pose as it "
		    "and read the password and every command");
	return 0;
}

void
tls_teardown(void)
{
	SSL_CTX_free(tls_ctx);
	tls_ctx = NULL;
	free(tls_sni);
	tls_sni = NULL;
	tls_insecure = tls_have_cert = 0;
}

const char *
tls_library(void)
{
	return OpenSSL_version(OPENSSL_VERSION);
}

int
tls_ready(void)
{
	return tls_ctx != NULL;
}

static int
is_ip(const char *name)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, name, buf) == 1 ||
	    inet_pton(AF_INET6, name, buf) == 1;
}

/* SNI, and the name the certificate must carry. */
static int
set_names(struct tls_session *s, const char *name)
{
	X509_VERIFY_PARAM *vp = SSL_get0_param(s->ssl);

	/* RFC 6066: no IP address in SNI. */
	if (!is_ip(name) && SSL_set_tlsext_host_name(s->ssl, name) != 1)
		return -1;
	if (tls_insecure)
		return 0;
	if (is_ip(name))
		return X509_VERIFY_PARAM_set1_ip_asc(vp, name) == 1 ? 0 : -1;
	X509_VERIFY_PARAM_set_hostflags(vp,
	    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	return X509_VERIFY_PARAM_set1_host(vp, name, 0) == 1 ? 0 : -1;
}

/* "localhost, 127.0.0.1": the names a certificate is for. */
static void
cert_names(X509 *cert, char *buf, size_t len)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(cert, NID_subject_alt_name,
	    NULL, NULL);
	char one[INET6_ADDRSTRLEN + 256];
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; gens && i < sk_GENERAL_NAME_num(gens) && off < len; i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		const unsigned char *d;
		int n;

		one[0] = '\0';
		if (g->type == GEN_DNS) {
			d = ASN1_STRING_get0_data(g->d.dNSName);
			n = ASN1_STRING_length(g->d.dNSName);
			printable((const char *)d, (size_t)n, one,
			    sizeof(one));
		} else if (g->type == GEN_IPADD) {
			d = ASN1_STRING_get0_data(g->d.iPAddress);
			n = ASN1_STRING_length(g->d.iPAddress);
			if (n == 4 || n == 16)
				inet_ntop(n == 4 ? AF_INET : AF_INET6, d, one,
				    sizeof(one));
		}
		if (one[0])
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
			    off ? ", " : "", one);
	}
	GENERAL_NAMES_free(gens);
	if (buf[0] == '\0' && X509_NAME_get_text_by_NID(
	    X509_get_subject_name(cert), NID_commonName, one,
	    sizeof(one)) > 0)
		printable(one, strlen(one), buf, len);
	if (buf[0] == '\0')
		snprintf(buf, len, "no name");
}

static void
cert_date(const ASN1_TIME *t, char *buf, size_t len)
{
	struct tm tm;

	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1 ||
	    strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm) == 0)
		snprintf(buf, len, "an unknown date");
}

static void
issuer_name(X509 *cert, char *buf, size_t len)
{
	char cn[256];

	if (cert && X509_NAME_get_text_by_NID(X509_get_issuer_name(cert),
	    NID_commonName, cn, sizeof(cn)) > 0)
		printable(cn, strlen(cn), buf, len);
	else
		snprintf(buf, len, "not named");
}

/* The server's certificate did not verify: which rule, and the cure. */
static void
verify_failed(struct tls_session *s, const char *name, char *err,
    size_t errlen)
{
	long v = s->verr ? s->verr : SSL_get_verify_result(s->ssl);
	char names[256], date[64], which[320];

	/* Depth 0 is the server's own; above, a CA of its chain. */
	if (s->vdepth > 0 && s->vcert) {
		cert_names(s->vcert, names, sizeof(names));
		snprintf(which, sizeof(which), "the CA certificate \"%s\" of "
		    "the server's chain", names);
	} else {
		snprintf(which, sizeof(which), "the server's certificate");
	}

	switch (v) {
	case X509_V_ERR_HOSTNAME_MISMATCH:
	case X509_V_ERR_IP_ADDRESS_MISMATCH:
		cert_names(s->vcert ? s->vcert :
		    SSL_get0_peer_certificate(s->ssl), names, sizeof(names));
		snprintf(err, errlen, "TLS: the server's certificate is for "
		    "%s, not %s (host name mismatch); connect by a name it "
		    "lists, or name one with --tls-sni", names, name);
		break;
	case X509_V_ERR_CERT_HAS_EXPIRED:
		cert_date(s->vcert ? X509_get0_notAfter(s->vcert) : NULL, date,
		    sizeof(date));
		snprintf(err, errlen, "TLS: %s expired on %s; renew it on the "
		    "server (or check this machine's clock)", which, date);
		break;
	case X509_V_ERR_CERT_NOT_YET_VALID:
		cert_date(s->vcert ? X509_get0_notBefore(s->vcert) : NULL, date,
		    sizeof(date));
		snprintf(err, errlen, "TLS: %s is not valid before %s; check "
		    "the clocks of this machine and the server", which, date);
		break;
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
	case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
	case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
	case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
	case X509_V_ERR_CERT_UNTRUSTED:
		issuer_name(s->vcert, names, sizeof(names));
		snprintf(err, errlen, "TLS: the server's certificate is signed "
		    "by an unknown CA (issuer \"%s\"); give that CA with "
		    "--tls-cacert FILE (or RLOCK_TLS_CACERT)", names);
		break;
	default:
		snprintf(err, errlen, "TLS: the server's certificate does not "
		    "verify (%s); check --tls-cacert",
		    X509_verify_cert_error_string(v));
		break;
	}
}

/*
 * What an error queued by OpenSSL means for us; 69 or 77 and the line.
 * Alerts name the server's verdict on our certificate: under TLS 1.2 in
 * the handshake, under TLS 1.3 at our first read after it.
 */
static int
explain_ssl(struct tls_session *s, const char *name, char *err,
    size_t errlen)
{
	unsigned long e = ERR_peek_error();
	int reason = ERR_GET_REASON(e);

	switch (reason) {
	case SSL_R_CERTIFICATE_VERIFY_FAILED:
		verify_failed(s, name, err, errlen);
		return RL_EXIT_NOPERM;
	case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
		goto want_cert;
	case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
		if (s->asked_cert)
			goto want_cert;
		break;
	case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
	case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
	case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
	case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
	case SSL_R_TLSV1_ALERT_DECRYPT_ERROR:
		if (!tls_have_cert) {
			if (s->asked_cert)
				goto want_cert;
			break;
		}
		snprintf(err, errlen, "TLS: the server refused our client "
		    "certificate (%s); give --tls-cert one that a CA the "
		    "server trusts (its tls-ca-cert-file) signed, and that is "
		    "valid now", ssl_reason());
		return RL_EXIT_NOPERM;
	case SSL_R_WRONG_VERSION_NUMBER:
	case SSL_R_PACKET_LENGTH_TOO_LONG:
		goto not_tls;
	}
	snprintf(err, errlen, "TLS: %s", ssl_reason());
	return RL_EXIT_UNAVAILABLE;
want_cert:
	snprintf(err, errlen, "TLS: the server requires a client certificate; "
	    "give one with --tls-cert FILE and --tls-key FILE (or "
	    "RLOCK_TLS_CERT, RLOCK_TLS_KEY)");
	return RL_EXIT_NOPERM;
not_tls:
	snprintf(err, errlen, "TLS: the server does not answer in TLS (%s): "
	    "rediss:// (or --tls) against a plain-text port?; use redis:// "
	    "there, or the server's TLS port", ssl_reason());
	return RL_EXIT_UNAVAILABLE;
}

/*
 * The first bytes the server sent, peeked before OpenSSL reads them: a
 * Redis on a plain-text port answers our hello (as a junk inline command)
 * with "-ERR ...", which is worth naming. 1 plain text, 0 TLS or nothing
 * yet, -1 EOF or error (errno).
 */
static int
peek_plain(int fd)
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
struct probe {
	int fd;			/* -1: not started or over */
	int sent;
	int started;
};

static void
probe_start(struct probe *pr, int fd)
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

static void
probe_end(struct probe *pr)
{
	if (pr->fd >= 0)
		close(pr->fd);
	pr->fd = -1;
}

/* The probe's socket is ready: 1 a plain Redis answered, else 0. */
static int
probe_step(struct probe *pr, short revents)
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
			probe_end(pr);
			return 1;
		}
	} else {
		return 0;
	}
	probe_end(pr);
	return 0;
}

/*
 * Wait for the fd as the handshake wants, by deadline, with the probe
 * above once the server has been silent for half the time. 1 ready, 0
 * timed out, 2 a plain Redis there, -1 error (errno).
 */
static int
wait_fd(int fd, short want, int64_t start, int64_t deadline,
    struct probe *pr, int heard)
{
	int64_t probe_at = start + (deadline - start) / 2, now, until;
	struct pollfd p[2];
	int n;

	while ((now = mono_ms()) < deadline) {
		if (!pr->started && !heard && now >= probe_at)
			probe_start(pr, fd);
		p[0] = (struct pollfd){ .fd = fd, .events = want };
		p[1] = (struct pollfd){ .fd = pr->fd, .events = pr->sent ?
		    POLLIN : POLLOUT };
		until = !pr->started && !heard ? probe_at : deadline;
		if (until - now > 60000)
			until = now + 60000;
		n = poll(p, pr->fd >= 0 ? 2 : 1, (int)(until - now));
		if (n < 0 && errno != EINTR)
			return -1;
		if (n <= 0)
			continue;
		if (pr->fd >= 0 && p[1].revents && probe_step(pr,
		    p[1].revents))
			return 2;
		if (p[0].revents)
			return 1;
	}
	return 0;
}

/* The handshake loop; 0 done, or a status with err set. */
static int
drive(struct tls_session *s, const char *name, int64_t deadline, char *err,
    size_t errlen)
{
	struct probe pr = { .fd = -1 };
	int64_t start = mono_ms();
	int rc, e, heard = 0, w, st;
	short want;

	for (;;) {
		ERR_clear_error();
		if ((rc = SSL_connect(s->ssl)) == 1) {
			probe_end(&pr);
			return 0;
		}
		switch ((e = SSL_get_error(s->ssl, rc))) {
		case SSL_ERROR_WANT_READ:
		case SSL_ERROR_WANT_WRITE:
			want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
			w = wait_fd(s->fd, want, start, deadline, &pr,
			    heard);
			if (w == 2)
				goto plain;
			if (w == 0) {
				probe_end(&pr);
				snprintf(err, errlen, "TLS: no handshake within "
				    "--connect-timeout: the server took the "
				    "connection and %s", heard ? "then stalled "
				    "in the middle of the TLS handshake" :
				    "never answered our TLS hello");
				return RL_EXIT_UNAVAILABLE;
			}
			if (w < 0)
				goto syscall;
			if (!heard && want == POLLIN) {
				if ((w = peek_plain(s->fd)) > 0)
					goto plain;
				if (w < 0)
					goto syscall;
				heard = 1;
			}
			continue;
		case SSL_ERROR_ZERO_RETURN:
			/* EOF: SSL_OP_IGNORE_UNEXPECTED_EOF says it so. */
			errno = 0;
			goto syscall;
		case SSL_ERROR_SYSCALL:
			if (ERR_peek_error() == 0)
				goto syscall;
			/* FALLTHROUGH */
		default:
			if (!heard && peek_plain(s->fd) > 0)
				goto plain;
			probe_end(&pr);
			return explain_ssl(s, name, err, errlen);
		}
	}
plain:
	probe_end(&pr);
	snprintf(err, errlen, "%s", TLS_TLS_TO_PLAIN);
	return RL_EXIT_UNAVAILABLE;
syscall:
	st = errno;
	probe_end(&pr);
	errno = st;
	if (errno == 0 || errno == EPIPE || errno == ECONNRESET)
		snprintf(err, errlen, "TLS: the server %s the connection in "
		    "the handshake%s", errno == 0 ? "closed" : "reset",
		    heard ? "" : ", before any answer: is TLS on at this "
		    "port?");
	else
		snprintf(err, errlen, "TLS handshake: %s", strerror(errno));
	return RL_EXIT_UNAVAILABLE;
}

struct tls_session *
tls_handshake(int fd, const char *host, int64_t deadline, int *status,
    char *err, size_t errlen)
{
	const char *name = tls_sni ? tls_sni : host;
	struct tls_session *s;

	*status = RL_EXIT_UNAVAILABLE;
	if (tls_ctx == NULL) {
		snprintf(err, errlen, "TLS: not set up");
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	s->fd = fd;
	ERR_clear_error();
	if ((s->ssl = SSL_new(tls_ctx)) == NULL ||
	    SSL_set_fd(s->ssl, fd) != 1 || set_names(s, name) < 0) {
		snprintf(err, errlen, "TLS: cannot start a session: %s",
		    ssl_reason());
		goto fail;
	}
	SSL_set_app_data(s->ssl, s);
	SSL_set_connect_state(s->ssl);
	if ((*status = drive(s, name, deadline, err, errlen)) != 0)
		goto fail;
	ERR_clear_error();
	return s;
fail:
	ERR_clear_error();
	s->failed = 1;
	tls_free(s);
	return NULL;
}

/* SSL_read_ex / SSL_write_ex's failure as errno (and s->err). */
static ssize_t
io_failed(struct tls_session *s, int rc, short *want)
{
	switch (SSL_get_error(s->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
		*want = POLLIN;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		*want = POLLOUT;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		if (ERR_peek_error() == 0) {
			s->failed = 1;
			if (errno == 0)
				return 0;
			return -1;
		}
		/* FALLTHROUGH */
	default:
		s->failed = 1;
		s->status = explain_ssl(s, "", s->err, sizeof(s->err));
		ERR_clear_error();
		errno = EPROTO;
		return -1;
	}
}

ssize_t
tls_read(struct tls_session *s, void *buf, size_t len, short *want)
{
	size_t n = 0;
	int rc;

	*want = 0;
	ERR_clear_error();
	errno = 0;
	if ((rc = SSL_read_ex(s->ssl, buf, len, &n)) == 1)
		return (ssize_t)n;
	return io_failed(s, rc, want);
}

ssize_t
tls_write(struct tls_session *s, const void *buf, size_t len, short *want)
{
	size_t n = 0;
	int rc;

	*want = 0;
	if (len == 0)
		return 0;
	ERR_clear_error();
	errno = 0;
	if ((rc = SSL_write_ex(s->ssl, buf, len, &n)) == 1)
		return (ssize_t)n;
	if (io_failed(s, rc, want) == 0) {
		errno = EPIPE;	/* a write has no EOF */
		s->failed = 1;
	}
	return -1;
}

int
tls_error(const struct tls_session *s, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", s->err[0] ? s->err : "TLS: unknown error");
	return s->status ? s->status : RL_EXIT_UNAVAILABLE;
}

int
tls_pending(const struct tls_session *s)
{
	return SSL_pending(s->ssl) > 0;
}

void
tls_free(struct tls_session *s)
{
	if (s == NULL)
		return;
	if (s->ssl) {
		/* One try, on the non-blocking fd: never waits. */
		if (!s->failed && SSL_is_init_finished(s->ssl)) {
			ERR_clear_error();
			(void)SSL_shutdown(s->ssl);
		}
		SSL_free(s->ssl);
	}
	X509_free(s->vcert);
	ERR_clear_error();
	free(s);
}

/* Wait for one event on fd by deadline: 1 ready, 0 not. */
static int
wait_one(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int64_t left;
	int n;

	while ((left = deadline - mono_ms()) > 0) {
		n = poll(&p, 1, (int)(left > 60000 ? 60000 : left));
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return 0;
	}
	return 0;
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
