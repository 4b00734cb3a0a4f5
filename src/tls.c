// SPDX-License-Identifier: MIT
/*
 * TLS with OpenSSL 3, as a transport under conn.c: conn.c owns the
 * non-blocking socket and the poll() with its deadlines, this file the
 * shared SSL_CTX, the handshake and the session's I/O (see tls.h);
 * tls_why.c words the failures, tls_wire.c tells what is at the other end
 * when the handshake does not go. Debian's hiredis 0.14 has no TLS of its
 * own, and a relay thread over a socketpair would add a hop, a thread and
 * a second place to time out; a transport keeps one fd, one poll and one
 * deadline per wait.
 */
#include "tls.h"
#include "tls_int.h"

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

#include "exitcode.h"
#include "util.h"

/* A file's name in messages: the option, or the variable it came from. */
#define SRC(src, option)	((src) ? (src) : (option))

static SSL_CTX *tls_ctx;
static char *tls_sni;		/* --tls-sni, or NULL */
static int tls_insecure;
static int tls_have_cert;	/* a client certificate is configured */


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
	int fd = open(path, O_RDONLY | O_CLOEXEC), e = errno;

	if (fd >= 0) {
		e = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) ? EISDIR : 0;
		close(fd);
	}
	if (e == 0)
		return 0;
	snprintf(err, errlen, "cannot read %s %s: %s", what, path,
	    strerror(e));
	return -1;
}

/* 64 with "what: OpenSSL's reason" (or what alone); the half-built
 * SSL_CTX goes. */
static int
setup_fail(char *err, size_t errlen, const char *what, int why_too)
{
	unsigned long e = ERR_peek_error();
	const char *why = tls_ssl_reason();

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
		snprintf(err, errlen, "%s %s without a client certificate: "
		    "give it with --tls-cert (or RLOCK_TLS_CERT)", ksrc,
		    cfg->key);
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
	if (tls_lib_load(err, errlen) != 0)
		return RL_EXIT_OSERR;
	ERR_clear_error();
	if ((tls_ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		snprintf(err, errlen, "cannot set up TLS: %s",
		    tls_ssl_reason());
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
	/* Without OpenSSL loaded there is no context, nor a function to
	 * free it with. */
	if (tls_ctx != NULL)
		SSL_CTX_free(tls_ctx);
	tls_ctx = NULL;
	free(tls_sni);
	tls_sni = NULL;
	tls_insecure = tls_have_cert = 0;
}

const char *
tls_library(void)
{
	static char err[256];

	/* Why, in --version's parentheses: missing, or without a function. */
	if (tls_lib_load(err, sizeof(err)) != 0)
		return err;
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

/*
 * Wait for the fd as SSL_connect wants (e), probing for a plain port
 * meanwhile; the first bytes the server sends are peeked before OpenSSL
 * reads them (*heard set once they look like TLS).
 */
static enum hs_wait
hs_wait(struct tls_session *s, int e, int64_t start, int64_t deadline,
    struct tls_probe_state *pr, int *heard)
{
	short want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
	enum hs_wait w = tls_wait_fd(s->fd, want, start, deadline, pr,
	    *heard);
	int plain;

	if (w != HS_GO)
		return w;
	if (!*heard && want == POLLIN) {
		if ((plain = tls_peek_plain(s->fd)) > 0)
			return HS_PLAIN;
		if (plain < 0)
			return HS_ERRNO;
		*heard = 1;
	}
	return HS_GO;
}

/* The line for a handshake the network ended (errno; 0 for EOF). */
static int
hs_cut(int e, int heard, char *err, size_t errlen)
{
	if (e == 0 || e == EPIPE || e == ECONNRESET)
		snprintf(err, errlen, "TLS: the server %s the connection in "
		    "the handshake%s", e == 0 ? "closed" : "reset",
		    heard ? "" : ", before any answer: is TLS on at this "
		    "port?");
	else
		snprintf(err, errlen, "TLS handshake: %s", strerror(e));
	return RL_EXIT_UNAVAILABLE;
}

/* The handshake loop; 0 done, or a status with err set. */
static int
drive(struct tls_session *s, const char *name, int64_t deadline, char *err,
    size_t errlen)
{
	struct tls_probe_state pr = { .fd = -1 };
	int64_t start = mono_ms();
	enum hs_wait w = HS_GO;
	int rc, e, heard = 0, st = 0;

	while (w == HS_GO) {
		ERR_clear_error();
		if ((rc = SSL_connect(s->ssl)) == 1)
			break;
		e = SSL_get_error(s->ssl, rc);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			w = hs_wait(s, e, start, deadline, &pr, &heard);
			continue;
		}
		/* EOF (SSL_OP_IGNORE_UNEXPECTED_EOF says it so), or I/O. */
		if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL &&
		    ERR_peek_error() == 0)) {
			if (e == SSL_ERROR_ZERO_RETURN)
				errno = 0;
			w = HS_ERRNO;
		} else if (!heard && tls_peek_plain(s->fd) > 0) {
			w = HS_PLAIN;
		} else {
			st = tls_explain(s, name, err, errlen);
			break;
		}
	}
	e = errno;
	tls_probe_end(&pr);
	switch (w) {
	case HS_PLAIN:
		snprintf(err, errlen, "%s", TLS_TLS_TO_PLAIN);
		return RL_EXIT_UNAVAILABLE;
	case HS_TIMEOUT:
		snprintf(err, errlen, "TLS: no handshake within "
		    "--connect-timeout: the server took the connection and %s",
		    heard ? "then stalled in the middle of the TLS handshake" :
		    "never answered our TLS hello");
		return RL_EXIT_UNAVAILABLE;
	case HS_ERRNO:
		return hs_cut(e, heard, err, errlen);
	default:
		return st;
	}
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
	s->have_cert = tls_have_cert;
	ERR_clear_error();
	if ((s->ssl = SSL_new(tls_ctx)) == NULL ||
	    SSL_set_fd(s->ssl, fd) != 1 || set_names(s, name) < 0) {
		snprintf(err, errlen, "TLS: cannot start a session: %s",
		    tls_ssl_reason());
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
	int e = SSL_get_error(s->ssl, rc);

	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		*want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
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
		s->status = tls_explain(s, "", s->err, sizeof(s->err));
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

