/* crawler/retention: drives dedup.retention_s, the seen-set that forgets
 * on purpose: at each window's end it starts a new Bloom generation, moves
 * the keys of rows that are queued (kept whatever their age) into it,
 * drops the expired generations and has the writer delete, in bounded
 * steps (db_forget) that interleave with the crawl's own writes, the rows
 * stamped before the oldest live window. At start it also finishes a
 * deletion a crash cut short.
 *
 * Threads: retention_tick and retention_stats from the scheduler thread
 * only; the db_forget callback (writer thread) touches only atomics and
 * calls forgot. */
#ifndef CRAWLD_RETENTION_H
#define CRAWLD_RETENTION_H

#include <stdint.h>
#include <stdio.h>

#include "dedup/seen.h"
#include "storage/db.h"

typedef struct retention retention;

typedef struct retention_stats {
    uint64_t rotations;     /* windows started by this process */
    uint64_t kept_queued;   /* queued rows whose keys moved to a new window */
    uint64_t forget_steps;  /* db_forget steps done */
    int64_t cutoff;         /* rows stamped before it are forgotten (0 before the first) */
    int forgetting;         /* 1 while a deletion is under way */
} retention_stats;

/* NULL when s has no retention (nothing to drive) or memory runs out;
 * log (may be NULL) gets a line per rotation. forgot (may be NULL) is
 * told each deleted row's id on the writer thread, before the writer's
 * next batch (which may give a new row the same id): the frontier's
 * known set forgets it. */
retention *retention_new(seen *s, db *d, db_id_fn forgot, void *forgot_arg, FILE *log);
void retention_free(retention *r);
/* Call often (each scheduler turn); now_s is Unix seconds. Cheap when no
 * window ends. 0, or < 0 when the store refused a step (retried next turn). */
int retention_tick(retention *r, int64_t now_s);
void retention_stats_get(const retention *r, retention_stats *out /* OUT */);

#endif
