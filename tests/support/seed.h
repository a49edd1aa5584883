/* tests/support/seed: the seed of a random test point. From the
 * environment variable named (to replay a failure) or else from the time
 * and pid; printed with the line that repeats it. */
#ifndef CRAWLD_TESTS_SEED_H
#define CRAWLD_TESTS_SEED_H

#include <stdint.h>

/* what: a word for the message ("span", "memo"). */
uint64_t test_seed(const char *env, const char *what);

#endif
