#define _POSIX_C_SOURCE 200809L
#include "unit.h"
#include "ibqos_tables.h"
#include "ibqos_vlarb.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *contract =
	"# ibqos dla plugin tables (rendered by ibqos render from plan abc)\n"
	"version 1\n"
	"sl2class 0,0,1,1,2,2,3,3,0,0,0,0,0,0,0,0\n"
	"\n"
	"vlarb ca       high 0:32,1:32 low 2:8,3:8 limit 1\n"
	"vlarb sw0      high 0:64 low - limit 255\n"
	"vlarb terminal high 0:32,1:32 low 2:8,3:8 limit 1   # trailing comment\n"
	"vlarb local    high 0:32,1:32 low 2:8,3:8 limit 1\n"
	"vlarb global   high 0:40,1:40 low 2:8,3:8 limit 2\n"
	"vlarb port 0x0002c903000a1b2c 7 high 0:16 low 2:16 limit 0\n";

/* n bytes of text (which may hold NULs) */
static int parse_n(const char *text, size_t n, struct ibqos_tables *t, char *err, size_t len)
{
	FILE *in = fmemopen((void *)text, n ? n : 1, "r");
	int r;

	if (!n)
		fgetc(in); /* fmemopen refuses size 0: read the one byte so the stream is empty */
	r = ibqos_tables_parse(in, "plan.tables", t, err, len);
	fclose(in);
	return r;
}

static int parse(const char *text, struct ibqos_tables *t, char *err, size_t len)
{
	return parse_n(text, strlen(text), t, err, len);
}

static void bad_n(const char *text, size_t n, const char *want)
{
	struct ibqos_tables t;
	char err[512] = "";

	EXPECT_EQ(parse_n(text, n, &t, err, sizeof(err)), -22);
	EXPECT_STR_HAS(err, want);
	EXPECT(t.path == NULL && t.ports == NULL && t.pins == NULL && t.pattern == NULL);
}

static void bad(const char *text, const char *want)
{
	bad_n(text, strlen(text), want);
}

/* Every byte of the message is printable ASCII: nothing raw reaches osm.log. */
static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

/* Issue 13 items 7 and 9: NUL and control bytes refused with file:line, tokens escaped. */
static void test_bytes_and_lines(void)
{
	struct ibqos_tables t;
	char err[512] = "", *longline;
	static const char nul[] = "version 1\nvlarb ca high 0:1 low - limit 1\0 junk\n";

	bad_n(nul, sizeof(nul) - 1, "plan.tables:2: NUL byte in column 32");
	bad("version 1\n\nvlarb ca high 0:1\x01 low - limit 1\n",
	    "plan.tables:3: control byte 0x01 in column 18 (only tab is allowed)");
	bad("version 1\nvlarb ca high 0:1 low - limit 1\x7f\n", "plan.tables:2: control byte 0x7f");
	bad("version 1\n# \x1b[31m red\n", "plan.tables:2: control byte 0x1b in column 3");
	bad("version 1\nvlarb ca\rhigh 0:1 low - limit 1\n",
	    "plan.tables:2: control byte 0x0d in "
	    "column 9");
	/* bytes >= 0x80 are allowed (UTF-8 comments) but shown escaped */
	EXPECT_EQ(parse("version 1\n# caf\xc3\xa9\n", &t, err, sizeof(err)), 0);
	ibqos_tables_free(&t);
	EXPECT_EQ(parse("version 1\nbogus\xc3\xa9\n", &t, err, sizeof(err)), -22);
	EXPECT_STR_HAS(err, "plan.tables:2: unknown keyword 'bogus\\xc3\\xa9'");
	EXPECT(printable(err));
	/* CRLF line ends are fine, tab separates */
	EXPECT_EQ(parse("version 1\r\nvlarb\tca high 0:1 low - limit 1\r\n", &t, err, sizeof(err)),
		  0);
	EXPECT_EQ(t.role[IBQOS_ROLE_CA].limit, 1);
	ibqos_tables_free(&t);
	/* issue 13 item 5: lines are capped, so /dev/zero-like input cannot grow memory */
	longline = malloc(IBQOS_TABLES_MAX_LINE + 64);
	memset(longline, ' ', IBQOS_TABLES_MAX_LINE + 63);
	memcpy(longline, "version 1\n#", 11);
	longline[IBQOS_TABLES_MAX_LINE + 63] = '\0';
	bad(longline, "plan.tables:2: line is longer than 4096 bytes");
	longline[IBQOS_TABLES_MAX_LINE + 10] = '\n'; /* exactly the cap: fine */
	EXPECT_EQ(parse(longline, &t, err, sizeof(err)), 0);
	ibqos_tables_free(&t);
	free(longline);
}

static char tmpdir[64];

static const char *tmp_file(const char *name, const char *text, size_t n)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	fwrite(text, 1, n, f);
	fclose(f);
	return path;
}

/* Issue 13 items 4 and 5: a FIFO or a device as the path fails at once; size capped. */
static void test_files(void)
{
	struct ibqos_tables t;
	char err[512] = "", fifo[128], *big;
	const char *path;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ibqos-unit-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		EXPECT(!"mkdtemp");
		return;
	}
	snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);
	EXPECT_EQ(mkfifo(fifo, 0600), 0);
	alarm(10); /* on failure this test hangs in open(): die instead */
	EXPECT_EQ(ibqos_tables_load(fifo, &t, err, sizeof(err)), -22);
	alarm(0);
	EXPECT_STR_HAS(err, ":0: is a FIFO, not a regular file");
	EXPECT_EQ(ibqos_tables_load("/dev/zero", &t, err, sizeof(err)), -22);
	EXPECT_STR_HAS(err, "/dev/zero:0: is a character device, not a regular file");
	EXPECT_EQ(ibqos_tables_load(tmpdir, &t, err, sizeof(err)), -22);
	EXPECT_STR_HAS(err, "is a directory, not a regular file");
	big = malloc(IBQOS_TABLES_MAX_BYTES + 1);
	memset(big, '\n', IBQOS_TABLES_MAX_BYTES + 1);
	memcpy(big, "version 1\n", 10);
	path = tmp_file("big", big, IBQOS_TABLES_MAX_BYTES + 1);
	EXPECT_EQ(ibqos_tables_load(path, &t, err, sizeof(err)), -22);
	EXPECT_STR_HAS(err, "big:0: file is 1048577 bytes, more than the 1048576 allowed");
	path = tmp_file("max", big, IBQOS_TABLES_MAX_BYTES);
	EXPECT_EQ(ibqos_tables_load(path, &t, err, sizeof(err)), 0);
	EXPECT(t.path && !strcmp(t.path, path));
	ibqos_tables_free(&t);
	free(big);
	path = tmp_file("bad\x1bname", "version 2\n", 10);
	EXPECT_EQ(ibqos_tables_load(path, &t, err, sizeof(err)), -22);
	EXPECT_STR_HAS(err, "bad\\x1bname:1: unsupported version '2'");
	unlink(path);
	unlink(fifo);
	unlink(tmp_file("big", "", 0));
	unlink(tmp_file("max", "", 0));
	rmdir(tmpdir);
}

/* Issue 13 item 6: 200k `vlarb port` lines parse in linear time (main: about 30 s here, so
 * the alarm ends the test run if the duplicate check is quadratic again). */
static void test_duplicates_linear(void)
{
	enum { N = 200000 };
	size_t cap = (size_t)N * 48 + 128, o = 0, unique;
	char *text = malloc(cap), err[512] = "";
	struct ibqos_tables t;

	o += (size_t)snprintf(text, cap, "version 1\n");
	for (unsigned i = 0; i < N; i++)
		o += (size_t)snprintf(text + o, cap - o,
				      "vlarb port 0x%x %u high - low - limit 0\n", 0x1000 + i / 200,
				      i % 200);
	unique = o;
	o += (size_t)snprintf(text + o, cap - o, "vlarb port 0x%x %u high - low - limit 0\n",
			      0x1000 + 777 / 200, 777 % 200);
	alarm(10);
	EXPECT_EQ(parse_n(text, o, &t, err, sizeof(err)), -22);
	alarm(0);
	EXPECT_STR_HAS(err,
		       "plan.tables:200002: vlarb port 0x0000000000001003 177 given twice "
		       "(first on line 779)");
	/* without the duplicate: all kept, sorted */
	EXPECT_EQ(parse_n(text, unique, &t, err, sizeof(err)), 0);
	EXPECT_EQ(t.nports, N);
	EXPECT(ibqos_tables_lookup(&t, IBQOS_ROLE_LOCAL, 0x1000 + 999, 199) != NULL);
	EXPECT(ibqos_tables_lookup(&t, IBQOS_ROLE_LOCAL, 0x1000 + 999, 200) == NULL);
	ibqos_tables_free(&t);
	free(text);
}

/* vls_per_class and the class VL range the checker can know without a fabric (issue 13
 * item 8: classes past VL14 used to pass the checker and then fail in the plugin). */
static void test_vls_per_class(void)
{
	struct ibqos_tables t;
	char err[512] = "";

	EXPECT_EQ(parse("version 1\n", &t, err, sizeof(err)), 0);
	EXPECT_EQ(t.vls_per_class, 2);
	EXPECT_EQ(ibqos_tables_top_vl(&t), 1);
	ibqos_tables_free(&t);
	EXPECT_EQ(parse("version 1\nsl2class 0,1,2,3,4,5,6,0,0,0,0,0,0,0,0,0\n", &t, err,
			sizeof(err)),
		  0);
	EXPECT_EQ(ibqos_tables_top_vl(&t), 13);
	ibqos_tables_free(&t);
	bad("version 1\nsl2class 0,1,2,3,4,5,6,7,0,0,0,0,0,0,0,0\n",
	    "plan.tables:2: sl2class: SL 7: class 7 needs VLs 14..15, past VL14, the last data VL "
	    "(vls_per_class 2 allows classes 0..6)");
	EXPECT_EQ(parse("version 1\nsl2class 4,3,0,0,0,0,0,0,0,0,0,0,0,0,0,0\nvls_per_class 3\n",
			&t, err, sizeof(err)),
		  0);
	EXPECT_EQ(t.vls_per_class, 3);
	EXPECT_EQ(ibqos_tables_top_vl(&t), 14);
	ibqos_tables_free(&t);
	/* vls_per_class after sl2class still governs it; the error names the sl2class line */
	bad("version 1\nsl2class 0,5,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n# x\nvls_per_class 3\n",
	    "plan.tables:2: sl2class: SL 1: class 5 needs VLs 15..17, past VL14, the last data VL "
	    "(vls_per_class 3 allows classes 0..4)");
	bad("version 1\nsl2class 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,256\n",
	    "plan.tables:2: sl2class: SL 15: class 256 out of range");
	bad("version 1\nvls_per_class 4\n", "plan.tables:2: vls_per_class: '4' is not 2 or 3");
	bad("version 1\nvls_per_class 1\n", "vls_per_class: '1' is not 2 or 3");
	bad("version 1\nvls_per_class\n", "vls_per_class: expected one number, 2 or 3");
	bad("version 1\nvls_per_class 2\nvls_per_class 2\n",
	    "plan.tables:3: vls_per_class given twice (first on line 2)");
	bad("version 1\nsl2class 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n"
	    "sl2class 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n",
	    "plan.tables:3: sl2class given twice (first on line 2)");
}

static int label_of(const struct ibqos_tables *t, uint64_t guid, const char *desc, char *out)
{
	return ibqos_tables_group_label(t, guid, desc, out, IBQOS_GROUP_LABEL_MAX);
}

static void test_group_pins(void)
{
	struct ibqos_tables t;
	char err[512] = "", label[IBQOS_GROUP_LABEL_MAX] = "";

	EXPECT_EQ(parse("version 1\ngroup 0x0002c903000a1b2c g1\ngroup 0x1 Row-7.rack:3_a\n"
			"group 0X00000000000000ff 0\n",
			&t, err, sizeof(err)),
		  0);
	EXPECT(ibqos_tables_has_group_pins(&t));
	EXPECT_EQ(t.npins, 3);
	EXPECT_EQ(t.pins[0].guid, 1); /* sorted */
	EXPECT_EQ(t.pins[0].line, 3);
	EXPECT_EQ(label_of(&t, 0x0002c903000a1b2cULL, NULL, label), 1);
	EXPECT_STR_HAS(label, "g1");
	EXPECT_EQ(label_of(&t, 1, "anything", label), 1);
	EXPECT(!strcmp(label, "Row-7.rack:3_a"));
	EXPECT_EQ(label_of(&t, 0xff, NULL, label), 1);
	EXPECT(!strcmp(label, "0"));
	EXPECT_EQ(label_of(&t, 2, "sw-g1-s1", label), 0);	       /* no pattern */
	EXPECT_EQ(ibqos_tables_group_label(&t, 1, NULL, label, 5), 0); /* does not fit */
	ibqos_tables_free(&t);
	EXPECT_EQ(parse("version 1\n", &t, err, sizeof(err)), 0);
	EXPECT(!ibqos_tables_has_group_pins(&t));
	EXPECT_EQ(label_of(&t, 1, "x", label), 0);
	ibqos_tables_free(&t);
	bad("version 1\ngroup 0x1 a\ngroup 0x01 b\n",
	    "plan.tables:3: group: switch 0x0000000000000001 pinned twice (first on line 2)");
	bad("version 1\ngroup 12 a\n", "plan.tables:2: group: '12' is not a GUID");
	bad("version 1\ngroup 0x1\n", "plan.tables:2: group: expected 'group GUID LABEL'");
	bad("version 1\ngroup 0x1 a b\n", "expected 'group GUID LABEL'");
	bad("version 1\ngroup 0x1 a/b\n", "plan.tables:2: group: label 'a/b' is not 1 to 31 of");
	bad("version 1\ngroup 0x1 0123456789012345678901234567890123\n", "is not 1 to 31 of");
	bad("version 1\ngroup 0x1 caf\xc3\xa9\n", "label 'caf\\xc3\\xa9' is not");
}

static void test_group_pattern(void)
{
	struct ibqos_tables t;
	char err[512] = "", label[IBQOS_GROUP_LABEL_MAX] = "";

	EXPECT_EQ(parse("version 1\ngroup 0x5 pinned\n"
			"group_pattern   ^sw-g(?<group>\\d+)-s\\d+$   # the generator's names\n",
			&t, err, sizeof(err)),
		  0);
	EXPECT(t.pattern && t.pattern_line == 3);
	EXPECT(!strcmp(t.pattern_text, "^sw-g(?<group>\\d+)-s\\d+$"));
	EXPECT_EQ(label_of(&t, 9, "sw-g12-s3", label), 1);
	EXPECT(!strcmp(label, "12"));
	EXPECT_EQ(label_of(&t, 5, "sw-g12-s3", label), 1); /* GUID pin wins */
	EXPECT(!strcmp(label, "pinned"));
	EXPECT_EQ(label_of(&t, 9, "sw-gx-s3", label), 0);
	EXPECT_EQ(label_of(&t, 9, "sw-g1-s3 extra", label), 0); /* anchored */
	EXPECT_EQ(label_of(&t, 9, NULL, label), 0);
	ibqos_tables_free(&t);

	/* blanks inside the pattern, \d in a bracket, POSIX classes, an optional capture */
	EXPECT_EQ(parse("version 1\ngroup_pattern MF0;(r[\\d]+[[:alpha:]]) (x)?\n", &t, err,
			sizeof(err)),
		  0);
	EXPECT_EQ(label_of(&t, 1, "MF0;r12b (spine)", label), 1);
	EXPECT(!strcmp(label, "r12b"));
	EXPECT_EQ(label_of(&t, 1, "MF0;r1 z", label), 0);
	ibqos_tables_free(&t);
	EXPECT_EQ(parse("version 1\ngroup_pattern (y)?z\n", &t, err, sizeof(err)), 0);
	EXPECT_EQ(label_of(&t, 1, "z", label), 0); /* group 1 did not take part */
	EXPECT_EQ(label_of(&t, 1, "yz", label), 1);
	ibqos_tables_free(&t);
	/* a capture that is no valid label pins nothing */
	EXPECT_EQ(parse("version 1\ngroup_pattern ^(.*)$\n", &t, err, sizeof(err)), 0);
	EXPECT_EQ(label_of(&t, 1, "two words", label), 0);
	EXPECT_EQ(label_of(&t, 1, "", label), 0);
	EXPECT_EQ(label_of(&t, 1, "0123456789012345678901234567890123", label), 0);
	EXPECT_EQ(label_of(&t, 1, "ok", label), 1);
	ibqos_tables_free(&t);
	/* \( is a literal paren, not a group */
	bad("version 1\ngroup_pattern sw\\(x\\)\n", "has no parenthesised subexpression");
	bad("version 1\ngroup_pattern sw-g[0-9]+\n",
	    "plan.tables:2: group_pattern: 'sw-g[0-9]+' has no parenthesised subexpression");
	bad("version 1\ngroup_pattern sw-g([0-9]+\n",
	    "plan.tables:2: group_pattern: 'sw-g([0-9]+' does not compile: ");
	bad("version 1\ngroup_pattern (?:a)(b)\n",
	    "plan.tables:2: group_pattern: '(?' is only "
	    "understood as '(?<group>'");
	bad("version 1\ngroup_pattern (a)\ngroup_pattern (b)\n",
	    "plan.tables:3: group_pattern given twice (first on line 2)");
	bad("version 1\ngroup_pattern   # nothing\n",
	    "plan.tables:2: group_pattern: missing the "
	    "pattern");
	bad("version 1\ngroup_pattern\n", "plan.tables:2: group_pattern: missing the pattern");
	bad("group_pattern (a)\n", "plan.tables:1: expected 'version 1' as the first directive");
	bad("version 1\ngroup_pattern (a)\\\n", "does not compile");
	/* found by the fuzzer: glibc copies the atom of X+ and X{m,n}, so stacked or nested
	 * repetitions took gigabytes inside regcomp; refused before compiling */
	bad("version 1\ngroup_pattern (x)a++++++++++++++++++++++\n",
	    "plan.tables:2: group_pattern: '(x)a++++++++++++++++++++++' is too complex: repetition "
	    "of a repetition at '++++++++'");
	bad("version 1\ngroup_pattern ^sd]+ [ha:]?????????+++++igh\n",
	    "is too complex: repetition of a repetition at '?"
	    "?"
	    "?");
	bad("version 1\ngroup_pattern (((a{32}){32}){32})\n",
	    "is too complex: its repetitions expand to more than 4096 nodes");
	bad("version 1\ngroup_pattern (((((((((x+)+)+)+)+)+)+)+)+)\n",
	    "is too complex: groups nested deeper than 8");
	bad("version 1\ngroup_pattern (((((((x+)+)+)+)+)+)+)a{2}b{2}c{2}d{2}e{2}f{2}g{2}h{2}i{2}"
	    "j{2}k{2}l{2}m{2}n{2}o{2}p{2}q{2}r{2}s{2}t{2}u{2}v{2}w{2}x{2}y{2}z{2}\n",
	    "is too complex: more than 32 repetition operators");
	bad("version 1\ngroup_pattern ([a-z]{1,100}){100}\n", "is too complex: its repetitions");
	bad("version 1\ngroup_pattern (a*)\\1\n",
	    "plan.tables:2: group_pattern: back-references such as '\\1' are not supported");
	EXPECT_EQ(parse("version 1\ngroup_pattern ^r([0-9]{2})-(x+)+[[:alnum:]]{0,8}$\n", &t, err,
			sizeof(err)),
		  0);
	EXPECT_EQ(label_of(&t, 1, "r42-xxab", label), 1);
	EXPECT(!strcmp(label, "42"));
	ibqos_tables_free(&t);
}

/* Issue 13 item 9: all-zero weights warn (the file is still applied); warnings are bounded. */
static void test_warnings(void)
{
	struct ibqos_tables t;
	char err[512] = "", text[8192];
	size_t o;

	EXPECT_EQ(parse("version 1\nvlarb ca high 0:0,1:0 low 2:1 limit 1\n"
			"vlarb local high - low 2:0 limit 1\nvlarb global high 0:1 low - limit 0\n",
			&t, err, sizeof(err)),
		  0);
	EXPECT_EQ(t.nwarnings, 2);
	if (t.nwarnings == 2) {
		EXPECT_STR_HAS(t.warnings[0],
			       "plan.tables:2: vlarb ca: every high-table weight is "
			       "0, so that table never sends");
		EXPECT_STR_HAS(t.warnings[1], "plan.tables:3: vlarb local: every low-table weight");
	}
	ibqos_tables_free(&t);
	o = (size_t)snprintf(text, sizeof(text), "version 1\n");
	for (unsigned i = 0; i < 40; i++)
		o += (size_t)snprintf(text + o, sizeof(text) - o,
				      "vlarb port 0x%x 1 high 0:0 low - limit 0\n", i + 1);
	EXPECT_EQ(parse(text, &t, err, sizeof(err)), 0);
	EXPECT_EQ(t.nwarnings, 17);
	if (t.nwarnings == 17) {
		EXPECT_STR_HAS(t.warnings[0],
			       "plan.tables:2: vlarb port 0x0000000000000001 1: every "
			       "high-table weight is 0");
		EXPECT_STR_HAS(t.warnings[16], "plan.tables: 24 more warning(s) not shown");
	}
	ibqos_tables_free(&t);
	EXPECT_EQ(t.nwarnings, 0);
}

void test_tables(void)
{
	struct ibqos_tables t;
	const struct ibqos_vlarb_spec *s;
	char err[512] = "";
	uint8_t vl[32], w[32];

	EXPECT_EQ(parse(contract, &t, err, sizeof(err)), 0);
	EXPECT(t.has_sl2class);
	EXPECT_EQ(t.sl2class[7], 3);
	EXPECT_EQ(t.sl2class[15], 0);
	s = ibqos_tables_lookup(&t, IBQOS_ROLE_GLOBAL, 0x1234, 3);
	EXPECT(s == &t.role[IBQOS_ROLE_GLOBAL]);
	EXPECT_EQ(s->high.n, 2);
	EXPECT_EQ(s->high.weight[1], 40);
	EXPECT_EQ(s->limit, 2);
	s = ibqos_tables_lookup(&t, IBQOS_ROLE_GLOBAL, 0x0002c903000a1b2cULL, 7);
	EXPECT_EQ(s->limit, 0);
	EXPECT_EQ(s->low.vl[0], 2);
	EXPECT_EQ(t.role[IBQOS_ROLE_SW0].low.n, 0);
	ibqos_vlarb_block(&t.role[IBQOS_ROLE_CA], 2, 8, vl, w);
	EXPECT_EQ(vl[1], 1);
	EXPECT_EQ(w[1], 32);
	EXPECT_EQ(w[2], 0);
	ibqos_vlarb_block(&t.role[IBQOS_ROLE_CA], 0, 8, vl, w);
	EXPECT_EQ(vl[1], 3);
	EXPECT_EQ(w[1], 8);
	EXPECT_EQ(ibqos_vlarb_check_caps(&t, &t.role[IBQOS_ROLE_CA], "ca", "CA x", 8, 8, err,
					 sizeof(err)),
		  0);
	EXPECT_EQ(ibqos_vlarb_check_caps(&t, &t.role[IBQOS_ROLE_CA], "ca", "CA x", 1, 8, err,
					 sizeof(err)),
		  -22);
	EXPECT_STR_HAS(err,
		       "plan.tables:5: vlarb ca: high table has 2 entries but port CA x "
		       "holds 1 (VLArbitrationHighCap)");
	ibqos_tables_free(&t);

	/* roles not given keep OpenSM's configuration: no spec */
	EXPECT_EQ(parse("version 1\nvlarb global high 0:1 low - limit 3\n", &t, err, sizeof(err)),
		  0);
	EXPECT(ibqos_tables_lookup(&t, IBQOS_ROLE_LOCAL, 1, 1) == NULL);
	EXPECT(!t.has_sl2class);
	ibqos_tables_free(&t);

	bad("", "plan.tables:1: no 'version 1'");
	bad("sl2class 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n", "plan.tables:1: expected 'version 1'");
	bad("version 2\n", "plan.tables:1: unsupported version '2'");
	bad("version 1\nversion 1\n", "plan.tables:2: version given twice");
	bad("version 1\nsl2class 0,0,0\n", "plan.tables:2: sl2class: 3 values, need exactly 16");
	bad("version 1\nsl2class 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,8\n",
	    "plan.tables:2: sl2class: SL 15: class 8 needs VLs 16..17, past VL14");
	bad("version 1\n\n# c\nvlarb ca high 0:1,15:2 low - limit 1\n",
	    "plan.tables:4: high: entry 2: VL 15 out of range 0..14");
	bad("version 1\nvlarb ca high 0:256 low - limit 1\n",
	    "plan.tables:2: high: entry 1: weight 256 out of range 0..255");
	bad("version 1\nvlarb ca high 0:1 low - limit 256\n",
	    "plan.tables:2: limit: 256 out of range");
	bad("version 1\nvlarb ca low 0:1 high - limit 1\n",
	    "expected 'high LIST low LIST limit N'");
	bad("version 1\nvlarb ca high 0:1 low - limit 1 extra\n", "unexpected 'extra'");
	bad("version 1\nvlarb ca high 0:1 low - limit 1\nvlarb ca high 0:1 low - limit 1\n",
	    "plan.tables:3: vlarb ca given twice (first on line 2)");
	bad("version 1\nvlarb router high 0:1 low - limit 1\n", "unknown role 'router'");
	bad("version 1\nvlarb port 12 3 high 0:1 low - limit 1\n", "'12' is not a GUID");
	bad("version 1\nvlarb port 0x1 3 high 0:1 low - limit 1\nvlarb port 0x01 3 high - low - "
	    "limit 1\n",
	    "plan.tables:3: vlarb port 0x0000000000000001 3 given twice");
	bad("version 1\nvlarb ca high 0:1,,1:2 low - limit 1\n", "empty entry");
	bad("version 1\nvlarb ca high 0-1 low - limit 1\n", "entry '0-1' is not vl:weight");
	bad("version 1\nqos on\n", "plan.tables:2: unknown keyword 'qos'");
	{
		char big[1024] = "version 1\nvlarb ca high ";

		for (int i = 0; i < 65; i++)
			strcat(big, i ? ",0:1" : "0:1");
		strcat(big, " low - limit 1\n");
		bad(big, "high: more than 64 entries");
	}
	EXPECT_EQ(ibqos_tables_load("/nonexistent/t", &t, err, sizeof(err)), -22);
	EXPECT_STR_HAS(err, "/nonexistent/t:0: cannot open");
	test_bytes_and_lines();
	test_files();
	test_duplicates_linear();
	test_vls_per_class();
	test_group_pins();
	test_group_pattern();
	test_warnings();
}
