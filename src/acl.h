/* SPDX-License-Identifier: MIT */
/*
 * ACL refusals in words: which error replies mean the user's ACL lacks a
 * permission (77), and the line that names it and its cure. The scripts
 * ask Redis first and refuse with "RLOCK_NOPERM <rule> ..." (lua/lib/
 * acl.lua); Redis's own NOPERM, and its script errors, are read too. No
 * I/O; the prefix is set once, before any connection.
 */
#ifndef RLOCK_ACL_H
#define RLOCK_ACL_H

#include <stddef.h>

/* What every acl_explain text says, so the reporter can tell it. */
#define ACL_LACKS "the ACL user lacks "

/* --prefix, for the key and channel rules (~PREFIX*, &PREFIX*). */
void acl_set_prefix(const char *prefix);

/* Does this error reply say the ACL refused a command, key or channel? */
int acl_is_refusal(const char *err);

/*
 * "the ACL user lacks +blpop, for BLPOP" (or ~P*, &P* with the key or
 * channel) into buf, from a refusal; the reply's own text when it does
 * not say which permission.
 */
void acl_explain(const char *err, char *buf, size_t len);

/*
 * The cure for an explained refusal err of user (NULL: the default
 * user): "add it: ACL SETUSER app +blpop (...)", or NULL when err is not
 * one. Points at the man page's whole list. Static storage.
 */
const char *acl_cure(const char *err, const char *user);

#endif
