/*
 * SL2VL per seed 003 Fig. 8, generalised to QoS classes: class c owns VL pair (2c, 2c+1);
 * a packet that enters a switch on a global port and leaves on a local one moves to 2c+1,
 * every other hop (and every CA) uses 2c.
 */
#ifndef IBQOS_DLA_SL2VL_H
#define IBQOS_DLA_SL2VL_H

#include <stdint.h>

#include "dla_route.h"

#define DLA_NUM_SL 16
#define DLA_MAX_CLASS 7

/* VL for sl at a switch, from in-port role to out-port role. */
uint8_t dla_switch_vl(const uint8_t sl2class[DLA_NUM_SL], unsigned sl, enum dla_role in,
		      enum dla_role out);
/* VL for sl at a CA port. */
uint8_t dla_ca_vl(const uint8_t sl2class[DLA_NUM_SL], unsigned sl);

/* Data VLs a port needs: local switch ports carry 2c+1, every other port only 2c. */
unsigned dla_vls_needed(const uint8_t sl2class[DLA_NUM_SL], int carries_shifted);

/* Data VLs that PortInfo:OperVLs / VLCap encodes (1: VL0, 2: VL0-1, 3: VL0-3, 4: VL0-7,
 * 5: VL0-14); 0 for invalid codes. */
unsigned dla_vls_from_code(uint8_t code);

#endif
