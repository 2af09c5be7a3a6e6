/*
 * ibsim-smp-rw: Get, or Set then Get, one VLArbitrationTable block, PortInfo's VLHighLimit,
 * one LinearForwardingTable entry or one SLtoVLMappingTable of a node reached by directed
 * route. The ibsim patch's test uses it to write entries no subnet manager writes (OpenSM
 * 3.3.23 never sends entries 32-63) and to read them back; the status tests use it to change
 * a switch's tables behind OpenSM's back, as a switch reset or another SM would.
 *
 *   ibsim-smp-rw DRPATH PORT vlarb BLOCK [VL:WEIGHT,...]   BLOCK 1..4 (1-2 low, 3-4 high)
 *   ibsim-smp-rw DRPATH PORT limit [N]
 *   ibsim-smp-rw DRPATH 0 lft LID [OUTPORT]                 OUTPORT 0..255 (255: no route)
 *   ibsim-smp-rw DRPATH OUTPORT sl2vl INPORT [HEX16]        VL of SL 0..15, one hex digit each
 *
 * With a list the block is set to it (the rest of the block 0:0); with N the port's
 * VLHighLimit is set to N (PortInfo read, changed, written back with PortState and
 * PortPhysicalState "no change"); with OUTPORT the LFT block holding LID is read, its entry
 * changed and written back; with HEX16 the (INPORT, OUTPORT) table is set. Then the block is
 * printed as 32 VL:WEIGHT words, the limit, the entry as a number, the table as 16 hex digits.
 * Exit 1 with one line on stderr when an SMP fails.
 */
#include <errno.h>
#include <infiniband/mad.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_MS 2000
#define ENTRIES 32

static int fail(const char *what)
{
	fprintf(stderr, "ibsim-smp-rw: %s\n", what);
	return 1;
}

static int parse_entries(char *list, uint8_t *block)
{
	int i = 0;

	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","), i++) {
		unsigned vl, weight;

		if (i == ENTRIES || sscanf(tok, "%u:%u", &vl, &weight) != 2 || vl > 15 ||
		    weight > 255)
			return -EINVAL;
		block[2 * i] = (uint8_t)vl;
		block[2 * i + 1] = (uint8_t)weight;
	}
	return 0;
}

static int vlarb(ib_portid_t *id, unsigned port, unsigned blk, char *list,
		 struct ibmad_port *srcport)
{
	uint8_t data[IB_SMP_DATA_SIZE] = {0};
	unsigned mod = blk << 16 | port;

	if (blk < 1 || blk > 4)
		return fail("BLOCK must be 1..4");
	if (list) {
		if (parse_entries(list, data))
			return fail(
				"entries must be at most 32 VL:WEIGHT (VL 0..15, WEIGHT 0..255)");
		if (!smp_set_via(data, id, IB_ATTR_VL_ARBITRATION, mod, TIMEOUT_MS, srcport))
			return fail("Set(VLArbitrationTable) failed");
	}
	if (!smp_query_via(data, id, IB_ATTR_VL_ARBITRATION, mod, TIMEOUT_MS, srcport))
		return fail("Get(VLArbitrationTable) failed");
	for (int i = 0; i < ENTRIES; i++)
		printf("%u:%u%c", data[2 * i] & 0xf, data[2 * i + 1],
		       i == ENTRIES - 1 ? '\n' : ' ');
	return 0;
}

static int limit(ib_portid_t *id, unsigned port, const char *value, struct ibmad_port *srcport)
{
	uint8_t pi[IB_SMP_DATA_SIZE] = {0};

	if (!smp_query_via(pi, id, IB_ATTR_PORT_INFO, port, TIMEOUT_MS, srcport))
		return fail("Get(PortInfo) failed");
	if (value) {
		mad_set_field(pi, 0, IB_PORT_VL_HIGH_LIMIT_F, (uint32_t)strtoul(value, NULL, 0));
		mad_set_field(pi, 0, IB_PORT_STATE_F, 0);
		mad_set_field(pi, 0, IB_PORT_PHYS_STATE_F, 0);
		if (!smp_set_via(pi, id, IB_ATTR_PORT_INFO, port, TIMEOUT_MS, srcport))
			return fail("Set(PortInfo) failed");
		if (!smp_query_via(pi, id, IB_ATTR_PORT_INFO, port, TIMEOUT_MS, srcport))
			return fail("Get(PortInfo) failed");
	}
	printf("%u\n", mad_get_field(pi, 0, IB_PORT_VL_HIGH_LIMIT_F));
	return 0;
}

static int lft(ib_portid_t *id, const char *lid_s, const char *out, struct ibmad_port *srcport)
{
	uint8_t data[IB_SMP_DATA_SIZE] = {0};
	unsigned lid = (unsigned)strtoul(lid_s, NULL, 0);

	if (lid == 0 || lid >= 0xc000)
		return fail("LID must be 1..0xbfff");
	if (!smp_query_via(data, id, IB_ATTR_LINEARFORWTBL, lid / 64, TIMEOUT_MS, srcport))
		return fail("Get(LinearForwardingTable) failed");
	if (out) {
		data[lid % 64] = (uint8_t)strtoul(out, NULL, 0);
		if (!smp_set_via(data, id, IB_ATTR_LINEARFORWTBL, lid / 64, TIMEOUT_MS, srcport))
			return fail("Set(LinearForwardingTable) failed");
		if (!smp_query_via(data, id, IB_ATTR_LINEARFORWTBL, lid / 64, TIMEOUT_MS, srcport))
			return fail("Get(LinearForwardingTable) failed");
	}
	printf("%u\n", data[lid % 64]);
	return 0;
}

static int sl2vl(ib_portid_t *id, unsigned out, const char *in_s, const char *hex,
		 struct ibmad_port *srcport)
{
	uint8_t data[IB_SMP_DATA_SIZE] = {0};
	unsigned mod = (unsigned)atoi(in_s) << 8 | out;

	if (hex) {
		if (strlen(hex) != 16 || strspn(hex, "0123456789abcdefABCDEF") != 16)
			return fail("the table is 16 hex digits, the VL of SL 0..15");
		for (int sl = 0; sl < 16; sl++) {
			char digit[2] = {hex[sl], '\0'};
			unsigned vl = (unsigned)strtoul(digit, NULL, 16);

			data[sl / 2] |= (uint8_t)(sl % 2 ? vl : vl << 4);
		}
		if (!smp_set_via(data, id, IB_ATTR_SLVL_TABLE, mod, TIMEOUT_MS, srcport))
			return fail("Set(SLtoVLMappingTable) failed");
	}
	if (!smp_query_via(data, id, IB_ATTR_SLVL_TABLE, mod, TIMEOUT_MS, srcport))
		return fail("Get(SLtoVLMappingTable) failed");
	for (int sl = 0; sl < 16; sl++)
		printf("%x", sl % 2 ? data[sl / 2] & 0xf : data[sl / 2] >> 4);
	printf("\n");
	return 0;
}

static int known(int argc, char **argv)
{
	static const char *const cmds[] = {"vlarb", "lft", "sl2vl"};

	if (argc < 4)
		return 0;
	if (!strcmp(argv[3], "limit"))
		return 1;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[3], cmds[i]))
			return argc >= 5;
	return 0;
}

int main(int argc, char **argv)
{
	int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS};
	struct ibmad_port *srcport;
	ib_portid_t id = {0};
	int rc;

	if (!known(argc, argv))
		return fail("usage: ibsim-smp-rw DRPATH PORT vlarb BLOCK [VL:WEIGHT,...] | "
			    "DRPATH PORT limit [N] | DRPATH 0 lft LID [OUTPORT] | "
			    "DRPATH OUTPORT sl2vl INPORT [HEX16]");
	srcport = mad_rpc_open_port(NULL, 0, classes, 2);
	if (!srcport)
		return fail("cannot open the local umad port");
	if (ib_resolve_portid_str_via(&id, argv[1], IB_DEST_DRPATH, NULL, srcport) < 0) {
		mad_rpc_close_port(srcport);
		return fail("bad directed route");
	}
	if (!strcmp(argv[3], "vlarb"))
		rc = vlarb(&id, (unsigned)atoi(argv[2]), (unsigned)atoi(argv[4]),
			   argc > 5 ? argv[5] : NULL, srcport);
	else if (!strcmp(argv[3], "lft"))
		rc = lft(&id, argv[4], argc > 5 ? argv[5] : NULL, srcport);
	else if (!strcmp(argv[3], "sl2vl"))
		rc = sl2vl(&id, (unsigned)atoi(argv[2]), argv[4], argc > 5 ? argv[5] : NULL,
			   srcport);
	else
		rc = limit(&id, (unsigned)atoi(argv[2]), argc > 4 ? argv[4] : NULL, srcport);
	mad_rpc_close_port(srcport);
	return rc;
}
