/* The monitor's sampler. A port whose PortInfo says IsSM is never asked: on ibsim an
 * attribute its PMA does not serve is forwarded to the SM's process, and OpenSM 3.3.23 under
 * umad2sim dies of it (docs/monitor.md, "Never hurt the SM"); its traffic is its link
 * partner's, read from the other end.
 */
#include "pma.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAP_IS_SM (1u << 1) /* PortInfo CapabilityMask IsSM (IBA 14.2.5.6) */
#define NOT_ASKED (1 << 16)

static const uint16_t attr_id[PMA_NATTR] = {
	[PMA_XMIT_SL] = IB_GSI_PORT_XMIT_DATA_SL,
	[PMA_RCV_SL] = IB_GSI_PORT_RCV_DATA_SL,
	[PMA_VL_WAIT] = IB_GSI_PORT_PORT_VL_XMIT_WAIT_COUNTERS,
	[PMA_EXT] = IB_GSI_PORT_COUNTERS_EXT,
	[PMA_XMIT_SL_END] = IB_GSI_PORT_XMIT_DATA_SL,
	[PMA_RCV_SL_END] = IB_GSI_PORT_RCV_DATA_SL,
};

static const char *const attr_key[PMA_NATTR] = {
	[PMA_XMIT_SL] = "xmit_data_sl",
	[PMA_RCV_SL] = "rcv_data_sl",
	[PMA_VL_WAIT] = "vl_xmit_wait",
	[PMA_EXT] = "extended",
	[PMA_XMIT_SL_END] = "xmit_data_sl_window",
	[PMA_RCV_SL_END] = "rcv_data_sl_window",
};

struct pma_run {
	struct mad_pipe *mp;
	struct pma_sample *s;
	double window_ms;
};

/* The sub-window's second read of a per-SL attribute, due window_ms after the first answer. */
static int read_again(struct pma_run *r, const struct mp_req *first, int kind)
{
	struct mp_req req = *first;

	req.kind = (uint8_t)kind;
	return mp_submit_at(r->mp, &req, mp_now_ms() + r->window_ms);
}

static int on_counters(void *ctx, const struct mp_req *req, int status, const uint8_t *data)
{
	struct pma_run *r = ctx;
	struct pma_port *p = &r->s->ports[req->aux];
	void *d = (void *)data;

	p->status[req->kind] = status;
	p->sent_ms[req->kind] = r->mp->done_sent_ms;
	p->answered_ms[req->kind] = mp_now_ms();
	if (status)
		return 0;
	switch (req->kind) {
	case PMA_XMIT_SL:
		for (int i = 0; i < 16; i++)
			p->xmit_sl[i] = mad_get_field(d, 0, IB_PC_XMT_DATA_SL0_F + i);
		if (r->window_ms > 0)
			return read_again(r, req, PMA_XMIT_SL_END);
		break;
	case PMA_RCV_SL:
		for (int i = 0; i < 16; i++)
			p->rcv_sl[i] = mad_get_field(d, 0, IB_PC_RCV_DATA_SL0_F + i);
		if (r->window_ms > 0 && p->peer_is_sm)
			return read_again(r, req, PMA_RCV_SL_END);
		break;
	case PMA_XMIT_SL_END:
		for (int i = 0; i < 16; i++)
			p->xmit_sl_end[i] = mad_get_field(d, 0, IB_PC_XMT_DATA_SL0_F + i);
		break;
	case PMA_RCV_SL_END:
		for (int i = 0; i < 16; i++)
			p->rcv_sl_end[i] = mad_get_field(d, 0, IB_PC_RCV_DATA_SL0_F + i);
		break;
	case PMA_VL_WAIT:
		for (int i = 0; i < 16; i++)
			p->vl_wait[i] =
				(uint16_t)mad_get_field(d, 0, IB_PC_PORT_VL_XMIT_WAIT0_F + i);
		break;
	case PMA_EXT:
		p->xmit_data = mad_get_field64(d, 0, IB_PC_EXT_XMT_BYTES_F);
		p->rcv_data = mad_get_field64(d, 0, IB_PC_EXT_RCV_BYTES_F);
		break;
	}
	return 0;
}

/* a CA port whose PortInfo says IsSM: never sent a MAD */
static int is_sm_port(const struct rb_node *n, int pn)
{
	return n->type != IB_NODE_SWITCH && (n->ports[pn].capmask & CAP_IS_SM);
}

static int peer_is_sm(const struct rb_fabric *f, const struct rb_port *port)
{
	uint32_t at = rb_find(f, port->rguid);
	const struct rb_node *peer = at == RB_NO_NODE ? NULL : f->nodes[at];

	return peer && port->rport >= 1 && port->rport <= peer->nports &&
		is_sm_port(peer, port->rport);
}

int pma_sample(struct mad_pipe *mp, const struct rb_fabric *f, double window_s,
	       struct pma_sample *s, char *msg, size_t msglen)
{
	struct pma_run run = {.mp = mp, .s = s, .window_ms = window_s * 1e3};
	size_t cap = 0;
	struct timespec ts;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < f->n; i++)
		cap += f->nodes[i]->nports;
	s->ports = calloc(cap ? cap : 1, sizeof(*s->ports));
	if (!s->ports) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < f->n && !rc; i++) {
		const struct rb_node *n = f->nodes[i];
		int sw = n->type == IB_NODE_SWITCH;

		for (int pn = 1; pn <= n->nports && !rc; pn++) {
			const struct rb_port *port = &n->ports[pn];
			struct pma_port *p;

			if (!port->up || !port->rguid)
				continue; /* no link: no traffic to count */
			p = &s->ports[s->n++];
			p->node = (uint32_t)i;
			p->port = (uint8_t)pn;
			p->lid = sw ? n->ports[0].lid : port->lid;
			p->peer_is_sm = (uint8_t)peer_is_sm(f, port);
			for (int a = 0; a < PMA_NATTR; a++)
				p->status[a] = NOT_ASKED;
			if (is_sm_port(n, pn))
				p->skipped = PMA_SKIP_SM;
			else if (!p->lid)
				p->skipped = PMA_SKIP_NO_LID;
			for (int a = 0; a <= PMA_EXT && !p->skipped && !rc; a++) {
				struct mp_req req = {
					.lid = p->lid,
					.attr = attr_id[a],
					.kind = (uint8_t)a,
					.port = (uint8_t)pn,
					.node = (uint32_t)i,
					.aux = (uint32_t)(s->n - 1),
				};
				rc = mp_submit(mp, &req);
			}
		}
	}
	if (!rc)
		rc = mp_run(mp, on_counters, &run);
	clock_gettime(CLOCK_REALTIME, &ts);
	s->wall = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	if (rc < 0) {
		snprintf(msg, msglen, "PMA sampling failed: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

void pma_free(struct pma_sample *s)
{
	free(s->ports);
	s->ports = NULL;
	s->n = 0;
}

static void write_u32s(FILE *out, const char *key, const uint32_t *v)
{
	fprintf(out, ", \"%s\": [", key);
	for (int i = 0; i < 16; i++)
		fprintf(out, "%s%" PRIu32, i ? ", " : "", v[i]);
	fputc(']', out);
}

/* A per-SL attribute's sub-window: the second reading, and the window's length in seconds
 * (between the midpoints of the two requests' round trips) with its bounds: the counters
 * were read somewhere between each request's sending and its answer. */
static void write_window(FILE *out, const char *key, const struct pma_port *p, int first, int end,
			 const uint32_t *v)
{
	double a0 = p->sent_ms[first], a1 = p->answered_ms[first];
	double b0 = p->sent_ms[end], b1 = p->answered_ms[end];

	fprintf(out, ", \"%s\": {\"s\": %.9f, \"s_min\": %.9f, \"s_max\": %.9f", key,
		(b0 + b1 - a0 - a1) / 2e3, (b0 - a1) / 1e3, (b1 - a0) / 1e3);
	write_u32s(out, "values", v);
	fputc('}', out);
}

/* schema ibqos.counters/1: one object per linked port; an attribute that did not answer is
 * absent from the port and named in "errors" with its MAD status or "no answer". */
int pma_write_json(FILE *out, const struct rb_fabric *f, const struct pma_sample *s)
{
	static const char *const skip_name[] = {"", "sm-port", "no-lid"};

	fprintf(out, "{\"schema\": \"ibqos.counters/1\", \"time\": %.6f, \"ports\": [", s->wall);
	for (size_t i = 0; i < s->n; i++) {
		const struct pma_port *p = &s->ports[i];
		const struct rb_node *n = f->nodes[p->node];
		int first = 1;

		fprintf(out, "%s\n {\"guid\": \"0x%016" PRIx64 "\", \"port\": %u, \"lid\": %u",
			i ? "," : "", n->guid, p->port, p->lid);
		if (p->skipped) {
			fprintf(out, ", \"skipped\": \"%s\"}", skip_name[p->skipped]);
			continue;
		}
		if (!p->status[PMA_XMIT_SL])
			write_u32s(out, "xmit_data_sl", p->xmit_sl);
		if (!p->status[PMA_RCV_SL])
			write_u32s(out, "rcv_data_sl", p->rcv_sl);
		if (!p->status[PMA_VL_WAIT]) {
			uint32_t w[16];

			for (int v = 0; v < 16; v++)
				w[v] = p->vl_wait[v];
			write_u32s(out, "vl_xmit_wait", w);
		}
		if (!p->status[PMA_EXT])
			fprintf(out, ", \"xmit_data\": %" PRIu64 ", \"rcv_data\": %" PRIu64,
				p->xmit_data, p->rcv_data);
		if (!p->status[PMA_XMIT_SL] && !p->status[PMA_XMIT_SL_END])
			write_window(out, "xmit_data_sl_window", p, PMA_XMIT_SL, PMA_XMIT_SL_END,
				     p->xmit_sl_end);
		if (!p->status[PMA_RCV_SL] && !p->status[PMA_RCV_SL_END])
			write_window(out, "rcv_data_sl_window", p, PMA_RCV_SL, PMA_RCV_SL_END,
				     p->rcv_sl_end);
		fprintf(out, ", \"errors\": {");
		for (int a = 0; a < PMA_NATTR; a++) {
			if (!p->status[a] || p->status[a] == NOT_ASKED)
				continue; /* a sub-window's read is asked only when it is wanted */
			if (p->status[a] < 0)
				fprintf(out, "%s\"%s\": \"no answer\"", first ? "" : ", ",
					attr_key[a]);
			else
				fprintf(out, "%s\"%s\": \"MAD status 0x%04x\"", first ? "" : ", ",
					attr_key[a], (unsigned)p->status[a]);
			first = 0;
		}
		fprintf(out, "}}");
	}
	fprintf(out, "\n]}\n");
	return ferror(out) ? -1 : 0;
}
