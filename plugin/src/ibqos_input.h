/*
 * Reading a file the plugin does not trust, inside OpenSM's sweep: the admin's table file and
 * the group map dla stored (which an editor, a full disk or a stray link may have spoilt). The
 * path may not block (a FIFO), grow without end (/dev/zero) or put raw bytes into osm.log, so
 * both go through the one opener, line reader and number readers here.
 */
#ifndef IBQOS_INPUT_H
#define IBQOS_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A regular file of at most max_bytes, opened without blocking; NULL with why ("cannot open:
 * <errno text>", "is a directory, not a regular file", "file is N bytes, more than the M
 * allowed") and *ret -ENOENT (nothing there), -EINVAL or -ENOMEM. */
FILE *ibqos_input_open(const char *path, size_t max_bytes, char *why, size_t len, int *ret);

struct ibqos_input_lines {
	FILE *in;
	size_t max_line;  /* bytes in a line, newline and a final CR not counted */
	size_t max_bytes; /* in the whole stream: it may grow after it was opened */
	size_t total;	  /* bytes read so far */
	unsigned line;	  /* number of the line read last, from 1 */
};

/*
 * The next line into buf (max_line + 1 bytes), NUL-terminated, without its newline or a CR
 * ending it: 1; 0 at the end; -EINVAL with why ("NUL byte in column 3", "control byte 0x1b in
 * column 3 (only tab is allowed)", "line is longer than N bytes", "file is larger than N
 * bytes", "read error"). A last line without a newline is a line.
 */
int ibqos_input_line(struct ibqos_input_lines *r, char *buf, char *why, size_t len);

/* Copies src into dst (size len > 0, always terminated), printable ASCII as is and every other
 * byte as \xNN, so nothing from a file reaches a log raw. */
void ibqos_escape(char *dst, size_t len, const char *src);

/* "0x" and 1 to 16 hex digits: 0, else -1. */
int ibqos_parse_guid(const char *s, uint64_t *out);
/* Decimal digits only (no sign, no blank): 0; -1 not such a number; -2 above max. */
int ibqos_parse_uint(const char *s, unsigned max, unsigned *out);

#endif
