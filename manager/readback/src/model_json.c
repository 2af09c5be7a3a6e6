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

/* Length of the valid UTF-8 sequence at s (1-4, with its code point in *cp), or 0 when s
 * starts with an invalid byte; *bad then gets the length of its maximal invalid subpart (the
 * bytes one U+FFFD replaces, as Python's errors="replace" and the dump loader count them). */
static int utf8_seq(const unsigned char *s, uint32_t *cp, int *bad)
{
	int n = s[0] >= 0xf0 ? 3 : s[0] >= 0xe0 ? 2 : 1;
	unsigned char lo = 0x80, hi = 0xbf;

	*bad = 1;
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0; /* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f; /* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90; /* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f; /* above U+10FFFF */
	*cp = s[0] & (0x3f >> n);
	for (int i = 1; i <= n; i++) {
		if (s[i] < lo || s[i] > hi) {
			*bad = i;
			return 0;
		}
		*cp = *cp << 6 | (s[i] & 0x3f);
		lo = 0x80;
		hi = 0xbf;
	}
	return n + 1;
}

/* A JSON string in ASCII: node descriptions are UTF-8 (IBA 14.2.5.2), written as \u escapes
 * of their code points; bytes that are no UTF-8 become U+FFFD. */
static void json_str(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', out);
	while (*s) {
		uint32_t cp = 0;
		int bad = 1, n = *s < 0x80 ? 1 : utf8_seq(s, &cp, &bad);

		if (n == 1) {
			if (*s == '"' || *s == '\\')
				fprintf(out, "\\%c", *s);
			else if (*s < 0x20 || *s == 0x7f)
				fprintf(out, "\\u%04x", *s);
			else
				fputc(*s, out);
		} else if (n == 0) {
			fputs("\\ufffd", out);
			n = bad;
		} else if (cp > 0xffff) {
			cp -= 0x10000;
			fprintf(out, "\\u%04x\\u%04x", (unsigned)(0xd800 + (cp >> 10)),
				(unsigned)(0xdc00 + (cp & 0x3ff)));
		} else {
			fprintf(out, "\\u%04x", (unsigned)cp);
		}
		s += n;
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
