/* Port counters over the PMA: per-SL data, per-VL transmit wait and the extended data
 * counters of every linked port, as one window of LID-routed GMPs on the read-back's pipe.
 *
 * With a sub-window (window_s > 0) each port's per-SL data counters are read a second time,
 * window_s after the first answer came: a short interval, known to within the two reads'
 * round trips, in which a 32-bit per-SL counter cannot wrap twice even at HDR/NDR rates
 * (docs/monitor.md, "Fast links"). PortXmitDataSL always; PortRcvDataSL only on a port
 * whose link partner is a subnet manager's port (never asked: its traffic is read here). */
#ifndef IBQOS_READBACK_PMA_H
#define IBQOS_READBACK_PMA_H

#include <stdio.h>

#include "fabric.h"
#include "mad_pipe.h"

enum pma_attr {
	PMA_XMIT_SL,
	PMA_RCV_SL,
	PMA_VL_WAIT,
	PMA_EXT,
	PMA_XMIT_SL_END, /* the sub-window's second reads */
	PMA_RCV_SL_END,
	PMA_NATTR
};

struct pma_port {
	uint32_t node;
	uint8_t port;
	uint8_t skipped;       /* PMA_SKIP_* */
	uint16_t lid;	       /* the LID its PMA answers at (a switch's port 0) */
	int status[PMA_NATTR]; /* 0 answered, > 0 MAD status, < 0 -errno, 1<<16 not asked */
	uint8_t peer_is_sm;    /* the link partner is never asked: read its traffic here */
	uint32_t xmit_sl[16], rcv_sl[16];
	uint32_t xmit_sl_end[16], rcv_sl_end[16];
	double sent_ms[PMA_NATTR], answered_ms[PMA_NATTR]; /* mp_now_ms */
	uint16_t vl_wait[16];
	uint64_t xmit_data, rcv_data;
};

#define PMA_SKIP_NONE 0
#define PMA_SKIP_SM 1	  /* a subnet manager's port: never sent a MAD (docs/monitor.md) */
#define PMA_SKIP_NO_LID 2 /* no LID assigned yet: unreachable by LID routing */

struct pma_sample {
	struct pma_port *ports;
	size_t n;
	double wall; /* CLOCK_REALTIME when the last answer came */
};

/* Asks every linked port of f; answers that fail are kept per attribute, not fatal.
 * window_s: the per-SL sub-window (0: none). */
int pma_sample(struct mad_pipe *mp, const struct rb_fabric *f, double window_s,
	       struct pma_sample *s, char *msg, size_t msglen);
void pma_free(struct pma_sample *s);
int pma_write_json(FILE *out, const struct rb_fabric *f, const struct pma_sample *s);

#endif
