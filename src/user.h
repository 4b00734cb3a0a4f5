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
 * $USER (or $LOGNAME) when $HOME belongs to that user, else NSS
 * (getpwuid). See user.c for why the first is believed.
 */
void user_name(char *buf, size_t len);

#endif
