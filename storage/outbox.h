/* storage/outbox: links waiting to cross to another node (cluster mode).
 *
 * A link whose host is in a slot this node does not own goes into the
 * outbox, state_dir/outbox.db (its own SQLite file: the single-node
 * database and its migrations stay untouched). outbox_add commits with
 * synchronous=FULL before it returns, and the crawl queues the page's
 * outcome only after it: a crash before the page is recorded as done
 * refetches it and adds its links again; a crash after cannot lose them.
 * The forwarder (cluster/xchg) reads rows in id order, sends them, and
 * deletes them once Redis has acknowledged: a crash in between re-sends
 * them, which the receiver's seen test drops.
 *
 * Thread-safe: one connection behind one mutex (adds come from fetcher
 * threads, peek and delete from the forwarder). Errors are negative errno
 * (-EIO, -ENOSPC, -ENOMEM, -EINVAL). */
#ifndef CRAWLD_STORAGE_OUTBOX_H
#define CRAWLD_STORAGE_OUTBOX_H

#include <stddef.h>
#include <stdint.h>

typedef struct outbox outbox;

typedef struct outbox_link {
    uint32_t slot;
    const char *url;       /* the key (canonical URL), url_len bytes */
    size_t url_len;
    const char *fetch_url; /* NULL: the same as url */
    size_t fetch_url_len;
    const char *host;      /* NUL-terminated */
    int depth;
    int kind;              /* enum db_kind */
} outbox_link;

typedef struct outbox_row {
    int64_t id;
    uint32_t slot;
    char *url;             /* NUL-terminated copies, owned by the row array */
    size_t url_len;
    char *fetch_url;       /* NULL: the same as url */
    char *host;
    int depth;
    int kind;
} outbox_row;

/* Opens (creating) dir/outbox.db. 0 and *out, or negative errno with the
 * path and the reason in err. Caller owns *out; outbox_close(). */
int outbox_open(const char *dir, outbox **out /* OUT */, char *err, size_t errlen);
void outbox_close(outbox *ob);

/* Adds v[0..n) in one transaction; durable when it returns 0. */
int outbox_add(outbox *ob, const outbox_link *v, size_t n);
/* Up to max of the oldest rows. OUT: *rows (free with outbox_rows_free;
 * NULL when there are none), *n. 0 or negative errno. */
int outbox_peek(outbox *ob, size_t max, outbox_row **rows /* OUT */, size_t *n /* OUT */);
void outbox_rows_free(outbox_row *rows, size_t n);
/* Deletes the rows with these ids, in one transaction. */
int outbox_delete(outbox *ob, const int64_t *ids, size_t n);
/* Moves the rows waiting in another node's outbox, dir/outbox.db (a node
 * gone for good), into this one: copied and committed here, then deleted
 * there. 0 with *rows (0 when that file does not exist), or negative errno
 * (nothing copied). OUT: rows */
int outbox_take_from(outbox *ob, const char *dir, int64_t *rows);
/* Rows waiting (-errno on failure). */
int64_t outbox_count(outbox *ob);

#endif
