/* crawler/web/charset: which charset an HTML page is in, decided from its
 * first bytes and its Content-Type the way the HTML spec's encoding
 * sniffing does: a byte order mark, else the header's charset parameter,
 * else a <meta charset> / <meta http-equiv content> found by the prescan
 * of the first CHARSET_SNIFF_MAX bytes, else UTF-8. Labels are the WHATWG
 * Encoding labels; a label no browser knows counts as none.
 *
 * The answer names the converter to read the page with (an iconv name),
 * and how links.c gets it to UTF-8, which is all libxml2 is given: UTF-8
 * as it is, ISO-8859-1 by hand (windows-1252 and its aliases are read as
 * ISO-8859-1, which accepts every byte), everything else with iconv.
 * Pure functions over (bytes, length): no I/O, no allocation; any thread. */
#ifndef CRAWLD_CHARSET_H
#define CRAWLD_CHARSET_H

#include <stdbool.h>
#include <stddef.h>

#define CHARSET_SNIFF_MAX 1024  /* the HTML spec's prescan window */
#define CHARSET_LABEL_MAX 48    /* a label, lowercased, with its NUL */

typedef enum charset_mode {
    CHARSET_UTF8,   /* as it is */
    CHARSET_LATIN1, /* ISO-8859-1, converted by hand */
    CHARSET_ICONV   /* with iconv_open("UTF-8", name) */
} charset_mode;

/* Where the decision came from (the values of links.h's LINKS_ENC_*). */
typedef enum charset_source {
    CHARSET_FROM_DEFAULT = 0, /* nothing declared, or an unknown label */
    CHARSET_FROM_BOM,
    CHARSET_FROM_HEADER,
    CHARSET_FROM_META
} charset_source;

typedef struct charset_choice {
    const char *name;      /* iconv name, e.g. "UTF-8", "CP1251"; static */
    charset_mode mode;
    unsigned unit;         /* bytes per code unit: 2 for UTF-16, else 1 */
    size_t bom_len;        /* leading bytes that are the BOM (skip them) */
    charset_source source;
} charset_choice;

/* The charset parameter of a Content-Type value (the first one), trimmed
 * and lowercased into out; "" when there is none, it does not fit, or
 * content_type is NULL. */
void charset_header_label(const char *content_type, char out[CHARSET_LABEL_MAX]);

/* Whether label (lowercase, as charset_header_label gives it) names an
 * encoding we read. When the header's label is known, only a BOM can
 * override it, so 3 bytes are enough to decide. */
bool charset_label_known(const char *label);

/* The decision for a page starting with bytes[0..len) (only the first
 * CHARSET_SNIFF_MAX bytes are looked at) whose header gave header_label
 * (may be NULL or ""). Returns the charset name; fills *out unless NULL. */
const char *charset_sniff(const void *bytes, size_t len, const char *header_label,
                          charset_choice *out /* OUT, may be NULL */);

/* The <meta> prescan alone over the first CHARSET_SNIFF_MAX bytes: the
 * charset name, or NULL when it finds none (a UTF-16 label reads as UTF-8:
 * a page in UTF-16 could not have said so in ASCII). */
const char *charset_prescan(const void *bytes, size_t len);

/* The default (UTF-8, CHARSET_FROM_DEFAULT, no BOM). Fills *out unless NULL. */
const char *charset_default(charset_choice *out /* OUT, may be NULL */);

#endif
