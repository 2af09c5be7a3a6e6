/* Directed-route discovery and table read-back as one pipeline of SMP Gets. */
#ifndef IBQOS_READBACK_DISCOVER_H
#define IBQOS_READBACK_DISCOVER_H

#include "fabric.h"
#include "mad_pipe.h"

/* Fills f from the node behind the local port. Returns 0, or -1 with msg set.
 * tables 0: nodes, ports and links only (no SwitchInfo, LFT, SL2VL or VLArb). */
int rb_discover(struct mad_pipe *mp, struct rb_fabric *f, int tables, char *msg, size_t msglen);

#endif
