#include "dla_compute.h"

#include <errno.h>
#include <string.h>

void dla_result_free(struct dla_result *r)
{
	dla_vl_free(&r->vl);
	dla_routes_free(&r->routes);
	dla_groups_free(&r->groups);
}

int dla_compute(const struct dla_fabric *f, const uint32_t *pinned, const uint32_t *stored,
		const struct dla_numbering *known, unsigned budget, struct dla_result *out,
		char *note, size_t note_len, char *err, size_t len)
{
	char first[1024] = "", first_note[1024] = "";
	int ret;

	memset(out, 0, sizeof(*out));
	/* A degraded fabric can have several partitions that fit the rules; the first may need
	 * more VLs than the class has where another does not: try a few before refusing. */
	for (unsigned alt = 0; alt < DLA_MAX_ALTERNATIVES; alt++) {
		ret = dla_groups_choose(f, pinned, stored, alt, &out->groups, &out->source, note,
					note_len, err, len);
		if (!ret)
			ret = dla_routes_build(f, &out->groups, known, &out->routes, err, len);
		if (!ret)
			ret = dla_vl_assign(f, &out->routes, budget, &out->vl, err, len);
		out->alternative = alt;
		if (ret != -EINVAL ||
		    (out->source != DLA_GROUPS_FOUND_DEGRADED &&
		     out->source != DLA_GROUPS_FOUND_KEPT))
			break;
		if (!alt) {
			snprintf(first, sizeof(first), "%s", err);
			snprintf(first_note, sizeof(first_note), "%s", note);
		}
		dla_result_free(out);
	}
	/* Refused on every partition: say why for the first, the groups discovery reads (and
	 * the admin sees in the record); a later one's port roles are another partition's (a
	 * global link read as local) and its VL count that partition's. The note goes with it:
	 * the last attempt's would depend on how many partitions there were (none left: no
	 * note), not on the one refused. */
	if (ret == -EINVAL && *first) {
		snprintf(err, len, "%s", first);
		snprintf(note, note_len, "%s", first_note);
	}
	if (ret)
		dla_result_free(out);
	return ret;
}
