/* Directed-route discovery and table read-back as one pipeline of SMP Gets. */
#ifndef IBQOS_READBACK_DISCOVER_H
#define IBQOS_READBACK_DISCOVER_H

#include "fabric.h"
#include "mad_pipe.h"

/* Fills f from the node behind the local port. Returns 0, or -1 with msg set. */
int rb_discover(struct mad_pipe *mp, struct rb_fabric *f, char *msg, size_t msglen);

#endif
