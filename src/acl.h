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

/* How every acl_explain text starts. */
#define ACL_LACKS "the ACL user lacks "

/* --prefix, for the key and channel rules (~PREFIX*, &PREFIX*). */
void acl_set_prefix(const char *prefix);

/* Does this error reply say the ACL refused a command, key or channel? */
int acl_is_refusal(const char *err);

/*
 * "the ACL user lacks +blpop, for BLPOP" (or ~P*, &P* with the key or
 * channel) into buf, from a refusal, and the rule to add into rule
 * ("+blpop", "~P*", "&P* +subscribe"; "" when Redis does not say which).
 */
void acl_explain(const char *err, char *buf, size_t len, char *rule,
    size_t rlen);

/*
 * The cure for a refusal whose missing rule is `rule` (acl_explain's),
 * for user (NULL: the default user): "add it: ACL SETUSER app +blpop
 * (...)"; with no rule, a pointer to the man page's whole list. Static
 * storage.
 */
const char *acl_cure(const char *rule, const char *user);

#endif
