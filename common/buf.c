/* common/buf: growable, capped, always NUL-terminated byte buffer. */
#include "buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"

void cr_buf_init(cr_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max ? max : SIZE_MAX / 2;
}

void cr_buf_release(cr_buf *b)
{
    cr_free(b->data);
    cr_buf_init(b, b->max);
}

void cr_buf_clear(cr_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static int reserve(cr_buf *b, size_t n)
{
    if (n > b->max - b->len)
        return -E2BIG;
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = cr_realloc(b->data, cap);
    if (p == NULL)
        return -ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int cr_buf_append(cr_buf *b, const void *p, size_t n)
{
    int rc = reserve(b, n);
    if (rc < 0)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int cr_buf_putc(cr_buf *b, char c) { return cr_buf_append(b, &c, 1); }

int cr_buf_puts(cr_buf *b, const char *s) { return cr_buf_append(b, s, strlen(s)); }

int cr_buf_vprintf(cr_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return -EINVAL;
    int rc = reserve(b, (size_t)n);
    if (rc < 0)
        return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int cr_buf_printf(cr_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = cr_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

char *cr_buf_take(cr_buf *b)
{
    if (b->data == NULL && reserve(b, 0) < 0)
        return NULL;
    char *p = b->data;
    cr_buf_init(b, b->max);
    return p;
}
