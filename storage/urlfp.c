/* storage/urlfp: see urlfp.h. */
#include "storage/urlfp.h"

#include <string.h>
#include <xxhash.h>

int64_t urlfp(const char *url, size_t len)
{
    uint64_t h = XXH3_64bits(url, len);
    int64_t v;

    memcpy(&v, &h, sizeof v); /* the same bits, as SQLite's signed integer */
    return v;
}
