/* SPDX-License-Identifier: MIT */
/*
 * Redis's glob (KEYS, SCAN MATCH) over any bytes, and the SCAN MATCH
 * pattern for `rlock list PATTERN`. Pure: no I/O.
 */
#ifndef RLOCK_GLOB_H
#define RLOCK_GLOB_H

#include <stddef.h>

/* 1 if s (sn bytes) matches p (pn bytes): * ? [...] [^...] [a-z] \x. */
int glob_match(const char *p, size_t pn, const char *s, size_t sn);

/*
 * 1 if p can be spliced into SCAN MATCH as P{PATTERN}*: an unclosed class
 * or a trailing backslash would swallow the "}*" after it.
 */
int glob_valid(const char *p, size_t n);

/*
 * SCAN MATCH for prefix{pat}*: the prefix literal (its glob characters
 * escaped), pat as given. Sets *len (without the NUL); the caller frees.
 */
char *glob_scan_match(const char *prefix, const char *pat, size_t *len);

#endif
