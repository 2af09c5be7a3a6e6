/*
 * SL2VL per seed 003 Fig. 8, generalised to QoS classes and to degraded fabrics: class c owns
 * the VLs stride*c .. stride*c + stride-1 (stride 2, or 3 when the plan reserved a VL per class
 * for faults), and a packet's VL inside its class is the level dla_vl.c gave the turn it makes.
 */
#ifndef IBQOS_DLA_SL2VL_H
#define IBQOS_DLA_SL2VL_H

#include <stdint.h>

#define DLA_NUM_SL 16
#define DLA_MAX_CLASS 7

/* VL for sl on a hop at VL level `level` of its class. */
static inline uint8_t dla_vl(const uint8_t sl2class[DLA_NUM_SL], unsigned stride, unsigned sl,
			     unsigned level)
{
	return (uint8_t)(stride * sl2class[sl % DLA_NUM_SL] + level);
}

/* Data VLs a port needs when its traffic uses `levels` levels of every class. */
unsigned dla_vls_needed(const uint8_t sl2class[DLA_NUM_SL], unsigned stride, unsigned levels);

/* Data VLs that PortInfo:OperVLs / VLCap encodes (1: VL0, 2: VL0-1, 3: VL0-3, 4: VL0-7,
 * 5: VL0-14); 0 for invalid codes. */
unsigned dla_vls_from_code(uint8_t code);

#endif
