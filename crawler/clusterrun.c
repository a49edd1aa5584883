/* crawler/clusterrun: one node of a shared crawl (see clusterrun.h). */
#include "clusterrun.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/ckptdir.h"
#include "cluster/member.h"
#include "cluster/slotmap.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "storage/db.h"
#include "storage/dispatchlog.h"
#include "storage/outbox.h"

struct clusterrun {
    crawl *c;
    const crawl_config *cfg;
    FILE *log;
    outbox *ob;
    node *n;
    char node_id[512];
    char store[4096];      /* state_dir for the others (member_opts.store_dir) */
    atomic_bool ready;
    atomic_bool halted;    /* the fault hook closed the gate */
    atomic_bool wired;     /* crawl_set_cluster done: apply may admit */
    int64_t said_ms;       /* the last hand-over failure logged (node thread) */
};

/* A hand-over or load failure, said at most every 5 s (it is retried
 * every tick). */
static void say_failure(clusterrun *r, uint32_t slot, const char *what, const char *why)
{
    int64_t now = cr_mono_ms();
    if (r->said_ms != 0 && now - r->said_ms < 5000)
        return;
    r->said_ms = now;
    fprintf(r->log, "crawld: cluster: slot %u: %s (%s): the slot is not fetched meanwhile;"
                    " trying again every tick\n", slot, what, why);
}

/* ---- slot moves (the member's hand-over hooks, on the node thread) ---- */

typedef struct slot_pick {
    clusterrun *r;
    uint32_t slot;
} slot_pick;

static int pick_host(void *arg, const char *host, size_t len)
{
    slot_pick *p = arg;
    return node_slot_of(p->r->n, host, len) == p->slot;
}

/* Which slots this store holds rows of: those of the hosts the frontier
 * read from it at the start (crawl_slot_busy visits every known host with
 * the pick, which here only notes each host's slot and picks none). */
typedef struct slot_rows {
    uint32_t slots;
    bool *out;
} slot_rows;

static int note_slot(void *arg, const char *host, size_t len)
{
    slot_rows *sr = arg;
    sr->out[slotmap_slot_of(host, len, sr->slots)] = true;
    return 0;
}

/* member's suspect hook, at the start: rows of a slot here are stale if
 * another node loaded it since (a crash between a release and its drop,
 * or a slot the others took by rescue while this node was down). */
static void suspect(void *arg, uint32_t slots, bool *out)
{
    clusterrun *r = arg;
    slot_rows sr = { slots, out };
    crawl_slot_busy(r->c, note_slot, &sr);
}

/* Where a hand-over writes its checkpoint: shared_dir; without it the
 * state_dir, from which the member sends it through Redis; NULL: none. */
static const char *ckpt_dir(const clusterrun *r)
{
    if (r->cfg->cluster.shared_dir[0] != '\0')
        return r->cfg->cluster.shared_dir;
    return r->cfg->cluster.checkpoint_max_mib > 0 ? r->cfg->storage.state_dir : NULL;
}

/* The member refused to send a checkpoint through Redis (too big). */
static void ckpt_refused(void *arg, uint32_t slot, const char *why)
{
    clusterrun *r = arg;
    say_failure(r, slot, "it moves to another node, but this node keeps it", why);
}

/* The old owner: drained (no fetch of the slot in flight, the outbox
 * forwarded), then the slot's rows into a checkpoint in shared_dir (or
 * one the member sends through Redis). */
static int handover(void *arg, uint32_t slot, char *ckpt, size_t cap)
{
    clusterrun *r = arg;
    slot_pick p = { r, slot };
    char err[512];
    int64_t rows = 0;
    ckpt[0] = '\0';
    const char *dir = ckpt_dir(r);
    if (dir == NULL)
        return 1; /* no checkpoints: released as it is */
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        snprintf(err, sizeof err, "the checkpoint folder %.400s cannot be made: %s", dir,
                 strerror(errno));
        say_failure(r, slot, "it moves to another node, but its checkpoint failed, so this node"
                             " keeps it", err);
        return -1;
    }
    if (!atomic_load(&r->wired) || crawl_slot_busy(r->c, pick_host, &p) ||
        outbox_count(r->ob) > 0)
        return 0;
    int rc = ckptdir_name(ckpt, cap, dir, r->cfg->cluster.crawl_id, slot, r->node_id,
                          cr_wall_ms());
    if (rc == 0)
        rc = crawl_slot_export(r->c, ckpt, pick_host, &p, &rows, err, sizeof err);
    if (rc < 0) {
        if (rc == -ENAMETOOLONG)
            snprintf(err, sizeof err, "the checkpoint's path is too long");
        say_failure(r, slot, "it moves to another node, but its checkpoint failed, so this node"
                             " keeps it", err);
        ckpt[0] = '\0';
        return -1;
    }
    fprintf(r->log, "crawld: cluster: slot %u handed over: %lld rows in %s\n", slot,
            (long long)rows, ckpt);
    return 1;
}

#ifdef CRAWLD_FAULT_HOOKS
static int fault_armed(void *arg);
static void faulted(void *arg);
#endif

/* The old owner, once the lease is gone with the checkpoint recorded. */
static int released(void *arg, uint32_t slot)
{
    clusterrun *r = arg;
    slot_pick p = { r, slot };
    char err[512];
    int64_t rows = 0;
    if (ckpt_dir(r) == NULL)
        return 0; /* without a checkpoint the rows are the only copy */
#ifdef CRAWLD_FAULT_HOOKS
    /* CRAWLD_CLUSTER_FAULT=after-release: dies between the release and the drop */
    const char *e = getenv("CRAWLD_CLUSTER_FAULT");
    if (e != NULL && strcmp(e, "after-release") == 0 && fault_armed(r))
        faulted(r);
#endif
    int rc = crawl_slot_drop(r->c, pick_host, &p, &rows, err, sizeof err);
    if (rc < 0) {
        fprintf(r->log, "crawld: cluster: slot %u was handed over but dropping its rows here"
                        " failed (%s): they are dropped once its new owner has loaded it\n",
                slot, err);
        return rc;
    }
    return 0;
}

/* The old owner, whose lease ran out during the hand-over and whose slot
 * another node took meanwhile: that node rescues the rows from this store
 * (the orphaned hook drops them here then); the export is nobody's. */
static void stranded(void *arg, uint32_t slot, const char *ckpt)
{
    clusterrun *r = arg;
    if (ckpt[0] != '\0')
        unlink(ckpt);
    fprintf(r->log, "crawld: cluster: slot %u: its lease ran out during the hand-over and another"
                    " node took it: the checkpoint is removed, the rows here are dropped once"
                    " that node has rescued them\n", slot);
}

/* A slot this node lost (fenced: paused past the grace), rescued since by
 * another node from this store: its rows here are stale. -EBUSY while a
 * fetch of it is still in flight (its outcome would land after). */
static int orphaned(void *arg, uint32_t slot)
{
    clusterrun *r = arg;
    slot_pick p = { r, slot };
    char err[512];
    int64_t rows = 0;
    /* crawl_slot_drop forgets host after host and stops at a busy one
     * (the hosts before it forgotten, the rows kept): not until none is */
    if (crawl_slot_busy(r->c, pick_host, &p))
        return -EBUSY;
    int rc = crawl_slot_drop(r->c, pick_host, &p, &rows, err, sizeof err);
    if (rc < 0 && rc != -EBUSY)
        say_failure(r, slot, "dropping the rows of a slot lost to another node failed", err);
    if (rc == 0) {
        fprintf(r->log, "crawld: cluster: slot %u was lost to another node, which loaded it:"
                        " its %lld rows here are dropped\n", slot, (long long)rows);
    }
    return rc;
}

/* The new owner, before it fetches or reads the slot. */
static int load(void *arg, uint32_t slot, const char *ckpt)
{
    clusterrun *r = arg;
    slot_pick p = { r, slot };
    char err[512];
    int64_t rows = 0;
    if (!atomic_load(&r->wired))
        return -EAGAIN; /* the crawl is not wired yet: next tick */
    int rc = crawl_slot_import(r->c, ckpt, pick_host, &p, &rows, err, sizeof err);
    if (rc < 0) {
        say_failure(r, slot, "loading its checkpoint failed", err);
        return rc;
    }
    fprintf(r->log, "crawld: cluster: slot %u taken over: %lld new rows from %s\n", slot,
            (long long)rows, ckpt);
    return 0;
}

/* The fetches a node started, from its dispatch log (read, not reset). */
typedef struct started {
    int64_t *ids;
    int *attempts;
    size_t n, cap;
    bool short_of_memory; /* the list stopped early: the count is not known */
} started;

static int note_started(void *ud, const dispatchlog_entry *e)
{
    started *st = ud;
    if (e->id <= 0)
        return 0; /* a robots.txt fetch */
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 256;
        int64_t *ids = cr_realloc(st->ids, cap * sizeof *ids);
        if (ids != NULL)
            st->ids = ids;
        int *at = ids != NULL ? cr_realloc(st->attempts, cap * sizeof *at) : NULL;
        if (at == NULL) {
            st->short_of_memory = true;
            return 1;
        }
        st->attempts = at;
        st->cap = cap;
    }
    st->ids[st->n] = e->id;
    st->attempts[st->n++] = e->attempt;
    return 0;
}

/* After a rescue from store_dir's node: how many rows of the checkpoint
 * ckpt it requested without their outcome committed (-1 when its dispatch
 * log cannot be read), and its requests hold their hosts here (*held:
 * 0, or -ENOMEM when they could not). */
static int64_t lost_in(clusterrun *r, const char *store_dir, const char *ckpt, int *held)
{
    char err[512];
    int clean = 0;
    int64_t lost = -1;
    *held = 0;
    dispatchlog *l = dispatchlog_open(store_dir, &clean, err, sizeof err);
    if (l == NULL)
        return -1;
    started st = { 0 };
    dispatchlog_scan(l, note_started, &st);
    *held = crawl_hold_logged(r->c, l, NULL);
    dispatchlog_close(l, 0); /* only unmapped: what it says stays */
    if (st.short_of_memory ||
        db_slot_lost(ckpt, st.ids, st.attempts, st.n, &lost, err, sizeof err) < 0)
        lost = -1;
    cr_free(st.ids);
    cr_free(st.attempts);
    return lost;
}

/* The new owner of a slot whose last holder, from, handed nothing over
 * (gone for good): its committed rows of the slot, through a checkpoint
 * written here from that node's store, then its unsent outbox. A page it
 * fetched without committing the outcome is queued there: fetched again. */
static int rescue(void *arg, uint32_t slot, const char *from, const char *store_dir)
{
    clusterrun *r = arg;
    slot_pick p = { r, slot };
    char err[512], ckpt[4096];
    int64_t rows = 0, added = 0, links = 0;
    if (!atomic_load(&r->wired))
        return -EAGAIN; /* the crawl is not wired yet: next tick */
    int n = snprintf(ckpt, sizeof ckpt, "%s/rescue-slot%u.db", r->cfg->storage.state_dir, slot);
    int rc = n > 0 && (size_t)n < sizeof ckpt ? 0 : -ENAMETOOLONG;
    if (rc == 0)
        rc = db_slot_export_store(store_dir, ckpt, r->cfg->cluster.crawl_id, pick_host, &p, &rows,
                                  err, sizeof err);
    int held = 0;
    int64_t lost = rc == 0 ? lost_in(r, store_dir, ckpt, &held) : -1;
    if (rc == 0) {
        rc = crawl_slot_import(r->c, ckpt, pick_host, &p, &added, err, sizeof err);
        unlink(ckpt);
    }
    if (rc == 0) {
        rc = outbox_take_from(r->ob, store_dir, &links);
        if (rc < 0)
            snprintf(err, sizeof err, "moving %.300s/outbox.db here: %s", store_dir,
                     strerror(-rc));
    }
    if (rc < 0) {
        if (rc == -ENAMETOOLONG)
            snprintf(err, sizeof err, "the path is too long");
        say_failure(r, slot, "rescuing it from the store of a node gone for good failed", err);
        return rc;
    }
    fprintf(r->log, "crawld: cluster: slot %u rescued from the store of %s (%s): %lld new rows"
                    " of %lld, %lld links from its outbox\n", slot, from, store_dir,
            (long long)added, (long long)rows, (long long)links);
    if (lost >= 0) /* the wording crawlproc_refetch_reported reads */
        fprintf(r->log, "crawld: the last run of slot %u on %s: %lld URLs had been requested"
                        " without their outcome being stored (in flight, or inside the commit"
                        " window); they will be fetched again, and no others\n",
                slot, from, (long long)lost);
    else
        fprintf(r->log, "crawld: cluster: slot %u: the dispatch log of %s could not be read:"
                        " how many of its URLs are fetched again is not known\n", slot, from);
    if (held < 0)
        fprintf(r->log, "crawld: cluster: slot %u: out of memory: the hosts %s asked last are"
                        " not held back by its requests\n", slot, from);
    return 0;
}

static void load_lost(void *arg, uint32_t slot)
{
    clusterrun *r = arg;
    fprintf(r->log, "crawld: cluster: slot %u: loading it here outlasted the lease and another"
                    " node took it meanwhile; this node does not fetch it, and drops the rows it"
                    " loaded once that node holds them\n", slot);
}

static void loaded(void *arg, uint32_t slot, const char *ckpt)
{
    (void)arg;
    (void)slot;
    unlink(ckpt); /* its record is gone: nobody loads it again */
}

static int is_local(void *arg, const char *host, size_t len, uint32_t *slot)
{
    clusterrun *r = arg;
    *slot = node_slot_of(r->n, host, len);
    return node_holds(r->n, *slot);
}

static int may_fetch(void *arg, const char *host)
{
    clusterrun *r = arg;
    if (atomic_load(&r->halted))
        return 0;
    return node_may_fetch(r->n, host, strlen(host));
}

/* The reader's apply: links for this node's slots, one commit. */
static int apply(void *arg, const xchg_link *v, size_t n)
{
    clusterrun *r = arg;
    /* the node thread runs before crawl_set_cluster: until then the
     * entries stay pending (read again next round) */
    if (!atomic_load(&r->wired))
        return -EAGAIN;
    crawl_link *l = cr_calloc(n ? n : 1, sizeof *l);
    if (l == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        l[i].url = v[i].url;
        l[i].url_len = v[i].url_len;
        l[i].fetch_url = v[i].fetch_url;
        l[i].fetch_url_len = v[i].fetch_url_len;
        l[i].depth = v[i].depth;
        l[i].kind = v[i].kind;
    }
    int rc = crawl_admit_remote(r->c, l, n);
    cr_free(l);
    /* Fenced on the slot lease: a node paused in the middle of this apply
     * may find its slot moved on. Then the entries stay pending (the new
     * owner claims them, or this node reads them again if the slot stays),
     * so nothing admitted here is the only copy. */
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!node_may_fetch(r->n, v[i].host, strlen(v[i].host)))
            rc = -ESTALE;
    return rc;
}

static void status(void *arg, crawl_cluster_status *out)
{
    clusterrun *r = arg;
    node_info in;
    node_get_info(r->n, &in);
    memset(out, 0, sizeof *out);
    out->paused = in.paused;
    out->settled = in.settled;
    out->ended = in.ended;
    out->coordinator = in.member.coordinator;
    snprintf(out->why, sizeof out->why, "%s", in.why);
    out->paused_ms = in.paused_ms;
    out->pauses = in.pauses;
    out->slots = in.member.slots;
    out->held = in.member.held;
    out->wanted = in.member.wanted;
    out->epoch = in.member.epoch;
    out->leases_lost = in.member.lost;
    out->handed_over = in.member.handed_over;
    out->loads = in.member.loads;
    out->rescues = in.member.rescues;
    out->stranded = in.member.stranded;
    out->loads_lost = in.member.loads_lost;
    out->orphans_dropped = in.member.orphans_dropped;
    out->ckpt_sent = in.member.ckpt_sent;
    out->ckpt_too_big = in.member.ckpt_too_big;
    out->redis_errors = in.member.redis_errors;
    out->outbox = in.outbox;
    out->forwarded = in.forwarder.forwarded;
    out->applied = in.reader.applied;
    out->redelivered = in.reader.redelivered;
    out->claimed = in.reader.claimed;
}

static int quiet(void *arg, uint64_t *gen)
{
    clusterrun *r = arg;
    if (!atomic_load(&r->ready))
        return -1;
    return crawl_quiet(r->c, gen) ? 1 : 0;
}

static void ended(void *arg)
{
    clusterrun *r = arg;
    if (r->log)
        fprintf(r->log, "crawld: cluster: the whole crawl is quiescent (every node idle, every"
                        " stream delivered and acked)\n");
    crawl_end_cluster(r->c);
}

#ifdef CRAWLD_FAULT_HOOKS
/* The faults build's CRAWLD_CLUSTER_FAULT=after-apply|after-xadd: the node
 * stops its exchange there (see xchg_fault), and this process dies with
 * SIGKILL once no fetch is in flight and every finished page's outcome is
 * committed, so that the crash loses and repeats nothing but the stream
 * step it stopped before. */
static int fault_from_env(void)
{
    const char *e = getenv("CRAWLD_CLUSTER_FAULT");
    if (e == NULL)
        return XCHG_FAULT_NONE;
    if (strcmp(e, "after-apply") == 0)
        return XCHG_FAULT_AFTER_APPLY;
    if (strcmp(e, "after-xadd") == 0)
        return XCHG_FAULT_AFTER_XADD;
    if (strcmp(e, "after-release") == 0)
        return XCHG_FAULT_NONE; /* the released hook's */
    fprintf(stderr, "crawld: CRAWLD_CLUSTER_FAULT=%.100s: not after-apply or after-xadd,"
                    " ignored\n", e);
    return XCHG_FAULT_NONE;
}

/* Armed once this node has CRAWLD_CLUSTER_FAULT_PAGES responses (default
 * 0: at once), so that it dies in the middle of its share. */
static int fault_armed(void *arg)
{
    clusterrun *r = arg;
    const char *e = getenv("CRAWLD_CLUSTER_FAULT_PAGES");
    long long want = e != NULL ? atoll(e) : 0;
    crawl_status st;
    crawl_status_get(r->c, &st, NULL, 0);
    return (long long)st.pages >= want;
}

static void faulted(void *arg)
{
    clusterrun *r = arg;
    atomic_store(&r->halted, true); /* the gate hands out nothing more */
    crawl_pause(r->c);
    uint64_t pages;
    for (;;) {
        crawl_status st;
        crawl_status_get(r->c, &st, NULL, 0);
        pages = st.pages;
        if (st.in_flight == 0)
            break;
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep(&ts, NULL);
    }
    /* commits every outcome queued so far (an apply of nothing) */
    int rc = crawl_admit_remote(r->c, NULL, 0);
    fprintf(stderr, "crawld: CRAWLD_CLUSTER_FAULT: stopped at the fault point (outcomes %s)"
                    " after %llu responses, killing myself\n",
            rc == 0 ? "committed" : "NOT committed", (unsigned long long)pages);
    raise(SIGKILL);
}
#endif

/* The checkpoint files the slot records name. */
typedef struct names {
    char **v;
    size_t n, cap;
    bool short_of_memory;
} names;

static void note_recorded(void *arg, uint32_t slot, const char *path)
{
    (void)slot;
    names *nm = arg;
    if (nm->n == nm->cap) {
        size_t cap = nm->cap ? nm->cap * 2 : 16;
        char **v = cr_realloc(nm->v, cap * sizeof *v);
        if (v == NULL) {
            nm->short_of_memory = true;
            return;
        }
        nm->v = v;
        nm->cap = cap;
    }
    if ((nm->v[nm->n] = cr_strdup(path)) == NULL)
        nm->short_of_memory = true;
    else
        nm->n++;
}

/* At the start, before this run writes any: the checkpoint files this
 * node left that no slot record names (cluster/ckptdir), and the spool
 * and rescue files a load or a rescue removes once done. With the records
 * unreadable (Redis unreachable) the checkpoint folder is left alone. */
static void sweep_checkpoints(clusterrun *r)
{
    const crawl_config *cfg = r->cfg;
    char path[4096], err[512];
    long removed = 0;
    for (int64_t s = 0; s < cfg->cluster.slots; s++) {
        static const char *const kind[] = { "rescue", "ckpt" };
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, "%s/%s-slot%lld.db", cfg->storage.state_dir, kind[k],
                     (long long)s);
            removed += unlink(path) == 0;
        }
    }
    const char *dir = ckpt_dir(r);
    if (dir != NULL && access(dir, F_OK) == 0) {
        names rec = { 0 };
        int64_t timeout = cfg->cluster.lease_ms < 5000 ? cfg->cluster.lease_ms : 5000;
        int rc = member_recorded_ckpts(cfg->cluster.redis, cfg->cluster.crawl_id,
                                       (uint32_t)cfg->cluster.slots, (int)timeout, note_recorded,
                                       &rec, err, sizeof err);
        long n = rc < 0 || rec.short_of_memory
                     ? 0
                     : ckptdir_sweep(dir, cfg->cluster.crawl_id, r->node_id,
                                     (const char *const *)rec.v, rec.n);
        if (rc < 0 || rec.short_of_memory || n < 0)
            fprintf(r->log, "crawld: cluster: checkpoints an earlier run of this node may have"
                            " left in %s stay: %s\n", dir,
                    rc < 0 ? err : rec.short_of_memory ? "out of memory" : strerror((int)-n));
        else
            removed += n;
        for (size_t i = 0; i < rec.n; i++)
            cr_free(rec.v[i]);
        cr_free(rec.v);
    }
    if (removed > 0)
        fprintf(r->log, "crawld: cluster: removed %ld checkpoint files an earlier run of this"
                        " node left (no slot record names them)\n", removed);
}

int clusterrun_start(crawl *c, const crawl_config *cfg, FILE *log, clusterrun **out, char *err,
                     size_t errlen)
{
    *out = NULL;
    clusterrun *r = cr_calloc(1, sizeof *r);
    if (r == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    r->c = c;
    r->cfg = cfg;
    r->log = log;
    if (cfg->cluster.node_id[0])
        snprintf(r->node_id, sizeof r->node_id, "%s", cfg->cluster.node_id);
    else
        member_default_node_id(cfg->storage.state_dir, r->node_id, sizeof r->node_id);
    int rc = outbox_open(cfg->storage.state_dir, &r->ob, err, errlen);
    if (rc < 0) {
        cr_free(r);
        return rc;
    }
    /* reachable by the others only with shared storage (cluster.shared_dir) */
    if (cfg->cluster.shared_dir[0] != '\0' && realpath(cfg->storage.state_dir, r->store) == NULL)
        r->store[0] = '\0';
    node_opts o = {
        .member = { .redis = cfg->cluster.redis, .crawl_id = cfg->cluster.crawl_id,
                    .node_id = r->node_id, .slots = (uint32_t)cfg->cluster.slots,
                    .lease_ms = cfg->cluster.lease_ms, .grace_ms = cfg->cluster.grace_ms,
                    .handover = handover, .released = released, .stranded = stranded,
                    .load = load, .loaded = loaded, .store_dir = r->store, .rescue = rescue,
                    .orphaned = orphaned, .suspect = suspect, .load_lost = load_lost,
                    .ckpt_redis_max = cfg->cluster.shared_dir[0] == '\0'
                                          ? cfg->cluster.checkpoint_max_mib << 20 : 0,
                    .ckpt_spool_dir = cfg->storage.state_dir, .ckpt_refused = ckpt_refused,
                    .hook_arg = r },
        .outbox = r->ob, .apply = apply, .apply_arg = r,
        .quiet = cfg->crawl.daemon ? NULL : quiet, .ended = ended, .end_arg = r,
    };
#ifdef CRAWLD_FAULT_HOOKS
    o.fault = fault_from_env();
    o.fault_armed = fault_armed;
    o.faulted = faulted;
#endif
    sweep_checkpoints(r);
    rc = node_start(&o, &r->n, err, errlen);
    if (rc < 0) {
        outbox_close(r->ob);
        cr_free(r);
        return rc;
    }
    crawl_cluster cl = { .local = is_local, .may_fetch = may_fetch, .status = status,
                         .ob = r->ob, .arg = r };
    int64_t retry = cfg->cluster.lease_ms / 10;
    crawl_set_cluster(c, &cl, retry > 0 ? retry : 1);
    atomic_store(&r->wired, true);
    *out = r;
    return 0;
}

int clusterrun_wait_settled(clusterrun *r)
{
    bool said = false;
    int64_t waited = 0;
    while (!node_settled(r->n)) {
        crawl_status st;
        crawl_status_get(r->c, &st, NULL, 0);
        if (st.stopping)
            return -EINTR;
        if (!said && waited >= 2 * r->cfg->cluster.lease_ms) {
            node_info in;
            node_get_info(r->n, &in);
            fprintf(r->log, "crawld: cluster: waiting for the slot map to settle (%s)\n",
                    in.paused ? in.why : "nodes still joining");
            said = true;
        }
        struct timespec ts = { 0, 20 * 1000000L };
        nanosleep(&ts, NULL);
        waited += 20;
    }
    node_info in;
    node_get_info(r->n, &in);
    fprintf(r->log, "crawld: cluster: node %s holds %u of %u slots (map epoch %llu)\n",
            r->node_id, in.member.held, in.member.slots, (unsigned long long)in.member.epoch);
    return 0;
}

void clusterrun_ready(clusterrun *r)
{
    atomic_store(&r->ready, true);
}

void clusterrun_stop(clusterrun *r, bool leave)
{
    if (r == NULL)
        return;
    node_stop(r->n, leave);
    outbox_close(r->ob);
    cr_free(r);
}

void clusterrun_info(clusterrun *r, node_info *out)
{
    if (r == NULL) {
        memset(out, 0, sizeof *out);
        return;
    }
    node_get_info(r->n, out);
}
