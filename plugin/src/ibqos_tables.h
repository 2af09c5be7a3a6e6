/*
 * The plugin's table file (format: plugin/README.md, contract: written by `ibqos render`).
 * One parser; every error is "file:line: message" and rejects the whole file.
 */
#ifndef IBQOS_TABLES_H
#define IBQOS_TABLES_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define IBQOS_NUM_SL 16
#define IBQOS_VLARB_MAX 64 /* entries per table (IBA limit; ports report their own cap) */
#define IBQOS_DATA_VLS 15  /* VL0..VL14; VL15 is management only */
#define IBQOS_VLS_PER_CLASS_DEFAULT 2
#define IBQOS_GROUP_LABEL_MAX 32 /* a group label's size with its NUL: [A-Za-z0-9_.:-]{1,31} */
#define IBQOS_TABLES_MAX_BYTES (1u << 20) /* larger table files are refused */
#define IBQOS_TABLES_MAX_LINE 4096	  /* longer lines are refused (NUL included) */

enum ibqos_vlarb_role {
	IBQOS_ROLE_CA = 0,   /* CA port */
	IBQOS_ROLE_SW0,	     /* enhanced switch port 0 */
	IBQOS_ROLE_TERMINAL, /* switch port whose peer is a CA */
	IBQOS_ROLE_LOCAL,    /* switch port to the same dragonfly group */
	IBQOS_ROLE_GLOBAL,   /* switch port to another group */
	IBQOS_ROLE_COUNT,
};

struct ibqos_vlarb_table {
	uint8_t n;
	uint8_t vl[IBQOS_VLARB_MAX];
	uint8_t weight[IBQOS_VLARB_MAX];
};

struct ibqos_vlarb_spec {
	int present;
	unsigned line; /* where it was given, for capacity errors */
	struct ibqos_vlarb_table high, low;
	uint8_t limit; /* VLHighLimit */
};

struct ibqos_port_spec {
	uint64_t guid; /* switch node GUID */
	uint8_t port;
	struct ibqos_vlarb_spec spec;
};

/* `group GUID LABEL`: an admin pins a switch to a dragonfly group. */
struct ibqos_group_pin {
	uint64_t guid; /* switch node GUID */
	unsigned line;
	char label[IBQOS_GROUP_LABEL_MAX];
};

struct ibqos_tables {
	char *path;
	int has_sl2class;
	uint8_t sl2class[IBQOS_NUM_SL]; /* all 0 unless given */
	unsigned vls_per_class;		/* 2 or 3 after a successful load: class c owns VLs
					 * vls_per_class*c .. vls_per_class*c + vls_per_class-1 */
	struct ibqos_vlarb_spec role[IBQOS_ROLE_COUNT];
	struct ibqos_port_spec *ports; /* sorted by (guid, port) */
	size_t nports;
	struct ibqos_group_pin *pins; /* sorted by guid, each guid once */
	size_t npins;
	regex_t *pattern;   /* group_pattern compiled (POSIX ERE, subexpression 1 is
					 * the label), or NULL; a pointer so the struct may be
					 * copied by value */
	char *pattern_text; /* as written in the file */
	unsigned pattern_line;
	char **warnings; /* "file:line: message" lines that do not reject the file,
					 * for the caller to log (escaped, printable ASCII) */
	size_t nwarnings;
};

/*
 * The one validation path: the plugin and ibqos-tablecheck both call ibqos_tables_load, which
 * checks everything that can be known without a fabric (syntax, ranges, duplicates, the VLs the
 * classes need against VL0..VL14). Port capacities and VLCap are the plugin's to check.
 *
 * 0; -EINVAL with "name:line: message" in err (printable ASCII: other bytes are shown as \xNN);
 * -ENOMEM. t is empty on error. Warnings go to t->warnings.
 * load opens without blocking and refuses anything but a regular file of at most
 * IBQOS_TABLES_MAX_BYTES; parse reads a stream the caller bounds (lines are capped either way).
 */
int ibqos_tables_parse(FILE *in, const char *name, struct ibqos_tables *t, char *err, size_t len);
int ibqos_tables_load(const char *path, struct ibqos_tables *t, char *err, size_t len);
void ibqos_tables_free(struct ibqos_tables *t);

/* The spec for a port: a per-port override first, then its role; NULL if neither is given. */
const struct ibqos_vlarb_spec *ibqos_tables_lookup(const struct ibqos_tables *t,
						   enum ibqos_vlarb_role role, uint64_t guid,
						   uint8_t port);
const char *ibqos_role_keyword(enum ibqos_vlarb_role role);

/* Group label pinned for a switch: 1 and label written (NUL-terminated) if a `group` line names
 * its GUID or the pattern matches desc (desc may be NULL: then only GUID pins apply); 0 if
 * nothing pins it. A GUID pin wins over the pattern. len >= IBQOS_GROUP_LABEL_MAX always
 * suffices; a pattern capture that is not a valid label (or does not fit) pins nothing. */
int ibqos_tables_group_label(const struct ibqos_tables *t, uint64_t guid, const char *desc,
			     char *label, size_t len);
/* 1 if the file has any `group` or `group_pattern` line. */
int ibqos_tables_has_group_pins(const struct ibqos_tables *t);

/* Highest VL the file's classes use (vls_per_class * max class + vls_per_class - 1): a port
 * needs this VL + 1 data VLs when it carries a class's last VL. Checked <= 14 at load time;
 * the port VLCap check is the plugin's (only it sees the fabric). */
unsigned ibqos_tables_top_vl(const struct ibqos_tables *t);

#endif
