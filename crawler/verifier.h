/* crawler/verifier: the seen test's verifier backed by storage/db.
 *
 * record_new queues an INSERT OR IGNORE (asynchronous). check_insert first
 * looks the key up on a read connection: a committed row is a confirmed
 * duplicate, cheaply. Only when no committed row exists does it insert and
 * wait for the commit, so SQLite's UNIQUE constraint gives the final answer
 * also for a row still queued behind the writer. Read connections are kept
 * in a small pool, so any thread may call it. The row passed to seen_test
 * must be a db_url whose url fields the verifier fills from the key. */
#ifndef CRAWLD_VERIFIER_H
#define CRAWLD_VERIFIER_H

#include "dedup/seen.h"
#include "storage/db.h"

typedef struct verifier verifier;

/* NULL when memory runs out. Free with verifier_free() before db_close(). */
verifier *verifier_new(db *d);
void verifier_free(verifier *v);
/* The seen_verifier interface over v. */
seen_verifier verifier_iface(verifier *v);

#endif
