/* Deadlock detection. An input buffer waits for another when its head packet needs
 * credits (none in flight either) on an output VL that has sent nothing for
 * deadlock_ps. A cycle in that wait-for graph is a deadlock; the cycle is the witness,
 * as (switch node, input port, VL) triples, the buffers of the verifier's CDG cycle. */
#include <errno.h>
#include <stdlib.h>

#include "sim.h"

struct edge {
	uint32_t from, to;
};

static int cmp_edge(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	return x->from < y->from ? -1 : x->from > y->from ? 1 : (x->to > y->to) - (x->to < y->to);
}

/* Nodes of the wait-for graph: input buffers (gport, VL), or with per-output VOQ buffers
 * the queues (gport, VL, output), each of which has its own space. */
static uint32_t buf_id(const struct ibs_sim *s, uint32_t gport, uint32_t vl, uint32_t out)
{
	uint32_t b = gport * s->nvl + vl;

	return s->oq ? b * s->oq_stride + out : b;
}

static uint32_t buf_width(const struct ibs_sim *s)
{
	return s->nvl * (s->oq ? s->oq_stride : 1);
}

static bool stale(struct ibs_sim *s, const struct port *p, uint32_t vl)
{
	uint32_t g = (uint32_t)(p - s->ports);

	return !port_busy(s, g) &&
		(s->now >> 10) - *port_last_tx(s, g, vl) >= s->cfg.deadlock_ps >> 10;
}

/* Edges of the wait-for graph between switch input buffers (gport * nvl + vl). */
static int wait_edges(struct ibs_sim *s, struct edge **out, size_t *n_out, uint32_t **blocked,
		      size_t *n_blocked)
{
	size_t n = 0, cap = 256, nb = 0, capb = 64;
	struct edge *e = malloc(cap * sizeof(*e));
	uint32_t *b = malloc(capb * sizeof(*b));

	if (!e || !b)
		goto nomem;
	for (uint32_t i = 0; i < s->n_sw; i++) {
		struct sw *w = &s->sws[i];

		for (uint32_t o = 1; o < w->nports; o++) {
			struct port *p = &s->ports[w->port_base + o];

			uint64_t *rec = sw_out(s, w, o);

			for (uint16_t m = *out_mask(rec); m; m &= (uint16_t)(m - 1)) {
				uint32_t v = (uint32_t)__builtin_ctz(m);
				const uint64_t *map = out_map(s, w, rec, v);

				if (!stale(s, p, v))
					continue;
				for (uint32_t wi = 0; wi < w->words; wi++)
					for (uint64_t bits = map[wi]; bits; bits &= bits - 1) {
						uint32_t key =
							wi * 64 + (uint32_t)__builtin_ctzll(bits);
						uint32_t in = key / s->nvl, ivl = key % s->nvl;
						uint32_t buf = buf_id(s, w->port_base + in, ivl, o);
						const struct queue *q =
							&s->queues[sw_queue_of(s, w, in, ivl, o)];
						const struct pkt *h = &s->pkts[q->head];
						uint32_t need = credits_of(h->bytes);

						if (nb == capb) {
							uint32_t *nbp =
								realloc(b, 2 * capb * sizeof(*b));
							if (!nbp)
								goto nomem;
							b = nbp;
							capb *= 2;
						}
						b[nb++] = buf;
						/* Credits still on their way back count as missing: they are
						 * 10s of ns from arriving, while the VL has been idle for
						 * deadlock_ps, so on a real wait-for cycle there are none. */
						if (*send_credits(s, w->port_base + o, v, h->dst) >=
						    need)
							continue; /* waits for the arbiter, not for space */
						if (!p->peer_sw)
							continue;
						if (n == cap) {
							struct edge *ne =
								realloc(e, 2 * cap * sizeof(*e));
							if (!ne)
								goto nomem;
							e = ne;
							cap *= 2;
						}
						e[n++] = (struct edge){
							buf,
							buf_id(s,
							       (uint32_t)s->at[w->port_base + o]
								       .peer,
							       v,
							       s->oq ? oq_slot(s, w->port_base + o,
									       h->dst)
								     : 0)};
					}
			}
		}
	}
	qsort(e, n, sizeof(*e), cmp_edge);
	*out = e;
	*n_out = n;
	*blocked = b;
	*n_blocked = nb;
	return 0;
nomem:
	free(e);
	free(b);
	return -ENOMEM;
}

static size_t first_edge(const struct edge *e, size_t n, uint32_t from)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (e[mid].from < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int set_witness(struct ibs_sim *s, const uint32_t *bufs, size_t n)
{
	free(s->witness);
	s->witness_len = 0;
	s->witness = malloc((n ? n : 1) * 3 * sizeof(uint32_t));
	if (!s->witness)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t gport = bufs[i] / buf_width(s);

		s->witness[3 * i] = s->port_node[gport];
		s->witness[3 * i + 1] = s->at[gport].num;
		s->witness[3 * i + 2] = bufs[i] % buf_width(s) / (s->oq ? s->oq_stride : 1);
	}
	s->witness_len = (uint32_t)n;
	return 0;
}

/* Iterative DFS; on a back edge the gray path from its target is the cycle. */
static int find_cycle(struct ibs_sim *s, const struct edge *e, size_t n, uint32_t **cyc,
		      size_t *ncyc)
{
	size_t nodes = (size_t)s->n_ports * buf_width(s);
	uint8_t *color = calloc(nodes, 1);
	uint32_t *stack = malloc((nodes + 1) * sizeof(*stack));
	size_t *next = malloc((nodes + 1) * sizeof(*next));
	int rc = 0;

	*cyc = NULL;
	*ncyc = 0;
	if (!color || !stack || !next) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n && !*cyc; i++) {
		uint32_t root = e[i].from;
		size_t sp = 0;

		if (color[root])
			continue;
		stack[sp] = root;
		next[sp++] = first_edge(e, n, root);
		color[root] = 1;
		while (sp && !*cyc) {
			uint32_t u = stack[sp - 1];
			size_t k = next[sp - 1];

			if (k < n && e[k].from == u) {
				uint32_t v = e[k].to;

				next[sp - 1]++;
				if (color[v] == 1) {
					size_t at = sp;
					while (stack[at - 1] != v)
						at--;
					*ncyc = sp - (at - 1);
					*cyc = malloc(*ncyc * sizeof(uint32_t));
					if (!*cyc) {
						rc = -ENOMEM;
						break;
					}
					for (size_t j = 0; j < *ncyc; j++)
						(*cyc)[j] = stack[at - 1 + j];
				} else if (!color[v]) {
					color[v] = 1;
					stack[sp] = v;
					next[sp++] = first_edge(e, n, v);
				}
			} else {
				color[u] = 2;
				sp--;
			}
		}
	}
out:
	free(color);
	free(stack);
	free(next);
	return rc;
}

int deadlock_check(struct ibs_sim *s, bool nothing_moves)
{
	struct edge *e = NULL;
	uint32_t *blocked = NULL, *cyc = NULL;
	size_t n = 0, nb = 0, ncyc = 0;
	int rc = wait_edges(s, &e, &n, &blocked, &nb);

	if (rc)
		return rc;
	rc = find_cycle(s, e, n, &cyc, &ncyc);
	if (!rc && cyc) {
		rc = set_witness(s, cyc, ncyc);
		if (!rc)
			s->res.status = IBS_DEADLOCK;
	} else if (!rc && nothing_moves) {
		rc = set_witness(s, blocked, nb > 64 ? 64 : nb);
		if (!rc)
			s->res.status = IBS_STALLED;
	}
	free(e);
	free(blocked);
	free(cyc);
	return rc;
}
