/* crawler/web/ascii: ASCII byte helpers the HTML-side parsers of
 * crawler/web share (links.c, charset.c): the HTML spec's whitespace,
 * letters, lowercasing, case-insensitive compare with a lowercase literal,
 * trimming. Locale-independent on purpose; header only. */
#ifndef CRAWLD_ASCII_H
#define CRAWLD_ASCII_H

#include <stdbool.h>
#include <stddef.h>

static inline bool is_ws(unsigned char c) /* ASCII whitespace, HTML spec */
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

static inline bool is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline unsigned char lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

/* a[0..n) equals the lowercase literal lit, ASCII case-insensitively */
static inline bool ieq_n(const char *a, size_t n, const char *lit)
{
    size_t i = 0;
    for (; i < n && lit[i]; i++)
        if (lower((unsigned char)a[i]) != (unsigned char)lit[i])
            return false;
    return i == n && lit[i] == '\0';
}

static inline void trim(const char **s, size_t *n)
{
    while (*n > 0 && is_ws((unsigned char)**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && is_ws((unsigned char)(*s)[*n - 1]))
        (*n)--;
}

#endif
