/* SPDX-License-Identifier: MIT */
/*
 * Redis names of a lock, and back. Every name of KEY starts P{KEY}: the
 * Cluster hash tag {KEY} puts them all in one slot. But Redis reads the
 * tag from the first '{' to the first '}' after it, and an empty tag is no
 * tag: a KEY that starts with '}' would make "P{}...", each name hashed
 * whole, its scripts refused with CROSSSLOT. Such a KEY is marked with a
 * '\' after the '{' (P{\}x}, tag "\"); so is a KEY that starts with '\'
 * itself (P{\\y}), so that no two KEYs share a name. Every other KEY is
 * P{KEY} as it stands.
 */
#ifndef RLOCK_KEYS_H
#define RLOCK_KEYS_H

#include <stddef.h>

/* P{KEY}suffix, with the mark where KEY needs it; *len its length (the
 * name may hold any byte but NUL, as KEY). Caller frees. */
char *keys_name(const char *prefix, const char *key, size_t keylen,
    const char *suffix, size_t *len);

/*
 * If name (len bytes) is one keys_name gives for some KEY and suffix,
 * return that KEY (a pointer into name) and its length in *keylen; else
 * NULL (another client's name, or P{}x} as rlock never writes it).
 */
const char *keys_parse(const char *prefix, const char *name, size_t len,
    const char *suffix, size_t *keylen);

/* 1 if a prefix would make every name's hash tag empty ("{}" first). */
int keys_bad_prefix(const char *prefix);

#endif
