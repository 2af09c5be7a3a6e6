/*
 * VLArb writer: turns a table-file spec into the 32-entry blocks OpenSM's update_vlarb hook
 * hands over (blocks 0-1: low table, 2-3: high table).
 */
#ifndef IBQOS_VLARB_H
#define IBQOS_VLARB_H

#include "ibqos_tables.h"

#define IBQOS_VLARB_BLOCK 32

/* Entries [0, block_len) of block block_num; entries past the table are (VL 0, weight 0). */
void ibqos_vlarb_block(const struct ibqos_vlarb_spec *spec, unsigned block_num, unsigned block_len,
		       uint8_t vl[], uint8_t weight[]);

/* 0 if both tables fit the port's VLArbitrationHighCap / LowCap, else -EINVAL with
 * "file:line: ..." naming port_label in err. */
int ibqos_vlarb_check_caps(const struct ibqos_tables *t, const struct ibqos_vlarb_spec *spec,
			   const char *what, const char *port_label, unsigned high_cap,
			   unsigned low_cap, char *err, size_t len);

#endif
