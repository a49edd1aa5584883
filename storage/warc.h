/* storage/warc: the WARC/1.1 writer (ISO 28500:2017).
 *
 * Every fetch becomes records, each its own gzip member, appended to
 * DIR/PREFIX-YYYYMMDDhhmmss-NNNNN.warc.gz (UTC time the file was started,
 * serial counting up across restarts):
 *   warcinfo  opens each file (software, format, the caller's info fields);
 *   request   the request header block as sent (only when one is given);
 *   response  the response header block and the payload as received;
 *   revisit   instead of a response when the same payload (same sha1) was
 *             already archived in this crawl, or is the caller's `prior`
 *             (a page archived by an earlier crawl): profile identical-
 *             payload-digest, the response headers only, WARC-Refers-To
 *             (-Target-URI, -Date) naming the record that holds the bytes;
 *             and for a 304 answer to a conditional re-fetch (not_modified),
 *             profile server-not-modified, the 304's headers, pointing at
 *             the prior record (WARC-Refers-To only when its id is known),
 *             with the prior's payload digest (the content it stands for).
 * The records of one fetch are written together with one write(), request
 * first, and only whole members are ever appended: a failed write is cut
 * back. Beside each file, PREFIX-...-NNNNN.cdxj indexes its response and
 * revisit records, one line each (see storage/cdxj.h); it is sorted when the
 * file is finished, so replay tools can binary-search it.
 *
 * Transfer-Encoding: the fetcher hands over the body de-chunked, so a block
 * whose headers still said "Transfer-Encoding: chunked" would lie to every
 * reader. When the response header block has a Transfer-Encoding line, that
 * line is kept renamed as X-Crawld-Transfer-Encoding, any Content-Length
 * line likewise as X-Crawld-Content-Length, and "Content-Length: N" (the
 * payload bytes stored) is added as the last header. Content-Encoding is
 * left alone: the payload stays compressed as on the wire. A header block
 * with bare-LF line ends gets CRLFs (readers look for CRLF CRLF). Nothing
 * else in the header block is changed. The digests cover what is stored.
 *
 * Crash safety: members are appended whole, the index line after its
 * records. warc_open looks at the newest file: it walks its gzip members,
 * keeps the index lines whose records are complete, cuts the file after the
 * last indexed record (dropping a torn or unindexed tail: that fetch never
 * returned success to its caller), sorts the index, and the crawl goes on
 * in a NEW file. fsync: at rotation, at close and in warc_sync.
 *
 * Threads: every function may be called from any thread. One mutex guards
 * the open file, the index, the dedup map and the counters. warc_write_fetch
 * digests and compresses outside it; under it, it checks the dedup map,
 * rotates when needed, writes the fetch's records and index line and
 * updates the map. Records compressed outside the lock that no longer fit
 * (the file rotated, or another thread archived the same payload first)
 * are rebuilt: a revisit under the lock, a response outside it. */
#ifndef CRAWLD_WARC_H
#define CRAWLD_WARC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

typedef struct warc_writer warc_writer;

#define WARC_SOFTWARE "crawld/0.1"
#define WARC_DEFAULT_MAX_FILE_BYTES (1ull << 30)
#define WARC_DEFAULT_DEDUP_ENTRIES (4u << 20)
#define WARC_MAX_URI_BYTES 65536      /* longer target URIs are refused */
#define WARC_MAX_HEADER_BYTES (16u << 20) /* larger header blocks are refused */
#define WARC_MAX_INFO_BYTES 65536     /* caller's warcinfo text */
#define WARC_MAX_PREFIX 64

/* Options; the writer copies what it keeps. */
typedef struct warc_opts {
    const char *dir;          /* archive folder; made (one level) if missing */
    const char *prefix;       /* file name prefix: 1..64 of [A-Za-z0-9._-] */
    uint64_t max_file_bytes;  /* start a new file before one would pass this
                                 (a single fetch larger than this gets a file
                                 of its own); 0: 1 GiB */
    bool revisits;            /* write revisit records for repeated payloads */
    uint64_t dedup_max_entries; /* cap on remembered payload digests; once
                                   full, new payloads are archived but not
                                   remembered; 0: 4 Mi entries. Memory: about
                                   130 bytes + the URI per entry (4 Mi
                                   entries of 60-byte URIs: ~0.8 GiB) */
    int gzip_level;           /* 1..9; 0: 6 */
    const char *info;         /* extra warcinfo fields, "name: value" lines
                                 (LF or CRLF), e.g. a crawl config summary;
                                 NULL: none */
} warc_opts;

#define WARC_RECORD_ID_TEXT 48 /* "<urn:uuid:" 36 ">" NUL */

/* What an earlier crawl archived of the same URL (the re-crawl's stored
 * original). Pointers are only read during the call. */
typedef struct warc_prior {
    const char *digest;       /* "sha1:..." payload digest; NULL: unknown */
    const char *record_id;    /* "<urn:uuid:...>" of its record; NULL: unknown */
    int64_t date_ms;          /* its WARC-Date */
    const char *uri;          /* its WARC-Target-URI */
} warc_prior;

/* One fetch as the fetcher saw it. Pointers are only read during the call. */
typedef struct warc_fetch {
    const char *uri;          /* WARC-Target-URI: absolute, no spaces or
                                 control characters */
    const char *ip;           /* WARC-IP-Address; NULL or "": left out */
    int64_t date_ms;          /* capture start, ms since 1970; <= 0: now */
    const char *request;      /* request header block as sent, through the
                                 empty line; request_len 0: no request record */
    size_t request_len;
    const char *headers;      /* response header block as received: status
                                 line through the empty line */
    size_t headers_len;
    const void *payload;      /* body as on the wire after de-chunking, NOT
                                 content-decoded; may hold NULs; NULL with
                                 payload_read: streamed (storage/spool) */
    size_t payload_len;
    /* a streamed payload: reads n bytes at off into buf, 0 or -errno (the
     * write then fails with it); used when payload is NULL */
    int (*payload_read)(void *ctx, uint64_t off, void *buf, size_t n);
    void *payload_ctx;
    const uint8_t *payload_sha1; /* the payload's sha1, known; NULL: computed */
    const uint8_t *block_sha1; /* sha1 of headers + payload, known; used when
                                 the stored header block is the one given
                                 (see Transfer-Encoding); NULL: computed */
    int status;               /* HTTP status for the index; <= 0: read from
                                 the status line */
    const char *mime;         /* Content-Type for the index; NULL: read from
                                 the header block */
    bool truncated;           /* body was cut at the cap: the response gets
                                 WARC-Truncated: length and is never
                                 deduplicated */
    const warc_prior *prior;  /* NULL: none (see revisit above) */
    bool not_modified;        /* a 304 to a conditional request: with prior,
                                 a server-not-modified revisit */
} warc_fetch;

/* Where a fetch went (OUT of warc_write_fetch). */
typedef struct warc_result {
    uint64_t offset;          /* start of the response or revisit member */
    uint64_t length;          /* its compressed length */
    char file[128];           /* file name, without the folder */
    bool was_revisit;
    char record_id[WARC_RECORD_ID_TEXT]; /* of the response or revisit */
    int64_t date_ms;          /* its WARC-Date */
    char payload_digest[38];  /* "sha1:..." of the payload as received */
    /* a revisit: the record it refers to (the one holding the payload) */
    char refers_to_id[WARC_RECORD_ID_TEXT]; /* "" when not known */
    int64_t refers_to_date_ms;
    const char *refers_to_uri; /* valid until warc_close (or, from a prior,
                                  as long as the prior's string) */
} warc_result;

/* Counters, monotonic over the writer's life. */
typedef struct warc_stats {
    uint64_t records;         /* all records written, warcinfo included */
    uint64_t warcinfos;
    uint64_t requests;
    uint64_t responses;
    uint64_t revisits;
    uint64_t payload_bytes;   /* payload bytes stored in response records */
    uint64_t revisit_bytes_saved; /* payload bytes revisits did not store */
    uint64_t bytes_written;   /* compressed bytes appended, all files */
    uint64_t files;           /* files started */
    uint64_t rebuilt;         /* fetches re-built after a rotation or a
                                 race on the same payload */
    uint64_t dedup_entries;   /* payload digests remembered */
    uint64_t dedup_bytes;     /* memory they take (table + URIs) */
    uint64_t dedup_full;      /* payloads not remembered: map at its cap
                                 (or out of memory) */
    uint64_t recovered_bytes_cut; /* torn or unindexed tail cut at open */
} warc_stats;

/* A remembered payload: which record holds it. */
typedef struct warc_dedup_entry {
    uint8_t digest[20];       /* sha1 of the payload */
    uint8_t record_id[16];    /* the response record's UUID */
    int64_t date_ms;          /* its WARC-Date */
    const char *uri;          /* its WARC-Target-URI */
} warc_dedup_entry;

/* Opens the writer: makes dir if needed, recovers the newest existing file
 * of this prefix (see above), and prepares a new file, started at the first
 * write. Returns NULL with a message in err on bad options, I/O errors or
 * no memory. Caller owns the writer; finish with warc_close(). */
warc_writer *warc_open(const warc_opts *o, char *err, size_t errlen);

/* Archives one fetch (thread-safe). Returns 0, -EINVAL for a malformed
 * fetch (bad URI, header block not ending in an empty line, too large),
 * -ENOMEM, or the negative errno of a failed write (the file is then cut
 * back; if even that fails the writer refuses all further writes with
 * -EIO). out may be NULL. */
int warc_write_fetch(warc_writer *w, const warc_fetch *f, warc_result *out /* OUT */);

/* fsyncs the current file and its index (thread-safe). 0 or -errno. */
int warc_sync(warc_writer *w);

/* Copies the counters (thread-safe). */
void warc_stats_get(warc_writer *w, warc_stats *out /* OUT */);

/* Remembers a payload archived earlier (e.g. persisted by the caller), so a
 * repeat becomes a revisit. 0, -EEXIST (digest known), -ENOSPC (map full),
 * -EINVAL, -ENOMEM. */
int warc_dedup_add(warc_writer *w, const warc_dedup_entry *e);

/* Calls cb for every remembered payload, holding the writer's lock (cb must
 * not call the writer); stops at cb's first nonzero return and returns it.
 * Entry pointers are valid during the call only. */
int warc_dedup_each(warc_writer *w, int (*cb)(void *ctx, const warc_dedup_entry *e), void *ctx);

/* Finishes the current file (index sorted, both fsynced) and frees the
 * writer. Returns 0 or the first error met. w may be NULL. */
int warc_close(warc_writer *w);

/* The response header block as it is stored (see Transfer-Encoding above):
 * appends to out the fixed block for a payload of payload_len bytes. Sets
 * *changed when it differs from the input. 0, -EINVAL (no status line or no
 * empty line at the end), -E2BIG, -ENOMEM. */
int warc_http_fix(const char *hdr, size_t len, uint64_t payload_len, cr_buf *out, bool *changed /* OUT */);

/* WARC-Date text of a time in ms since 1970: "2024-05-06T07:08:09.123Z".
 * buf must hold 25 bytes. 0, or -EINVAL for a year outside 1..9999. */
int warc_date(int64_t ms, char *buf);

/* sha1 digest as "sha1:" + 32 base32 letters (RFC 4648, no padding).
 * out must hold 38 bytes. */
void warc_digest_text(const uint8_t sha1[20], char *out);

/* The payload digest a record of these bytes gets ("sha1:" + base32), into
 * out (38 bytes): for comparing payloads without archiving them. 0 or
 * -ENOMEM. */
int warc_payload_digest(const void *p, size_t n, char out[38]);

#endif
