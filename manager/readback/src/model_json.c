/* Wire encodings become model units here: VL counts, MTU bytes, "4X", "2.5" (the strings
 * OpenSM writes into opensm-subnet.lst, so both loaders of the model agree).
 */
#include "model_json.h"
#include "dla_sl2vl.h" /* the one VLCap code table (docs/vlcap-vectors.json) */

#include <inttypes.h>

/* PortInfo CapabilityMask bit 14 (IBA 1.2.1 14.2.5.6) */
#define CAP_HAS_EXT_SPEEDS (1u << 14)

static int mtu_bytes(unsigned enc)
{
	return enc >= 1 && enc <= 5 ? 128 << enc : 0;
}

static const char *width_str(unsigned w)
{
	switch (w) {
	case 1:
		return "1X";
	case 2:
		return "4X";
	case 4:
		return "8X";
	case 8:
		return "12X";
	case 16:
		return "2X";
	default:
		return "??";
	}
}

/* As opensm/osm_dump.c: extended speeds count only when the node's reference port
 * (port 0 of a switch, the port itself on a CA) announces them. */
static const char *speed_str(const struct rb_port *p, const struct rb_port *ref)
{
	if (ref->capmask & CAP_HAS_EXT_SPEEDS) {
		switch (p->espeed) {
		case 0:
			break;
		case 1:
			return "14";
		case 2:
			return "25";
		case 4:
			return "50";
		case 8: /* NDR (IBA 1.5); OpenSM 3.3.23's ib_types.h stops at HDR */
			return "100";
		default:
			return "??";
		}
	}
	switch (p->speed) {
	case 1:
		return "2.5";
	case 2:
		return "5";
	case 4:
		return "10";
	default:
		return "??";
	}
}

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void vlarb_json(FILE *out, const struct rb_port *p)
{
	const uint8_t *e = p->vlarb;

	fputs("{\"low\":[", out);
	for (int i = 0; i < p->low_cap; i++, e += 2)
		fprintf(out, "%s[%u,%u]", i ? "," : "", e[0] & 0xf, e[1]);
	fputs("],\"high\":[", out);
	for (int i = 0; i < p->high_cap; i++, e += 2)
		fprintf(out, "%s[%u,%u]", i ? "," : "", e[0] & 0xf, e[1]);
	fprintf(out, "],\"high_limit\":%u,\"high_cap\":%u,\"low_cap\":%u}", p->high_limit,
		p->high_cap, p->low_cap);
}

static void port_json(FILE *out, const struct rb_node *n, int num)
{
	const struct rb_port *p = &n->ports[num];
	int sw = n->type == IB_NODE_SWITCH;
	const struct rb_port *ref = sw ? &n->ports[0] : p;

	if (sw && num == 0) {
		fprintf(out,
			"{\"num\":0,\"guid\":\"0x%016" PRIx64 "\",\"lid\":%u,\"lmc\":%u,"
			"\"remote\":null,\"width\":\"\",\"speed\":\"\",\"vl_cap\":0,\"op_vls\":0,"
			"\"mtu\":0,\"mtu_cap\":0,\"vlarb\":null}",
			n->port_guid, p->lid, p->lmc);
		return;
	}
	fprintf(out,
		"{\"num\":%d,\"guid\":\"0x%016" PRIx64 "\",\"lid\":%u,\"lmc\":%u,\"remote\":", num,
		sw ? 0 : p->guid, sw ? 0 : p->lid, sw ? 0 : p->lmc);
	if (p->rguid)
		fprintf(out, "[\"0x%016" PRIx64 "\",%u]", p->rguid, p->rport);
	else
		fputs("null", out);
	fprintf(out,
		",\"width\":\"%s\",\"speed\":\"%s\",\"vl_cap\":%u,\"op_vls\":%u,\"mtu\":%d,"
		"\"mtu_cap\":%d,\"vlarb\":",
		width_str(p->width), speed_str(p, ref), dla_vls_from_code(p->vl_cap),
		dla_vls_from_code(p->op_vls), mtu_bytes(p->mtu), mtu_bytes(p->mtu_cap));
	if (p->vlarb)
		vlarb_json(out, p);
	else
		fputs("null", out);
	fputc('}', out);
}

static void sl2vl_row(FILE *out, int *first, int in, int out_port, const uint8_t *t)
{
	fprintf(out, "%s[%d,%d,\"", *first ? "" : ",", in, out_port);
	for (int b = 0; b < 8; b++)
		fprintf(out, "%x%x", t[b] >> 4, t[b] & 0xf);
	fputs("\"]", out);
	*first = 0;
}

static void node_json(FILE *out, const struct rb_node *n)
{
	static const char *const kind[] = {
		[IB_NODE_CA] = "ca", [IB_NODE_SWITCH] = "switch", [IB_NODE_ROUTER] = "router"};
	int sw = n->type == IB_NODE_SWITCH, first = 1, np1 = n->nports + 1;

	fprintf(out, "{\"guid\":\"0x%016" PRIx64 "\",\"kind\":\"%s\",\"desc\":", n->guid,
		n->type <= IB_NODE_ROUTER && kind[n->type] ? kind[n->type] : "ca");
	json_str(out, n->desc);
	fprintf(out, ",\"nports\":%u,\"ports\":[", n->nports);
	for (int p = 0; p <= n->nports; p++) {
		if (!(sw && p == 0) && !n->ports[p].rguid)
			continue;
		if (!first)
			fputc(',', out);
		port_json(out, n, p);
		first = 0;
	}
	fputs("],\"lft\":[", out);
	for (unsigned l = 0; sw && n->lft && l <= n->lft_top; l++)
		fprintf(out, "%s%u", l ? "," : "", n->lft[l]);
	fputs("],\"sl2vl\":[", out);
	first = 1;
	for (int in = 0; in < np1; in++)
		for (int o = 0; o < np1; o++) {
			int i = sw ? in * np1 + o : o;

			if ((sw || in == 0) && n->sl2vl_read[i])
				sl2vl_row(out, &first, sw ? in : 0, o, n->sl2vl + 8 * i);
		}
	fputs("]}", out);
}

int rb_write_model(FILE *out, const struct rb_fabric *f, const char *source)
{
	fputs("{\"schema\":\"ibqos.fabric/1\",\"source\":", out);
	json_str(out, source);
	fputs(",\"nodes\":[", out);
	for (size_t i = 0; i < f->n; i++) {
		if (i)
			fputs(",\n", out);
		node_json(out, f->nodes[i]);
	}
	fputs("]}\n", out);
	return ferror(out) ? -1 : 0;
}
