#include "dla_sl2vl.h"

unsigned dla_vls_needed(const uint8_t sl2class[DLA_NUM_SL], unsigned stride, unsigned levels)
{
	unsigned top = 0;

	for (unsigned sl = 0; sl < DLA_NUM_SL; sl++)
		if (sl2class[sl] > top)
			top = sl2class[sl];
	return stride * top + levels;
}

unsigned dla_vls_from_code(uint8_t code)
{
	static const unsigned vls[] = {0, 1, 2, 4, 8, 15};

	return code < sizeof(vls) / sizeof(vls[0]) ? vls[code] : 0;
}
