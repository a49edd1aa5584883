/* tests/fuzz/fuzz_links: libFuzzer target for crawler/links.
 *
 * Input: byte 0 picks the Content-Type charset and the caps, byte 1 seeds
 * the chunk sizes, the rest is the page. The page is parsed whole and in
 * chunks, and whole with links_opts.keep_values flipped (unread attribute
 * values, text and tags cut or not); all must give the same links (digest),
 * stats, base, title and robots flags (flipped: unless links_stats says the
 * readings may part, tags_unsure or the depth once tags went). Every link must
 * hold the module's promises: valid UTF-8, no NUL, not empty, not longer
 * than max_url, no surrounding ASCII whitespace. Any breach aborts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>

#include "crawler/web/links.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct sink {
    uint64_t digest;
    size_t max_url;
    size_t count;
} sink;

static int utf8_ok(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t len = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                                   : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        if (len == 0 || n - i < len)
            return 0;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
        if (len == 3 && c == 0xE0 && s[i + 1] < 0xA0)
            return 0;
        if (len == 3 && c == 0xED && s[i + 1] >= 0xA0)
            return 0;
        if (len == 4 && c == 0xF0 && s[i + 1] < 0x90)
            return 0;
        if (len == 4 && c == 0xF4 && s[i + 1] >= 0x90)
            return 0;
        i += len;
    }
    return 1;
}

static int ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }

static void mix(sink *s, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        s->digest = (s->digest ^ b[i]) * 1099511628211ULL;
}

static void on_link(void *ud, const links_link *l)
{
    sink *s = ud;
    const unsigned char *u = (const unsigned char *)l->url;
    if (l->url_len == 0 || l->url_len > s->max_url || strlen(l->url) != l->url_len ||
        !utf8_ok(u, l->url_len) || ws(u[0]) || ws(u[l->url_len - 1]) || l->kind[0] == '\0')
        abort();
    if (l->base != NULL && (strlen(l->base) != l->base_len || !utf8_ok((const unsigned char *)l->base, l->base_len)))
        abort();
    mix(s, l->kind, strlen(l->kind) + 1);
    mix(s, l->url, l->url_len + 1);
    mix(s, &l->cls, sizeof l->cls);
    mix(s, &l->nofollow, sizeof l->nofollow);
    if (l->base != NULL)
        mix(s, l->base, l->base_len);
    s->count++;
}

typedef struct page_end {
    links_stats st;
    uint64_t base, title; /* digests; 0: none */
    unsigned robots;
} page_end;

static uint64_t digest_of(const char *s, size_t n)
{
    sink d = {.digest = 14695981039346656037ULL};
    mix(&d, s, n);
    return d.digest | 1;
}

static void parse(const links_opts *o, const char *ct, const uint8_t *page, size_t n,
                  unsigned seed, sink *s, page_end *pe)
{
    links_stats *st = &pe->st;
    memset(s, 0, sizeof *s);
    s->max_url = o->max_url ? o->max_url : 8192;
    links_parser *p = links_new(o, on_link, s);
    if (p == NULL)
        abort();
    links_reset(p, ct);
    size_t off = 0;
    uint32_t r = seed * 2654435761u + 1;
    while (off < n) {
        size_t k = n - off;
        if (seed != 0) {
            r = r * 1103515245u + 12345u;
            size_t c = 1 + (r >> 16) % (seed % 64 + 1);
            if (c < k)
                k = c;
        }
        links_feed(p, (const char *)page + off, k);
        off += k;
    }
    if (links_finish(p) != 0)
        abort();
    links_stats_get(p, st);
    if (st->emitted != s->count)
        abort();
    size_t len;
    const char *b = links_base(p, &len);
    pe->base = b != NULL ? digest_of(b, len) : 0;
    const char *t = links_title(p, &len);
    pe->title = t != NULL ? digest_of(t, len) : 0;
    pe->robots = links_robots(p);
    if (o->keep_values && (st->elided != 0 || st->elided_text != 0 || st->elided_tags != 0 ||
                           st->tags_unsure != 0))
        abort();
    links_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    if (!init) {
        xmlInitParser();
        init = 1;
    }
    if (size < 2)
        return 0;
    static const char *const cts[] = {NULL, "text/html; charset=utf-8", "text/html; charset=latin1",
                                      "text/html; charset=shift_jis", "text/html; charset=utf-16",
                                      "text/html; charset=gb18030", "text/html", "text/html; charset=iso-2022-jp"};
    const char *ct = cts[data[0] & 7];
    links_opts o = {0};
    if (data[0] & 8) {
        o.max_links = 5;
        o.max_url = 16;
        o.max_depth = 12;
        o.max_attrs = 4;
        o.agent = "crawld";
    }
    if (data[0] & 16)
        o.max_bytes = size / 2 + 1;
    unsigned seed = data[1] ? data[1] : 1;
    o.keep_values = (data[0] & 32) != 0;
    sink a, b, c;
    page_end ea, eb, ec;
    parse(&o, ct, data + 2, size - 2, 0, &a, &ea);
    parse(&o, ct, data + 2, size - 2, seed, &b, &eb);
    o.keep_values = !o.keep_values;
    parse(&o, ct, data + 2, size - 2, 0, &c, &ec);
    const page_end *es[] = {&eb, &ec};
    const sink *ss[] = {&b, &c};
    for (int k = 0; k < 2; k++) {
        const links_stats *sa = &ea.st, *sb = &es[k]->st;
        /* keep_values flipped: the two readings may part only where
         * links.h says (tags_unsure; the depth, once tags went) */
        if (k == 1 && (sa->tags_unsure || sb->tags_unsure ||
                       (((sa->truncated | sb->truncated) & LINKS_TRUNC_DEPTH) &&
                        (sa->elided_tags | sb->elided_tags) != 0)))
            continue;
        if (a.digest != ss[k]->digest || a.count != ss[k]->count ||
            sa->truncated != sb->truncated ||
            memcmp(sa->dropped, sb->dropped, sizeof sa->dropped) != 0 ||
            sa->invalid != sb->invalid || sa->nul_bytes != sb->nul_bytes ||
            sa->styles != sb->styles || sa->style_dropped != sb->style_dropped ||
            (sa->cuts != sb->cuts && (k == 0 || (sa->elided_tags | sb->elided_tags) == 0)) ||
            ea.base != es[k]->base || ea.title != es[k]->title || ea.robots != es[k]->robots)
            abort();
    }
    if (ea.st.elided != eb.st.elided || ea.st.elided_text != eb.st.elided_text ||
        ea.st.elided_tags != eb.st.elided_tags || ea.st.tags_unsure != eb.st.tags_unsure)
        abort(); /* chunking changes nothing either */
    return 0;
}
