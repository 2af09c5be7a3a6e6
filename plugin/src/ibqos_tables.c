/*
 * Table-file directives (format: plugin/README.md): version, sl2class, vls_per_class, vlarb;
 * the cross-line checks run once the whole file is read. Bytes and lines: ibqos_tables_read.c;
 * group pins: ibqos_tables_groups.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "ibqos_tables_parser.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 16
#define BLANKS " \t\r"

static const char *const role_kw[IBQOS_ROLE_COUNT] = {
	[IBQOS_ROLE_CA] = "ca",
	[IBQOS_ROLE_SW0] = "sw0",
	[IBQOS_ROLE_TERMINAL] = "terminal",
	[IBQOS_ROLE_LOCAL] = "local",
	[IBQOS_ROLE_GLOBAL] = "global",
};

const char *ibqos_role_keyword(enum ibqos_vlarb_role role)
{
	return role < IBQOS_ROLE_COUNT ? role_kw[role] : "?";
}

/* "name:line: message" into buf, unescaped. */
static void format_at(char *buf, size_t len, const char *name, unsigned line, const char *fmt,
		      va_list ap)
{
	int n = snprintf(buf, len, "%s:%u: ", name, line);

	if (n >= 0 && (size_t)n < len)
		vsnprintf(buf + n, len - (size_t)n, fmt, ap);
}

int tables_fail(struct parser *ps, const char *fmt, ...)
{
	char raw[1024];
	va_list ap;

	va_start(ap, fmt);
	format_at(raw, sizeof(raw), ps->name, ps->line, fmt, ap);
	va_end(ap);
	if (ps->len)
		ibqos_escape(ps->err, ps->len, raw);
	return -EINVAL;
}

static int push_warning(struct parser *ps, const char *raw)
{
	struct ibqos_tables *t = ps->t;
	char msg[1024], *copy;

	if (t->nwarnings == ps->capwarn) {
		size_t cap = ps->capwarn ? ps->capwarn * 2 : 4;
		char **w = realloc(t->warnings, cap * sizeof(*w));

		if (!w)
			return -ENOMEM;
		t->warnings = w;
		ps->capwarn = cap;
	}
	ibqos_escape(msg, sizeof(msg), raw);
	copy = strdup(msg);
	if (!copy)
		return -ENOMEM;
	t->warnings[t->nwarnings++] = copy;
	return 0;
}

/* A file full of mistakes must not flood osm.log: the first few, then a count. */
static int add_warning(struct parser *ps, const char *raw)
{
	if (ps->t->nwarnings >= IBQOS_TABLES_MAX_WARNINGS) {
		ps->more_warnings++;
		return 0;
	}
	return push_warning(ps, raw);
}

int tables_warn(struct parser *ps, unsigned line, const char *fmt, ...)
{
	char raw[1024];
	va_list ap;

	va_start(ap, fmt);
	format_at(raw, sizeof(raw), ps->name, line, fmt, ap);
	va_end(ap);
	return add_warning(ps, raw);
}

/* Unsigned decimal, digits only, at most max: 0, -1 not a number, -2 too large. */
static int has_empty_item(const char *arg)
{
	return strstr(arg, ",,") || arg[0] == ',' || arg[strlen(arg) - 1] == ',';
}

static int parse_sl2class(struct parser *ps, char *arg)
{
	struct ibqos_tables *t = ps->t;
	unsigned n = 0, v;
	char *save = NULL, *tok;

	if (t->has_sl2class)
		return tables_fail(ps, "sl2class given twice (first on line %u)",
				   ps->sl2class_line);
	if (has_empty_item(arg))
		return tables_fail(ps, "sl2class: empty value in '%.80s'", arg);
	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == IBQOS_NUM_SL)
			return tables_fail(ps,
					   "sl2class: more than %d values (one class per SL "
					   "0..15)",
					   IBQOS_NUM_SL);
		/* the VLs a class needs depend on vls_per_class, which may come later: the
		 * range is checked in tables_finish */
		switch (ibqos_parse_uint(tok, 255, &v)) {
		case -1:
			return tables_fail(ps, "sl2class: SL %u: '%.40s' is not a number", n, tok);
		case -2:
			return tables_fail(ps, "sl2class: SL %u: class %.40s out of range", n, tok);
		}
		t->sl2class[n++] = (uint8_t)v;
	}
	if (n != IBQOS_NUM_SL)
		return tables_fail(ps,
				   "sl2class: %u values, need exactly %d (one class per SL "
				   "0..15)",
				   n, IBQOS_NUM_SL);
	t->has_sl2class = 1;
	ps->sl2class_line = ps->line;
	return 0;
}

static int parse_vls_per_class(struct parser *ps, char **tok, int ntok)
{
	unsigned n;

	if (ps->vls_line)
		return tables_fail(ps, "vls_per_class given twice (first on line %u)",
				   ps->vls_line);
	if (ntok != 2)
		return tables_fail(ps, "vls_per_class: expected one number, 2 or 3");
	if (ibqos_parse_uint(tok[1], 3, &n) || n < 2)
		return tables_fail(ps, "vls_per_class: '%.40s' is not 2 or 3", tok[1]);
	ps->t->vls_per_class = n;
	ps->vls_line = ps->line;
	return 0;
}

static int parse_list(struct parser *ps, const char *which, char *arg,
		      struct ibqos_vlarb_table *tab)
{
	char *save = NULL, *tok;
	unsigned vl, w;

	tab->n = 0;
	if (!strcmp(arg, "-"))
		return 0;
	if (has_empty_item(arg))
		return tables_fail(ps, "%s: empty entry in '%.80s'", which, arg);
	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');

		if (tab->n == IBQOS_VLARB_MAX)
			return tables_fail(ps, "%s: more than %d entries", which, IBQOS_VLARB_MAX);
		if (!colon)
			return tables_fail(ps, "%s: entry '%.40s' is not vl:weight", which, tok);
		*colon = '\0';
		switch (ibqos_parse_uint(tok, 14, &vl)) {
		case -1:
			return tables_fail(ps, "%s: entry %u: VL '%.40s' is not a number", which,
					   tab->n + 1, tok);
		case -2:
			return tables_fail(ps, "%s: entry %u: VL %.40s out of range 0..14", which,
					   tab->n + 1, tok);
		}
		switch (ibqos_parse_uint(colon + 1, 255, &w)) {
		case -1:
			return tables_fail(ps, "%s: entry %u: weight '%.40s' is not a number",
					   which, tab->n + 1, colon + 1);
		case -2:
			return tables_fail(ps, "%s: entry %u: weight %.40s out of range 0..255",
					   which, tab->n + 1, colon + 1);
		}
		tab->vl[tab->n] = (uint8_t)vl;
		tab->weight[tab->n] = (uint8_t)w;
		tab->n++;
	}
	return 0;
}

/* tok[0] == "high" ... : "high LIST low LIST limit N", exactly */
static int parse_spec(struct parser *ps, char **tok, int ntok, struct ibqos_vlarb_spec *spec)
{
	unsigned limit;

	if (ntok < 6 || strcmp(tok[0], "high") || strcmp(tok[2], "low") || strcmp(tok[4], "limit"))
		return tables_fail(ps, "vlarb: expected 'high LIST low LIST limit N'");
	if (ntok > 6)
		return tables_fail(ps, "vlarb: unexpected '%.40s' after the limit", tok[6]);
	if (parse_list(ps, "high", tok[1], &spec->high) ||
	    parse_list(ps, "low", tok[3], &spec->low))
		return -EINVAL;
	switch (ibqos_parse_uint(tok[5], 255, &limit)) {
	case -1:
		return tables_fail(ps, "limit: '%.40s' is not a number", tok[5]);
	case -2:
		return tables_fail(ps, "limit: %.40s out of range 0..255", tok[5]);
	}
	spec->limit = (uint8_t)limit;
	spec->line = ps->line;
	spec->present = 1;
	return 0;
}

static int parse_vlarb_port(struct parser *ps, char **tok, int ntok)
{
	struct ibqos_tables *t = ps->t;
	struct ibqos_port_spec spec = {0};
	unsigned port, first;
	int dup;

	if (ntok < 4)
		return tables_fail(ps, "vlarb port: expected 'port GUID PORTNUM'");
	if (ibqos_parse_guid(tok[2], &spec.guid))
		return tables_fail(ps,
				   "vlarb port: '%.40s' is not a GUID (0x followed by up to 16 "
				   "hex digits)",
				   tok[2]);
	if (ibqos_parse_uint(tok[3], 254, &port))
		return tables_fail(ps, "vlarb port: port number '%.40s' is not in 0..254", tok[3]);
	spec.port = (uint8_t)port;
	dup = ibqos_keyset_add(&ps->ports_seen, spec.guid, port, ps->line, &first);
	if (dup < 0)
		return dup;
	if (dup)
		return tables_fail(ps,
				   "vlarb port 0x%016" PRIx64 " %u given twice (first on line "
				   "%u)",
				   spec.guid, port, first);
	if (parse_spec(ps, tok + 4, ntok - 4, &spec.spec))
		return -EINVAL;
	if (t->nports == ps->capports) {
		size_t cap = ps->capports ? ps->capports * 2 : 16;
		struct ibqos_port_spec *p = realloc(t->ports, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		t->ports = p;
		ps->capports = cap;
	}
	t->ports[t->nports++] = spec;
	return 0;
}

static int parse_vlarb(struct parser *ps, char **tok, int ntok)
{
	struct ibqos_tables *t = ps->t;

	if (ntok < 2)
		return tables_fail(ps,
				   "vlarb: missing role (ca, sw0, terminal, local, global or "
				   "port)");
	if (!strcmp(tok[1], "port"))
		return parse_vlarb_port(ps, tok, ntok);
	for (int r = 0; r < IBQOS_ROLE_COUNT; r++) {
		if (strcmp(tok[1], role_kw[r]))
			continue;
		if (t->role[r].present)
			return tables_fail(ps, "vlarb %s given twice (first on line %u)",
					   role_kw[r], t->role[r].line);
		return parse_spec(ps, tok + 2, ntok - 2, &t->role[r]);
	}
	return tables_fail(ps,
			   "vlarb: unknown role '%.40s' (ca, sw0, terminal, local, global or "
			   "port)",
			   tok[1]);
}

static int parse_version(struct parser *ps, char **tok, int ntok)
{
	unsigned version;

	if (strcmp(tok[0], "version"))
		return tables_fail(ps, "expected 'version 1' as the first directive, got '%.40s'",
				   tok[0]);
	if (ntok != 2 || ibqos_parse_uint(tok[1], 1000, &version) || version != 1)
		return tables_fail(ps, "unsupported version '%.40s' (this plugin reads version 1)",
				   ntok > 1 ? tok[1] : "");
	ps->seen_version = 1;
	return 0;
}

/* The pattern is the rest of the line: node descriptions contain blanks. */
static char *after_keyword(char *line, const char *kw)
{
	size_t n = strlen(kw);

	line += strspn(line, BLANKS);
	if (strncmp(line, kw, n) || !line[n] || !strchr(BLANKS, line[n]))
		return NULL;
	return line + n;
}

int tables_parse_line(struct parser *ps, char *line)
{
	char *tok[MAX_TOKENS + 1], *save = NULL, *hash = strchr(line, '#'), *rest;
	int ntok = 0;

	if (hash)
		*hash = '\0';
	if (ps->seen_version && (rest = after_keyword(line, "group_pattern")))
		return tables_parse_group_pattern(ps, rest);
	for (char *s = strtok_r(line, BLANKS, &save); s; s = strtok_r(NULL, BLANKS, &save)) {
		if (ntok == MAX_TOKENS)
			return tables_fail(ps, "too many fields");
		tok[ntok++] = s;
	}
	if (ntok == 0)
		return 0;
	if (!ps->seen_version)
		return parse_version(ps, tok, ntok);
	if (!strcmp(tok[0], "version"))
		return tables_fail(ps, "version given twice");
	if (!strcmp(tok[0], "sl2class")) {
		if (ntok != 2)
			return tables_fail(ps,
					   "sl2class: expected 16 comma-separated classes "
					   "without blanks");
		return parse_sl2class(ps, tok[1]);
	}
	if (!strcmp(tok[0], "vls_per_class"))
		return parse_vls_per_class(ps, tok, ntok);
	if (!strcmp(tok[0], "vlarb"))
		return parse_vlarb(ps, tok, ntok);
	if (!strcmp(tok[0], "group"))
		return tables_parse_group(ps, tok, ntok);
	if (!strcmp(tok[0], "group_pattern"))
		return tables_fail(ps, "group_pattern: missing the pattern");
	return tables_fail(ps,
			   "unknown keyword '%.40s' (version, sl2class, vls_per_class, vlarb, "
			   "group, group_pattern)",
			   tok[0]);
}

/* Class c owns VLs n*c .. n*c+n-1, and VL15 carries no data: the same rule the plugin
 * applies, checked here where it needs no fabric. */
static int check_class_vls(struct parser *ps)
{
	const struct ibqos_tables *t = ps->t;
	unsigned n = t->vls_per_class, last = (IBQOS_DATA_VLS - n) / n;

	for (unsigned sl = 0; sl < IBQOS_NUM_SL; sl++) {
		unsigned c = t->sl2class[sl];

		if (c <= last)
			continue;
		ps->line = ps->sl2class_line;
		return tables_fail(ps,
				   "sl2class: SL %u: class %u needs VLs %u..%u, past VL%u, the "
				   "last data VL (vls_per_class %u allows classes 0..%u)",
				   sl, c, n * c, n * c + n - 1, IBQOS_DATA_VLS - 1, n, last);
	}
	return 0;
}

static int warn_zero_tables(struct parser *ps, const char *what,
			    const struct ibqos_vlarb_spec *spec)
{
	const struct ibqos_vlarb_table *tab[2] = {&spec->high, &spec->low};
	static const char *const which[2] = {"high", "low"};

	for (int k = 0; k < 2; k++) {
		unsigned sum = 0;

		for (unsigned i = 0; i < tab[k]->n; i++)
			sum += tab[k]->weight[i];
		if (tab[k]->n && !sum) {
			int r = tables_warn(ps, spec->line,
					    "vlarb %s: every %s-table weight is 0, "
					    "so that table never sends (write '-' for an empty "
					    "table)",
					    what, which[k]);
			if (r)
				return r;
		}
	}
	return 0;
}

static int cmp_port(const void *a, const void *b)
{
	const struct ibqos_port_spec *x = a, *y = b;

	if (x->guid != y->guid)
		return x->guid < y->guid ? -1 : 1;
	return (x->port > y->port) - (x->port < y->port);
}

int tables_finish(struct parser *ps)
{
	struct ibqos_tables *t = ps->t;
	char what[64];
	int r;

	if (!t->vls_per_class)
		t->vls_per_class = IBQOS_VLS_PER_CLASS_DEFAULT;
	r = check_class_vls(ps);
	for (int k = 0; !r && k < IBQOS_ROLE_COUNT; k++)
		if (t->role[k].present)
			r = warn_zero_tables(ps, role_kw[k], &t->role[k]);
	for (size_t i = 0; !r && i < t->nports; i++) {
		snprintf(what, sizeof(what), "port 0x%016" PRIx64 " %u", t->ports[i].guid,
			 t->ports[i].port);
		r = warn_zero_tables(ps, what, &t->ports[i].spec);
	}
	if (!r && ps->more_warnings) {
		char raw[128];

		snprintf(raw, sizeof(raw), "%s: %zu more warning(s) not shown", ps->name,
			 ps->more_warnings);
		r = push_warning(ps, raw);
	}
	if (r)
		return r;
	if (t->nports)
		qsort(t->ports, t->nports, sizeof(*t->ports), cmp_port);
	tables_sort_pins(t);
	return 0;
}

void ibqos_tables_free(struct ibqos_tables *t)
{
	free(t->path);
	free(t->ports);
	for (size_t i = 0; i < t->nwarnings; i++)
		free(t->warnings[i]);
	free(t->warnings);
	tables_free_groups(t);
	memset(t, 0, sizeof(*t));
}

const struct ibqos_vlarb_spec *ibqos_tables_lookup(const struct ibqos_tables *t,
						   enum ibqos_vlarb_role role, uint64_t guid,
						   uint8_t port)
{
	struct ibqos_port_spec key = {.guid = guid, .port = port};
	const struct ibqos_port_spec *hit;

	if (t->nports && role != IBQOS_ROLE_CA) {
		hit = bsearch(&key, t->ports, t->nports, sizeof(*t->ports), cmp_port);
		if (hit)
			return &hit->spec;
	}
	if (role < IBQOS_ROLE_COUNT && t->role[role].present)
		return &t->role[role];
	return NULL;
}

unsigned ibqos_tables_top_vl(const struct ibqos_tables *t)
{
	unsigned top = 0, n = t->vls_per_class ? t->vls_per_class : IBQOS_VLS_PER_CLASS_DEFAULT;

	for (unsigned sl = 0; sl < IBQOS_NUM_SL; sl++)
		if (t->sl2class[sl] > top)
			top = t->sl2class[sl];
	return n * top + n - 1;
}
