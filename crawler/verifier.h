/* crawler/verifier: the seen test's verifier backed by storage/db.
 *
 * record_new queues an insert (asynchronous; marked absent when the seen
 * filter vouches that no row has the key, so the writer skips its look-up:
 * dedup/seen.h). check_insert first
 * looks the key up on a read connection: a committed row is a confirmed
 * duplicate, cheaply. Only when no committed row exists does it insert and
 * wait for the commit, so the writer's exact look-up (storage/db) gives the final answer
 * also for a row still queued behind the writer. Read connections are kept
 * in a small pool, so any thread may call it. check_insert_async queues
 * the same "insert unless present" without waiting (a row already there
 * keeps its stamp); its answer comes with the ack. */
#ifndef CRAWLD_VERIFIER_H
#define CRAWLD_VERIFIER_H

#include <stdio.h>

#include "dedup/bloom.h"
#include "dedup/seen.h"
#include "storage/db.h"

typedef struct verifier verifier;

/* The row seen_test passes through to the verifier. */
typedef struct verifier_row {
    db_url u;            /* everything but url/url_len, which the key fills */
    db_done_fn on_new;   /* record_new's insert reports here (writer thread,
                            after COMMIT); may be NULL */
    void *ud;
    int64_t id;          /* OUT of check_insert: the row's id */
} verifier_row;

/* NULL when memory runs out. Free with verifier_free() before db_close(). */
verifier *verifier_new(db *d);
void verifier_free(verifier *v);
/* The seen_verifier interface over v. */
seen_verifier verifier_iface(verifier *v);

/* Restart support, the same for `crawld run` and `crawld dedup`.
 *
 * verifier_check_state: call before db_open. Refuses (-EEXIST, with a
 * message) a state folder whose database is missing or empty while a Bloom
 * snapshot (snap_name) or WARC files (in warc_dir, may be NULL) show that a
 * crawl lived there: starting afresh would refetch and re-archive it all.
 *
 * verifier_open_seen: the seen test over a Bloom filter that mirrors d. The
 * snapshot at snap_path (may be NULL) is used only if it belongs to d (its
 * owner id is d's crawl id) and its mark is not above d's highest row;
 * otherwise it is refused with a message on log and the filter is rebuilt
 * from d (a new filter from bp, then every row). Then the rows after the
 * mark are added (catch-up). d may be NULL (no store: v must be NULL too).
 * log (may be NULL) gets one line per event, prefixed with who. NULL with
 * err set when memory runs out or the database cannot be read.
 *
 * go (may be NULL: no retention) makes the filter a ring of generations
 * (dedup/gens.h); a snapshot is used only if it was built for go and bp
 * (a plain one for no retention), and the catch-up then also adds the rows
 * stamped in its newest window or later (refreshed after it was taken),
 * each into the window of its stamp. An invalid go: NULL with err.
 *
 * verifier_snapshot: saves s's filter to path with the mark of a flush
 * (every row up to it committed and in the filter) and d's crawl id.
 * 0 or < 0 with err. */
int verifier_check_state(const char *state_dir, const char *snap_name, const char *warc_dir,
                         char *err, size_t errlen);
seen *verifier_open_seen(verifier *v, db *d, const char *snap_path, const bloom_params *bp,
                         const gens_opts *go, const seen_opts *so, FILE *log, const char *who,
                         char *err, size_t errlen);
int verifier_snapshot(seen *s, db *d, const char *path, char *err, size_t errlen);

/* The id of key's committed row (0 when there is none yet, or on error). */
int64_t verifier_row_id(verifier *v, const char *key, size_t klen);
/* The redirect hops stored with row id (0 when unknown). */
int verifier_row_hops(verifier *v, int64_t id);

#endif
