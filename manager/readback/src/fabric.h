/* What the reader learns about the fabric, in wire encodings; model_json.c converts. */
#ifndef IBQOS_READBACK_FABRIC_H
#define IBQOS_READBACK_FABRIC_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/mad.h>

#define RB_NO_NODE UINT32_MAX

struct rb_port {
	uint8_t seen;  /* PortInfo read */
	uint8_t up;    /* PortState >= Init: the port has a link */
	uint8_t rport; /* remote port number, once the far end answered NodeInfo */
	uint8_t lmc, state, width, speed, espeed;
	uint8_t vl_cap, op_vls, mtu, mtu_cap, high_cap, low_cap, high_limit;
	uint16_t lid;
	uint32_t capmask;
	uint64_t guid;	/* port GUID (CA ports; switches keep theirs in rb_node) */
	uint64_t rguid; /* remote node GUID, 0 while unknown */
	uint8_t *vlarb; /* low_cap then high_cap entries, 2 bytes each; NULL if not read */
};

struct rb_node {
	uint64_t guid, port_guid;
	uint8_t type; /* IB_NODE_CA / IB_NODE_SWITCH / IB_NODE_ROUTER */
	uint8_t nports;
	char desc[65];
	ib_dr_path_t path;     /* directed route that reached the node first */
	struct rb_port *ports; /* nports + 1 */
	uint16_t lft_top;
	uint8_t *lft;	     /* lft_top + 1 entries (switches) */
	uint8_t *sl2vl;	     /* switches: [(in * (nports+1) + out) * 8]; CAs: [port * 8] */
	uint8_t *sl2vl_read; /* same indexing, one flag per table */
};

struct rb_fabric {
	struct rb_node **nodes;
	size_t n, cap;
	uint32_t *hash; /* open addressing: node index + 1, 0 = empty */
	size_t hcap;
};

void rb_fabric_init(struct rb_fabric *f);
void rb_fabric_free(struct rb_fabric *f);
/* index of the node with this GUID, or RB_NO_NODE */
uint32_t rb_find(const struct rb_fabric *f, uint64_t guid);
/* a new node (GUID must be absent); RB_NO_NODE when out of memory */
uint32_t rb_add(struct rb_fabric *f, uint64_t guid, uint8_t type, uint8_t nports);

#endif
