// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: server_parse_redirect on any error text a Cluster node
 * might send ("MOVED 1264 127.0.0.1:7501", "ASK ..."). Besides "no
 * crash": a reply it accepts names a port in 1..65535 and a host that
 * fits the buffer, and it accepts nothing but MOVED and ASK.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *err = malloc(size + 1), host[64];
	long slot;
	int port = 0, t;

	memcpy(err, data, size);
	err[size] = '\0';
	t = server_parse_redirect(err, &slot, host, sizeof(host), &port);
	if (t != -1) {
		if (t != SERVER_MOVED && t != SERVER_ASK)
			abort();
		if (port < 1 || port > 65535 || strlen(host) >= sizeof(host))
			abort();
		if (strncmp(err, t == SERVER_MOVED ? "MOVED " : "ASK ",
		    t == SERVER_MOVED ? 6 : 4) != 0)
			abort();
	}
	free(err);
	return 0;
}
