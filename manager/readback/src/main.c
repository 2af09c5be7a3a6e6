/* ibqos-readback: discover the fabric behind one local port by directed route and write
 * its ibqos fabric model (JSON, schema ibqos.fabric/1).
 *
 *   ibqos-readback [-C ca] [-P port] [-w window] [-t timeout_ms] [-r retries]
 *                  [-o model.json] [-s]
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

struct options {
	char *ca;
	int port, window, timeout_ms, retries, stats;
	const char *out;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: ibqos-readback [-C ca] [-P port] [-w window] [-t timeout_ms] "
		"[-r retries] [-o model.json] [-s]\n");
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

static struct options parse(int argc, char **argv)
{
	struct options o = {.window = 16, .timeout_ms = 500, .retries = 3};
	int c;

	while ((c = getopt(argc, argv, "C:P:w:t:r:o:sh")) != -1) {
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
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	return o;
}

static int write_model(const struct options *o, const struct rb_fabric *f)
{
	char tmp[4096];
	FILE *out;

	if (!o->out)
		return rb_write_model(stdout, f, "live:ibqos-readback") || fflush(stdout) ? -1 : 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", o->out, (long)getpid());
	out = fopen(tmp, "w");
	if (!out) {
		fprintf(stderr, "ibqos-readback: %s: %s\n", o->out, strerror(errno));
		return -1;
	}
	if (rb_write_model(out, f, "live:ibqos-readback") < 0 || fclose(out) != 0 ||
	    rename(tmp, o->out) != 0) {
		fprintf(stderr, "ibqos-readback: %s: %s\n", o->out, strerror(errno));
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
	struct timespec t0, t1;
	char msg[512];
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = mp_open(&mp, o.ca, o.port, o.window, o.timeout_ms, o.retries);
	if (rc < 0) {
		fprintf(stderr, "ibqos-readback: cannot open umad port %s:%d: %s\n",
			o.ca ? o.ca : "(first)", o.port, strerror(-rc));
		return 1;
	}
	rb_fabric_init(&f);
	rc = rb_discover(&mp, &f, msg, sizeof(msg));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (o.stats)
		fprintf(stderr,
			"ibqos-readback: %zu nodes, %lu MADs sent, %lu answered, "
			"%lu resent, %.3f s\n",
			f.n, mp.sent, mp.received, mp.resent,
			(double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	mp_close(&mp);
	if (rc < 0) {
		fprintf(stderr, "ibqos-readback: %s\n", msg);
		rb_fabric_free(&f);
		return 1;
	}
	rc = write_model(&o, &f);
	rb_fabric_free(&f);
	return rc < 0 ? 1 : 0;
}
