/* crawler/links: streaming link extraction from HTML.
 *
 * Bytes in (in chunks of any size, as the body arrives), links out through a
 * callback, in document order. libxml2's HTML parser does the tokenizing, in
 * push mode with a SAX handler; this module never fetches anything (no
 * network, no DTD, no external entities) and does NOT canonicalize: each link
 * carries the raw attribute value (entity-decoded, as UTF-8, surrounding
 * ASCII whitespace removed), its kind and class, and the document's base as
 * far as it is known; the caller resolves and canonicalizes.
 *
 * Base: only the FIRST <base href> counts (HTML spec), and it applies to the
 * whole document, also to links before it. Streaming, we cannot know it in
 * advance, so every link carries the base seen so far (NULL: none yet, the
 * document URL applies). A caller that wants the spec's answer for links that
 * precede a late <base> collects the page's links and resolves them against
 * links_base() after links_finish(); in practice <base> sits in <head>, before
 * any link. The same holds for <meta name=robots>: read links_robots() after
 * links_finish().
 *
 * CSS: the URLs of <style> elements and style attributes (url(), image-set(),
 * @import, as crawler/web/css finds them) are links too, LINKS_REQUISITE.
 *
 * Charset: a BOM wins, then the charset of the Content-Type header given to
 * links_reset(), then a <meta charset> / <meta http-equiv=content-type> found
 * by the HTML spec's prescan of the first 1024 bytes; otherwise UTF-8, in
 * which a byte that is not valid UTF-8 is read as ISO-8859-1. Labels follow
 * the WHATWG Encoding list; windows-1252 and its aliases (ascii, latin1, ...)
 * are read as ISO-8859-1. Other charsets are converted to UTF-8 with iconv
 * before parsing; a sequence invalid in the charset becomes U+FFFD and is
 * counted. Links always come out as valid UTF-8.
 *
 * Hostile input costs bounded time and memory: every cap below has a default
 * and a counted reason; libxml2 2.9's costs that grow faster than the input
 * (attributes of one tag, unmatched end tags under deep nesting) are cut off
 * by max_attrs and max_depth before libxml2 pays them.
 *
 * Threads: one parser per thread (each fetcher owns one and reuses it per
 * page with links_reset). xmlInitParser() must have run (in main) first.
 * libxml2's own error output is switched off per parser. */
#ifndef CRAWLD_LINKS_H
#define CRAWLD_LINKS_H

#include <stddef.h>
#include <stdint.h>

typedef struct links_parser links_parser;

/* What following a link means, for scope rules. */
typedef enum links_class {
    LINKS_NAVIGATION = 0, /* a, area, frame, iframe, meta refresh, link rel=
                             canonical/alternate/next/prev/... */
    LINKS_REQUISITE = 1,  /* what the page needs to render: img, script,
                             link rel=stylesheet/icon/preload/manifest, source,
                             video, audio, track, embed, object */
    LINKS_OTHER = 2       /* reported, not followed by default: form action,
                             link rel=preconnect/dns-prefetch/pingback/... */
} links_class;

typedef struct links_link {
    const char *kind;     /* a, area, frame, iframe, img, script, source,
                             video, audio, track, embed, object, form,
                             meta-refresh, link:REL (REL: the rel token that
                             names the link's type, lowercase) or link;
                             style (url() or image-set() in a <style>),
                             style-import (@import in a <style>),
                             style-attr (url() in a style attribute) */
    links_class cls;
    int nofollow;         /* rel had the token nofollow (a, area, link) */
    const char *url;      /* raw URL, UTF-8, NUL-terminated, never empty;
                             inner whitespace kept, data: URLs never */
    size_t url_len;
    const char *base;     /* first <base href> so far (raw), or NULL */
    size_t base_len;
} links_link;

/* Called once per link. Every pointer in *l is valid during the call only. */
typedef void (*links_cb)(void *ud, const links_link *l);

/* Every field 0 (or NULL) means its default. */
typedef struct links_opts {
    size_t max_links;     /* links emitted per page (10000); more: dropped */
    size_t max_url;       /* bytes of one URL as UTF-8 (8192, at most 1 MiB);
                             longer: dropped */
    size_t max_bytes;     /* body bytes parsed per page (16 MiB); the rest is
                             ignored, LINKS_TRUNC_BYTES */
    size_t max_depth;     /* elements open in libxml2 (256, as its tree
                             builder); deeper stops the page,
                             LINKS_TRUNC_DEPTH. Without keep_values, elements
                             nothing reads (div, span, ...) are not given to
                             libxml2 inside <body> and do not count */
    size_t max_attrs;     /* attributes in one tag (256); the page ends
                             before a tag with more (all before it is
                             read, as at links_finish), LINKS_TRUNC_ATTRS */
    const char *agent;    /* our robots product token: <meta name=AGENT> is
                             read as <meta name=robots> is; NULL: none. Copied. */
    int keep_values;      /* non-zero: libxml2 gets every attribute value as
                             is; 0: the quoted values of attributes nothing
                             reads, text runs outside the title and, inside
                             <body>, the tags of elements nothing reads are
                             cut where that changes nothing on_start sees
                             (faster; same links, base, title and stats, but
                             for max_depth above and links.c's "Unread tags"
                             on mis-nested markup) */
} links_opts;

/* Why a link was not emitted (links_stats.dropped[]). */
enum links_drop {
    LINKS_DROP_EMPTY = 0, /* empty or whitespace only */
    LINKS_DROP_DATA,      /* a data: URL (nothing to fetch) */
    LINKS_DROP_TOO_LONG,  /* longer than max_url (also a too long <base>) */
    LINKS_DROP_MAX_LINKS, /* past max_links on this page */
    LINKS_DROP_INERT,     /* inside textarea, title, xmp, iframe, noembed,
                             noframes, plaintext: text to a browser */
    LINKS_DROP__COUNT
};

/* Why a page was not parsed to its end (bits of links_stats.truncated). */
enum links_trunc {
    LINKS_TRUNC_BYTES = 1 << 0,  /* more than max_bytes were fed */
    LINKS_TRUNC_DEPTH = 1 << 1,  /* more than max_depth open elements */
    LINKS_TRUNC_ATTRS = 1 << 2,  /* a tag with more than max_attrs attributes */
    LINKS_TRUNC_PARSER = 1 << 3, /* libxml2 stopped by itself (a safety
                                    net: not seen in tests or fuzzing) */
    LINKS_TRUNC_NOMEM = 1 << 4   /* libxml2 could not allocate its context */
};

/* <meta name=robots content=...> (and name=AGENT), any case, union over all
 * such tags: none = noindex + nofollow. */
enum links_robots {
    LINKS_ROBOTS_NOINDEX = 1 << 0,
    LINKS_ROBOTS_NOFOLLOW = 1 << 1,
    LINKS_ROBOTS_NOARCHIVE = 1 << 2
};

/* Where the charset came from. */
enum links_enc_source {
    LINKS_ENC_DEFAULT = 0, /* nothing declared (or unknown label): UTF-8 */
    LINKS_ENC_BOM,
    LINKS_ENC_HEADER,
    LINKS_ENC_META
};

/* Per page; links_reset() zeroes it. */
typedef struct links_stats {
    uint64_t bytes;        /* body bytes fed, also those ignored */
    uint64_t emitted;      /* links given to the callback */
    uint64_t dropped[LINKS_DROP__COUNT];
    uint64_t nul_bytes;    /* NUL characters in the body, read as U+FFFD */
    uint64_t invalid;      /* sequences invalid in the page's charset (not
                              UTF-8: see above), read as U+FFFD */
    unsigned truncated;    /* LINKS_TRUNC_* bits; 0: parsed to the end */
    int enc_source;        /* LINKS_ENC_* */
    const char *encoding;  /* charset used, e.g. "UTF-8"; static string;
                              NULL until the first bytes are parsed */
    uint64_t styles;       /* <style> elements and style attributes scanned
                              for URLs (crawler/web/css) */
    uint64_t style_dropped; /* references css dropped in them (data:, bad
                              url, ... see css.h), and <style> text past
                              4 MiB (counted once per element) */
    uint64_t elided;       /* bytes of unread attribute values libxml2 was
                              not given (0 with keep_values) */
    uint64_t elided_text;  /* bytes of unread text between tags libxml2 was
                              not given (0 with keep_values) */
    uint64_t elided_tags;  /* bytes of tags of elements nothing reads that
                              libxml2 was not given (0 with keep_values) */
    uint64_t tokens;       /* read attribute values libxml2 got as 3-byte
                              tokens, their bytes put back for on_start
                              (links.c, "Read values as tokens"; 0 with
                              keep_values) */
    uint64_t token_bytes;  /* the bytes of those values */
    uint64_t tokens_expanded; /* tokens put back before libxml2 got them
                              (the page has a raw 0x01 byte) */
    uint64_t tokens_pinned; /* blocks after which libxml2 still held some */
    uint64_t cuts;         /* a digest of the stream offsets where libxml2's
                              pieces of the page end (links.c, the cut before
                              '<'): the same whatever the chunks fed, and with
                              or without keep_values unless tags went (a
                              dropped tag's '<' is no place to cut) */
    unsigned tags_unsure;  /* 1: tags went and then the markup was such that
                              libxml2 might have closed other elements had
                              they not: an end tag inside a text-only
                              element (textarea, iframe, ...), one after the
                              shortener stopped, a second <body/>; links
                              after it may count as inert (and the title end)
                              in one reading and not in the other (links.c,
                              "Unread tags"); also: a page with a raw 0x01
                              byte while libxml2 held tokens ("Read values
                              as tokens"), where a value of exactly 0x01
                              and two letters might be read as one */
} links_stats;

/* A parser ready for a first page (as after links_reset(p, NULL)). cb may not
 * be NULL. Caller owns the result; free with links_free(). NULL only when
 * memory runs out. */
links_parser *links_new(const links_opts *o, links_cb cb, void *ud);
void links_free(links_parser *p);

/* Starts a new page: forgets the previous one (its base, robots flags and
 * stats). content_type is the response's Content-Type header value or NULL;
 * only its charset parameter is used. */
void links_reset(links_parser *p, const char *content_type);

/* Parses the next len bytes of the body. Links come out (through the
 * callback, from inside this call) as libxml2 reaches them: it gets the body
 * in 16 KiB blocks, so a link may wait for later feeds or links_finish.
 * 0, -EFBIG when max_bytes is passed (the bytes past it are ignored; call
 * links_finish as usual), -ENOMEM when libxml2 could not set up, -EINVAL
 * after links_finish. Once a cap stops the page, more input is only counted. */
int links_feed(links_parser *p, const char *chunk, size_t len);

/* End of the body: parses what libxml2 still held back (an unclosed tag at
 * the end still yields its links). 0, -ENOMEM, -EINVAL if already finished. */
int links_finish(links_parser *p);

/* The first <base href> (raw, NUL-terminated), or NULL if there was none
 * (or it was empty or too long: the document URL is the base). *len (OUT, may be NULL) gets its length. Valid until the
 * next links_reset. */
const char *links_base(const links_parser *p, size_t *len);
/* The text of the page's first <title> (entity-decoded, runs of whitespace
 * as one space, trimmed, cut at LINKS_TITLE_MAX bytes on a character
 * boundary), NUL-terminated; "" for an empty one, NULL when the page had
 * none (so far). *len (OUT, may be NULL). Valid until the next links_reset. */
#define LINKS_TITLE_MAX 1024
const char *links_title(links_parser *p, size_t *len);
/* LINKS_ROBOTS_* bits seen so far on this page. */
unsigned links_robots(const links_parser *p);
void links_stats_get(const links_parser *p, links_stats *out /* OUT */);

/* Short names for reports: "empty", "data", "too_long", "max_links", "inert";
 * "bytes", "depth", "attrs", "parser", "nomem" for one trunc bit;
 * "?" for anything else. */
const char *links_drop_name(int reason);
const char *links_trunc_name(unsigned bit);
/* "navigation", "requisite", "other". */
const char *links_class_name(links_class c);

#endif
