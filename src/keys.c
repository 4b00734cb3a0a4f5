// SPDX-License-Identifier: MIT
/* Lock names; see keys.h. */
#include "keys.h"

#include <string.h>

#include "util.h"

static int
marked(const char *key, size_t keylen)
{
	return keylen > 0 && (key[0] == '}' || key[0] == '\\');
}

char *
keys_name(const char *prefix, const char *key, size_t keylen,
    const char *suffix, size_t *len)
{
	size_t pl = strlen(prefix), sl = strlen(suffix), m;
	char *s = xmalloc(pl + keylen + sl + 4), *p = s;

	m = marked(key, keylen);
	memcpy(p, prefix, pl);
	p += pl;
	*p++ = '{';
	if (m)
		*p++ = '\\';
	memcpy(p, key, keylen);
	p += keylen;
	*p++ = '}';
	memcpy(p, suffix, sl + 1);
	*len = pl + m + keylen + 2 + sl;
	return s;
}

const char *
keys_parse(const char *prefix, const char *name, size_t len,
    const char *suffix, size_t *keylen)
{
	size_t pl = strlen(prefix), sl = strlen(suffix), kl;
	const char *key = name + pl + 1;

	if (len < pl + sl + 3 || memcmp(name, prefix, pl) != 0 ||
	    name[pl] != '{' || name[len - sl - 1] != '}' ||
	    memcmp(name + len - sl, suffix, sl) != 0)
		return NULL;
	kl = len - pl - sl - 2;
	if (key[0] == '\\') {
		key++;
		kl--;
		if (!marked(key, kl))
			return NULL;
	} else if (marked(key, kl)) {
		return NULL;
	}
	*keylen = kl;
	return kl > 0 ? key : NULL;
}

int
keys_bad_prefix(const char *prefix)
{
	const char *b = strchr(prefix, '{');

	return b != NULL && b[1] == '}';
}
