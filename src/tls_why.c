// SPDX-License-Identifier: MIT
/*
 * The words of TLS failures: which rule a server certificate broke (with
 * the names, dates and issuer it carries), what an alert from the server
 * says of our client certificate, and the cure for each, in one line.
 * Why each failure gets its status: a certificate that does not verify, and
 * a client certificate the server wants or refuses, are refusals retrying
 * will not cure (77); the rest is the network or a wrong port (69).
 */
#include "tls_int.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "exitcode.h"
#include "util.h"

const char *
tls_ssl_reason(void)
{
	unsigned long e = ERR_peek_error();
	const char *r;

	if (e == 0)
		return "unknown error";
	r = ERR_reason_error_string(e);
	return r ? r : "unknown error";
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
int
tls_explain(struct tls_session *s, const char *name, char *err,
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
		if (!s->have_cert) {
			if (s->asked_cert)
				goto want_cert;
			break;
		}
		snprintf(err, errlen, "TLS: the server refused our client "
		    "certificate (%s); give --tls-cert one that a CA the "
		    "server trusts (its tls-ca-cert-file) signed, and that is "
		    "valid now", tls_ssl_reason());
		return RL_EXIT_NOPERM;
	case SSL_R_WRONG_VERSION_NUMBER:
	case SSL_R_PACKET_LENGTH_TOO_LONG:
		snprintf(err, errlen, "TLS: the server does not answer in TLS "
		    "(%s): rediss:// (or --tls) against a plain-text port?; "
		    "use redis:// there, or the server's TLS port",
		    tls_ssl_reason());
		return RL_EXIT_UNAVAILABLE;
	}
	snprintf(err, errlen, "TLS: %s", tls_ssl_reason());
	return RL_EXIT_UNAVAILABLE;
want_cert:
	snprintf(err, errlen, "TLS: the server requires a client certificate; "
	    "give one with --tls-cert FILE and --tls-key FILE (or "
	    "RLOCK_TLS_CERT, RLOCK_TLS_KEY)");
	return RL_EXIT_NOPERM;
}
