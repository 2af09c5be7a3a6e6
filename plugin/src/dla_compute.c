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
		dla_result_free(out);
	}
	if (ret)
		dla_result_free(out);
	return ret;
}
