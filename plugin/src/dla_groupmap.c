#define _POSIX_C_SOURCE 200809L
#include "dla_groupmap.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_BYTES (4u << 20) /* far above 65535 switches' lines */
#define MAX_LINE 128
/* Groups are numbered from 0 and a subnet holds fewer switches than unicast LIDs (0xBFFF):
 * anything above is no map dla wrote, and dla_groups_from_labels() sizes a table by it */
#define MAX_GROUP 0xBFFFu

struct by_guid {
	uint64_t guid;
	uint32_t idx;
};

static int cmp_guid(const void *a, const void *b)
{
	const struct by_guid *x = a, *y = b;

	return (x->guid > y->guid) - (x->guid < y->guid);
}

/* Open a regular file without blocking on a FIFO or following into a device. */
static FILE *open_regular(const char *path, char *err, size_t len, int *ret)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	FILE *fp;

	if (fd < 0) {
		*ret = errno == ENOENT ? -ENOENT : -EINVAL;
		snprintf(err, len, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > MAX_BYTES) {
		snprintf(err, len, "%s: not a regular file of at most %u bytes", path, MAX_BYTES);
		close(fd);
		*ret = -EINVAL;
		return NULL;
	}
	fp = fdopen(fd, "r");
	if (!fp) {
		close(fd);
		*ret = -ENOMEM;
	}
	return fp;
}

int dla_groupmap_load(const char *path, const struct dla_fabric *f, uint32_t *labels, char *err,
		      size_t len)
{
	struct by_guid *idx = malloc((f->nsw ? f->nsw : 1) * sizeof(*idx));
	char line[MAX_LINE + 2];
	unsigned lineno = 0;
	int ret = 0;
	FILE *fp;

	if (!idx)
		return -ENOMEM;
	fp = open_regular(path, err, len, &ret);
	if (!fp) {
		free(idx);
		return ret;
	}
	for (uint32_t s = 0; s < f->nsw; s++) {
		idx[s] = (struct by_guid){.guid = f->sw[s].guid, .idx = s};
		labels[s] = DLA_NO_GROUP;
	}
	qsort(idx, f->nsw, sizeof(*idx), cmp_guid);
	while (fgets(line, sizeof(line), fp)) {
		struct by_guid key, *hit;
		unsigned long long guid;
		unsigned group;
		char extra;

		lineno++;
		if (!strchr(line, '\n') && !feof(fp)) {
			snprintf(err, len, "%s:%u: line longer than %u bytes", path, lineno,
				 MAX_LINE);
			ret = -EINVAL;
			break;
		}
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		if (sscanf(line, "0x%llx %u %c", &guid, &group, &extra) != 2) {
			snprintf(err, len, "%s:%u: expected \"0x<node GUID> <group>\"", path,
				 lineno);
			ret = -EINVAL;
			break;
		}
		if (group >= MAX_GROUP) {
			snprintf(err, len, "%s:%u: group %u is out of range (0-%u)", path, lineno,
				 group, MAX_GROUP - 1);
			ret = -EINVAL;
			break;
		}
		key.guid = guid;
		hit = bsearch(&key, idx, f->nsw, sizeof(key), cmp_guid);
		if (hit)
			labels[hit->idx] = group;
	}
	fclose(fp);
	free(idx);
	return ret;
}

int dla_groupmap_save(const char *path, const struct dla_fabric *f, const struct dla_groups *g,
		      char *err, size_t len)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 8);
	FILE *fp;
	int fd, ret = 0;

	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, plen + 8, "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	fp = fd < 0 ? NULL : fdopen(fd, "w");
	if (!fp) {
		ret = -errno;
		snprintf(err, len, "%s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(tmp);
		return ret;
	}
	fprintf(fp,
		"# ibqos dla group map: node GUID, group. Written by the dla routing engine\n"
		"# after each sweep whose groups it discovered; delete it to rediscover.\n");
	for (uint32_t k = 0; k < g->ngroups; k++)
		for (uint32_t m = g->first[k]; m < g->first[k + 1]; m++)
			fprintf(fp, "0x%016" PRIx64 " %u\n", f->sw[g->members[m]].guid, k);
	if (fflush(fp) || fsync(fileno(fp)))
		ret = -errno;
	if (fclose(fp) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		snprintf(err, len, "%s: %s", path, strerror(-ret));
		unlink(tmp);
	}
	free(tmp);
	return ret;
}

int dla_groupmap_same(const uint32_t *labels, const struct dla_groups *g, uint32_t nsw)
{
	/* same partition: labels agree exactly where groups agree, checked against each
	 * group's first member */
	for (uint32_t v = 0; v < nsw; v++) {
		uint32_t head = g->members[g->first[g->group_of[v]]];

		if (labels[v] == DLA_NO_GROUP || labels[v] != labels[head])
			return 0;
	}
	for (uint32_t k = 0; k < g->ngroups; k++)
		for (uint32_t j = k + 1; j < g->ngroups; j++)
			if (labels[g->members[g->first[k]]] == labels[g->members[g->first[j]]])
				return 0;
	return 1;
}
