/* crawler/verifier: seen_verifier over storage/db, with a pool of readers.
 * The pool's mutex guards only the free list; a reader is used by one
 * thread at a time, outside the lock. */
#include "verifier.h"

#include <pthread.h>

#include <errno.h>
#include <stdio.h>

#include "common/alloc.h"

#define POOL_MAX 64

struct verifier {
    db *d;
    pthread_mutex_t lock;
    db_reader *free_readers[POOL_MAX];
    int nfree;
};

verifier *verifier_new(db *d)
{
    verifier *v = cr_calloc(1, sizeof *v);
    if (v == NULL)
        return NULL;
    v->d = d;
    pthread_mutex_init(&v->lock, NULL);
    return v;
}

void verifier_free(verifier *v)
{
    if (v == NULL)
        return;
    for (int i = 0; i < v->nfree; i++)
        db_reader_free(v->free_readers[i]);
    pthread_mutex_destroy(&v->lock);
    cr_free(v);
}

static db_reader *take_reader(verifier *v)
{
    db_reader *rd = NULL;
    pthread_mutex_lock(&v->lock);
    if (v->nfree > 0)
        rd = v->free_readers[--v->nfree];
    pthread_mutex_unlock(&v->lock);
    return rd ? rd : db_reader_open(v->d, NULL, 0);
}

static void give_reader(verifier *v, db_reader *rd)
{
    pthread_mutex_lock(&v->lock);
    if (v->nfree < POOL_MAX) {
        v->free_readers[v->nfree++] = rd;
        rd = NULL;
    }
    pthread_mutex_unlock(&v->lock);
    db_reader_free(rd);
}

/* What an async insert reports to when it commits: the seen test's ack
 * first (the key's Bloom bits), then the caller's callback. */
typedef struct acked {
    seen_ack_fn ack;
    void *ack_arg;
    db_done_fn on_new;
    void *ud;
} acked;

static void on_committed(void *ud, const db_result *r)
{
    acked *a = ud;
    a->ack(a->ack_arg, r->url, r->url_len, r->status);
    if (a->on_new)
        a->on_new(a->ud, r);
    cr_free(a);
}

static int record_new(void *ctx, const char *key, size_t len, void *row, seen_ack_fn ack,
                      void *ack_arg)
{
    verifier *v = ctx;
    verifier_row *r = row;
    acked *a = cr_malloc(sizeof *a);
    if (a == NULL)
        return -ENOMEM;
    *a = (acked){ ack, ack_arg, r->on_new, r->ud };
    r->u.url = key;
    r->u.url_len = len;
    int rc = db_insert_url(v->d, &r->u, on_committed, a);
    if (rc < 0)
        cr_free(a);
    return rc;
}

static int check_insert(void *ctx, const char *key, size_t len, void *row)
{
    verifier *v = ctx;
    db_reader *rd = take_reader(v);
    if (rd != NULL) {
        int found = db_reader_exists(rd, key, len, &((verifier_row *)row)->id);
        give_reader(v, rd);
        if (found == 1)
            return 0;
    }
    verifier_row *r = row;
    r->u.url = key;
    r->u.url_len = len;
    return db_insert_url_wait(v->d, &r->u, &r->id);
}

seen_verifier verifier_iface(verifier *v)
{
    seen_verifier s = { v, record_new, check_insert };
    return s;
}

int verifier_snapshot(seen *s, db *d, const char *path, char *err, size_t errlen)
{
    int64_t mark = 0;
    /* Every row up to the mark is committed and acknowledged, so its bits
     * are in the filter; bits of rows after it may be too (catch-up adds
     * them again). The filter holds committed rows only (dedup/seen.h). */
    int rc = db_flush_mark(d, &mark);
    if (rc < 0) {
        db_last_error(d, err, errlen);
        return rc;
    }
    return bloom_save(seen_bloom(s), path, (uint64_t)mark, err, errlen);
}

static int add_known(void *ud, int64_t id, const char *url, size_t len)
{
    (void)id;
    seen_add_known(ud, url, len);
    return 0;
}

int64_t verifier_catch_up(seen *s, db *d, uint64_t mark, char *err, size_t errlen)
{
    db_reader *rd = db_reader_open(d, err, errlen);
    if (rd == NULL)
        return -EIO;
    int64_t n = db_reader_scan_after(rd, (int64_t)mark, add_known, s);
    db_reader_free(rd);
    if (n < 0)
        snprintf(err, errlen, "cannot read the rows of %s", db_path(d));
    return n;
}
