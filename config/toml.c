/* config/toml: a small, strict TOML 1.0 reader.
 *
 * One pass of recursive descent over (bytes, len); no I/O. Every byte is
 * looked at by exactly one rule, so UTF-8 and control-character checks in
 * strings and comments plus "unexpected character" everywhere else cover the
 * whole document; the first error stops the parse and is the one reported.
 *
 * Memory. The document (struct tdoc) owns two things: an arena of blocks
 * holding every string, key and container header (they never move) and the
 * small item arrays, and a list of every container, whose item arrays past
 * ARENA_ITEMS bytes and hash indexes are separate allocations. toml_free
 * walks that list, so freeing never recurses and a half-built tree from a
 * failed parse is freed the same way. (Small arrays that grow leave their
 * old copy in the arena: at most as much again as their final size.)
 * Values are stored by value (24 bytes) inside their table's entry array or
 * their array's item array; the parser only ever holds pointers to
 * containers, which are stable, never to values, which move on growth.
 *
 * Tables keep entries in definition order; past SMALL_TABLE entries they also
 * get an open-addressing hash index (entry number + 1 per slot, load <= 1/4
 * to 1/2), so lookups stay O(1) for huge tables.
 *
 * Table rules of TOML 1.0, as container flags: a [header] may walk through
 * any table, define a table only once, and may define a table that earlier
 * headers created implicitly as a parent (T_IMPLICIT). Dotted keys may only
 * walk through tables that dotted keys created (T_DOTTED). Inline tables
 * (T_INLINE) and static arrays are closed: nothing walks into them. [[x]]
 * appends only to arrays that [[x]] created (A_OFTABLES).
 *
 * Bounds: input over TOML_MAX_INPUT is refused before parsing; containers
 * (tables, arrays, table-array elements) nest at most TOML_MAX_DEPTH deep
 * and a key has at most TOML_MAX_DEPTH parts, so recursion is bounded by
 * TOML_MAX_DEPTH. Everything else is linear in the input; memory is at most
 * about 25 times the input for the most hostile shapes (e.g. "x=[{},{},...]").
 *
 * Choices the spec leaves open: CRLF inside multi-line strings is read as
 * LF; a UTF-8 byte order mark at the very start is skipped; a key may hold
 * a NUL (from \u0000) and is kept whole, but toml_key_at/toml_get see it
 * only up to the NUL; floats out of double range are errors, underflow is
 * not; a second of 60 (a leap second, RFC 3339) is accepted on any date,
 * as no table of leap seconds is kept; years run 0000..9999. No global state: parses may run in parallel threads, and floats are
 * read in the C locale whatever the process locale is (uselocale).
 *
 * Why one file of about 1,600 lines: it is one recursive-descent parser
 * whose rules call each other (value -> array / inline table -> value) and
 * share the parser state and its single error exit (fail); a split would
 * put that state and a dozen rules in a header for no reader's gain. The
 * sections (errors, memory, tables, lexing, strings, keys, values,
 * datetimes and the grammar, API) read top to bottom. */
#include "config/toml.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"

#define SMALL_TABLE 8          /* tables this small are searched linearly */
#define ARENA_FIRST 2048       /* first arena block; later ones double */
#define ARENA_MAX 65536        /* largest shared arena block */
#define ARENA_ITEMS 512        /* item arrays up to this size live in the arena */

enum {
    T_IMPLICIT = 1, /* created as the parent in a [header]; may be defined once */
    T_DEFINED = 2,  /* defined by its own [header] or [[header]] (or the root) */
    T_DOTTED = 4,   /* created by a dotted key; dotted keys may extend it */
    T_INLINE = 8,   /* inline table: closed once written */
    A_OFTABLES = 16 /* array made by [[header]]; [[header]] may append to it */
};

typedef struct tstr {
    size_t len;
    char s[]; /* len bytes and a NUL */
} tstr;

typedef struct tcont tcont;

struct toml_value {
    union {
        tstr *str; /* strings; the normalized text of datetimes */
        tcont *cont;
        int64_t i;
        double f;
        int b;
    } u;
    uint32_t line, col;
    uint8_t type;
    uint8_t is_root;
};

typedef struct tentry {
    const char *key; /* in the arena, NUL-terminated */
    uint32_t keylen;
    uint32_t hash;
    toml_value val;
} tentry;

struct tcont {
    tcont *next;     /* every container of the document, for toml_free */
    void *items;     /* tentry[] (table) or toml_value[] (array) */
    uint32_t n, cap;
    uint32_t *index; /* tables past SMALL_TABLE: entry number + 1, 0 = empty */
    uint32_t nslots; /* power of two */
    uint8_t depth;   /* root table 0 */
    uint8_t flags;
    uint8_t heap;    /* items outgrew the arena and were malloc'd */
};

typedef struct ablock {
    struct ablock *next;
    size_t used, cap;
    char data[];
} ablock;

typedef struct tdoc {
    toml_value root; /* first: toml_free casts the root back to its tdoc */
    ablock *blocks;
    size_t next_block;
    tcont *conts;
} tdoc;

typedef struct keypart {
    size_t off, len; /* bytes in parser.kbuf */
    size_t pos;      /* offset in the input */
    uint32_t line, col;
    uint32_t hash;
} keypart;

typedef struct parser {
    const unsigned char *s;
    size_t len, pos;
    uint32_t line; /* line of pos; lines start after each LF */
    size_t bol;    /* offset of the first byte of that line */
    tdoc *doc;
    toml_error *err;
    int failed;
    cr_buf sbuf; /* decoded string value */
    cr_buf kbuf; /* decoded key parts, back to back */
    keypart keys[TOML_MAX_DEPTH];
    size_t nkeys;
    locale_t c_locale; /* for strtod; made on first float */
} parser;

/* ---------------------------------------------------------------- errors */

static void pos_of(const parser *p, size_t off, uint32_t *line, uint32_t *col)
{
    uint32_t ln = p->line;
    size_t bol = p->bol;
    while (off < bol) { /* rarely: an error reported at an earlier line */
        ln--;
        size_t q = bol - 1; /* the LF ending the previous line */
        while (q > 0 && p->s[q - 1] != '\n')
            q--;
        bol = q;
    }
    *line = ln;
    *col = (uint32_t)(off - bol + 1);
}

__attribute__((format(printf, 3, 4)))
static int fail(parser *p, size_t off, const char *fmt, ...)
{
    if (p->failed)
        return -1;
    p->failed = 1;
    uint32_t line, col;
    pos_of(p, off, &line, &col);
    p->err->line = (int)line;
    p->err->col = (int)col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err->msg, sizeof p->err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

static int oom(parser *p)
{
    if (p->failed)
        return -1;
    p->failed = 1;
    p->err->line = 0;
    p->err->col = 0;
    snprintf(p->err->msg, sizeof p->err->msg, "out of memory");
    return -1;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
static int utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    int k;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        k = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < (size_t)k || s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < k; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return k;
}

static uint32_t utf8_decode(const unsigned char *s, int k)
{
    static const unsigned char mask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    uint32_t cp = s[0] & mask[k];
    for (int i = 1; i < k; i++)
        cp = (cp << 6) | (s[i] & 0x3F);
    return cp;
}

/* What is at off, for messages: "'x'", "newline", "end of input", ... */
static const char *describe(const parser *p, size_t off, char *buf, size_t n)
{
    if (off >= p->len)
        return "end of input";
    unsigned c = p->s[off];
    if (c == '\n')
        return "newline";
    if (c == '\r')
        return off + 1 < p->len && p->s[off + 1] == '\n' ? "newline" : "bare carriage return";
    if (c == '\t')
        return "tab";
    if (c == ' ')
        return "space";
    if (c > 0x20 && c < 0x7F)
        snprintf(buf, n, "'%c'", (char)c);
    else if (c < 0x80)
        snprintf(buf, n, "control character U+%04X", c);
    else {
        int k = utf8_len(p->s + off, p->len - off);
        if (k == 0)
            snprintf(buf, n, "invalid UTF-8 byte 0x%02X", c);
        else
            snprintf(buf, n, "character U+%04X", (unsigned)utf8_decode(p->s + off, k));
    }
    return buf;
}

/* A key for messages: printable ASCII as is, other bytes as \xHH, cut short. */
static const char *show_key(const char *k, size_t n, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (o + 8 >= cap) {
            snprintf(buf + o, cap - o, "...");
            return buf;
        }
        unsigned char c = (unsigned char)k[i];
        if (c >= 0x20 && c < 0x7F && c != '\\' && c != '\'')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02X", c);
    }
    buf[o] = '\0';
    return buf;
}

/* ----------------------------------------------------------------- memory */

static void *arena_alloc(parser *p, size_t n)
{
    tdoc *d = p->doc;
    n = (n + 7) & ~(size_t)7;
    ablock *b = d->blocks;
    if (b == NULL || b->cap - b->used < n) {
        size_t cap = d->next_block;
        int own = n > cap / 4; /* big requests get a block of their own */
        if (own)
            cap = n;
        ablock *nb = cr_malloc(sizeof *nb + cap);
        if (nb == NULL) {
            oom(p);
            return NULL;
        }
        nb->cap = cap;
        nb->used = 0;
        if (own && b != NULL) { /* keep filling the current block */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            d->blocks = nb;
            if (d->next_block < ARENA_MAX)
                d->next_block *= 2;
        }
        b = nb;
    }
    void *r = b->data + b->used;
    b->used += n;
    return r;
}

static const char *arena_str(parser *p, const char *s, size_t n)
{
    char *r = arena_alloc(p, n + 1);
    if (r == NULL)
        return NULL;
    if (n)
        memcpy(r, s, n);
    r[n] = '\0';
    return r;
}

static tstr *arena_tstr(parser *p, const char *s, size_t n)
{
    tstr *r = arena_alloc(p, sizeof *r + n + 1);
    if (r == NULL)
        return NULL;
    r->len = n;
    if (n)
        memcpy(r->s, s, n);
    r->s[n] = '\0';
    return r;
}

static tcont *cont_new(parser *p, int depth, int flags)
{
    tcont *c = arena_alloc(p, sizeof *c);
    if (c == NULL)
        return NULL;
    memset(c, 0, sizeof *c);
    c->depth = (uint8_t)depth;
    c->flags = (uint8_t)flags;
    c->next = p->doc->conts;
    p->doc->conts = c;
    return c;
}

/* ----------------------------------------------------------------- tables */

static uint64_t hash_seed(void)
{
    /* Varies with address-space layout, so colliding keys cannot be
     * precomputed for every run; results never depend on it. */
    static const char anchor;
    uint64_t x = (uint64_t)(uintptr_t)&anchor;
    x ^= x >> 31;
    x *= 0x9E3779B97F4A7C15ull;
    return x ^ (x >> 29);
}

static uint32_t key_hash(const char *k, size_t n)
{
    uint64_t h = hash_seed() ^ 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)k[i];
        h *= 0x100000001B3ull;
    }
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    return (uint32_t)h;
}

static long tab_find(const tcont *t, const char *k, size_t n, uint32_t h)
{
    const tentry *e = t->items;
    if (t->index == NULL) {
        for (uint32_t i = 0; i < t->n; i++)
            if (e[i].hash == h && e[i].keylen == n && memcmp(e[i].key, k, n) == 0)
                return (long)i;
        return -1;
    }
    uint32_t mask = t->nslots - 1;
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t s = t->index[i];
        if (s == 0)
            return -1;
        const tentry *x = &e[s - 1];
        if (x->hash == h && x->keylen == n && memcmp(x->key, k, n) == 0)
            return (long)(s - 1);
    }
}

static void index_put(tcont *t, uint32_t at)
{
    const tentry *e = t->items;
    uint32_t mask = t->nslots - 1;
    uint32_t i = e[at].hash & mask;
    while (t->index[i] != 0)
        i = (i + 1) & mask;
    t->index[i] = at + 1;
}

/* Doubles c's item array (elements of size bytes). */
static int grow(parser *p, tcont *c, size_t size)
{
    if (c->cap > UINT32_MAX / 4)
        return oom(p);
    uint32_t nc = c->cap ? c->cap * 2 : 1;
    size_t bytes = (size_t)nc * size;
    void *ni;
    if (c->heap) {
        ni = cr_realloc(c->items, bytes);
        if (ni == NULL)
            return oom(p);
    } else {
        ni = bytes <= ARENA_ITEMS ? arena_alloc(p, bytes) : cr_malloc(bytes);
        if (ni == NULL)
            return bytes <= ARENA_ITEMS ? -1 : oom(p);
        if (c->n)
            memcpy(ni, c->items, (size_t)c->n * size);
        c->heap = bytes > ARENA_ITEMS;
    }
    c->items = ni;
    c->cap = nc;
    return 0;
}

/* Appends key (already in the arena) = v; the caller made sure it is new. */
static int tab_add(parser *p, tcont *t, const char *key, size_t keylen, uint32_t hash,
                   const toml_value *v)
{
    if (t->n == t->cap && grow(p, t, sizeof(tentry)) < 0)
        return -1;
    tentry *e = (tentry *)t->items + t->n;
    e->key = key;
    e->keylen = (uint32_t)keylen;
    e->hash = hash;
    e->val = *v;
    t->n++;
    if (t->n <= SMALL_TABLE)
        return 0;
    if (t->index == NULL || (uint64_t)t->n * 2 > t->nslots) {
        uint32_t ns = 32;
        while (ns < t->n * 4u)
            ns *= 2;
        uint32_t *ix = cr_calloc(ns, sizeof *ix);
        if (ix == NULL)
            return oom(p);
        cr_free(t->index);
        t->index = ix;
        t->nslots = ns;
        for (uint32_t i = 0; i < t->n; i++)
            index_put(t, i);
    } else
        index_put(t, t->n - 1);
    return 0;
}

static int arr_push(parser *p, tcont *a, const toml_value *v)
{
    if (a->n == a->cap && grow(p, a, sizeof(toml_value)) < 0)
        return -1;
    ((toml_value *)a->items)[a->n++] = *v;
    return 0;
}

static toml_value *entry_val(tcont *t, long j) { return &((tentry *)t->items)[j].val; }

static const char *kp_name(const parser *p, const keypart *k) { return p->kbuf.data + k->off; }

static int too_deep(parser *p, size_t off)
{
    return fail(p, off, "nesting too deep (max %d levels)", TOML_MAX_DEPTH);
}

/* Creates a table or array under key part k of t; returns it, NULL on error. */
static tcont *new_child(parser *p, tcont *t, const keypart *k, toml_type type, int flags)
{
    if (t->depth + 1 > TOML_MAX_DEPTH) {
        too_deep(p, k->pos);
        return NULL;
    }
    tcont *c = cont_new(p, t->depth + 1, flags);
    const char *key = arena_str(p, kp_name(p, k), k->len);
    if (c == NULL || key == NULL)
        return NULL;
    toml_value v = {.type = (uint8_t)type, .line = k->line, .col = k->col};
    v.u.cont = c;
    if (tab_add(p, t, key, k->len, k->hash, &v) < 0)
        return NULL;
    return c;
}

/* A new table element at the end of array of tables a, for header key k. */
static tcont *aot_append(parser *p, tcont *a, const keypart *k)
{
    if (a->depth + 1 > TOML_MAX_DEPTH) {
        too_deep(p, k->pos);
        return NULL;
    }
    tcont *c = cont_new(p, a->depth + 1, T_DEFINED);
    if (c == NULL)
        return NULL;
    toml_value v = {.type = TOML_TABLE, .line = k->line, .col = k->col};
    v.u.cont = c;
    if (arr_push(p, a, &v) < 0)
        return NULL;
    return c;
}

/* ------------------------------------------------------------------ lexing */

static int is_bare(unsigned c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

static void newline_at(parser *p) /* call with pos just past an LF */
{
    p->line++;
    p->bol = p->pos;
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'))
        p->pos++;
}

/* 1 for LF, 2 for CRLF at off, else 0. */
static int newline_len(const parser *p, size_t off)
{
    if (off < p->len && p->s[off] == '\n')
        return 1;
    if (off + 1 < p->len && p->s[off] == '\r' && p->s[off + 1] == '\n')
        return 2;
    return 0;
}

static void eat_newline(parser *p, int n)
{
    p->pos += (size_t)n;
    newline_at(p);
}

/* At '#': skips the comment up to (not over) its line end. */
static int skip_comment(parser *p)
{
    char d[48];
    p->pos++;
    while (p->pos < p->len) {
        unsigned c = p->s[p->pos];
        if (c == '\n' || newline_len(p, p->pos) == 2)
            return 0;
        if (c >= 0x80) {
            int k = utf8_len(p->s + p->pos, p->len - p->pos);
            if (k == 0)
                return fail(p, p->pos, "%s in comment", describe(p, p->pos, d, sizeof d));
            p->pos += (size_t)k;
        } else if ((c < 0x20 && c != '\t') || c == 0x7F)
            return fail(p, p->pos, "%s in comment", describe(p, p->pos, d, sizeof d));
        else
            p->pos++;
    }
    return 0;
}

/* Spaces, tabs, comments and newlines (inside arrays). */
static int skip_ws_nl(parser *p)
{
    for (;;) {
        skip_ws(p);
        if (p->pos >= p->len)
            return 0;
        int n = newline_len(p, p->pos);
        if (n)
            eat_newline(p, n);
        else if (p->s[p->pos] == '#') {
            if (skip_comment(p) < 0)
                return -1;
        } else
            return 0;
    }
}

/* After a key/value or a header: optional comment, then a newline or EOF. */
static int end_of_line(parser *p, const char *after)
{
    char d[48];
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == '#' && skip_comment(p) < 0)
        return -1;
    if (p->pos >= p->len)
        return 0;
    int n = newline_len(p, p->pos);
    if (n == 0 && after == NULL)
        return fail(p, p->pos, "unexpected %s", describe(p, p->pos, d, sizeof d));
    if (n == 0)
        return fail(p, p->pos, "unexpected %s after %s", describe(p, p->pos, d, sizeof d), after);
    eat_newline(p, n);
    return 0;
}

/* ----------------------------------------------------------------- strings */

static int put(parser *p, cr_buf *out, const void *s, size_t n)
{
    return cr_buf_append(out, s, n) < 0 ? oom(p) : 0;
}

static int put_utf8(parser *p, cr_buf *out, uint32_t cp)
{
    unsigned char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | (cp >> 6));
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (cp >> 12));
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | (cp >> 18));
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return put(p, out, b, n);
}

static int hexval(unsigned c)
{
    if (c >= '0' && c <= '9')
        return (int)(c - '0');
    if (c >= 'a' && c <= 'f')
        return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F')
        return (int)(c - 'A' + 10);
    return -1;
}

/* At a backslash inside a basic string opened at open. In a multi-line
 * string a backslash ending its line (trailing spaces allowed) swallows all
 * whitespace and newlines up to the next other character. */
static int escape(parser *p, cr_buf *out, size_t open, int ml)
{
    char d[48];
    const char *what = ml ? "multi-line basic string" : "basic string";
    size_t bs = p->pos++;
    if (p->pos >= p->len)
        return fail(p, open, "unterminated %s", what);
    unsigned c = p->s[p->pos];
    static const char from[] = "btnfr\"\\";
    static const char to[] = "\b\t\n\f\r\"\\";
    const char *m = c ? strchr(from, (int)c) : NULL;
    if (m != NULL) {
        p->pos++;
        return put(p, out, &to[m - from], 1);
    }
    if (c == 'u' || c == 'U') {
        int nd = c == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (int i = 1; i <= nd; i++) {
            int h = p->pos + (size_t)i < p->len ? hexval(p->s[p->pos + (size_t)i]) : -1;
            if (h < 0)
                return fail(p, bs, "invalid unicode escape '\\%c' (needs %d hex digits)", (char)c,
                            nd);
            cp = (cp << 4) | (uint32_t)h;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail(p, bs, "invalid unicode escape '\\%c%.*s' (not a unicode scalar value)",
                        (char)c, nd, (const char *)p->s + p->pos + 1);
        p->pos += (size_t)nd + 1;
        return put_utf8(p, out, cp);
    }
    if (ml && (c == ' ' || c == '\t' || newline_len(p, p->pos))) {
        size_t q = p->pos;
        while (q < p->len && (p->s[q] == ' ' || p->s[q] == '\t'))
            q++;
        if (newline_len(p, q) == 0)
            return fail(p, bs, "invalid escape: '\\' followed by whitespace must end the line");
        p->pos = q;
        for (;;) {
            skip_ws(p);
            int n = newline_len(p, p->pos);
            if (n == 0)
                return 0;
            eat_newline(p, n);
        }
    }
    if (c > 0x20 && c < 0x7F)
        return fail(p, bs, "invalid escape '\\%c'", (char)c);
    return fail(p, bs, "invalid escape: '\\' followed by %s", describe(p, p->pos, d, sizeof d));
}

/* Checks the character at pos inside a string; returns its length or -1. */
static int string_char(parser *p)
{
    char d[48];
    unsigned c = p->s[p->pos];
    if (c >= 0x80) {
        int k = utf8_len(p->s + p->pos, p->len - p->pos);
        if (k == 0)
            return fail(p, p->pos, "%s in string", describe(p, p->pos, d, sizeof d));
        return k;
    }
    if ((c < 0x20 && c != '\t') || c == 0x7F)
        return fail(p, p->pos, "%s in string", describe(p, p->pos, d, sizeof d));
    return 1;
}

/* A one-line basic ("...") or literal ('...') string at pos; appends its
 * value to out. */
static int parse_string1(parser *p, cr_buf *out)
{
    unsigned q = p->s[p->pos];
    const char *what = q == '"' ? "basic string" : "literal string";
    size_t open = p->pos++;
    size_t run = p->pos;
    for (;;) {
        if (p->pos >= p->len || p->s[p->pos] == '\n' || p->s[p->pos] == '\r')
            return fail(p, open, "unterminated %s", what);
        unsigned c = p->s[p->pos];
        if (c == q) {
            int rc = put(p, out, p->s + run, p->pos - run);
            p->pos++;
            return rc;
        }
        if (c == '\\' && q == '"') {
            if (put(p, out, p->s + run, p->pos - run) < 0 || escape(p, out, open, 0) < 0)
                return -1;
            run = p->pos;
            continue;
        }
        int k = string_char(p);
        if (k < 0)
            return -1;
        p->pos += (size_t)k;
    }
}

/* A multi-line string ("""...""" or '''...''') at pos. A newline right after
 * the opening delimiter is dropped; CRLF is read as LF; one or two quotes
 * may directly precede the closing delimiter. */
static int parse_string3(parser *p, cr_buf *out)
{
    unsigned q = p->s[p->pos];
    const char *what = q == '"' ? "multi-line basic string" : "multi-line literal string";
    size_t open = p->pos;
    p->pos += 3;
    int n = newline_len(p, p->pos);
    if (n)
        eat_newline(p, n);
    size_t run = p->pos;
    for (;;) {
        if (p->pos >= p->len)
            return fail(p, open, "unterminated %s", what);
        unsigned c = p->s[p->pos];
        if (c == q) {
            size_t k = 0;
            while (p->pos + k < p->len && p->s[p->pos + k] == q)
                k++;
            if (k < 3) {
                p->pos += k;
                continue;
            }
            if (k > 5)
                k = 5; /* any further quote is left for the caller to reject */
            p->pos += k - 3;
            int rc = put(p, out, p->s + run, p->pos - run);
            p->pos += 3;
            return rc;
        }
        if (c == '\\' && q == '"') {
            if (put(p, out, p->s + run, p->pos - run) < 0 || escape(p, out, open, 1) < 0)
                return -1;
            run = p->pos;
            continue;
        }
        if (c == '\n' || c == '\r') {
            n = newline_len(p, p->pos);
            if (n == 0)
                return fail(p, p->pos, "bare carriage return in string");
            if (put(p, out, p->s + run, p->pos - run) < 0 || put(p, out, "\n", 1) < 0)
                return -1;
            eat_newline(p, n);
            run = p->pos;
            continue;
        }
        int k = string_char(p);
        if (k < 0)
            return -1;
        p->pos += (size_t)k;
    }
}

static int is_triple(const parser *p)
{
    return p->pos + 2 < p->len && p->s[p->pos + 1] == p->s[p->pos] &&
           p->s[p->pos + 2] == p->s[p->pos];
}

/* ------------------------------------------------------------------- keys */

/* A dotted key at pos into p->keys / p->kbuf; leaves pos after trailing
 * whitespace. */
static int parse_key(parser *p)
{
    char d[48];
    p->nkeys = 0;
    cr_buf_clear(&p->kbuf);
    for (;;) {
        skip_ws(p);
        if (p->nkeys == TOML_MAX_DEPTH)
            return fail(p, p->pos, "key has too many parts (max %d)", TOML_MAX_DEPTH);
        keypart *k = &p->keys[p->nkeys];
        k->pos = p->pos;
        k->line = p->line;
        k->col = (uint32_t)(p->pos - p->bol + 1);
        k->off = p->kbuf.len;
        unsigned c = p->pos < p->len ? p->s[p->pos] : 0;
        if (p->pos < p->len && is_bare(c)) {
            size_t a = p->pos;
            while (p->pos < p->len && is_bare(p->s[p->pos]))
                p->pos++;
            if (put(p, &p->kbuf, p->s + a, p->pos - a) < 0)
                return -1;
        } else if (p->pos < p->len && (c == '"' || c == '\'')) {
            if (is_triple(p))
                return fail(p, p->pos, "a multi-line string cannot be a key");
            if (parse_string1(p, &p->kbuf) < 0)
                return -1;
        } else
            return fail(p, p->pos, "expected a key, found %s", describe(p, p->pos, d, sizeof d));
        k->len = p->kbuf.len - k->off;
        k->hash = key_hash(kp_name(p, k), k->len);
        p->nkeys++;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == '.') {
            p->pos++;
            continue;
        }
        return 0;
    }
}

/* ----------------------------------------------------------------- values */

static int parse_value(parser *p, int depth, toml_value *out);

/* digits (of the given base) with single underscores between them, from
 * *i up to b; at least one digit. */
static int digits(parser *p, size_t *i, size_t b, int base, const char *what)
{
    char d[48];
    size_t j = *i;
    if (j >= b || hexval(p->s[j]) < 0 || hexval(p->s[j]) >= base)
        return fail(p, j, "expected a digit in %s, found %s", what,
                    describe(p, j, d, sizeof d));
    while (j < b) {
        unsigned c = p->s[j];
        if (c == '_') {
            if (j + 1 >= b || hexval(p->s[j + 1]) < 0 || hexval(p->s[j + 1]) >= base)
                return fail(p, j, "'_' must be between digits");
            j++;
        } else if (hexval(c) < 0 || hexval(c) >= base)
            break;
        else
            j++;
    }
    *i = j;
    return 0;
}

static int to_double(parser *p, size_t a, size_t b, double *out)
{
    cr_buf_clear(&p->sbuf);
    for (size_t i = a; i < b; i++)
        if (p->s[i] != '_' && put(p, &p->sbuf, p->s + i, 1) < 0)
            return -1;
    if (p->c_locale == (locale_t)0) {
        p->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        if (p->c_locale == (locale_t)0)
            return oom(p);
    }
    locale_t old = uselocale(p->c_locale);
    char *end;
    errno = 0;
    double v = strtod(p->sbuf.data, &end);
    uselocale(old);
    if (*end != '\0') /* cannot happen: the syntax was checked */
        return fail(p, a, "invalid float");
    if (isinf(v))
        return fail(p, a, "float out of range");
    *out = v;
    return 0;
}

/* A number token s[a..b): integer (decimal, 0x, 0o, 0b) or float. */
static int parse_number(parser *p, size_t a, size_t b, toml_value *out)
{
    char d[48];
    size_t i = a;
    int sign = 0;
    if (p->s[i] == '+' || p->s[i] == '-')
        sign = p->s[i++] == '-' ? -1 : 1;
    if (i + 1 < b && p->s[i] == '0' &&
        (p->s[i + 1] == 'x' || p->s[i + 1] == 'o' || p->s[i + 1] == 'b')) {
        int base = p->s[i + 1] == 'x' ? 16 : p->s[i + 1] == 'o' ? 8 : 2;
        const char *what = base == 16 ? "hexadecimal integer" :
                           base == 8 ? "octal integer" : "binary integer";
        if (sign)
            return fail(p, a, "a sign is not allowed on a %s", what);
        i += 2;
        size_t st = i;
        if (digits(p, &i, b, base, what) < 0)
            return -1;
        if (i < b)
            return fail(p, i, "unexpected %s in %s", describe(p, i, d, sizeof d), what);
        uint64_t v = 0;
        for (size_t j = st; j < b; j++) {
            if (p->s[j] == '_')
                continue;
            if (v > ((uint64_t)INT64_MAX - (uint64_t)hexval(p->s[j])) / (uint64_t)base)
                return fail(p, a, "integer out of range");
            v = v * (uint64_t)base + (uint64_t)hexval(p->s[j]);
        }
        out->type = TOML_INTEGER;
        out->u.i = (int64_t)v;
        return 0;
    }
    size_t st = i;
    if (digits(p, &i, b, 10, "number") < 0)
        return -1;
    if (p->s[st] == '0' && i - st > 1)
        return fail(p, st, "leading zeros are not allowed");
    int is_float = 0;
    if (i < b && p->s[i] == '.') {
        is_float = 1;
        i++;
        if (digits(p, &i, b, 10, "fraction") < 0)
            return -1;
    }
    if (i < b && (p->s[i] == 'e' || p->s[i] == 'E')) {
        is_float = 1;
        i++;
        if (i < b && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        if (digits(p, &i, b, 10, "exponent") < 0)
            return -1;
    }
    if (i < b)
        return fail(p, i, "unexpected %s in number", describe(p, i, d, sizeof d));
    if (is_float) {
        out->type = TOML_FLOAT;
        return to_double(p, a, b, &out->u.f);
    }
    uint64_t limit = sign < 0 ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    for (size_t j = st; j < b; j++) {
        if (p->s[j] == '_')
            continue;
        uint64_t dg = (uint64_t)(p->s[j] - '0');
        if (v > (limit - dg) / 10)
            return fail(p, a, "integer out of range");
        v = v * 10 + dg;
    }
    out->type = TOML_INTEGER;
    if (sign < 0)
        out->u.i = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    else
        out->u.i = (int64_t)v;
    return 0;
}

static int is_token(unsigned c) { return is_bare(c) || c == '+' || c == '.'; }

static int is_digit(unsigned c) { return c >= '0' && c <= '9'; }

/* -------------------------------------------------------------- datetimes */

static int is_leap(int y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

static int days_in(int y, int m)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : dm[m - 1];
}

/* A field of exactly n digits at pos, lo..hi; moves past it. */
static int dt_field(parser *p, const char *name, int n, int lo, int hi, int *out)
{
    char d[48];
    size_t a = p->pos, b = a;
    while (b < p->len && is_digit(p->s[b]))
        b++;
    if (b == a)
        return fail(p, a, "expected a %d-digit %s, found %s", n, name,
                    describe(p, a, d, sizeof d));
    if (b - a != (size_t)n)
        return fail(p, a, "%s must have %d digits", name, n);
    int v = 0;
    for (size_t i = a; i < b; i++)
        v = v * 10 + (p->s[i] - '0');
    if (v < lo || v > hi)
        return fail(p, a, "%s %0*d out of range (%0*d..%0*d)", name, n, v, n, lo, n, hi);
    p->pos = b;
    *out = v;
    return 0;
}

static int dt_sep(parser *p, char c, const char *between)
{
    char d[48];
    if (p->pos < p->len && p->s[p->pos] == (unsigned char)c) {
        p->pos++;
        return 0;
    }
    return fail(p, p->pos, "expected '%c' %s, found %s", c, between,
                describe(p, p->pos, d, sizeof d));
}

/* HH:MM:SS[.fraction] at pos, written to sbuf as read (fraction verbatim). */
static int dt_time(parser *p)
{
    char d[48], t[16];
    int h, m, s;
    if (dt_field(p, "hour", 2, 0, 23, &h) < 0 || dt_sep(p, ':', "between hour and minute") < 0 ||
        dt_field(p, "minute", 2, 0, 59, &m) < 0)
        return -1;
    if (p->pos >= p->len || p->s[p->pos] != ':')
        return fail(p, p->pos, "expected ':' and seconds after the minute (TOML 1.0 requires "
                    "seconds), found %s", describe(p, p->pos, d, sizeof d));
    p->pos++;
    if (dt_field(p, "second", 2, 0, 60, &s) < 0) /* 60: a leap second (RFC 3339) */
        return -1;
    snprintf(t, sizeof t, "%02d:%02d:%02d", h, m, s);
    if (put(p, &p->sbuf, t, 8) < 0)
        return -1;
    if (p->pos < p->len && p->s[p->pos] == '.') {
        size_t a = p->pos++;
        while (p->pos < p->len && is_digit(p->s[p->pos]))
            p->pos++;
        if (p->pos == a + 1)
            return fail(p, p->pos, "expected a digit after '.' in the seconds, found %s",
                        describe(p, p->pos, d, sizeof d));
        if (put(p, &p->sbuf, p->s + a, p->pos - a) < 0)
            return -1;
    }
    return 0;
}

/* Offset date-time, local date-time, local date or local time at pos (the
 * caller saw digits then '-', or then ':' for a time). The value keeps its text normalized
 * the way toml-test writes it: 'T' and 'Z' upper case, a space separator
 * read as 'T', the fraction of a second as written. */
static int parse_datetime(parser *p, int time_only, toml_value *out)
{
    char d[48], t[16];
    const char *kind;
    cr_buf_clear(&p->sbuf);
    if (time_only) {
        if (dt_time(p) < 0)
            return -1;
        out->type = TOML_TIME_LOCAL;
        kind = "local time";
    } else {
        int y, mo, dd;
        if (dt_field(p, "year", 4, 0, 9999, &y) < 0 || dt_sep(p, '-', "after the year") < 0 ||
            dt_field(p, "month", 2, 1, 12, &mo) < 0 || dt_sep(p, '-', "after the month") < 0)
            return -1;
        size_t at = p->pos;
        if (dt_field(p, "day", 2, 1, 31, &dd) < 0)
            return -1;
        if (dd > days_in(y, mo))
            return fail(p, at, "day %02d out of range for %04d-%02d (01..%02d)", dd, y, mo,
                        days_in(y, mo));
        snprintf(t, sizeof t, "%04d-%02d-%02d", y, mo, dd);
        if (put(p, &p->sbuf, t, 10) < 0)
            return -1;
        unsigned c = p->pos < p->len ? p->s[p->pos] : 0;
        int timed = c == 'T' || c == 't' ||
                    (c == ' ' && p->pos + 1 < p->len && is_digit(p->s[p->pos + 1]));
        if (!timed) {
            out->type = TOML_DATE_LOCAL;
            kind = "local date";
        } else {
            p->pos++;
            if (put(p, &p->sbuf, "T", 1) < 0 || dt_time(p) < 0)
                return -1;
            c = p->pos < p->len ? p->s[p->pos] : 0;
            out->type = TOML_DATETIME_LOCAL;
            kind = "local date-time";
            if (c == 'Z' || c == 'z') {
                p->pos++;
                if (put(p, &p->sbuf, "Z", 1) < 0)
                    return -1;
                out->type = TOML_DATETIME;
            } else if (c == '+' || c == '-') {
                int oh, om;
                p->pos++;
                if (dt_field(p, "offset hour", 2, 0, 23, &oh) < 0 ||
                    dt_sep(p, ':', "between offset hour and minute") < 0 ||
                    dt_field(p, "offset minute", 2, 0, 59, &om) < 0)
                    return -1;
                snprintf(t, sizeof t, "%c%02d:%02d", (char)c, oh, om);
                if (put(p, &p->sbuf, t, 6) < 0)
                    return -1;
                out->type = TOML_DATETIME;
            }
            if (out->type == TOML_DATETIME)
                kind = "offset date-time";
        }
    }
    if (p->pos < p->len) {
        unsigned c = p->s[p->pos];
        if (!(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '#' || c == ',' ||
              c == ']' || c == '}')) {
            if (out->type == TOML_TIME_LOCAL && (c == 'Z' || c == 'z' || c == '+' || c == '-'))
                return fail(p, p->pos, "a local time cannot have an offset");
            return fail(p, p->pos, "unexpected %s after %s", describe(p, p->pos, d, sizeof d),
                        kind);
        }
    }
    out->u.str = arena_tstr(p, p->sbuf.data, p->sbuf.len);
    return out->u.str == NULL ? -1 : 0;
}

/* Booleans, numbers, inf and nan: one token of [A-Za-z0-9_+.-]. */
static int parse_word(parser *p, toml_value *out)
{
    char d[48];
    size_t a = p->pos, b = a;
    while (b < p->len && is_token(p->s[b]))
        b++;
    if (b == a)
        return fail(p, a, "expected a value, found %s", describe(p, a, d, sizeof d));
    const char *w = (const char *)p->s + a;
    size_t n = b - a;
    /* digits then '-' or ':' can only start a date or a time */
    size_t nd = 0;
    while (a + nd < p->len && is_digit(p->s[a + nd]))
        nd++;
    if (nd > 0 && a + nd < p->len && (p->s[a + nd] == '-' || p->s[a + nd] == ':')) {
        return parse_datetime(p, p->s[a + nd] == ':', out);
    }
    p->pos = b;
    if ((n == 4 && memcmp(w, "true", 4) == 0) || (n == 5 && memcmp(w, "false", 5) == 0)) {
        out->type = TOML_BOOL;
        out->u.b = n == 4;
        return 0;
    }
    size_t o = (w[0] == '+' || w[0] == '-') ? 1 : 0;
    if (n - o == 3 && (memcmp(w + o, "inf", 3) == 0 || memcmp(w + o, "nan", 3) == 0)) {
        double v = w[o] == 'i' ? INFINITY : NAN;
        out->type = TOML_FLOAT;
        out->u.f = w[0] == '-' ? -v : v;
        return 0;
    }
    if (is_digit((unsigned char)w[0]) || o)
        return parse_number(p, a, b, out);
    return fail(p, a, "invalid value '%.*s'", n > 40 ? 40 : (int)n, w);
}

static int parse_array(parser *p, int depth, toml_value *out)
{
    char d[48];
    size_t open = p->pos;
    if (depth > TOML_MAX_DEPTH)
        return too_deep(p, open);
    tcont *a = cont_new(p, depth, 0);
    if (a == NULL)
        return -1;
    out->type = TOML_ARRAY;
    out->u.cont = a;
    p->pos++;
    for (;;) {
        if (skip_ws_nl(p) < 0)
            return -1;
        if (p->pos >= p->len)
            return fail(p, open, "unterminated array");
        if (p->s[p->pos] == ']') {
            p->pos++;
            return 0;
        }
        toml_value v;
        if (parse_value(p, depth + 1, &v) < 0 || arr_push(p, a, &v) < 0)
            return -1;
        if (skip_ws_nl(p) < 0)
            return -1;
        if (p->pos >= p->len)
            return fail(p, open, "unterminated array");
        if (p->s[p->pos] == ',')
            p->pos++;
        else if (p->s[p->pos] == ']') {
            p->pos++;
            return 0;
        } else
            return fail(p, p->pos, "expected ',' or ']' in array, found %s",
                        describe(p, p->pos, d, sizeof d));
    }
}

static int parse_keyval(parser *p, tcont *t);

/* Spaces inside an inline table; 0 when a non-space, non-newline follows. */
static int inline_ws(parser *p, size_t open)
{
    skip_ws(p);
    if (p->pos >= p->len)
        return fail(p, open, "unterminated inline table");
    if (p->s[p->pos] == '\n' || p->s[p->pos] == '\r')
        return fail(p, p->pos, "newline not allowed in inline table");
    return 0;
}

static int parse_inline_table(parser *p, int depth, toml_value *out)
{
    char d[48];
    size_t open = p->pos;
    if (depth > TOML_MAX_DEPTH)
        return too_deep(p, open);
    tcont *t = cont_new(p, depth, T_INLINE);
    if (t == NULL)
        return -1;
    out->type = TOML_TABLE;
    out->u.cont = t;
    p->pos++;
    if (inline_ws(p, open) < 0)
        return -1;
    if (p->s[p->pos] == '}') {
        p->pos++;
        return 0;
    }
    for (;;) {
        if (parse_keyval(p, t) < 0 || inline_ws(p, open) < 0)
            return -1;
        if (p->s[p->pos] == '}') {
            p->pos++;
            return 0;
        }
        if (p->s[p->pos] != ',')
            return fail(p, p->pos, "expected ',' or '}' in inline table, found %s",
                        describe(p, p->pos, d, sizeof d));
        p->pos++;
        if (inline_ws(p, open) < 0)
            return -1;
        if (p->s[p->pos] == '}')
            return fail(p, p->pos, "trailing comma not allowed in inline table");
    }
}

/* A value at pos, for a container at the given depth; out gets its type,
 * payload and position. */
static int parse_value(parser *p, int depth, toml_value *out)
{
    memset(out, 0, sizeof *out);
    out->line = p->line;
    out->col = (uint32_t)(p->pos - p->bol + 1);
    if (p->pos >= p->len)
        return fail(p, p->pos, "expected a value, found end of input");
    unsigned c = p->s[p->pos];
    if (c == '"' || c == '\'') {
        cr_buf_clear(&p->sbuf);
        if ((is_triple(p) ? parse_string3(p, &p->sbuf) : parse_string1(p, &p->sbuf)) < 0)
            return -1;
        out->type = TOML_STRING;
        out->u.str = arena_tstr(p, p->sbuf.data, p->sbuf.len);
        return out->u.str == NULL ? -1 : 0;
    }
    if (c == '[')
        return parse_array(p, depth, out);
    if (c == '{')
        return parse_inline_table(p, depth, out);
    return parse_word(p, out);
}

/* key = value into table t (the current table, or an inline table). */
static int parse_keyval(parser *p, tcont *t)
{
    char d[48], kb[64];
    if (parse_key(p) < 0)
        return -1;
    for (size_t i = 0; i + 1 < p->nkeys; i++) {
        const keypart *k = &p->keys[i];
        long j = tab_find(t, kp_name(p, k), k->len, k->hash);
        if (j < 0) {
            t = new_child(p, t, k, TOML_TABLE, T_DOTTED);
            if (t == NULL)
                return -1;
            continue;
        }
        const toml_value *v = entry_val(t, j);
        if (v->type == TOML_TABLE && (v->u.cont->flags & T_DOTTED)) {
            t = v->u.cont;
            continue;
        }
        const char *name = show_key(kp_name(p, k), k->len, kb, sizeof kb);
        if (v->type == TOML_TABLE && (v->u.cont->flags & T_INLINE))
            return fail(p, k->pos, "cannot extend inline table '%s' (defined at line %u)", name,
                        v->line);
        if (v->type == TOML_TABLE)
            return fail(p, k->pos,
                        "cannot extend table '%s' with dotted keys (defined at line %u)", name,
                        v->line);
        int aot = v->type == TOML_ARRAY && (v->u.cont->flags & A_OFTABLES);
        return fail(p, k->pos, "key '%s' already defined as %s at line %u", name,
                    aot ? "array of tables" : toml_type_name(v->type), v->line);
    }
    const keypart *k = &p->keys[p->nkeys - 1];
    long j = tab_find(t, kp_name(p, k), k->len, k->hash);
    if (j >= 0)
        return fail(p, k->pos, "duplicate key '%s' (first defined at line %u)",
                    show_key(kp_name(p, k), k->len, kb, sizeof kb), entry_val(t, j)->line);
    /* the value may hold keys of its own: keep what we need of this one */
    size_t keylen = k->len;
    uint32_t hash = k->hash, line = k->line, col = k->col;
    const char *key = arena_str(p, kp_name(p, k), keylen);
    if (key == NULL)
        return -1;
    if (p->pos >= p->len || p->s[p->pos] != '=')
        return fail(p, p->pos, "expected '=' after key, found %s",
                    describe(p, p->pos, d, sizeof d));
    p->pos++;
    skip_ws(p);
    toml_value v;
    if (parse_value(p, t->depth + 1, &v) < 0)
        return -1;
    v.line = line;
    v.col = col;
    return tab_add(p, t, key, keylen, hash, &v);
}

/* [a.b] or [[a.b]] at pos; *cur becomes the table it names. */
static int parse_header(parser *p, tcont **cur)
{
    char d[48], kb[64];
    int aot = 0;
    p->pos++;
    if (p->pos < p->len && p->s[p->pos] == '[') {
        aot = 1;
        p->pos++;
    }
    if (parse_key(p) < 0)
        return -1;
    if (p->pos >= p->len || p->s[p->pos] != ']')
        return fail(p, p->pos, "expected ']' to end the table header, found %s",
                    describe(p, p->pos, d, sizeof d));
    p->pos++;
    if (aot) {
        if (p->pos >= p->len || p->s[p->pos] != ']')
            return fail(p, p->pos, "expected ']]' to end the array of tables header, found %s",
                        describe(p, p->pos, d, sizeof d));
        p->pos++;
    }
    tcont *t = p->doc->root.u.cont;
    for (size_t i = 0; i < p->nkeys; i++) {
        const keypart *k = &p->keys[i];
        int last = i + 1 == p->nkeys;
        long j = tab_find(t, kp_name(p, k), k->len, k->hash);
        if (j < 0) {
            if (last && aot) {
                tcont *a = new_child(p, t, k, TOML_ARRAY, A_OFTABLES);
                t = a == NULL ? NULL : aot_append(p, a, k);
            } else
                t = new_child(p, t, k, TOML_TABLE, last ? T_DEFINED : T_IMPLICIT);
            if (t == NULL)
                return -1;
            continue;
        }
        toml_value *v = entry_val(t, j);
        const char *name = show_key(kp_name(p, k), k->len, kb, sizeof kb);
        int table = v->type == TOML_TABLE, array = v->type == TOML_ARRAY;
        int flags = table || array ? v->u.cont->flags : 0;
        if (table && (flags & T_INLINE))
            return fail(p, k->pos, "cannot extend inline table '%s' (defined at line %u)", name,
                        v->line);
        if (!last && table) {
            t = v->u.cont;
            continue;
        }
        if (array && (flags & A_OFTABLES)) {
            if (last && !aot)
                return fail(p, k->pos, "key '%s' already defined as array of tables at line %u",
                            name, v->line);
            tcont *a = v->u.cont;
            t = last ? aot_append(p, a, k) : ((toml_value *)a->items)[a->n - 1].u.cont;
            if (t == NULL)
                return -1;
            continue;
        }
        if (last && table && !aot && (flags & (T_IMPLICIT | T_DOTTED | T_DEFINED)) == T_IMPLICIT) {
            v->u.cont->flags = T_DEFINED;
            v->line = k->line; /* where it is defined now */
            v->col = k->col;
            t = v->u.cont;
            continue;
        }
        if (last && table && !aot)
            return fail(p, k->pos, "table '%s' already defined at line %u", name, v->line);
        if (array && last && aot)
            return fail(p, k->pos, "cannot append to static array '%s' (defined at line %u)",
                        name, v->line);
        return fail(p, k->pos, "key '%s' already defined as %s at line %u", name,
                    toml_type_name(v->type), v->line);
    }
    *cur = t;
    return 0;
}

static int parse_document(parser *p)
{
    tcont *cur = p->doc->root.u.cont;
    if (p->len >= 3 && memcmp(p->s, "\xEF\xBB\xBF", 3) == 0)
        p->pos = 3; /* a byte order mark */
    for (;;) {
        skip_ws(p);
        if (p->pos >= p->len)
            return 0;
        unsigned c = p->s[p->pos];
        int rc;
        if (c == '#' || c == '\n' || c == '\r')
            rc = end_of_line(p, NULL);
        else if (c == '[')
            rc = parse_header(p, &cur) < 0 ? -1 : end_of_line(p, "table header");
        else
            rc = parse_keyval(p, cur) < 0 ? -1 : end_of_line(p, "value");
        if (rc < 0)
            return -1;
    }
}

/* -------------------------------------------------------------------- API */

toml_value *toml_parse(const char *data, size_t len, toml_error *err)
{
    toml_error dummy;
    if (err == NULL)
        err = &dummy;
    memset(err, 0, sizeof *err);
    if (len > TOML_MAX_INPUT) {
        err->line = 1;
        err->col = 1;
        snprintf(err->msg, sizeof err->msg, "input too large (%zu bytes, max %u)", len,
                 TOML_MAX_INPUT);
        return NULL;
    }
    parser p;
    memset(&p, 0, sizeof p);
    p.s = (const unsigned char *)(data ? data : "");
    p.len = data ? len : 0;
    p.line = 1;
    p.err = err;
    cr_buf_init(&p.sbuf, TOML_MAX_INPUT + 1);
    cr_buf_init(&p.kbuf, TOML_MAX_INPUT + 1);
    p.doc = cr_calloc(1, sizeof *p.doc);
    if (p.doc == NULL) {
        oom(&p);
        return NULL;
    }
    p.doc->next_block = ARENA_FIRST;
    p.doc->root.type = TOML_TABLE;
    p.doc->root.is_root = 1;
    p.doc->root.line = 1;
    p.doc->root.col = 1;
    p.doc->root.u.cont = cont_new(&p, 0, T_DEFINED);
    /* keep both scratch buffers non-NULL, so empty keys and strings are "" */
    if (p.doc->root.u.cont != NULL && put(&p, &p.sbuf, "", 1) == 0 &&
        put(&p, &p.kbuf, "", 1) == 0)
        parse_document(&p);
    cr_buf_release(&p.sbuf);
    cr_buf_release(&p.kbuf);
    if (p.c_locale != (locale_t)0)
        freelocale(p.c_locale);
    if (p.failed) {
        toml_free(&p.doc->root);
        return NULL;
    }
    return &p.doc->root;
}

void toml_free(toml_value *v)
{
    if (v == NULL || !v->is_root) /* only a document's root can be freed */
        return;
    tdoc *d = (tdoc *)v;
    for (tcont *c = d->conts; c != NULL; c = c->next) {
        if (c->heap)
            cr_free(c->items);
        cr_free(c->index);
    }
    ablock *b = d->blocks;
    while (b != NULL) {
        ablock *next = b->next;
        cr_free(b);
        b = next;
    }
    cr_free(d);
}

toml_type toml_type_of(const toml_value *v) { return (toml_type)v->type; }

const char *toml_type_name(toml_type t)
{
    switch (t) {
    case TOML_TABLE:
        return "table";
    case TOML_ARRAY:
        return "array";
    case TOML_STRING:
        return "string";
    case TOML_INTEGER:
        return "integer";
    case TOML_FLOAT:
        return "float";
    case TOML_BOOL:
        return "bool";
    case TOML_DATETIME:
        return "datetime";
    case TOML_DATETIME_LOCAL:
        return "datetime-local";
    case TOML_DATE_LOCAL:
        return "date-local";
    case TOML_TIME_LOCAL:
        return "time-local";
    }
    return "unknown";
}

size_t toml_count(const toml_value *v)
{
    if (v == NULL || (v->type != TOML_TABLE && v->type != TOML_ARRAY))
        return 0;
    return v->u.cont->n;
}

const toml_value *toml_at(const toml_value *v, size_t i)
{
    if (i >= toml_count(v))
        return NULL;
    if (v->type == TOML_TABLE)
        return &((const tentry *)v->u.cont->items)[i].val;
    return &((const toml_value *)v->u.cont->items)[i];
}

const char *toml_key_at(const toml_value *table, size_t i)
{
    if (table == NULL || table->type != TOML_TABLE || i >= table->u.cont->n)
        return NULL;
    return ((const tentry *)table->u.cont->items)[i].key;
}

const toml_value *toml_get(const toml_value *table, const char *key)
{
    if (table == NULL || key == NULL || table->type != TOML_TABLE)
        return NULL;
    size_t n = strlen(key);
    long j = tab_find(table->u.cont, key, n, key_hash(key, n));
    return j < 0 ? NULL : &((const tentry *)table->u.cont->items)[j].val;
}

const char *toml_string(const toml_value *v, size_t *len)
{
    if (v == NULL || v->type != TOML_STRING) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = v->u.str->len;
    return v->u.str->s;
}

int64_t toml_int(const toml_value *v) { return v && v->type == TOML_INTEGER ? v->u.i : 0; }

double toml_float(const toml_value *v) { return v && v->type == TOML_FLOAT ? v->u.f : 0.0; }

int toml_bool(const toml_value *v) { return v && v->type == TOML_BOOL ? v->u.b : 0; }

static int is_datetime_type(unsigned t)
{
    return t == TOML_DATETIME || t == TOML_DATETIME_LOCAL || t == TOML_DATE_LOCAL ||
           t == TOML_TIME_LOCAL;
}

const char *toml_datetime(const toml_value *v)
{
    return v && is_datetime_type(v->type) ? v->u.str->s : NULL;
}

void toml_pos(const toml_value *v, int *line, int *col)
{
    int l = 0, c = 0;
    if (v != NULL) {
        l = (int)v->line;
        c = (int)v->col;
    }
    if (line)
        *line = l;
    if (col)
        *col = c;
}
