/* tests/fuzz/fuzz_css: libFuzzer target for crawler/web/css.
 *
 * Byte 0 picks the options (caps, declarations mode); the rest is the
 * stylesheet. On any input: every reference is non-empty, valid UTF-8
 * without NUL, no longer than max_url, never a data: URL or a bare
 * fragment; at most max_refs come out and the counters agree with the
 * callback; a second scan gives the same references; and the same bytes
 * inside a comment (when they hold no end of comment) give none.
 * Any violation traps. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crawler/web/css.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            __builtin_trap();                                                                      \
    } while (0)

typedef struct seen {
    size_t max_url;
    uint64_t n, imports;
    uint64_t hash; /* of every reference, in order */
} seen;

static bool valid_utf8(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], need, cp, min;
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            need = 2, cp = c & 0x1F, min = 0x80;
        else if (c >= 0xE0 && c <= 0xEF)
            need = 3, cp = c & 0x0F, min = 0x800;
        else if (c >= 0xF0 && c <= 0xF4)
            need = 4, cp = c & 0x07, min = 0x10000;
        else
            return false;
        if (n - i < need)
            return false;
        for (size_t k = 1; k < need; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += need;
    }
    return true;
}

static void on_ref(void *ud, const css_ref *r)
{
    seen *s = ud;
    CHECK(r->url != NULL && r->len > 0 && strlen(r->url) == r->len);
    CHECK(r->len <= s->max_url);
    CHECK(valid_utf8((const unsigned char *)r->url, r->len));
    CHECK(r->url[0] != '#');
    CHECK(!(r->len >= 5 && strncasecmp(r->url, "data:", 5) == 0));
    CHECK(r->url[0] != ' ' && r->url[r->len - 1] != ' ');
    CHECK(r->kind == CSS_REF_URL || r->kind == CSS_REF_IMPORT);
    s->n++;
    s->imports += r->kind == CSS_REF_IMPORT;
    for (size_t i = 0; i < r->len; i++)
        s->hash = (s->hash ^ (unsigned char)r->url[i]) * 1099511628211ull;
    s->hash = (s->hash ^ (uint64_t)r->kind) * 1099511628211ull;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const size_t max_refs[] = { 0, 1, 3, 50 };
    static const size_t max_url[] = { 0, 1, 8, 64 };
    static const size_t max_bytes[] = { 0, 7, 100, 4096 };
    unsigned sel = data[0];
    css_opts o = { .max_refs = max_refs[sel & 3], .max_url = max_url[(sel >> 2) & 3],
                   .max_bytes = max_bytes[(sel >> 4) & 3], .declarations = (sel >> 6) & 1 };
    const char *css = (const char *)data + 1;
    size_t n = size - 1;
    seen a = { .max_url = o.max_url ? o.max_url : 8192, .hash = 14695981039346656037ull };
    seen b = a;
    css_stats st, st2;
    CHECK(css_scan(css, n, &o, on_ref, &a, &st) == 0);
    CHECK(st.refs == a.n && st.imports == a.imports);
    CHECK(a.n <= (o.max_refs ? o.max_refs : 10000));
    CHECK(st.bytes == n);
    CHECK(st.truncated == (n > (o.max_bytes ? o.max_bytes : (4u << 20)) ? CSS_TRUNC : 0u));
    CHECK(css_scan(css, n, &o, on_ref, &b, &st2) == 0);
    CHECK(a.n == b.n && a.hash == b.hash && memcmp(&st, &st2, sizeof st) == 0);
    if (o.max_bytes == 0 && n < 65536) {
        bool has_end = false;
        for (size_t i = 0; i + 1 < n && !has_end; i++)
            has_end = css[i] == '*' && css[i + 1] == '/';
        if (!has_end) {
            char *wrapped = malloc(n + 4);
            CHECK(wrapped != NULL);
            memcpy(wrapped, "/*", 2);
            memcpy(wrapped + 2, css, n);
            memcpy(wrapped + 2 + n, "*/", 2);
            seen c = { .max_url = a.max_url };
            CHECK(css_scan(wrapped, n + 4, &o, on_ref, &c, &st2) == 0);
            CHECK(c.n == 0);
            free(wrapped);
        }
    }
    return 0;
}
