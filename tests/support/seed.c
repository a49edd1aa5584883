/* tests/support/seed: see seed.h. */
#include "tests/support/seed.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

uint64_t test_seed(const char *env, const char *what)
{
    const char *e = getenv(env);
    uint64_t seed = e ? strtoull(e, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid();
    /* cmocka's print_message writes to stdout as well */
    printf("%s seed %llu (%s=%llu repeats it)\n", what, (unsigned long long)seed, env,
           (unsigned long long)seed);
    fflush(stdout);
    return seed;
}
