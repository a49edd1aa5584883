/* tests/test_seen: dedup/seen, the URL-seen test, against a fake verifier.
 *
 * The fake is a store of keys "k<number>" (a state per number: unknown,
 * queued, stored). record_new queues a key; its acknowledgement comes
 * when the test "commits" (fake_commit), with success or a store error
 * chosen per key; or record_new fails outright. check_insert commits
 * everything queued before it (as the real writer's FIFO does), then
 * inserts unless stored; or fails. So each verify policy, each counter,
 * each failure path and the invariant of seen.h can be checked:
 *
 *   an in-memory layer answers "seen" only for a key whose row is
 *   committed, or recorded and held until it commits.
 *
 * The random cases print their seed; CRAWLD_TEST_SEED=N replays them. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <errno.h>

#include "common/alloc.h"
#include "dedup/bloom.h"
#include "dedup/hash.h"
#include "dedup/seen.h"

static uint64_t seed;

static uint64_t mix(uint64_t *st)
{
    uint64_t z = (*st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- the fake verifier ---- */

enum { UNKNOWN, QUEUED, STORED };
enum { REC_QUEUE, REC_FAIL, REC_INLINE }; /* record_new: queue, fail, ack at once */
enum { CHK_OK, CHK_FAIL };

typedef struct rec {
    unsigned key;
    int64_t linked;
    seen_ack_fn ack;
    void *arg;
    bool probe; /* check_insert_async: insert unless stored, ack 1 or 0 */
} rec;

typedef struct fake {
    pthread_mutex_t mu;     /* guards the fields below */
    pthread_mutex_t commit; /* one commit at a time: acks in queue order */
    unsigned nkeys;
    unsigned char *state;   /* per key: UNKNOWN, QUEUED, STORED */
    unsigned char *refuse;  /* per key: store attempts still to refuse */
    rec *q;
    size_t qhead, qn, qcap;
    int rec_mode, chk_mode;
    long records, checks, async_checks, acks_ok, acks_err;
    long violations;        /* a record_new of a key queued or stored */
    long absent_yes, absent_no; /* record_new's absent flag, as passed */
} fake;

static void fake_init(fake *f, unsigned nkeys)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->commit, NULL);
    f->nkeys = nkeys;
    f->state = calloc(nkeys, 1);
    f->refuse = calloc(nkeys, 1);
    f->qcap = nkeys + 16;
    f->q = calloc(f->qcap, sizeof *f->q);
    assert_non_null(f->state);
    assert_non_null(f->refuse);
    assert_non_null(f->q);
}

static void fake_release(fake *f)
{
    free(f->state);
    free(f->refuse);
    free(f->q);
    pthread_mutex_destroy(&f->commit);
    pthread_mutex_destroy(&f->mu);
}

static void key_name(char *buf, size_t len, unsigned k) { snprintf(buf, len, "k%u", k); }

static unsigned key_of(const char *key, size_t len)
{
    char tmp[32];
    assert_true(len > 1 && len < sizeof tmp && key[0] == 'k');
    memcpy(tmp, key, len);
    tmp[len] = '\0';
    return (unsigned)strtoul(tmp + 1, NULL, 10);
}

/* Commits up to max queued keys in order (each stored, or refused when its
 * refuse count says so) and delivers their acks. Returns how many. */
static size_t fake_commit(fake *f, size_t max)
{
    size_t done = 0;
    char name[32];

    pthread_mutex_lock(&f->commit);
    for (; done < max; done++) {
        pthread_mutex_lock(&f->mu);
        if (f->qn == 0) {
            pthread_mutex_unlock(&f->mu);
            break;
        }
        rec r = f->q[f->qhead];
        f->qhead = (f->qhead + 1) % f->qcap;
        f->qn--;
        int status = 1;
        if (f->refuse[r.key] > 0) {
            f->refuse[r.key]--;
            if (!r.probe)
                f->state[r.key] = UNKNOWN;
            f->acks_err++;
            status = -ENOSPC;
        } else {
            if (r.probe && f->state[r.key] == STORED)
                status = 0;
            f->state[r.key] = STORED;
            f->acks_ok++;
        }
        pthread_mutex_unlock(&f->mu);
        key_name(name, sizeof name, r.key);
        r.ack(r.arg, name, strlen(name), r.linked, status);
    }
    pthread_mutex_unlock(&f->commit);
    return done;
}

static int fake_record_new(void *ctx, const char *key, size_t len, int64_t linked, bool absent,
                           void *row, seen_ack_fn ack, void *ack_arg)
{
    fake *f = ctx;
    unsigned k = key_of(key, len);
    int mode;

    assert_ptr_equal(row, f); /* passed through untouched */
    pthread_mutex_lock(&f->mu);
    mode = f->rec_mode;
    f->records++;
    if (absent)
        f->absent_yes++;
    else
        f->absent_no++;
    if (mode == REC_FAIL) {
        pthread_mutex_unlock(&f->mu);
        return -EIO;
    }
    if (f->state[k] != UNKNOWN)
        f->violations++;
    f->state[k] = QUEUED;
    f->q[(f->qhead + f->qn) % f->qcap] = (rec){ k, linked, ack, ack_arg, false };
    f->qn++;
    pthread_mutex_unlock(&f->mu);
    if (mode == REC_INLINE)
        fake_commit(f, SIZE_MAX);
    return 0;
}

static int fake_check_insert(void *ctx, const char *key, size_t len, int64_t linked, void *row)
{
    (void)linked;
    fake *f = ctx;
    unsigned k = key_of(key, len);
    int rc;

    assert_ptr_equal(row, f);
    pthread_mutex_lock(&f->mu);
    f->checks++;
    rc = f->chk_mode == CHK_FAIL ? -EIO : 0;
    pthread_mutex_unlock(&f->mu);
    if (rc < 0)
        return rc;
    fake_commit(f, SIZE_MAX); /* after every record_new made before it */
    pthread_mutex_lock(&f->mu);
    rc = f->state[k] == STORED ? 0 : 1;
    f->state[k] = STORED;
    pthread_mutex_unlock(&f->mu);
    return rc;
}

/* Queued like a record, answered at its commit: 1 new, 0 stored already. */
static int fake_check_insert_async(void *ctx, const char *key, size_t len, int64_t linked,
                                   void *row, seen_ack_fn ack, void *ack_arg)
{
    fake *f = ctx;
    unsigned k = key_of(key, len);

    assert_ptr_equal(row, f);
    pthread_mutex_lock(&f->mu);
    f->async_checks++;
    if (f->chk_mode == CHK_FAIL) {
        pthread_mutex_unlock(&f->mu);
        return -EIO;
    }
    f->q[(f->qhead + f->qn) % f->qcap] = (rec){ k, linked, ack, ack_arg, true };
    f->qn++;
    pthread_mutex_unlock(&f->mu);
    return 0;
}

static seen_verifier fake_iface(fake *f)
{
    seen_verifier v = { f, fake_record_new, fake_check_insert, NULL, NULL };
    return v;
}

static seen_verifier fake_iface_async(fake *f)
{
    seen_verifier v = { f, fake_record_new, fake_check_insert, NULL, fake_check_insert_async };
    return v;
}

static int fake_state(fake *f, unsigned k)
{
    pthread_mutex_lock(&f->mu);
    int st = f->state[k];
    pthread_mutex_unlock(&f->mu);
    return st;
}

/* ---- helpers ---- */

static bloom *tight_bloom(uint64_t n, double p)
{
    bloom_params bp;
    bloom *bf = NULL;
    bloom_params_init(&bp);
    bp.expected_items = n;
    bp.fp_rate = p;
    assert_int_equal(bloom_new(&bp, &bf), 0);
    return bf;
}

static seen *new_seen(int verify, size_t recent_entries, fake *f)
{
    seen_opts o = { .verify = verify, .recent_entries = recent_entries };
    seen_verifier v;
    if (f != NULL)
        v = fake_iface(f);
    seen *s = seen_new(tight_bloom(100000, 1e-9), &o, f ? &v : NULL);
    assert_non_null(s);
    return s;
}

static int test_key(seen *s, fake *f, unsigned k, bool in_scope)
{
    char name[32];
    key_name(name, sizeof name, k);
    return seen_test(s, name, strlen(name), in_scope, f);
}

static int in_bloom(seen *s, unsigned k)
{
    char name[32];
    key_name(name, sizeof name, k);
    return bloom_query(seen_bloom(s), name, strlen(name));
}

static void add_known(seen *s, unsigned k)
{
    char name[32];
    key_name(name, sizeof name, k);
    seen_add_known(s, name, strlen(name));
}

static seen_counters counters(seen *s)
{
    seen_counters c;
    seen_counters_get(s, &c);
    return c;
}

/* keys equals the sum of the result counters (errors are not results) */
static void assert_sums(const seen_counters *c)
{
    assert_int_equal(c->keys, c->new_bloom + c->new_verified + c->dup_trusted + c->dup_recent
                                  + c->dup_verified + c->dup_pending);
}

/* ---- the policies ---- */

static void verifier_required_unless_never(void **state)
{
    (void)state;
    seen_opts o = { .verify = SEEN_VERIFY_ALWAYS, .recent_entries = 8 };
    bloom *bf = tight_bloom(1000, 0.01);
    assert_null(seen_new(bf, &o, NULL));
    o.verify = SEEN_VERIFY_IN_SCOPE;
    assert_null(seen_new(bf, &o, NULL));
    bloom_free(bf); /* not taken on failure */
}

/* No verifier: the Bloom filter is the whole seen-set, set at once. */
static void never_without_verifier(void **state)
{
    (void)state;
    seen *s = new_seen(SEEN_VERIFY_NEVER, 100, NULL);
    assert_int_equal(test_key(s, NULL, 1, true), SEEN_NEW_BLOOM);
    assert_true(in_bloom(s, 1));
    assert_int_equal(test_key(s, NULL, 1, true), SEEN_DUP_TRUSTED);
    assert_int_equal(test_key(s, NULL, 2, false), SEEN_NEW_BLOOM);
    seen_counters c = counters(s);
    assert_int_equal(c.keys, 3);
    assert_int_equal(c.new_bloom, 2);
    assert_int_equal(c.dup_trusted, 1);
    assert_int_equal(c.checked_new, 0); /* nothing would have been verified */
    assert_int_equal(c.pending, 0);
    assert_int_equal(c.errors + c.unstored + c.dup_pending + c.dup_recent + c.dup_verified
                         + c.new_verified,
                     0);
    assert_sums(&c);
    assert_true(seen_observed_fpr(&c) == 0.0);
    seen_free(s);
}

/* verify = never with a verifier: new keys are still recorded (and held in
 * the pending set until acknowledged), MAYBEs are trusted, never checked. */
static void never_records_but_trusts(void **state)
{
    (void)state;
    fake f;
    fake_init(&f, 100);
    seen *s = new_seen(SEEN_VERIFY_NEVER, 100, &f);
    assert_int_equal(test_key(s, &f, 1, true), SEEN_NEW_BLOOM);
    assert_int_equal(f.records, 1);
    assert_false(in_bloom(s, 1)); /* not committed yet */
    assert_int_equal(counters(s).pending, 1);
    assert_int_equal(test_key(s, &f, 1, true), SEEN_DUP_PENDING);
    assert_int_equal(f.records, 1);
    assert_int_equal(fake_commit(&f, SIZE_MAX), 1);
    assert_true(in_bloom(s, 1));
    assert_int_equal(test_key(s, &f, 1, true), SEEN_DUP_TRUSTED);
    add_known(s, 2); /* a MAYBE for a key the store lacks: trusted anyway */
    assert_int_equal(test_key(s, &f, 2, true), SEEN_DUP_TRUSTED);
    assert_int_equal(f.checks, 0);
    seen_counters c = counters(s);
    assert_int_equal(c.keys, 4);
    assert_int_equal(c.new_bloom, 1);
    assert_int_equal(c.dup_pending, 1);
    assert_int_equal(c.dup_trusted, 2);
    assert_int_equal(c.checked_new, 0);
    assert_int_equal(c.pending, 0);
    assert_int_equal(c.unstored, 0);
    assert_sums(&c);
    assert_int_equal(f.violations, 0);
    seen_free(s);
    fake_release(&f);
}

/* verify = always: every layer in turn. */
static void always_walks_every_layer(void **state)
{
    (void)state;
    fake f;
    fake_init(&f, 100);
    seen *s = new_seen(SEEN_VERIFY_ALWAYS, 100, &f);

    assert_int_equal(test_key(s, &f, 1, false), SEEN_NEW_BLOOM);   /* in_scope ignored */
    assert_int_equal(test_key(s, &f, 1, false), SEEN_DUP_PENDING);
    assert_int_equal(fake_commit(&f, SIZE_MAX), 1);
    assert_int_equal(test_key(s, &f, 1, false), SEEN_DUP_RECENT);  /* the ack filled it */
    assert_int_equal(f.checks, 0);

    add_known(s, 2); /* Bloom MAYBE, not in the store: a false positive caught */
    assert_int_equal(test_key(s, &f, 2, true), SEEN_NEW_VERIFIED);
    assert_int_equal(f.checks, 1);
    assert_int_equal(fake_state(&f, 2), STORED);
    assert_int_equal(test_key(s, &f, 2, true), SEEN_DUP_RECENT);   /* cached after the check */
    assert_int_equal(f.checks, 1);

    add_known(s, 3); /* Bloom MAYBE, in the store (a restart's catch-up) */
    f.state[3] = STORED;
    assert_int_equal(test_key(s, &f, 3, true), SEEN_DUP_VERIFIED);
    assert_int_equal(f.checks, 2);

    seen_counters c = counters(s);
    assert_int_equal(c.keys, 6);
    assert_int_equal(c.new_bloom, 1);
    assert_int_equal(c.new_verified, 1);
    assert_int_equal(c.dup_pending, 1);
    assert_int_equal(c.dup_recent, 2);
    assert_int_equal(c.dup_verified, 1);
    assert_int_equal(c.dup_trusted, 0);
    assert_int_equal(c.checked_new, 2); /* key 1 (Bloom NO) and key 2 (caught) */
    assert_int_equal(c.errors, 0);
    assert_int_equal(c.pending, 0);
    assert_sums(&c);
    assert_true(seen_observed_fpr(&c) == 0.5);
    assert_int_equal(f.violations, 0);
    seen_free(s);
    fake_release(&f);
}

/* ---- async verify ---- */

static seen *new_seen_async(size_t recent_entries, fake *f)
{
    seen_opts o = { .verify = SEEN_VERIFY_ALWAYS, .recent_entries = recent_entries };
    seen_verifier v = fake_iface_async(f);
    seen *s = seen_new(tight_bloom(100000, 1e-9), &o, &v);
    assert_non_null(s);
    assert_int_equal(seen_verify_async(s), 0);
    return s;
}

/* Without check_insert_async, or without a verifier, MAYBEs are waited for. */
static void async_verify_needs_the_interface(void **state)
{
    (void)state;
    fake f;
    fake_init(&f, 100);
    seen *s = new_seen(SEEN_VERIFY_ALWAYS, 100, &f);
    assert_int_equal(seen_verify_async(s), -ENOTSUP);
    add_known(s, 2);
    assert_int_equal(test_key(s, &f, 2, true), SEEN_NEW_VERIFIED);
    seen_free(s);
    s = new_seen(SEEN_VERIFY_NEVER, 100, NULL);
    assert_int_equal(seen_verify_async(s), -ENOTSUP);
    seen_free(s);
    fake_release(&f);
}

/* A MAYBE past the recent cache is queued, pending until its ack, which
 * says new (a false positive caught: its Bloom bits) or duplicate. */
static void async_verify_answers_in_the_ack(void **state)
{
    (void)state;
    fake f;
    fake_init(&f, 100);
    seen *s = new_seen_async(100, &f);
    assert_false(seen_is_new(SEEN_VERIFYING));

    assert_int_equal(test_key(s, &f, 1, true), SEEN_NEW_BLOOM);
    assert_int_equal(fake_commit(&f, SIZE_MAX), 1);
    assert_int_equal(test_key(s, &f, 1, true), SEEN_DUP_RECENT);

    add_known(s, 2); /* MAYBE, not stored */
    assert_int_equal(test_key(s, &f, 2, true), SEEN_VERIFYING);
    assert_int_equal(counters(s).pending, 1);
    assert_int_equal(test_key(s, &f, 2, true), SEEN_DUP_PENDING);
    assert_int_equal(f.async_checks, 1);
    assert_int_equal(f.checks, 0); /* nothing waited for */
    assert_int_equal(counters(s).new_verified, 0);
    assert_int_equal(fake_commit(&f, SIZE_MAX), 1);
    assert_int_equal(fake_state(&f, 2), STORED);
    assert_int_equal(counters(s).pending, 0);
    assert_int_equal(test_key(s, &f, 2, true), SEEN_DUP_RECENT);

    add_known(s, 3); /* MAYBE, stored */
    f.state[3] = STORED;
    assert_int_equal(test_key(s, &f, 3, true), SEEN_VERIFYING);
    assert_int_equal(fake_commit(&f, SIZE_MAX), 1);
    assert_int_equal(test_key(s, &f, 3, true), SEEN_DUP_RECENT);

    seen_counters c = counters(s);
    assert_int_equal(c.keys, 7);
    assert_int_equal(c.new_bloom, 1);
    assert_int_equal(c.new_verified, 1);
    assert_int_equal(c.dup_verified, 1);
    assert_int_equal(c.dup_pending, 1);
    assert_int_equal(c.dup_recent, 3);
    assert_int_equal(c.checked_new, 2);
    assert_int_equal(c.errors + c.unstored + c.pending, 0);
    /* a VERIFYING result counts once its ack says which it was */
    assert_int_equal(c.keys, c.new_bloom + c.new_verified + c.dup_trusted + c.dup_recent
                                 + c.dup_verified + c.dup_pending);
    assert_int_equal(f.violations, 0);
    seen_free(s);
    fake_release(&f);
}

/* A queue that fails leaves no trace; an ack with an error is unstored,
 * not cached, and the key is decided afresh later. */
static void async_verify_failures_leave_no_trace(void **state)
{
    (void)state;
    fake f;
    fake_init(&f, 100);
    seen *s = new_seen_async(100, &f);
    add_known(s, 4);
    f.chk_mode = CHK_FAIL;
    assert_int_equal(test_key(s, &f, 4, true), -EIO);
    seen_counters c = counters(s);
    assert_int_equal(c.errors, 1);
    assert_int_equal(c.pending, 0);
    assert_int_equal(c.keys, 0);
    f.chk_mode = CHK_OK;
    assert_int_equal(test_key(s, &f, 4, true), SEEN_VERIFYING);
    assert_int_equal(fake_commit(&f, SIZE_MAX), 1);

    add_known(s, 5);
    f.refuse[5] = 1;
    assert_int_equal(test_key(s, &f, 5, true), SEEN_VERIFYING);
    assert_int_equal(fake_commit(&f, SIZE_MAX), 1);
    c = counters(s);
    assert_int_equal(c.unstored, 1);
    assert_int_equal(c.pending, 0);
    assert_int_equal(fake_state(&f, 5), UNKNOWN);
    assert_int_equal(test_key(s, &f, 5, true), SEEN_VERIFYING); /* not cached */
    assert_int_equal(fake_commit(&f, SIZE_MAX), 1);
    c = counters(s);
    assert_int_equal(c.new_verified, 2);
    assert_int_equal(fake_state(&f, 5), STORED);
    seen_free(s);
    fake_release(&f);
}

/* Without a recent cache, every MAYBE goes to the verifier. */
static void always_without_recent_cache(void **state)
{
    (void)state;
    fake f;
    fake_init(&f, 100);
    seen *s = new_seen(SEEN_VERIFY_ALWAYS, 0, &f);
    assert_int_equal(test_key(s, &f, 1, true), SEEN_NEW_BLOOM);
    fake_commit(&f, SIZE_MAX);
    for (int i = 0; i < 3; i++)
        assert_int_equal(test_key(s, &f, 1, true), SEEN_DUP_VERIFIED);
    assert_int_equal(f.checks, 3);
    seen_counters c = counters(s);
    assert_int_equal(c.dup_verified, 3);
    assert_int_equal(c.dup_recent, 0);
    assert_sums(&c);
    seen_free(s);
    fake_release(&f);
}

/* in-scope: a MAYBE is verified only when the caller says the crawl would
 * fetch the key; checked_new counts only those. */
static void in_scope_decides_per_key(void **state)
{
    (void)state;
    fake f;
    fake_init(&f, 100);
    seen *s = new_seen(SEEN_VERIFY_IN_SCOPE, 100, &f);

    assert_int_equal(test_key(s, &f, 1, false), SEEN_NEW_BLOOM);
    assert_int_equal(counters(s).checked_new, 0);
    assert_int_equal(test_key(s, &f, 2, true), SEEN_NEW_BLOOM);
    assert_int_equal(counters(s).checked_new, 1);
    fake_commit(&f, SIZE_MAX);
    assert_int_equal(test_key(s, &f, 1, false), SEEN_DUP_TRUSTED);
    assert_int_equal(test_key(s, &f, 1, true), SEEN_DUP_RECENT);
    add_known(s, 3);
    assert_int_equal(test_key(s, &f, 3, false), SEEN_DUP_TRUSTED);
    assert_int_equal(f.checks, 0);
    assert_int_equal(test_key(s, &f, 3, true), SEEN_NEW_VERIFIED);
    assert_int_equal(f.checks, 1);
    add_known(s, 4);
    f.state[4] = STORED;
    assert_int_equal(test_key(s, &f, 4, true), SEEN_DUP_VERIFIED);

    seen_counters c = counters(s);
    assert_int_equal(c.keys, 7);
    assert_int_equal(c.new_bloom, 2);
    assert_int_equal(c.dup_trusted, 2);
    assert_int_equal(c.dup_recent, 1);
    assert_int_equal(c.new_verified, 1);
    assert_int_equal(c.dup_verified, 1);
    assert_int_equal(c.checked_new, 2);
    assert_sums(&c);
    seen_free(s);
    fake_release(&f);
}

/* A verifier that acknowledges inside record_new (a synchronous store). */
static void ack_inside_record_new(void **state)
{
    (void)state;
    fake f;
    fake_init(&f, 100);
    f.rec_mode = REC_INLINE;
    seen *s = new_seen(SEEN_VERIFY_ALWAYS, 100, &f);
    assert_int_equal(test_key(s, &f, 5, true), SEEN_NEW_BLOOM);
    assert_true(in_bloom(s, 5));
    assert_int_equal(counters(s).pending, 0);
    assert_int_equal(test_key(s, &f, 5, true), SEEN_DUP_RECENT);
    f.refuse[6] = 1;
    assert_int_equal(test_key(s, &f, 6, true), SEEN_NEW_BLOOM);
    assert_false(in_bloom(s, 6));
    assert_int_equal(counters(s).unstored, 1);
    assert_int_equal(test_key(s, &f, 6, true), SEEN_NEW_BLOOM); /* decided afresh */
    assert_true(in_bloom(s, 6));
    assert_int_equal(f.violations, 0);
    seen_free(s);
    fake_release(&f);
}

/* ---- failure paths ---- */

/* record_new fails: an error, no result, nothing set; the key is new
 * (and recorded) on the next test. */
static void record_failure_leaves_no_trace(void **state)
{
    (void)state;
    for (int verify = SEEN_VERIFY_NEVER; verify <= SEEN_VERIFY_IN_SCOPE; verify++) {
        fake f;
        fake_init(&f, 100);
        seen *s = new_seen(verify, 100, &f);
        f.rec_mode = REC_FAIL;
        assert_int_equal(test_key(s, &f, 7, true), -EIO);
        assert_int_equal(test_key(s, &f, 7, true), -EIO); /* not "pending" either */
        seen_counters c = counters(s);
        assert_int_equal(c.errors, 2);
        assert_int_equal(c.keys, 0);
        assert_int_equal(c.new_bloom, 0);
        assert_int_equal(c.checked_new, 0);
        assert_int_equal(c.pending, 0);
        assert_false(in_bloom(s, 7));
        f.rec_mode = REC_QUEUE;
        assert_int_equal(test_key(s, &f, 7, true), SEEN_NEW_BLOOM);
        assert_int_equal(f.records, 3);
        fake_commit(&f, SIZE_MAX);
        assert_true(in_bloom(s, 7));
        assert_int_equal(counters(s).unstored, 0);
        seen_free(s);
        fake_release(&f);
    }
}

/* The store refuses the row in the end (ack < 0): not seen afterwards (no
 * Bloom bits, no recent entry, not pending), counted unstored, and new on
 * the next test, not a "false positive caught". */
static void ack_error_is_unstored(void **state)
{
    (void)state;
    fake f;
    fake_init(&f, 100);
    seen *s = new_seen(SEEN_VERIFY_ALWAYS, 100, &f);
    f.refuse[8] = 2;
    assert_int_equal(test_key(s, &f, 8, true), SEEN_NEW_BLOOM);
    assert_int_equal(test_key(s, &f, 8, true), SEEN_DUP_PENDING); /* held: still seen */
    assert_int_equal(fake_commit(&f, SIZE_MAX), 1);
    assert_false(in_bloom(s, 8));
    seen_counters c = counters(s);
    assert_int_equal(c.unstored, 1);
    assert_int_equal(c.pending, 0);
    assert_int_equal(test_key(s, &f, 8, true), SEEN_NEW_BLOOM); /* not DUP_RECENT */
    assert_int_equal(f.checks, 0);
    fake_commit(&f, SIZE_MAX); /* refused again */
    assert_int_equal(counters(s).unstored, 2);
    assert_int_equal(test_key(s, &f, 8, true), SEEN_NEW_BLOOM);
    fake_commit(&f, SIZE_MAX); /* stored at last */
    assert_true(in_bloom(s, 8));
    assert_int_equal(test_key(s, &f, 8, true), SEEN_DUP_RECENT);
    c = counters(s);
    assert_int_equal(c.new_bloom, 3);
    assert_int_equal(c.new_verified, 0);
    assert_int_equal(c.checked_new, 3);
    assert_int_equal(c.unstored, 2);
    assert_int_equal(c.dup_pending, 1);
    assert_int_equal(c.dup_recent, 1);
    assert_sums(&c);
    assert_int_equal(f.violations, 0);
    seen_free(s);
    fake_release(&f);
}

/* check_insert fails: an error, and the key is not put in the recent cache,
 * so the next test asks the verifier again. */
static void check_failure_not_cached(void **state)
{
    (void)state;
    fake f;
    fake_init(&f, 100);
    seen *s = new_seen(SEEN_VERIFY_ALWAYS, 100, &f);
    add_known(s, 9);
    f.state[9] = STORED;
    f.chk_mode = CHK_FAIL;
    assert_int_equal(test_key(s, &f, 9, true), -EIO);
    assert_int_equal(test_key(s, &f, 9, true), -EIO);
    assert_int_equal(f.checks, 2);
    seen_counters c = counters(s);
    assert_int_equal(c.errors, 2);
    assert_int_equal(c.keys, 0);
    f.chk_mode = CHK_OK;
    assert_int_equal(test_key(s, &f, 9, true), SEEN_DUP_VERIFIED);
    assert_int_equal(f.checks, 3);
    assert_int_equal(test_key(s, &f, 9, true), SEEN_DUP_RECENT);
    assert_int_equal(f.checks, 3);
    /* a caught false positive whose check failed is not counted as one */
    add_known(s, 10);
    f.chk_mode = CHK_FAIL;
    assert_int_equal(test_key(s, &f, 10, true), -EIO);
    c = counters(s);
    assert_int_equal(c.new_verified, 0);
    assert_int_equal(c.checked_new, 0);
    f.chk_mode = CHK_OK;
    assert_int_equal(test_key(s, &f, 10, true), SEEN_NEW_VERIFIED);
    c = counters(s);
    assert_int_equal(c.new_verified, 1);
    assert_int_equal(c.checked_new, 1);
    assert_int_equal(c.errors, 3);
    assert_sums(&c);
    seen_free(s);
    fake_release(&f);
}

static void new_out_of_memory(void **state)
{
    (void)state;
    fake f;
    fake_init(&f, 100);
    seen_opts o = { .verify = SEEN_VERIFY_ALWAYS, .recent_entries = 1000 };
    seen_verifier v = fake_iface(&f);
    seen *s = NULL;
    long n;
    for (n = 1; n < 10000 && s == NULL; n++) {
        bloom *bf = tight_bloom(1000, 0.01);
        cr_alloc_fail_after(n);
        s = seen_new(bf, &o, &v);
        cr_alloc_fail_after(0);
        if (s == NULL)
            bloom_free(bf); /* the caller keeps bf when seen_new fails */
    }
    assert_non_null(s);
    assert_true(n > 3); /* several allocations failed, each undone */
    assert_int_equal(test_key(s, &f, 1, true), SEEN_NEW_BLOOM);
    fake_commit(&f, SIZE_MAX);
    assert_int_equal(test_key(s, &f, 1, true), SEEN_DUP_RECENT);
    seen_free(s);
    fake_release(&f);
}

/* The pending set cannot grow: -ENOMEM, counted an error, nothing recorded
 * or set; once memory is back the key is new. The keys are chosen to fall
 * in one shard of the pending set, which must grow past 48 entries. */
static void pending_growth_out_of_memory(void **state)
{
    (void)state;
    enum { FILL = 48 };
    unsigned keys[FILL + 1], n = 0;
    char name[32];
    for (unsigned k = 0; n < FILL + 1; k++) {
        key_name(name, sizeof name, k);
        if (hash_fingerprint(name, strlen(name)).lo >> 58 == 0)
            keys[n++] = k;
    }
    fake f;
    fake_init(&f, keys[FILL] + 1);
    seen *s = new_seen(SEEN_VERIFY_ALWAYS, 100, &f);
    for (unsigned i = 0; i < FILL; i++)
        assert_int_equal(test_key(s, &f, keys[i], true), SEEN_NEW_BLOOM);
    assert_int_equal(counters(s).pending, FILL);
    cr_alloc_fail_after(1);
    int rc = test_key(s, &f, keys[FILL], true);
    long failed = cr_alloc_failures();
    cr_alloc_fail_after(0);
    assert_int_equal(rc, -ENOMEM);
    assert_int_equal(failed, 1);
    seen_counters c = counters(s);
    assert_int_equal(c.errors, 1);
    assert_int_equal(c.keys, FILL);
    assert_int_equal(c.pending, FILL);
    assert_int_equal(f.records, FILL);
    assert_false(in_bloom(s, keys[FILL]));
    /* pending keys are still answered while memory is out */
    cr_alloc_fail_after(1);
    rc = test_key(s, &f, keys[0], true);
    cr_alloc_fail_after(0);
    assert_int_equal(rc, SEEN_DUP_PENDING);
    assert_int_equal(test_key(s, &f, keys[FILL], true), SEEN_NEW_BLOOM);
    assert_int_equal(fake_commit(&f, SIZE_MAX), FILL + 1);
    for (unsigned i = 0; i <= FILL; i++)
        assert_true(in_bloom(s, keys[i]));
    assert_int_equal(counters(s).pending, 0);
    assert_int_equal(f.violations, 0);
    seen_free(s);
    fake_release(&f);
}

/* ---- the invariant ---- */

/* Every key the Bloom filter answers MAYBE for has been acknowledged as
 * stored (or added as known), and every stored key is MAYBE. */
static void check_invariant(seen *s, fake *f, const unsigned char *known, unsigned n,
                            unsigned step)
{
    for (unsigned k = 0; k < n; k++) {
        int st = fake_state(f, k);
        int maybe = in_bloom(s, k);
        if (maybe && st != STORED && !known[k])
            fail_msg("seed %llu step %u: key %u is in the Bloom filter but %s",
                     (unsigned long long)seed, step, k, st == QUEUED ? "only queued" : "not stored");
        if (!maybe && st == STORED)
            fail_msg("seed %llu step %u: key %u is stored but the Bloom filter says NO",
                     (unsigned long long)seed, step, k);
    }
}

/* Random tests, commits of random lengths, a random third of the store
 * attempts refused: after every step, the Bloom filter holds exactly the
 * stored keys (a filter at 1e-9 has no false positives among 4,000 keys
 * but by a freak; the seed replays one), no key is recorded twice, and
 * the counters add up. */
static void bloom_only_after_commit(void **state)
{
    (void)state;
    enum { N = 4000, STEPS = 30000 };
    uint64_t rs = seed ^ 0x7365656eull;
    fake f;
    fake_init(&f, N);
    unsigned char *known = calloc(N, 1);
    assert_non_null(known);
    for (unsigned k = 0; k < N; k++)
        f.refuse[k] = mix(&rs) % 3 == 0 ? (unsigned char)(1 + mix(&rs) % 2) : 0;
    seen *s = new_seen(SEEN_VERIFY_ALWAYS, 1000, &f);
    long news = 0, refused = 0;
    for (unsigned k = 0; k < N; k++)
        refused += f.refuse[k];
    for (unsigned step = 0; step < STEPS; step++) {
        unsigned k = (unsigned)(mix(&rs) % N);
        int before = fake_state(&f, k);
        int r = test_key(s, &f, k, true);
        assert_true(r >= 0);
        if (seen_is_new(r)) {
            news++;
            if (before != UNKNOWN)
                fail_msg("seed %llu step %u: key %u %s but reported new (%d)",
                         (unsigned long long)seed, step, k,
                         before == QUEUED ? "queued" : "stored", r);
        } else if (before == UNKNOWN) {
            fail_msg("seed %llu step %u: key %u unknown to the store but a duplicate (%d)",
                     (unsigned long long)seed, step, k, r);
        }
        if (r == SEEN_DUP_PENDING)
            assert_int_equal(before, QUEUED);
        if (mix(&rs) % 8 == 0)
            fake_commit(&f, (size_t)(mix(&rs) % 64));
        if (step % 3001 == 0)
            check_invariant(s, &f, known, N, step);
    }
    fake_commit(&f, SIZE_MAX);
    check_invariant(s, &f, known, N, STEPS);
    seen_counters c = counters(s);
    assert_int_equal(c.keys, STEPS);
    assert_sums(&c);
    assert_int_equal(c.pending, 0);
    assert_int_equal((long)c.unstored, f.acks_err);
    assert_int_equal((long)(c.new_bloom + c.new_verified), news);
    assert_int_equal(f.records, (long)c.new_bloom);
    assert_int_equal(f.violations, 0);
    assert_true(f.acks_err > 0 && f.acks_err <= refused);
    assert_int_equal(c.new_verified, 0); /* no key refused became a "false positive" */
    assert_int_equal(c.errors, 0);
    seen_free(s);
    free(known);
    fake_release(&f);
}

/* A filter with a real false-positive rate (5 %): half of 2,000 keys are
 * refused by the store, then 4,000 keys (those and 2,000 fresh) are tested
 * again. new_verified counts exactly the keys for which the filter said
 * MAYBE although nothing was stored, measured by asking the filter before
 * each test; a refused key is not among them unless the filter errs on it,
 * so the observed rate stays near the filter's and far from the 100 % a
 * filter set before the commit would show. */
static void refused_keys_do_not_move_the_fpr(void **state)
{
    (void)state;
    enum { N = 2000 };
    fake f;
    fake_init(&f, 2 * N);
    seen_opts o = { .verify = SEEN_VERIFY_ALWAYS, .recent_entries = 4 * N };
    seen_verifier v = fake_iface(&f);
    seen *s = seen_new(tight_bloom(N, 0.05), &o, &v);
    assert_non_null(s);
    for (unsigned k = 0; k < N; k += 2)
        f.refuse[k] = 1;
    for (unsigned k = 0; k < N; k++)
        assert_true(seen_is_new(test_key(s, &f, k, true)));
    fake_commit(&f, SIZE_MAX);
    long want_fp = 0, refused_fp = 0, probes = 0;
    for (unsigned k = 0; k < 2 * N; k++) {
        int stored = fake_state(&f, k) == STORED;
        int maybe = in_bloom(s, k);
        int r = test_key(s, &f, k, true);
        if (stored) {
            assert_true(r == SEEN_DUP_RECENT || r == SEEN_DUP_VERIFIED);
            continue;
        }
        probes++;
        if (maybe) {
            want_fp++;
            refused_fp += k < N;
            assert_int_equal(r, SEEN_NEW_VERIFIED);
        } else {
            assert_int_equal(r, SEEN_NEW_BLOOM);
        }
        fake_commit(&f, SIZE_MAX);
    }
    seen_counters c = counters(s);
    assert_int_equal(c.unstored, N / 2);
    assert_int_equal((long)c.new_verified, want_fp);
    assert_int_equal((long)c.checked_new, N + probes);
    assert_true(refused_fp < N / 2 / 4); /* a quarter would be 5 times the bound */
    printf("test_seen: %ld false positives among %ld probes (%ld of %d refused keys); "
           "observed FPR %.4f\n",
           want_fp, probes, refused_fp, N / 2, seen_observed_fpr(&c));
    assert_true(seen_observed_fpr(&c) < 0.05);
    seen_free(s);
    fake_release(&f);
}

/* ---- threads ---- */

/* Four testers over one key pool while a writer thread commits (refusing a
 * seeded part of the first attempts) and a checker thread reads the Bloom
 * filter: a MAYBE it sees is always a stored key; no key is recorded while
 * queued or stored; the counters add up. */
typedef struct shared {
    seen *s;
    fake *f;
    unsigned n;
    uint64_t seed;
    atomic_int stop;
    atomic_long bad;
    long news[4];
} shared;

typedef struct tester {
    shared *sh;
    unsigned id;
} tester;

static void *tester_main(void *arg)
{
    tester *t = arg;
    shared *sh = t->sh;
    uint64_t rs = sh->seed + t->id * 0x1000193ull;
    for (unsigned i = 0; i < 20000; i++) {
        unsigned k = (unsigned)(mix(&rs) % sh->n);
        int r = test_key(sh->s, sh->f, k, mix(&rs) % 2 == 0);
        if (r < 0)
            atomic_fetch_add(&sh->bad, 1);
        else if (seen_is_new(r))
            sh->news[t->id]++;
    }
    return NULL;
}

static void *writer_main(void *arg)
{
    shared *sh = arg;
    struct timespec us = { 0, 50000 };
    while (!atomic_load(&sh->stop)) {
        if (fake_commit(sh->f, 37) == 0)
            nanosleep(&us, NULL);
    }
    fake_commit(sh->f, SIZE_MAX);
    return NULL;
}

static void *checker_main(void *arg)
{
    shared *sh = arg;
    uint64_t rs = sh->seed ^ 0xc0ffeeull;
    while (!atomic_load(&sh->stop)) {
        unsigned k = (unsigned)(mix(&rs) % sh->n);
        if (in_bloom(sh->s, k) && fake_state(sh->f, k) != STORED)
            atomic_fetch_add(&sh->bad, 1000000);
    }
    return NULL;
}

static void threads_keep_the_invariant(void **state)
{
    (void)state;
    enum { N = 6000 };
    fake f;
    fake_init(&f, N);
    shared sh = { .f = &f, .n = N, .seed = seed };
    uint64_t rs = seed ^ 0x74687264ull;
    for (unsigned k = 0; k < N; k++)
        f.refuse[k] = mix(&rs) % 5 == 0;
    sh.s = new_seen(SEEN_VERIFY_IN_SCOPE, 2000, &f);
    pthread_t tt[4], wt, ct;
    tester t[4];
    assert_int_equal(pthread_create(&wt, NULL, writer_main, &sh), 0);
    assert_int_equal(pthread_create(&ct, NULL, checker_main, &sh), 0);
    for (unsigned i = 0; i < 4; i++) {
        t[i] = (tester){ &sh, i };
        assert_int_equal(pthread_create(&tt[i], NULL, tester_main, &t[i]), 0);
    }
    for (unsigned i = 0; i < 4; i++)
        pthread_join(tt[i], NULL);
    atomic_store(&sh.stop, 1);
    pthread_join(wt, NULL);
    pthread_join(ct, NULL);
    if (atomic_load(&sh.bad) != 0)
        fail_msg("seed %llu: %ld errors, %ld Bloom MAYBEs for unstored keys",
                 (unsigned long long)seed, atomic_load(&sh.bad) % 1000000,
                 atomic_load(&sh.bad) / 1000000);
    unsigned char *known = calloc(N, 1);
    assert_non_null(known);
    check_invariant(sh.s, &f, known, N, 0);
    free(known);
    seen_counters c = counters(sh.s);
    long news = sh.news[0] + sh.news[1] + sh.news[2] + sh.news[3];
    assert_int_equal(c.keys, 4 * 20000);
    assert_sums(&c);
    assert_int_equal(c.pending, 0);
    assert_int_equal(c.errors, 0);
    assert_int_equal((long)(c.new_bloom + c.new_verified), news);
    assert_int_equal((long)c.unstored, f.acks_err);
    assert_int_equal(f.violations, 0);
    assert_int_equal(c.new_verified, 0);
    /* every stored key was reported new once, plus once per refusal */
    long stored = 0;
    for (unsigned k = 0; k < N; k++)
        stored += f.state[k] == STORED;
    assert_int_equal(news, stored + f.acks_err);
    seen_free(sh.s);
    fake_release(&f);
}

/* A filter without retention holds every committed key, so its NO tells
 * the store the key has no row (absent: the writer skips its look-up); a
 * rotating ring forgets keys whose rows may still be stored, so never. */
static void absent_only_without_retention(void **state)
{
    (void)state;
    fake f;
    fake_init(&f, 8);
    seen *s = new_seen(SEEN_VERIFY_ALWAYS, 16, &f);
    assert_int_equal(test_key(s, &f, 1, true), SEEN_NEW_BLOOM);
    fake_commit(&f, SIZE_MAX);
    assert_int_equal(f.absent_yes, 1);
    assert_int_equal(f.absent_no, 0);
    seen_free(s);
    fake_release(&f);

    fake_init(&f, 8);
    bloom_params bp;
    bloom_params_init(&bp);
    bp.expected_items = 1000;
    gens_opts go = { .retention_s = 4000, .generations = 4 };
    gens *g = NULL;
    assert_int_equal(gens_new(&bp, &go, 1000, &g), 0);
    seen_opts o = { .verify = SEEN_VERIFY_ALWAYS, .recent_entries = 16 };
    seen_verifier v = fake_iface(&f);
    s = seen_new_gens(g, &o, &v);
    assert_non_null(s);
    assert_int_equal(test_key(s, &f, 2, true), SEEN_NEW_BLOOM);
    fake_commit(&f, SIZE_MAX);
    assert_int_equal(f.absent_yes, 0);
    assert_int_equal(f.absent_no, 1);
    seen_free(s);
    fake_release(&f);
}

int main(void)
{
    const char *env = getenv("CRAWLD_TEST_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("test_seen: seed %llu (CRAWLD_TEST_SEED=%llu replays it)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(absent_only_without_retention),
        cmocka_unit_test(async_verify_needs_the_interface),
        cmocka_unit_test(async_verify_answers_in_the_ack),
        cmocka_unit_test(async_verify_failures_leave_no_trace),
        cmocka_unit_test(verifier_required_unless_never),
        cmocka_unit_test(never_without_verifier),
        cmocka_unit_test(never_records_but_trusts),
        cmocka_unit_test(always_walks_every_layer),
        cmocka_unit_test(always_without_recent_cache),
        cmocka_unit_test(in_scope_decides_per_key),
        cmocka_unit_test(ack_inside_record_new),
        cmocka_unit_test(record_failure_leaves_no_trace),
        cmocka_unit_test(ack_error_is_unstored),
        cmocka_unit_test(check_failure_not_cached),
        cmocka_unit_test(new_out_of_memory),
        cmocka_unit_test(pending_growth_out_of_memory),
        cmocka_unit_test(bloom_only_after_commit),
        cmocka_unit_test(refused_keys_do_not_move_the_fpr),
        cmocka_unit_test(threads_keep_the_invariant),
    };
    return cmocka_run_group_tests_name("seen", tests, NULL, NULL);
}
