/* crawler/linkmemo: what the links already met on one page came to.
 *
 * A page repeats its links: the Java API docs (openjdk-17-doc) have 111
 * links a page, and 57% of them repeat one met earlier on the same page up
 * to the '#' (a class's own methods, its package, java.lang.Object). Canonicalizing a repeat, checking its scope and
 * asking the seen-set again gives the answer the first occurrence got, so
 * the crawl asks this memo first. The key is what the answer depends on:
 * the link's class, whether a <base> applied (only the first counts, so
 * one per page), and the reference up to its first '#' with a flag for
 * the '#' (url_ref_span says why the rest cannot matter).
 *
 * A fixed table (LINKMEMO_SLOTS slots, two-way set-associative, exact:
 * each slot keeps the span's bytes in the memo's own arena, compared in
 * full on a hash match) that a new page empties in O(1) by bumping a
 * generation. Spans past LINKMEMO_SPAN_MAX bytes, or past what the arena
 * has left, are not kept (they miss, which is only slower). Allocation
 * happens once, in linkmemo_new (72 KiB; the crawl keeps one with each
 * pooled HTML parser). A memo belongs to one page at a time, and the span
 * given to a missing linkmemo_get must stay valid until linkmemo_put. */
#ifndef CRAWLD_LINKMEMO_H
#define CRAWLD_LINKMEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LINKMEMO_SLOTS 1024
#define LINKMEMO_ARENA (48u * 1024u)
#define LINKMEMO_SPAN_MAX 1024u

typedef struct linkmemo linkmemo;

/* NULL: no memory. */
linkmemo *linkmemo_new(void);
void linkmemo_free(linkmemo *m);
/* A new page: every entry is forgotten. */
void linkmemo_reset(linkmemo *m);

/* tag: the key's small part (class, base, fragment flag; < 256).
 * true with *value set when this page met (tag, span) before; false when
 * not, and the memo remembers the key so that linkmemo_put can record
 * its outcome. */
bool linkmemo_get(linkmemo *m, unsigned tag, const char *span, size_t n, uint32_t *value);
/* Records value for the key of the last linkmemo_get that missed (no-op
 * when there was none, or when the span is not kept). */
void linkmemo_put(linkmemo *m, uint32_t value);

#endif
