/*
 * ibqos-tablecheck FILE: parse a dla table file with exactly the plugin's parser, so
 * `ibqos apply` can refuse a file before OpenSM ever reads it. Port capacities are only
 * known inside OpenSM, so they are checked there, not here.
 */
#include <stdio.h>

#include "ibqos_tables.h"

int main(int argc, char **argv)
{
	struct ibqos_tables t;
	char err[512];

	if (argc != 2) {
		fprintf(stderr, "usage: %s TABLE-FILE\n", argv[0]);
		return 2;
	}
	if (ibqos_tables_load(argv[1], &t, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	ibqos_tables_free(&t);
	return 0;
}
