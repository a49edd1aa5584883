/* storage/wacz: packages a crawl's WARC files as one WACZ 1.1.1 file, the
 * package ReplayWeb.page, Browsertrix and others open.
 *
 * The package is a ZIP (written by libzip) holding, every entry STORED (the
 * WARCs are gzip members already; stored entries can be read with HTTP
 * Range requests):
 *   archive/NAME.warc.gz      each WARC file of the prefix, as it is on disk
 *                             up to the end of its last indexed record (a
 *                             file still being written, or with a torn tail,
 *                             is cut there; a file with no indexed record
 *                             is left out)
 *   indexes/index.cdxj        the lines of every WARC's .cdxj beside it
 *                             (storage/cdxj.h: offset and length of each
 *                             response or revisit member), sorted bytewise
 *   pages/pages.jsonl         a header line, then one line per HTML page
 *                             fetched (a 200 response of text/html or
 *                             application/xhtml+xml): id, url, ts (RFC 3339)
 *                             and title when the page had one
 *   datapackage.json          profile "data-package", wacz_version "1.1.1",
 *                             software, created, title, mainPageURL/Date,
 *                             and every file above with its path, bytes
 *                             and "sha256:HEX" hash
 *   datapackage-digest.json   path and sha256 of datapackage.json
 *
 * Titles: the packager reads each page's record back (the member at its
 * indexed offset) and asks the caller's title_fn, which sees the HTTP
 * header block and the payload as stored (still Content-Encoded); storage/
 * parses no HTML.
 *
 * The output is written to a temporary file beside it, fsynced and linked
 * into place: an existing file is never replaced (-EEXIST), so a package
 * once written stays as it was; a later one gets a new name. Nothing is
 * left behind on failure. Reads the WARC files while a crawl may still
 * append to them: only what the indexes describe is packaged.
 *
 * Memory: the merged index and the page list are held in memory (about
 * 300 bytes per archived record). Not thread-safe; one package at a time
 * per caller. */
#ifndef CRAWLD_WACZ_H
#define CRAWLD_WACZ_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define WACZ_VERSION "1.1.1"
#define WACZ_MAX_TITLE 1024          /* bytes of a page title kept */

/* Appends the page's title (UTF-8) to title; nothing when it has none.
 * headers: the response's HTTP header block; payload: the body as stored,
 * at most max_page_bytes of it. Returns 0, or < 0 to leave this page's
 * title out (the page is still listed). */
typedef int (*wacz_title_fn)(void *ud, const char *headers, size_t headers_len,
                             const char *payload, size_t payload_len, cr_buf *title);

typedef struct wacz_opts {
    const char *archive_dir;  /* the crawl's WARC folder */
    const char *prefix;       /* only PREFIX-*.warc.gz files are packaged */
    const char *out_path;     /* the .wacz to write; must not exist */
    const char *title;        /* the package's title; NULL: "crawld crawl" */
    wacz_title_fn title_fn;   /* NULL: no titles */
    void *title_ud;
    int64_t created_ms;       /* "created"; <= 0: now */
    uint64_t max_page_bytes;  /* payload bytes read per page for its title;
                                 0: 1 MiB */
    uint64_t max_index_bytes; /* bytes of one .cdxj read; 0: 1 GiB */
} wacz_opts;

typedef struct wacz_stats {
    uint64_t warcs;           /* WARC files packaged */
    uint64_t warcs_skipped;   /* of the prefix, with no indexed record */
    uint64_t warc_bytes;      /* their bytes in the package */
    uint64_t tail_bytes_cut;  /* bytes past the last indexed record, left out */
    uint64_t index_lines;
    uint64_t bad_lines;       /* .cdxj lines not ours or past the file's end */
    uint64_t pages;
    uint64_t titles;          /* pages with a title */
    uint64_t unreadable;      /* page records that could not be read back */
    uint64_t zip_bytes;       /* size of the package */
} wacz_stats;

/* Writes the package. 0, or a negative errno with a message in err:
 * -EEXIST the output exists, -ENOENT no such folder or no WARC file with an
 * indexed record, -EIO a read or write failed (libzip's message), -ENOMEM.
 * st (OUT, may be NULL). */
int wacz_write(const wacz_opts *o, wacz_stats *st /* OUT */, char *err, size_t errlen);

#endif
