/* storage/fpruns: the seen-set's fingerprint index, as sorted runs inside
 * crawld.db (schema 6). A small log-structured merge tree made of SQLite
 * tables, so that a new URL costs one insert into a B-tree that fits the
 * page cache instead of one into an index that grows with the crawl.
 *
 * - Each run is a table fp_N(fp, id) WITHOUT ROWID, keyed by (fp, id):
 *   fp is the row's fp (storage/urlfp), id its id in urls or in seen
 *   (one id sequence covers both).
 * - One run is active (tier -1 in fp_runs, table fp_active). Whoever
 *   inserts into urls adds each new row's (fp, id) to it with
 *   FPRUNS_ADD_SQL (storage/db's writer and its slot import do). An
 *   insert trigger did the same at 1.27x schema 5's writer CPU per crawl
 *   row, the explicit statement at 1.05x (bench_db async, 300,000 rows,
 *   medians of 3). Triggers on urls (and seen) delete and move entries with
 *   their rows.
 * - The view seen_fp is the union of all runs, largest first: a look-up
 *   "SELECT ... FROM seen_fp WHERE fp = ?" probes each run's key.
 * - fpruns_maintain, run by the writer between its batches, freezes the
 *   active run once it holds active_max rows (a new empty one takes its
 *   place) and merges `fanin` frozen runs of one tier into one run of the
 *   next, written in key order (so its pages are full and written once).
 *   A URL is so rewritten about log_fanin(rows / active_max) times, in
 *   sequential writes, instead of one random leaf write per commit.
 * Every change of the run set rewrites the view and the triggers in the
 * same transaction; prepared statements re-prepare themselves.
 * The caller owns the connection and its thread. */
#ifndef CRAWLD_FPRUNS_H
#define CRAWLD_FPRUNS_H

#include <sqlite3.h>
#include <stdint.h>

/* Measured choices (issue 22, bench/bench_dedup.sh and bench_seenscale.sh):
 * see fpruns.c beside the figures. */
#define FPRUNS_ACTIVE_MAX 1000000
#define FPRUNS_FANIN 4

#define FPRUNS_ACTIVE_TABLE "fp_active"
/* ?1 = the new row's fp, ?2 = its id */
#define FPRUNS_ADD_SQL "INSERT INTO " FPRUNS_ACTIVE_TABLE "(fp, id) VALUES(?1, ?2)"

/* Schema 5 -> 6, inside the caller's transaction: the urls_fp index
 * becomes the first frozen run (already in key order), an empty active
 * run, the view and the triggers. SQLite result code. */
int fpruns_install(sqlite3 *c);

/* The view and the triggers again, for the tables there now (schema 6 ->
 * 7 adds the seen table, whose deletes the triggers follow), inside the
 * caller's transaction. A connection that deletes from seen needs the SQL
 * function crawld_urlfp(url), the fp of urlfp.h (storage/db registers it).
 * SQLite result code. */
int fpruns_refresh(sqlite3 *c);

typedef struct fpruns_step {
    int rotated;     /* the active run was frozen */
    int merged;      /* runs merged into one */
    int64_t rows;    /* entries written by the merge */
} fpruns_step;

/* One step of upkeep in its own transaction: freeze the active run when
 * *active_rows reaches active_max (then *active_rows = 0), else merge one
 * tier that has `fanin` frozen runs. *active_rows is the caller's count of
 * rows inserted since the last freeze (fpruns_active_rows at open). Fills
 * *st with what was done (all 0: nothing was due). A failure rolls back
 * and changes nothing. SQLite result code. */
int fpruns_maintain(sqlite3 *c, int64_t *active_rows, int64_t active_max, int fanin,
                    fpruns_step *st);

/* The active run's entries now, and the number of runs. SQLite result code. */
int fpruns_count(sqlite3 *c, int64_t *active_rows, int *runs);

#endif
