/*
 * ibqos-tablecheck FILE: check a dla table file through exactly the plugin's validation path
 * (ibqos_tables_load), so `ibqos apply` can refuse a file before OpenSM ever reads it. What
 * needs the fabric (port VLArb capacities, port VLCap) is checked by the plugin only.
 * Exit 0: accepted (warnings, if any, on stderr); 2: rejected, one "file:line: message".
 */
#include <stdio.h>

#include "ibqos_tables.h"

int main(int argc, char **argv)
{
	struct ibqos_tables t;
	char err[1024] = "";
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: %s TABLE-FILE\n", argv[0]);
		return 2;
	}
	r = ibqos_tables_load(argv[1], &t, err, sizeof(err));
	if (r) {
		fprintf(stderr, "%s\n", err[0] ? err : "ibqos-tablecheck: out of memory");
		return 2;
	}
	for (size_t i = 0; i < t.nwarnings; i++)
		fprintf(stderr, "warning: %s\n", t.warnings[i]);
	ibqos_tables_free(&t);
	return 0;
}
