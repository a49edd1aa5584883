/* crawler/links: link extraction on libxml2's HTML push parser (SAX).
 *
 * Pipeline for one page, all in the caller's thread:
 *
 *   links_feed -> [cap max_bytes] -> [sniff: hold the first 1024 bytes]
 *     -> decide the charset once: BOM, header, <meta> prescan, else UTF-8
 *        (charset.c)
 *     -> to UTF-8: as is / ISO-8859-1 by hand / iconv (invalid -> U+FFFD)
 *     -> push_utf8() / fused_scan(): tag guard, NUL -> U+FFFD, and in
 *        the same pass attributes nothing reads removed (or their values
 *        cut to one byte), text runs nothing reads cut to one byte and,
 *        inside <body>, tags of elements nothing reads removed, unless
 *        keep_values; see "Unread attribute values", "Unread text",
 *        "Unread tags"
 *     -> blk_put(): 16 KiB blocks -> htmlParseChunk()
 *     -> on_start() (SAX startElement) -> emit() -> caller's callback
 *
 * libxml2 2.9 notes that shaped this (each checked by a test):
 * - The push parser does not sniff a BOM, and with no declared charset it
 *   reads the first non-ASCII byte as ISO-8859-1 for the whole page; a
 *   <meta charset> after that byte is ignored, an encoding switch in the
 *   middle of a page garbles a character, and a byte its iconv converter
 *   rejects ends the page. So we decide the charset ourselves before the
 *   first byte reaches libxml2 (the HTML spec's sniffing, with the prescan
 *   of the first 1024 bytes), convert to UTF-8 ourselves, and libxml2 reads
 *   UTF-8 through its pass-through handler with HTML_PARSE_IGNORE_ENC.
 *   Undeclared pages are read as UTF-8; there libxml2 takes a byte that is
 *   not valid UTF-8 as ISO-8859-1 and goes on, so output is always UTF-8.
 * - The push parser's result depends on where the input is cut (e.g.
 *   "<!-->" ends a comment or not), so libxml2 always gets the UTF-8
 *   stream cut at the same places, whatever the chunks the caller feeds:
 *   the links never depend on the network's chunking. A block of BLOCK
 *   bytes is cut before its last '<' in its second half (the rest starts
 *   the next block), a function of the stream alone (the unshortened
 *   stream: shortening values moves no cut; dropping a tag may, see
 *   "Unread tags"). Why: when a block
 *   ends inside a quoted attribute value, 2.9's start-tag lookahead
 *   (htmlParseLookupSequence with ignoreattrval) resumes without the
 *   quote character, never finds the tag's end, and libxml2 buffers the
 *   whole rest of the page until the last call: measured on the
 *   openjdk-17-doc pages, 10 of 507 sampled held 150-730 KB each at the
 *   end (the 6 MB ones: all of it). Cut before a '<', nothing is held
 *   back (the same 507 pages: none), libxml2's buffer stays within about
 *   a block, and the links are the same.
 * - HTML_PARSE_NOIMPLIED is NOT used: without the implied <html>/<body> the
 *   push parser stops at the end of the first top-level element.
 *   HTML_PARSE_NOBLANKS / COMPACT only matter when building a tree.
 * - A NUL byte ends an attribute value inside libxml2 (the rest is lost), so
 *   NUL becomes U+FFFD before parsing, as in a browser, and is counted.
 * - Two costs grow faster than the input: htmlParseStartTag compares each
 *   attribute name with all earlier ones of the tag (n^2 per tag), and an
 *   unmatched end tag scans the whole element stack (depth per end tag).
 *   max_depth is checked on every start tag. For attributes, a small guard
 *   automaton runs over every byte before libxml2 sees it: it follows
 *   htmlParseStartTag's attribute syntax from every '<' + name start (in
 *   any context, so it cannot be fooled by comments, scripts or quotes:
 *   all those readings run at once, merged per state, keeping the largest
 *   count), and stops the page before a tag with more than max_attrs
 *   attributes is handed over.
 * - libxml2's error reports go to a no-op per parser (structured handler on
 *   the context), and around every libxml2 call the thread's generic and
 *   structured handlers are swapped for no-ops, then restored.
 *
 * Memory: the parser allocates its buffers once in links_new; the libxml2
 * context (and an iconv descriptor) is created per page, when the charset is
 * known, and freed at the next reset. libxml2's own buffers hold at most
 * what it has not parsed yet: about a block (see the cut above), at worst
 * (a page whose blocks hold no '<' to cut at) bounded by max_bytes. */
#include "links.h"

#include <errno.h>
#include <iconv.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include <libxml/HTMLparser.h>
#include <libxml/encoding.h>
#include <libxml/globals.h>
#include <libxml/parserInternals.h>
#include <libxml/xmlerror.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "crawler/web/ascii.h"
#include "crawler/web/charset.h"
#include "crawler/web/css.h"

#define DEF_MAX_LINKS 10000
#define DEF_MAX_URL 8192
#define MAX_MAX_URL (1u << 20)
#define DEF_MAX_BYTES (16u << 20)
#define DEF_MAX_DEPTH 256
#define DEF_MAX_ATTRS 256
#define KIND_MAX 40     /* "link:" + a rel token of at most 32 bytes */
#define REL_TOKEN_MAX 32
#define BLOCK 16384     /* libxml2 gets blocks of at most this size, cut as
                           blk_cut says */
#define STYLE_MAX (4u << 20) /* bytes of one <style> element scanned for URLs */
/* libxml2 reads at most 100 bytes as one name (HTML_PARSER_BUFFER_SIZE);
 * the guard assumes a longer run may start a new name every 64 bytes. */
#define GUARD_NAME_SPLIT 64
#define SH_NAME_MAX 64  /* a longer name: the shortener stops (libxml2 cuts
                           names at 100) */
#define SH_NAME_KEEP 12 /* longest name compared: "imagesrcset" */
#define SH_TMAX 2048    /* values and text runs shortened per block, at most */
#define TOK_MIN 8       /* a read value shorter than this goes as it is */
#define TOK_MAX 2048    /* tokens live at once (12 bits of index: 4096) */
#define TOK_ARENA (BLOCK + TOK_MAX) /* their values, each NUL-terminated: a
                           block's stream holds at most BLOCK bytes of them */

_Static_assert((int)CHARSET_FROM_DEFAULT == LINKS_ENC_DEFAULT && (int)CHARSET_FROM_BOM == LINKS_ENC_BOM &&
                   (int)CHARSET_FROM_HEADER == LINKS_ENC_HEADER && (int)CHARSET_FROM_META == LINKS_ENC_META,
               "links_stats.enc_source carries charset_source values");

/* ---- the parser ------------------------------------------------------------ */

/* Elements whose content a browser reads as text (inert_container). */
enum { N_INERT = 7 };

/* Guard automaton states: htmlParseStartTag's attribute syntax. */
enum gstate { G_TNAME, G_BEFORE, G_ANAME, G_AFTERNAME, G_BEFOREVAL, G_DQ, G_SQ,
              G_UVAL, G_BOGUS, G_N };

struct links_parser {
    /* options, fixed */
    size_t max_links, max_url, max_bytes, max_depth, max_attrs;
    char *agent;                /* NULL or our product token */
    links_cb cb;
    void *ud;
    char *url;                  /* scratch: 2 * max_url + 1 */
    char *base;                 /* 2 * max_url + 1 */

    /* the page */
    htmlParserCtxtPtr ctxt;     /* NULL until the charset is decided */
    bool finished;
    bool stopped;               /* libxml2 gets no more input */
    charset_mode mode;
    char header_label[CHARSET_LABEL_MAX]; /* charset of the Content-Type, or "" */
    size_t fed;                 /* bytes accepted under max_bytes */
    unsigned char sniff[CHARSET_SNIFF_MAX];
    size_t sniff_len;
    iconv_t cd;                 /* CHARSET_ICONV: to UTF-8; else (iconv_t)-1 */
    unsigned char carry[8];     /* CHARSET_ICONV: an incomplete sequence */
    size_t carry_len;
    size_t unit;                /* CHARSET_ICONV: bytes skipped on an error */
    bool base_seen;
    size_t base_len;
    bool base_ok;
    unsigned robots;
    links_stats st;
    int inert_depth;            /* >0: links under nameTab[inert_depth-1] are text */
    const xmlChar *inert_name;
    bool inert;                 /* for the element being handled */

    /* unread attribute values (see "Unread attribute values") */
    bool keep_values;           /* option: never shorten */
    uint8_t sh;                 /* SH_*: how libxml2 reads the stream here */
    uint8_t sh_t;               /* in a start tag: its G_* state */
    uint8_t sh_raw;             /* the tag being read is script (1) / style (2) */
    uint8_t sh_k;               /* characters of a keyword matched */
    size_t sh_nlen;             /* length of the tag or attribute name so far */
    char sh_name[SH_NAME_KEEP]; /* its first bytes, lowercase */
    bool sh_vok;                /* the attribute being read is one nobody reads */
    bool sh_vtok;               /* ... is one read: its value may go as a token */
    bool sh_tmeta;              /* the start tag being read is meta (libxml2
                                   reads its attributes itself) */
    bool sh_vutf8;              /* the open value has non-ASCII bytes */
    unsigned char sh_last;      /* the last byte given to sh_put */
    size_t sh_vstart;           /* blk offset of the open value's first byte,
                                   SIZE_MAX: it is not to be shortened */
    size_t sh_aorig;            /* stream offset in the block of the name of
                                   the attribute being read */
    unsigned sh_aflush;         /* blk_flushes when that name began */
    bool sh_bare;               /* the tag's last token is a name without a value */
    bool sh_abare;              /* sh_bare when that name began */
    size_t sh_astart;           /* blk offset of that name while its value is
                                   open, SIZE_MAX: not in this block */
    size_t sh_tn;               /* values shortened in the block (sh_tpos/td) */
    uint16_t sh_tpos[SH_TMAX];  /* blk offset of each one's kept byte */
    uint16_t sh_td[SH_TMAX];    /* bytes it lost */
    uint8_t sh_tx;              /* TX_*: may the text be cut (see "Unread text") */
    bool sh_thtml;              /* the start tag being read is html */
    uint64_t sh_s0;             /* stream offset of the scan's s[0] */
    uint64_t sh_ttext;          /* stream offset of the open text run's first
                                   byte, UINT64_MAX: none to cut */
    /* unread tags (see "Unread tags") */
    uint8_t sh_drop;            /* DROP_*: may a tag go whole here */
    bool sh_tdrop;              /* the tag being read goes whole at its '>' */
    bool sh_tbody;              /* the start tag being read is body */
    bool sh_thead;              /* ... is head */
    uint32_t sh_inert_n[N_INERT]; /* start tags of each text-only element
                                   handed over, less its end tags (at least 0) */
    uint32_t sh_inert_open;     /* their sum: 0, none of them can be open */
    uint64_t sh_lt;             /* stream offset of the tag's '<' */
    uint64_t sh_ltcut;          /* sh_cutb then */
    unsigned sh_ltflush;        /* blk_flushes then */
    uint64_t sh_cutb;           /* blk bytes cut on the page so far */
    bool sh_offdrop;            /* the shortener stopped after tags went */

    /* read values handed over as tokens (see "Read values as tokens") */
    bool tok_on;                /* new tokens may be made on this page */
    uint64_t tok_soh;           /* stream offset of the page's first raw 0x01
                                   byte, UINT64_MAX: none so far */
    size_t tok_n;               /* entries live: 0..tok_n-1 */
    size_t tok_lo;              /* entries below it went to libxml2, which may
                                   hold them still (pinned) */
    size_t tok_dec;             /* during htmlParseChunk: indexes on_start decodes */
    size_t tok_used;            /* arena bytes used */
    uint16_t tok_off[TOK_MAX];  /* blk offset of each entry's token (>= tok_lo) */
    uint16_t tok_aoff[TOK_MAX]; /* its value's arena offset */
    uint16_t tok_len[TOK_MAX];  /* and length */
    char tok_arena[TOK_ARENA];
    unsigned char *xblk;        /* NULL until a block must go with its tokens
                                   expanded (tok_expand): 2 * BLOCK */
    const xmlChar **tok_atts;   /* on_start's attributes, tokens decoded */
    size_t tok_atts_cap;
    bool sh_style_end;          /* a <style> ended since the last start tag */

    /* tag guard */
    uint32_t g_cnt[G_N];
    unsigned g_mask;            /* active states */
    bool g_lt;                  /* the previous char was '<' */
    size_t g_run;               /* length of the current name-char run */

    /* CSS inside the page and the title (see "CSS and the title") */
    cr_buf style;               /* the open <style> element's text so far */
    bool in_style;
    bool style_cut;             /* it passed STYLE_MAX */
    int title_state;            /* 0 none yet, 1 in the first <title>, 2 done */
    bool title_space;           /* whitespace pending in the title */
    char title[LINKS_TITLE_MAX + 1];
    size_t title_len;

    char kind[KIND_MAX];
    uint64_t blk_total;         /* stream bytes that reached blk (or were elided) */
    size_t blk_len;             /* bytes in blk */
    size_t blk_orig;            /* stream bytes they stand for (>= blk_len) */
    size_t blk_half;            /* blk offset of stream offset BLOCK / 2, or
                                   SIZE_MAX while the block is shorter */
    unsigned blk_flushes;       /* blocks given to libxml2 (wraps) */
    unsigned char blk[BLOCK];
};

/* ---- small helpers ------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s[0..n), 0 if there is none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t min, cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, min = 0x80, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, min = 0x800, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, min = 0x10000, cp = c & 0x07;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* Length of the run of ASCII bytes at s[0..n): 8 bytes at a time. */
static size_t ascii_run(const unsigned char *s, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ULL)
            break;
    }
    while (i < n && s[i] < 0x80)
        i++;
    return i;
}

/* Copies s[0..n) to out (room for 2n + 1) as valid UTF-8, NUL-terminated:
 * a byte that starts no valid sequence is read as ISO-8859-1, as libxml2
 * reads it everywhere but in entity names, whose bytes it passes through.
 * ASCII runs go in one memcpy each (see "measured" in start_page).
 * Returns the length written. */
static size_t utf8_copy(char *out, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < n) {
        size_t r = ascii_run(u + i, n - i);
        memcpy(out + o, u + i, r);
        o += r;
        i += r;
        if (i >= n)
            break;
        size_t k = utf8_seq(u + i, n - i);
        if (k > 0) {
            memcpy(out + o, u + i, k);
            o += k;
            i += k;
        } else {
            out[o++] = (char)(0xC0 | (u[i] >> 6));
            out[o++] = (char)(0x80 | (u[i] & 0x3F));
            i++;
        }
    }
    out[o] = '\0';
    return o;
}

/* ---- libxml2 error silencing --------------------------------------------- */

static void silent_generic(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

static void silent_structured(void *ctx, xmlErrorPtr err)
{
    (void)ctx;
    (void)err;
}

typedef struct quiet {
    xmlGenericErrorFunc gen;
    void *gen_ctx;
    xmlStructuredErrorFunc st;
    void *st_ctx;
} quiet;

static void quiet_begin(quiet *q)
{
    q->gen = xmlGenericError;
    q->gen_ctx = xmlGenericErrorContext;
    q->st = xmlStructuredError;
    q->st_ctx = xmlStructuredErrorContext;
    xmlSetGenericErrorFunc(NULL, silent_generic);
    xmlSetStructuredErrorFunc(NULL, NULL);
}

static void quiet_end(const quiet *q)
{
    xmlSetGenericErrorFunc(q->gen_ctx, q->gen);
    xmlSetStructuredErrorFunc(q->st_ctx, q->st);
}

/* ---- emitting ------------------------------------------------------------- */

static void drop(links_parser *p, int reason) { p->st.dropped[reason]++; }

/* One candidate URL (bytes v, n, from an attribute). */
static void emit(links_parser *p, const char *kind, links_class cls, int nofollow,
                 const char *v, size_t n)
{
    trim(&v, &n);
    if (p->inert) {
        drop(p, LINKS_DROP_INERT);
        return;
    }
    if (n == 0) {
        drop(p, LINKS_DROP_EMPTY);
        return;
    }
    if (n >= 5 && ieq_n(v, 5, "data:")) {
        drop(p, LINKS_DROP_DATA);
        return;
    }
    if (n > p->max_url) {
        drop(p, LINKS_DROP_TOO_LONG);
        return;
    }
    n = utf8_copy(p->url, v, n);
    if (n > p->max_url) {
        drop(p, LINKS_DROP_TOO_LONG);
        return;
    }
    if (p->st.emitted >= p->max_links) {
        drop(p, LINKS_DROP_MAX_LINKS);
        return;
    }
    links_link l = {
        .kind = kind,
        .cls = cls,
        .nofollow = nofollow,
        .url = p->url,
        .url_len = n,
        .base = p->base_ok ? p->base : NULL,
        .base_len = p->base_ok ? p->base_len : 0,
    };
    p->st.emitted++;
    p->cb(p->ud, &l);
}

static void emit_attr(links_parser *p, const char *kind, links_class cls, int nofollow,
                      const char *v)
{
    if (v != NULL)
        emit(p, kind, cls, nofollow, v, strlen(v));
}

/* srcset (HTML spec, "parse a srcset attribute"): candidates separated by
 * commas; a candidate is a URL (a run of non-whitespace, trailing commas
 * removed) then optional descriptors up to a comma outside parentheses.
 * Every candidate's URL is emitted; descriptors are not validated (a
 * browser would skip a candidate with bad descriptors, but the URL is still
 * one the site serves). */
static void emit_srcset(links_parser *p, const char *kind, links_class cls, const char *s)
{
    if (s == NULL)
        return;
    size_t n = strlen(s), i = 0;
    for (;;) {
        while (i < n && (is_ws((unsigned char)s[i]) || s[i] == ','))
            i++;
        if (i >= n)
            return;
        size_t start = i;
        while (i < n && !is_ws((unsigned char)s[i]))
            i++;
        size_t end = i;
        if (s[end - 1] == ',') {
            while (end > start && s[end - 1] == ',')
                end--;
            emit(p, kind, cls, 0, s + start, end - start);
            continue;
        }
        emit(p, kind, cls, 0, s + start, end - start);
        bool paren = false;
        for (; i < n; i++) {
            if (s[i] == '(') {
                paren = true;
            } else if (s[i] == ')') {
                paren = false;
            } else if (s[i] == ',' && !paren) {
                i++;
                break;
            }
        }
    }
}

/* <meta http-equiv=refresh content="5; url=...">: the HTML spec's
 * "shared declarative refresh steps". No URL (refresh to self) or no
 * leading time: no link. Every meta refresh is emitted, not only the
 * first one a browser would obey. */
static void meta_refresh(links_parser *p, const char *s)
{
    size_t n = strlen(s), i = 0;
    while (i < n && is_ws((unsigned char)s[i]))
        i++;
    size_t digits = i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i == digits && !(i < n && s[i] == '.'))
        return;
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.'))
        i++;
    if (i < n) {
        if (s[i] != ';' && s[i] != ',' && !is_ws((unsigned char)s[i]))
            return;
        while (i < n && is_ws((unsigned char)s[i]))
            i++;
        if (i < n && (s[i] == ';' || s[i] == ','))
            i++;
        while (i < n && is_ws((unsigned char)s[i]))
            i++;
    }
    if (i >= n)
        return;
    size_t url = i; /* urlString if the "url=" prefix is incomplete */
    if (lower((unsigned char)s[i]) == 'u') {
        i++;
        if (i >= n || lower((unsigned char)s[i]) != 'r')
            goto parse;
        i++;
        if (i >= n || lower((unsigned char)s[i]) != 'l')
            goto parse;
        i++;
        while (i < n && is_ws((unsigned char)s[i]))
            i++;
        if (i >= n || s[i] != '=')
            goto parse;
        i++;
        while (i < n && is_ws((unsigned char)s[i]))
            i++;
    }
    /* skip quotes */
    char quote = 0;
    if (i < n && (s[i] == '"' || s[i] == '\'')) {
        quote = s[i];
        i++;
    }
    size_t end = n;
    if (quote) {
        const char *q = memchr(s + i, quote, n - i);
        if (q != NULL)
            end = (size_t)(q - s);
    }
    emit(p, "meta-refresh", LINKS_NAVIGATION, 0, s + i, end - i);
    return;
parse:
    emit(p, "meta-refresh", LINKS_NAVIGATION, 0, s + url, n - url);
}

/* content="noindex, nofollow": tokens split on commas and whitespace. */
static void meta_robots(links_parser *p, const char *s)
{
    size_t n = strlen(s), i = 0;
    while (i < n) {
        while (i < n && (s[i] == ',' || is_ws((unsigned char)s[i])))
            i++;
        size_t t = i;
        while (i < n && s[i] != ',' && !is_ws((unsigned char)s[i]))
            i++;
        size_t len = i - t;
        if (ieq_n(s + t, len, "noindex"))
            p->robots |= LINKS_ROBOTS_NOINDEX;
        else if (ieq_n(s + t, len, "nofollow"))
            p->robots |= LINKS_ROBOTS_NOFOLLOW;
        else if (ieq_n(s + t, len, "none"))
            p->robots |= LINKS_ROBOTS_NOINDEX | LINKS_ROBOTS_NOFOLLOW;
        else if (ieq_n(s + t, len, "noarchive"))
            p->robots |= LINKS_ROBOTS_NOARCHIVE;
    }
}

/* ---- rel ------------------------------------------------------------------ */

/* The class of a <link> by its rel token (HTML's link types, the HTML 4
 * navigation ones, common icon and preload ones); anything else is OTHER:
 * preconnect, dns-prefetch, prefetch, prerender, pingback, EditURI, me... */
static const struct rel_class {
    const char *rel;
    links_class cls;
} rel_classes[] = {
    {"alternate", LINKS_NAVIGATION}, {"amphtml", LINKS_NAVIGATION},
    {"archives", LINKS_NAVIGATION},  {"author", LINKS_NAVIGATION},
    {"canonical", LINKS_NAVIGATION}, {"first", LINKS_NAVIGATION},
    {"help", LINKS_NAVIGATION},      {"home", LINKS_NAVIGATION},
    {"index", LINKS_NAVIGATION},     {"last", LINKS_NAVIGATION},
    {"license", LINKS_NAVIGATION},   {"next", LINKS_NAVIGATION},
    {"prev", LINKS_NAVIGATION},      {"previous", LINKS_NAVIGATION},
    {"shortlink", LINKS_NAVIGATION}, {"start", LINKS_NAVIGATION},
    {"up", LINKS_NAVIGATION},        {"search", LINKS_NAVIGATION},
    {"copyright", LINKS_NAVIGATION}, {"glossary", LINKS_NAVIGATION},
    {"contents", LINKS_NAVIGATION},  {"toc", LINKS_NAVIGATION},
    {"chapter", LINKS_NAVIGATION},   {"section", LINKS_NAVIGATION},
    {"subsection", LINKS_NAVIGATION}, {"appendix", LINKS_NAVIGATION},
    {"bookmark", LINKS_NAVIGATION},
    {"apple-touch-icon", LINKS_REQUISITE}, {"apple-touch-icon-precomposed", LINKS_REQUISITE},
    {"apple-touch-startup-image", LINKS_REQUISITE}, {"fluid-icon", LINKS_REQUISITE},
    {"icon", LINKS_REQUISITE},       {"manifest", LINKS_REQUISITE},
    {"mask-icon", LINKS_REQUISITE},  {"modulepreload", LINKS_REQUISITE},
    {"preload", LINKS_REQUISITE},    {"stylesheet", LINKS_REQUISITE},
};

/* Tokens that qualify a link rather than name its type. */
static bool rel_modifier(const char *t, size_t n)
{
    static const char *const mods[] = {"nofollow", "noopener", "noreferrer", "opener",
                                       "external", "shortcut", "ugc", "sponsored"};
    for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++)
        if (ieq_n(t, n, mods[i]))
            return true;
    return false;
}

static bool rel_token_ok(const char *t, size_t n)
{
    if (n == 0 || n > REL_TOKEN_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = lower((unsigned char)t[i]);
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-' || c == ':'))
            return false;
    }
    return true;
}

/* Reads rel: *nofollow (OUT); for <link>, builds p->kind and *cls (OUT):
 * "link:stylesheet" if stylesheet is among the tokens (so "alternate
 * stylesheet" is a stylesheet), else "link:" + the first token that is not
 * a modifier ("shortcut icon" -> link:icon); "link" (OTHER) if none. One
 * link per element, not one per token. */
static void rel_parse(links_parser *p, const char *rel, bool for_link, int *nofollow,
                      links_class *cls)
{
    *nofollow = 0;
    const char *first = NULL;
    size_t first_len = 0;
    bool stylesheet = false;
    size_t n = rel ? strlen(rel) : 0, i = 0;
    while (i < n) {
        while (i < n && is_ws((unsigned char)rel[i]))
            i++;
        size_t t = i;
        while (i < n && !is_ws((unsigned char)rel[i]))
            i++;
        size_t len = i - t;
        if (len == 0)
            break;
        if (ieq_n(rel + t, len, "nofollow"))
            *nofollow = 1;
        if (ieq_n(rel + t, len, "stylesheet"))
            stylesheet = true;
        if (first == NULL && !rel_modifier(rel + t, len)) {
            first = rel + t;
            first_len = len;
        }
    }
    if (!for_link)
        return;
    if (stylesheet) {
        first = "stylesheet";
        first_len = 10;
    }
    if (first == NULL || !rel_token_ok(first, first_len)) {
        memcpy(p->kind, "link", 5);
        *cls = LINKS_OTHER;
        return;
    }
    memcpy(p->kind, "link:", 5);
    for (size_t k = 0; k < first_len; k++)
        p->kind[5 + k] = (char)lower((unsigned char)first[k]);
    p->kind[5 + first_len] = '\0';
    *cls = LINKS_OTHER;
    for (size_t k = 0; k < sizeof rel_classes / sizeof rel_classes[0]; k++) {
        if (strcmp(rel_classes[k].rel, p->kind + 5) == 0) {
            *cls = rel_classes[k].cls;
            break;
        }
    }
}

/* ---- SAX ------------------------------------------------------------------ */

static void stop(links_parser *p, unsigned why)
{
    p->st.truncated |= why;
    if (!p->stopped && p->ctxt != NULL)
        xmlStopParser(p->ctxt);
    p->stopped = true;
}

/* Value of attribute name ("" for one without a value), or NULL. libxml2
 * gives lowercase names and keeps the first of duplicated attributes. */
static const char *attr(const xmlChar **atts, const char *name)
{
    if (atts == NULL)
        return NULL;
    for (size_t i = 0; atts[i] != NULL; i += 2)
        if (strcmp((const char *)atts[i], name) == 0)
            return atts[i + 1] ? (const char *)atts[i + 1] : "";
    return NULL;
}

static bool name_is(const xmlChar *name, const char *lit)
{
    return strcmp((const char *)name, lit) == 0;
}

/* Elements whose content a browser reads as text (RCDATA, RAWTEXT,
 * plaintext); libxml2 parses it as markup (it only knows script and style
 * as raw text). Links inside are counted as LINKS_DROP_INERT. */
static bool inert_container(const xmlChar *name)
{
    switch (name[0]) { /* one compare or none per start tag */
    case 't':
        return name_is(name, "textarea") || name_is(name, "title");
    case 'x':
        return name_is(name, "xmp");
    case 'i':
        return name_is(name, "iframe");
    case 'n':
        return name_is(name, "noembed") || name_is(name, "noframes");
    case 'p':
        return name_is(name, "plaintext");
    default:
        return false;
    }
}

static void on_meta(links_parser *p, const xmlChar **atts)
{
    const char *content = attr(atts, "content");
    if (content == NULL)
        return;
    const char *equiv = attr(atts, "http-equiv");
    if (equiv != NULL) {
        size_t n = strlen(equiv);
        trim(&equiv, &n);
        if (ieq_n(equiv, n, "refresh"))
            meta_refresh(p, content);
    }
    const char *name = attr(atts, "name");
    if (name != NULL) {
        size_t n = strlen(name);
        trim(&name, &n);
        if (ieq_n(name, n, "robots") ||
            (p->agent != NULL && n == strlen(p->agent) && ieq_n(name, n, p->agent)))
            meta_robots(p, content);
    }
}

static void on_base(links_parser *p, const xmlChar **atts)
{
    const char *href = attr(atts, "href");
    if (p->base_seen || href == NULL)
        return;
    p->base_seen = true; /* the first <base href> wins, even if unusable */
    size_t n = strlen(href);
    trim(&href, &n);
    if (n > p->max_url) {
        drop(p, LINKS_DROP_TOO_LONG);
        return;
    }
    if (n == 0)
        return; /* the document URL stays the base */
    n = utf8_copy(p->base, href, n);
    if (n > p->max_url) {
        drop(p, LINKS_DROP_TOO_LONG);
        return;
    }
    p->base_len = n;
    p->base_ok = true;
}

/* ---- CSS and the title ---------------------------------------------------- */

/* CSS inside the page: a <style> element's text (libxml2 hands it over in
 * pieces through cdataBlock, with the element still open) is gathered and
 * scanned once the element ends, which we notice at the next start tag, at
 * the first text outside it, or at the end of the page; a style attribute
 * is scanned at its tag (only when it has a '(': every reference needs
 * one). Their references are requisites like an img's, resolved against
 * the page's base. */

typedef struct css_emit {
    links_parser *p;
    const char *kind, *import_kind;
} css_emit;

static void on_css_ref(void *ud, const css_ref *r)
{
    css_emit *e = ud;
    emit(e->p, r->kind == CSS_REF_IMPORT ? e->import_kind : e->kind, LINKS_REQUISITE, 0, r->url,
         r->len);
}

static void scan_css(links_parser *p, const char *s, size_t n, bool attr_value)
{
    css_emit e = { p, attr_value ? "style-attr" : "style", "style-import" };
    css_opts o = { .max_url = p->max_url, .declarations = attr_value };
    css_stats st;
    p->st.styles++;
    if (css_scan(s, n, &o, on_css_ref, &e, &st) < 0) {
        p->st.style_dropped++;
        return;
    }
    for (int k = 0; k < CSS_DROP__COUNT; k++)
        p->st.style_dropped += st.dropped[k];
}

/* The <style> element being gathered has ended: scan it. */
static void style_end(links_parser *p)
{
    if (!p->in_style)
        return;
    p->in_style = false;
    if (p->style_cut)
        p->st.style_dropped++; /* what is past STYLE_MAX is not read */
    if (p->style.len > 0)
        scan_css(p, p->style.data, p->style.len, false);
    cr_buf_clear(&p->style);
    p->style_cut = false;
}

static void on_cdata(void *ud, const xmlChar *text, int len)
{
    links_parser *p = ud;
    htmlParserCtxtPtr c = p->ctxt;
    if (p->stopped || len <= 0 || c == NULL || c->name == NULL || !name_is(c->name, "style"))
        return;
    if (!p->in_style) {
        p->in_style = true;
        if (p->inert) { /* a <style> in textarea and the like is text */
            p->in_style = false;
            return;
        }
    }
    if (p->style_cut)
        return;
    if (cr_buf_append(&p->style, text, (size_t)len) < 0) {
        size_t room = STYLE_MAX > p->style.len ? STYLE_MAX - p->style.len : 0;
        if (room > 0 && cr_buf_append(&p->style, text, room < (size_t)len ? room : (size_t)len) < 0)
            room = 0;
        p->style_cut = true;
    }
}

/* Appends title text (UTF-8 from libxml2), whitespace runs as one space;
 * at LINKS_TITLE_MAX the title ends before the character that does not fit. */
static void title_put(links_parser *p, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && p->title_state == 1) {
        unsigned char ch = (unsigned char)s[i];
        if (is_ws(ch)) {
            p->title_space = p->title_len > 0;
            i++;
            continue;
        }
        size_t k = ch < 0xC0 ? 1 : ch < 0xE0 ? 2 : ch < 0xF0 ? 3 : 4;
        if (k > n - i)
            k = n - i;
        size_t need = k + (p->title_space ? 1 : 0);
        if (p->title_len + need > LINKS_TITLE_MAX) {
            p->title_state = 2;
            return;
        }
        if (p->title_space)
            p->title[p->title_len++] = ' ';
        p->title_space = false;
        memcpy(p->title + p->title_len, s + i, k);
        p->title_len += k;
        i += k;
    }
}

/* Text of the page: only the first <title>'s is kept. */
static void on_chars(void *ud, const xmlChar *text, int len)
{
    links_parser *p = ud;
    htmlParserCtxtPtr c = p->ctxt;
    if (p->in_style)
        style_end(p);
    if (p->title_state != 1 || len <= 0)
        return;
    if (c == NULL || c->name == NULL || !name_is(c->name, "title")) {
        p->title_state = 2;
        return;
    }
    title_put(p, (const char *)text, (size_t)len);
}

/* Called for every start tag, before its links. */
static void css_and_title_at_tag(links_parser *p, const xmlChar *name, const xmlChar **atts)
{
    if (p->in_style)
        style_end(p);
    if (p->title_state == 1)
        p->title_state = 2;
    if (p->title_state == 0 && name[0] == 't' && name_is(name, "title"))
        p->title_state = 1;
    if (atts == NULL)
        return;
    for (size_t i = 0; atts[i] != NULL; i += 2) {
        const char *v = (const char *)atts[i + 1];
        if (atts[i][0] != 's' || v == NULL || strcmp((const char *)atts[i], "style") != 0)
            continue;
        if (p->inert)
            break;
        if (strchr(v, '(') != NULL)
            scan_css(p, v, strlen(v), true);
        break; /* libxml2 keeps the first of duplicated attributes */
    }
}

static const xmlChar **tok_decode(links_parser *p, const xmlChar **atts);

static void on_start(void *ud, const xmlChar *name, const xmlChar **atts)
{
    links_parser *p = ud;
    htmlParserCtxtPtr c = p->ctxt;
    if (p->stopped)
        return;
    if ((size_t)c->nameNr > p->max_depth) {
        stop(p, LINKS_TRUNC_DEPTH);
        return;
    }
    if (p->tok_dec > 0 && atts != NULL && (atts = tok_decode(p, atts)) == NULL)
        return;
    p->inert = false;
    if (p->inert_depth > 0) {
        if (c->nameNr >= p->inert_depth &&
            xmlStrEqual(c->nameTab[p->inert_depth - 1], p->inert_name))
            p->inert = true;
        else
            p->inert_depth = 0;
    }
    css_and_title_at_tag(p, name, atts);
    int nofollow;
    links_class cls;
    switch (name[0]) {
    case 'a':
        if (name_is(name, "a") || name_is(name, "area")) {
            const char *href = attr(atts, "href");
            if (href != NULL) {
                rel_parse(p, attr(atts, "rel"), false, &nofollow, &cls);
                emit_attr(p, name[1] ? "area" : "a", LINKS_NAVIGATION, nofollow, href);
            }
        } else if (name_is(name, "audio")) {
            emit_attr(p, "audio", LINKS_REQUISITE, 0, attr(atts, "src"));
        }
        break;
    case 'b':
        if (name_is(name, "base") && !p->inert)
            on_base(p, atts);
        break;
    case 'e':
        if (name_is(name, "embed"))
            emit_attr(p, "embed", LINKS_REQUISITE, 0, attr(atts, "src"));
        break;
    case 'f':
        if (name_is(name, "frame"))
            emit_attr(p, "frame", LINKS_NAVIGATION, 0, attr(atts, "src"));
        else if (name_is(name, "form"))
            emit_attr(p, "form", LINKS_OTHER, 0, attr(atts, "action"));
        break;
    case 'i':
        if (name_is(name, "img")) {
            emit_attr(p, "img", LINKS_REQUISITE, 0, attr(atts, "src"));
            emit_srcset(p, "img", LINKS_REQUISITE, attr(atts, "srcset"));
        } else if (name_is(name, "iframe")) {
            emit_attr(p, "iframe", LINKS_NAVIGATION, 0, attr(atts, "src"));
        }
        break;
    case 'l':
        if (name_is(name, "link")) {
            const char *href = attr(atts, "href");
            const char *set = attr(atts, "imagesrcset");
            if (href == NULL && set == NULL)
                break;
            rel_parse(p, attr(atts, "rel"), true, &nofollow, &cls);
            emit_attr(p, p->kind, cls, nofollow, href);
            emit_srcset(p, p->kind, cls, set);
        }
        break;
    case 'm':
        if (name_is(name, "meta") && !p->inert)
            on_meta(p, atts);
        break;
    case 'o':
        if (name_is(name, "object"))
            emit_attr(p, "object", LINKS_REQUISITE, 0, attr(atts, "data"));
        break;
    case 's':
        if (name_is(name, "script")) {
            emit_attr(p, "script", LINKS_REQUISITE, 0, attr(atts, "src"));
        } else if (name_is(name, "source")) {
            emit_attr(p, "source", LINKS_REQUISITE, 0, attr(atts, "src"));
            emit_srcset(p, "source", LINKS_REQUISITE, attr(atts, "srcset"));
        }
        break;
    case 't':
        if (name_is(name, "track"))
            emit_attr(p, "track", LINKS_REQUISITE, 0, attr(atts, "src"));
        break;
    case 'v':
        if (name_is(name, "video")) {
            emit_attr(p, "video", LINKS_REQUISITE, 0, attr(atts, "src"));
            emit_attr(p, "video", LINKS_REQUISITE, 0, attr(atts, "poster"));
        }
        break;
    default:
        break;
    }
    if (p->sh_offdrop && inert_container(name))
        p->st.tags_unsure = 1; /* see "Unread tags" */
    if (p->inert_depth == 0 && inert_container(name)) {
        p->inert_depth = c->nameNr;
        p->inert_name = c->nameTab[c->nameNr - 1];
    }
}

/* ---- the tag guard -------------------------------------------------------- */

/* Character classes of libxml2's start-tag syntax, for c < 0x100. */
enum { C_BLANK = 1, C_NAMESTART = 2, C_NAMECHAR = 4 };
#define NS (C_NAMESTART | C_NAMECHAR)
static const unsigned char gclass[256] = {
    ['\t'] = C_BLANK, ['\n'] = C_BLANK, ['\r'] = C_BLANK, [' '] = C_BLANK, /* no \f */
    ['-'] = C_NAMECHAR, ['.'] = NS, [':'] = NS, ['_'] = NS,
    ['0'] = C_NAMECHAR, ['1'] = C_NAMECHAR, ['2'] = C_NAMECHAR, ['3'] = C_NAMECHAR,
    ['4'] = C_NAMECHAR, ['5'] = C_NAMECHAR, ['6'] = C_NAMECHAR, ['7'] = C_NAMECHAR,
    ['8'] = C_NAMECHAR, ['9'] = C_NAMECHAR,
    ['A'] = NS, ['B'] = NS, ['C'] = NS, ['D'] = NS, ['E'] = NS, ['F'] = NS, ['G'] = NS,
    ['H'] = NS, ['I'] = NS, ['J'] = NS, ['K'] = NS, ['L'] = NS, ['M'] = NS, ['N'] = NS,
    ['O'] = NS, ['P'] = NS, ['Q'] = NS, ['R'] = NS, ['S'] = NS, ['T'] = NS, ['U'] = NS,
    ['V'] = NS, ['W'] = NS, ['X'] = NS, ['Y'] = NS, ['Z'] = NS,
    ['a'] = NS, ['b'] = NS, ['c'] = NS, ['d'] = NS, ['e'] = NS, ['f'] = NS, ['g'] = NS,
    ['h'] = NS, ['i'] = NS, ['j'] = NS, ['k'] = NS, ['l'] = NS, ['m'] = NS, ['n'] = NS,
    ['o'] = NS, ['p'] = NS, ['q'] = NS, ['r'] = NS, ['s'] = NS, ['t'] = NS, ['u'] = NS,
    ['v'] = NS, ['w'] = NS, ['x'] = NS, ['y'] = NS, ['z'] = NS,
};
#undef NS

static bool g_blank(unsigned c) { return gclass[c & 0xFF] & C_BLANK; } /* IS_BLANK_CH */
static bool g_namestart(unsigned c) { return gclass[c & 0xFF] & C_NAMESTART; }
static bool g_namechar(unsigned c) { return gclass[c & 0xFF] & C_NAMECHAR; }

/* One step of one reading; -1 when its tag ends. *k counts attributes. */
static int g_step(int s, unsigned c, uint32_t *k)
{
    for (;;) {
        switch (s) {
        case G_TNAME:
            if (g_namechar(c))
                return G_TNAME;
            s = G_BEFORE;
            continue;
        case G_BEFORE:
            if (g_blank(c))
                return G_BEFORE;
            if (c == '>')
                return -1;
            if (g_namestart(c)) {
                (*k)++;
                return G_ANAME;
            }
            return G_BOGUS;
        case G_ANAME:
            if (g_namechar(c))
                return G_ANAME;
            s = G_AFTERNAME;
            continue;
        case G_AFTERNAME:
            if (g_blank(c))
                return G_AFTERNAME;
            if (c == '=')
                return G_BEFOREVAL;
            s = G_BEFORE;
            continue;
        case G_BEFOREVAL:
            if (g_blank(c))
                return G_BEFOREVAL;
            if (c == '"')
                return G_DQ;
            if (c == '\'')
                return G_SQ;
            if (c == '>')
                return -1;
            return G_UVAL;
        case G_DQ:
            return c == '"' ? G_BEFORE : G_DQ;
        case G_SQ:
            return c == '\'' ? G_BEFORE : G_SQ;
        default: /* G_UVAL, G_BOGUS */
            if (g_blank(c))
                return G_BEFORE;
            if (c == '>')
                return -1;
            return s;
        }
    }
}

/* Feeds one character (ASCII, or 0x80 for any other) to every reading;
 * false when some tag would get more than max_attrs attributes. */
static bool guard_char(links_parser *p, unsigned c)
{
    bool namec = g_namechar(c);
    p->g_run = namec ? p->g_run + 1 : 0;
    unsigned mask = p->g_mask, nmask = 0;
    uint32_t worst = 0;
    if (mask != 0) {
        bool split = namec && p->g_run > 1 && (p->g_run - 1) % GUARD_NAME_SPLIT == 0;
        uint32_t ncnt[G_N];
        while (mask != 0) {
            int s = __builtin_ctz(mask);
            mask &= mask - 1;
            uint32_t k = p->g_cnt[s];
            int t;
            if (split && (s == G_TNAME || s == G_ANAME)) {
                k++; /* libxml2 cuts a long name: the rest is a new name */
                t = G_ANAME;
            } else {
                t = g_step(s, c, &k);
            }
            if (t < 0)
                continue;
            if (!(nmask & (1u << t)) || ncnt[t] < k)
                ncnt[t] = k;
            nmask |= 1u << t;
            if (k > worst)
                worst = k;
        }
        for (mask = nmask; mask != 0; mask &= mask - 1) {
            int s = __builtin_ctz(mask);
            p->g_cnt[s] = ncnt[s];
        }
    }
    if (p->g_lt && g_namestart(c)) { /* a tag may start here */
        if (!(nmask & (1u << G_TNAME)))
            p->g_cnt[G_TNAME] = 0;
        nmask |= 1u << G_TNAME;
    }
    p->g_lt = c == '<';
    p->g_mask = nmask;
    return worst <= p->max_attrs;
}

/* With one reading active and no '<' just before: runs it from s[i], as
 * guard_char would char by char but skipping in bulk what cannot change its
 * state, up to a '<' or NUL (guard_char handles those: a tag may start
 * there), the end of its tag or of the input. Returns where it stopped;
 * *over (OUT): at that byte the tag got more than max_attrs attributes. */
static size_t guard_run1(links_parser *p, const unsigned char *s, size_t i, size_t n,
                         bool *over)
{
    int st = __builtin_ctz(p->g_mask);
    uint32_t k = p->g_cnt[st];
    size_t run = p->g_run;
    *over = false;
    while (i < n) {
        switch (st) {
        case G_DQ:
        case G_SQ: {
            unsigned char q = st == G_DQ ? '"' : '\'';
            while (i < n && s[i] != q && s[i] != '<' && s[i] != 0)
                i++;
            run = 0;
            break;
        }
        case G_UVAL:
        case G_BOGUS:
            while (i < n && !g_blank(s[i]) && s[i] != '>' && s[i] != '<' && s[i] != 0)
                i++;
            run = 0;
            break;
        case G_TNAME:
        case G_ANAME: {
            /* libxml2 cuts a name every GUARD_NAME_SPLIT characters of a
             * run: a cut at the character that makes the run r, for every
             * r > 1 with (r - 1) % GUARD_NAME_SPLIT == 0 */
            size_t j = i;
            while (j < n && g_namechar(s[j]))
                j++;
            size_t cut = (run - 1) / GUARD_NAME_SPLIT; /* cuts so far; run >= 1 */
            size_t cuts = (run + (j - i) - 1) / GUARD_NAME_SPLIT - cut;
            if (cuts > 0) {
                if (cuts > p->max_attrs - k) { /* where the count passes the cap */
                    size_t r = (cut + (p->max_attrs - k) + 1) * GUARD_NAME_SPLIT + 1;
                    *over = true;
                    return i + (r - run - 1);
                }
                k += (uint32_t)cuts;
                st = G_ANAME;
            }
            run += j - i;
            i = j;
            break;
        }
        default: /* G_BEFORE, G_AFTERNAME, G_BEFOREVAL */
            while (i < n && g_blank(s[i]))
                i++;
            run = 0;
            break;
        }
        if (i >= n)
            break;
        unsigned c = s[i];
        if (c == '<' || c == 0)
            break;
        if (c >= 0x80)
            c = 0x80;
        run = g_namechar(c) ? run + 1 : 0; /* a name's first char: no cut */
        st = g_step(st, c, &k);
        if (k > p->max_attrs) {
            *over = true;
            return i;
        }
        i++;
        if (st < 0) { /* the tag ended */
            p->g_mask = 0;
            p->g_run = run;
            p->g_lt = false;
            return i;
        }
    }
    p->g_mask = 1u << st;
    p->g_cnt[st] = k;
    p->g_run = run;
    p->g_lt = false;
    return i;
}

/* Runs the guard over the UTF-8 s[0..n): returns how many bytes are safe,
 * n if all; stops early at a NUL byte too (*nul, OUT). */
static size_t guard_scan(links_parser *p, const unsigned char *s, size_t n, bool *nul)
{
    size_t i = 0;
    *nul = false;
    while (i < n) {
        unsigned m = p->g_mask;
        if (!p->g_lt && m == 0) { /* text: to the next '<' */
            const unsigned char *lt = memchr(s + i, '<', n - i);
            size_t end = lt != NULL ? (size_t)(lt - s) : n;
            const unsigned char *z = memchr(s + i, 0, end - i);
            i = z != NULL ? (size_t)(z - s) : end;
        } else if (!p->g_lt && (m & (m - 1)) == 0) {
            bool over;
            i = guard_run1(p, s, i, n, &over);
            if (over)
                return i;
        }
        if (i >= n)
            break;
        unsigned char c = s[i];
        if (c == 0) {
            *nul = true;
            return i;
        }
        if (!guard_char(p, c < 0x80 ? c : 0x80))
            return i;
        i++;
    }
    return n;
}

/* ---- read values as tokens ------------------------------------------------
 *
 * libxml2 copies each attribute value it gives on_start a character at a
 * time (htmlParseHTMLAttribute: htmlCurrentChar and xmlNextChar per byte
 * into a 100-byte buffer grown by realloc). The values something reads
 * (href, src, ...) are most of what it still copies once unread ones are
 * cut ("Unread attribute values"): on the openjdk-17-doc pages that loop
 * was about 10% of the crawl's CPU. So a read value that the shortener
 * could cut (quoted, in a start tag it is sure of, no < > & " ', valid
 * UTF-8, in one block), at least TOK_MIN bytes long and not in a <meta>
 * (libxml2 reads charset, content and http-equiv there itself), goes to
 * libxml2 as a 3-byte token: 0x01 and two letters of tok_alpha, the index
 * of an entry holding its bytes. libxml2 gives such a value back as it
 * got it, and on_start puts the entry's bytes back (tok_decode) before
 * anything reads the attributes: the same value libxml2 would have given.
 *
 * A raw 0x01 byte in a value could look like a token. So no token is made
 * for a value that ends past the page's first raw 0x01 (push_utf8 finds
 * it: memchr, before any byte of its piece reaches blk), and a block that
 * reaches that byte goes with its tokens expanded (tok_expand). Both are
 * decided by stream offsets, so how the page was chunked changes nothing.
 * Entries live until libxml2 has parsed their bytes: after the
 * htmlParseChunk of their block, the entries of the rest of it are
 * renumbered to the front (their tokens rewritten in blk). When libxml2
 * keeps unparsed bytes that hold tokens (its lookahead has not found a
 * tag's end), every entry stays (pinned: tok_lo) until it keeps none, and
 * new ones follow them. The one case this cannot make exact, tokens still
 * in libxml2's buffer on a page with a raw 0x01, sets st.tags_unsure. */

static const char tok_alpha[65] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int tok_digit(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '-' ? 62 : c == '_' ? 63 : -1;
}

static void tok_name(unsigned char *at, size_t k)
{
    at[1] = (unsigned char)tok_alpha[k >> 6];
    at[2] = (unsigned char)tok_alpha[k & 63];
}

/* blk is cut to keep bytes: the tokens past it go with them. */
static void tok_cut(links_parser *p, size_t keep)
{
    while (p->tok_n > p->tok_lo && p->tok_off[p->tok_n - 1] >= keep) {
        p->tok_n--;
        p->tok_used = p->tok_aoff[p->tok_n];
    }
}

/* blk[0..n) with the tokens of entries tok_lo..h-1 (all in it) put back,
 * in xblk: at most the block's stream bytes, so at most BLOCK. */
static const unsigned char *tok_expand(links_parser *p, size_t n, size_t h, size_t *len)
{
    if (p->xblk == NULL && (p->xblk = cr_malloc(2 * BLOCK)) == NULL)
        return NULL;
    size_t o = 0, at = 0;
    for (size_t k = p->tok_lo; k < h; k++) {
        size_t off = p->tok_off[k], l = p->tok_len[k];
        memcpy(p->xblk + o, p->blk + at, off - at);
        o += off - at;
        memcpy(p->xblk + o, p->tok_arena + p->tok_aoff[k], l);
        o += l;
        at = off + 3;
    }
    memcpy(p->xblk + o, p->blk + at, n - at);
    *len = o + (n - at);
    p->st.tokens_expanded += h - p->tok_lo;
    return p->xblk;
}

/* After blk_flush gave blk[0..n) (entries below h) to libxml2 and moved
 * the rest to the front of blk: pinned (libxml2 holds some of them), the
 * entries stay as they are; else those below h go and the rest are
 * renumbered from 0. */
static void tok_flushed(links_parser *p, size_t n, size_t h, bool pin)
{
    if (pin) {
        for (size_t k = h; k < p->tok_n; k++)
            p->tok_off[k] = (uint16_t)(p->tok_off[k] - n);
        p->tok_lo = h;
        p->st.tokens_pinned++;
        return;
    }
    size_t m = p->tok_n - h, a0 = m > 0 ? p->tok_aoff[h] : p->tok_used;
    memmove(p->tok_arena, p->tok_arena + a0, p->tok_used - a0);
    for (size_t k = 0; k < m; k++) {
        p->tok_off[k] = (uint16_t)(p->tok_off[h + k] - n);
        p->tok_aoff[k] = (uint16_t)(p->tok_aoff[h + k] - a0);
        p->tok_len[k] = p->tok_len[h + k];
        tok_name(p->blk + p->tok_off[k], k);
    }
    p->tok_used -= a0;
    p->tok_n = m;
    p->tok_lo = 0;
}

/* on_start's attributes with the tokens libxml2 may hold now decoded:
 * atts itself when it has none, NULL when out of memory (stopped). */
static const xmlChar **tok_decode(links_parser *p, const xmlChar **atts)
{
    size_t n = 0;
    bool any = false;
    for (; atts[n] != NULL; n += 2)
        any |= atts[n + 1] != NULL && atts[n + 1][0] == 0x01;
    if (!any)
        return atts;
    if (n + 1 > p->tok_atts_cap) {
        size_t cap = n + 1 < 64 ? 64 : 2 * (n + 1);
        const xmlChar **a = cr_realloc(p->tok_atts, cap * sizeof *a);
        if (a == NULL) {
            stop(p, LINKS_TRUNC_NOMEM);
            return NULL;
        }
        p->tok_atts = a;
        p->tok_atts_cap = cap;
    }
    for (size_t i = 0; i < n; i += 2) {
        const xmlChar *v = atts[i + 1];
        p->tok_atts[i] = atts[i];
        p->tok_atts[i + 1] = v;
        if (v == NULL || v[0] != 0x01 || v[1] == 0 || v[2] == 0 || v[3] != 0)
            continue;
        int hi = tok_digit(v[1]), lo = tok_digit(v[2]);
        size_t k = (size_t)hi * 64 + (size_t)lo;
        if (hi >= 0 && lo >= 0 && k < p->tok_dec)
            p->tok_atts[i + 1] = (const xmlChar *)(p->tok_arena + p->tok_aoff[k]);
    }
    p->tok_atts[n] = NULL;
    return p->tok_atts;
}

/* ---- feeding libxml2 ------------------------------------------------------ */

/* Where a full block is cut: before its last '<' in its second half, else
 * at its end (see the top of the file). The halves are of the stream's
 * bytes: with values shortened (blk_orig > blk_len), the block is cut where
 * the unshortened one would be, so libxml2 always gets the same pieces of
 * the page, shortened or not. */
static size_t blk_cut(const links_parser *p)
{
    size_t lo = p->blk_half < p->blk_len ? p->blk_half : p->blk_len;
    for (size_t i = p->blk_len; i > lo; i--) {
        if (p->blk[i - 1] == '<')
            return i - 1;
    }
    return p->blk_len;
}

/* The block goes to libxml2, all of it, or (cut) up to blk_cut, the rest
 * kept as the start of the next block. Only here does libxml2 run (and
 * call on_start). */
static void blk_flush(links_parser *p, int terminate, bool cut)
{
    if (p->stopped)
        return;
    size_t n = cut ? blk_cut(p) : p->blk_len;
    size_t h = p->tok_lo; /* the entries of the tokens in blk[0..n) end at h */
    while (h < p->tok_n && p->tok_off[h] < n)
        h++;
    /* what stays: its stream length counts the values shortened in it */
    size_t rest = p->blk_len - n, orig = rest;
    for (size_t t = 0; t < p->sh_tn; t++)
        if (p->sh_tpos[t] >= n)
            orig += p->sh_td[t];
    /* does blk[0..n) reach the raw 0x01 (see "Read values as tokens")? */
    bool soh = p->tok_soh < p->blk_total - orig;
    const unsigned char *in = p->blk;
    size_t len = n;
    bool expanded = soh && h > p->tok_lo;
    if (expanded && (in = tok_expand(p, n, h, &len)) == NULL) {
        stop(p, LINKS_TRUNC_NOMEM);
        return;
    }
    p->tok_dec = expanded ? p->tok_lo : h;
    if (soh && p->tok_dec > 0)
        p->st.tags_unsure = 1;
    /* where libxml2's piece ends in the stream: the same in every reading */
    p->st.cuts = (p->st.cuts ^ (p->blk_total - orig)) * 0x100000001b3ull;
    quiet q;
    quiet_begin(&q);
    htmlParseChunk(p->ctxt, (const char *)in, (int)len, terminate);
    p->tok_dec = 0;
    /* does libxml2 keep bytes with tokens in them unparsed? */
    size_t held = 0;
    const xmlParserInput *pin = p->ctxt->input;
    if (!terminate && pin != NULL && pin->cur != NULL && pin->end > pin->cur)
        held = (size_t)(pin->end - pin->cur);
    bool pinned = held > len ? p->tok_lo > 0 || (!expanded && h > p->tok_lo)
                             : held > 0 && !expanded && h > p->tok_lo &&
                                   p->tok_off[h - 1] >= n - held;
    size_t keep = 0;
    for (size_t t = 0; t < p->sh_tn; t++) {
        if (p->sh_tpos[t] < n)
            continue;
        p->sh_tpos[keep] = (uint16_t)(p->sh_tpos[t] - n);
        p->sh_td[keep++] = p->sh_td[t];
    }
    p->sh_tn = keep;
    if (p->sh_vstart != SIZE_MAX)
        p->sh_vstart = p->sh_vstart >= n ? p->sh_vstart - n : SIZE_MAX;
    if (p->sh_astart != SIZE_MAX)
        p->sh_astart = p->sh_astart >= n ? p->sh_astart - n : SIZE_MAX;
    p->blk_flushes++;
    memmove(p->blk, p->blk + n, rest);
    p->blk_len = rest;
    tok_flushed(p, n, h, pinned);
    p->blk_orig = orig;
    p->blk_half = SIZE_MAX;
    if (!terminate && !p->stopped &&
        (p->ctxt->disableSAX || p->ctxt->instate == XML_PARSER_EOF))
        stop(p, LINKS_TRUNC_PARSER);
    quiet_end(&q);
}

/* libxml2's push parser gives different results for the same bytes cut at
 * different places (e.g. "<!-->" ends a comment or not), so it always gets
 * the same cut: fixed blocks at fixed offsets of the UTF-8 stream. */
static void blk_put(links_parser *p, const unsigned char *s, size_t n)
{
    while (n > 0 && !p->stopped) {
        size_t k = BLOCK - p->blk_orig;
        if (k > n)
            k = n;
        if (p->blk_half == SIZE_MAX && p->blk_orig + k > BLOCK / 2)
            p->blk_half = p->blk_len + (BLOCK / 2 - p->blk_orig);
        memcpy(p->blk + p->blk_len, s, k);
        p->blk_len += k;
        p->blk_orig += k;
        p->blk_total += k; /* blk_flush reads it: the stream offset of blk's end */
        s += k;
        n -= k;
        if (p->blk_orig == BLOCK)
            blk_flush(p, 0, true);
    }
}

/* ---- unread attribute values ----------------------------------------------
 *
 * Most of libxml2's time goes to attribute values (javadoc: class, title,
 * id, ...), and nothing reads most of them. So, before blk_put, an
 * attribute that neither on_start nor libxml2 reads goes whole (its name,
 * '=', quotes and value), where that is exact; when its name began in an
 * earlier block, its value is cut to one byte ("x", inside its quotes)
 * instead. The shortener follows
 * the stream as libxml2's push parser (2.9.14) reads it: text; start tags
 * with htmlParseStartTag's attribute syntax (the guard's G_* automaton);
 * end tags; comments; <!DOCTYPE name>; script and style content up to their
 * end tag. At anything it does not follow exactly (a '<' not followed by a
 * letter, '/' or '!'; a processing instruction; a bogus comment; a comment
 * that "--" does not end with '>'; a DOCTYPE with more than a name; "</" in
 * a script not followed by its end tag; a script or style tag ended by
 * "/>"; a name of over SH_NAME_MAX bytes) it stops for the rest of the page
 * (SH_OFF): libxml2 then gets every byte. A value is shortened only when
 * all of these hold:
 *   - it is quoted, in a start tag the shortener is sure of;
 *   - its attribute is none of those read (sh_name_read; libxml2 itself
 *     reads only meta's charset, content and http-equiv, all in the list);
 *   - it holds no '<', '>', '&', '"' or '\'' (the bytes libxml2's lookahead
 *     and entity handling look at), and is valid UTF-8 (libxml2 switches a
 *     page to ISO-8859-1 at an invalid byte);
 *   - it lies in one block (blk_cut cuts the stream where it would cut the
 *     unshortened one: libxml2 gets the same pieces, each shortened).
 * test_links parses every case both ways, random pages and real ones, and
 * fuzz_links does the same: links, base, title, robots and stats agree. */

enum sh_state { SH_OFF = 0, SH_TEXT, SH_LT, SH_TAG, SH_ETAG, SH_ETNAME, SH_ETEND,
                SH_BANG, SH_BANG1, SH_DOCT, SH_DOCTB, SH_DOCTN, SH_DOCTE,
                SH_CSTART, SH_CBODY, SH_CD1, SH_CD2,
                SH_RAW, SH_RAWLT, SH_RAWNAME, SH_RAWEND };

/* Attributes something reads (sh_name_read): on_start, on_meta, on_base,
 * rel_parse, css_and_title_at_tag (style), and libxml2's htmlCheckMeta
 * (charset, content, http-equiv): action, charset, content, data, href,
 * http-equiv, imagesrcset, name, poster, rel, src, srcset, style. */
static bool sh_name_read(const links_parser *p)
{
    size_t n = p->sh_nlen;
    if (n < 3 || n > SH_NAME_KEEP)
        return false;
    const char *m = p->sh_name;
    switch (m[0]) { /* one or two compares per attribute */
    case 'a':
        return n == 6 && memcmp(m, "action", 6) == 0;
    case 'c':
        return (n == 7 && memcmp(m, "charset", 7) == 0) ||
               (n == 7 && memcmp(m, "content", 7) == 0);
    case 'd':
        return n == 4 && memcmp(m, "data", 4) == 0;
    case 'h':
        return (n == 4 && memcmp(m, "href", 4) == 0) ||
               (n == 10 && memcmp(m, "http-equiv", 10) == 0);
    case 'i':
        return n == 11 && memcmp(m, "imagesrcset", 11) == 0;
    case 'n':
        return n == 4 && memcmp(m, "name", 4) == 0;
    case 'p':
        return n == 6 && memcmp(m, "poster", 6) == 0;
    case 'r':
        return n == 3 && memcmp(m, "rel", 3) == 0;
    case 's':
        return (n == 3 && memcmp(m, "src", 3) == 0) || (n == 6 && memcmp(m, "srcset", 6) == 0) ||
               (n == 5 && memcmp(m, "style", 5) == 0);
    default:
        return false;
    }
}

static void sh_off(links_parser *p)
{
    if (p->st.elided_tags > 0) { /* see "Unread tags" */
        p->sh_offdrop = true;
        if (p->sh_inert_open > 0)
            p->st.tags_unsure = 1;
    }
    p->sh = SH_OFF;
    p->sh_vstart = SIZE_MAX;
    p->sh_astart = SIZE_MAX;
}

/* Bytes that stop the scan of a value to be cut: < > & " ' and non-ASCII
 * (UTF-8 checked). */
static const unsigned char sh_stop[256] = {
#define R4(c) [c] = 1, [c + 1] = 1, [c + 2] = 1, [c + 3] = 1
#define R16(c) R4(c), R4(c + 4), R4(c + 8), R4(c + 12)
    R16(0x80), R16(0x90), R16(0xA0), R16(0xB0), R16(0xC0), R16(0xD0), R16(0xE0), R16(0xF0),
#undef R16
#undef R4
    ['<'] = 1, ['>'] = 1, ['&'] = 1, ['"'] = 1, ['\''] = 1, [0] = 1,
};

/* A byte of 8 is zero (exact as a whole: any zero byte sets a bit). */
static inline uint64_t swar_zero(uint64_t w)
{
    return (w - 0x0101010101010101u) & ~w & 0x8080808080808080u;
}

/* The first i' >= i with sh_stop[s[i']], or n. The words of 8 bytes with
 * none of sh_stop's bytes go at once: the byte loop alone was 40% of
 * sh_tag's time, sh_tag 11% of the openjdk-17-doc crawl's CPU. */
static size_t sh_skip(const unsigned char *s, size_t i, size_t n)
{
    const uint64_t b = 0x0101010101010101u;
    for (; n - i >= 8; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (((w & 0x8080808080808080u) | swar_zero(w) | swar_zero(w ^ (b * '<')) |
             swar_zero(w ^ (b * '>')) | swar_zero(w ^ (b * '&')) | swar_zero(w ^ (b * '"')) |
             swar_zero(w ^ (b * '\''))) != 0)
            break;
    }
    while (i < n && !sh_stop[s[i]])
        i++;
    return i;
}

/* Bytes that end a quoted value's scan with the guard fused in: its quote
 * (1 for '"', 2 for '\''), and '<' and NUL, where the guard looks. */
static const unsigned char g_qstop[256] = {['"'] = 1, ['\''] = 2, ['<'] = 3, [0] = 3};

/* The guard's one reading while sh_tag follows the same tag (fused_scan):
 * it is in sh_t's state; its attribute count and name-char run. */
typedef struct gfuse {
    uint32_t k;
    size_t run;
    bool over;  /* OUT: the tag got more than max_attrs attributes at the stop */
    bool ended; /* OUT: the tag ended */
} gfuse;

/* blk ends at keep, the bytes cut recorded at at, the offset of the last
 * byte kept before them (the block bookkeeping in blk_flush); the half
 * moves to where the cut is when it fell in what went. */
/* d stream bytes went after blk offset at: for blk_flush's bookkeeping. */
static void sh_record(links_parser *p, size_t at, size_t d)
{
    p->sh_cutb += d;
    if (p->sh_tn > 0 && p->sh_tpos[p->sh_tn - 1] == at) { /* right after the last */
        p->sh_td[p->sh_tn - 1] = (uint16_t)(p->sh_td[p->sh_tn - 1] + d);
        return;
    }
    p->sh_tpos[p->sh_tn] = (uint16_t)at;
    p->sh_td[p->sh_tn++] = (uint16_t)d;
}

/* Is the value blk[v..e) valid UTF-8? (sh_tag saw no < > & " ' in it;
 * sh_vutf8: it has non-ASCII bytes at all.) */
static bool sh_value_utf8(const links_parser *p, size_t v, size_t e)
{
    for (size_t i = v; p->sh_vutf8 && i < e;) {
        size_t k = p->blk[i] < 0x80 ? 1 : utf8_seq(p->blk + i, e - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

static void sh_cut(links_parser *p, size_t at, size_t keep)
{
    size_t n = p->blk_len;
    tok_cut(p, keep);
    if (p->blk_half != SIZE_MAX && p->blk_half > at + 1)
        p->blk_half = at + 1;
    p->blk_len = keep;
    /* cuts recorded inside what goes (a tag dropped whole after one of its
     * attributes went) are now cuts at at: left where they were, they
     * would name bytes that come later, and blk_flush would count them to
     * the wrong side of its cut */
    size_t inside = 0;
    while (p->sh_tn > 0 && p->sh_tpos[p->sh_tn - 1] > at) /* in order: appended as the scan goes */
        inside += p->sh_td[--p->sh_tn];
    sh_record(p, at, n - keep);
    p->sh_td[p->sh_tn - 1] = (uint16_t)(p->sh_td[p->sh_tn - 1] + inside);
}

/* The value blk[sh_vstart..blk_len - 1) has ended, its closing quote
 * last in blk, with none of < > & " ' in it (sh_tag checked): the whole
 * attribute goes (from its name, sh_astart) if it lies in this block and
 * something precedes it there; else the value is cut to one byte. A cut
 * is recorded at the blk offset of the last byte kept before it (the
 * block bookkeeping in blk_flush), and the half moves to where the cut
 * is when it fell in what went. */
static void sh_shorten(links_parser *p)
{
    size_t v = p->sh_vstart, a = p->sh_astart, n = p->blk_len;
    p->sh_vstart = SIZE_MAX;
    p->sh_astart = SIZE_MAX;
    if (v == SIZE_MAX || p->sh_tn >= SH_TMAX)
        return;
    const unsigned char *b = p->blk;
    if (!sh_value_utf8(p, v, n - 1))
        return;
    size_t keep, at; /* bytes kept, and the last one's offset */
    /* not after a name without a value: with this attribute gone, an '='
     * after it would give that name a value (<e a x="" ="...>) */
    if (a != SIZE_MAX && a >= 1 && !p->sh_abare) {
        keep = a;
        at = a - 1;
    } else {
        if (n - 1 - v < 2)
            return;
        p->blk[v] = 'x';
        p->blk[v + 1] = b[n - 1];
        keep = v + 2;
        at = v;
    }
    p->st.elided += n - keep;
    sh_cut(p, at, keep);
}

/* The read value blk[sh_vstart..blk_len - 1) has ended, its closing
 * quote last in blk, with none of < > & " ' in it (sh_tag checked): it
 * goes as a token (see "Read values as tokens") when it is long enough,
 * valid UTF-8 and there is room. The cut is recorded as sh_shorten's. */
static void sh_token(links_parser *p)
{
    size_t v = p->sh_vstart, n = p->blk_len;
    p->sh_vstart = SIZE_MAX;
    p->sh_astart = SIZE_MAX;
    if (v == SIZE_MAX || !p->tok_on || p->blk_total > p->tok_soh || n - 1 - v < TOK_MIN ||
        p->tok_n >= TOK_MAX ||
        p->sh_tn >= SH_TMAX || p->tok_used + (n - v) > TOK_ARENA)
        return;
    if (!sh_value_utf8(p, v, n - 1))
        return;
    unsigned char *b = p->blk;
    size_t len = n - 1 - v;
    size_t k = p->tok_n++;
    p->tok_off[k] = (uint16_t)v;
    p->tok_aoff[k] = (uint16_t)p->tok_used;
    p->tok_len[k] = (uint16_t)len;
    memcpy(p->tok_arena + p->tok_used, b + v, len);
    p->tok_arena[p->tok_used + len] = '\0';
    p->tok_used += len + 1;
    b[v + 3] = b[n - 1]; /* the quote */
    b[v] = 0x01;
    tok_name(b + v, k);
    p->st.tokens++;
    p->st.token_bytes += len;
    sh_cut(p, v + 2, v + 4);
}

/* ---- unread text ------------------------------------------------------------
 *
 * Text between tags is read only in the first <title> (on_chars) and, by
 * libxml2, for whether it is blank (non-blank text implies <body> and <p>
 * in html and head: htmlCheckParagraph); on_chars also ends a <style>,
 * which any text call does. So a text run the shortener follows, from the
 * '>' that ends a start tag, an end tag, a comment or a DOCTYPE to the next
 * '<', goes to libxml2 as one byte "x" where that is exact:
 *   - its first byte past blanks (IS_BLANK_CH) is printable ASCII but '&'
 *     (libxml2 copies it as text: the run is not blank; a run of blanks,
 *     of entities or of characters libxml2 drops is kept);
 *   - it has no quote (libxml2's start-tag lookahead, resuming after an
 *     odd quote in a tag, would read it) and is valid UTF-8 (as values);
 *   - it lies in one block with its '<' (the cuts do not move, as values);
 *   - the page is not in its first <title>: from a start tag "title" to
 *     the next start tag other than html, head or body (those libxml2 may
 *     drop) text is kept (TX_TITLE);
 *   - libxml2 has an element open: text is cut only after the first start
 *     tag (TX_START: before it, an end tag takes libxml2 to its epilogue,
 *     where text stops the page or not depending on how much follows in
 *     its buffer and on a leading blank), and never after "</html" or
 *     "<html/>" (the epilogue again).
 * Entities inside the run go with it; a cut run's text reaches on_chars as
 * "x" outside the title, where nothing reads it. */

enum { TX_START = 0, TX_BEFORE, TX_TITLE, TX_AFTER, TX_NEVER };

/* A start tag's name is complete (sh_name, sh_nlen): the title states. */
static void sh_tx_tag(links_parser *p)
{
    const char *m = p->sh_name;
    size_t n = p->sh_nlen;
    p->sh_thtml = n == 4 && memcmp(m, "html", 4) == 0;
    if (p->sh_tx == TX_START)
        p->sh_tx = TX_BEFORE; /* libxml2 has an element open from here */
    if (p->sh_tx == TX_BEFORE && n == 5 && memcmp(m, "title", 5) == 0)
        p->sh_tx = TX_TITLE;
    else if (p->sh_tx == TX_TITLE && !p->sh_thtml &&
             !(n == 4 && (memcmp(m, "head", 4) == 0 || memcmp(m, "body", 4) == 0)))
        p->sh_tx = TX_AFTER;
}

/* Bytes that keep a text run whole past its first: quotes and non-ASCII
 * (then UTF-8 checked). */
static const unsigned char tx_stop[256] = {
#define R4(c) [c] = 1, [c + 1] = 1, [c + 2] = 1, [c + 3] = 1
#define R16(c) R4(c), R4(c + 4), R4(c + 8), R4(c + 12)
    R16(0x80), R16(0x90), R16(0xA0), R16(0xB0), R16(0xC0), R16(0xD0), R16(0xE0), R16(0xF0),
#undef R16
#undef R4
    ['"'] = 1, ['\''] = 1,
};

/* The text run that began at stream offset sh_ttext ends before s[e], a
 * '<': given to blk_put (*from as for sh_tag), then cut to "x" in blk if
 * "Unread text" allows. */
static void sh_text_end(links_parser *p, const unsigned char *s, size_t e, size_t *from)
{
    uint64_t t = p->sh_ttext;
    p->sh_ttext = UINT64_MAX;
    if (t == UINT64_MAX || (p->sh_tx != TX_BEFORE && p->sh_tx != TX_AFTER) ||
        p->sh_tn >= SH_TMAX || p->sh_s0 + e - t < 2)
        return;
    size_t len = (size_t)(p->sh_s0 + e - t);
    blk_put(p, s + *from, e - *from);
    *from = e;
    if (p->stopped || len > p->blk_len)
        return; /* a block ended in it */
    size_t v = p->blk_len - len;
    unsigned char *r = p->blk + v;
    size_t k = 0;
    while (k < len && g_blank(r[k]))
        k++;
    if (k == len || r[k] < 0x21 || r[k] > 0x7E || r[k] == '&' || r[k] == '"' || r[k] == '\'')
        return;
    for (size_t j = k + 1; j < len;) {
        while (j < len && !tx_stop[r[j]])
            j++;
        if (j >= len)
            break;
        size_t q = r[j] < 0x80 ? 0 : utf8_seq(r + j, len - j);
        if (q == 0)
            return; /* a quote, or not UTF-8 */
        j += q;
    }
    r[0] = 'x';
    p->st.elided_text += len - 1;
    sh_cut(p, v, v + 1);
}

/* ---- unread tags ------------------------------------------------------------
 *
 * Most of what libxml2 still does once values and text are cut is tags:
 * on the openjdk-17-doc pages about 70% of the start tags and nearly all
 * end tags are of elements on_start does nothing with (div, code, span,
 * li, dd, ...), and each costs libxml2 a name, a dictionary lookup, its
 * auto-close tables and a SAX call. Such a tag goes whole (from its '<' to
 * its '>') where that changes nothing on_start can see, namely only while
 *   - the page is past its first explicit <body> start tag (DROP_ON) and
 *     not past "</body", "</html", "<body/>", "<head/>", "<html/>" or
 *     "<frameset" (DROP_NEVER): before the body, a tag libxml2 gets
 *     decides where it implies <html>, <head>, <body> and <p> (and whether
 *     a later <head> or <body>, whose style attribute is read, is
 *     dropped); once body is on libxml2's stack it stays there until one
 *     of those;
 *   - no text-only element (inert_container: title, textarea, xmp,
 *     iframe, noembed, noframes, plaintext) can be open: per name, the
 *     start tags handed over less the end tags seen, never below 0
 *     (libxml2 holds at most that many: an end tag pops the innermost one
 *     if any, auto-close only pops);
 *   - the name is one of sh_unread_tag's, and the start tag has no style
 *     attribute (css_and_title_at_tag scans any element's) and is not the
 *     first after a </style> but html, head and body (a <style> is scanned
 *     at the next start tag or text libxml2 reports, which a page stopped
 *     early may not reach otherwise);
 *   - no quote in it but around values: libxml2 waits for a start tag's
 *     '>' with a lookahead that takes any quote as one (<p"> holds back
 *     what follows it, up to a second quote or the end);
 *   - it lies in one block after some other byte of it (as values).
 * A tag that goes takes its '<' with it, so a block may end at an earlier
 * '<' than the unshortened stream's block does (links_stats.cuts parts):
 * libxml2 gets other pieces, cut before a '<' all the same, so nothing is
 * held back and the tags it parses are the same.
 * What on_start sees of the elements that go is their place in libxml2's
 * stack (none of their attributes is read). The stack decides where a
 * text-only element ends (inert), where the first <title> ends, which
 * element a <style>'s text belongs to, and the depth: the first three are
 * out of reach (no such element is open while tags go; a style's links
 * still come before any later link), the depth is not: max_depth counts
 * the elements libxml2 holds, and the unread ones are no longer among
 * them. One difference remains, on mis-nested markup only: an end tag that
 * closes an unread element also closes the kept ones opened inside it
 * (<div><a href=x></div>), which stay open in libxml2 when the div's tags
 * went; a later stray end tag (</a> inside an <iframe>) may then close a
 * text-only element in one reading and not in the other, and a link after
 * it is counted inert in one and emitted in the other. The same where a
 * second "<body/>" (or head, html) pops whatever element is open, which
 * then is not the same one in both. links_stats.tags_unsure marks such
 * pages; test_links has the cases. */

enum { DROP_NOT_YET = 0, DROP_ON, DROP_NEVER };

/* The elements whose tags may go, lowercase, by length (each string the
 * names of that length one after the other): none is read by on_start,
 * nor by libxml2 for anything but its place in the stack (test_links
 * checks that none yields a link, and holds the same list). */
static const char *const unread_tags[11] = {
    [1] = "bipqsu",
    [2] = "brdddldtemh1h2h3h4h5h6hrliolrbrprttdthtrttul",
    [3] = "bdibdobigcoldeldfndirdivinskbdmapnavprertcsubsupvarwbr",
    [4] = "abbrcitecodedatafontmainmarkmenunobrrubysampspantime",
    [5] = "asidelabelmetersmalltabletbodytfootthead",
    [6] = "buttoncenterfigurefooterheaderhgrouplegendoptionoutputselectstrike"
          "strong",
    [7] = "acronymaddressarticlecaptiondetailspicturesectionsummary",
    [8] = "colgroupfieldsetoptgroupprogress",
    [10] = "blockquotefigcaption",
};

static bool sh_unread_tag(const char *m, size_t n)
{
    if (n == 0 || n > 10 || unread_tags[n] == NULL)
        return false;
    for (const char *t = unread_tags[n]; *t != '\0'; t += n)
        if (t[0] == m[0] && memcmp(t, m, n) == 0)
            return true;
    return false;
}

/* inert_container's names: index, or -1. */
static int sh_inert_index(const char *m, size_t n)
{
    static const char *const names[N_INERT] = {"title", "textarea", "xmp", "iframe",
                                               "noembed", "noframes", "plaintext"};
    if (n < 3 || n > 9 || strchr("inptx", m[0]) == NULL)
        return -1;
    for (int k = 0; k < N_INERT; k++)
        if (strlen(names[k]) == n && memcmp(names[k], m, n) == 0)
            return k;
    return -1;
}

/* A tag's '<' is s[i] (*from as for sh_tag): where it starts, for
 * sh_drop_tag. It goes in the block the bytes before it end. */
static void sh_mark_lt(links_parser *p, const unsigned char *s, size_t i, size_t *from)
{
    if (p->blk_orig + (i - *from) >= BLOCK) { /* a block ends before it */
        blk_put(p, s + *from, i - *from);
        *from = i;
    }
    p->sh_lt = p->sh_s0 + i;
    p->sh_ltcut = p->sh_cutb;
    p->sh_ltflush = p->blk_flushes;
    p->sh_tdrop = false;
}

/* The tag that began at sh_lt ends before s[e]: it goes whole if it lies
 * in this block after some other byte. When none of it is in blk yet, it
 * is skipped rather than copied and cut (what blk_put and sh_cut would
 * have left). */
static void sh_drop_tag(links_parser *p, const unsigned char *s, size_t e, size_t *from)
{
    p->sh_tdrop = false;
    if (p->sh_tn >= SH_TMAX || p->sh_ltflush != p->blk_flushes)
        return;
    if (p->sh_s0 + *from <= p->sh_lt) {
        size_t lt = (size_t)(p->sh_lt - p->sh_s0), len = e - lt;
        if (p->blk_orig + (lt - *from) + len >= BLOCK)
            return; /* it reaches the block's end */
        blk_put(p, s + *from, lt - *from);
        *from = lt;
        if (p->blk_len == 0)
            return;
        size_t at = p->blk_len - 1;
        if (p->blk_half == SIZE_MAX && p->blk_orig + len > BLOCK / 2)
            p->blk_half = p->blk_len;
        p->blk_orig += len;
        p->blk_total += len;
        p->st.elided_tags += len;
        sh_record(p, at, len);
        *from = e;
        return;
    }
    blk_put(p, s + *from, e - *from);
    *from = e;
    if (p->stopped || p->sh_ltflush != p->blk_flushes)
        return; /* a block ended in it */
    uint64_t len = p->blk_total - p->sh_lt - (p->sh_cutb - p->sh_ltcut);
    if (len >= p->blk_len)
        return;
    size_t at = p->blk_len - (size_t)len;
    p->st.elided_tags += len;
    sh_cut(p, at - 1, at);
}

/* A start tag's name is complete (sh_name, sh_nlen): may it go, and what
 * it tells of the page. */
static void sh_tag_named(links_parser *p)
{
    const char *m = p->sh_name;
    size_t n = p->sh_nlen;
    int k = sh_inert_index(m, n);
    if (k >= 0) {
        p->sh_inert_n[k]++;
        p->sh_inert_open++;
    }
    p->sh_tbody = n == 4 && memcmp(m, "body", 4) == 0;
    p->sh_thead = n == 4 && memcmp(m, "head", 4) == 0;
    p->sh_tmeta = n == 4 && memcmp(m, "meta", 4) == 0;
    if (n == 8 && memcmp(m, "frameset", 8) == 0)
        p->sh_drop = DROP_NEVER;
    p->sh_tdrop = p->sh_drop == DROP_ON && p->sh_inert_open == 0 && !p->sh_style_end &&
                  sh_unread_tag(m, n);
    if (!p->sh_thtml && !p->sh_tbody && !p->sh_thead)
        p->sh_style_end = false; /* those libxml2 may drop: no on_start */
}

/* An end tag's name is complete: the same. */
static void sh_etag_named(links_parser *p)
{
    const char *m = p->sh_name;
    size_t n = p->sh_nlen;
    int k = sh_inert_index(m, n);
    if (k >= 0 && p->sh_inert_n[k] > 0) {
        p->sh_inert_n[k]--;
        p->sh_inert_open--;
    } else if (k < 0 && p->sh_inert_open > 0 && p->st.elided_tags > 0) {
        p->st.tags_unsure = 1; /* it may close a text-only element in one reading only */
    }
    if (n == 4 && (memcmp(m, "html", 4) == 0 || memcmp(m, "body", 4) == 0))
        p->sh_drop = DROP_NEVER;
    p->sh_tdrop = p->sh_drop == DROP_ON && p->sh_inert_open == 0 && sh_unread_tag(m, n);
}

/* In a start tag, from s[i]: follows it (g_step's syntax) to its end or
 * the end of the input; *from: the first byte not yet given to blk_put.
 * With g, the guard's one reading moves with it (the same syntax, byte for
 * byte): it stops before a '<' or NUL (a tag may start there for the
 * guard), before a name libxml2 would cut, and where the count passes
 * max_attrs (g->over); fused_scan then takes that byte on its own. */
static size_t sh_tag(links_parser *p, const unsigned char *s, size_t i, size_t n, size_t *from,
                     gfuse *g)
{
    while (i < n) {
        unsigned char c = s[i];
        if (g != NULL) {
            if (c == '<' || c == 0)
                return i;
            if (p->sh_t != G_TNAME && p->sh_t != G_ANAME)
                g->run = 0; /* the last byte was no name char (see fused_scan) */
        }
        if (g_blank(c) && (p->sh_t == G_BEFORE || p->sh_t == G_AFTERNAME ||
                           p->sh_t == G_BEFOREVAL)) {
            while (++i < n && g_blank(s[i]))
                ;
            continue;
        }
        switch (p->sh_t) {
        case G_TNAME:
        case G_ANAME: {
            size_t j = i, lim = n;
            if (g != NULL) { /* no further than one past a cut */
                if (g->run >= GUARD_NAME_SPLIT)
                    return i;
                if (lim - i > GUARD_NAME_SPLIT + 1 - g->run)
                    lim = i + GUARD_NAME_SPLIT + 1 - g->run;
            }
            while (j < lim && g_namechar(s[j]))
                j++;
            if (g != NULL) {
                if (g->run + (j - i) > GUARD_NAME_SPLIT)
                    return i; /* libxml2 cuts it here: the guard counts that */
                g->run += j - i;
            }
            size_t keep = p->sh_nlen < SH_NAME_KEEP ? SH_NAME_KEEP - p->sh_nlen : 0;
            if (keep > j - i)
                keep = j - i;
            for (size_t k = 0; k < keep; k++)
                p->sh_name[p->sh_nlen + k] = (char)lower(s[i + k]);
            p->sh_nlen += j - i;
            if (p->sh_nlen > SH_NAME_MAX) {
                sh_off(p);
                return j;
            }
            i = j;
            if (i >= n)
                return n;
            if (p->sh_t == G_TNAME) {
                p->sh_raw = p->sh_nlen == 6 && memcmp(p->sh_name, "script", 6) == 0 ? 1
                          : p->sh_nlen == 5 && memcmp(p->sh_name, "style", 5) == 0 ? 2 : 0;
                sh_tx_tag(p);
                sh_tag_named(p);
                p->sh_bare = false;
                p->sh_t = G_BEFORE;
            } else {
                p->sh_vok = !sh_name_read(p);
                p->sh_vtok = !p->sh_vok && p->tok_on && !p->sh_tmeta && !p->sh_tdrop;
                if (p->sh_nlen == 5 && memcmp(p->sh_name, "style", 5) == 0)
                    p->sh_tdrop = false; /* css_and_title_at_tag reads it */
                p->sh_t = G_AFTERNAME;
            }
            continue;
        }
        case G_BEFORE:
            if (c == '>')
                goto end;
            if (g_namestart(c)) {
                if (g != NULL && ++g->k > p->max_attrs) {
                    g->over = true;
                    return i;
                }
                if (p->blk_orig + (i - *from) >= BLOCK) { /* a block ends before it */
                    blk_put(p, s + *from, i - *from);
                    *from = i;
                }
                p->sh_aorig = p->blk_orig + (i - *from);
                p->sh_aflush = p->blk_flushes;
                p->sh_abare = p->sh_bare;
                p->sh_bare = false;
                p->sh_t = G_ANAME;
                p->sh_nlen = 0;
            } else {
                p->sh_bare = false;
                if (c == '"' || c == '\'')
                    p->sh_tdrop = false; /* as in G_UVAL below */
                p->sh_t = G_BOGUS;
            }
            continue;
        case G_AFTERNAME:
            if (c == '=') {
                p->sh_t = G_BEFOREVAL;
                i++;
            } else {
                p->sh_bare = true; /* an attribute without a value */
                p->sh_t = G_BEFORE;
            }
            continue;
        case G_BEFOREVAL:
            if (c == '"' || c == '\'') {
                p->sh_t = c == '"' ? G_DQ : G_SQ;
                i++;
                if (p->sh_vok || p->sh_vtok) {
                    blk_put(p, s + *from, i - *from);
                    *from = i;
                    p->sh_vstart = p->blk_len;
                    p->sh_vutf8 = false;
                    /* the name on, in this block and unshortened */
                    size_t alen = p->blk_orig - p->sh_aorig;
                    p->sh_astart = p->sh_aflush == p->blk_flushes && p->blk_orig >= p->sh_aorig &&
                                           alen <= p->blk_len
                                       ? p->blk_len - alen
                                       : SIZE_MAX;
                }
                continue;
            }
            if (c == '>')
                goto end;
            p->sh_t = G_UVAL;
            continue;
        case G_DQ:
        case G_SQ: {
            unsigned char qc = p->sh_t == G_DQ ? '"' : '\'';
            if (p->sh_vstart != SIZE_MAX) { /* to the quote or a byte to look at */
                i = sh_skip(s, i, n);
                if (i >= n)
                    return n;
                if (s[i] != qc) {
                    if (g != NULL && (s[i] == '<' || s[i] == 0))
                        return i;
                    if (s[i] < 0x80) /* < > & or the other quote: kept */
                        p->sh_vstart = SIZE_MAX;
                    else
                        p->sh_vutf8 = true;
                    i++;
                    continue;
                }
            } else if (g != NULL) {
                unsigned bit = qc == '"' ? 1 : 2;
                while (i < n && !(g_qstop[s[i]] & bit))
                    i++;
                if (i >= n)
                    return n;
                if (s[i] != qc)
                    return i; /* '<' or NUL */
            } else {
                const unsigned char *q = memchr(s + i, qc, n - i);
                if (q == NULL)
                    return n;
                i = (size_t)(q - s);
            }
            if (p->sh_vstart != SIZE_MAX) { /* the quote too */
                blk_put(p, s + *from, i + 1 - *from);
                *from = i + 1;
                if (p->sh_vtok)
                    sh_token(p);
                else
                    sh_shorten(p);
            }
            p->sh_t = G_BEFORE;
            i++;
            continue;
        }
        default: /* G_UVAL, G_BOGUS */
            for (; i < n && !g_blank(s[i]) && s[i] != '>' &&
                   (g == NULL || (s[i] != '<' && s[i] != 0));
                 i++)
                if (s[i] == '"' || s[i] == '\'')
                    p->sh_tdrop = false; /* libxml2's lookahead for the '>'
                                            would read it as a quote */
            if (i >= n)
                return n;
            if (s[i] == '>')
                goto end;
            if (!g_blank(s[i]))
                return i; /* with g: '<' or NUL */
            p->sh_t = G_BEFORE;
            i++;
            continue;
        }
    }
    return n;
end:
    if (g != NULL) {
        g->ended = true;
        g->run = 0;
    }
    /* "<script/>" is closed at once: its content would not be raw */
    bool empty = (i > 0 ? s[i - 1] : p->sh_last) == '/';
    if (p->sh_raw != 0 && empty) {
        sh_off(p);
        return g != NULL ? i + 1 : i; /* with g: where the guard is */
    }
    if (p->sh_thtml && empty)
        p->sh_tx = TX_NEVER;
    /* "<body/>" pops body, or (dropped as a second one) whatever is open:
     * once tags went, that is not the same element in both readings */
    if (empty && (p->sh_thtml || p->sh_tbody || p->sh_thead)) {
        p->sh_drop = DROP_NEVER;
        if (p->st.elided_tags > 0)
            p->st.tags_unsure = 1;
    }
    else if (p->sh_tbody && p->sh_drop == DROP_NOT_YET)
        p->sh_drop = DROP_ON;
    p->sh = p->sh_raw != 0 ? SH_RAW : SH_TEXT;
    p->sh_ttext = p->sh_raw != 0 ? UINT64_MAX : p->sh_s0 + i + 1;
    if (p->sh_tdrop)
        sh_drop_tag(p, s, i + 1, from);
    return i + 1;
}

/* Skips to the next byte b (no state change without one): state next after it. */
static size_t sh_find(links_parser *p, const unsigned char *s, size_t i, size_t n, int b,
                      uint8_t next)
{
    const unsigned char *q = memchr(s + i, b, n - i);
    if (q == NULL)
        return n;
    p->sh = next;
    return (size_t)(q - s) + 1;
}

/* Past s[i]: to state next if ok, else off. */
static size_t sh_then(links_parser *p, bool ok, uint8_t next, size_t i)
{
    if (ok) {
        p->sh = next;
        if (next == SH_TEXT)
            p->sh_ttext = p->sh_s0 + i + 1;
    } else {
        sh_off(p);
    }
    return i + 1;
}

/* One step outside start tags, at s[i] (i < n); returns where to go on. */
static size_t sh_step(links_parser *p, const unsigned char *s, size_t i, size_t n,
                      size_t *from)
{
    unsigned char c = s[i];
    switch (p->sh) {
    case SH_TEXT: {
        size_t j = sh_find(p, s, i, n, '<', SH_LT);
        if (p->sh == SH_LT) {
            p->sh_ttext = UINT64_MAX; /* ended here, kept */
            sh_mark_lt(p, s, j - 1, from);
        }
        return j;
    }
    case SH_LT:
        if (is_alpha(c)) {
            p->sh = SH_TAG;
            p->sh_t = G_TNAME;
            p->sh_nlen = 0;
            return i;
        }
        if (c == '/')
            p->sh = SH_ETAG;
        else if (c == '!')
            p->sh = SH_BANG;
        else
            sh_off(p);
        return i + 1;
    case SH_ETAG:
        if (!is_alpha(c)) {
            sh_off(p);
            return i;
        }
        p->sh = SH_ETNAME;
        p->sh_nlen = 0;
        return i;
    case SH_ETNAME:
    case SH_DOCTN: {
        size_t j = i;
        if (p->sh == SH_ETNAME) {
            while (j < n && g_namechar(s[j]))
                j++;
            for (size_t k = i; k < j && p->sh_nlen + (k - i) < SH_NAME_KEEP; k++)
                p->sh_name[p->sh_nlen + (k - i)] = (char)lower(s[k]);
        } else {
            while (j < n && is_alpha(s[j]))
                j++;
        }
        p->sh_nlen += j - i;
        if (p->sh_nlen > SH_NAME_MAX) {
            sh_off(p);
        } else if (j < n) {
            if (p->sh == SH_ETNAME) {
                if (p->sh_nlen == 4 && memcmp(p->sh_name, "html", 4) == 0)
                    p->sh_tx = TX_NEVER; /* "</html": see "Unread text" */
                sh_etag_named(p);
            }
            p->sh = p->sh == SH_ETNAME ? SH_ETEND : SH_DOCTE;
        }
        return j;
    }
    case SH_ETEND:
    case SH_DOCTE:
    case SH_RAWEND: {
        if (g_blank(c))
            return i + 1;
        bool drop = p->sh == SH_ETEND && c == '>' && p->sh_tdrop;
        if (p->sh == SH_RAWEND && c == '>' && p->sh_raw == 2)
            p->sh_style_end = true;
        size_t j = sh_then(p, c == '>', SH_TEXT, i);
        if (drop)
            sh_drop_tag(p, s, j, from);
        return j;
    }
    case SH_BANG:
        if (c == '-') {
            p->sh = SH_BANG1;
        } else if (lower(c) == 'd') {
            p->sh = SH_DOCT;
            p->sh_k = 1;
        } else {
            sh_off(p);
        }
        return i + 1;
    case SH_BANG1:
        return sh_then(p, c == '-', SH_CSTART, i);
    case SH_DOCT:
        if (lower(c) != (unsigned char)"doctype"[p->sh_k]) {
            sh_off(p);
        } else if (++p->sh_k == 7) {
            p->sh = SH_DOCTB;
            p->sh_k = 0;
        }
        return i + 1;
    case SH_DOCTB: /* one blank or more, then the name */
        if (g_blank(c)) {
            p->sh_k = 1;
            return i + 1;
        }
        if (p->sh_k == 0 || !is_alpha(c)) {
            sh_off(p);
            return i;
        }
        p->sh = SH_DOCTN;
        p->sh_nlen = 0;
        return i;
    case SH_CSTART: /* "<!-->" and "<!--->": libxml2's special cases */
        if (c == '-' || c == '>') {
            sh_off(p);
            return i;
        }
        p->sh = SH_CBODY;
        return i;
    case SH_CBODY:
        return sh_find(p, s, i, n, '-', SH_CD1);
    case SH_CD1: /* after '-': '-' or the comment goes on */
    case SH_RAWLT: /* after '<' in a script: '/' or it goes on */
        if (c != (p->sh == SH_CD1 ? '-' : '/')) {
            p->sh = p->sh == SH_CD1 ? SH_CBODY : SH_RAW;
            return i;
        }
        p->sh = p->sh == SH_CD1 ? SH_CD2 : SH_RAWNAME;
        p->sh_k = 0;
        return i + 1;
    case SH_CD2: /* "--" ends the comment only before '>' here */
        return sh_then(p, c == '>', SH_TEXT, i);
    case SH_RAW:
        return sh_find(p, s, i, n, '<', SH_RAWLT);
    case SH_RAWNAME: {
        const char *name = p->sh_raw == 1 ? "script" : "style";
        if (lower(c) != (unsigned char)name[p->sh_k]) {
            sh_off(p); /* "</" in the content: libxml2 may read it either way */
            return i;
        }
        if (name[++p->sh_k] == '\0')
            p->sh = SH_RAWEND;
        return i + 1;
    }
    default:
        sh_off(p);
        return i;
    }
}

/* The shortener alone over s[i..n), no NULs, or until it is in state
 * until (SH_OFF: to n); *from as for sh_tag. */
static void sh_run(links_parser *p, const unsigned char *s, size_t i, size_t n, size_t *from,
                   uint8_t until)
{
    while (i < n && p->sh != SH_OFF && p->sh != until && !p->stopped)
        i = p->sh == SH_TAG ? sh_tag(p, s, i, n, from, NULL) : sh_step(p, s, i, n, from);
}

/* UTF-8 (NULs replaced) on its way to blk_put, unread values shortened. */
static void sh_put(links_parser *p, const unsigned char *s, size_t n)
{
    if (n == 0)
        return;
    size_t from = 0;
    p->sh_s0 = p->blk_total;
    sh_run(p, s, 0, n, &from, SH_OFF);
    p->sh_last = s[n - 1];
    blk_put(p, s + from, n - from);
}

/* The guard (guard_scan) and the shortener (sh_put) over the UTF-8
 * s[0..n) in one pass: where they agree on what the bytes are (text for
 * both; a start tag the guard reads one way only, as the shortener does),
 * each byte is read once for both; elsewhere each takes the byte on its
 * own. The two never look at each other's state, so this gives what
 * guard_scan then sh_put gave. Returns how many bytes are safe, n if all,
 * those given to blk_put; stops early at a NUL byte too (*nul, OUT). */
static size_t fused_scan(links_parser *p, const unsigned char *s, size_t n, bool *nul)
{
    size_t i = 0, from = 0, ok = n;
    *nul = false;
    p->sh_s0 = p->blk_total; /* the stream offset of s[0] while from is 0 */
    while (i < n && !p->stopped) {
        unsigned m = p->g_mask;
        if (p->sh == SH_OFF) {
            ok = i + guard_scan(p, s + i, n - i, nul);
            break;
        }
        if (!p->g_lt && m == 0 && p->sh != SH_TAG) { /* text for the guard */
            const unsigned char *lt = memchr(s + i, '<', n - i);
            size_t e = lt != NULL ? (size_t)(lt - s) : n;
            const unsigned char *z = memchr(s + i, 0, e - i);
            if (z != NULL)
                e = (size_t)(z - s);
            /* a comment, a script, an end tag: to the text after it, which
             * has no '<' (nothing for the shortener) */
            sh_run(p, s, i, e, &from, SH_TEXT);
            i = e;
            if (z != NULL) {
                *nul = true;
                ok = i;
                break;
            }
            if (i >= n)
                break;
            if (p->sh == SH_TEXT) {
                sh_text_end(p, s, i, &from);
                sh_mark_lt(p, s, i, &from);
            }
            p->g_run = 0; /* guard_char(p, '<') with no reading */
            p->g_lt = true;
            if (p->sh != SH_TEXT) {
                sh_run(p, s, i, i + 1, &from, SH_OFF);
            } else if (i + 1 < n && is_alpha(s[i + 1])) {
                /* a start tag: guard_char's new reading, sh_step's SH_LT;
                 * its name's first byte goes to sh_tag with the rest */
                p->g_lt = false;
                p->g_mask = 1u << G_TNAME;
                p->g_cnt[G_TNAME] = 0;
                p->sh = SH_TAG;
                p->sh_t = G_TNAME;
                p->sh_nlen = 0;
            } else if (i + 1 < n && s[i + 1] == '/') { /* an end tag: no reading */
                p->g_lt = false;
                p->sh = SH_ETAG;
                i++;
            } else {
                p->sh = SH_LT;
            }
            i++;
            continue;
        }
        if (!p->g_lt && m != 0 && (m & (m - 1)) == 0 && p->sh == SH_TAG &&
            p->sh_t == __builtin_ctz(m)) {
            gfuse g = {p->g_cnt[p->sh_t], p->g_run, false, false};
            size_t j = sh_tag(p, s, i, n, &from, &g);
            if (g.ended) {
                p->g_mask = 0;
            } else {
                p->g_mask = 1u << p->sh_t;
                p->g_cnt[p->sh_t] = g.k;
            }
            p->g_run = g.run;
            if (g.over) {
                ok = j;
                break;
            }
            if (j > i) {
                i = j;
                continue;
            }
        }
        unsigned char c = s[i]; /* one byte, each on its own */
        if (c == 0) {
            *nul = true;
            ok = i;
            break;
        }
        if (!guard_char(p, c < 0x80 ? c : 0x80)) {
            ok = i;
            break;
        }
        sh_run(p, s, i, i + 1, &from, SH_OFF);
        i++;
    }
    if (ok > 0)
        p->sh_last = s[ok - 1];
    blk_put(p, s + from, ok - from);
    return ok;
}

/* A tag with too many attributes ahead: the page ends before it, as at
 * links_finish (libxml2 parses all it got: a tag it holds back, waiting for
 * a '>' past an odd quote, would otherwise be lost in one reading and not
 * in the other, as unread tags after it went or not; found by fuzz_links),
 * and stops. */
static void guard_stop(links_parser *p)
{
    blk_flush(p, 1, false);
    style_end(p);
    stop(p, LINKS_TRUNC_ATTRS);
}

/* UTF-8 from here on: guard, NUL -> U+FFFD, parse. */
static void push_utf8(links_parser *p, const unsigned char *s, size_t n)
{
    static const unsigned char fffd[] = {0xEF, 0xBF, 0xBD};
    /* every byte on its way to blk passes here, s[0] at stream offset
     * blk_total, each NUL before a byte moving it 2 on (U+FFFD): see "Read
     * values as tokens". Once per piece: in blk_put, per shortened run,
     * memchr was 3.4% of the jdk crawl's CPU against 1.7%. */
    const unsigned char *soh;
    if (p->tok_on && p->tok_soh == UINT64_MAX && (soh = memchr(s, 0x01, n)) != NULL) {
        uint64_t at = p->blk_total + (uint64_t)(soh - s);
        for (const unsigned char *z = s; (z = memchr(z, 0, (size_t)(soh - z))) != NULL; z++)
            at += 2;
        p->tok_soh = at;
    }
    while (n > 0 && !p->stopped) {
        bool nul;
        size_t ok = fused_scan(p, s, n, &nul);
        if (ok == n || p->stopped)
            return;
        if (!nul) {
            guard_stop(p);
            return;
        }
        p->st.nul_bytes++;
        for (int k = 0; k < 3; k++) {
            if (!guard_char(p, 0x80)) {
                guard_stop(p);
                return;
            }
        }
        sh_put(p, fffd, 3);
        s += ok + 1;
        n -= ok + 1;
    }
}

static void push_latin1(links_parser *p, const unsigned char *s, size_t n)
{
    unsigned char out[8192];
    while (n > 0 && !p->stopped) {
        size_t o = 0;
        while (n > 0 && o + 2 <= sizeof out) {
            unsigned char c = *s++;
            n--;
            if (c < 0x80) {
                out[o++] = c;
            } else {
                out[o++] = (unsigned char)(0xC0 | (c >> 6));
                out[o++] = (unsigned char)(0x80 | (c & 0x3F));
            }
        }
        push_utf8(p, out, o);
    }
}

/* The bytes at in are invalid: skip one code unit (or what is left),
 * read as U+FFFD. */
static void iconv_skip(links_parser *p, char **in, size_t *inleft)
{
    static const unsigned char fffd[] = {0xEF, 0xBF, 0xBD};
    size_t k = p->unit < *inleft ? p->unit : *inleft;
    *in += k;
    *inleft -= k;
    p->st.invalid++;
    push_utf8(p, fffd, 3);
}

/* iconv to UTF-8 through a staging buffer that starts with the carried
 * incomplete sequence of the previous chunk. */
static void push_iconv(links_parser *p, const unsigned char *s, size_t n)
{
    char stage[8192];
    char out[16384];
    while (n > 0 && !p->stopped) {
        size_t k = sizeof stage - p->carry_len;
        if (k > n)
            k = n;
        memcpy(stage, p->carry, p->carry_len);
        memcpy(stage + p->carry_len, s, k);
        s += k;
        n -= k;
        char *in = stage;
        size_t inleft = p->carry_len + k;
        p->carry_len = 0;
        while (inleft > 0 && !p->stopped) {
            char *ob = out;
            size_t oleft = sizeof out;
            size_t r = iconv(p->cd, &in, &inleft, &ob, &oleft);
            int err = r == (size_t)-1 ? errno : 0;
            push_utf8(p, (const unsigned char *)out, (size_t)(ob - out));
            if (p->stopped)
                return;
            if (err == 0 || err == E2BIG)
                continue;
            if (err == EINVAL && inleft <= sizeof p->carry) {
                memcpy(p->carry, in, inleft); /* incomplete: wait for more */
                p->carry_len = inleft;
                break;
            }
            iconv_skip(p, &in, &inleft); /* EILSEQ */
        }
    }
}

static void push(links_parser *p, const unsigned char *s, size_t n)
{
    if (p->stopped || n == 0)
        return;
    switch (p->mode) {
    case CHARSET_UTF8:
        push_utf8(p, s, n);
        break;
    case CHARSET_LATIN1:
        push_latin1(p, s, n);
        break;
    case CHARSET_ICONV:
        push_iconv(p, s, n);
        break;
    }
}

/* Creates the libxml2 context for the charset decided from the sniffed
 * bytes, then parses them. */
static int start_page(links_parser *p)
{
    const unsigned char *s = p->sniff;
    size_t n = p->sniff_len;
    charset_choice cc;
    charset_sniff(s, n, p->header_label, &cc);
    size_t skip = cc.bom_len;
    if (cc.mode == CHARSET_ICONV) {
        p->cd = iconv_open("UTF-8", cc.name);
        if (p->cd == (iconv_t)-1) /* this libc lacks it: the default */
            charset_default(&cc);
    }
    p->st.enc_source = (int)cc.source;
    p->mode = cc.mode;
    p->unit = cc.unit;
    p->st.encoding = cc.name;

    /* How libxml2 is driven, measured (callgrind instructions, libxml2
     * 2.9.14 alone as bench_links's floor drives it, on every 20th of the
     * openjdk-17-doc API pages: 507 pages, 13.6 MB; base 2,143 M, i.e.
     * ~158 per byte, about all of it in libxml2's tokenizer):
     *   no characters/cdataBlock callbacks       2,139 M (-0.2%): we keep
     *     them, the title and <style> need them;
     *   HTML_PARSE_NOBLANKS 2,137 M, HTML_PARSE_COMPACT 2,142 M: noise,
     *     they only matter when a tree is built; not set;
     *   one context per thread reset per page (xmlCtxtResetPush; a push
     *     context after htmlCtxtReset has no input and parses nothing)
     *     2,149 M (+0.3%), on 500 pages of 3 KB -0.9%: a new one per page;
     *   blocks of 4 KiB 2,107 M, 64 KiB 2,148 M, 256 KiB 2,166 M, 1 MiB
     *     2,167 M; through links_feed (the guard included) BLOCK 4096
     *     2,430 M, 8192 2,416 M, 16384 2,416 M: 16 KiB;
     *   the pull parser on the whole page in memory 2,135 M (-0.4%):
     *     streaming costs nothing;
     *   the cut before '<' (blk_cut) +0.8%, for a bounded buffer (the
     *     crawl's peak RSS went from 39-42 MiB to 24 MiB).
     * UTF-8 pages are not converted: libxml2 reads our bytes through its
     * pass-through UTF-8 handler (IGNORE_ENC). The guard and the copy into
     * blocks add 12% to libxml2's count (push_utf8 157 M, guard_char 37 M,
     * g_step 28 M; 2026-12-02: push_utf8 152 M, guard_char 35 M, g_step
     * 26 M; after the fused pass below, the guard and the shortener
     * together ~245 M, 17% of libxml2's own 1,444 M).
     * Tried and not kept (branch jdk, 2026-12-02): shortening the text runs
     * between tags before libxml2 sees them (exact, checked both ways on
     * random, python3-doc and jdk pages and by fuzz_links) fed libxml2
     * 13.5% fewer bytes and cut its count by ~6%, but the pre-pass that
     * finds the runs cost more (151 M -> 341 M): 2,162 M -> 2,252 M (+4%).
     * javadoc's text comes in short runs; libxml2's cost is in tags.
     * Kept (branch speed21, 2026-12-02), once the fused pass finds the runs
     * anyway (its memchr for '<'): the text runs cut to "x" (sh_text_end,
     * "Unread text"). 507 jdk pages (every 20th, sorted; openjdk-17-doc
     * 17.0.21, 13.3 MB; 2.96 MB of text elided besides 4.12 MB of
     * attributes): links_feed + links_finish 1,786 M -> 1,605 M (-10.1%;
     * the floor, libxml2 alone unshortened, ~2,070 M); libxml2 with our
     * callbacks (blk_flush) 1,507 M -> 1,266 M (-16%); the pre-pass
     * (sh_tag, push_utf8, sh_run, blk_put) 246 M -> 302 M. python3-doc,
     * every 5th page (106, 8.95 MB, 1.79 MB of text elided): 1,238 M ->
     * 1,133 M (-8.5%; blk_flush 1,001 M -> 850 M, the pre-pass 211 M ->
     * 254 M). Whole jdk crawls (bench config), main's crawld and this one
     * alternating with wget2 in one run of 6 rounds on a loaded machine:
     * crawld CPU median 6.06 s -> 5.00 s (0.59 -> 0.49 ms/page; wget2
     * 2.74 s), wall 8.5 s -> 7.6 s (wget2 3.6 s), peak RSS 24 MiB both;
     * perf split after: libxml2 33%, crawld 24% (sh_tag 4.5, push_utf8
     * 2.4, sh_run 1.3, blk_put 1.2; the URL path, Bloom and scope ~10%),
     * libc 19%, kernel 13%, curl 5%, SQLite 4%.
     * Kept (branch attrs, 2026-12-02): the values of attributes nothing
     * reads cut to one byte (sh_put, exact as "Unread attribute values"
     * says; keep_values turns it off). 507 jdk pages (every 20th from the
     * first, sorted; 13.3 MB): 2.89 MB elided; libxml2 with our callbacks (blk_flush) 2,116 M ->
     * 1,730 M (-18%); sh_put's own cost 156 M (scanning in runs and each
     * value once; 213 M char by char); links_feed + links_finish 2,359 M ->
     * 2,162 M (-8.4%), and 2,082 M (-11.7%) with utf8_copy's ASCII runs
     * (6 M; 44 M in the base build, 79 M once the shortener changed what
     * the compiler inlined). The floor (libxml2 alone, unshortened) is
     * 2,072 M: the module went from 1.14x to 1.005x of it. keep_values:
     * 2,320 M, the base less utf8_copy's gain (the block bookkeeping for
     * shortened values costs nothing measurable). python3-doc, every 5th
     * page (106, 8.95 MB, 1.84 MB elided): 1,682 M -> 1,552 M (-7.7%;
     * blk_flush 1,495 M -> 1,191 M, sh_put 143 M), floor 1,441 M. CPU time
     * gains less than the count: bench_links -r 5 on the jdk pages, 5
     * interleaved runs each, module CPU / floor CPU median 1.15 -> 1.105
     * (0.316 s -> 0.306 s median; the machine was shared).
     * Kept (branch prepass, 2026-12-02): the whole unread attribute goes,
     * not only its value (sh_shorten): 507 jdk pages 1,933 M -> 1,789 M
     * (-7.5%; libxml2's own 1,444 M -> 1,314 M, fewer attributes to name,
     * copy, compare and free). An estimate first, the pages rewritten by a
     * script without those attributes: 1,666 M. With the fused pass:
     * 2,083 M -> 1,790 M (-14%) on the jdk pages; python3-doc, every 5th
     * page (106, 8.95 MB): 1,547 M -> 1,240 M (-20%). bench_links -r 3 on
     * the jdk pages, 5 interleaved runs each: module CPU median 0.281 s ->
     * 0.238 s, module / floor 1.07 -> 0.88 (below the floor: libxml2 gets
     * fewer bytes than in it). Whole jdk crawls, 3 interleaved each on a
     * loaded machine: crawld CPU median 8.75 s -> 7.97 s (0.863 -> 0.786
     * ms/page), wall 7.58 s -> 7.13 s, peak RSS 24.3 MiB both; perf split
     * after: libxml2 47.7%, crawld 21.8% (sh_tag 5.5, push_utf8 1.2, sh_run
     * 1.1), libc 17.9%, kernel 5.9%, SQLite 3.1%, curl 3.0%.
     * Kept (branch prepass, 2026-12-02): the guard and the shortener in one
     * pass (fused_scan; each byte read once where both read it the same
     * way). The same 507 jdk pages: links_feed + links_finish 2,083 M ->
     * 1,933 M (-7.2%); the pre-pass (push_utf8 152 M, sh_put 156 M,
     * guard_char 35 M, g_step 26 M, memchr 24 M) -> sh_tag 152 M, push_utf8
     * 40 M, sh_run 36 M, memchr 16 M, guard_char and g_step below 1 M.
     * bench_links -r 3, 5 interleaved runs each: module CPU median 0.284 s
     * -> 0.263 s, module / floor median 1.11 -> 1.03. A whole crawl of the
     * jdk site (bench config, perf cpu-clock samples of the crawld process)
     * before: libxml2 46.6%, crawld 22.7% (this pre-pass ~12%: sh_put 4.6,
     * push_utf8 4.2, the guard's memchr 1.8, guard_char 0.8; URL parsing,
     * scope and dedup ~8%), libc 19.4% (strcmp 3.8 and memcmp 2.1 called
     * by libxml2, memchr 3.4, malloc/free ~4 most of it libxml2's own,
     * memmove 2.5: blk_put, libxml2's buffers, the URL forms), kernel 4.9%,
     * SQLite 3.0%, curl 2.8%; WARC, zlib and the digest 0 (the bench runs
     * with archive.warc = false); after: libxml2 49.6%, crawld 20.6%
     * (sh_tag 5.2, push_utf8 1.0, sh_run 1.0), libc 18.9%. No body is
     * gathered or copied on the way (hook_body feeds links_feed).
     * Measured, not built (2026-12-08): what libxml2 still costs is per
     * element (HashMap.html's 68 KB reach it as 14 KB, 335 <a> in it).
     * The jdk tree rewritten without the <a href> elements that repeat an
     * earlier href of their page up to the '#' (750,594 of 1,080,185),
     * crawled by this crawld, 5 interleaved rounds each on an idle
     * machine: CPU median 2.92 -> 2.24 s (-23%), wall 1.94 -> 1.57 s
     * (wget2 on the real tree: 2.02 s, 1.43 s). A pre-pass that collapses
     * such repeats (emitting the link itself, libxml2 never seeing the
     * element) could reach 631,513 of them while a page is below
     * max_links less a block's worth of links (so a cap drops the same
     * links); it reorders callbacks within a block and needs libxml2's
     * stack to be the same without the element (no open <a>, the next
     * tag its </a>). */
    quiet q;
    quiet_begin(&q);
    int rc = 0;
    htmlSAXHandler sax;
    memset(&sax, 0, sizeof sax);
    sax.startElement = on_start;
    sax.cdataBlock = on_cdata;
    sax.characters = on_chars;
    p->ctxt = htmlCreatePushParserCtxt(&sax, p, NULL, 0, NULL, XML_CHAR_ENCODING_NONE);
    if (p->ctxt == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    htmlCtxtUseOptions(p->ctxt, HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_NOERROR |
                                    HTML_PARSE_NOWARNING | HTML_PARSE_NODEFDTD |
                                    HTML_PARSE_IGNORE_ENC);
    p->ctxt->sax->serror = silent_structured;
    p->ctxt->sax->initialized = XML_SAX2_MAGIC; /* so serror is used */
    /* The pass-through UTF-8 handler: also keeps libxml2 from guessing. */
    xmlCharEncodingHandlerPtr h = xmlFindCharEncodingHandler("UTF-8");
    if (h == NULL || xmlSwitchToEncoding(p->ctxt, h) < 0)
        rc = -ENOMEM;
out:
    quiet_end(&q);
    if (rc < 0) {
        if (p->ctxt != NULL) {
            htmlFreeParserCtxt(p->ctxt);
            p->ctxt = NULL;
        }
        p->st.truncated |= LINKS_TRUNC_NOMEM;
        p->stopped = true;
        return rc;
    }
    push(p, s + skip, n - skip);
    return 0;
}

/* ---- API ------------------------------------------------------------------ */

links_parser *links_new(const links_opts *o, links_cb cb, void *ud)
{
    links_opts d = {0};
    if (o == NULL)
        o = &d;
    links_parser *p = cr_calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->max_links = o->max_links ? o->max_links : DEF_MAX_LINKS;
    p->max_url = o->max_url ? o->max_url : DEF_MAX_URL;
    if (p->max_url > MAX_MAX_URL)
        p->max_url = MAX_MAX_URL;
    p->max_bytes = o->max_bytes ? o->max_bytes : DEF_MAX_BYTES;
    p->max_depth = o->max_depth ? o->max_depth : DEF_MAX_DEPTH;
    if (p->max_depth > INT_MAX)
        p->max_depth = INT_MAX;
    p->max_attrs = o->max_attrs ? o->max_attrs : DEF_MAX_ATTRS;
    if (p->max_attrs > UINT32_MAX - 1)
        p->max_attrs = UINT32_MAX - 1;
    p->keep_values = o->keep_values != 0;
    p->cb = cb;
    p->ud = ud;
    p->cd = (iconv_t)-1;
    cr_buf_init(&p->style, STYLE_MAX);
    p->url = cr_malloc(2 * p->max_url + 1);
    p->base = cr_malloc(2 * p->max_url + 1);
    if (o->agent != NULL && o->agent[0] != '\0')
        p->agent = cr_strdup(o->agent);
    if (p->url == NULL || p->base == NULL || (o->agent != NULL && o->agent[0] && !p->agent)) {
        links_free(p);
        return NULL;
    }
    links_reset(p, NULL);
    return p;
}

void links_free(links_parser *p)
{
    if (p == NULL)
        return;
    links_reset(p, NULL);
    cr_buf_release(&p->style);
    cr_free(p->xblk);
    cr_free(p->tok_atts);
    cr_free(p->agent);
    cr_free(p->url);
    cr_free(p->base);
    cr_free(p);
}

void links_reset(links_parser *p, const char *content_type)
{
    if (p->ctxt != NULL) {
        htmlFreeParserCtxt(p->ctxt);
        p->ctxt = NULL;
    }
    if (p->cd != (iconv_t)-1)
        iconv_close(p->cd);
    p->cd = (iconv_t)-1;
    p->carry_len = 0;
    p->blk_len = 0;
    p->blk_orig = 0;
    p->blk_half = SIZE_MAX;
    p->sh = p->keep_values ? SH_OFF : SH_TEXT;
    p->sh_vstart = SIZE_MAX;
    p->sh_astart = SIZE_MAX;
    p->sh_tn = 0;
    p->sh_last = 0;
    p->sh_tx = TX_START;
    p->sh_thtml = false;
    p->sh_ttext = UINT64_MAX;
    p->sh_drop = DROP_NOT_YET;
    p->sh_tdrop = false;
    p->sh_tbody = false;
    p->sh_thead = false;
    memset(p->sh_inert_n, 0, sizeof p->sh_inert_n);
    p->sh_inert_open = 0;
    p->sh_cutb = 0;
    p->sh_offdrop = false;
    p->sh_style_end = false;
    p->tok_on = !p->keep_values;
    p->tok_soh = UINT64_MAX;
    p->tok_n = 0;
    p->tok_lo = 0;
    p->tok_dec = 0;
    p->tok_used = 0;
    p->blk_total = 0;
    p->finished = false;
    p->stopped = false;
    p->mode = CHARSET_UTF8;
    charset_header_label(content_type, p->header_label);
    p->fed = 0;
    p->sniff_len = 0;
    p->base_seen = false;
    p->base_ok = false;
    p->base_len = 0;
    p->robots = 0;
    memset(&p->st, 0, sizeof p->st);
    p->inert_depth = 0;
    p->inert_name = NULL;
    p->inert = false;
    p->g_mask = 0;
    p->g_lt = false;
    p->g_run = 0;
    cr_buf_clear(&p->style);
    p->in_style = false;
    p->style_cut = false;
    p->title_state = 0;
    p->title_space = false;
    p->title_len = 0;
    p->title[0] = '\0';
}

int links_feed(links_parser *p, const char *chunk, size_t len)
{
    if (p == NULL || p->finished)
        return -EINVAL;
    int rc = 0;
    p->st.bytes += len;
    size_t room = p->max_bytes - p->fed;
    if (len > room) {
        len = room;
        p->st.truncated |= LINKS_TRUNC_BYTES;
        rc = -EFBIG;
    }
    p->fed += len;
    const unsigned char *s = (const unsigned char *)chunk;
    if (p->ctxt == NULL && !p->stopped) {
        /* Hold bytes until the charset can be decided: 3 for a BOM when the
         * header names a charset, else the prescan's 1024. */
        size_t need = charset_label_known(p->header_label) ? 3 : CHARSET_SNIFF_MAX;
        size_t k = need - p->sniff_len < len ? need - p->sniff_len : len;
        memcpy(p->sniff + p->sniff_len, s, k);
        p->sniff_len += k;
        s += k;
        len -= k;
        if (p->sniff_len < need)
            return rc;
        int e = start_page(p);
        if (e < 0)
            return e;
    }
    push(p, s, len);
    return rc;
}

int links_finish(links_parser *p)
{
    if (p == NULL || p->finished)
        return -EINVAL;
    p->finished = true;
    if (p->ctxt == NULL && !p->stopped) {
        int e = start_page(p);
        if (e < 0)
            return e;
    }
    if (p->stopped)
        return 0;
    if (p->carry_len > 0) { /* an incomplete sequence at the end */
        char *in = (char *)p->carry;
        size_t left = p->carry_len;
        p->carry_len = 0;
        while (left > 0 && !p->stopped)
            iconv_skip(p, &in, &left);
    }
    blk_flush(p, 1, false);
    style_end(p); /* a <style> open at the end of the page */
    return 0;
}

const char *links_base(const links_parser *p, size_t *len)
{
    if (len != NULL)
        *len = p->base_ok ? p->base_len : 0;
    return p->base_ok ? p->base : NULL;
}

unsigned links_robots(const links_parser *p) { return p->robots; }

const char *links_title(links_parser *p, size_t *len)
{
    if (p->title_state == 0) {
        if (len != NULL)
            *len = 0;
        return NULL;
    }
    p->title[p->title_len] = '\0';
    if (len != NULL)
        *len = p->title_len;
    return p->title;
}

void links_stats_get(const links_parser *p, links_stats *out) { *out = p->st; }

const char *links_drop_name(int reason)
{
    static const char *const names[LINKS_DROP__COUNT] = {
        [LINKS_DROP_EMPTY] = "empty",         [LINKS_DROP_DATA] = "data",
        [LINKS_DROP_TOO_LONG] = "too_long",   [LINKS_DROP_MAX_LINKS] = "max_links",
        [LINKS_DROP_INERT] = "inert",
    };
    if (reason < 0 || reason >= LINKS_DROP__COUNT)
        return "?";
    return names[reason];
}

const char *links_trunc_name(unsigned bit)
{
    switch (bit) {
    case LINKS_TRUNC_BYTES:
        return "bytes";
    case LINKS_TRUNC_DEPTH:
        return "depth";
    case LINKS_TRUNC_ATTRS:
        return "attrs";
    case LINKS_TRUNC_PARSER:
        return "parser";
    case LINKS_TRUNC_NOMEM:
        return "nomem";
    default:
        return "?";
    }
}

const char *links_class_name(links_class c)
{
    switch (c) {
    case LINKS_NAVIGATION:
        return "navigation";
    case LINKS_REQUISITE:
        return "requisite";
    case LINKS_OTHER:
        return "other";
    default:
        return "?";
    }
}
