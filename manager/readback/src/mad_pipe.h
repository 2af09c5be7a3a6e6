/* A window of directed-route SMP Gets kept in flight on one umad agent.
 *
 * Requests wait in a FIFO; up to `window` of them are outstanding at once, each matched to
 * its response by transaction ID. The completion callback may submit more requests, so a
 * whole discovery runs as one pipeline without per-level barriers. umad2sim (and many real
 * HCAs behind a busy SM) generate no timeout completions, so timeouts and resends are ours.
 *
 * A request with a LID is a GMP of the performance management class (PMA, QP1), routed by
 * LID; without one it is a directed-route SMP. A request submitted with a due time
 * (mp_submit_at) is sent once it is due, ahead of the FIFO: the monitor's second read of a
 * port's counters, which must come a known short time after the first. `rate` bounds the MADs sent per second (0:
 * only the window bounds them), so a sampler can be kept from loading the fabric's
 * management queues.
 */
#ifndef IBQOS_READBACK_MAD_PIPE_H
#define IBQOS_READBACK_MAD_PIPE_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/mad.h>

struct mp_req {
	ib_dr_path_t path; /* SMPs */
	uint16_t lid;	   /* PMA GMPs: destination LID (0: an SMP) */
	uint32_t mod;	   /* attribute modifier */
	uint32_t node;	   /* caller's cookies */
	uint32_t aux;
	uint16_t attr; /* attribute ID */
	uint8_t kind;
	uint8_t port;
};

/* status: 0, the SMP / GMP status word (> 0), or -ETIMEDOUT after all resends.
 * data: the 64-byte data of the response (NULL unless status == 0).
 * Return < 0 to stop the pipeline with that value. */
typedef int (*mp_done_fn)(void *ctx, const struct mp_req *req, int status, const uint8_t *data);

struct mp_slot;

/* requests waiting to be sent, in order; `due` (mp_now_ms) not before which each may go */
struct mp_fifo {
	struct mp_req *req;
	double *due;
	size_t head, len, cap;
};

struct mad_pipe {
	int fd, agent, pma_agent;
	int window, timeout_ms, retries, rate;
	double next_send_ms;  /* rate limit: no send before this */
	struct mp_fifo queue; /* mp_submit's, due at once */
	struct mp_fifo later; /* mp_submit_at's, in due order */
	double done_sent_ms;  /* during a callback: when its request was (last) sent */
	struct mp_slot *slots;
	int *free_slots, nfree;
	uint32_t seq;
	void *sbuf, *rbuf;
	unsigned long sent, received, resent;
};

int mp_open(struct mad_pipe *mp, char *ca, int port, int window, int timeout_ms, int retries);
void mp_close(struct mad_pipe *mp);
/* Registers the performance management agent; PMA requests need it. rate: MADs/s, 0 none */
int mp_open_pma(struct mad_pipe *mp, int rate);
int mp_submit(struct mad_pipe *mp, const struct mp_req *req);
/* sent no earlier than due_ms (mp_now_ms's clock), before any FIFO request; due times are
 * kept in submission order (a caller that submits an earlier one after a later waits for it) */
int mp_submit_at(struct mad_pipe *mp, const struct mp_req *req, double due_ms);
/* CLOCK_MONOTONIC in milliseconds: the clock of due times, done_sent_ms and answers */
double mp_now_ms(void);
int mp_run(struct mad_pipe *mp, mp_done_fn done, void *ctx);

/* path extended by one hop out of `port` */
ib_dr_path_t mp_path_add(const ib_dr_path_t *path, int port);
/* "0,1,5" as smpquery -D takes it */
const char *mp_path_str(const ib_dr_path_t *path, char *buf, size_t len);

#endif
