#ifndef AIRLOCK_CMIMALLOC_SHIM_H
#define AIRLOCK_CMIMALLOC_SHIM_H
/* mimalloc (Debian's libmimalloc, built to override malloc): linked into the process, its
 * malloc, free, realloc and malloc_usable_size take the place of glibc's for every caller
 * (the Swift runtime, libevent, OpenSSL). Airlock calls nothing of it but the functions below:
 * which allocator is in effect, and how soon freed memory goes back (AirlockIO's Allocator). */
#include <stdbool.h>
#include <stdlib.h>
#include <malloc.h>
#include <mimalloc.h>

/* glibc's malloc tuned (mallopt), for a process where another malloc came before mimalloc. */
static inline int airlock_tune_glibc_malloc(int trim_threshold, int mmap_threshold) {
    return mallopt(M_TRIM_THRESHOLD, trim_threshold) && mallopt(M_MMAP_THRESHOLD, mmap_threshold);
}

/* True when malloc itself is mimalloc's: a block from malloc lies in mimalloc's heap. False
 * when glibc's malloc came first in symbol resolution (the library linked but not in effect). */
static inline bool airlock_malloc_is_mimalloc(void) {
    void *p = malloc(16);
    bool ours = p != NULL && mi_is_in_heap_region(p);
    free(p);
    return ours;
}

static inline int airlock_mimalloc_version(void) { return mi_version(); }

/* How long (ms) freed memory stays committed before mimalloc returns it to the kernel. */
static inline long airlock_mimalloc_decommit_delay(void) { return mi_option_get(mi_option_decommit_delay); }

static inline void airlock_mimalloc_set_decommit_delay(long ms) {
    mi_option_set(mi_option_decommit_delay, ms);
    mi_option_set(mi_option_segment_decommit_delay, ms);
}
/* Bytes in blocks allocated in the calling thread's heap (its areas' used blocks times their
 * size): glibc's mallinfo2().uordblks, for the heap tests measure on one thread. */
static bool airlock_mimalloc_add_area(const mi_heap_t *heap, const mi_heap_area_t *area, void *block,
                                      size_t block_size, void *arg) {
    (void)heap; (void)block; (void)block_size;
    *(size_t *)arg += area->used * area->block_size;
    return true;
}

static inline size_t airlock_mimalloc_thread_heap_in_use(void) {
    size_t total = 0;
    mi_heap_visit_blocks(mi_heap_get_default(), false, airlock_mimalloc_add_area, &total);
    return total;
}
#endif
