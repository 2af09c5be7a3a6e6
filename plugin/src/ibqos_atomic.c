/* Replacing a file by rename: ibqos_atomic.h. */
#define _POSIX_C_SOURCE 200809L
#include "ibqos_atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ibqos_atomic_open(struct ibqos_atomic *a, const char *path)
{
	size_t n = strlen(path) + sizeof(".tmp");
	int fd, err;

	memset(a, 0, sizeof(*a));
	a->path = strdup(path);
	a->tmp = malloc(n);
	if (!a->path || !a->tmp) {
		a->failed = path;
		return -ENOMEM;
	}
	snprintf(a->tmp, n, "%s.tmp", path);
	a->failed = a->tmp;
	/* O_TRUNC on what is there would write through a hard link, O_NOFOLLOW alone fails on a
	 * link for ever: remove it, then create a file of our own */
	if (unlink(a->tmp) && errno != ENOENT)
		return -errno;
	fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	a->f = fdopen(fd, "w");
	if (!a->f) {
		err = errno;
		close(fd);
		unlink(a->tmp);
		return -err;
	}
	a->failed = NULL;
	return 0;
}

int ibqos_atomic_commit(struct ibqos_atomic *a)
{
	int err = 0;

	if (ferror(a->f))
		err = EIO;
	if ((fflush(a->f) || fsync(fileno(a->f))) && !err)
		err = errno;
	if (fclose(a->f) && !err)
		err = errno;
	a->f = NULL;
	a->failed = a->tmp;
	if (!err && rename(a->tmp, a->path)) {
		err = errno;
		a->failed = a->path;
	}
	if (err) {
		unlink(a->tmp);
		return -err;
	}
	a->failed = NULL;
	return 0;
}

void ibqos_atomic_free(struct ibqos_atomic *a)
{
	if (a->f) {
		fclose(a->f);
		unlink(a->tmp);
	}
	free(a->path);
	free(a->tmp);
	memset(a, 0, sizeof(*a));
}
