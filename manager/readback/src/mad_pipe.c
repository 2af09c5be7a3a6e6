#include "mad_pipe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/umad.h>

#define MP_SLOT_BITS 12
#define MP_MAX_WINDOW (1 << MP_SLOT_BITS)

struct mp_slot {
	struct mp_req req;
	uint32_t tid;
	int tries;
	double deadline;
	double sent_ms;
};

double mp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

ib_dr_path_t mp_path_add(const ib_dr_path_t *path, int port)
{
	ib_dr_path_t p = *path;

	p.p[++p.cnt] = (uint8_t)port;
	return p;
}

const char *mp_path_str(const ib_dr_path_t *path, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "0");

	for (int i = 1; i <= path->cnt && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, ",%u", path->p[i]);
	return buf;
}

int mp_open(struct mad_pipe *mp, char *ca, int port, int window, int timeout_ms, int retries)
{
	memset(mp, 0, sizeof(*mp));
	mp->fd = mp->agent = mp->pma_agent = -1;
	if (window < 1 || window > MP_MAX_WINDOW)
		return -EINVAL;
	mp->window = window;
	mp->timeout_ms = timeout_ms;
	mp->retries = retries;
	mp->seq = 1;
	if (umad_init() < 0)
		return -ENODEV;
	mp->fd = umad_open_port(ca, port);
	if (mp->fd < 0)
		return mp->fd;
	mp->agent = umad_register(mp->fd, IB_SMI_DIRECT_CLASS, 1, 0, NULL);
	if (mp->agent < 0) {
		int err = mp->agent;

		mp_close(mp);
		return err;
	}
	mp->slots = calloc((size_t)window, sizeof(*mp->slots));
	mp->free_slots = calloc((size_t)window, sizeof(*mp->free_slots));
	mp->sbuf = umad_alloc(1, umad_size() + IB_MAD_SIZE);
	mp->rbuf = umad_alloc(1, umad_size() + IB_MAD_SIZE);
	if (!mp->slots || !mp->free_slots || !mp->sbuf || !mp->rbuf) {
		mp_close(mp);
		return -ENOMEM;
	}
	for (int i = 0; i < window; i++)
		mp->free_slots[mp->nfree++] = window - 1 - i;
	return 0;
}

int mp_open_pma(struct mad_pipe *mp, int rate)
{
	mp->pma_agent = umad_register(mp->fd, IB_PERFORMANCE_CLASS, 1, 0, NULL);
	mp->rate = rate;
	return mp->pma_agent < 0 ? mp->pma_agent : 0;
}

void mp_close(struct mad_pipe *mp)
{
	if (mp->pma_agent >= 0)
		umad_unregister(mp->fd, mp->pma_agent);
	if (mp->agent >= 0)
		umad_unregister(mp->fd, mp->agent);
	if (mp->fd >= 0)
		umad_close_port(mp->fd);
	free(mp->queue.req);
	free(mp->queue.due);
	free(mp->later.req);
	free(mp->later.due);
	free(mp->slots);
	free(mp->free_slots);
	if (mp->sbuf)
		umad_free(mp->sbuf);
	if (mp->rbuf)
		umad_free(mp->rbuf);
	mp->fd = mp->agent = mp->pma_agent = -1;
	memset(&mp->queue, 0, sizeof(mp->queue));
	memset(&mp->later, 0, sizeof(mp->later));
	mp->slots = NULL;
	mp->free_slots = NULL;
	mp->sbuf = mp->rbuf = NULL;
}

static int fifo_push(struct mp_fifo *f, const struct mp_req *req, double due_ms)
{
	if (f->head == f->len)
		f->head = f->len = 0; /* drained: reuse the buffer from the start */
	if (f->len == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 4096;
		struct mp_req *q = realloc(f->req, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		f->req = q;
		double *due = realloc(f->due, cap * sizeof(*due));

		if (!due)
			return -ENOMEM;
		f->due = due;
		f->cap = cap;
	}
	f->req[f->len] = *req;
	f->due[f->len++] = due_ms;
	return 0;
}

int mp_submit(struct mad_pipe *mp, const struct mp_req *req)
{
	return fifo_push(&mp->queue, req, 0);
}

int mp_submit_at(struct mad_pipe *mp, const struct mp_req *req, double due_ms)
{
	return fifo_push(&mp->later, req, due_ms);
}

/* the earliest due time among the delayed requests (their FIFO's head), or -1 when none */
static double first_due(const struct mad_pipe *mp)
{
	return mp->later.head < mp->later.len ? mp->later.due[mp->later.head] : -1;
}

static int send_slot(struct mad_pipe *mp, int s)
{
	struct mp_slot *slot = &mp->slots[s];
	int pma = slot->req.lid != 0;
	ib_rpc_t rpc = {
		.mgtclass = pma ? IB_PERFORMANCE_CLASS : IB_SMI_DIRECT_CLASS,
		.method = IB_MAD_METHOD_GET,
		.attr = {.id = slot->req.attr, .mod = slot->req.mod},
		.dataoffs = pma ? IB_PC_DATA_OFFS : IB_SMP_DATA_OFFS,
		.datasz = pma ? IB_PC_DATA_SZ : IB_SMP_DATA_SIZE,
	};
	ib_portid_t dport = {.lid = 0, .drpath = slot->req.path};
	uint8_t data[IB_PC_DATA_SZ] = {0};

	if (pma) {
		/* LID-routed to the port's PMA on QP1; the PortSelect field of the counter
		 * attributes names the port (a switch answers for all its ports at port 0's LID). */
		dport = (ib_portid_t){.lid = slot->req.lid, .qp = 1, .qkey = IB_DEFAULT_QP1_QKEY};
		mad_set_field(data, 0, IB_PC_PORT_SELECT_F, slot->req.port);
	}
	/* The kernel owns the upper 32 TID bits; the slot index in the low bits finds the
	 * request, the sequence number above it rejects late answers to a resent MAD. */
	slot->tid = (mp->seq++ << MP_SLOT_BITS | (uint32_t)s) & 0xffffffffu;
	if (!slot->tid)
		slot->tid = (mp->seq++ << MP_SLOT_BITS | (uint32_t)s) & 0xffffffffu;
	rpc.trid = slot->tid;
	memset(mp->sbuf, 0, umad_size() + IB_MAD_SIZE);
	if (mad_build_pkt(mp->sbuf, &rpc, &dport, NULL, pma ? data : NULL) < 0)
		return -EINVAL;
	/* Read before the send: the agent may answer (and read its counters) before umad_send
	 * returns to us, and a PMA sub-window's bounds need a time no later than that read. */
	double sent_ms = mp_now_ms();

	if (umad_send(mp->fd, pma ? mp->pma_agent : mp->agent, mp->sbuf, IB_MAD_SIZE,
		      mp->timeout_ms, 0) < 0)
		return -EIO;
	slot->tries++;
	slot->sent_ms = sent_ms;
	slot->deadline = slot->sent_ms + mp->timeout_ms;
	mp->sent++;
	if (mp->rate) {
		/* a token bucket of `window` MADs: bursts up to the window, `rate` on average */
		double burst = mp_now_ms() - mp->window * 1e3 / mp->rate;

		mp->next_send_ms =
			(mp->next_send_ms > burst ? mp->next_send_ms : burst) + 1e3 / mp->rate;
	}
	return 0;
}

static int fill_window(struct mad_pipe *mp)
{
	for (;;) {
		double due = first_due(mp);
		int is_due = due >= 0 && due <= mp_now_ms();

		if (!mp->nfree || (!is_due && mp->queue.head == mp->queue.len))
			return 0;
		if (mp->rate && mp_now_ms() < mp->next_send_ms)
			return 0; /* the rate limit: mp_run waits for next_send_ms */
		int s = mp->free_slots[--mp->nfree];

		if (is_due) {
			/* a timed second read goes first: its window is kept short and known */
			mp->slots[s].req = mp->later.req[mp->later.head++];
		} else {
			mp->slots[s].req = mp->queue.req[mp->queue.head++];
		}
		mp->slots[s].tries = 0;
		int rc = send_slot(mp, s);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int complete(struct mad_pipe *mp, int s, int status, const uint8_t *data, mp_done_fn done,
		    void *ctx)
{
	struct mp_req req = mp->slots[s].req;

	mp->done_sent_ms = mp->slots[s].sent_ms;
	mp->slots[s].tid = 0;
	mp->free_slots[mp->nfree++] = s;
	return done(ctx, &req, status, data);
}

/* Resend what has waited past its deadline; fail what has used up its resends. */
static int expire(struct mad_pipe *mp, mp_done_fn done, void *ctx, double *next)
{
	double now = mp_now_ms();

	*next = now + mp->timeout_ms;
	for (int s = 0; s < mp->window; s++) {
		struct mp_slot *slot = &mp->slots[s];
		int rc;

		if (!slot->tid)
			continue;
		if (slot->deadline > now) {
			if (slot->deadline < *next)
				*next = slot->deadline;
			continue;
		}
		if (slot->tries > mp->retries)
			rc = complete(mp, s, -ETIMEDOUT, NULL, done, ctx);
		else {
			mp->resent++;
			rc = send_slot(mp, s);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

int mp_run(struct mad_pipe *mp, mp_done_fn done, void *ctx)
{
	double next = mp_now_ms() + mp->timeout_ms;
	int rc;

	for (;;) {
		if ((rc = fill_window(mp)) < 0)
			return rc;
		double due = first_due(mp);

		if (mp->nfree == mp->window && mp->queue.head == mp->queue.len && due < 0)
			return 0;
		double until = next, gap;

		if (mp->nfree) {
			/* what can be sent next: the FIFO's head now, a delayed request when due,
			 * either not before the rate limit allows */
			double wake = mp->queue.head < mp->queue.len ? mp_now_ms() : -1;

			if (due >= 0 && (wake < 0 || due < wake))
				wake = due;
			if (wake >= 0 && mp->rate && mp->next_send_ms > wake)
				wake = mp->next_send_ms;
			if (wake >= 0 && wake < until)
				until = wake;
		}
		gap = until - mp_now_ms();
		int len = IB_MAD_SIZE;
		/* umad_recv waits whole milliseconds: a shorter gap (the rate limit's) is slept */
		rc = umad_recv(mp->fd, mp->rbuf, &len, gap >= 1.0 ? (int)gap : 0);
		if (rc < 0 && gap > 0 && gap < 1.0) {
			struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(gap * 1e6)};

			nanosleep(&ts, NULL);
		}
		if (rc >= 0 && umad_status(mp->rbuf) == 0) {
			uint8_t *mad = umad_get_mad(mp->rbuf);
			uint32_t tid = (uint32_t)mad_get_field64(mad, 0, IB_MAD_TRID_F);
			int s = (int)(tid & (MP_MAX_WINDOW - 1));

			if (s < mp->window && mp->slots[s].tid == tid) {
				int status = mp->slots[s].req.lid
					? (int)mad_get_field(mad, 0, IB_MAD_STATUS_F)
					: (int)mad_get_field(mad, 0, IB_DRSMP_STATUS_F);

				mp->received++;
				rc = complete(mp, s, status, status ? NULL : mad + IB_SMP_DATA_OFFS,
					      done, ctx);
				if (rc < 0)
					return rc;
			}
		} else if (rc < 0 && rc != -ETIMEDOUT && rc != -EWOULDBLOCK && rc != -EINTR) {
			return -EIO;
		}
		if (mp_now_ms() >= next && (rc = expire(mp, done, ctx, &next)) < 0)
			return rc;
	}
}
