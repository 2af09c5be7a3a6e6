#include "dla_sl2vl.h"

uint8_t dla_switch_vl(const uint8_t sl2class[DLA_NUM_SL], unsigned sl, enum dla_role in,
		      enum dla_role out)
{
	uint8_t base = (uint8_t)(2 * sl2class[sl % DLA_NUM_SL]);

	return in == DLA_ROLE_GLOBAL && out == DLA_ROLE_LOCAL ? base + 1 : base;
}

uint8_t dla_ca_vl(const uint8_t sl2class[DLA_NUM_SL], unsigned sl)
{
	return (uint8_t)(2 * sl2class[sl % DLA_NUM_SL]);
}

unsigned dla_vls_needed(const uint8_t sl2class[DLA_NUM_SL], int carries_shifted)
{
	unsigned top = 0;

	for (unsigned sl = 0; sl < DLA_NUM_SL; sl++)
		if (sl2class[sl] > top)
			top = sl2class[sl];
	return 2 * top + (carries_shifted ? 2 : 1);
}

unsigned dla_vls_from_code(uint8_t code)
{
	static const unsigned vls[] = { 0, 1, 2, 4, 8, 15 };

	return code < sizeof(vls) / sizeof(vls[0]) ? vls[code] : 0;
}
