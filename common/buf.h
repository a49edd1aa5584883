/* common/buf: a growable byte buffer with a hard cap.
 *
 * Every buffer that grows from outside input has a cap: an append that would
 * pass it fails with -E2BIG and leaves the buffer as it was. The data is
 * always NUL-terminated (the NUL is not counted in len). Embedded in its
 * owner: cr_buf_init / cr_buf_release. */
#ifndef CRAWLD_BUF_H
#define CRAWLD_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct cr_buf {
    char *data;   /* NULL until the first append */
    size_t len;
    size_t cap;   /* allocated bytes */
    size_t max;   /* cap on len; 0 means SIZE_MAX/2 */
} cr_buf;

void cr_buf_init(cr_buf *b, size_t max);
void cr_buf_release(cr_buf *b);
void cr_buf_clear(cr_buf *b); /* len = 0, memory kept */
/* 0, -ENOMEM, or -E2BIG when len would pass max. */
int cr_buf_append(cr_buf *b, const void *p, size_t n);
int cr_buf_putc(cr_buf *b, char c);
int cr_buf_puts(cr_buf *b, const char *s);
int cr_buf_printf(cr_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int cr_buf_vprintf(cr_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Caller owns the result (free with cr_free); the buffer is left empty.
 * Never NULL for an empty buffer unless memory runs out. */
char *cr_buf_take(cr_buf *b);

#endif
