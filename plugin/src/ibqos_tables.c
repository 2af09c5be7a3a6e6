#define _POSIX_C_SOURCE 200809L
#include "ibqos_tables.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 16

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

struct parser {
	const char *name;
	unsigned line;
	char *err;
	size_t len;
	int seen_version;
	size_t capports;
};

static int fail(struct parser *ps, const char *fmt, ...)
{
	int n = snprintf(ps->err, ps->len, "%s:%u: ", ps->name, ps->line);
	va_list ap;

	if (n < 0 || (size_t)n >= ps->len)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(ps->err + n, ps->len - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Unsigned decimal, digits only, at most max. */
static int parse_uint(const char *s, unsigned max, unsigned *out)
{
	unsigned long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		v = v * 10 + (unsigned)(*s - '0');
		if (v > max)
			return -2;
	}
	*out = (unsigned)v;
	return 0;
}

static int parse_sl2class(struct parser *ps, char *arg, struct ibqos_tables *t)
{
	unsigned n = 0, v;
	char *save = NULL, *tok;

	if (t->has_sl2class)
		return fail(ps, "sl2class given twice");
	if (strstr(arg, ",,") || arg[0] == ',' || arg[strlen(arg) - 1] == ',')
		return fail(ps, "sl2class: empty value in '%s'", arg);
	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == IBQOS_NUM_SL)
			return fail(ps, "sl2class: more than %d values (one class per SL 0..15)",
				    IBQOS_NUM_SL);
		switch (parse_uint(tok, 7, &v)) {
		case -1:
			return fail(ps, "sl2class: SL %u: '%s' is not a number", n, tok);
		case -2:
			return fail(ps, "sl2class: SL %u: class %s out of range 0..7", n, tok);
		}
		t->sl2class[n++] = (uint8_t)v;
	}
	if (n != IBQOS_NUM_SL)
		return fail(ps, "sl2class: %u values, need exactly %d (one class per SL 0..15)", n,
			    IBQOS_NUM_SL);
	t->has_sl2class = 1;
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
	if (strstr(arg, ",,") || arg[0] == ',' || arg[strlen(arg) - 1] == ',')
		return fail(ps, "%s: empty entry in '%s'", which, arg);
	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');

		if (tab->n == IBQOS_VLARB_MAX)
			return fail(ps, "%s: more than %d entries", which, IBQOS_VLARB_MAX);
		if (!colon)
			return fail(ps, "%s: entry '%s' is not vl:weight", which, tok);
		*colon = '\0';
		switch (parse_uint(tok, 14, &vl)) {
		case -1:
			return fail(ps, "%s: entry %u: VL '%s' is not a number", which, tab->n + 1,
				    tok);
		case -2:
			return fail(ps, "%s: entry %u: VL %s out of range 0..14", which,
				    tab->n + 1, tok);
		}
		switch (parse_uint(colon + 1, 255, &w)) {
		case -1:
			return fail(ps, "%s: entry %u: weight '%s' is not a number", which,
				    tab->n + 1, colon + 1);
		case -2:
			return fail(ps, "%s: entry %u: weight %s out of range 0..255", which,
				    tab->n + 1, colon + 1);
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
		return fail(ps, "vlarb: expected 'high LIST low LIST limit N'");
	if (ntok > 6)
		return fail(ps, "vlarb: unexpected '%s' after the limit", tok[6]);
	if (parse_list(ps, "high", tok[1], &spec->high) || parse_list(ps, "low", tok[3], &spec->low))
		return -EINVAL;
	switch (parse_uint(tok[5], 255, &limit)) {
	case -1:
		return fail(ps, "limit: '%s' is not a number", tok[5]);
	case -2:
		return fail(ps, "limit: %s out of range 0..255", tok[5]);
	}
	spec->limit = (uint8_t)limit;
	spec->line = ps->line;
	spec->present = 1;
	return 0;
}

static int parse_guid(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t n;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return -1;
	s += 2;
	n = strlen(s);
	if (n == 0 || n > 16)
		return -1;
	for (; *s; s++) {
		if (!isxdigit((unsigned char)*s))
			return -1;
		v = v << 4 | (uint64_t)(isdigit((unsigned char)*s) ? *s - '0' :
					tolower((unsigned char)*s) - 'a' + 10);
	}
	*out = v;
	return 0;
}

static int parse_vlarb(struct parser *ps, char **tok, int ntok, struct ibqos_tables *t)
{
	if (ntok < 2)
		return fail(ps, "vlarb: missing role (ca, sw0, terminal, local, global or port)");
	if (!strcmp(tok[1], "port")) {
		struct ibqos_port_spec ps_new = { 0 };
		unsigned port;

		if (ntok < 4)
			return fail(ps, "vlarb port: expected 'port GUID PORTNUM'");
		if (parse_guid(tok[2], &ps_new.guid))
			return fail(ps, "vlarb port: '%s' is not a GUID (0x followed by up to 16 "
				    "hex digits)", tok[2]);
		if (parse_uint(tok[3], 254, &port))
			return fail(ps, "vlarb port: port number '%s' is not in 0..254", tok[3]);
		ps_new.port = (uint8_t)port;
		for (size_t i = 0; i < t->nports; i++)
			if (t->ports[i].guid == ps_new.guid && t->ports[i].port == ps_new.port)
				return fail(ps, "vlarb port 0x%016" PRIx64 " %u given twice (first on "
					    "line %u)", ps_new.guid, port, t->ports[i].spec.line);
		if (parse_spec(ps, tok + 4, ntok - 4, &ps_new.spec))
			return -EINVAL;
		if (t->nports == ps->capports) {
			size_t cap = ps->capports ? ps->capports * 2 : 16;
			struct ibqos_port_spec *p = realloc(t->ports, cap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			t->ports = p;
			ps->capports = cap;
		}
		t->ports[t->nports++] = ps_new;
		return 0;
	}
	for (int r = 0; r < IBQOS_ROLE_COUNT; r++) {
		if (strcmp(tok[1], role_kw[r]))
			continue;
		if (t->role[r].present)
			return fail(ps, "vlarb %s given twice (first on line %u)", role_kw[r],
				    t->role[r].line);
		return parse_spec(ps, tok + 2, ntok - 2, &t->role[r]);
	}
	return fail(ps, "vlarb: unknown role '%s' (ca, sw0, terminal, local, global or port)",
		    tok[1]);
}

static int parse_line(struct parser *ps, char *line, struct ibqos_tables *t)
{
	char *tok[MAX_TOKENS + 1], *save = NULL, *hash = strchr(line, '#');
	int ntok = 0;
	unsigned version;

	if (hash)
		*hash = '\0';
	for (char *s = strtok_r(line, " \t\r\n\v\f", &save); s;
	     s = strtok_r(NULL, " \t\r\n\v\f", &save)) {
		if (ntok == MAX_TOKENS)
			return fail(ps, "too many fields");
		tok[ntok++] = s;
	}
	if (ntok == 0)
		return 0;
	if (!ps->seen_version) {
		if (strcmp(tok[0], "version"))
			return fail(ps, "expected 'version 1' as the first directive, got '%s'",
				    tok[0]);
		if (ntok != 2 || parse_uint(tok[1], 1000, &version) || version != 1)
			return fail(ps, "unsupported version '%s' (this plugin reads version 1)",
				    ntok > 1 ? tok[1] : "");
		ps->seen_version = 1;
		return 0;
	}
	if (!strcmp(tok[0], "version"))
		return fail(ps, "version given twice");
	if (!strcmp(tok[0], "sl2class")) {
		if (ntok != 2)
			return fail(ps, "sl2class: expected 16 comma-separated classes without "
				    "blanks");
		return parse_sl2class(ps, tok[1], t);
	}
	if (!strcmp(tok[0], "vlarb"))
		return parse_vlarb(ps, tok, ntok, t);
	return fail(ps, "unknown keyword '%s' (version, sl2class, vlarb)", tok[0]);
}

static int cmp_port(const void *a, const void *b)
{
	const struct ibqos_port_spec *x = a, *y = b;

	if (x->guid != y->guid)
		return x->guid < y->guid ? -1 : 1;
	return (x->port > y->port) - (x->port < y->port);
}

int ibqos_tables_parse(FILE *in, const char *name, struct ibqos_tables *t, char *err, size_t len)
{
	struct parser ps = { .name = name, .err = err, .len = len };
	char *line = NULL;
	size_t cap = 0;
	int ret = 0;

	memset(t, 0, sizeof(*t));
	while (getline(&line, &cap, in) >= 0) {
		ps.line++;
		ret = parse_line(&ps, line, t);
		if (ret)
			break;
	}
	if (!ret && ferror(in))
		ret = fail(&ps, "read error");
	if (!ret && !ps.seen_version) {
		ps.line = ps.line ? ps.line : 1;
		ret = fail(&ps, "no 'version 1' directive (empty file?)");
	}
	free(line);
	if (!ret) {
		t->path = strdup(name);
		if (!t->path)
			ret = -ENOMEM;
	}
	if (ret) {
		ibqos_tables_free(t);
		return ret;
	}
	if (t->nports)
		qsort(t->ports, t->nports, sizeof(*t->ports), cmp_port);
	t->vls_per_class = IBQOS_VLS_PER_CLASS_DEFAULT;
	return 0;
}

int ibqos_tables_load(const char *path, struct ibqos_tables *t, char *err, size_t len)
{
	FILE *in = fopen(path, "r");
	int ret;

	memset(t, 0, sizeof(*t));
	if (!in) {
		snprintf(err, len, "%s:0: cannot open: %s", path, strerror(errno));
		return -EINVAL;
	}
	ret = ibqos_tables_parse(in, path, t, err, len);
	fclose(in);
	return ret;
}

void ibqos_tables_free(struct ibqos_tables *t)
{
	free(t->path);
	free(t->ports);
	memset(t, 0, sizeof(*t));
}

const struct ibqos_vlarb_spec *ibqos_tables_lookup(const struct ibqos_tables *t,
						   enum ibqos_vlarb_role role, uint64_t guid,
						   uint8_t port)
{
	struct ibqos_port_spec key = { .guid = guid, .port = port };
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

int ibqos_tables_group_label(const struct ibqos_tables *t, uint64_t guid, const char *desc,
			     char *label, size_t len)
{
	(void)t, (void)guid, (void)desc, (void)label, (void)len;
	return 0;	/* stub: parsed in the next commit */
}

int ibqos_tables_has_group_pins(const struct ibqos_tables *t)
{
	return t->npins > 0 || t->has_pattern;
}

unsigned ibqos_tables_top_vl(const struct ibqos_tables *t)
{
	unsigned top = 0, n = t->vls_per_class ? t->vls_per_class : IBQOS_VLS_PER_CLASS_DEFAULT;

	for (unsigned sl = 0; sl < IBQOS_NUM_SL; sl++)
		if (t->sl2class[sl] > top)
			top = t->sl2class[sl];
	return n * top + n - 1;
}
