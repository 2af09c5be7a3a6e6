#include "unit.h"

int unit_failures;

int main(void)
{
	test_discover();
	test_route();
	test_tables();
	test_wirings();
	test_faults();
	test_refusals();
	test_vlcap();
	test_group_vectors();
	test_dfplus();
	test_groupmap();
	if (unit_failures) {
		fprintf(stderr, "%d failure(s)\n", unit_failures);
		return 1;
	}
	printf("all unit tests passed\n");
	return 0;
}
