/* storage/dispatchlog: which fetches were started, durable against a
 * killed process, so the next run can say exactly how many URLs it fetches
 * again (DESIGN.md invariant 2).
 *
 * A request is sent before its outcome is committed (outcomes ride the
 * writer's batches), so after a SIGKILL some pages are fetched twice: those
 * in flight, and those whose outcome was still in the commit window. This
 * log names them: before a fetch starts, its (row id, attempt) is stored in
 * a ring in a file shared-mapped from state_dir/dispatch.log, which the
 * kernel keeps when the process dies. At the next start, an entry whose row
 * is still queued with fewer recorded attempts names a fetch that was sent
 * and whose outcome was lost; every other row was either never requested
 * or has its outcome stored. A clean close marks the log clean.
 *
 * Each entry also says when the fetch was handed out (wall clock), to which
 * host (its frontier_host_key) and what spacing that host had then, so the
 * next run, after a kill or a clean stop alike, asks no host sooner than
 * its politeness allows after the last run's requests (robots.txt fetches
 * are logged too, as row 0). A clean close keeps the entries for that.
 *
 * The ring holds the last DISPATCHLOG_SLOTS starts, far more than can be in
 * flight or inside one commit window. Writers are any thread (an atomic
 * slot counter); a power loss may lose the last entries, as it may lose
 * the last commits (synchronous=NORMAL). A file of the first layout (8-byte
 * entries: row and attempt only) is converted on open, its entries kept
 * with the rest unknown. */
#ifndef CRAWLD_STORAGE_DISPATCHLOG_H
#define CRAWLD_STORAGE_DISPATCHLOG_H

#include <stddef.h>
#include <stdint.h>

#define DISPATCHLOG_SLOTS 65536

typedef struct dispatchlog dispatchlog;

/* Maps state_dir/dispatch.log, creating it if missing. *was_clean gets 1
 * when the last run closed it cleanly or it is new, 0 after a crash.
 * Caller owns the result (dispatchlog_close). NULL with err. OUT: was_clean */
dispatchlog *dispatchlog_open(const char *state_dir, int *was_clean, char *err, size_t errlen);

typedef struct dispatchlog_entry {
    int64_t id;           /* the row; 0 for a robots.txt fetch */
    int attempt;          /* >= 1 (1..65535 kept) */
    uint64_t host_key;    /* frontier_host_key of its host; 0: unknown */
    int64_t started_ms;   /* wall-clock ms it was handed out at; 0: unknown */
    int64_t spacing_ms;   /* the host's spacing between requests then; -1: unknown */
} dispatchlog_entry;

/* Calls cb for every logged start of the last run (in ring order, robots
 * fetches included); cb's non-zero return stops. Use before
 * dispatchlog_reset. */
typedef int (*dispatchlog_fn)(void *ud, const dispatchlog_entry *e);
void dispatchlog_scan(dispatchlog *l, dispatchlog_fn cb, void *ud);

/* Empties the ring and marks it in use (not clean) for this run. */
void dispatchlog_reset(dispatchlog *l);

/* Records that the fetch e describes starts now (e->id < 0 is ignored;
 * an attempt below 1 is taken as 1). Any thread; lock-free. */
void dispatchlog_note(dispatchlog *l, const dispatchlog_entry *e);

/* Unmaps; clean = 1 marks the run as ended cleanly (call it only once
 * every noted fetch's outcome is committed); the entries stay either way.
 * NULL is a no-op. */
void dispatchlog_close(dispatchlog *l, int clean);

#endif
