/*
 * dla_fabric: the switch graph the dla engine works on, copied out of OpenSM at the start of
 * every routing pass. The routing logic sees only this struct, never OpenSM's, so it can be
 * unit-tested without a subnet manager and cannot corrupt OpenSM state while it computes.
 */
#ifndef IBQOS_DLA_FABRIC_H
#define IBQOS_DLA_FABRIC_H

#include <stddef.h>
#include <stdint.h>

#define DLA_NO_SWITCH UINT32_MAX

enum dla_peer_kind {
	DLA_PEER_NONE = 0, /* port 0, down, unhealthy or unconnected */
	DLA_PEER_ENDPORT,  /* a CA (or router) port: a LID to deliver to */
	DLA_PEER_SWITCH,
};

struct dla_port {
	uint8_t peer_kind;
	uint8_t peer_port;    /* DLA_PEER_SWITCH: port number on the peer */
	uint16_t endport_lid; /* DLA_PEER_ENDPORT: base LID of the peer port (0: none) */
	uint32_t peer_sw;     /* DLA_PEER_SWITCH: index of the peer switch */
};

struct dla_switch {
	uint64_t guid;		/* node GUID, host order */
	const char *name;	/* node description; borrowed, may be NULL */
	uint16_t lid;		/* base LID of port 0 */
	uint8_t num_ports;	/* including port 0 */
	struct dla_port *ports; /* [num_ports] */
};

struct dla_fabric {
	uint32_t nsw;
	uint16_t max_lid;      /* highest LID the LFTs must cover */
	struct dla_switch *sw; /* [nsw] */
};

int dla_fabric_init(struct dla_fabric *f, uint32_t nsw, uint16_t max_lid);
/* Ports start unconnected. Returns -ENOMEM or -EINVAL. */
int dla_fabric_set_switch(struct dla_fabric *f, uint32_t idx, uint64_t guid, const char *name,
			  uint16_t lid, uint8_t num_ports);
int dla_fabric_link(struct dla_fabric *f, uint32_t s1, uint8_t p1, uint32_t s2, uint8_t p2);
int dla_fabric_attach_endport(struct dla_fabric *f, uint32_t s, uint8_t p, uint16_t lid);
void dla_fabric_free(struct dla_fabric *f);
/* 1 if a and b are the same switch graph: switches (GUID, LID, ports) and every port's peer,
 * in the same order; names are not compared. */
int dla_fabric_equal(const struct dla_fabric *a, const struct dla_fabric *b);

/* "0x0002c90300000001 "sw-g0-s0"" for messages; returns buf. */
const char *dla_switch_label(const struct dla_fabric *f, uint32_t s, char *buf, size_t len);

#endif
