/* crawler/linkmemo: see linkmemo.h. */
#include "crawler/linkmemo.h"

#include <string.h>

#include "common/alloc.h"
#include "dedup/hash.h"

typedef struct slot {
    uint64_t h;
    uint32_t gen;   /* the page it belongs to; another gen is an empty slot */
    uint32_t value;
    uint32_t off;   /* the span in the arena */
    uint16_t len;
    uint8_t tag;
} slot;

struct linkmemo {
    uint32_t gen;
    uint32_t used;  /* arena bytes this page */
    bool armed;     /* the last get missed and its key can be kept */
    uint64_t miss_h;
    uint32_t miss_set;
    uint8_t miss_tag;
    const char *miss_span;
    size_t miss_len;
    slot s[LINKMEMO_SLOTS];
    char arena[LINKMEMO_ARENA];
};

linkmemo *linkmemo_new(void)
{
    linkmemo *m = cr_calloc(1, sizeof *m);
    if (m != NULL)
        m->gen = 1; /* calloc's slots (gen 0) are empty */
    return m;
}

void linkmemo_free(linkmemo *m)
{
    cr_free(m);
}

void linkmemo_reset(linkmemo *m)
{
    if (++m->gen == 0) { /* wrapped: an old page's slots would look current */
        memset(m->s, 0, sizeof m->s);
        m->gen = 1;
    }
    m->used = 0;
    m->armed = false;
}

static uint64_t key_hash(unsigned tag, const char *span, size_t n)
{
    return hash_digest64(span, n) ^ ((uint64_t)tag * 0x9e3779b97f4a7c15ull);
}

bool linkmemo_get(linkmemo *m, unsigned tag, const char *span, size_t n, uint32_t *value)
{
    m->armed = false;
    if (n > LINKMEMO_SPAN_MAX || tag > 0xff)
        return false;
    uint64_t h = key_hash(tag, span, n);
    uint32_t set = (uint32_t)(h & (LINKMEMO_SLOTS / 2 - 1)) * 2;
    for (int w = 0; w < 2; w++) {
        const slot *e = &m->s[set + w];
        if (e->gen == m->gen && e->h == h && e->tag == tag && e->len == n &&
            memcmp(m->arena + e->off, span, n) == 0) {
            *value = e->value;
            return true;
        }
    }
    m->armed = true;
    m->miss_h = h;
    m->miss_set = set;
    m->miss_tag = (uint8_t)tag;
    m->miss_span = span;
    m->miss_len = n;
    return false;
}

void linkmemo_put(linkmemo *m, uint32_t value)
{
    if (!m->armed)
        return;
    m->armed = false;
    if (m->miss_len > LINKMEMO_ARENA - m->used)
        return;
    slot *a = &m->s[m->miss_set], *b = a + 1;
    /* an empty way first; else the second way goes (the first keeps what
     * came early on the page, which is what pages repeat most: the
     * navigation bar) */
    slot *e = a->gen != m->gen ? a : b;
    if (m->miss_len > 0)
        memcpy(m->arena + m->used, m->miss_span, m->miss_len);
    *e = (slot){ .h = m->miss_h, .gen = m->gen, .value = value, .off = m->used,
                 .len = (uint16_t)m->miss_len, .tag = m->miss_tag };
    m->used += (uint32_t)m->miss_len;
}
