/* common/alloc: thin wrappers over the C allocator with a failure hook.
 * The hook's counters are atomics so a stray allocation from another thread
 * does not race, but tests that use the hook should be single-threaded. */
#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_long fail_countdown; /* 0: off; n: the nth call fails */
static atomic_long failures;

static int should_fail(void)
{
    long n = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
    if (n == 0)
        return 0;
    if (n > 1) {
        atomic_store_explicit(&fail_countdown, n - 1, memory_order_relaxed);
        return 0;
    }
    atomic_fetch_add(&failures, 1);
    return 1; /* stays at 1: every later call fails too */
}

void cr_alloc_fail_after(long n)
{
    atomic_store(&fail_countdown, n < 0 ? 0 : n);
    atomic_store(&failures, 0);
}

long cr_alloc_failures(void) { return atomic_load(&failures); }

void *cr_malloc(size_t n) { return should_fail() ? NULL : malloc(n ? n : 1); }

void *cr_calloc(size_t count, size_t size)
{
    return should_fail() ? NULL : calloc(count ? count : 1, size ? size : 1);
}

void *cr_realloc(void *p, size_t n) { return should_fail() ? NULL : realloc(p, n ? n : 1); }

char *cr_strndup(const char *s, size_t n)
{
    char *d = cr_malloc(n + 1);
    if (d == NULL)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *cr_strdup(const char *s) { return cr_strndup(s, strlen(s)); }

void cr_free(void *p) { free(p); }
