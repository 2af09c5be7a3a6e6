/*
 * The plugin's table file (format: plugin/README.md, contract: written by `ibqos render`).
 * One parser; every error is "file:line: message" and rejects the whole file.
 */
#ifndef IBQOS_TABLES_H
#define IBQOS_TABLES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define IBQOS_NUM_SL 16
#define IBQOS_VLARB_MAX 64	/* entries per table (IBA limit; ports report their own cap) */

enum ibqos_vlarb_role {
	IBQOS_ROLE_CA = 0,	/* CA port */
	IBQOS_ROLE_SW0,		/* enhanced switch port 0 */
	IBQOS_ROLE_TERMINAL,	/* switch port whose peer is a CA */
	IBQOS_ROLE_LOCAL,	/* switch port to the same dragonfly group */
	IBQOS_ROLE_GLOBAL,	/* switch port to another group */
	IBQOS_ROLE_COUNT,
};

struct ibqos_vlarb_table {
	uint8_t n;
	uint8_t vl[IBQOS_VLARB_MAX];
	uint8_t weight[IBQOS_VLARB_MAX];
};

struct ibqos_vlarb_spec {
	int present;
	unsigned line;		/* where it was given, for capacity errors */
	struct ibqos_vlarb_table high, low;
	uint8_t limit;		/* VLHighLimit */
};

struct ibqos_port_spec {
	uint64_t guid;		/* switch node GUID */
	uint8_t port;
	struct ibqos_vlarb_spec spec;
};

struct ibqos_tables {
	char *path;
	int has_sl2class;
	uint8_t sl2class[IBQOS_NUM_SL];	/* all 0 unless given */
	struct ibqos_vlarb_spec role[IBQOS_ROLE_COUNT];
	struct ibqos_port_spec *ports;	/* sorted by (guid, port) */
	size_t nports;
};

/* 0; -EINVAL with "name:line: message" in err; -ENOMEM. t is empty on error. */
int ibqos_tables_parse(FILE *in, const char *name, struct ibqos_tables *t, char *err, size_t len);
int ibqos_tables_load(const char *path, struct ibqos_tables *t, char *err, size_t len);
void ibqos_tables_free(struct ibqos_tables *t);

/* The spec for a port: a per-port override first, then its role; NULL if neither is given. */
const struct ibqos_vlarb_spec *ibqos_tables_lookup(const struct ibqos_tables *t,
						   enum ibqos_vlarb_role role, uint64_t guid,
						   uint8_t port);
const char *ibqos_role_keyword(enum ibqos_vlarb_role role);

#endif
