/*
 * Reading a table file without trusting it (ibqos_input.h: no blocking, bounded size and
 * lines, NUL and control bytes refused where they stand), each line to the directives.
 */
#define _POSIX_C_SOURCE 200809L
#include "ibqos_tables_parser.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int parse_stream(FILE *in, const char *name, struct ibqos_tables *t, char *err, size_t len,
			size_t max_total)
{
	struct parser ps = {.t = t, .name = name, .err = err, .len = len};
	struct ibqos_input_lines lines = {
		.in = in, .max_line = IBQOS_TABLES_MAX_LINE, .max_bytes = max_total};
	char *buf = malloc(IBQOS_TABLES_MAX_LINE + 1), why[160];
	int ret = 0, got;

	memset(t, 0, sizeof(*t));
	if (len)
		err[0] = '\0';
	if (!buf)
		return -ENOMEM;
	while ((got = ibqos_input_line(&lines, buf, why, sizeof(why))) > 0) {
		ps.line = lines.line;
		ret = tables_parse_line(&ps, buf);
		if (ret)
			break;
	}
	if (got < 0) {
		ps.line = lines.line;
		ret = tables_fail(&ps, "%s", why);
	}
	free(buf);
	if (!ret && !ps.seen_version) {
		ps.line = ps.line ? ps.line : 1;
		ret = tables_fail(&ps, "no 'version 1' directive (empty file?)");
	}
	if (!ret)
		ret = tables_finish(&ps);
	if (!ret) {
		t->path = strdup(name);
		if (!t->path)
			ret = -ENOMEM;
	}
	if (ret == -ENOMEM)
		tables_fail(&ps, "out of memory");
	ibqos_keyset_free(&ps.ports_seen);
	ibqos_keyset_free(&ps.pins_seen);
	if (ret)
		ibqos_tables_free(t);
	return ret;
}

int ibqos_tables_parse(FILE *in, const char *name, struct ibqos_tables *t, char *err, size_t len)
{
	return parse_stream(in, name, t, err, len, SIZE_MAX);
}

static int load_error(const char *path, char *err, size_t len, const char *why)
{
	char raw[1024];

	snprintf(raw, sizeof(raw), "%s:0: %s", path, why);
	if (len)
		ibqos_escape(err, len, raw);
	return -EINVAL;
}

int ibqos_tables_load(const char *path, struct ibqos_tables *t, char *err, size_t len)
{
	char why[160];
	FILE *in;
	int ret;

	memset(t, 0, sizeof(*t));
	in = ibqos_input_open(path, IBQOS_TABLES_MAX_BYTES, why, sizeof(why), &ret);
	if (!in)
		return load_error(path, err, len, why);
	/* the cap holds while reading too: the file may grow after fstat */
	ret = parse_stream(in, path, t, err, len, IBQOS_TABLES_MAX_BYTES);
	fclose(in);
	return ret;
}
