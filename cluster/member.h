/* cluster/member: this node's membership in a shared crawl, over Redis.
 *
 * Keys (P = "crawld:CRAWL_ID:"): P"meta" (hash; slots, fixed by the first
 * node), P"members" (set of node ids ever seen), P"node:ID" (lease: the
 * node is alive), P"coord" (the coordinator lease), P"map" (hash slot ->
 * node id) and P"epoch" (bumped with every new map, in one MULTI), and
 * P"slot:N" (the slot lease: the node that holds it is the only one that
 * may fetch the slot's hosts).
 *
 * Every tick (call it every lease_ms/4, see member_tick_ms) renews the node
 * lease and every slot lease this node holds, in one pipeline. The holder
 * of the coordinator lease computes the map by rendezvous hashing
 * (cluster/slotmap) over the nodes whose lease is alive, and writes it
 * with epoch+1 when it changed. A node takes a slot the map gives it only
 * with SET NX, so only after the old holder released it or its lease ran
 * out; a slot the map takes away stops dispatching at once and is released
 * once the caller says it is drained.
 *
 * Moving a slot: a slot the map takes away stops dispatching at once and
 * stops being local (links to it go to the outbox); from the next tick
 * the handover hook is asked until it has drained the slot and written its
 * checkpoint; then one script records P"ckpt:N" = {path, epoch, from} and
 * deletes the lease, and released drops the rows. The new owner's SET NX
 * succeeds only after that delete, so it always sees the record: it
 * loads the checkpoint (load) before the slot is fetched or its stream
 * read, then deletes the record. A departing node (member_depart, SIGTERM)
 * hands every slot over this way.
 *
 * A node gone for good (killed, past the grace) hands nothing over. Each
 * node registers its state_dir in P"stores" (hash node -> dir) when it may
 * be reached by the others (shared storage), and a node that takes a slot
 * records itself in P"holder" (hash slot -> node) once the slot is
 * loaded. A slot taken with no checkpoint recorded whose holder is another
 * registered node is rescued (the rescue hook) from that node's store:
 * every row it committed, its unsent outbox; its stream's pending entries
 * are claimed as after any take.
 *
 * Fencing: a slot may be fetched until half a lease after the moment the
 * renewal that last succeeded was *sent*; Redis keeps the key for a whole
 * lease after it *received* it. So a node that was paused, or cut off
 * from Redis, stops fetching a quarter to half a lease before anyone else
 * can take its slots. member_may_fetch is lock-free (one atomic per slot)
 * and may be called from any thread; everything else is for the one thread
 * that owns the member. */
#ifndef CRAWLD_CLUSTER_MEMBER_H
#define CRAWLD_CLUSTER_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct member member;

typedef struct member_opts {
    const char *redis;     /* "unix:/PATH" or "tcp:HOST:PORT" */
    const char *crawl_id;
    const char *node_id;
    uint32_t slots;        /* used when this node creates the crawl */
    int64_t lease_ms;
    /* A node whose lease ran out keeps its place in the map this long
     * after its last renewal (wall clock, P"seen"), so a restart on its
     * state_dir finds its slots; 0: dropped with its lease. A node that
     * leaves (member_leave) is dropped at once. */
    int64_t grace_ms;
    /* Slot moves (see "Moving a slot" above); each NULL: none. Called on
     * the owner thread, with hook_arg.
     * handover: for a slot the map took away, from the tick after its gate
     * closed (and member_is_local turned 0): 1 once it is drained and its
     * rows are in the checkpoint file named in ckpt ("" for none), 0 not
     * yet, < 0 failed; asked again every tick until 1, the slot kept.
     * released: the lease is gone and the checkpoint recorded in
     * P"ckpt:N": the rows may be dropped; 0 once they are, < 0 failed
     * (then dropped as an orphan's, see orphaned). A lease that ran out
     * during the hand-over counts as released while nobody took the slot
     * since. stranded: another node took it meanwhile: the checkpoint in
     * ckpt is not recorded (nobody loads it), and the rows here are an
     * orphan's (that node rescues them from this store).
     * load: a slot taken while P"ckpt:N" names a checkpoint: 0 once its
     * rows are loaded; else asked again every tick, and meanwhile the slot
     * is held but neither fetched nor read. loaded: the record is deleted
     * (the file may go). */
    int (*handover)(void *arg, uint32_t slot, char *ckpt /* OUT */, size_t cap);
    /* Checkpoints through Redis (no shared storage): with ckpt_redis_max
     * > 0, the file handover wrote (anywhere local) is sent to Redis as
     * P"ckptdata:N" and recorded as "redis:" plus that key (the local file
     * goes); the new owner gets it into a file in ckpt_spool_dir, which
     * load reads. A file over ckpt_redis_max bytes (or unreadable) is not
     * sent: the slot stays here, closed, and the hand-over is tried again
     * (member_info.ckpt_too_big, the ckpt_refused hook). 0: paths as
     * handover names them. */
    int64_t ckpt_redis_max;
    const char *ckpt_spool_dir;
    void (*ckpt_refused)(void *arg, uint32_t slot, const char *why);
    int (*released)(void *arg, uint32_t slot);
    void (*stranded)(void *arg, uint32_t slot, const char *ckpt);
    int (*load)(void *arg, uint32_t slot, const char *ckpt);
    void (*loaded)(void *arg, uint32_t slot, const char *ckpt);
    /* A node gone for good (see "A node gone for good" above).
     * store_dir: this node's state_dir as the others can reach it
     * (registered in P"stores"); NULL or "": not registered, so its
     * slots are never rescued from its store. rescue: a slot taken with
     * no checkpoint recorded whose last holder (P"holder") was another
     * node, which registered store_dir: 0 once the slot's rows (and that
     * node's outbox) are loaded from it, else asked again every tick,
     * the slot held but neither fetched nor read meanwhile. */
    const char *store_dir;
    int (*rescue)(void *arg, uint32_t slot, const char *from, const char *store_dir);
    /* orphaned: a slot whose lease this node lost (fenced) and that another
     * node has since rescued from this store: its rows here are stale,
     * drop them. 0 once done, else asked again every tick (the slot is not
     * taken back meanwhile). NULL: kept (used only with store_dir). */
    int (*orphaned)(void *arg, uint32_t slot);
    /* suspect: at member_open, out[s] = true for each of the slots this
     * store holds rows of. Such a slot is treated as an orphan from the
     * start: its rows are dropped once P"holder" names another node (it
     * was handed over and this node crashed before the drop, or another
     * node rescued it while this one was down), kept once this node takes
     * the lease while P"holder" names it. NULL: none. */
    void (*suspect)(void *arg, uint32_t slots, bool *out /* OUT */);
    /* load_lost: a load or rescue of slot outlasted the lease and another
     * node took the slot meanwhile (member_info.loads_lost); the copy here
     * is an orphan's and goes through orphaned. NULL: not told. */
    void (*load_lost)(void *arg, uint32_t slot);
    void *hook_arg;
} member_opts;

/* What a tick saw, for status lines and metrics. */
typedef struct member_info {
    bool redis_up;         /* the last tick reached Redis */
    bool coordinator;
    uint64_t epoch;        /* of the map this node acts on */
    uint32_t slots;        /* the crawl's slot count */
    uint32_t held;         /* slot leases held */
    uint32_t wanted;       /* slots the map gives this node */
    uint64_t lost;         /* slot leases found gone at renewal (fenced) */
    uint64_t redis_errors; /* ticks that failed to reach Redis */
    uint32_t unloaded;     /* held slots whose checkpoint is not loaded yet */
    uint64_t handed_over;  /* slots released with their checkpoint */
    uint64_t loads;        /* checkpoints loaded */
    uint64_t rescues;      /* slots loaded from the store of a node gone for good */
    uint64_t orphans_dropped; /* lost slots whose stale rows here were dropped */
    uint64_t stranded;     /* hand-overs that found another node holding the slot */
    uint64_t ckpt_sent;    /* checkpoints sent through Redis (ckpt_redis_max) */
    uint64_t ckpt_too_big; /* hand-overs refused: the checkpoint over ckpt_redis_max */
    uint64_t loads_lost;   /* loads or rescues that outlasted the lease: another node
                              took the slot meanwhile; the copy here is an orphan's */
    char error[256];       /* the last Redis error, "" when up */
} member_info;

/* The whole crawl is over: from now on no slot is taken (a node that
 * exited first leaves its slots to the map, and taking them would only
 * rescue a finished crawl's rows from its store). */
void member_end(member *m);

/* Connects and joins (node lease, members set, the crawl's slot count).
 * 0 and *out, or a negative errno with why in err. Caller owns *out; free
 * with member_free() (after member_leave for a clean exit). */
int member_open(const member_opts *o, member **out /* OUT */, char *err, size_t errlen);
void member_free(member *m);

/* One round at monotonic time now_ms: renew, coordinate, follow the map,
 * take and release slots. 0, or -EPIPE when Redis was unreachable (the
 * leases then run out on their own; the next tick reconnects). */
int member_tick(member *m, int64_t now_ms);
/* The tick interval for this lease. */
int64_t member_tick_ms(const member *m);

/* 1 when this node may fetch hosts of slot at monotonic time now_ms. */
int member_may_fetch(const member *m, uint32_t slot, int64_t now_ms);

/* 1 when links of slot are admitted here: held, loaded, not leaving.
 * Any thread (one atomic). */
int member_is_local(const member *m, uint32_t slot);

/* Leaves the membership (node lease, members, coordinator) but keeps the
 * slot leases: later ticks renew only those and hand every slot over (the
 * others' map no longer names this node). 0 or -EPIPE. */
int member_depart(member *m);

/* Stops dispatching everything and releases every lease (node, slots,
 * coordinator) so others take over at once. 0 or -EPIPE. */
int member_leave(member *m);

/* The slots whose lease this node holds (may include one draining),
 * up to cap. OUT: slots. Returns how many. Owner thread only. */
size_t member_held_slots(const member *m, uint32_t *slots /* OUT */, size_t cap);

/* The crawl's slot count (the stored one once joined). */
uint32_t member_slots(const member *m);
void member_get_info(const member *m, member_info *out /* OUT */);

/* cluster.node_id's default: "HOSTNAME:STATE_DIR", the state folder made
 * absolute (as given when it does not exist yet). */
void member_default_node_id(const char *state_dir, char *buf, size_t len);

/* The key prefix "crawld:ID:" for a crawl id into buf. */
void member_prefix(const char *crawl_id, char *buf, size_t len);

/* The checkpoint files the crawl's slot records name now (P"ckpt:N"; a
 * checkpoint sent through Redis names no file), read over a connection of
 * its own to addr: cb(arg, slot, path) for each. For a node's start, to
 * tell its leftovers from checkpoints another node has yet to load. 0, or
 * a negative errno with why in err (then nothing is known). */
typedef void (*member_ckpt_fn)(void *arg, uint32_t slot, const char *path);
int member_recorded_ckpts(const char *addr, const char *crawl_id, uint32_t slots, int timeout_ms,
                          member_ckpt_fn cb, void *arg, char *err, size_t errlen);

#endif
