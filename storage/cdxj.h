/* storage/cdxj: the index lines written beside each WARC file.
 *
 * One line per response or revisit record, in the form replay tools (pywb,
 * warcio's cdx-indexer) read:
 *   SURT-KEY SP 14-DIGIT-TIMESTAMP SP {"url":..,"mime":..,"status":"200",
 *   "digest":"<base32 sha1 of the payload>","length":"<gzip member bytes>",
 *   "offset":"<member start>","filename":"<warc file name>"} LF
 * (status, length and offset are JSON strings, as those tools write them;
 * mime is the Content-Type's media type, "warc/revisit" for revisits,
 * "unk" when absent). Pure functions: bytes in, bytes out, no I/O. */
#ifndef CRAWLD_CDXJ_H
#define CRAWLD_CDXJ_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* Appends the SURT key of an http(s) URL: lower-cased, scheme, user info,
 * fragment and a leading "www", "www2"... label dropped, host labels
 * reversed and joined by ',', a non-default port kept, ')' then the path
 * ("/" when empty), then '?' and the query's '&'-separated parts sorted
 * bytewise. e.g. "https://www.Example.com/a?b=1&a=2" ->
 * "com,example)/a?a=2&b=1". Other URLs are appended unchanged.
 * 0, -E2BIG, -ENOMEM. */
int cdxj_surt(const char *url, size_t len, cr_buf *out);

/* Appends s as a quoted JSON string: '"', '\\' and control bytes escaped,
 * valid UTF-8 kept, every byte of an invalid sequence as U+FFFD. */
int cdxj_json_string(cr_buf *out, const char *s, size_t len);

/* The fields of one line. */
typedef struct cdxj_entry {
    const char *url;
    size_t url_len;
    const char *mime;         /* media type as found; NULL: "unk" */
    size_t mime_len;
    int status;
    const char *digest;       /* 32 base32 letters */
    const char *timestamp;    /* 14 digits, YYYYMMDDhhmmss */
    uint64_t length;
    uint64_t offset;
    const char *filename;
} cdxj_entry;

/* Appends one whole line, LF included. 0, -E2BIG, -ENOMEM. */
int cdxj_line(cr_buf *out, const cdxj_entry *e);

/* Reads offset and length back from a line this module wrote (without its
 * LF). 0, or -EINVAL when the line is not one of ours. */
int cdxj_parse_span(const char *line, size_t len, uint64_t *offset /* OUT */,
                    uint64_t *length /* OUT */);

/* The media type of a Content-Type value: up to the first ';', blanks
 * trimmed. Sets *out and returns its length (0: none). */
size_t cdxj_media_type(const char *ct, size_t len, const char **out /* OUT */);

#endif
