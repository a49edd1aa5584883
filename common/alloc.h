/* common/alloc: the project's allocator entry points.
 *
 * Every module allocates through these so tests can make the Nth call fail
 * (the out-of-memory paths are tested, as SQLite's test_malloc.c does).
 * They behave exactly like malloc/calloc/realloc/free/strdup otherwise.
 * The failure hook is global and meant for single-threaded tests only. */
#ifndef CRAWLD_ALLOC_H
#define CRAWLD_ALLOC_H

#include <stddef.h>

void *cr_malloc(size_t n);
void *cr_calloc(size_t count, size_t size);
void *cr_realloc(void *p, size_t n);
char *cr_strdup(const char *s);
char *cr_strndup(const char *s, size_t n);
void cr_free(void *p);

/* Test hook: the nth allocation from now (1 = the next one) fails, and every
 * one after it too; 0 turns failures off. */
void cr_alloc_fail_after(long n);
/* Test hook: how many allocations failed because of the hook. */
long cr_alloc_failures(void);

#endif
