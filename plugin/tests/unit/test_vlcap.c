/* dla_vls_from_code against docs/vlcap-vectors.json, the pairs manager/ibqos/vls.py is tested
 * on too (manager/tests/test_vls.py): C and Python read VLCap / OperVLs / max_op_vls alike. */
#include "unit.h"
#include "dla_sl2vl.h"

void test_vlcap(void)
{
	FILE *f = fopen(IBQOS_VLCAP_VECTORS, "r");
	char line[256];
	unsigned code, vls, n = 0;

	EXPECT(f != NULL);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " {\"code\": %u, \"vls\": %u}", &code, &vls) != 2)
			continue;
		EXPECT_EQ(dla_vls_from_code((uint8_t)code), vls);
		n++;
	}
	fclose(f);
	EXPECT(n >= 6); /* every code 0-5 at least: a reformatted file must not pass empty */
}
