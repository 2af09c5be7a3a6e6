/*
 * Which partition a sweep uses. The order keeps the groups stable across sweeps (a fabric
 * with several valid partitions keeps the one it had) and keeps dla routing through faults:
 * a dead switch or link makes the fabric inexact, and the groups it had before are still the
 * right ones. A fresh start on a degraded fabric (a standby SM taking over has no stored map)
 * falls through to degraded discovery.
 */
#include "dla_groups.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 0: out holds labels' partition; 1: labels do not cover every switch (why in note). */
static int from_given(const struct dla_fabric *f, const uint32_t *labels, struct dla_groups *out,
		      const char *what, char *note, size_t note_len)
{
	char lb[160];

	for (uint32_t v = 0; v < f->nsw; v++)
		if (labels[v] == DLA_NO_GROUP) {
			snprintf(note, note_len, "%s: switch %s has no group", what,
				 dla_switch_label(f, v, lb, sizeof(lb)));
			return 1;
		}
	return dla_groups_from_labels(out, labels, f->nsw);
}

/* rule: 0 usable, 1 exact. 0: accepted into out; 1: refused (why in note); <0 error. */
static int take(const struct dla_fabric *f, const struct dla_graph *gr, const uint32_t *labels,
		int exact, const char *what, struct dla_groups *out, char *note, size_t note_len)
{
	char why[640];
	int ret = from_given(f, labels, out, what, note, note_len);

	if (ret)
		return ret;
	ret = exact ? dla_groups_validate(f, gr, out, why, sizeof(why))
		    : dla_groups_usable(f, gr, out, why, sizeof(why));
	if (!ret)
		return 0;
	dla_groups_free(out);
	if (ret == -ENOMEM)
		return ret;
	snprintf(note, note_len, "%s: %s", what, why);
	return 1;
}

/*
 * Groups that are all cliques, linked directly or through one group (a rack with a switch
 * never installed, a rack cabled to a few others only, or a dead switch or global link at a
 * fresh start). Stored when no map is, so a later fault keeps them: the search would not
 * find them on a fabric damaged twice. Once healed, a fresh exact partition wins unless
 * this one is exact too. Not for groups of two or fewer: any linked pair is such a clique,
 * too weak a reading to keep.
 */
static int cliques_linked(const struct dla_graph *gr, const struct dla_groups *g)
{
	uint32_t biggest = 0;

	for (uint32_t k = 0; k < g->ngroups; k++)
		if (g->first[k + 1] - g->first[k] > biggest)
			biggest = g->first[k + 1] - g->first[k];
	if (biggest < 3)
		return 0;
	for (uint32_t k = 0; k < g->ngroups; k++)
		for (uint32_t i = g->first[k]; i < g->first[k + 1]; i++)
			for (uint32_t j = i + 1; j < g->first[k + 1]; j++)
				if (!dla_graph_adjacent(gr, g->members[i], g->members[j]))
					return 0;
	return dla_groups_quotient_ok(gr, g, 1) == 1;
}

/* 1 if g has leaf/spine groups and is usable; 0 if not; -ENOMEM. */
static int leafspine_usable(const struct dla_fabric *f, const struct dla_graph *gr,
			    const struct dla_groups *g)
{
	uint8_t *role = malloc(f->nsw + 1);
	char why[640];
	int ret;

	if (!role)
		return -ENOMEM;
	ret = dla_dfplus_roles(f, gr, g, role);
	free(role);
	if (ret <= 0)
		return ret;
	ret = dla_groups_usable(f, gr, g, why, sizeof(why));
	return ret == -ENOMEM ? ret : !ret;
}

int dla_groups_choose(const struct dla_fabric *f, const uint32_t *pinned, const uint32_t *stored,
		      unsigned alternative, struct dla_groups *out, enum dla_groups_source *src,
		      char *note, size_t note_len, char *err, size_t len)
{
	struct dla_graph gr;
	struct dla_groups fresh;
	char why_stored[768] = "none stored", why_fresh[768] = "";
	int ret, found, exact = 0;

	memset(out, 0, sizeof(*out));
	*note = '\0';
	ret = dla_graph_build(f, &gr);
	if (ret)
		return ret;
	if (pinned) {
		ret = take(f, &gr, pinned, 0, "group pins ignored", out, note, note_len);
		*src = DLA_GROUPS_PINNED;
		if (ret <= 0)
			goto done;
	}
	if (stored) {
		ret = take(f, &gr, stored, 1, "stored group map", out, why_stored,
			   sizeof(why_stored));
		*src = DLA_GROUPS_STORED;
		if (ret <= 0)
			goto done;
	}
	if (stored) {
		/* a stored dragonfly+ map that is still usable wins over a fresh search: a
		 * damaged leaf/spine fabric can look like cliques of 2 to it */
		ret = from_given(f, stored, out, "stored group map", why_fresh, sizeof(why_fresh));
		if (ret < 0)
			goto done;
		if (!ret) {
			int ls = leafspine_usable(f, &gr, out);

			if (ls < 0) {
				ret = ls;
				dla_groups_free(out);
				goto done;
			}
			if (ls) {
				*src = DLA_GROUPS_STORED_DEGRADED;
				snprintf(note, note_len,
					 "the fabric is degraded (%s); routing on the stored group "
					 "map",
					 why_stored);
				goto done;
			}
			dla_groups_free(out);
		}
		*why_fresh = '\0';
	}
	found = dla_groups_discover(f, alternative, &fresh, &exact, why_fresh, sizeof(why_fresh));
	if (found && found != -EINVAL) {
		ret = found;
		goto done;
	}
	if (!found && exact) {
		*out = fresh;
		*src = DLA_GROUPS_FOUND;
		ret = 0;
		goto done;
	}
	if (stored) {
		char why[768];

		ret = take(f, &gr, stored, 0, "stored group map", out, why, sizeof(why));
		if (ret < 0)
			goto fresh_done;
		if (!ret) {
			*src = DLA_GROUPS_STORED_DEGRADED;
			if (!*note)
				snprintf(note, note_len,
					 "the fabric is degraded (%s); routing on "
					 "the stored group map",
					 why_stored);
			goto fresh_done;
		}
	}
	if (!found) {
		*out = fresh;
		*src = !stored && cliques_linked(&gr, out) ? DLA_GROUPS_FOUND_KEPT
							   : DLA_GROUPS_FOUND_DEGRADED;
		if (!*note)
			snprintf(note, note_len,
				 "no stored group map fits (%s); groups "
				 "discovered on a degraded fabric",
				 why_stored);
		ret = 0;
		goto done;
	}
	snprintf(err, len, "%s", why_fresh);
	ret = -EINVAL;
	goto done;
fresh_done:
	if (!found)
		dla_groups_free(&fresh);
done:
	dla_graph_free(&gr);
	return ret;
}
