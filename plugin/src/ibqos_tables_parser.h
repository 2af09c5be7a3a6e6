/*
 * Internal to the table-file parser (ibqos_tables*.c): the state of one parse, shared by the
 * reader (bytes and lines), the directives and the group directives.
 */
#ifndef IBQOS_TABLES_PARSER_H
#define IBQOS_TABLES_PARSER_H

#include "ibqos_input.h"
#include "ibqos_keyset.h"
#include "ibqos_tables.h"

#define IBQOS_TABLES_MAX_WARNINGS 16 /* more are counted in one last line */

struct parser {
	struct ibqos_tables *t;
	const char *name;
	unsigned line;
	char *err;
	size_t len;
	int seen_version;
	unsigned sl2class_line, vls_line;
	size_t capports, cappins, capwarn;
	size_t more_warnings; /* not stored past IBQOS_TABLES_MAX_WARNINGS */
	struct ibqos_keyset ports_seen, pins_seen;
};

/* Both return -EINVAL (or -ENOMEM for warn), formatting "name:line: message" escaped. */
int tables_fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tables_warn(struct parser *ps, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One line (NUL-free, control bytes already refused, no newline). */
int tables_parse_line(struct parser *ps, char *line);
/* After the last line: cross-line checks, sorting, warnings. */
int tables_finish(struct parser *ps);

/* `group GUID LABEL` and `group_pattern REGEX` (rest: the line after the keyword). */
int tables_parse_group(struct parser *ps, char **tok, int ntok);
int tables_parse_group_pattern(struct parser *ps, char *rest);
void tables_free_groups(struct ibqos_tables *t);
void tables_sort_pins(struct ibqos_tables *t);

#endif
