/* SPDX-License-Identifier: MIT */
/*
 * What the TLS options say, as the command line and the environment give
 * them: the options' side of tls.h, so that what parses options need not
 * see the transport.
 */
#ifndef RLOCK_TLS_CFG_H
#define RLOCK_TLS_CFG_H

struct tls_cfg {
	int on;			/* --tls, or a rediss* URL */
	/* NULL: the default (the system CA store, no client certificate,
	 * SNI the host connected to). key NULL with cert: the key is in
	 * the cert's file. */
	const char *cacert, *cacertdir, *cert, *key, *sni;
	int insecure;		/* --tls-insecure */
	/* Where each file came from, for messages: NULL is the option
	 * (--tls-cacert...), else the variable's name. */
	const char *cacert_src, *cert_src, *key_src;
};

#endif
