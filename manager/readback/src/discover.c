/* Every answer may ask further questions: NodeInfo of a new node asks for its description,
 * PortInfo of all its ports and SwitchInfo; PortInfo of a port with a link asks NodeInfo
 * across it (switches only: CAs do not forward directed routes), its SL2VL tables and,
 * with more than one data VL, its VLArb tables; SwitchInfo asks the LFT blocks. The MAD
 * pipe keeps the window full across all of it.
 */
#include "discover.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PORT_STATE_INIT 2 /* PortState: 1 Down, 2 Init, 3 Armed, 4 Active */

enum kind { K_NODEINFO, K_NODEDESC, K_PORTINFO, K_SWINFO, K_LFT, K_SL2VL, K_VLARB };

static const char *const kind_name[] = {
	"NodeInfo",	      "NodeDescription",       "PortInfo",
	"SwitchInfo",	      "LinearForwardingTable", "SLtoVLMappingTable",
	"VLArbitrationTable",
};

struct disc {
	struct mad_pipe *mp;
	struct rb_fabric *f;
	char *msg;
	size_t msglen;
	int tables;
};

static int fail(struct disc *d, const struct mp_req *req, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct disc *d, const struct mp_req *req, const char *fmt, ...)
{
	char path[256], what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(d->msg, d->msglen, "DR path %s: %s (modifier 0x%x): %s",
		 mp_path_str(&req->path, path, sizeof(path)), kind_name[req->kind], req->mod, what);
	return -EPROTO;
}

static int ask(struct disc *d, const ib_dr_path_t *path, enum kind kind, uint32_t mod,
	       uint32_t node, int port, uint32_t aux)
{
	static const uint16_t attr[] = {
		[K_NODEINFO] = IB_ATTR_NODE_INFO,   [K_NODEDESC] = IB_ATTR_NODE_DESC,
		[K_PORTINFO] = IB_ATTR_PORT_INFO,   [K_SWINFO] = IB_ATTR_SWITCH_INFO,
		[K_LFT] = IB_ATTR_LINEARFORWTBL,    [K_SL2VL] = IB_ATTR_SLVL_TABLE,
		[K_VLARB] = IB_ATTR_VL_ARBITRATION,
	};
	struct mp_req req = {
		.path = *path,
		.mod = mod,
		.node = node,
		.aux = aux,
		.attr = attr[kind],
		.kind = (uint8_t)kind,
		.port = (uint8_t)port,
	};
	int rc = mp_submit(d->mp, &req);

	if (rc < 0)
		snprintf(d->msg, d->msglen, "out of memory queueing MADs");
	return rc;
}

static int on_nodeinfo(struct disc *d, const struct mp_req *req, const uint8_t *data)
{
	uint8_t type = (uint8_t)mad_get_field((void *)data, 0, IB_NODE_TYPE_F);
	uint8_t nports = (uint8_t)mad_get_field((void *)data, 0, IB_NODE_NPORTS_F);
	uint64_t guid = mad_get_field64((void *)data, 0, IB_NODE_GUID_F);
	uint64_t pguid = mad_get_field64((void *)data, 0, IB_NODE_PORT_GUID_F);
	int local = (int)mad_get_field((void *)data, 0, IB_NODE_LOCAL_PORT_F);
	uint32_t idx = rb_find(d->f, guid);
	struct rb_node *n;
	int rc = 0;

	if (local > nports)
		return fail(d, req, "LocalPortNum %d beyond NumPorts %u", local, nports);
	if (idx == RB_NO_NODE) {
		idx = rb_add(d->f, guid, type, nports);
		if (idx == RB_NO_NODE)
			return fail(d, req, "out of memory");
		n = d->f->nodes[idx];
		n->path = req->path;
		n->port_guid = pguid;
		rc = ask(d, &req->path, K_NODEDESC, 0, idx, 0, 0);
		if (type == IB_NODE_SWITCH) {
			if (d->tables)
				rc = rc ? rc : ask(d, &req->path, K_SWINFO, 0, idx, 0, 0);
			for (int p = 0; p <= nports && !rc; p++)
				rc = ask(d, &req->path, K_PORTINFO, (uint32_t)p, idx, p, 0);
		}
	} else {
		n = d->f->nodes[idx];
		if (n->type != type || n->nports != nports)
			return fail(d, req,
				    "node 0x%016llx answers with another type or port count",
				    (unsigned long long)guid);
	}
	/* A CA answers PortInfo only for the port the SMP arrived on, so each of its ports
	 * is read along the route that reached it. */
	if (type != IB_NODE_SWITCH && !rc && !n->ports[local].guid) {
		n->ports[local].guid = pguid;
		rc = ask(d, &req->path, K_PORTINFO, (uint32_t)local, idx, local, 0);
	}
	if (req->node != RB_NO_NODE) {
		struct rb_node *parent = d->f->nodes[req->node];

		parent->ports[req->port].rguid = guid;
		parent->ports[req->port].rport = (uint8_t)local;
		n->ports[local].rguid = parent->guid;
		n->ports[local].rport = req->port;
	}
	return rc;
}

static int ask_port_tables(struct disc *d, const struct mp_req *req, struct rb_node *n,
			   struct rb_port *p)
{
	int rc = 0;

	if (n->type == IB_NODE_SWITCH)
		for (int in = 0; in <= n->nports && !rc; in++)
			rc = ask(d, &req->path, K_SL2VL, (uint32_t)(in << 8 | req->port), req->node,
				 req->port, (uint32_t)in);
	else
		rc = ask(d, &req->path, K_SL2VL, 0, req->node, req->port, 0);

	/* OperVLs 1 is VL0 only: nothing to arbitrate, OpenSM sends no VLArb there. */
	if (rc || p->op_vls <= 1 || p->low_cap + p->high_cap == 0)
		return rc;
	p->vlarb = calloc((size_t)p->low_cap + p->high_cap, 2);
	if (!p->vlarb)
		return fail(d, req, "out of memory");
	for (int b = 0; b * 32 < p->low_cap && !rc; b++)
		rc = ask(d, &req->path, K_VLARB, (uint32_t)(b + 1) << 16 | req->port, req->node,
			 req->port, (uint32_t)b + 1);
	for (int b = 0; b * 32 < p->high_cap && !rc; b++)
		rc = ask(d, &req->path, K_VLARB, (uint32_t)(b + 3) << 16 | req->port, req->node,
			 req->port, (uint32_t)b + 3);
	return rc;
}

static int on_portinfo(struct disc *d, const struct mp_req *req, const uint8_t *data)
{
	struct rb_node *n = d->f->nodes[req->node];
	struct rb_port *p = &n->ports[req->port];
	void *pi = (void *)data;
	int rc = 0;

	if (p->seen)
		return 0;
	p->seen = 1;
	p->lid = (uint16_t)mad_get_field(pi, 0, IB_PORT_LID_F);
	p->lmc = (uint8_t)mad_get_field(pi, 0, IB_PORT_LMC_F);
	p->state = (uint8_t)mad_get_field(pi, 0, IB_PORT_STATE_F);
	p->width = (uint8_t)mad_get_field(pi, 0, IB_PORT_LINK_WIDTH_ACTIVE_F);
	p->speed = (uint8_t)mad_get_field(pi, 0, IB_PORT_LINK_SPEED_ACTIVE_F);
	p->espeed = (uint8_t)mad_get_field(pi, 0, IB_PORT_LINK_SPEED_EXT_ACTIVE_F);
	p->capmask = mad_get_field(pi, 0, IB_PORT_CAPMASK_F);
	p->vl_cap = (uint8_t)mad_get_field(pi, 0, IB_PORT_VL_CAP_F);
	p->op_vls = (uint8_t)mad_get_field(pi, 0, IB_PORT_OPER_VLS_F);
	p->mtu = (uint8_t)mad_get_field(pi, 0, IB_PORT_NEIGHBOR_MTU_F);
	p->mtu_cap = (uint8_t)mad_get_field(pi, 0, IB_PORT_MTU_CAP_F);
	p->high_cap = (uint8_t)mad_get_field(pi, 0, IB_PORT_VL_ARBITRATION_HIGH_CAP_F);
	p->low_cap = (uint8_t)mad_get_field(pi, 0, IB_PORT_VL_ARBITRATION_LOW_CAP_F);
	p->high_limit = (uint8_t)mad_get_field(pi, 0, IB_PORT_VL_HIGH_LIMIT_F);
	if (p->high_cap > 64 || p->low_cap > 64)
		return fail(d, req, "VLArb capacity high %u / low %u beyond 64", p->high_cap,
			    p->low_cap);
	p->up = req->port > 0 && p->state >= PORT_STATE_INIT;
	if (!p->up)
		return 0;
	if (!p->rguid && (n->type == IB_NODE_SWITCH || n->path.cnt == 0)) {
		ib_dr_path_t across;

		if (req->path.cnt >= IB_SUBNET_PATH_HOPS_MAX - 1)
			return fail(d, req, "directed route too long to go further");
		across = mp_path_add(&req->path, req->port);

		rc = ask(d, &across, K_NODEINFO, 0, req->node, req->port, 0);
	}
	return rc || !d->tables ? rc : ask_port_tables(d, req, n, p);
}

static int on_swinfo(struct disc *d, const struct mp_req *req, const uint8_t *data)
{
	struct rb_node *n = d->f->nodes[req->node];
	unsigned top = mad_get_field((void *)data, 0, IB_SW_LINEAR_FDB_TOP_F);
	int rc = 0;

	if (n->lft)
		return 0;
	if (top >= 0xc000)
		return fail(d, req, "LinearFDBTop 0x%x beyond the unicast LID range", top);
	n->lft_top = (uint16_t)top;
	n->lft = malloc(top + 1u);
	if (!n->lft)
		return fail(d, req, "out of memory");
	memset(n->lft, 0xff, top + 1u);
	for (unsigned b = 0; b <= top / 64 && !rc; b++)
		rc = ask(d, &req->path, K_LFT, b, req->node, 0, b);
	return rc;
}

static int on_table(struct disc *d, const struct mp_req *req, const uint8_t *data)
{
	struct rb_node *n = d->f->nodes[req->node];

	switch (req->kind) {
	case K_NODEDESC:
		memcpy(n->desc, data, 64);
		n->desc[64] = '\0';
		return 0;
	case K_LFT: {
		size_t first = (size_t)req->aux * 64, len = n->lft_top + 1u - first;

		memcpy(n->lft + first, data, len < 64 ? len : 64);
		return 0;
	}
	case K_SL2VL: {
		size_t i = n->type == IB_NODE_SWITCH ? req->aux * (n->nports + 1u) + req->port
						     : req->port;

		memcpy(n->sl2vl + 8 * i, data, 8);
		n->sl2vl_read[i] = 1;
		return 0;
	}
	case K_VLARB: {
		struct rb_port *p = &n->ports[req->port];
		int high = req->aux >= 3, first = ((int)req->aux - (high ? 3 : 1)) * 32;
		int cap = high ? p->high_cap : p->low_cap, count = cap - first;

		memcpy(p->vlarb + 2 * ((high ? p->low_cap : 0) + first), data,
		       2 * (size_t)(count < 32 ? count : 32));
		return 0;
	}
	}
	return 0;
}

static int on_answer(void *ctx, const struct mp_req *req, int status, const uint8_t *data)
{
	struct disc *d = ctx;

	if (status == -ETIMEDOUT)
		return fail(d, req, "no answer after %d tries", d->mp->retries + 1);
	if (status)
		return fail(d, req, "SMP status 0x%04x", status);
	switch (req->kind) {
	case K_NODEINFO:
		return on_nodeinfo(d, req, data);
	case K_PORTINFO:
		return on_portinfo(d, req, data);
	case K_SWINFO:
		return on_swinfo(d, req, data);
	default:
		return on_table(d, req, data);
	}
}

int rb_discover(struct mad_pipe *mp, struct rb_fabric *f, int tables, char *msg, size_t msglen)
{
	struct disc d = {.mp = mp, .f = f, .msg = msg, .msglen = msglen, .tables = tables};
	ib_dr_path_t local = {.cnt = 0};
	int rc;

	msg[0] = '\0';
	rc = ask(&d, &local, K_NODEINFO, 0, RB_NO_NODE, 0, 0);
	if (!rc)
		rc = mp_run(mp, on_answer, &d);
	if (rc < 0 && !msg[0])
		snprintf(msg, msglen, "umad send/receive failed: %s", strerror(-rc));
	return rc < 0 ? -1 : 0;
}
