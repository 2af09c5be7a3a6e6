/*
 * Replacing a file the plugin owns (its record in dump_files_dir, the group map in OpenSM's
 * cache directory) so that a reader sees the old file or the new one, never half of one:
 * written under PATH.tmp, then renamed over PATH. The directory may be one others write to
 * (/var/log, dump_files_dir's default): whatever sits at PATH.tmp (a link, a file an earlier
 * OpenSM left, a hard link to another file) is removed, never written through, and no PATH.tmp
 * of ours is left behind, whether the write succeeds or fails at any step.
 */
#ifndef IBQOS_ATOMIC_H
#define IBQOS_ATOMIC_H

#include <stdio.h>

struct ibqos_atomic {
	FILE *f;
	char *path, *tmp;
	const char *failed; /* after a failure: the file the step failed on (path or tmp) */
};

/* 0 with a->f open for writing, or -errno (a->failed names the file; nothing left behind).
 * ibqos_atomic_free in either case. */
int ibqos_atomic_open(struct ibqos_atomic *a, const char *path);
/* Flush, sync, close and rename over the path: 0, or -errno with PATH.tmp removed. Either way
 * a->f is closed; a->failed stays valid until ibqos_atomic_free. */
int ibqos_atomic_commit(struct ibqos_atomic *a);
void ibqos_atomic_free(struct ibqos_atomic *a);

#endif
