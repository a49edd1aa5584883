/* common/striped: see striped.h. */
#include "common/striped.h"

_Thread_local unsigned cr_stripe_tl;
static atomic_uint next_stripe;

unsigned cr_stripe_assign(void)
{
    unsigned s = atomic_fetch_add_explicit(&next_stripe, 1, memory_order_relaxed) % CR_STRIPES;
    cr_stripe_tl = s + 1;
    return s;
}

void cr_striped_init(cr_striped *c)
{
    for (unsigned k = 0; k < CR_STRIPES; k++)
        for (unsigned i = 0; i < CR_STRIPED_MAX; i++)
            atomic_init(&c->s[k].n[i], 0);
}

uint64_t cr_striped_sum(const cr_striped *c, unsigned which)
{
    uint64_t sum = 0;
    for (unsigned k = 0; k < CR_STRIPES; k++)
        sum += atomic_load_explicit(&c->s[k].n[which], memory_order_relaxed);
    return sum;
}
