/* ibqos-readback: discover the fabric behind one local port by directed route and write
 * its ibqos fabric model (JSON, schema ibqos.fabric/1).
 *
 *   ibqos-readback [-C ca] [-P port] [-w window] [-t timeout_ms] [-r retries]
 *                  [-o model.json] [-s] [-T] [-c counters.json] [-R rate] [-W seconds]
 *
 * -T reads nodes, ports and links only (no forwarding or QoS tables). -c then samples the
 * PMA counters of every linked port (pma.h; schema ibqos.counters/1), at most -R MADs per
 * second over the whole run (default 40000; 0: only the window bounds it), and with -W each
 * port's per-SL data counters a second time, that many seconds after the first answer (pma.h).
 *
 * Exit 0 on success, 1 when the fabric cannot be read, 2 on bad usage. Errors are one line
 * on stderr; -o files are written whole or not at all.
 *
 * Window: ibsim answers ~100k SMPs/s whatever the window beyond ~8. Keep it small under
 * umad2sim: its write() holds a lock while blocked on ibsim's socket (net.unix.max_dgram_qlen,
 * default 10), and its receiver thread needs that lock to drain our replies, so a window
 * above twice the queue length can deadlock ibsim and the reader (seen with 1024).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "discover.h"
#include "model_json.h"
#include "pma.h"

struct options {
	char *ca;
	int port, window, timeout_ms, retries, stats, topology_only, rate;
	double sub_window_s;
	const char *out, *counters;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: ibqos-readback [-C ca] [-P port] [-w window] [-t timeout_ms] "
		"[-r retries] [-o model.json] [-s] [-T] [-c counters.json] [-R rate] "
		"[-W seconds]\n");
	exit(2);
}

static int int_arg(const char *s, int lo, int hi)
{
	char *end;
	long v = strtol(s, &end, 0);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi)
		usage();
	return (int)v;
}

static double seconds_arg(const char *s, double lo, double hi)
{
	char *end;
	double v = strtod(s, &end);

	if (*s == '\0' || *end != '\0' || !(v >= lo && v <= hi))
		usage();
	return v;
}

static struct options parse(int argc, char **argv)
{
	struct options o = {.window = 16, .timeout_ms = 500, .retries = 3, .rate = 40000};
	int c;

	while ((c = getopt(argc, argv, "C:P:w:t:r:o:sTc:R:W:h")) != -1) {
		switch (c) {
		case 'C':
			o.ca = optarg;
			break;
		case 'P':
			o.port = int_arg(optarg, 0, 254);
			break;
		case 'w':
			o.window = int_arg(optarg, 1, 4096);
			break;
		case 't':
			o.timeout_ms = int_arg(optarg, 1, 60000);
			break;
		case 'r':
			o.retries = int_arg(optarg, 0, 100);
			break;
		case 'o':
			o.out = optarg;
			break;
		case 's':
			o.stats = 1;
			break;
		case 'T':
			o.topology_only = 1;
			break;
		case 'c':
			o.counters = optarg;
			break;
		case 'R':
			o.rate = int_arg(optarg, 0, 10000000);
			break;
		case 'W':
			o.sub_window_s = seconds_arg(optarg, 0, 60);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	return o;
}

typedef int (*writer_fn)(FILE *out, const void *what);

static int model_writer(FILE *out, const void *f)
{
	return rb_write_model(out, f, "live:ibqos-readback");
}

struct counters_ctx {
	const struct rb_fabric *f;
	const struct pma_sample *s;
};

static int counters_writer(FILE *out, const void *c)
{
	const struct counters_ctx *cc = c;

	return pma_write_json(out, cc->f, cc->s);
}

/* to stdout when path is NULL or "-", else whole or not at all */
static int write_file(const char *path, writer_fn fn, const void *what)
{
	char tmp[4096];
	FILE *out;

	if (!path || !strcmp(path, "-"))
		return fn(stdout, what) || fflush(stdout) ? -1 : 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	out = fopen(tmp, "w");
	if (!out) {
		fprintf(stderr, "ibqos-readback: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fn(out, what) < 0 || fclose(out) != 0 || rename(tmp, path) != 0) {
		fprintf(stderr, "ibqos-readback: %s: %s\n", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = parse(argc, argv);
	struct mad_pipe mp;
	struct rb_fabric f;
	struct pma_sample sample = {0};
	struct timespec t0, t1;
	char msg[512];
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = mp_open(&mp, o.ca, o.port, o.window, o.timeout_ms, o.retries);
	if (rc == 0 && o.counters)
		rc = mp_open_pma(&mp, o.rate);
	if (rc < 0) {
		fprintf(stderr, "ibqos-readback: cannot open umad port %s:%d: %s\n",
			o.ca ? o.ca : "(first)", o.port, strerror(-rc));
		mp_close(&mp);
		return 1;
	}
	rb_fabric_init(&f);
	rc = rb_discover(&mp, &f, !o.topology_only, msg, sizeof(msg));
	if (rc == 0 && o.counters)
		rc = pma_sample(&mp, &f, o.sub_window_s, &sample, msg, sizeof(msg));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (o.stats)
		fprintf(stderr,
			"ibqos-readback: %zu nodes, %zu ports sampled, %lu MADs sent, "
			"%lu answered, %lu resent, %.3f s\n",
			f.n, sample.n, mp.sent, mp.received, mp.resent,
			(double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	mp_close(&mp);
	if (rc < 0) {
		fprintf(stderr, "ibqos-readback: %s\n", msg);
		pma_free(&sample);
		rb_fabric_free(&f);
		return 1;
	}
	rc = write_file(o.out, model_writer, &f);
	if (rc == 0 && o.counters) {
		struct counters_ctx cc = {.f = &f, .s = &sample};

		rc = write_file(o.counters, counters_writer, &cc);
	}
	pma_free(&sample);
	rb_fabric_free(&f);
	return rc < 0 ? 1 : 0;
}
