/* common/striped: counters that many threads bump at once without sharing
 * a cache line. Each thread is given a stripe on first use (round-robin,
 * fixed for its life); an add touches only that stripe, a read sums them.
 * Every total is exact; a read of several counters is not one instant.
 *
 * cr_stripe() alone serves modules that lay their own per-stripe data out
 * (dedup/bloom's per-stage slots); cr_striped is the ready-made set of up
 * to CR_STRIPED_MAX counters (frontier/scope's verdicts). */
#ifndef CRAWLD_COMMON_STRIPED_H
#define CRAWLD_COMMON_STRIPED_H

#include <stdatomic.h>
#include <stdint.h>

#define CR_STRIPES 8        /* a power of two */
#define CR_STRIPED_MAX 16   /* counters in one cr_striped */

/* The calling thread's stripe, 0 .. CR_STRIPES-1. */
extern _Thread_local unsigned cr_stripe_tl; /* 1 + stripe; 0 until first use */
unsigned cr_stripe_assign(void);
static inline unsigned cr_stripe(void)
{
    unsigned s = cr_stripe_tl;
    return s ? s - 1 : cr_stripe_assign();
}

typedef struct cr_striped {
    struct {
        atomic_uint_fast64_t n[CR_STRIPED_MAX];
        char pad[64]; /* the next stripe's counters start on another line */
    } s[CR_STRIPES];
} cr_striped;

/* All counters to 0 (also right for a zeroed cr_striped). */
void cr_striped_init(cr_striped *c);
/* Adds n to counter which (< CR_STRIPED_MAX). Relaxed; any thread. */
static inline void cr_striped_add(cr_striped *c, unsigned which, uint64_t n)
{
    atomic_fetch_add_explicit(&c->s[cr_stripe()].n[which], n, memory_order_relaxed);
}
/* The total of counter which over all stripes. */
uint64_t cr_striped_sum(const cr_striped *c, unsigned which);

#endif
