/* tests/test_dispatchlog: storage/dispatchlog, the shared-mapped ring of
 * started fetches that outlives a killed process. Each test has its own
 * temporary state folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/alloc.h"
#include "storage/dispatchlog.h"

#define FILE_SIZE (64 + (off_t)DISPATCHLOG_SLOTS * 32) /* the header and the ring */
#define V1_SIZE (64 + (off_t)DISPATCHLOG_SLOTS * 8)     /* the first layout's */

typedef struct fixture {
    char dir[64];
    char path[96]; /* dir/dispatch.log */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/crawld-test-dlog-XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof f->path, "%s/dispatch.log", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* What a scan returned. */
typedef struct seen_log {
    size_t n, cap;
    int64_t *id;
    int *attempt;
    dispatchlog_entry *e;
    size_t stop_after; /* 0: never stop */
} seen_log;

/* The host key, start and spacing note() gives row id: each a function of
 * the id, so a scan can tell an entry is whole. */
static uint64_t key_of(int64_t id) { return (uint64_t)id * 0x9e3779b97f4a7c15ull + 1; }
static int64_t start_of(int64_t id) { return 1700000000000 + id; }
static int64_t spacing_of(int64_t id) { return id % 3 == 0 ? -1 : id % 5000; }

static void note(dispatchlog *l, int64_t id, int attempt)
{
    dispatchlog_entry e = { .id = id, .attempt = attempt, .host_key = key_of(id),
                            .started_ms = start_of(id), .spacing_ms = spacing_of(id) };
    dispatchlog_note(l, &e);
}

static bool whole(const dispatchlog_entry *e)
{
    return e->host_key == key_of(e->id) && e->started_ms == start_of(e->id) &&
           e->spacing_ms == spacing_of(e->id);
}

static int collect(void *ud, const dispatchlog_entry *e)
{
    seen_log *s = ud;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->id = realloc(s->id, s->cap * sizeof *s->id);
        s->attempt = realloc(s->attempt, s->cap * sizeof *s->attempt);
        s->e = realloc(s->e, s->cap * sizeof *s->e);
        assert_non_null(s->id);
        assert_non_null(s->attempt);
        assert_non_null(s->e);
    }
    s->id[s->n] = e->id;
    s->attempt[s->n] = e->attempt;
    s->e[s->n] = *e;
    s->n++;
    return s->stop_after != 0 && s->n >= s->stop_after;
}

static seen_log scan(dispatchlog *l, size_t stop_after)
{
    seen_log s = { .stop_after = stop_after };
    dispatchlog_scan(l, collect, &s);
    return s;
}

static void log_free(seen_log *s)
{
    free(s->id);
    free(s->attempt);
    free(s->e);
}

static dispatchlog *open_ok(const char *dir, int *clean)
{
    char err[256] = "";
    *clean = -1;
    dispatchlog *l = dispatchlog_open(dir, clean, err, sizeof err);
    if (l == NULL)
        fail_msg("dispatchlog_open(%s): %s", dir, err);
    assert_true(*clean == 0 || *clean == 1);
    return l;
}

static off_t file_size(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return sb.st_size;
}

static void new_log_is_clean_and_empty(void **state)
{
    fixture *f = *state;
    int clean;
    dispatchlog *l = open_ok(f->dir, &clean);
    assert_int_equal(clean, 1);
    assert_int_equal(file_size(f->path), FILE_SIZE);
    seen_log s = scan(l, 0);
    assert_int_equal(s.n, 0);
    log_free(&s);
    dispatchlog_close(l, 1);
    dispatchlog_close(NULL, 1); /* no-op */
    note(NULL, 1, 1);
}

static void note_then_scan(void **state)
{
    fixture *f = *state;
    int clean;
    dispatchlog *l = open_ok(f->dir, &clean);
    dispatchlog_reset(l);
    note(l, 5, 1);
    note(l, 7, 2);
    note(l, 0, 1);  /* a robots.txt fetch: kept */
    note(l, -3, 1); /* not a row: ignored */
    note(l, 5, 2);
    note(l, 9, 0);      /* attempts start at 1 */
    note(l, 11, 70000); /* capped at what an entry holds */
    note(l, (int64_t)1 << 40, 3);
    dispatchlog_entry unknown = { .id = 12, .attempt = 1, .spacing_ms = -7 };
    dispatchlog_note(l, &unknown);
    seen_log s = scan(l, 0);
    assert_int_equal(s.n, 8);
    const int64_t want_id[] = { 5, 7, 0, 5, 9, 11, (int64_t)1 << 40 };
    const int want_attempt[] = { 1, 2, 1, 2, 1, 0xffff, 3 };
    for (size_t i = 0; i < 7; i++) {
        assert_int_equal(s.id[i], want_id[i]);
        assert_int_equal(s.attempt[i], want_attempt[i]);
        assert_true(whole(&s.e[i]));
    }
    /* no host, no start, a negative spacing: read back as unknown */
    assert_int_equal(s.e[7].id, 12);
    assert_int_equal(s.e[7].host_key, 0);
    assert_int_equal(s.e[7].started_ms, 0);
    assert_int_equal(s.e[7].spacing_ms, -1);
    log_free(&s);
    /* a callback's non-zero return stops the scan */
    s = scan(l, 2);
    assert_int_equal(s.n, 2);
    log_free(&s);
    /* reset empties it */
    dispatchlog_reset(l);
    s = scan(l, 0);
    assert_int_equal(s.n, 0);
    log_free(&s);
    dispatchlog_close(l, 1);
}

/* A clean close says so; either way the entries stay for the next open
 * (its politeness reads them), which is told whether it was clean. */
static void clean_flag_across_reopen(void **state)
{
    fixture *f = *state;
    int clean;
    dispatchlog *l = open_ok(f->dir, &clean);
    dispatchlog_reset(l);
    note(l, 3, 1);
    dispatchlog_close(l, 1);
    l = open_ok(f->dir, &clean);
    assert_int_equal(clean, 1);
    seen_log s = scan(l, 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.id[0], 3);
    assert_true(whole(&s.e[0]));
    log_free(&s);

    dispatchlog_reset(l); /* this run is in use now */
    note(l, 4, 1);
    note(l, 6, 3);
    dispatchlog_close(l, 0);
    l = open_ok(f->dir, &clean);
    assert_int_equal(clean, 0);
    s = scan(l, 0);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.id[0], 4);
    assert_int_equal(s.id[1], 6);
    assert_int_equal(s.attempt[1], 3);
    log_free(&s);
    /* opened but never reset: still the last run's entries and flag */
    dispatchlog_close(l, 0);
    l = open_ok(f->dir, &clean);
    assert_int_equal(clean, 0);
    s = scan(l, 0);
    assert_int_equal(s.n, 2);
    log_free(&s);
    dispatchlog_reset(l);
    dispatchlog_close(l, 0);
    l = open_ok(f->dir, &clean);
    assert_int_equal(clean, 0); /* a reset run that did not end cleanly */
    s = scan(l, 0);
    assert_int_equal(s.n, 0);
    log_free(&s);
    dispatchlog_close(l, 1);
}

/* The ring keeps the last DISPATCHLOG_SLOTS starts. */
static void ring_keeps_the_newest(void **state)
{
    fixture *f = *state;
    int clean;
    enum { EXTRA = 1000 };
    dispatchlog *l = open_ok(f->dir, &clean);
    dispatchlog_reset(l);
    for (int64_t id = 1; id <= DISPATCHLOG_SLOTS + EXTRA; id++)
        note(l, id, 1);
    seen_log s = scan(l, 0);
    assert_int_equal(s.n, DISPATCHLOG_SLOTS);
    unsigned char *hit = calloc(DISPATCHLOG_SLOTS + EXTRA + 1, 1);
    assert_non_null(hit);
    for (size_t i = 0; i < s.n; i++) {
        assert_true(s.id[i] > EXTRA && s.id[i] <= DISPATCHLOG_SLOTS + EXTRA);
        assert_int_equal(hit[s.id[i]], 0);
        hit[s.id[i]] = 1;
    }
    free(hit);
    log_free(&s);
    dispatchlog_close(l, 1);
}

static void write_file(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, n), (ssize_t)n);
    close(fd);
}

/* A file of the wrong size, magic or slot count is not trusted: rebuilt
 * empty, at the right size. */
static void foreign_file_rebuilt(void **state)
{
    fixture *f = *state;
    int clean;
    size_t size = (size_t)FILE_SIZE;
    uint64_t *junk = malloc(size + 8);
    assert_non_null(junk);
    for (size_t i = 0; i < size / 8 + 1; i++)
        junk[i] = 0x0101010101010101ull * (i % 251 + 1);

    for (int variant = 0; variant < 4; variant++) {
        switch (variant) {
        case 0: write_file(f->path, junk, 100); break;              /* short */
        case 1: write_file(f->path, junk, size); break;             /* junk header */
        case 2: write_file(f->path, junk, size + 8); break;         /* long */
        case 3: {                                                   /* our magic, other ring */
            dispatchlog *l = open_ok(f->dir, &clean);
            dispatchlog_close(l, 1);
            int fd = open(f->path, O_RDWR);
            uint64_t slots = 1024;
            assert_true(fd >= 0);
            assert_int_equal(pwrite(fd, &slots, 8, 8), 8);
            assert_int_equal(pwrite(fd, junk, size - 64, 64), (ssize_t)(size - 64));
            close(fd);
            break;
        }
        }
        dispatchlog *l = open_ok(f->dir, &clean);
        assert_int_equal(file_size(f->path), FILE_SIZE);
        seen_log s = scan(l, 0);
        if (s.n != 0)
            fail_msg("variant %d: %zu entries read from a foreign file", variant, s.n);
        log_free(&s);
        dispatchlog_reset(l);
        note(l, 42, 1);
        dispatchlog_close(l, 0);
        l = open_ok(f->dir, &clean); /* and it works as a log afterwards */
        assert_int_equal(clean, 0);
        s = scan(l, 0);
        assert_int_equal(s.n, 1);
        assert_int_equal(s.id[0], 42);
        log_free(&s);
        dispatchlog_close(l, 1);
    }
    free(junk);
}

/* A log of the first layout (8-byte entries: row and attempt) is
 * converted in place: its entries and clean flag kept, host, start and
 * spacing unknown; a short read of it fails the open, with the reason. */
static void first_layout_converted(void **state)
{
    fixture *f = *state;
    size_t size = (size_t)V1_SIZE;
    uint64_t *v1 = calloc(1, size);
    assert_non_null(v1);
    v1[0] = 0x474f4c4443524c44ull; /* its magic */
    v1[1] = DISPATCHLOG_SLOTS;
    v1[2] = 0; /* not clean */
    v1[8 + 0] = (uint64_t)17 << 16 | 1;
    v1[8 + 1] = (uint64_t)23 << 16 | 4;
    v1[8 + DISPATCHLOG_SLOTS - 1] = (uint64_t)99 << 16 | 2;
    write_file(f->path, v1, size);
    free(v1);
    int clean;
    dispatchlog *l = open_ok(f->dir, &clean);
    assert_int_equal(clean, 0);
    assert_int_equal(file_size(f->path), FILE_SIZE);
    seen_log s = scan(l, 0);
    assert_int_equal(s.n, 3);
    const int64_t want_id[] = { 17, 23, 99 };
    const int want_attempt[] = { 1, 4, 2 };
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(s.id[i], want_id[i]);
        assert_int_equal(s.attempt[i], want_attempt[i]);
        assert_int_equal(s.e[i].host_key, 0);
        assert_int_equal(s.e[i].started_ms, 0);
        assert_int_equal(s.e[i].spacing_ms, -1);
    }
    log_free(&s);
    dispatchlog_close(l, 0);
    l = open_ok(f->dir, &clean); /* now of the new layout: read as it is */
    assert_int_equal(clean, 0);
    s = scan(l, 0);
    assert_int_equal(s.n, 3);
    log_free(&s);
    dispatchlog_close(l, 1);

    /* out of memory while reading the old entries: the open fails, the
     * file is left as it was */
    v1 = calloc(1, size);
    assert_non_null(v1);
    v1[0] = 0x474f4c4443524c44ull;
    v1[1] = DISPATCHLOG_SLOTS;
    v1[8] = (uint64_t)5 << 16 | 1;
    write_file(f->path, v1, size);
    free(v1);
    char err[256] = "";
    cr_alloc_fail_after(2); /* the handle, then the old entries */
    l = dispatchlog_open(f->dir, &clean, err, sizeof err);
    cr_alloc_fail_after(0);
    assert_null(l);
    assert_non_null(strstr(err, "out of memory"));
    assert_int_equal(file_size(f->path), V1_SIZE);
    l = open_ok(f->dir, &clean);
    s = scan(l, 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.id[0], 5);
    log_free(&s);
    dispatchlog_close(l, 1);
}

static void open_failures(void **state)
{
    fixture *f = *state;
    char missing[128], err[256] = "";
    int clean = 7;
    snprintf(missing, sizeof missing, "%s/no/such", f->dir);
    assert_null(dispatchlog_open(missing, &clean, err, sizeof err));
    assert_non_null(strstr(err, missing));
    assert_non_null(strstr(err, "dispatch.log"));

    err[0] = '\0';
    cr_alloc_fail_after(1);
    dispatchlog *l = dispatchlog_open(f->dir, &clean, err, sizeof err);
    cr_alloc_fail_after(0);
    assert_null(l);
    assert_non_null(strstr(err, "out of memory"));
}

/* A child notes starts until it is SIGKILLed: the parent's open is told
 * the last run did not end cleanly and finds every start the child made
 * before it said so, whole (each attempt matches its id) and without holes. */
static void survives_sigkill(void **state)
{
    fixture *f = *state;
    int fds[2], status, clean;
    pid_t pid;
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[256];
        int c;
        close(fds[0]);
        dispatchlog *l = dispatchlog_open(f->dir, &c, err, sizeof err);
        if (l == NULL)
            _exit(20);
        dispatchlog_reset(l);
        for (int64_t id = 1; id <= 1000; id++)
            note(l, id, (int)(id % 7) + 1);
        if (write(fds[1], "x", 1) != 1)
            _exit(21);
        /* and more, until killed (never wrapping the ring) */
        for (int64_t id = 1001;; id++)
            if (id < DISPATCHLOG_SLOTS / 2)
                note(l, id, (int)(id % 7) + 1);
    }
    close(fds[1]);
    char c;
    assert_int_equal(read(fds[0], &c, 1), 1);
    close(fds[0]);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);

    dispatchlog *l = open_ok(f->dir, &clean);
    assert_int_equal(clean, 0);
    seen_log s = scan(l, 0);
    assert_true(s.n >= 1000);
    for (size_t i = 0; i < s.n; i++) {
        if (s.id[i] != (int64_t)i + 1 || s.attempt[i] != (int)(s.id[i] % 7) + 1 ||
            !whole(&s.e[i]))
            fail_msg("entry %zu: id %lld attempt %d", i, (long long)s.id[i], s.attempt[i]);
    }
    printf("test_dispatchlog: %zu starts survived the SIGKILL\n", s.n);
    log_free(&s);
    dispatchlog_close(l, 1);
}

/* Threads noting at once: every start has a slot of its own. */
typedef struct noter {
    dispatchlog *l;
    int64_t base;
} noter;

static void *note_many(void *arg)
{
    noter *n = arg;
    for (int64_t i = 1; i <= 10000; i++)
        note(n->l, n->base + i, 1);
    return NULL;
}

static void threads_note_at_once(void **state)
{
    fixture *f = *state;
    int clean;
    dispatchlog *l = open_ok(f->dir, &clean);
    dispatchlog_reset(l);
    pthread_t t[4];
    noter n[4];
    for (int i = 0; i < 4; i++) {
        n[i] = (noter){ l, (int64_t)i * 100000 };
        assert_int_equal(pthread_create(&t[i], NULL, note_many, &n[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    seen_log s = scan(l, 0);
    assert_int_equal(s.n, 40000);
    size_t per[4] = { 0 };
    for (size_t i = 0; i < s.n; i++) {
        int64_t who = s.id[i] / 100000, k = s.id[i] % 100000;
        assert_true(who >= 0 && who < 4 && k >= 1 && k <= 10000);
        assert_true(whole(&s.e[i]));
        per[who]++;
    }
    for (int i = 0; i < 4; i++)
        assert_int_equal(per[i], 10000);
    log_free(&s);
    dispatchlog_close(l, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(new_log_is_clean_and_empty),
        T(note_then_scan),
        T(clean_flag_across_reopen),
        T(ring_keeps_the_newest),
        T(foreign_file_rebuilt),
        T(first_layout_converted),
        T(open_failures),
        T(survives_sigkill),
        T(threads_note_at_once),
#undef T
    };
    return cmocka_run_group_tests_name("dispatchlog", tests, NULL, NULL);
}
