/* SPDX-License-Identifier: MIT */
/*
 * `rlock status --prometheus`: the views of report_view.c in the
 * Prometheus text exposition format (node_exporter's textfile collector),
 * one series per KEY (and per master with --redlock). Stdout only.
 */
#ifndef RLOCK_REPORT_PROM_H
#define RLOCK_REPORT_PROM_H

#include <stddef.h>

#include "view.h"

/* The views of one server; master is its redacted URL, or NULL. */
struct prom_src {
	const char *master;
	const struct view *v;
	size_t n;
};

/* Every metric family once, its series from all n sources. */
void prom_print(const struct prom_src *src, size_t n);

#endif
