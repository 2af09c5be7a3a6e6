/*
 * The stored group map (dla_groupmap.c) as a spoilt file presents it: every bad line refused
 * with file:line and the real reason, and the writer leaving nothing at its temporary name.
 * The same cases on real OpenSM: plugin/tests/test_dla_group_map_file.py.
 */
#define _POSIX_C_SOURCE 200809L
#include "dla_groupmap.h"
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NSW 4

static char dir[] = "/tmp/dla_groupmap_XXXXXX";
static char map[96], tmp[128];

static void fabric4(struct dla_fabric *f)
{
	dla_fabric_init(f, NSW, 16);
	for (uint32_t s = 0; s < NSW; s++)
		dla_fabric_set_switch(f, s, 0x100 + s, NULL, (uint16_t)(s + 1), 4);
}

static void put(const char *bytes, size_t n)
{
	FILE *fp;

	unlink(map);
	fp = fopen(map, "w");
	fwrite(bytes, 1, n, fp);
	fclose(fp);
}

/* load what put() wrote: the return value, err (after the path) and the labels */
static int load(const struct dla_fabric *f, uint32_t *labels, char *err, size_t len)
{
	char full[512];
	int ret = dla_groupmap_load(map, f, labels, full, sizeof(full));

	snprintf(err, len, "%s",
		 ret && !strncmp(full, map, strlen(map)) ? full + strlen(map) : full);
	return ret;
}

#define BAD(bytes, want)                                                                           \
	do {                                                                                       \
		put(bytes, sizeof(bytes) - 1);                                                     \
		EXPECT_EQ(load(&f, labels, err, sizeof(err)), -EINVAL);                            \
		EXPECT_STR_HAS(err, want);                                                         \
	} while (0)

#define GOOD(bytes)                                                                                \
	do {                                                                                       \
		put(bytes, sizeof(bytes) - 1);                                                     \
		EXPECT_EQ(load(&f, labels, err, sizeof(err)), 0);                                  \
		EXPECT_EQ(labels[0], 0);                                                           \
		EXPECT_EQ(labels[1], 0);                                                           \
		EXPECT_EQ(labels[2], 1);                                                           \
		EXPECT_EQ(labels[3], 1);                                                           \
	} while (0)

static void test_spoilt_maps(void)
{
	struct dla_fabric f;
	uint32_t labels[NSW];
	char err[512], *huge;
	size_t n;

	fabric4(&f);
	GOOD("0x100 0\n0x101 0\n0x102 1\n0x103 1\n");
	/* no newline at the end, CRLF, tabs, comments and blank lines, leading zeros */
	GOOD("0x100 0\n0x101 0\n0x102 1\n0x103 1");
	GOOD("# map\r\n0x100 0\r\n\r\n0x101\t0\r\n  # indented\r\n0x0000000000000102  01\r\n0x103 "
	     "1\r\n");
	/* Before: fgets ended the string at the NUL, found no newline and said "line longer than
	 * 128 bytes" of a 22-byte line */
	BAD("0x100 0\n0x101 0\0garbage\n", ":2: NUL byte in column 8");
	BAD("0x100 0\n0x101 \x01 0\n", ":2: control byte 0x01 in column 7 (only tab is allowed)");
	BAD("0x100 0\r0x101 0\n", ":1: control byte 0x0d in column 8");
	BAD("0x100 0\n0x101 \x1b[31m0\n", ":2: control byte 0x1b in column 7");
	/* Before: sscanf read -1 as 4294967295 ("out of range"), 0x-5 as a GUID, 0x0x100 too */
	BAD("0x100 -1\n", ":1: group '-1' is not a whole number (0-49150)");
	BAD("0x100 +1\n", ":1: group '+1' is not a whole number");
	BAD("0x-5 0\n", ":1: '0x-5' is not a node GUID");
	BAD("0x0x100 0\n", ":1: '0x0x100' is not a node GUID");
	BAD("0x100000000000000000 0\n", ":1: '0x100000000000000000' is not a node GUID");
	/* Before: scanf's %u overflow is undefined; glibc read it as 4294967295 */
	BAD("0x100 99999999999999999999999\n",
	    ":1: group 99999999999999999999999 is out of range (0-49150)");
	BAD("0x100 49151\n", ":1: group 49151 is out of range (0-49150)");
	BAD("0x100 0 0\n", ":1: expected \"0x<node GUID> <group>\"");
	BAD("0x100\n", ":1: expected");
	/* Before: the last line for a switch won, silently */
	BAD("0x100 0\n0x101 0\n0x100 1\n",
	    ":3: switch 0x0000000000000100 is listed twice (first on line 1)");
	/* raw bytes never reach the log */
	BAD("0x100 \xff\n", ":1: group '\\xff' is not a whole number");
	/* a line of exactly 128 bytes is read, one more refused */
	huge = malloc((8u << 20) + 1);
	memset(huge, ' ', 200);
	memcpy(huge + 128 - 7, "0x100 0\n", 8);
	put(huge, 128 + 1);
	EXPECT_EQ(load(&f, labels, err, sizeof(err)), 0);
	EXPECT_EQ(labels[0], 0);
	memset(huge, ' ', 200);
	memcpy(huge + 129 - 7, "0x100 0\n", 8);
	put(huge, 129 + 1);
	EXPECT_EQ(load(&f, labels, err, sizeof(err)), -EINVAL);
	EXPECT_STR_HAS(err, ":1: line is longer than 128 bytes");
	/* a huge file is refused before a line is read */
	for (n = 0; n + 8 <= (8u << 20); n += 8)
		memcpy(huge + n, "# pad.\n\n", 8);
	put(huge, n);
	EXPECT_EQ(load(&f, labels, err, sizeof(err)), -EINVAL);
	EXPECT_STR_HAS(err, ": file is 8388608 bytes, more than the 4194304 allowed");
	free(huge);
	unlink(map);
	EXPECT_EQ(load(&f, labels, err, sizeof(err)), -ENOENT);
	EXPECT(mkdir(map, 0700) == 0);
	EXPECT_EQ(load(&f, labels, err, sizeof(err)), -EINVAL);
	EXPECT_STR_HAS(err, ": is a directory, not a regular file");
	rmdir(map);
	dla_fabric_free(&f);
}

/* the map two groups of two would store */
static void groups22(struct dla_groups *g, uint32_t *group_of, uint32_t *first, uint32_t *members)
{
	for (uint32_t s = 0; s < NSW; s++) {
		group_of[s] = s / 2;
		members[s] = s;
	}
	first[0] = 0;
	first[1] = 2;
	first[2] = 4;
	*g = (struct dla_groups){
		.ngroups = 2, .group_of = group_of, .first = first, .members = members};
}

static void expect_saved(const struct dla_fabric *f)
{
	uint32_t labels[NSW];
	char err[512];

	EXPECT_EQ(load(f, labels, err, sizeof(err)), 0);
	EXPECT_EQ(labels[1], 0);
	EXPECT_EQ(labels[2], 1);
}

static void test_save_leaves_no_temporary(void)
{
	struct dla_fabric f;
	struct dla_groups g;
	uint32_t group_of[NSW], first[3], members[NSW];
	char err[512], victim[64], buf[32] = {0};
	struct stat st;
	FILE *fp;

	fabric4(&f);
	groups22(&g, group_of, first, members);
	EXPECT_EQ(dla_groupmap_save(map, &f, &g, err, sizeof(err)), 0);
	expect_saved(&f);
	EXPECT(lstat(tmp, &st) && errno == ENOENT);
	/* Before: a link at the temporary name failed every save (O_NOFOLLOW: ELOOP) and stayed */
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	fp = fopen(victim, "w");
	fputs("precious\n", fp);
	fclose(fp);
	unlink(map);
	EXPECT(symlink(victim, tmp) == 0);
	EXPECT_EQ(dla_groupmap_save(map, &f, &g, err, sizeof(err)), 0);
	expect_saved(&f);
	EXPECT(lstat(tmp, &st) && errno == ENOENT);
	/* Before: a hard link there was truncated (O_TRUNC), the file it shares written */
	EXPECT(link(victim, tmp) == 0);
	EXPECT_EQ(dla_groupmap_save(map, &f, &g, err, sizeof(err)), 0);
	fp = fopen(victim, "r");
	EXPECT(fgets(buf, sizeof(buf), fp) && !strcmp(buf, "precious\n"));
	fclose(fp);
	EXPECT(lstat(tmp, &st) && errno == ENOENT);
	/* the rename fails (a directory at the map's name): the temporary file is removed */
	unlink(map);
	EXPECT(mkdir(map, 0700) == 0);
	EXPECT_EQ(dla_groupmap_save(map, &f, &g, err, sizeof(err)), -EISDIR);
	EXPECT_STR_HAS(err, ": Is a directory");
	EXPECT(lstat(tmp, &st) && errno == ENOENT);
	rmdir(map);
	/* nothing can be created (a directory at the temporary name): said, nothing written */
	EXPECT(mkdir(tmp, 0700) == 0);
	EXPECT(dla_groupmap_save(map, &f, &g, err, sizeof(err)) < 0);
	EXPECT_STR_HAS(err, ".tmp: ");
	EXPECT(lstat(map, &st) && errno == ENOENT);
	rmdir(tmp);
	unlink(victim);
	dla_fabric_free(&f);
}

void test_groupmap(void)
{
	if (!mkdtemp(dir)) {
		EXPECT(!"mkdtemp");
		return;
	}
	snprintf(map, sizeof(map), "%s/%s", dir, DLA_GROUPMAP_FILE);
	snprintf(tmp, sizeof(tmp), "%s.tmp", map);
	test_spoilt_maps();
	test_save_leaves_no_temporary();
	rmdir(dir);
}
