/* tests/test_frontier: frontier/frontier over a real storage/db in a temp
 * state_dir. No network and no sleeping: time is the now_ms the test passes,
 * and a small event simulation plays the fetchers (jobs finish at start +
 * their response time, in time order).
 *
 * Why one file of about 1,700 lines: one test binary per module (STYLE.md),
 * and the cases share the env/db helpers and the event simulation at the
 * top; frontier/fqueue, hostheap and idset are covered through it. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "frontier/frontier.h"
#include "storage/db.h"

/* ---- environment: a state_dir, its db and a frontier -------------------- */

typedef struct env {
    char dir[64];
    char state[96];
    db *d;
    frontier *f;
    frontier_opts o;
} env;

static void rm_rf(const char *path)
{
    struct stat sb;
    DIR *dp;
    struct dirent *e;
    char sub[512];

    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        dp = opendir(path);
        while (dp != NULL && (e = readdir(dp)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_rf(sub);
        }
        if (dp != NULL)
            closedir(dp);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Options for fast tests: no robots, no delays, small backoff. */
static void fast_opts(frontier_opts *o)
{
    frontier_opts_defaults(o);
    o->obey_robots = false;
    o->delay_ms = 0;
    o->delay_factor = 0;
    o->backoff_ms = 1000;
    o->max_retry_after_s = 60;
}

static void env_frontier(env *e)
{
    char err[256];
    e->f = frontier_new(&e->o, e->d, err, sizeof(err));
    if (e->f == NULL)
        fail_msg("frontier_new: %s", err);
}

static env *env_open(const frontier_opts *o)
{
    env *e = calloc(1, sizeof(*e));
    char err[256];
    assert_non_null(e);
    snprintf(e->dir, sizeof(e->dir), "/tmp/crawld-frontier-XXXXXX");
    assert_non_null(mkdtemp(e->dir));
    snprintf(e->state, sizeof(e->state), "%s/state", e->dir);
    e->d = db_open(e->state, NULL, err, sizeof(err));
    if (e->d == NULL)
        fail_msg("db_open: %s", err);
    e->o = *o;
    env_frontier(e);
    return e;
}

static void env_close(env *e)
{
    frontier_free(e->f);
    assert_int_equal(db_close(e->d), 0);
    rm_rf(e->dir);
    free(e);
}

/* Inserts url (its host parsed from it) and pushes the new row. */
static int64_t add(env *e, const char *url, int depth, int kind)
{
    char host[256];
    const char *h = strstr(url, "://") + 3;
    size_t n = strcspn(h, ":/?");
    db_url u;
    int64_t id = 0;

    memcpy(host, h, n);
    host[n] = '\0';
    memset(&u, 0, sizeof(u));
    u.url = url;
    u.host = host;
    u.depth = depth;
    u.kind = kind;
    u.state = DB_STATE_QUEUED;
    assert_int_equal(db_insert_url_wait(e->d, &u, &id), 1);
    assert_true(frontier_push(e->f, id, url, strlen(url), host, depth, kind) >= 0);
    return id;
}

static int64_t addf(env *e, int depth, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int64_t addf(env *e, int depth, const char *fmt, ...)
{
    char url[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(url, sizeof(url), fmt, ap);
    va_end(ap);
    return add(e, url, depth, DB_KIND_NAVIGATION);
}

static frontier_outcome answer(int status, int64_t ms)
{
    frontier_outcome o;
    memset(&o, 0, sizeof(o));
    o.status = status;
    o.response_ms = ms;
    o.retry_after_s = -1;
    o.error = status > 0 ? FRONTIER_ERR_NONE : FRONTIER_ERR_NETWORK;
    return o;
}

static void next_job(env *e, int64_t now, frontier_job *job)
{
    int64_t wake = 0;
    int rc = frontier_next(e->f, now, job, &wake);
    if (rc != FRONTIER_JOB)
        fail_msg("frontier_next at %lld: %d (wake %lld), wanted a job", (long long)now, rc,
                 (long long)wake);
}

static int next_rc(env *e, int64_t now, int64_t *wake)
{
    frontier_job job;
    int rc = frontier_next(e->f, now, &job, wake);
    if (rc == FRONTIER_JOB)
        fail_msg("frontier_next at %lld: unexpected job %s", (long long)now, job.url);
    return rc;
}

static void done(env *e, frontier_job *job, int status, int64_t now)
{
    frontier_outcome o = answer(status, 10);
    assert_true(frontier_done(e->f, job, &o, now) >= 0);
}

static void robots_answer(env *e, frontier_job *job, int status, const char *body, int64_t now)
{
    frontier_outcome o = answer(status, 10);
    assert_true(job->is_robots);
    assert_int_equal(frontier_robots_done(e->f, job, &o, body, body ? strlen(body) : 0, now), 0);
}

/* Committed row counts per state. */
static void db_counts(env *e, int64_t c[DB_STATE_COUNT])
{
    char err[128];
    assert_int_equal(db_flush(e->d), 0);
    db_reader *rd = db_reader_open(e->d, err, sizeof(err));
    assert_non_null(rd);
    assert_int_equal(db_reader_count_by_state(rd, c), 0);
    db_reader_free(rd);
}

/* ---- an event simulation of fetchers ------------------------------------ */

typedef struct sim sim;
/* Decides how the job will end (outcome, body) when it starts. */
typedef void (*plan_fn)(sim *s, const frontier_job *job, frontier_outcome *o,
                        const char **body);

typedef struct flight {
    frontier_job job;
    frontier_outcome o;
    const char *body;
    int64_t end;
} flight;

struct sim {
    env *e;
    int64_t now;
    flight *fl;
    size_t n, cap;
    plan_fn plan;
    void *ud;
    size_t max_start; /* jobs started per instant at most; 0 = all ready */
    uint64_t rng;
    int64_t jobs, robots;
};

static uint64_t sim_rand(sim *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static void sim_init(sim *s, env *e, plan_fn plan, void *ud)
{
    memset(s, 0, sizeof(*s));
    s->e = e;
    s->now = 1000000;
    s->plan = plan;
    s->ud = ud;
    s->rng = 88172645463325252ull;
}

static void sim_finish(sim *s, size_t i)
{
    flight f = s->fl[i];
    s->fl[i] = s->fl[--s->n];
    if (f.job.is_robots)
        assert_int_equal(frontier_robots_done(s->e->f, &f.job, &f.o, f.body,
                                              f.body ? strlen(f.body) : 0, f.end), 0);
    else
        assert_true(frontier_done(s->e->f, &f.job, &f.o, f.end) >= 0);
}

/* Runs until the frontier is drained (or steps run out). Returns the final
 * frontier_next result. */
static int sim_run(sim *s, long max_steps)
{
    for (long step = 0; step < max_steps; step++) {
        int64_t wake = -1;
        int rc;
        size_t started = 0;
        for (;;) {
            frontier_job job;
            rc = frontier_next(s->e->f, s->now, &job, &wake);
            assert_true(rc >= 0);
            if (rc != FRONTIER_JOB)
                break;
            if (s->n == s->cap) {
                s->cap = s->cap ? s->cap * 2 : 64;
                s->fl = realloc(s->fl, s->cap * sizeof(*s->fl));
                assert_non_null(s->fl);
            }
            flight *f = &s->fl[s->n++];
            memset(f, 0, sizeof(*f));
            f->job = job;
            f->o = answer(200, 10);
            s->plan(s, &f->job, &f->o, &f->body);
            f->end = s->now + (f->o.response_ms > 0 ? f->o.response_ms : 0);
            if (job.is_robots)
                s->robots++;
            else
                s->jobs++;
            if (s->max_start > 0 && ++started >= s->max_start) {
                rc = FRONTIER_WAIT;
                wake = s->now + 1;
                break;
            }
        }
        if (rc == FRONTIER_DRAINED) {
            assert_int_equal(s->n, 0);
            return rc;
        }
        /* the next event: a job ends, or a host becomes ready */
        int64_t t = wake >= 0 ? wake : INT64_MAX;
        size_t first = SIZE_MAX;
        for (size_t i = 0; i < s->n; i++) {
            if (s->fl[i].end < t || (s->fl[i].end == t && first == SIZE_MAX)) {
                t = s->fl[i].end;
                first = i;
            }
        }
        if (t == INT64_MAX)
            fail_msg("stuck: nothing in flight and no wake time");
        if (t > s->now)
            s->now = t;
        if (first != SIZE_MAX && s->fl[first].end <= s->now)
            sim_finish(s, first);
    }
    return FRONTIER_WAIT;
}

static void sim_release(sim *s)
{
    for (size_t i = 0; i < s->n; i++)
        frontier_job_release(&s->fl[i].job);
    free(s->fl);
}

/* ---- robots.txt --------------------------------------------------------- */

static void robots_job_comes_first_per_host(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j1, j2, j3;
    int64_t wake;
    fast_opts(&o);
    o.obey_robots = true;
    env *e = env_open(&o);
    addf(e, 0, "http://a.test:8080/");
    addf(e, 1, "http://a.test:8080/x");
    addf(e, 0, "https://b.test/");

    next_job(e, 0, &j1);
    next_job(e, 0, &j2);
    assert_true(j1.is_robots && j2.is_robots);
    assert_int_equal(j1.id, 0);
    /* one robots.txt per host, at the host's origin */
    if (strcmp(j1.url, "http://a.test:8080/robots.txt") == 0)
        assert_string_equal(j2.url, "https://b.test/robots.txt");
    else
        assert_string_equal(j1.url, "https://b.test/robots.txt");
    /* nothing else until an answer comes */
    assert_int_equal(next_rc(e, 0, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, -1);

    frontier_job *ja = strcmp(j1.host, "a.test") == 0 ? &j1 : &j2;
    frontier_job *jb = ja == &j1 ? &j2 : &j1;
    robots_answer(e, ja, 404, NULL, 5);
    next_job(e, 5, &j3);
    assert_false(j3.is_robots);
    assert_string_equal(j3.url, "http://a.test:8080/");
    assert_int_equal(j3.attempt, 1);
    done(e, &j3, 200, 6);
    next_job(e, 6, &j3);
    assert_string_equal(j3.url, "http://a.test:8080/x");
    done(e, &j3, 200, 7);
    assert_int_equal(next_rc(e, 7, &wake), FRONTIER_WAIT); /* b.test still waits */
    robots_answer(e, jb, 200, "User-agent: *\nDisallow:\n", 8);
    next_job(e, 8, &j3);
    assert_string_equal(j3.url, "https://b.test/");
    done(e, &j3, 200, 9);
    assert_int_equal(next_rc(e, 9, &wake), FRONTIER_DRAINED);

    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.robots_jobs, 2);
    assert_int_equal(st.jobs, 3);
    assert_int_equal(st.robots_allowed, 3);
    env_close(e);
}

static void without_robots_urls_come_at_once(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    fast_opts(&o);
    env *e = env_open(&o);
    addf(e, 0, "http://a.test/");
    next_job(e, 0, &j);
    assert_false(j.is_robots);
    done(e, &j, 200, 1);
    env_close(e);
}

/* The cluster's fence: a host the gate refuses is not handed out (its URLs
 * wait, the frontier is not drained), and is asked again retry_ms later. */
static int gate_open[2]; /* a.test, b.test */
static int gate_calls;

static int test_gate(void *arg, const char *host)
{
    (void)arg;
    gate_calls++;
    return gate_open[host[0] == 'b'];
}

static void the_gate_holds_hosts_back_until_it_opens(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake = 0;
    fast_opts(&o);
    env *e = env_open(&o);
    gate_open[0] = 1;
    gate_open[1] = 0;
    gate_calls = 0;
    frontier_set_gate(e->f, test_gate, NULL, 50);
    addf(e, 0, "http://a.test/");
    addf(e, 0, "http://b.test/");
    next_job(e, 0, &j);
    assert_string_equal(j.host, "a.test");
    done(e, &j, 200, 1);
    /* b.test is refused: nothing to hand out, but not drained either */
    assert_int_equal(frontier_next(e->f, 2, &j, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 52);
    assert_true(gate_calls >= 2);
    /* before retry_ms it is not even asked; then it is, and once open it goes */
    int calls = gate_calls;
    gate_open[1] = 1;
    assert_int_equal(frontier_next(e->f, 30, &j, &wake), FRONTIER_WAIT);
    assert_int_equal(gate_calls, calls);
    next_job(e, 52, &j);
    assert_string_equal(j.host, "b.test");
    done(e, &j, 200, 53);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_true(st.gated >= 1);
    assert_int_equal(frontier_next(e->f, 54, &j, &wake), FRONTIER_DRAINED);
    env_close(e);
}

static void disallowed_urls_are_never_handed_out(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake, c[DB_STATE_COUNT];
    fast_opts(&o);
    o.obey_robots = true;
    o.robots_agent = "crawld/1.0";
    env *e = env_open(&o);
    addf(e, 0, "http://a.test/");
    addf(e, 1, "http://a.test/private/1.html");
    addf(e, 1, "http://a.test/private/public.html");
    addf(e, 1, "http://a.test/hidden/%%62locked.html");
    addf(e, 1, "http://a.test/private/2.html?x=1");
    addf(e, 1, "http://a.test/search?q=private");
    next_job(e, 0, &j);
    robots_answer(e, &j,
                  200,
                  "User-agent: crawld\nDisallow: /private/\nAllow: /private/public.html\n"
                  "Disallow: /hidden/blocked.html\n\nUser-agent: *\nDisallow: /\n",
                  1);
    int n = 0;
    int64_t now = 2;
    while (frontier_next(e->f, now, &j, &wake) == FRONTIER_JOB) {
        if (strstr(j.url, "/private/") && !strstr(j.url, "public"))
            fail_msg("disallowed URL handed out: %s", j.url);
        if (strstr(j.url, "/hidden/"))
            fail_msg("disallowed URL handed out: %s", j.url);
        n++;
        done(e, &j, 200, now++);
    }
    assert_int_equal(n, 3); /* /, public.html, /search */
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.robots_disallowed, 3);
    assert_int_equal(st.robots_allowed, 3);
    frontier_host_stats hs;
    assert_int_equal(frontier_host_stats_get(e->f, "a.test", &hs), 0);
    assert_int_equal(hs.robots_disallowed, 3);
    assert_int_equal(hs.robots_allowed, 3);
    assert_int_equal(hs.robots_state, FRONTIER_ROBOTS_RULES);
    assert_int_equal(frontier_host_stats_get(e->f, "z.test", &hs), -ENOENT);
    db_counts(e, c);
    assert_int_equal(c[DB_STATE_EXCLUDED], 3);
    assert_int_equal(c[DB_STATE_DONE], 3);
    env_close(e);
}

/* The job's URL is the fetch form, as the page wrote it: robots.txt rules
 * match it (RFC 9309 matches the URL requested), not the key with its
 * sorted query; rows read back from SQLite come with their fetch form. */
static void robots_matches_the_fetch_form(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    fast_opts(&o);
    o.obey_robots = true;
    o.max_in_memory = 1; /* the second row waits in SQLite: a refill */
    env *e = env_open(&o);
    static const struct {
        const char *key, *fetch;
    } rows[] = {
        { "http://a.test/p?a=2&b=1", "http://a.test/p?b=1&a=2" },  /* disallowed as written */
        { "http://a.test/q?a=2&b=1", "http://a.test/q?b=1&a=2" },  /* allowed as written */
        { "http://a.test/r?x=1", "http://a.test/r?x=1&utm_source=z" },
    };
    for (size_t i = 0; i < 3; i++) {
        db_url u = { .url = rows[i].key, .fetch_url = rows[i].fetch, .host = "a.test",
                     .depth = 1, .state = DB_STATE_QUEUED };
        int64_t id = 0;
        assert_int_equal(db_insert_url_wait(e->d, &u, &id), 1);
        assert_true(frontier_push(e->f, id, rows[i].fetch, strlen(rows[i].fetch), "a.test", 1,
                                  DB_KIND_NAVIGATION) >= 0);
    }
    next_job(e, 0, &j);
    robots_answer(e, &j, 200,
                  "User-agent: *\nDisallow: /p?b=1&a=2\nDisallow: /q?a=2\nDisallow: /r\n"
                  "Allow: /r?x=1&utm\n",
                  1);
    int n = 0;
    while (frontier_next(e->f, 2 + n, &j, &wake) == FRONTIER_JOB) {
        if (strcmp(j.url, rows[1].fetch) != 0 && strcmp(j.url, rows[2].fetch) != 0)
            fail_msg("unexpected job %s", j.url);
        n++;
        done(e, &j, 200, 2 + n);
    }
    assert_int_equal(n, 2);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.robots_disallowed, 1);
    assert_true(st.refill_rows >= 1);
    env_close(e);
}

static void unreachable_robots_makes_urls_wait_then_disallows_all(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake, c[DB_STATE_COUNT];
    fast_opts(&o);
    o.obey_robots = true;
    o.max_attempts = 3;
    o.backoff_ms = 1000;
    env *e = env_open(&o);
    addf(e, 0, "http://d.test/");
    addf(e, 1, "http://d.test/a");

    next_job(e, 0, &j);
    robots_answer(e, &j, 500, "oops", 10);
    /* URLs wait, not excluded; robots.txt again after the backoff */
    assert_int_equal(next_rc(e, 10, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 1010);
    assert_int_equal(next_rc(e, 1009, &wake), FRONTIER_WAIT);
    next_job(e, 1010, &j);
    assert_true(j.is_robots);
    assert_int_equal(j.attempt, 2);
    frontier_outcome out = answer(0, -1); /* no answer at all */
    assert_int_equal(frontier_robots_done(e->f, &j, &out, NULL, 0, 1020), 0);
    assert_int_equal(next_rc(e, 1020, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 3020); /* 2 × backoff */
    frontier_host_stats hs;
    assert_int_equal(frontier_host_stats_get(e->f, "d.test", &hs), 0);
    assert_int_equal(hs.robots_state, FRONTIER_ROBOTS_RETRYING);
    next_job(e, 3020, &j);
    assert_true(j.is_robots);
    robots_answer(e, &j, 503, NULL, 3030);
    /* third failure: disallow all; a 503 also pauses the host (no
     * Retry-After: 4 × backoff), then the URLs are excluded, none fetched */
    assert_int_equal(next_rc(e, 3030, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 7030);
    assert_int_equal(next_rc(e, 7030, &wake), FRONTIER_DRAINED);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.robots_unavailable, 2);
    assert_int_equal(st.robots_disallowed, 0);
    assert_int_equal(st.robots_fetch_failures, 3);
    assert_int_equal(st.jobs, 0);
    db_counts(e, c);
    assert_int_equal(c[DB_STATE_EXCLUDED], 2);
    env_close(e);
}

static void robots_is_refetched_after_the_cache_time(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    fast_opts(&o);
    o.obey_robots = true;
    o.robots_cache_s = 60;
    env *e = env_open(&o);
    addf(e, 0, "http://a.test/1");
    next_job(e, 0, &j);
    robots_answer(e, &j, 200, "User-agent: *\nDisallow: /2\n", 1);
    next_job(e, 1, &j);
    assert_string_equal(j.url, "http://a.test/1");
    done(e, &j, 200, 2);
    addf(e, 0, "http://a.test/2");
    addf(e, 0, "http://a.test/3");
    /* before expiry /2 is disallowed and /3 comes */
    next_job(e, 3, &j);
    assert_string_equal(j.url, "http://a.test/3");
    done(e, &j, 200, 4);
    addf(e, 0, "http://a.test/4");
    /* at 60 s the rules expire: a robots job first, new rules apply */
    next_job(e, 60001, &j);
    assert_true(j.is_robots);
    assert_int_equal(next_rc(e, 60001, &wake), FRONTIER_WAIT);
    robots_answer(e, &j, 200, "User-agent: *\nDisallow: /4\n", 60002);
    assert_int_equal(next_rc(e, 60002, &wake), FRONTIER_DRAINED);
    /* a failed refetch keeps the old rules in force meanwhile */
    addf(e, 0, "http://a.test/5");
    next_job(e, 130000, &j);
    assert_true(j.is_robots);
    robots_answer(e, &j, 500, NULL, 130001);
    next_job(e, 130001, &j);
    assert_string_equal(j.url, "http://a.test/5");
    done(e, &j, 200, 130002);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.robots_jobs, 3);
    assert_int_equal(st.robots_disallowed, 2);
    env_close(e);
}

/* ---- politeness --------------------------------------------------------- */

typedef struct spacing_rec {
    int64_t last_start[3];
    int64_t last_ms[3];     /* response time of the latest finished request */
    int64_t pending_ms[3];  /* response time of the one in flight */
    long crawl_delay[3];
    long checked;
} spacing_rec;

static int host_index(const char *host) { return host[0] - 'a'; }

static void plan_spacing(sim *s, const frontier_job *job, frontier_outcome *o, const char **body)
{
    spacing_rec *r = s->ud;
    int h = host_index(job->host);
    int64_t need = s->e->o.delay_ms;
    if (r->crawl_delay[h] > need)
        need = r->crawl_delay[h];
    if (r->last_ms[h] >= 0) {
        int64_t a = (int64_t)(s->e->o.delay_factor * (double)r->last_ms[h]);
        if (a > s->e->o.max_delay_ms)
            a = s->e->o.max_delay_ms;
        if (a > need)
            need = a;
    }
    if (r->last_start[h] >= 0) {
        if (s->now - r->last_start[h] < need)
            fail_msg("%s: requests %lld ms apart, need %lld", job->host,
                     (long long)(s->now - r->last_start[h]), (long long)need);
        r->checked++;
    }
    r->last_start[h] = s->now;
    /* response times vary; the frontier learns one when the job ends, so
     * the model takes it as known from the next start (max_per_host 1) */
    o->response_ms = (int64_t)(sim_rand(s) % 4000);
    r->last_ms[h] = o->response_ms;
    if (job->is_robots) {
        o->status = 200;
        *body = h == 1 ? "User-agent: *\nCrawl-delay: 3\n" : "User-agent: *\nAllow: /\n";
        r->crawl_delay[h] = h == 1 ? 3000 : -1;
    }
}

static void request_spacing_respects_delay_crawl_delay_and_adaptive_term(void **state)
{
    (void)state;
    frontier_opts o;
    spacing_rec r;
    sim s;
    fast_opts(&o);
    o.obey_robots = true;
    o.delay_ms = 1000;
    o.delay_factor = 1.5;
    o.max_delay_ms = 4000;
    env *e = env_open(&o);
    for (int i = 0; i < 40; i++) {
        addf(e, i % 3, "http://a.test/%d", i);
        addf(e, i % 3, "http://b.test/%d", i);
        addf(e, i % 3, "http://c.test/%d", i);
    }
    for (int h = 0; h < 3; h++) {
        r.last_start[h] = -1;
        r.last_ms[h] = -1;
        r.crawl_delay[h] = -1;
    }
    r.checked = 0;
    sim_init(&s, e, plan_spacing, &r);
    assert_int_equal(sim_run(&s, 100000), FRONTIER_DRAINED);
    assert_int_equal(s.jobs, 120);
    assert_int_equal(s.robots, 3);
    assert_int_equal(r.checked, 120); /* every start after the first, per host */
    frontier_stats st;
    frontier_host_stats hs;
    frontier_get_stats(e->f, &st);
    assert_true(st.politeness_waits > 0);
    assert_int_equal(frontier_host_stats_get(e->f, "b.test", &hs), 0);
    assert_int_equal(hs.crawl_delay_ms, 3000);
    assert_true(hs.politeness_waits > 0);
    sim_release(&s);
    env_close(e);
}

static void spacing_exactly_at_the_bound(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    fast_opts(&o);
    o.delay_ms = 1000;
    o.delay_factor = 2.0;
    o.max_delay_ms = 5000;
    env *e = env_open(&o);
    for (int i = 0; i < 4; i++)
        addf(e, 0, "http://a.test/%d", i);
    /* the spacing runs from the end of each response */
    next_job(e, 0, &j);
    frontier_outcome out = answer(200, 2000); /* adaptive: 4000 */
    assert_int_equal(frontier_done(e->f, &j, &out, 2000), FRONTIER_DONE_OK);
    assert_int_equal(next_rc(e, 5999, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 6000);
    next_job(e, 6000, &j);
    out = answer(200, 100); /* adaptive 200 < delay: 1000 */
    assert_int_equal(frontier_done(e->f, &j, &out, 6100), FRONTIER_DONE_OK);
    assert_int_equal(next_rc(e, 7099, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 7100);
    next_job(e, 7100, &j);
    out = answer(200, 60000); /* adaptive capped by max_delay_ms */
    assert_int_equal(frontier_done(e->f, &j, &out, 67100), FRONTIER_DONE_OK);
    assert_int_equal(next_rc(e, 72099, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 72100);
    next_job(e, 72100, &j);
    frontier_host_stats hs;
    assert_int_equal(frontier_host_stats_get(e->f, "a.test", &hs), 0);
    assert_int_equal(hs.delay_ms, 5000);
    assert_int_equal(hs.next_ok_ms, 77100);
    done(e, &j, 200, 72101);
    env_close(e);
}

typedef struct conc_rec {
    int in_flight[64];
    int peak[64];
} conc_rec;

static void plan_conc(sim *s, const frontier_job *job, frontier_outcome *o, const char **body)
{
    conc_rec *r = s->ud;
    int h = atoi(job->host + 1);
    (void)body;
    /* count starts; the finish is counted by the wrapper below */
    r->in_flight[h]++;
    if (r->in_flight[h] > r->peak[h])
        r->peak[h] = r->in_flight[h];
    if (r->in_flight[h] > s->e->o.max_per_host)
        fail_msg("%s: %d in flight", job->host, r->in_flight[h]);
    o->response_ms = 1 + (int64_t)(sim_rand(s) % 50);
}

static void max_per_host_is_respected_across_many_hosts(void **state)
{
    (void)state;
    frontier_opts o;
    conc_rec r;
    sim s;
    fast_opts(&o);
    o.max_per_host = 3;
    env *e = env_open(&o);
    for (int i = 0; i < 40 * 30; i++)
        addf(e, 0, "http://h%d.test/%d", i % 40, i);
    memset(&r, 0, sizeof(r));
    sim_init(&s, e, plan_conc, &r);
    /* run by hand to decrement on finish */
    long steps = 0;
    for (;;) {
        int64_t wake;
        frontier_job job;
        int rc;
        while ((rc = frontier_next(e->f, s.now, &job, &wake)) == FRONTIER_JOB) {
            if (s.n == s.cap) {
                s.cap = s.cap ? s.cap * 2 : 64;
                s.fl = realloc(s.fl, s.cap * sizeof(*s.fl));
            }
            flight *f = &s.fl[s.n++];
            memset(f, 0, sizeof(*f));
            f->job = job;
            f->o = answer(200, 1);
            plan_conc(&s, &job, &f->o, &f->body);
            f->end = s.now + f->o.response_ms;
            s.jobs++;
        }
        if (rc == FRONTIER_DRAINED)
            break;
        assert_int_equal(rc, FRONTIER_WAIT);
        frontier_stats st;
        frontier_get_stats(e->f, &st);
        assert_int_equal(st.in_flight, (int64_t)s.n);
        assert_true(s.n <= 40 * 3);
        size_t first = 0;
        for (size_t i = 1; i < s.n; i++)
            if (s.fl[i].end < s.fl[first].end)
                first = i;
        assert_true(s.n > 0);
        s.now = s.fl[first].end;
        r.in_flight[atoi(s.fl[first].job.host + 1)]--;
        sim_finish(&s, first);
        assert_true(++steps < 100000);
    }
    assert_int_equal(s.jobs, 1200);
    int at_max = 0;
    for (int h = 0; h < 40; h++)
        at_max += r.peak[h] == 3;
    assert_int_equal(at_max, 40); /* every host did use its 3 slots */
    sim_release(&s);
    env_close(e);
}

/* ---- errors: pauses and retries ----------------------------------------- */

static void status_503_and_429_pause_until_retry_after(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    fast_opts(&o);
    o.max_retry_after_s = 100;
    o.backoff_ms = 2000;
    env *e = env_open(&o);
    int64_t id503 = addf(e, 0, "http://a.test/status/503");
    addf(e, 1, "http://a.test/1");
    addf(e, 1, "http://a.test/2");
    addf(e, 0, "http://b.test/");

    next_job(e, 0, &j);
    if (strcmp(j.host, "b.test") == 0) { /* either host may go first */
        done(e, &j, 200, 0);
        next_job(e, 0, &j);
    }
    assert_int_equal(j.id, id503);
    frontier_outcome out = answer(503, 5);
    out.retry_after_s = 30;
    assert_int_equal(frontier_done(e->f, &j, &out, 10), FRONTIER_DONE_RETRY);
    /* what the daemon logs for the next run: the pause, from now */
    assert_int_equal(frontier_host_pause_ms(e->f, "a.test", 10), 30000);
    assert_int_equal(frontier_host_pause_ms(e->f, "a.test", 20010), 10000);
    assert_int_equal(frontier_host_pause_ms(e->f, "b.test", 10), 0);
    assert_int_equal(frontier_host_pause_ms(e->f, "nobody.test", 10), 0);
    /* a.test is paused: only b.test may go */
    frontier_job jb;
    int rc = frontier_next(e->f, 10, &jb, &wake);
    if (rc == FRONTIER_JOB) {
        assert_string_equal(jb.host, "b.test");
        done(e, &jb, 200, 11);
    }
    assert_int_equal(next_rc(e, 11, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 30010);
    assert_int_equal(next_rc(e, 30009, &wake), FRONTIER_WAIT);
    /* resumed: the 503 URL first (its key is the smallest), attempt 2 */
    next_job(e, 30010, &j);
    assert_int_equal(j.id, id503);
    assert_int_equal(j.attempt, 2);
    out = answer(429, 5); /* no Retry-After: the backoff, 2 × 2000 */
    assert_int_equal(frontier_done(e->f, &j, &out, 30020), FRONTIER_DONE_RETRY);
    assert_int_equal(next_rc(e, 30020, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 34020);
    next_job(e, 34020, &j);
    assert_int_equal(j.id, id503);
    assert_int_equal(j.attempt, 3);
    out = answer(503, 5);
    out.retry_after_s = 100000; /* capped at 100 s */
    assert_int_equal(frontier_done(e->f, &j, &out, 34030), FRONTIER_DONE_FAILED);
    assert_int_equal(next_rc(e, 34030, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 134030);
    frontier_host_stats hs;
    assert_int_equal(frontier_host_stats_get(e->f, "a.test", &hs), 0);
    assert_int_equal(hs.paused_until_ms, 134030);
    next_job(e, 134030, &j);
    assert_string_equal(j.url, "http://a.test/1");
    done(e, &j, 200, 134031);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.retry_after_pauses, 3);
    assert_int_equal(st.retries, 2);
    assert_int_equal(st.failed, 1);
    env_close(e);
}

static void server_errors_retry_with_exponential_backoff_then_fail(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake, c[DB_STATE_COUNT];
    fast_opts(&o);
    o.max_attempts = 4;
    o.backoff_ms = 1000;
    env *e = env_open(&o);
    int64_t id = addf(e, 0, "http://a.test/status/500");
    int64_t t = 0;
    int64_t expect_wait[] = { 1000, 2000, 4000 };
    for (int attempt = 1; attempt <= 4; attempt++) {
        next_job(e, t, &j);
        assert_int_equal(j.id, id);
        assert_int_equal(j.attempt, attempt);
        frontier_outcome out = answer(attempt == 2 ? 0 : 500, 5);
        int rc = frontier_done(e->f, &j, &out, t);
        if (attempt < 4) {
            assert_int_equal(rc, FRONTIER_DONE_RETRY);
            assert_int_equal(next_rc(e, t, &wake), FRONTIER_WAIT);
            assert_int_equal(wake, t + expect_wait[attempt - 1]);
            assert_int_equal(next_rc(e, wake - 1, &wake), FRONTIER_WAIT);
            t = wake;
        } else {
            assert_int_equal(rc, FRONTIER_DONE_FAILED);
        }
    }
    assert_int_equal(next_rc(e, t, &wake), FRONTIER_DRAINED);
    /* the row is failed with the reason */
    db_counts(e, c);
    assert_int_equal(c[DB_STATE_FAILED], 1);
    char err[128];
    db_reader *rd = db_reader_open(e->d, err, sizeof(err));
    assert_non_null(rd);
    db_reader_free(rd);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.retries, 3);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.pages, 1); /* retries are the same page */
    assert_int_equal(st.jobs, 4);
    env_close(e);
}

static void fatal_errors_and_client_errors_are_final(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake, c[DB_STATE_COUNT];
    fast_opts(&o);
    env *e = env_open(&o);
    addf(e, 0, "http://a.test/1");
    addf(e, 0, "http://a.test/2");
    addf(e, 0, "http://a.test/3");
    next_job(e, 0, &j);
    frontier_outcome out = answer(0, -1);
    out.error = FRONTIER_ERR_FATAL;
    out.error_text = "protocol error";
    assert_int_equal(frontier_done(e->f, &j, &out, 1), FRONTIER_DONE_FAILED);
    next_job(e, 1, &j);
    out = answer(404, 5);
    assert_int_equal(frontier_done(e->f, &j, &out, 2), FRONTIER_DONE_OK);
    next_job(e, 2, &j);
    out = answer(301, 5);
    assert_int_equal(frontier_done(e->f, &j, &out, 3), FRONTIER_DONE_OK);
    assert_int_equal(next_rc(e, 3, &wake), FRONTIER_DRAINED);
    db_counts(e, c);
    assert_int_equal(c[DB_STATE_FAILED], 1);
    assert_int_equal(c[DB_STATE_DONE], 2);
    env_close(e);
}

static void a_host_that_keeps_failing_is_paused_then_given_up(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake, c[DB_STATE_COUNT];
    fast_opts(&o);
    o.max_attempts = 2;
    o.backoff_ms = 1000;
    o.host_max_failures = 3;
    env *e = env_open(&o);
    for (int i = 0; i < 20; i++)
        addf(e, 0, "http://dead.test/%d", i);
    int64_t t = 0;
    int requests = 0;
    int pauses_seen = 0;
    for (;;) {
        int rc = frontier_next(e->f, t, &j, &wake);
        if (rc == FRONTIER_DRAINED)
            break;
        if (rc == FRONTIER_WAIT) {
            assert_true(wake > t);
            t = wake;
            continue;
        }
        requests++;
        frontier_outcome out = answer(0, -1); /* connection refused */
        assert_true(frontier_done(e->f, &j, &out, t) >= 0);
        frontier_host_stats hs;
        assert_int_equal(frontier_host_stats_get(e->f, "dead.test", &hs), 0);
        if (hs.paused_until_ms > t)
            pauses_seen++;
        assert_true(requests < 100);
    }
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    /* pauses after requests 3 and 6 (1 s, 2 s); given up at the 9th failure */
    assert_int_equal(requests, 9);
    assert_int_equal(st.failure_pauses, 2);
    assert_int_equal(st.hosts_given_up, 1);
    assert_true(pauses_seen >= 2);
    db_counts(e, c);
    assert_int_equal(c[DB_STATE_FAILED], 20); /* nothing lost, nothing left */
    assert_int_equal(c[DB_STATE_QUEUED], 0);
    env_close(e);
}

/* ---- order, memory, drain ----------------------------------------------- */

static void order_is_depth_then_discovery(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    fast_opts(&o);
    env *e = env_open(&o);
    int depths[] = { 2, 0, 1, 0, 2, 1, 3, 0 };
    int64_t ids[8];
    for (int i = 0; i < 8; i++)
        ids[i] = addf(e, depths[i], "http://a.test/%d", i);
    int want[] = { 1, 3, 7, 2, 5, 0, 4, 6 };
    for (int k = 0; k < 8; k++) {
        next_job(e, k, &j);
        assert_int_equal(j.id, ids[want[k]]);
        assert_int_equal(j.depth, depths[want[k]]);
        done(e, &j, 200, k);
    }
    assert_int_equal(next_rc(e, 9, &wake), FRONTIER_DRAINED);
    env_close(e);
}

static void ready_hosts_go_shallowest_first(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    fast_opts(&o);
    env *e = env_open(&o);
    addf(e, 3, "http://a.test/deep");
    addf(e, 1, "http://b.test/shallow");
    addf(e, 2, "http://c.test/mid");
    next_job(e, 0, &j);
    assert_string_equal(j.host, "b.test");
    done(e, &j, 200, 0);
    next_job(e, 0, &j);
    assert_string_equal(j.host, "c.test");
    done(e, &j, 200, 0);
    next_job(e, 0, &j);
    assert_string_equal(j.host, "a.test");
    done(e, &j, 200, 0);
    env_close(e);
}

static void shallower_urls_pushed_when_full_still_come_first(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    fast_opts(&o);
    o.max_in_memory = 10;
    env *e = env_open(&o);
    for (int i = 0; i < 30; i++)
        addf(e, 3, "http://a.test/d3/%d", i);
    for (int i = 0; i < 5; i++)
        addf(e, 1, "http://a.test/d1/%d", i);
    for (int i = 0; i < 10; i++)
        addf(e, 2, "http://b.test/d2/%d", i);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.mem_entries, 10);
    assert_int_equal(st.pushes_dropped, 35);
    /* a.test: the five depth-1 URLs first, then depth 3 in id order */
    int last_depth[2] = { -1, -1 };
    int64_t last_id[2] = { 0, 0 };
    int n = 0;
    int64_t t = 0;
    while (frontier_next(e->f, t, &j, &wake) == FRONTIER_JOB) {
        int h = j.host[0] - 'a';
        if (j.depth < last_depth[h] || (j.depth == last_depth[h] && j.id <= last_id[h]))
            fail_msg("%s: %s (depth %d) after depth %d", j.host, j.url, j.depth, last_depth[h]);
        last_depth[h] = j.depth;
        last_id[h] = j.id;
        n++;
        done(e, &j, 200, t++);
        frontier_get_stats(e->f, &st);
        assert_true(st.mem_entries <= 10);
    }
    assert_int_equal(n, 45);
    frontier_get_stats(e->f, &st);
    assert_true(st.mem_peak <= 10);
    assert_true(st.refills > 0);
    env_close(e);
}

static void a_starved_host_takes_room_from_the_largest(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    fast_opts(&o);
    o.max_in_memory = 10;
    env *e = env_open(&o);
    int64_t a[12], b[6];
    for (int i = 0; i < 12; i++) /* a.test fills memory */
        a[i] = addf(e, 1, "http://a.test/%d", i);
    for (int i = 0; i < 6; i++) /* b.test's all stay in SQLite */
        b[i] = addf(e, 0, "http://b.test/%d", i);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.mem_entries, 10);
    /* b.test is shallower: it goes first and takes its share (10 / 2)
     * from a.test's tail */
    next_job(e, 0, &j);
    assert_int_equal(j.id, b[0]);
    done(e, &j, 200, 0);
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.evictions, 5);
    assert_true(st.mem_entries <= 10);
    frontier_host_stats hs;
    assert_int_equal(frontier_host_stats_get(e->f, "a.test", &hs), 0);
    assert_int_equal(hs.queued_mem, 5);
    assert_true(hs.more_in_db);
    /* then everything, once, in order per host */
    int na = 0, nb = 1;
    for (int64_t t = 1; frontier_next(e->f, t, &j, &wake) == FRONTIER_JOB; t++) {
        if (strcmp(j.host, "a.test") == 0)
            assert_int_equal(j.id, a[na++]);
        else
            assert_int_equal(j.id, b[nb++]);
        done(e, &j, 200, t);
        frontier_get_stats(e->f, &st);
        assert_true(st.mem_entries <= 10);
    }
    assert_int_equal(na, 12);
    assert_int_equal(nb, 6);
    frontier_get_stats(e->f, &st);
    assert_true(st.mem_peak <= 10);
    env_close(e);
}

static void drained_only_when_nothing_is_queued_or_in_flight(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake = 0;
    fast_opts(&o);
    env *e = env_open(&o);
    assert_int_equal(next_rc(e, 0, &wake), FRONTIER_DRAINED);
    assert_int_equal(wake, -1);
    addf(e, 0, "http://a.test/");
    next_job(e, 0, &j);
    assert_int_equal(next_rc(e, 0, &wake), FRONTIER_WAIT); /* one in flight */
    assert_int_equal(wake, -1);
    done(e, &j, 200, 1);
    assert_int_equal(next_rc(e, 1, &wake), FRONTIER_DRAINED);
    /* a push after the drain wakes it up (daemon mode) */
    addf(e, 1, "http://a.test/more");
    next_job(e, 2, &j);
    frontier_outcome out = answer(500, 1);
    assert_int_equal(frontier_done(e->f, &j, &out, 2), FRONTIER_DONE_RETRY);
    /* a retry waiting is not drained */
    assert_int_equal(next_rc(e, 2, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 1002);
    next_job(e, wake, &j);
    done(e, &j, 200, 1003);
    assert_int_equal(next_rc(e, 1003, &wake), FRONTIER_DRAINED);
    env_close(e);
}

static void pause_and_resume(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j, j2;
    int64_t wake;
    fast_opts(&o);
    o.max_per_host = 2;
    env *e = env_open(&o);
    addf(e, 0, "http://a.test/1");
    addf(e, 0, "http://a.test/2");
    addf(e, 0, "http://a.test/3");
    next_job(e, 0, &j);
    frontier_pause(e->f);
    assert_int_equal(next_rc(e, 100, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, -1);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_true(st.paused);
    done(e, &j, 200, 101); /* outcomes still recorded while paused */
    assert_int_equal(next_rc(e, 102, &wake), FRONTIER_WAIT);
    frontier_resume(e->f);
    next_job(e, 103, &j);
    next_job(e, 103, &j2);
    done(e, &j, 200, 104);
    done(e, &j2, 200, 104);
    assert_int_equal(next_rc(e, 105, &wake), FRONTIER_DRAINED);
    frontier_get_stats(e->f, &st);
    assert_false(st.paused);
    assert_int_equal(st.done, 3);
    env_close(e);
}

static void a_returned_job_comes_back(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake, c[DB_STATE_COUNT];
    fast_opts(&o);
    o.obey_robots = true;
    env *e = env_open(&o);
    int64_t id = addf(e, 0, "http://a.test/");
    next_job(e, 0, &j);
    assert_true(j.is_robots);
    assert_int_equal(frontier_return(e->f, &j), 0);
    next_job(e, 1, &j);
    assert_true(j.is_robots); /* asked again */
    robots_answer(e, &j, 404, NULL, 2);
    next_job(e, 3, &j);
    assert_int_equal(j.id, id);
    assert_int_equal(frontier_return(e->f, &j), 0);
    assert_null(j.url);
    db_counts(e, c);
    assert_int_equal(c[DB_STATE_QUEUED], 1);
    next_job(e, 4, &j);
    assert_int_equal(j.id, id);
    assert_int_equal(j.attempt, 1); /* no attempt counted */
    done(e, &j, 200, 5);
    assert_int_equal(next_rc(e, 5, &wake), FRONTIER_DRAINED);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.pages, 1);
    env_close(e);
}

static void bad_calls_are_refused(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    char err[128];
    fast_opts(&o);
    env *e = env_open(&o);
    assert_int_equal(frontier_push(e->f, 0, "http://a.test/", 14, "a.test", 0, 0), -EINVAL);
    assert_int_equal(frontier_push(e->f, 1, "http://a.test/", 14, NULL, 0, 0), -EINVAL);
    assert_int_equal(frontier_push(e->f, 1, "http://a.test/", 14, "a.test", -1, 0), -EINVAL);
    assert_int_equal(frontier_push(e->f, 1, "http://a.test/", 14, "a.test", 0, 99), -EINVAL);
    memset(&j, 0, sizeof(j));
    frontier_outcome out = answer(200, 1);
    assert_int_equal(frontier_done(e->f, &j, &out, 0), -EINVAL);
    j.url = (char *)"x";
    j.host = "nowhere.test";
    j.id = 5;
    assert_int_equal(frontier_done(e->f, &j, &out, 0), -EINVAL);
    assert_int_equal(frontier_return(e->f, &j), -EINVAL);
    assert_int_equal(frontier_robots_done(e->f, &j, &out, NULL, 0, 0), -EINVAL);
    o.max_per_host = 0;
    assert_null(frontier_new(&o, e->d, err, sizeof(err)));
    assert_non_null(strstr(err, "invalid"));
    env_close(e);
}

/* ---- limits -------------------------------------------------------------- */

static void page_limits_stop_new_urls(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    fast_opts(&o);
    o.max_pages = 7;
    o.max_pages_per_host = 3;
    env *e = env_open(&o);
    for (int i = 0; i < 10; i++) {
        addf(e, 0, "http://a.test/%d", i);
        addf(e, 0, "http://b.test/%d", i);
        addf(e, 0, "http://c.test/%d", i);
    }
    int per[3] = { 0, 0, 0 }, n = 0;
    int64_t t = 0;
    while (frontier_next(e->f, t, &j, &wake) == FRONTIER_JOB) {
        per[j.host[0] - 'a']++;
        n++;
        done(e, &j, n == 1 ? 500 : 200, t++); /* the first one is retried */
    }
    assert_int_equal(n, 7); /* the limit; the retry waits for its backoff */
    assert_true(per[0] <= 3 && per[1] <= 3 && per[2] <= 3);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.pages, 7);
    assert_true(st.limit_reached);
    assert_true(st.limit_skipped > 0);
    assert_int_equal(next_rc(e, t, &wake), FRONTIER_WAIT);
    /* the retry still runs after the limit; then the crawl is over */
    next_job(e, wake, &j);
    assert_int_equal(j.attempt, 2);
    done(e, &j, 200, wake);
    assert_int_equal(next_rc(e, wake, &wake), FRONTIER_DRAINED);
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.pages, 7);
    assert_int_equal(st.jobs, 8);
    env_close(e);
}

static void per_host_limit_leaves_other_hosts_running(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    fast_opts(&o);
    o.max_pages_per_host = 2;
    env *e = env_open(&o);
    for (int i = 0; i < 5; i++) {
        addf(e, 0, "http://a.test/%d", i);
        addf(e, 0, "http://b.test/%d", i);
    }
    int n = 0;
    while (frontier_next(e->f, n, &j, &wake) == FRONTIER_JOB) {
        n++;
        done(e, &j, 200, n);
    }
    assert_int_equal(n, 4);
    addf(e, 0, "http://a.test/late"); /* over the limit: stays queued */
    addf(e, 0, "http://c.test/new");
    next_job(e, n + 1, &j);
    assert_string_equal(j.url, "http://c.test/new");
    done(e, &j, 200, n + 1);
    assert_int_equal(next_rc(e, n + 2, &wake), FRONTIER_DRAINED);
    frontier_host_stats hs;
    assert_int_equal(frontier_host_stats_get(e->f, "a.test", &hs), 0);
    assert_true(hs.capped);
    assert_int_equal(hs.pages, 2);
    env_close(e);
}

/* ---- resume from SQLite ------------------------------------------------- */

static void a_new_frontier_resumes_from_sqlite(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    fast_opts(&o);
    o.max_in_memory = 4;
    o.max_pages = 12;
    env *e = env_open(&o);
    int64_t first[10];
    for (int i = 0; i < 10; i++)
        first[i] = addf(e, (i * 7) % 3, "http://h%d.test/%d", i % 2, i);
    /* two done, one left in flight by a "crash" */
    next_job(e, 0, &j);
    done(e, &j, 200, 0);
    next_job(e, 0, &j);
    done(e, &j, 200, 0);
    next_job(e, 0, &j);
    int64_t lost = j.id;
    frontier_free(e->f);
    frontier_job_release(&j); /* still held at the "crash" */
    assert_null(j.url);
    assert_int_equal(db_close(e->d), 0);
    char err[256];
    e->d = db_open(e->state, NULL, err, sizeof(err));
    assert_non_null(e->d);
    assert_int_equal(db_recovered_in_flight(e->d), 1);
    env_frontier(e);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.pages, 2);           /* the done rows count */
    assert_int_equal(st.hosts_active, 2);
    /* a row added after the restart but pushed late is read back first */
    db_url u;
    memset(&u, 0, sizeof(u));
    u.url = "http://h0.test/late";
    u.host = "h0.test";
    u.state = DB_STATE_QUEUED;
    int64_t late = 0;
    assert_int_equal(db_insert_url_wait(e->d, &u, &late), 1);
    bool seen[64] = { false };
    int n = 0, pushed_late = 0;
    int64_t t = 1;
    while (frontier_next(e->f, t, &j, &wake) == FRONTIER_JOB) {
        assert_true(j.id < 64);
        if (seen[j.id])
            fail_msg("id %lld handed out twice", (long long)j.id);
        seen[j.id] = true;
        n++;
        if (j.id == late) { /* its push arrives now: already known */
            assert_int_equal(frontier_push(e->f, late, u.url, strlen(u.url), u.host, 0,
                                           DB_KIND_NAVIGATION), 0);
            pushed_late = 1;
        }
        done(e, &j, 200, t++);
    }
    assert_true(pushed_late);
    assert_int_equal(n, 9); /* 8 left + the late one, the limit 12 not reached */
    assert_true(seen[lost]);
    for (int i = 0; i < 10; i++)
        (void)first[i];
    frontier_get_stats(e->f, &st);
    assert_int_equal(st.pushes_known, 1);
    assert_int_equal(st.pages, 11);
    env_close(e);
}

/* ---- the memory bound at scale ------------------------------------------ */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BIG_N 200000L /* sanitizers run ~10x slower */
#else
#define BIG_N 1000000L
#endif
#define BIG_HOSTS 100
#define BIG_MEM 1000

typedef struct big {
    env *e;
    long n_total;
    uint8_t *handed;        /* by id */
    long handed_n, robots;
    bool draining;          /* no more pushes: strict order per host */
    int32_t last_depth[BIG_HOSTS];
    int64_t last_id[BIG_HOSTS];
    int64_t t;
} big;

/* One frontier_next at b->t and, for a job, its answer. The result of
 * frontier_next. */
static int big_step(big *b)
{
    frontier_job j;
    int64_t wake;
    int rc = frontier_next(b->e->f, b->t, &j, &wake);
    assert_true(rc >= 0);
    if (rc == FRONTIER_WAIT && b->draining)
        fail_msg("WAIT with zero delays and nothing in flight (wake %lld)", (long long)wake);
    if (rc == FRONTIER_JOB && j.is_robots) {
        robots_answer(b->e, &j, 404, NULL, b->t);
        b->robots++;
    } else if (rc == FRONTIER_JOB) {
        int h = atoi(j.host + 1);
        if (j.id <= 0 || j.id > b->n_total || b->handed[j.id])
            fail_msg("id %lld handed out twice or unknown", (long long)j.id);
        b->handed[j.id] = 1;
        b->handed_n++;
        if (b->draining && (j.depth < b->last_depth[h] ||
                            (j.depth == b->last_depth[h] && j.id <= b->last_id[h])))
            fail_msg("h%d: (%d, %lld) after (%d, %lld)", h, j.depth, (long long)j.id,
                     b->last_depth[h], (long long)b->last_id[h]);
        b->last_depth[h] = j.depth;
        b->last_id[h] = j.id;
        done(b->e, &j, 200, b->t);
    }
    b->t++;
    return rc;
}

static void memory_stays_bounded_with_a_million_urls(void **state)
{
    (void)state;
    frontier_opts o;
    big b;
    const char *env_n = getenv("CRAWLD_FRONTIER_N");
    const size_t batch = 10000;

    memset(&b, 0, sizeof(b));
    b.n_total = env_n != NULL ? strtol(env_n, NULL, 10) : BIG_N;
    b.t = 1;
    fast_opts(&o);
    o.obey_robots = true;
    o.max_in_memory = BIG_MEM;
    b.e = env_open(&o);
    env *e = b.e;

    db_url *u = calloc(batch, sizeof(*u));
    char (*urls)[48] = calloc(batch, 48);
    char (*hosts)[16] = calloc(batch, 16);
    int *status = calloc(batch, sizeof(int));
    int64_t *ids = calloc(batch, sizeof(int64_t));
    b.handed = calloc((size_t)b.n_total + 1, 1);
    assert_true(u && urls && hosts && status && ids && b.handed);

    for (long base = 0; base < b.n_total; base += (long)batch) {
        size_t n = (size_t)(b.n_total - base < (long)batch ? b.n_total - base : (long)batch);
        for (size_t i = 0; i < n; i++) {
            long k = base + (long)i;
            snprintf(hosts[i], sizeof(hosts[i]), "h%02ld.test", k % BIG_HOSTS);
            snprintf(urls[i], sizeof(urls[i]), "http://%.15s/p/%ld", hosts[i], k);
            memset(&u[i], 0, sizeof(u[i]));
            u[i].url = urls[i];
            u[i].host = hosts[i];
            u[i].depth = (int)((k / 7) % 3);
            u[i].state = DB_STATE_QUEUED;
        }
        assert_int_equal(db_insert_urls_wait(e->d, u, n, status, ids), 0);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(status[i], 1);
            assert_true(frontier_push(e->f, ids[i], urls[i], strlen(urls[i]), hosts[i],
                                      u[i].depth, DB_KIND_NAVIGATION) >= 0);
        }
        for (int k = 0; k < 3000; k++) /* some crawling while URLs arrive */
            (void)big_step(&b);
        frontier_stats st;
        frontier_get_stats(e->f, &st);
        assert_true(st.mem_entries <= BIG_MEM);
    }
    b.draining = true;
    for (int h = 0; h < BIG_HOSTS; h++)
        b.last_depth[h] = -1;
    long steps = 0;
    while (big_step(&b) != FRONTIER_DRAINED) {
        if ((++steps & 0xffff) == 0) {
            frontier_stats st;
            frontier_get_stats(e->f, &st);
            assert_true(st.mem_entries <= BIG_MEM);
        }
    }
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_int_equal(b.handed_n, b.n_total);
    assert_int_equal(b.robots, BIG_HOSTS);
    assert_true(st.mem_peak <= BIG_MEM);
    assert_int_equal(st.mem_entries, 0);
    assert_int_equal(st.pushes, b.n_total);
    assert_true(st.pushes_dropped > b.n_total / 2);
    assert_true(st.refill_rows > b.n_total / 2);
    int64_t c[DB_STATE_COUNT];
    db_counts(e, c);
    assert_int_equal(c[DB_STATE_DONE], b.n_total);
    assert_int_equal(c[DB_STATE_QUEUED], 0);
    assert_int_equal(c[DB_STATE_IN_FLIGHT], 0);
    print_message("%ld URLs over %d hosts: memory peak %lld of %d, %lld refills "
                  "(%lld rows), %lld pushes left in SQLite, %lld evictions\n",
                  b.n_total, BIG_HOSTS, (long long)st.mem_peak, BIG_MEM,
                  (long long)st.refills, (long long)st.refill_rows,
                  (long long)st.pushes_dropped, (long long)st.evictions);
    free(u);
    free(urls);
    free(hosts);
    free(status);
    free(ids);
    free(b.handed);
    env_close(e);
}

/* ---- threads -------------------------------------------------------------- */

#define T_URLS 20000
#define T_WORKERS 3

typedef struct tshared {
    env *e;
    atomic_long clock;
    atomic_long handed;
    atomic_int pushed_all;
    atomic_uchar *seen;
    atomic_int dup;
} tshared;

static void *t_pusher(void *arg)
{
    tshared *s = arg;
    db_url u[100];
    char urls[100][64], hosts[100][16];
    int st[100];
    int64_t ids[100];
    for (int base = 0; base < T_URLS; base += 100) {
        for (int i = 0; i < 100; i++) {
            snprintf(hosts[i], sizeof(hosts[i]), "t%d.test", (base + i) % 17 & 0xff);
            snprintf(urls[i], sizeof(urls[i]), "http://%.15s/%d", hosts[i], base + i);
            memset(&u[i], 0, sizeof(u[i]));
            u[i].url = urls[i];
            u[i].host = hosts[i];
            u[i].depth = (base + i) % 4;
            u[i].state = DB_STATE_QUEUED;
        }
        if (db_insert_urls_wait(s->e->d, u, 100, st, ids) != 0)
            return (void *)1;
        for (int i = 0; i < 100; i++) {
            if (frontier_push(s->e->f, ids[i], urls[i], strlen(urls[i]), hosts[i], u[i].depth,
                              DB_KIND_NAVIGATION) < 0)
                return (void *)1;
        }
    }
    atomic_store(&s->pushed_all, 1);
    return NULL;
}

static void *t_worker(void *arg)
{
    tshared *s = arg;
    frontier_job j;
    int64_t wake;
    for (;;) {
        int64_t now = atomic_fetch_add(&s->clock, 1);
        int all = atomic_load(&s->pushed_all); /* read before asking */
        int rc = frontier_next(s->e->f, now, &j, &wake);
        if (rc < 0)
            return (void *)1;
        if (rc == FRONTIER_JOB) {
            frontier_outcome o = answer(j.id % 11 == 0 && j.attempt == 1 ? 503 : 200, 1);
            o.retry_after_s = 0;
            if (j.id > 0 && j.id <= T_URLS && o.status == 200) {
                if (atomic_exchange(&s->seen[j.id], 1))
                    atomic_fetch_add(&s->dup, 1);
                atomic_fetch_add(&s->handed, 1);
            }
            if (frontier_done(s->e->f, &j, &o, now) < 0)
                return (void *)1;
        } else if (rc == FRONTIER_DRAINED && all) {
            /* drained after every push: done (the others see it too) */
            return NULL;
        } else {
            sched_yield();
        }
    }
}

static void threads_push_and_fetch_at_once(void **state)
{
    (void)state;
    frontier_opts o;
    tshared s;
    pthread_t p, w[T_WORKERS];
    fast_opts(&o);
    o.max_in_memory = 300;
    o.max_per_host = 2;
    o.backoff_ms = 0;
    env *e = env_open(&o);
    memset(&s, 0, sizeof(s));
    s.e = e;
    atomic_init(&s.clock, 1);
    s.seen = calloc(T_URLS + 1, sizeof(atomic_uchar));
    assert_non_null(s.seen);
    assert_int_equal(pthread_create(&p, NULL, t_pusher, &s), 0);
    for (int i = 0; i < T_WORKERS; i++)
        assert_int_equal(pthread_create(&w[i], NULL, t_worker, &s), 0);
    void *r;
    pthread_join(p, &r);
    assert_null(r);
    for (int i = 0; i < T_WORKERS; i++) {
        pthread_join(w[i], &r);
        assert_null(r);
    }
    assert_int_equal(atomic_load(&s.dup), 0);
    assert_int_equal(atomic_load(&s.handed), T_URLS);
    frontier_stats st;
    frontier_get_stats(e->f, &st);
    assert_true(st.mem_peak <= 300);
    assert_int_equal(st.in_flight, 0);
    int64_t c[DB_STATE_COUNT];
    db_counts(e, c);
    assert_int_equal(c[DB_STATE_DONE], T_URLS);
    free(s.seen);
    env_close(e);
}

/* ---- out of memory --------------------------------------------------------- */

/* A host's state moves to another frontier (a cluster slot moving): its
 * next request no sooner than the first allowed, its rules without a
 * robots.txt fetch while fresh, its page count against max_pages_per_host.
 * Each frontier has its own clock: the state is in spans from now. */
static void host_state_travels_to_another_frontier(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    frontier_host_state hs;
    int64_t wake;
    fast_opts(&o);
    o.obey_robots = true;
    o.robots_cache_s = 60;
    o.keep_robots_text = true;
    o.max_pages_per_host = 3;
    env *a = env_open(&o);
    addf(a, 0, "http://a.test/1");
    next_job(a, 100, &j);
    robots_answer(a, &j, 200, "User-agent: *\nCrawl-delay: 5\nDisallow: /x\n", 101);
    next_job(a, 5101, &j);
    assert_string_equal(j.url, "http://a.test/1");
    done(a, &j, 200, 5110);
    assert_int_equal(frontier_host_state_get(a->f, "nohost.test", 6000, &hs), -ENOENT);
    assert_int_equal(frontier_host_state_get(a->f, "a.test", 6000, &hs), 0);
    assert_int_equal(hs.wait_ms, 5110 + 5000 - 6000); /* from the response's end */
    assert_int_equal(hs.pages, 1);
    assert_int_equal(hs.robots_status, 200);
    assert_int_equal(hs.robots_fresh_ms, 101 + 60000 - 6000);
    assert_non_null(hs.robots_text);
    assert_memory_equal(hs.robots_text, "User-agent: *\nCrawl-delay: 5\n", 28);

    /* the other frontier, its clock at 900000: the host's URLs wait for
     * the span, come without a robots job, obey the rules, stop at 3 */
    env *b = env_open(&o);
    assert_int_equal(frontier_host_state_set(b->f, "a.test", &hs, 900000), 0);
    frontier_host_state_free(&hs);
    addf(b, 0, "http://a.test/x");
    addf(b, 0, "http://a.test/2");
    addf(b, 0, "http://a.test/3");
    addf(b, 0, "http://a.test/4");
    assert_int_equal(next_rc(b, 900000, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 900000 + 4110);
    assert_int_equal(next_rc(b, 904109, &wake), FRONTIER_WAIT);
    next_job(b, 904110, &j);
    assert_false(j.is_robots);
    assert_string_equal(j.url, "http://a.test/2"); /* /x is disallowed */
    done(b, &j, 200, 904120);
    assert_int_equal(next_rc(b, 909119, &wake), FRONTIER_WAIT); /* Crawl-delay 5 s */
    next_job(b, 909120, &j);
    assert_string_equal(j.url, "http://a.test/3");
    done(b, &j, 200, 909130);
    /* 1 + 2 pages: max_pages_per_host = 3 holds /4 back */
    assert_int_equal(next_rc(b, 990000, &wake), FRONTIER_DRAINED);
    frontier_stats st;
    frontier_get_stats(b->f, &st);
    assert_int_equal(st.robots_jobs, 0);
    assert_int_equal(st.robots_disallowed, 1);
    assert_true(st.limit_skipped >= 1);

    /* rules past their freshness are not taken: robots.txt is fetched */
    assert_int_equal(frontier_host_state_get(a->f, "a.test", 70000, &hs), 0);
    assert_int_equal(hs.robots_status, 0);
    assert_null(hs.robots_text);
    assert_int_equal(hs.wait_ms, 0);
    env *c = env_open(&o);
    assert_int_equal(frontier_host_state_set(c->f, "a.test", &hs, 0), 0);
    addf(c, 0, "http://a.test/2");
    next_job(c, 0, &j);
    assert_true(j.is_robots);
    robots_answer(c, &j, 404, NULL, 1);
    env_close(c);

    /* a frontier that does not keep robots.txt passes no rules on */
    o.keep_robots_text = false;
    env *d = env_open(&o);
    addf(d, 0, "http://a.test/1");
    next_job(d, 0, &j);
    robots_answer(d, &j, 200, "User-agent: *\nDisallow: /x\n", 1);
    assert_int_equal(frontier_host_state_get(d->f, "a.test", 2, &hs), 0);
    assert_int_equal(hs.robots_status, 0);
    frontier_host_state_free(&hs);
    next_job(d, 2, &j);
    done(d, &j, 200, 3);
    env_close(d);

    /* bad calls */
    frontier_host_state bad = { .wait_ms = -1 };
    assert_int_equal(frontier_host_state_set(b->f, "a.test", &bad, 0), -EINVAL);
    env_close(a);
    env_close(b);
}

/* Out of memory while a host's state is set: -ENOMEM and nothing set,
 * until it succeeds whole. */
static void host_state_set_out_of_memory(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    fast_opts(&o);
    o.obey_robots = true;
    o.keep_robots_text = true;
    env *e = env_open(&o);
    const char body[] = "User-agent: *\nCrawl-delay: 2\n";
    frontier_host_state hs = { .wait_ms = 700, .last_ms = -1, .pages = 1, .robots_status = 200,
                               .robots_text = (char *)body, .robots_len = strlen(body),
                               .robots_fresh_ms = 60000 };
    int rc = -ENOMEM;
    long n;
    for (n = 1; n < 100 && rc == -ENOMEM; n++) {
        cr_alloc_fail_after(n);
        rc = frontier_host_state_set(e->f, "h.test", &hs, 0);
        cr_alloc_fail_after(0);
        if (rc == -ENOMEM) { /* nothing set: an unknown host, or one without rules */
            frontier_host_state now;
            int g = frontier_host_state_get(e->f, "h.test", 0, &now);
            assert_true(g == -ENOENT || (g == 0 && now.wait_ms == 0 && now.robots_status == 0));
        }
    }
    assert_int_equal(rc, 0);
    assert_true(n > 2); /* some allocation did fail */
    addf(e, 0, "http://h.test/1");
    assert_int_equal(next_rc(e, 0, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 700);
    next_job(e, 700, &j);
    assert_false(j.is_robots);
    done(e, &j, 200, 710);
    env_close(e);
}

/* Holds from an earlier run (frontier_hold): a held host known now and
 * one made later wait (robots.txt first), an unheld one does not; the
 * longest hold of a key wins; a hold that passed is nothing; a job says
 * its host's key and spacing, which is what the daemon logs for the next
 * run; out of memory holds nothing and says so. */
static void holds_from_an_earlier_run(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    fast_opts(&o);
    o.obey_robots = true;
    o.delay_ms = 250;
    env *e = env_open(&o);
    addf(e, 0, "http://known.test/");
    frontier_hold_entry v[] = {
        { frontier_host_key("known.test"), 300 },
        { frontier_host_key("later.test"), 200 },
        { frontier_host_key("later.test"), 900 }, /* the longest counts */
        { frontier_host_key("passed.test"), 0 },
        { frontier_host_key("passed2.test"), -5 },
    };
    assert_int_equal(frontier_hold(e->f, NULL, 0, 1000), 0); /* nothing to hold */
    cr_alloc_fail_after(1);
    assert_int_equal(frontier_hold(e->f, v, 5, 1000), -ENOMEM);
    cr_alloc_fail_after(0);
    next_job(e, 1000, &j); /* nothing held */
    assert_true(j.is_robots);
    assert_string_equal(j.host, "known.test");
    robots_answer(e, &j, 404, NULL, 1000);
    env_close(e);

    e = env_open(&o);
    addf(e, 0, "http://known.test/");
    assert_int_equal(frontier_hold(e->f, v, 5, 1000), 0);
    addf(e, 0, "http://later.test/");
    addf(e, 0, "http://passed.test/");
    addf(e, 0, "http://other.test/");
    /* at 1000 only the unheld hosts' robots.txt go */
    int got = 0;
    for (int k = 0; k < 2; k++) {
        next_job(e, 1000, &j);
        assert_true(j.is_robots);
        assert_true(strcmp(j.host, "passed.test") == 0 || strcmp(j.host, "other.test") == 0);
        assert_int_equal(j.host_key, frontier_host_key(j.host));
        assert_int_equal(j.spacing_ms, 250);
        robots_answer(e, &j, 404, NULL, 1001);
        got++;
    }
    assert_int_equal(got, 2);
    assert_int_equal(next_rc(e, 1001, &wake), FRONTIER_WAIT);
    assert_true(wake > 1001 && wake <= 1251); /* the two unheld hosts' spacing */
    /* passed.test and other.test's pages, then known.test at 1300, later.test at 1900 */
    for (int k = 0; k < 2; k++) {
        next_job(e, 1251, &j);
        assert_false(j.is_robots);
        done(e, &j, 200, 1252);
    }
    assert_int_equal(next_rc(e, 1252, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 1300);
    assert_int_equal(next_rc(e, 1299, &wake), FRONTIER_WAIT);
    next_job(e, 1300, &j);
    assert_true(j.is_robots);
    assert_string_equal(j.host, "known.test");
    robots_answer(e, &j, 404, NULL, 1300);
    next_job(e, 1550, &j);
    assert_string_equal(j.url, "http://known.test/");
    done(e, &j, 200, 1551);
    assert_int_equal(next_rc(e, 1551, &wake), FRONTIER_WAIT);
    assert_int_equal(wake, 1900);
    next_job(e, 1900, &j);
    assert_true(j.is_robots);
    assert_string_equal(j.host, "later.test");
    robots_answer(e, &j, 404, NULL, 1900);
    next_job(e, 2150, &j);
    assert_string_equal(j.url, "http://later.test/");
    done(e, &j, 200, 2151);
    assert_int_equal(next_rc(e, 2151, &wake), FRONTIER_DRAINED);
    /* a host made once every hold has passed waits for nothing */
    addf(e, 0, "http://known2.test/");
    next_job(e, 5000, &j);
    assert_true(j.is_robots);
    robots_answer(e, &j, 404, NULL, 5000);
    next_job(e, 5250, &j);
    done(e, &j, 200, 5251);
    env_close(e);
}

static void out_of_memory_loses_nothing(void **state)
{
    (void)state;
    frontier_opts o;
    frontier_job j;
    int64_t wake;
    char err[256];
    fast_opts(&o);
    o.obey_robots = true;
    env *e = env_open(&o);
    for (int i = 0; i < 5; i++)
        addf(e, 0, "http://a.test/%d", i);
    frontier_free(e->f);
    e->f = NULL;
    /* frontier_new fails cleanly at every allocation, then succeeds */
    long n;
    for (n = 1; n < 200; n++) {
        cr_alloc_fail_after(n);
        e->f = frontier_new(&e->o, e->d, err, sizeof(err));
        cr_alloc_fail_after(0);
        if (e->f != NULL)
            break;
    }
    assert_non_null(e->f);
    /* pushes and refills under failing allocations never lose a URL */
    cr_alloc_fail_after(1);
    int64_t id = 0;
    {
        db_url u;
        memset(&u, 0, sizeof(u));
        u.url = "http://a.test/oom";
        u.host = "a.test";
        u.state = DB_STATE_QUEUED;
        cr_alloc_fail_after(0);
        assert_int_equal(db_insert_url_wait(e->d, &u, &id), 1);
        cr_alloc_fail_after(1);
        assert_true(frontier_push(e->f, id, u.url, strlen(u.url), "a.test", 0, 0) <= 0);
        cr_alloc_fail_after(0);
    }
    int got = 0, errors = 0;
    int64_t t = 0;
    for (int round = 0; round < 200; round++) {
        cr_alloc_fail_after(round % 3 == 0 ? 1 : 0);
        int rc = frontier_next(e->f, t, &j, &wake);
        cr_alloc_fail_after(0);
        if (rc == FRONTIER_DRAINED)
            break;
        if (rc < 0) {
            errors++;
            continue;
        }
        if (rc != FRONTIER_JOB) {
            t++;
            continue;
        }
        if (j.is_robots)
            robots_answer(e, &j, 404, NULL, t);
        else {
            got++;
            done(e, &j, 200, t);
        }
        t++;
    }
    assert_int_equal(got, 6);
    assert_true(errors > 0);
    env_close(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(robots_job_comes_first_per_host),
        cmocka_unit_test(host_state_travels_to_another_frontier),
        cmocka_unit_test(host_state_set_out_of_memory),
        cmocka_unit_test(holds_from_an_earlier_run),
        cmocka_unit_test(without_robots_urls_come_at_once),
        cmocka_unit_test(the_gate_holds_hosts_back_until_it_opens),
        cmocka_unit_test(disallowed_urls_are_never_handed_out),
        cmocka_unit_test(robots_matches_the_fetch_form),
        cmocka_unit_test(unreachable_robots_makes_urls_wait_then_disallows_all),
        cmocka_unit_test(robots_is_refetched_after_the_cache_time),
        cmocka_unit_test(request_spacing_respects_delay_crawl_delay_and_adaptive_term),
        cmocka_unit_test(spacing_exactly_at_the_bound),
        cmocka_unit_test(max_per_host_is_respected_across_many_hosts),
        cmocka_unit_test(status_503_and_429_pause_until_retry_after),
        cmocka_unit_test(server_errors_retry_with_exponential_backoff_then_fail),
        cmocka_unit_test(fatal_errors_and_client_errors_are_final),
        cmocka_unit_test(a_host_that_keeps_failing_is_paused_then_given_up),
        cmocka_unit_test(order_is_depth_then_discovery),
        cmocka_unit_test(ready_hosts_go_shallowest_first),
        cmocka_unit_test(shallower_urls_pushed_when_full_still_come_first),
        cmocka_unit_test(a_starved_host_takes_room_from_the_largest),
        cmocka_unit_test(drained_only_when_nothing_is_queued_or_in_flight),
        cmocka_unit_test(pause_and_resume),
        cmocka_unit_test(a_returned_job_comes_back),
        cmocka_unit_test(bad_calls_are_refused),
        cmocka_unit_test(page_limits_stop_new_urls),
        cmocka_unit_test(per_host_limit_leaves_other_hosts_running),
        cmocka_unit_test(a_new_frontier_resumes_from_sqlite),
        cmocka_unit_test(memory_stays_bounded_with_a_million_urls),
        cmocka_unit_test(threads_push_and_fetch_at_once),
        cmocka_unit_test(out_of_memory_loses_nothing),
    };
    const char *only = getenv("CRAWLD_TEST_ONLY"); /* e.g. "*million*" */
    if (only != NULL)
        cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
