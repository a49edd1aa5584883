/* dedup/bloom_snap: Bloom filter snapshots, bloom_save and bloom_load (API
 * in bloom.h; the structs it reads and fills are in bloom_int.h).
 *
 * Snapshot format (little-endian): header (magic, version, total size,
 * high-water mark, parameters, owner, and the generation ring: live
 * generations, configured generations, retention), then per generation its
 * start time and per shard the stage count and per stage its geometry,
 * count and bit words, then XXH3-64 of everything before it. A plain
 * filter is a ring of one generation with retention 0. Every generation
 * shares the header's parameters. bloom_load checks magic, version and size, then the checksum
 * over the whole file, then every field, before it allocates anything that
 * a field's value sizes. */
#include "dedup/bloom.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/atomic_file.h"
#include "common/err.h"
#include "dedup/bloom_int.h"

/* ---- snapshots ---------------------------------------------------------- */

static const char snap_magic[8] = { 'C', 'R', 'W', 'L', 'B', 'L', 'M', '\n' };
#define SNAP_VERSION 3 /* 2: the owner id; 3: the generation ring (dedup/gens) */
#define SNAP_HEADER 128 /* bytes */
#define SNAP_GEN 16     /* i64 start, u64 zero */
#define SNAP_SHARD 8    /* u32 nstages, u32 zero */
#define SNAP_STAGE 40   /* u64 capacity, count, nblocks; f64 error; u32 k, lines */
#define SNAP_TRAILER 8  /* u64 checksum */
#define IOBUF (1u << 20)

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint64_t dbits(double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    return v;
}

static double bitsd(uint64_t v)
{
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}

struct writer {
    cr_afile *af;
    hash_stream *hs;
    uint8_t *buf;
    size_t len;
    int err; /* first errno */
};

static void wr_flush(struct writer *w)
{
    if (w->err == 0 && w->len > 0) {
        int rc = cr_afile_write(w->af, w->buf, w->len);
        if (rc < 0)
            w->err = -rc;
    }
    w->len = 0;
}

/* Space for n (<= IOBUF) bytes that are checksummed and written. */
static uint8_t *wr_reserve(struct writer *w, size_t n)
{
    if (w->len + n > IOBUF) {
        hash_stream_update(w->hs, w->buf, w->len);
        wr_flush(w);
    }
    uint8_t *p = w->buf + w->len;
    w->len += n;
    return p;
}

static void wr_u64(struct writer *w, uint64_t v) { put64(wr_reserve(w, 8), v); }
static void wr_u32(struct writer *w, uint32_t v) { put32(wr_reserve(w, 4), v); }

static void encode_header(uint8_t *h, const bloom *bf, uint64_t total, uint64_t hwm,
                          const uint8_t *owner, const bloom_ring *ring)
{
    const bloom_params *p = &bf->params;
    memset(h, 0, SNAP_HEADER);
    memcpy(h, snap_magic, 8);
    put32(h + 8, SNAP_VERSION);
    put32(h + 12, SNAP_HEADER);
    put64(h + 16, total);
    put64(h + 24, hwm);
    put64(h + 32, p->expected_items);
    put64(h + 40, dbits(p->fp_rate));
    put64(h + 48, dbits(p->growth));
    put64(h + 56, dbits(p->tightening));
    put32(h + 64, p->shards);
    put32(h + 68, p->max_stages);
    put32(h + 72, p->block_lines);
    put32(h + 76, LINE_BITS);
    put64(h + 80, bf->cap0);
    put64(h + 88, dbits(bf->p0));
    if (owner != NULL)
        memcpy(h + 96, owner, BLOOM_OWNER_BYTES);
    put32(h + 112, ring->n);
    put32(h + 116, ring->generations);
    put64(h + 120, (uint64_t)ring->retention_s);
}

static uint64_t filter_bytes(const bloom *bf)
{
    uint64_t total = 0;
    for (unsigned s = 0; s < bf->params.shards; s++) {
        struct shard *sh = &bf->shards[s];
        unsigned n = atomic_load_explicit(&sh->nstages, memory_order_acquire);
        total += SNAP_SHARD;
        for (unsigned i = 0; i < n; i++)
            total += SNAP_STAGE + sh->stages[i]->nblocks * 64u * sh->stages[i]->lines;
    }
    return total;
}

static void write_filter(struct writer *w, const bloom *bf)
{
    for (unsigned s = 0; s < bf->params.shards; s++) {
        struct shard *sh = &bf->shards[s];
        unsigned n = atomic_load_explicit(&sh->nstages, memory_order_acquire);
        wr_u32(w, n);
        wr_u32(w, 0);
        for (unsigned i = 0; i < n; i++) {
            struct stage *st = sh->stages[i];
            wr_u64(w, st->capacity);
            wr_u64(w, bloom_stage_items(st));
            wr_u64(w, st->nblocks);
            wr_u64(w, dbits(st->error));
            wr_u32(w, st->k);
            wr_u32(w, st->lines);
            uint64_t nw = st->nblocks * st->block_words;
            for (uint64_t j = 0; j < nw; j++)
                wr_u64(w, atomic_load_explicit(&st->words[j], memory_order_relaxed));
        }
    }
}

static int write_snapshot(const bloom_ring *ring, cr_afile *af, uint64_t hwm,
                          const uint8_t *owner, char *err, size_t errlen)
{
    struct writer w = { af, NULL, NULL, 0, 0 };
    int rc = 0;
    w.hs = hash_stream_new();
    w.buf = cr_malloc(IOBUF);
    if (w.hs == NULL || w.buf == NULL) {
        cr_errf(err, errlen, "out of memory");
        rc = -ENOMEM;
        goto out;
    }
    uint64_t total = SNAP_HEADER + SNAP_TRAILER;
    for (unsigned g = 0; g < ring->n; g++)
        total += SNAP_GEN + filter_bytes(ring->gens[g]);
    encode_header(wr_reserve(&w, SNAP_HEADER), ring->gens[0], total, hwm, owner, ring);
    for (unsigned g = 0; g < ring->n; g++) {
        wr_u64(&w, (uint64_t)ring->starts[g]);
        wr_u64(&w, 0);
        write_filter(&w, ring->gens[g]);
    }
    hash_stream_update(w.hs, w.buf, w.len);
    wr_flush(&w);
    put64(w.buf, hash_stream_digest(w.hs)); /* the trailer is not checksummed */
    w.len = SNAP_TRAILER;
    wr_flush(&w);
    if (w.err != 0) {
        cr_errf(err, errlen, "cannot write snapshot: %s", strerror(w.err));
        rc = -w.err;
    }
out:
    cr_free(w.buf);
    hash_stream_free(w.hs);
    return rc;
}

static int same_params(const bloom *a, const bloom *b)
{
    return memcmp(&a->params, &b->params, sizeof a->params) == 0 && a->cap0 == b->cap0 &&
           a->p0 == b->p0;
}

/* Written through common/atomic_file: the old snapshot stays whole until
 * the new one is fsynced and renamed over it. */
int bloom_save_ring(const bloom_ring *ring, const char *path, uint64_t high_water_mark,
                    const uint8_t *owner, char *err, size_t errlen)
{
    cr_afile af;
    unsigned g = 0;
    int locked = 0;
    if (ring->n < 1 || ring->n > BLOOM_MAX_GENS) {
        cr_errf(err, errlen, "a ring of %u generations cannot be saved", ring->n);
        return -EINVAL;
    }
    for (unsigned i = 1; i < ring->n; i++)
        if (!same_params(ring->gens[0], ring->gens[i])) {
            cr_errf(err, errlen, "the generations were built with different parameters");
            return -EINVAL;
        }
    int rc = cr_afile_open(&af, path, 0600);
    if (rc < 0) {
        cr_errf(err, errlen, "cannot create a temp file beside %s: %s", path, strerror(-rc));
        return rc;
    }
    /* no stage is appended meanwhile: every shard of every generation */
    for (; g < ring->n; g++)
        for (locked = 0; locked < (int)ring->gens[g]->params.shards; locked++)
            pthread_mutex_lock(&ring->gens[g]->shards[locked].lock);
    rc = write_snapshot(ring, &af, high_water_mark, owner, err, errlen);
    while (g-- > 0)
        for (locked = (int)ring->gens[g]->params.shards; locked-- > 0;)
            pthread_mutex_unlock(&ring->gens[g]->shards[locked].lock);
    if (rc < 0) {
        cr_afile_abort(&af);
        return rc;
    }
    rc = cr_afile_commit(&af);
    if (rc < 0)
        cr_errf(err, errlen, "cannot save snapshot %s (%s): %s", path,
                cr_afile_step_name(af.failed), strerror(-rc));
    return rc;
}

int bloom_save(bloom *bf, const char *path, uint64_t high_water_mark, const uint8_t *owner,
               char *err, size_t errlen)
{
    bloom_ring ring = { 1, 0, 0, { bf }, { 0 } };
    return bloom_save_ring(&ring, path, high_water_mark, owner, err, errlen);
}

struct reader {
    int fd;
    hash_stream *hs; /* NULL: do not checksum */
    uint8_t *buf;
    size_t len, pos;
    uint64_t left; /* bytes of the file not yet read into buf */
};

/* Reads exactly n bytes; 0, -EBADMSG at end of file, -EIO on a read error. */
static int rd_bytes(struct reader *r, void *dst, size_t n)
{
    uint8_t *d = dst;
    while (n > 0) {
        if (r->pos == r->len) {
            size_t want = r->left < IOBUF ? (size_t)r->left : IOBUF;
            if (want == 0)
                return -EBADMSG;
            ssize_t got = read(r->fd, r->buf, want);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0)
                return -EIO;
            if (got == 0)
                return -EBADMSG;
            r->len = (size_t)got;
            r->pos = 0;
            r->left -= (uint64_t)got;
            if (r->hs != NULL)
                hash_stream_update(r->hs, r->buf, r->len);
        }
        size_t take = r->len - r->pos < n ? r->len - r->pos : n;
        memcpy(d, r->buf + r->pos, take);
        r->pos += take;
        d += take;
        n -= take;
    }
    return 0;
}

/* Pass 1: XXH3-64 of everything before the trailer equals the trailer. */
static int verify_checksum(int fd, uint64_t size, uint8_t *buf, char *err, size_t errlen)
{
    hash_stream *hs = hash_stream_new();
    if (hs == NULL) {
        cr_errf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    struct reader r = { fd, hs, buf, 0, 0, size - SNAP_TRAILER };
    uint8_t chunk[4096];
    uint64_t body = size - SNAP_TRAILER;
    int rc = 0;
    while (body > 0 && rc == 0) {
        size_t n = body < sizeof chunk ? (size_t)body : sizeof chunk;
        rc = rd_bytes(&r, chunk, n);
        body -= n;
    }
    uint64_t want = hash_stream_digest(hs);
    hash_stream_free(hs);
    uint8_t t[SNAP_TRAILER];
    r.hs = NULL;
    r.left = SNAP_TRAILER;
    if (rc == 0)
        rc = rd_bytes(&r, t, sizeof t);
    if (rc != 0) {
        cr_errf(err, errlen, rc == -EIO ? "read error" : "truncated while reading");
        return rc;
    }
    if (get64(t) != want) {
        cr_errf(err, errlen, "checksum mismatch: the file is corrupt");
        return -EBADMSG;
    }
    return 0;
}

/* One generation's shards and stages into bf (allocated, no stage yet).
 * *left: bytes before the checksum not yet read. */
static int parse_filter(struct reader *r, bloom *bf, unsigned gen, uint64_t *left, char *err,
                        size_t errlen)
{
    const bloom_params *p = &bf->params;
    int rc;
    for (unsigned s = 0; s < p->shards; s++) {
        struct shard *sh = &bf->shards[s];
        uint8_t sb[SNAP_SHARD];
        if (*left < SNAP_SHARD)
            goto short_;
        rc = rd_bytes(r, sb, sizeof sb);
        if (rc != 0)
            goto io;
        *left -= SNAP_SHARD;
        unsigned n = get32(sb);
        if (n < 1 || n > p->max_stages || get32(sb + 4) != 0) {
            cr_errf(err, errlen, "generation %u shard %u: bad stage count %u", gen, s, n);
            return -EBADMSG;
        }
        for (unsigned i = 0; i < n; i++) {
            uint8_t g[SNAP_STAGE];
            if (*left < SNAP_STAGE)
                goto short_;
            rc = rd_bytes(r, g, sizeof g);
            if (rc != 0)
                goto io;
            *left -= SNAP_STAGE;
            uint64_t cap = get64(g), count = get64(g + 8), nb = get64(g + 16);
            double e = bitsd(get64(g + 24));
            unsigned k = get32(g + 32), lines = get32(g + 36);
            if (cap < 1 || cap > MAX_CAPACITY || count > MAX_CAPACITY * 2 || !(e > 0.0 && e < 1.0) ||
                k < 1 || k > MAX_K || lines < 1 || lines > 2 || nb < 1 ||
                nb > *left / (64u * lines)) {
                cr_errf(err, errlen, "generation %u shard %u stage %u: bad geometry", gen, s, i);
                return -EBADMSG;
            }
            if (s == 0 && i == 0) /* as bloom_new would decide */
                bf->arena_on = nb * 64u * lines * p->shards >= HUGE_PAGE;
            struct stage *st = bloom_stage_alloc(bf, i, nb, k, lines, cap, e);
            if (st == NULL) {
                cr_errf(err, errlen, "out of memory");
                return -ENOMEM;
            }
            sh->stages[i] = st;
            atomic_store_explicit(&sh->nstages, i + 1, memory_order_relaxed);
            uint64_t nw = nb * st->block_words, setb = 0;
            for (uint64_t j = 0; j < nw; j++) {
                uint8_t wb[8];
                rc = rd_bytes(r, wb, 8);
                if (rc != 0)
                    goto io;
                uint64_t v = get64(wb);
                setb += (uint64_t)__builtin_popcountll(v);
                atomic_store_explicit(&st->words[j], v, memory_order_relaxed);
            }
            *left -= nw * 8;
            atomic_store_explicit(&st->slots[0].count, count, memory_order_relaxed);
            atomic_store_explicit(&st->slots[0].set_bits, setb, memory_order_relaxed);
        }
    }
    return 0;
short_:
    cr_errf(err, errlen, "stage records run past the end of the file");
    return -EBADMSG;
io:
    cr_errf(err, errlen, rc == -EIO ? "read error" : "truncated while reading");
    return rc;
}

/* Pass 2: every field, then the bits. */
static int parse_snapshot(int fd, uint64_t size, uint8_t *buf, bloom_ring *out, uint64_t *hwm,
                          uint8_t *owner, char *err, size_t errlen)
{
    struct reader r = { fd, NULL, buf, 0, 0, size - SNAP_TRAILER };
    uint64_t left = size - SNAP_TRAILER - SNAP_HEADER; /* bytes after the header */
    uint8_t h[SNAP_HEADER];
    bloom_ring ring;
    memset(&ring, 0, sizeof ring);
    int rc = rd_bytes(&r, h, sizeof h);
    if (rc != 0) {
        cr_errf(err, errlen, rc == -EIO ? "read error" : "truncated while reading");
        return rc;
    }
    bloom_params p;
    p.max_bytes = 0; /* not in the file: the loader's caller sets it */
    p.expected_items = get64(h + 32);
    p.fp_rate = bitsd(get64(h + 40));
    p.growth = bitsd(get64(h + 48));
    p.tightening = bitsd(get64(h + 56));
    p.shards = get32(h + 64);
    p.max_stages = get32(h + 68);
    p.block_lines = get32(h + 72);
    char why[128];
    if (bloom_params_check(&p, why, sizeof why) != 0 || get32(h + 76) != LINE_BITS) {
        cr_errf(err, errlen, "bad parameters in snapshot: %s",
               get32(h + 76) != LINE_BITS ? "line size" : why);
        return -EBADMSG;
    }
    uint64_t cap0 = get64(h + 80);
    double p0 = bitsd(get64(h + 88));
    if (cap0 < 1 || cap0 > MAX_CAPACITY || !(p0 > 0.0 && p0 <= p.fp_rate)) {
        cr_errf(err, errlen, "bad first-stage sizing in snapshot");
        return -EBADMSG;
    }
    unsigned n = get32(h + 112);
    ring.generations = get32(h + 116);
    ring.retention_s = (int64_t)get64(h + 120);
    if (n < 1 || n > BLOOM_MAX_GENS || ring.retention_s < 0 ||
        (ring.retention_s == 0) != (n == 1 && ring.generations == 0) ||
        (ring.retention_s > 0 && n > ring.generations + 1)) {
        cr_errf(err, errlen, "bad generation ring in snapshot (%u live of %u, retention %lld s)",
                n, ring.generations, (long long)ring.retention_s);
        return -EBADMSG;
    }
    for (unsigned g = 0; g < n; g++) {
        uint8_t gb[SNAP_GEN];
        if (left < SNAP_GEN) {
            cr_errf(err, errlen, "generation records run past the end of the file");
            rc = -EBADMSG;
            goto out;
        }
        rc = rd_bytes(&r, gb, sizeof gb);
        if (rc != 0) {
            cr_errf(err, errlen, rc == -EIO ? "read error" : "truncated while reading");
            goto out;
        }
        left -= SNAP_GEN;
        ring.starts[g] = (int64_t)get64(gb);
        if (get64(gb + 8) != 0 || (g > 0 && ring.starts[g] < ring.starts[g - 1])) {
            cr_errf(err, errlen, "generation %u: bad start time", g);
            rc = -EBADMSG;
            goto out;
        }
        rc = bloom_alloc(&p, &ring.gens[g]);
        if (rc != 0) {
            cr_errf(err, errlen, "out of memory");
            rc = -ENOMEM;
            goto out;
        }
        ring.n = g + 1;
        ring.gens[g]->cap0 = cap0;
        ring.gens[g]->p0 = p0;
        rc = parse_filter(&r, ring.gens[g], g, &left, err, errlen);
        if (rc != 0)
            goto out;
    }
    if (left != 0) {
        cr_errf(err, errlen, "%llu unexplained bytes before the checksum", (unsigned long long)left);
        rc = -EBADMSG;
        goto out;
    }
    *hwm = get64(h + 24);
    if (owner != NULL)
        memcpy(owner, h + 96, BLOOM_OWNER_BYTES);
    *out = ring;
    return 0;
out:
    for (unsigned g = 0; g < ring.n; g++)
        bloom_free(ring.gens[g]);
    return rc;
}

int bloom_load_ring(const char *path, bloom_ring *out, uint64_t *high_water_mark, uint8_t *owner,
                    char *err, size_t errlen)
{
    uint8_t *buf = NULL;
    int rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        cr_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return rc;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        rc = -errno;
        cr_errf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
        goto out;
    }
    if (S_ISDIR(sb.st_mode)) {
        cr_errf(err, errlen, "%s is a directory, not a snapshot", path);
        rc = -EISDIR;
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        cr_errf(err, errlen, "%s is not a regular file", path);
        rc = -EINVAL;
        goto out;
    }
    uint64_t size = (uint64_t)sb.st_size;
    if (size == 0) {
        cr_errf(err, errlen, "%s is empty", path);
        rc = -EBADMSG;
        goto out;
    }
    buf = cr_malloc(IOBUF);
    if (buf == NULL) {
        cr_errf(err, errlen, "out of memory");
        rc = -ENOMEM;
        goto out;
    }
    uint8_t h[16];
    size_t hn = size < sizeof h ? (size_t)size : sizeof h;
    struct reader r = { fd, NULL, buf, 0, 0, hn };
    rc = rd_bytes(&r, h, hn);
    if (rc != 0) {
        cr_errf(err, errlen, "cannot read %s", path);
        goto out;
    }
    if (memcmp(h, snap_magic, hn < 8 ? hn : 8) != 0) {
        cr_errf(err, errlen, "%s is not a crawld Bloom snapshot (bad magic)", path);
        rc = -EINVAL;
        goto out;
    }
    if (size < SNAP_HEADER + SNAP_TRAILER) {
        cr_errf(err, errlen, "%s is truncated (%llu bytes, shorter than a header)", path,
               (unsigned long long)size);
        rc = -EBADMSG;
        goto out;
    }
    if (get32(h + 8) != SNAP_VERSION || get32(h + 12) != SNAP_HEADER) {
        cr_errf(err, errlen, "%s: unsupported snapshot version %u (this build reads %d)", path,
               get32(h + 8), SNAP_VERSION);
        rc = -ENOTSUP;
        goto out;
    }
    uint8_t tb[8];
    r.left = 8;
    rc = rd_bytes(&r, tb, 8);
    if (rc == 0 && get64(tb) != size) {
        cr_errf(err, errlen, "%s is truncated or padded: %llu bytes, the header says %llu", path,
               (unsigned long long)size, (unsigned long long)get64(tb));
        rc = -EBADMSG;
        goto out;
    }
    if (rc == 0 && lseek(fd, 0, SEEK_SET) != 0)
        rc = -EIO;
    if (rc != 0) {
        cr_errf(err, errlen, "cannot read %s", path);
        goto out;
    }
    char why[200];
    rc = verify_checksum(fd, size, buf, why, sizeof why);
    if (rc == 0 && lseek(fd, 0, SEEK_SET) != 0) {
        snprintf(why, sizeof why, "cannot seek");
        rc = -EIO;
    }
    if (rc == 0)
        rc = parse_snapshot(fd, size, buf, out, high_water_mark, owner, why, sizeof why);
    if (rc != 0)
        cr_errf(err, errlen, "%s: %s", path, why);
out:
    cr_free(buf);
    close(fd);
    return rc;
}

int bloom_load(const char *path, bloom **out, uint64_t *high_water_mark, uint8_t *owner, char *err,
               size_t errlen)
{
    bloom_ring ring;
    int rc = bloom_load_ring(path, &ring, high_water_mark, owner, err, errlen);
    if (rc != 0)
        return rc;
    if (ring.n != 1 || ring.retention_s != 0) {
        cr_errf(err, errlen, "%s holds a ring of %u generations (retention %lld s), not one filter",
                path, ring.n, (long long)ring.retention_s);
        for (unsigned g = 0; g < ring.n; g++)
            bloom_free(ring.gens[g]);
        return -EINVAL;
    }
    *out = ring.gens[0];
    return 0;
}
