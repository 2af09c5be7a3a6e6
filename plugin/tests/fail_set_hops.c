/* A test shim (LD_PRELOAD with libumad2sim.so): OpenSM 3.3.23's osm_switch_set_hops fails once,
 * out of memory, on its Nth allocation of a hop row (N from IBQOS_TEST_FAIL_SET_HOPS), as when
 * the heap is exhausted while the dla plugin writes the rows (plugin/tests/test_dla_out_of_memory.py).
 *
 * The function itself cannot be replaced: /usr/sbin/opensm defines and exports it, and the
 * executable comes before every preload in the lookup of the plugin's symbols. Its malloc of a
 * missing row goes to the C library, which a preload does come before: malloc fails for the
 * one call whose caller lies in osm_switch_set_hops, and every other call, N's included in any
 * other function, goes through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t size);

static uintptr_t set_hops_lo, set_hops_hi;
static long fail_at;
static atomic_long row_mallocs;

/* Before main: the executable's symbols are mapped; dlsym's own allocations reach malloc
 * below with the range still empty. */
__attribute__((constructor)) static void find_set_hops(void)
{
	const char *at = getenv("IBQOS_TEST_FAIL_SET_HOPS");
	void *fn;
	Dl_info info;
	const ElfW(Sym) *sym = NULL;

	if (!at || !(fn = dlsym(RTLD_DEFAULT, "osm_switch_set_hops")))
		return;
	if (!dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return;
	fail_at = atol(at);
	set_hops_lo = (uintptr_t)fn;
	set_hops_hi = set_hops_lo + sym->st_size;
}

void *malloc(size_t size)
{
	uintptr_t caller = (uintptr_t)__builtin_return_address(0);

	if (caller >= set_hops_lo && caller < set_hops_hi &&
	    atomic_fetch_add(&row_mallocs, 1) + 1 == fail_at) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(size);
}
