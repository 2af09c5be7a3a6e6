/* A test shim (LD_PRELOAD before libumad2sim.so): umad_send returns to its caller 3 ms after
 * it has handed over the first PerfMgt MAD for each (LID, attribute, port), as when the agent
 * answers at once and the sender is then not scheduled for a while; a repeated read (a
 * sub-window's second) returns at once. A reader that takes a request's send time after
 * umad_send returns then takes the first read's after the agent read its counters, and the
 * window's upper bound comes out short (manager/tests/test_monitor_live.py). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <infiniband/umad.h>
#include <stdint.h>
#include <time.h>

#define PERF_MGMT_CLASS 0x04
#define MAX_SEEN 4096

typedef int (*umad_send_fn)(int, int, void *, int, int, int);

static uint64_t seen[MAX_SEEN];
static int nseen;

static int first_read(uint64_t key)
{
	for (int i = 0; i < nseen; i++)
		if (seen[i] == key)
			return 0;
	if (nseen < MAX_SEEN)
		seen[nseen++] = key;
	return 1;
}

int umad_send(int fd, int agentid, void *umad, int length, int timeout_ms, int retries)
{
	umad_send_fn next = (umad_send_fn)dlsym(RTLD_NEXT, "umad_send");
	const uint8_t *mad = umad_get_mad(umad);
	/* the LID the request goes to, its attribute ID (MAD bytes 16-17) and PortSelect (byte
	 * 1 of the PerfMgt data at 64) */
	uint64_t key = (uint64_t)((struct ib_user_mad *)umad)->addr.lid << 32 |
		(uint64_t)mad[16] << 16 | (uint64_t)mad[17] << 8 | mad[65];
	int rc = next(fd, agentid, umad, length, timeout_ms, retries);

	if (mad[1] == PERF_MGMT_CLASS && first_read(key)) {
		struct timespec late = {.tv_sec = 0, .tv_nsec = 3000000};

		nanosleep(&late, NULL);
	}
	return rc;
}
