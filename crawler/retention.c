/* crawler/retention: the ring's rotation in step with the store (see
 * retention.h). One db_forget step is in flight at a time: its callback
 * says how many rows it deleted; a full step means more may be left, so
 * the next tick queues another. A rotation waits until the deletion of
 * the previous one is done. */
#include "crawler/retention.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "common/alloc.h"

struct retention {
    seen *s;
    gens *g;
    db *d;
    db_id_fn forgot;
    void *forgot_arg;
    FILE *log;
    int64_t cutoff;          /* the deletion's cutoff */
    int forgetting;          /* steps still to run for cutoff */
    _Atomic int in_flight;   /* a db_forget step is queued */
    _Atomic int64_t last_step;/* rows the last step deleted (-1: none yet) */
    _Atomic int step_failed;
    uint64_t rotations, kept, steps;
    int64_t next_check;      /* no window ends before (Unix s) */
};

retention *retention_new(seen *s, db *d, db_id_fn forgot, void *forgot_arg, FILE *log)
{
    gens *g = seen_gens(s);
    if (!gens_rotating(g) || d == NULL)
        return NULL;
    retention *r = cr_calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->s = s;
    r->g = g;
    r->d = d;
    r->forgot = forgot;
    r->forgot_arg = forgot_arg;
    r->log = log;
    atomic_store(&r->last_step, -1);
    /* rows stamped before the oldest live window: a deletion a crash cut
     * short, or rows whose window was dropped while crawld was down */
    gens_stats st;
    gens_stats_get(g, &st);
    r->cutoff = st.gen[0].start;
    r->forgetting = 1;
    return r;
}

void retention_free(retention *r) { cr_free(r); }

static void on_step(void *ud, const db_result *res)
{
    retention *r = ud;
    if (res->status < 0) {
        atomic_store(&r->step_failed, 1);
    } else {
        for (int i = 0; r->forgot != NULL && res->ids != NULL && i < res->status; i++)
            r->forgot(r->forgot_arg, res->ids[i]);
        atomic_store(&r->last_step, res->status);
    }
    atomic_store(&r->in_flight, 0);
}

typedef struct keep_ctx {
    retention *r;
    int64_t stamp;
    int rc;
} keep_ctx;

/* A queued row older than the coming cutoff: its key into the newest
 * window (before the old one is dropped) and its row stamped so. */
static int keep_row(void *ud, int64_t id, const char *url, size_t len, int64_t linked)
{
    keep_ctx *k = ud;
    (void)id;
    (void)linked;
    seen_add_known_at(k->r->s, url, len, k->stamp);
    int rc = db_touch_linked(k->r->d, url, len, k->stamp);
    if (rc < 0) {
        k->rc = rc;
        return rc;
    }
    k->r->kept++;
    return 0;
}

/* A new window when one ends; then, if some generation expired, the
 * queued rows it covers are kept (their keys moved to the newest), it is
 * dropped, and the deletion of its rows starts. A failure leaves every
 * generation in place; the next tick tries again. */
static int rotate(retention *r, int64_t now)
{
    int pushed = gens_push(r->g, now);
    if (pushed < 0)
        return pushed;
    r->rotations += (uint64_t)pushed;
    int64_t next = gens_next_cutoff(r->g, now);
    if (next <= gens_cutoff(r->g))
        return 0;
    keep_ctx k = { r, gens_stamp(r->g, now), 0 };
    db_reader *rd = db_reader_open(r->d, NULL, 0);
    if (rd == NULL)
        return -EIO;
    int64_t n = db_reader_stale_queued(rd, next, keep_row, &k);
    db_reader_free(rd);
    if (n < 0 || k.rc < 0)
        return k.rc < 0 ? k.rc : (int)n;
    int64_t cutoff;
    unsigned dropped = gens_drop(r->g, now, &cutoff);
    if (r->log)
        fprintf(r->log, "crawld: retention: window %lld; %u generation(s) dropped, %lld queued"
                        " URL(s) kept; forgetting the rows nobody linked since %lld\n",
                (long long)k.stamp, dropped, (long long)n, (long long)cutoff);
    r->cutoff = cutoff;
    r->forgetting = 1;
    return 0;
}

int retention_tick(retention *r, int64_t now_s)
{
    if (atomic_load(&r->in_flight) || (!r->forgetting && now_s < r->next_check))
        return 0;
    if (atomic_exchange(&r->step_failed, 0))
        r->forgetting = 1; /* the step was rolled back: run it again */
    int64_t last = atomic_exchange(&r->last_step, -1);
    if (last >= 0) {
        r->steps++;
        if (last < DB_FORGET_MAX)
            r->forgetting = 0;
    }
    if (r->forgetting) {
        atomic_store(&r->in_flight, 1);
        int rc = db_forget(r->d, r->cutoff, DB_FORGET_MAX, on_step, r);
        if (rc < 0)
            atomic_store(&r->in_flight, 0);
        return rc;
    }
    int rc = rotate(r, now_s);
    /* nothing can change before the newest window ends (or a failed step
     * is retried, or a deletion goes on, which clear this) */
    if (rc == 0 && !r->forgetting)
        r->next_check = gens_stamp(r->g, now_s) + gens_window_s(r->g);
    return rc;
}

void retention_stats_get(const retention *r, retention_stats *out)
{
    memset(out, 0, sizeof *out);
    out->rotations = r->rotations;
    out->kept_queued = r->kept;
    out->forget_steps = r->steps;
    out->cutoff = r->cutoff;
    out->forgetting = r->forgetting;
}
