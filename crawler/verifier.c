/* crawler/verifier: seen_verifier over storage/db, with a pool of readers.
 * The pool's mutex guards only the free list; a reader is used by one
 * thread at a time, outside the lock. */
#include "verifier.h"

#include <pthread.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/clock.h"

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
    int64_t linked;
    void *ack_arg;
    db_done_fn on_new;
    void *ud;
} acked;

static void on_committed(void *ud, const db_result *r)
{
    acked *a = ud;
    a->ack(a->ack_arg, r->url, r->url_len, a->linked, r->status);
    if (a->on_new)
        a->on_new(a->ud, r);
    cr_free(a);
}

/* Queues the row's insert; ack and then the row's on_new hear of its
 * commit. keep: a row already there is left as it is (a look-up). */
static int queue_insert(verifier *v, const char *key, size_t len, int64_t linked, bool absent,
                        bool keep, verifier_row *r, seen_ack_fn ack, void *ack_arg)
{
    acked *a = cr_malloc(sizeof *a);
    if (a == NULL)
        return -ENOMEM;
    *a = (acked){ ack, linked, ack_arg, r->on_new, r->ud };
    r->u.url = key;
    r->u.url_len = len;
    r->u.linked_s = linked;
    r->u.absent = absent;
    r->u.keep_linked = keep;
    int rc = db_insert_url(v->d, &r->u, on_committed, a);
    if (rc < 0)
        cr_free(a);
    return rc;
}

static int record_new(void *ctx, const char *key, size_t len, int64_t linked, bool absent,
                      void *row, seen_ack_fn ack, void *ack_arg)
{
    return queue_insert(ctx, key, len, linked, absent, false, row, ack, ack_arg);
}

/* The writer's look-up settles it, in its batch (sorted by fingerprint,
 * on its warm page cache), instead of a read connection now. */
static int check_insert_async(void *ctx, const char *key, size_t len, int64_t linked, void *row,
                              seen_ack_fn ack, void *ack_arg)
{
    return queue_insert(ctx, key, len, linked, false, true, row, ack, ack_arg);
}

static int check_insert(void *ctx, const char *key, size_t len, int64_t linked, void *row)
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
    r->u.linked_s = linked;
    r->u.absent = false;
    return db_insert_url_wait(v->d, &r->u, &r->id);
}

static int refresh(void *ctx, const char *key, size_t len, int64_t linked)
{
    verifier *v = ctx;
    return db_touch_linked(v->d, key, len, linked);
}

seen_verifier verifier_iface(verifier *v)
{
    seen_verifier s = { v, record_new, check_insert, refresh, check_insert_async };
    return s;
}

/* d's crawl id as the snapshot's owner bytes. OUT: owner */
static void owner_of(db *d, uint8_t owner[BLOOM_OWNER_BYTES])
{
    const char *id = db_crawl_id(d);
    memset(owner, 0, BLOOM_OWNER_BYTES);
    for (size_t i = 0; i < BLOOM_OWNER_BYTES && id[2 * i] && id[2 * i + 1]; i++) {
        unsigned v = 0;
        sscanf(id + 2 * i, "%2x", &v);
        owner[i] = (uint8_t)v;
    }
}

int verifier_snapshot(seen *s, db *d, const char *path, char *err, size_t errlen)
{
    int64_t mark = 0;
    uint8_t owner[BLOOM_OWNER_BYTES];
    /* Every row up to the mark is committed and acknowledged, so its bits
     * are in the filter; bits of rows after it may be too (catch-up adds
     * them again). The filter holds committed rows only (dedup/seen.h). */
    int rc = db_flush_mark(d, &mark);
    if (rc < 0) {
        db_last_error(d, err, errlen);
        return rc;
    }
    owner_of(d, owner);
    return gens_save(seen_gens(s), path, (uint64_t)mark, owner, err, errlen);
}

static int add_known(void *ud, int64_t id, const char *url, size_t len, int64_t linked)
{
    (void)id;
    gens *g = seen_gens(ud);
    /* a row stamped before the oldest window is past the retention: the
     * first deletion takes it, and its key must not outlive it (linked
     * meanwhile, its insert finds the row, restamps it and adds the key) */
    if (!gens_rotating(g) || linked >= gens_cutoff(g))
        seen_add_known_at(ud, url, len, linked);
    return 0;
}

/* A window for a stamp the ring lacks (written after its snapshot), so
 * that the catch-up puts each key in the window of its row's stamp. */
static int push_stamp(void *ud, int64_t stamp)
{
    gens_push(ud, stamp);
    gens_drop(ud, stamp, NULL);
    return 0;
}

static int first_stamp(void *ud, int64_t stamp)
{
    *(int64_t *)ud = stamp;
    return 1;
}

/* With retention, before the catch-up: a rebuilt ring starts at the oldest
 * stamp still within the retention (so old stamps keep their windows'
 * grid), and either ring gets the windows of the stamps after its newest.
 * OUT: *g (a new ring when *g was NULL). */
static int ring_for_rows(db *d, const bloom_params *bp, const gens_opts *go, int64_t now,
                         gens **g)
{
    int64_t window = go->retention_s / (int64_t)go->generations;
    int64_t lo = now - go->retention_s - window, t0 = now;
    db_reader *rd = db_reader_open(d, NULL, 0);
    if (rd == NULL)
        return -EIO;
    int rc = 0;
    if (*g == NULL) {
        if (db_reader_stamps(rd, lo, first_stamp, &t0) < 0 || t0 > now)
            t0 = now;
        rc = gens_new(bp, go, t0, g);
    }
    if (rc == 0) {
        int64_t since = gens_stamp(*g, now) > lo ? gens_stamp(*g, now) : lo;
        if (db_reader_stamps(rd, since, push_stamp, *g) < 0)
            rc = -EIO;
    }
    db_reader_free(rd);
    return rc;
}

/* The rows after the mark, and with a ring the rows stamped in or after
 * its newest window (refreshed after the snapshot was taken). */
static int64_t catch_up(seen *s, db *d, uint64_t mark, int64_t since, char *err, size_t errlen)
{
    db_reader *rd = db_reader_open(d, err, errlen);
    if (rd == NULL)
        return -EIO;
    int64_t n = db_reader_scan_linked(rd, (int64_t)mark, since, add_known, s);
    db_reader_free(rd);
    if (n < 0)
        snprintf(err, errlen, "cannot read the rows of %s", db_path(d));
    return n;
}

/* 1 if path is a non-empty regular file. */
static int nonempty_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0;
}

/* The first WARC file in dir into name, or 0 if there is none. */
static int find_warc(const char *dir, char *name, size_t len)
{
    DIR *dh = dir ? opendir(dir) : NULL;
    struct dirent *e;
    int found = 0;
    if (dh == NULL)
        return 0;
    while (!found && (e = readdir(dh)) != NULL) {
        const char *n = e->d_name;
        if (strstr(n, ".warc") != NULL) {
            snprintf(name, len, "%s", n);
            found = 1;
        }
    }
    closedir(dh);
    return found;
}

int verifier_check_state(const char *state_dir, const char *snap_name, const char *warc_dir,
                         char *err, size_t errlen)
{
    char db_file[4096], snap[4096], warc[256];
    snprintf(db_file, sizeof db_file, "%s/crawld.db", state_dir);
    if (nonempty_file(db_file))
        return 0;
    snprintf(snap, sizeof snap, "%s/%s", state_dir, snap_name);
    if (nonempty_file(snap)) {
        snprintf(err, errlen,
                 "state_dir %s holds a Bloom snapshot but no database: %s is %s. Starting afresh"
                 " would forget the crawl; restore crawld.db, or move %s away to start a new crawl",
                 state_dir, db_file, access(db_file, F_OK) == 0 ? "empty" : "missing", snap);
        return -EEXIST;
    }
    if (find_warc(warc_dir, warc, sizeof warc)) {
        snprintf(err, errlen,
                 "state_dir %s holds WARC files (%s/%s) but no database: %s is %s. Starting"
                 " afresh would fetch and archive everything again; restore crawld.db, or choose"
                 " another state_dir",
                 state_dir, warc_dir, warc, db_file, access(db_file, F_OK) == 0 ? "empty" : "missing");
        return -EEXIST;
    }
    return 0;
}

/* The snapshot at path if it belongs to d and was built for bp and go: *mark
 * set. NULL (with a line on log saying why, unless there is no snapshot)
 * when it does not. */
static gens *load_owned(db *d, const char *path, const bloom_params *bp, const gens_opts *go,
                        uint64_t *mark, FILE *log, const char *who)
{
    bloom_ring ring;
    gens *g = NULL;
    uint8_t owner[BLOOM_OWNER_BYTES], want[BLOOM_OWNER_BYTES];
    char msg[512];
    int64_t top = 0;
    int rc = bloom_load_ring(path, &ring, mark, owner, msg, sizeof msg);
    if (rc == -ENOENT)
        return NULL;
    if (rc < 0) {
        if (log)
            fprintf(log, "%s: Bloom snapshot refused (%s); rebuilding it from the database\n", who,
                    msg);
        return NULL;
    }
    owner_of(d, want);
    db_reader *rd = db_reader_open(d, NULL, 0);
    rc = rd ? db_reader_max_id(rd, &top) : -EIO;
    db_reader_free(rd);
    if (memcmp(owner, want, sizeof want) != 0) {
        if (log)
            fprintf(log, "%s: Bloom snapshot refused (%s belongs to another crawl than %s, whose"
                         " crawl id is %s); rebuilding it from the database\n",
                    who, path, db_path(d), db_crawl_id(d));
    } else if (rc < 0 || *mark > (uint64_t)top) {
        if (log)
            fprintf(log, "%s: Bloom snapshot refused (%s covers rows up to %llu but %s holds %lld:"
                         " it is newer than the database); rebuilding it from the database\n",
                    who, path, (unsigned long long)*mark, db_path(d), (long long)top);
    } else if (ring.retention_s == 0 && go->retention_s == 0 && ring.n == 1) {
        /* a plain filter keeps its own parameters, as it always did */
        g = gens_wrap(ring.gens[0]);
        if (g != NULL)
            return g;
    } else if (gens_adopt(&ring, bp, go, &g, msg, sizeof msg) == 0) {
        return g;
    } else if (log) {
        fprintf(log, "%s: Bloom snapshot refused (%s: %s); rebuilding it from the database\n",
                who, path, msg);
    }
    for (unsigned i = 0; i < ring.n; i++)
        bloom_free(ring.gens[i]);
    return NULL;
}

/* The reason a filter was refused -EFBIG: its first stages pass the cap. */
static void too_big(const bloom_params *bp, const gens_opts *go, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "the Bloom filter's first stage for dedup.expected_urls = %llu at fp_rate %g%s needs"
             " more than dedup.bloom_max_mib (%llu MiB): raise the cap or lower expected_urls",
             (unsigned long long)bp->expected_items, bp->fp_rate,
             go->retention_s > 0 ? " (one generation's share)" : "",
             (unsigned long long)(bp->max_bytes >> 20));
}

seen *verifier_open_seen(verifier *v, db *d, const char *snap_path, const bloom_params *bp,
                         const gens_opts *go, const seen_opts *so, FILE *log, const char *who,
                         char *err, size_t errlen)
{
    uint64_t mark = 0;
    int64_t since = INT64_MAX;
    int64_t now = cr_wall_ms() / 1000;
    gens_opts none = { 0, 0 };
    if (go == NULL)
        go = &none;
    if (gens_opts_check(go, err, errlen) != 0)
        return NULL;
    gens *g = d && snap_path ? load_owned(d, snap_path, bp, go, &mark, log, who) : NULL;
    if (g != NULL && gens_rotating(g))
        since = gens_stamp(g, now); /* rows refreshed into its newest window since */
    if (g == NULL)
        mark = 0;
    int rc = 0;
    if (d != NULL && go->retention_s > 0 && (rc = ring_for_rows(d, bp, go, now, &g)) < 0) {
        gens_free(g);
        if (rc == -EFBIG)
            too_big(bp, go, err, errlen);
        else
            snprintf(err, errlen, "cannot create the Bloom filter (out of memory?) or read %s",
                     db_path(d));
        return NULL;
    }
    if (g == NULL && (rc = gens_new(bp, go, now, &g)) < 0) {
        if (rc == -EFBIG)
            too_big(bp, go, err, errlen);
        else
            snprintf(err, errlen, "cannot create the Bloom filter (out of memory?)");
        return NULL;
    }
    gens_set_max_bytes(g, bp->max_bytes); /* a snapshot keeps no cap: the configuration's */
    seen_verifier iface;
    if (v)
        iface = verifier_iface(v);
    seen *s = seen_new_gens(g, so, v ? &iface : NULL);
    if (s == NULL) {
        gens_free(g);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (d == NULL)
        return s;
    int64_t n = catch_up(s, d, mark, since, err, errlen);
    if (n < 0) {
        seen_free(s);
        return NULL;
    }
    if (n > 0 && log)
        fprintf(log, "%s: %lld URLs from the database added to the Bloom filter (after snapshot"
                     " mark %llu)\n",
                who, (long long)n, (unsigned long long)mark);
    return s;
}

int64_t verifier_row_id(verifier *v, const char *key, size_t klen)
{
    int64_t id = 0;
    db_reader *rd = take_reader(v);
    if (rd == NULL)
        return 0;
    if (db_reader_exists(rd, key, klen, &id) != 1)
        id = 0;
    give_reader(v, rd);
    return id;
}

int verifier_row_hops(verifier *v, int64_t id)
{
    int hops = 0;
    db_reader *rd = take_reader(v);
    if (rd == NULL)
        return 0;
    if (db_reader_row(rd, id, NULL, NULL, &hops) < 0)
        hops = 0;
    give_reader(v, rd);
    return hops;
}
