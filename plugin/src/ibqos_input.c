/* Untrusted input files: ibqos_input.h. */
#define _POSIX_C_SOURCE 200809L
#include "ibqos_input.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *file_kind(mode_t m)
{
	return S_ISFIFO(m)    ? "a FIFO"
		: S_ISCHR(m)  ? "a character device"
		: S_ISBLK(m)  ? "a block device"
		: S_ISSOCK(m) ? "a socket"
		: S_ISDIR(m)  ? "a directory"
			      : "not a regular file";
}

FILE *ibqos_input_open(const char *path, size_t max_bytes, char *why, size_t len, int *ret)
{
	struct stat st;
	FILE *in;
	int fd;

	*ret = -EINVAL;
	/* O_NONBLOCK: opening a FIFO would otherwise wait for a writer, inside OpenSM's sweep */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			*ret = -ENOENT;
		snprintf(why, len, "cannot open: %s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st)) {
		snprintf(why, len, "cannot stat: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, len, "is %s, not a regular file", file_kind(st.st_mode));
		close(fd);
		return NULL;
	}
	if ((unsigned long long)st.st_size > max_bytes) {
		snprintf(why, len, "file is %lld bytes, more than the %zu allowed",
			 (long long)st.st_size, max_bytes);
		close(fd);
		return NULL;
	}
	in = fdopen(fd, "r");
	if (!in) {
		*ret = errno == ENOMEM ? -ENOMEM : -EINVAL;
		snprintf(why, len, "cannot read: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	*ret = 0;
	return in;
}

int ibqos_input_line(struct ibqos_input_lines *r, char *buf, char *why, size_t len)
{
	size_t n = 0;
	int c;

	r->line++;
	flockfile(r->in);
	while ((c = getc_unlocked(r->in)) != EOF) {
		if (++r->total > r->max_bytes) {
			snprintf(why, len, "file is larger than %zu bytes", r->max_bytes);
			goto bad;
		}
		if (c == '\n')
			break;
		/* fgets would end the string here and read the rest as the line's continuation */
		if (c == '\0') {
			snprintf(why, len, "NUL byte in column %zu", n + 1);
			goto bad;
		}
		if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) {
			snprintf(why, len,
				 "control byte 0x%02x in column %zu (only tab is allowed)",
				 (unsigned)c, n + 1);
			goto bad;
		}
		if (n == r->max_line) {
			snprintf(why, len, "line is longer than %zu bytes", r->max_line);
			goto bad;
		}
		buf[n++] = (char)c;
	}
	funlockfile(r->in);
	if (c == EOF && ferror(r->in)) {
		snprintf(why, len, "read error");
		return -EINVAL;
	}
	if (c == EOF && n == 0) {
		r->line--;
		return 0;
	}
	/* a CR may end a line (files edited elsewhere), nowhere else */
	if (n && buf[n - 1] == '\r')
		n--;
	if (memchr(buf, '\r', n)) {
		snprintf(why, len, "control byte 0x0d in column %zu (only tab is allowed)",
			 (size_t)((char *)memchr(buf, '\r', n) - buf) + 1);
		return -EINVAL;
	}
	buf[n] = '\0';
	return 1;
bad:
	funlockfile(r->in);
	return -EINVAL;
}

void ibqos_escape(char *dst, size_t len, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (; *src; src++) {
		unsigned char c = (unsigned char)*src;

		if (c >= 0x20 && c < 0x7f) {
			if (o + 1 >= len)
				break;
			dst[o++] = (char)c;
		} else {
			if (o + 4 >= len)
				break;
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[c >> 4];
			dst[o++] = hex[c & 15];
		}
	}
	dst[o] = '\0';
}

int ibqos_parse_guid(const char *s, uint64_t *out)
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
		v = v << 4 |
			(uint64_t)(isdigit((unsigned char)*s)
					   ? *s - '0'
					   : tolower((unsigned char)*s) - 'a' + 10);
	}
	*out = v;
	return 0;
}

int ibqos_parse_uint(const char *s, unsigned max, unsigned *out)
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
