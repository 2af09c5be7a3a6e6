/*
 * Reading a table file without trusting it: OpenSM calls us inside its sweep, so the path may
 * not block (a FIFO), grow without end (/dev/zero) or put raw bytes into osm.log. Lines are
 * read byte by byte into a fixed buffer; NUL and control bytes are refused where they stand.
 */
#define _POSIX_C_SOURCE 200809L
#include "ibqos_tables_parser.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 a line in buf (NUL-terminated), 0 end of file, or -EINVAL (err set). */
static int read_line(struct parser *ps, FILE *in, char *buf, size_t *total, size_t max_total)
{
	size_t n = 0;
	int c;

	ps->line++;
	while ((c = getc_unlocked(in)) != EOF) {
		if (++*total > max_total)
			return tables_fail(ps, "file is larger than %u bytes",
					   (unsigned)IBQOS_TABLES_MAX_BYTES);
		if (c == '\n')
			break;
		if (c == '\0')
			return tables_fail(ps, "NUL byte in column %zu", n + 1);
		if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
			return tables_fail(ps,
					   "control byte 0x%02x in column %zu (only tab is "
					   "allowed)",
					   (unsigned)c, n + 1);
		if (n == IBQOS_TABLES_MAX_LINE)
			return tables_fail(ps, "line is longer than %u bytes",
					   (unsigned)IBQOS_TABLES_MAX_LINE);
		buf[n++] = (char)c;
	}
	if (c == EOF && ferror(in))
		return tables_fail(ps, "read error");
	if (c == EOF && n == 0) {
		ps->line--;
		return 0;
	}
	/* a CR may end a line (files edited elsewhere), nowhere else */
	if (n && buf[n - 1] == '\r')
		n--;
	if (memchr(buf, '\r', n))
		return tables_fail(ps, "control byte 0x0d in column %zu (only tab is allowed)",
				   (size_t)((char *)memchr(buf, '\r', n) - buf) + 1);
	buf[n] = '\0';
	return 1;
}

static int parse_stream(FILE *in, const char *name, struct ibqos_tables *t, char *err, size_t len,
			size_t max_total)
{
	struct parser ps = {.t = t, .name = name, .err = err, .len = len};
	char *buf = malloc(IBQOS_TABLES_MAX_LINE + 1);
	size_t total = 0;
	int ret = 0, got;

	memset(t, 0, sizeof(*t));
	if (len)
		err[0] = '\0';
	if (!buf)
		return -ENOMEM;
	flockfile(in);
	while ((got = read_line(&ps, in, buf, &total, max_total)) > 0) {
		ret = tables_parse_line(&ps, buf);
		if (ret)
			break;
	}
	funlockfile(in);
	if (got < 0)
		ret = got;
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
		tables_escape(err, len, raw);
	return -EINVAL;
}

static const char *file_kind(mode_t m)
{
	return S_ISFIFO(m)    ? "a FIFO"
		: S_ISCHR(m)  ? "a character device"
		: S_ISBLK(m)  ? "a block device"
		: S_ISSOCK(m) ? "a socket"
		: S_ISDIR(m)  ? "a directory"
			      : "not a regular file";
}

int ibqos_tables_load(const char *path, struct ibqos_tables *t, char *err, size_t len)
{
	char why[160];
	struct stat st;
	FILE *in;
	int fd, ret;

	memset(t, 0, sizeof(*t));
	/* O_NONBLOCK: opening a FIFO would otherwise wait for a writer, inside OpenSM's sweep */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		snprintf(why, sizeof(why), "cannot open: %s", strerror(errno));
		return load_error(path, err, len, why);
	}
	if (fstat(fd, &st)) {
		snprintf(why, sizeof(why), "cannot stat: %s", strerror(errno));
		close(fd);
		return load_error(path, err, len, why);
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, sizeof(why), "is %s, not a regular file", file_kind(st.st_mode));
		close(fd);
		return load_error(path, err, len, why);
	}
	if ((unsigned long long)st.st_size > IBQOS_TABLES_MAX_BYTES) {
		snprintf(why, sizeof(why), "file is %lld bytes, more than the %u allowed",
			 (long long)st.st_size, (unsigned)IBQOS_TABLES_MAX_BYTES);
		close(fd);
		return load_error(path, err, len, why);
	}
	in = fdopen(fd, "r");
	if (!in) {
		snprintf(why, sizeof(why), "cannot read: %s", strerror(errno));
		close(fd);
		return load_error(path, err, len, why);
	}
	/* the cap holds while reading too: the file may grow after fstat */
	ret = parse_stream(in, path, t, err, len, IBQOS_TABLES_MAX_BYTES);
	fclose(in);
	return ret;
}
