/* common/err: one-line error messages into a caller's buffer.
 *
 * Modules that report "why" through a (char *err, size_t errlen) pair write
 * it with cr_errf: printf-style, truncated to errlen, and a no-op when err is
 * NULL or errlen is 0. */
#ifndef CRAWLD_ERR_H
#define CRAWLD_ERR_H

#include <stddef.h>

void cr_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
