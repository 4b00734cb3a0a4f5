/* SPDX-License-Identifier: MIT */
/*
 * The effective user's name for the holder record, without NSS's cost
 * where its answer is known another way.
 */
#ifndef RLOCK_USER_H
#define RLOCK_USER_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The effective user's name into buf (the uid's number when it has none):
 * $USER (or $LOGNAME) when $HOME belongs to that user, else uid's line in
 * /etc/passwd when nsswitch.conf asks files first, else NSS (getpwuid).
 * See user.c for why each is believed.
 */
void user_name(char *buf, size_t len);

/*
 * uid's name as NSS would find it in the passwd file when the nsswitch
 * file asks files first for passwd: 1 with the name in buf, 0 when NSS
 * must be asked (another source first, no such uid, a compat +/- line, a
 * name that does not fit buf or has a control character).
 */
int user_from_files(const char *nsswitch, const char *passwd, uid_t uid,
    char *buf, size_t len);

#endif
