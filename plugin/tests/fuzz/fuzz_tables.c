/*
 * libFuzzer harness for the table-file parser: any bytes either load or are refused with one
 * printable "fuzz.tables:line: message", and a loaded file keeps the invariants the plugin
 * relies on. A broken invariant aborts, which libFuzzer reports as a crash with its input.
 * Build: make fuzz (clang, -fsanitize=fuzzer,address,undefined).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibqos_tables.h"

#define NAME "fuzz.tables"

static void require(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_tables: invariant broken: %s\n", what);
		abort();
	}
}

static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

static void check_loaded(const struct ibqos_tables *t, const uint8_t *data, size_t size)
{
	char label[IBQOS_GROUP_LABEL_MAX], desc[64];
	size_t n = size < sizeof(desc) - 1 ? size : sizeof(desc) - 1;

	require(t->path && !strcmp(t->path, NAME), "path kept");
	require(t->vls_per_class == 2 || t->vls_per_class == 3, "vls_per_class is 2 or 3");
	require(ibqos_tables_top_vl(t) <= 14, "every class fits VL0..VL14");
	for (size_t i = 1; i < t->nports; i++)
		require(t->ports[i - 1].guid < t->ports[i].guid ||
				(t->ports[i - 1].guid == t->ports[i].guid &&
				 t->ports[i - 1].port < t->ports[i].port),
			"ports sorted, no duplicate");
	for (size_t i = 1; i < t->npins; i++)
		require(t->pins[i - 1].guid < t->pins[i].guid, "pins sorted, no duplicate");
	for (size_t i = 0; i < t->npins; i++) {
		require(ibqos_tables_group_label(t, t->pins[i].guid, NULL, label, sizeof(label)) ==
				1,
			"a pinned GUID has a label");
		require(!strcmp(label, t->pins[i].label), "the pin's own label");
	}
	for (size_t i = 0; i < t->nwarnings; i++)
		require(printable(t->warnings[i]), "warnings printable");
	for (int r = 0; r < IBQOS_ROLE_COUNT; r++) {
		const struct ibqos_vlarb_spec *s =
			ibqos_tables_lookup(t, (enum ibqos_vlarb_role)r, 0, 0);

		require(!s || (s->high.n <= IBQOS_VLARB_MAX && s->low.n <= IBQOS_VLARB_MAX),
			"tables hold at most 64 entries");
	}
	/* the pattern against the input's own first bytes as a node description */
	memcpy(desc, data, n);
	desc[n] = '\0';
	if (ibqos_tables_group_label(t, UINT64_MAX - 1, desc, label, sizeof(label)) == 1)
		require(strlen(label) >= 1 && strlen(label) < IBQOS_GROUP_LABEL_MAX &&
				printable(label),
			"a pattern label is 1..31 printable bytes");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibqos_tables t;
	char err[512];
	FILE *in;
	int r;

	if (size == 0 || size > IBQOS_TABLES_MAX_BYTES)
		return 0; /* load() refuses larger files before parsing */
	in = fmemopen((void *)data, size, "r");
	if (!in)
		return 0;
	r = ibqos_tables_parse(in, NAME, &t, err, sizeof(err));
	fclose(in);
	if (r == 0) {
		check_loaded(&t, data, size);
		ibqos_tables_free(&t);
		require(t.path == NULL && t.ports == NULL && t.pattern == NULL, "free clears");
		return 0;
	}
	require(r == -22 || r == -12, "-EINVAL or -ENOMEM");
	require(t.path == NULL && t.ports == NULL && t.pins == NULL && t.pattern == NULL &&
			t.warnings == NULL,
		"nothing left on error");
	require(!strncmp(err, NAME ":", strlen(NAME) + 1), "error starts with file:");
	require(printable(err), "error printable");
	return 0;
}
