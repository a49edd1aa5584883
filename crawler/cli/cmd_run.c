/* crawler/cmd_run: `crawld run`, the crawl daemon's command.
 *
 * Signals are blocked in every thread and taken by one signal thread
 * (sigwait): SIGINT/SIGTERM stop the crawl gracefully, a second one aborts
 * in-flight fetches; SIGHUP re-reads crawl.seeds_file. A progress thread
 * redraws a status line on a terminal, or logs a line every 10 s. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common/clock.h"
#include "common/log.h"
#include "crawler/clusterrun.h"
#include "crawler/control.h"
#include "crawler/crawl.h"
#include "crawler/package.h"
#include "crawler/wire.h"
#include "storage/db.h"

static const char usage[] =
    "usage: crawld run [-c FILE] [--set K=V]... [--seeds FILE]\n"
    "\n"
    "Crawls from the seeds (crawl.seeds, crawl.seeds_file and --seeds FILE, one\n"
    "URL per line) until the frontier is drained, then prints a summary of the\n"
    "crawl and of every dedup layer, and exits 0. With crawl.daemon = true it\n"
    "keeps running, taking seeds from the control API (POST /v1/seeds) or from\n"
    "seeds_file on SIGHUP. SIGINT/SIGTERM stop handing out URLs, let in-flight\n"
    "fetches finish (10 s grace), flush the database, snapshot the Bloom filter\n"
    "and exit 0; a second signal aborts the in-flight fetches. Running again on\n"
    "the same storage.state_dir resumes the crawl.\n";

typedef struct runner {
    crawl *c;
    const crawl_config *cfg;
    bool tty;                  /* stderr is a terminal: a status line is redrawn */
    FILE *info, *note, *warn;  /* log streams (common/log) */
    pthread_t sig_thread, progress_thread;
    volatile int quit;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} runner;

static int add_seed_file(crawl *c, const char *path, FILE *log)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(log, "crawld run: cannot read seeds file %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long lineno = 0, added = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
            n--;
        if (n == 0 || line[0] == '#')
            continue;
        char why[128];
        int rc = crawl_add_seed(c, line, (size_t)n, why, sizeof why);
        if (rc == -EINVAL)
            fprintf(log, "crawld run: %s:%ld: seed rejected: %s\n", path, lineno, why);
        else if (rc > 0)
            added++;
    }
    free(line);
    fclose(f);
    return (int)added;
}

static void *signal_main(void *arg)
{
    runner *r = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0)
            continue;
        if (sig == SIGUSR1)
            return NULL; /* the run is over */
        if (sig == SIGHUP) {
            if (r->cfg->crawl.seeds_file[0])
                add_seed_file(r->c, r->cfg->crawl.seeds_file, r->warn);
            continue;
        }
        fprintf(r->note, "%scrawld: %s: %s\n", r->tty ? "\n" : "",
                sig == SIGINT ? "SIGINT" : "SIGTERM",
                "stopping (a second signal aborts in-flight fetches)");
        crawl_stop_by(r->c, sig == SIGINT ? "signal (SIGINT)" : "signal (SIGTERM)");
    }
}

static void print_status(crawl *c, FILE *f, bool tty)
{
    crawl_status st;
    crawl_status_get(c, &st, NULL, 0);
    uint64_t dups = st.dedup.dup_trusted + st.dedup.dup_recent + st.dedup.dup_verified +
                    st.dedup.dup_pending + st.dedup.dup_page;
    char storage[256] = "";
    if (st.db.stalled)
        snprintf(storage, sizeof storage, " [storage: %s; retrying in %.0f s; %lld operations held]",
                 db_error_reason(st.db.stall_code), (double)st.db.retry_in_ms / 1000.0 + 0.5,
                 (long long)st.db.held);
    if (st.cluster.on && st.cluster.paused)
        snprintf(storage + strlen(storage), sizeof storage - strlen(storage),
                 " [cluster paused %.0f s: Redis unreachable]", (double)st.cluster.paused_ms / 1000.0);
    else if (st.cluster.on)
        snprintf(storage + strlen(storage), sizeof storage - strlen(storage),
                 " slots %u/%u outbox %lld", st.cluster.held, st.cluster.slots,
                 (long long)st.cluster.outbox);
    double dup_pct = st.dedup.keys ? 100.0 * (double)dups / (double)st.dedup.keys : 0.0;
    char due[96] = "";
    if (st.recrawl.enabled || st.recrawl.due_now > 0) {
        long long in_s = st.recrawl.next_due_ms < 0
                             ? -1
                             : (long long)((st.recrawl.next_due_ms - cr_wall_ms() + 999) / 1000);
        if (in_s >= 0)
            snprintf(due, sizeof due, " due %lld (next in %llds)", (long long)st.recrawl.due_now,
                     in_s);
        else
            snprintf(due, sizeof due, " due %lld", (long long)st.recrawl.due_now);
    }
    fprintf(f,
            "%s%6.0fs pages %llu (%.1f/s) frontier %lld (%lld in memory) hosts %lld dup-skip %.1f%% "
            "FPR %.4f%% (bound %.2f%%) fill %.3f%s%s%s%s",
            tty ? "\r\033[K" : "crawld: ", st.elapsed_s, (unsigned long long)st.pages,
            st.elapsed_s > 0 ? (double)st.pages / st.elapsed_s : 0.0, (long long)st.queued,
            (long long)st.frontier_mem, (long long)st.hosts_active, dup_pct,
            100.0 * seen_observed_fpr(&st.dedup), 100.0 * st.fpr_bound, st.bloom_fill, due,
            st.paused ? " [paused]" : "", storage, tty ? "" : "\n");
    fflush(f);
}

static void *progress_main(void *arg)
{
    runner *r = arg;
    bool tty = r->tty;
    int period_ms = tty ? 1000 : 10000;
    pthread_mutex_lock(&r->lock);
    while (!r->quit) {
        struct timespec ts;
        cr_deadline(period_ms, &ts);
        pthread_cond_timedwait(&r->cond, &r->lock, &ts);
        if (!r->quit)
            print_status(r->c, tty ? stderr : r->info, tty);
    }
    pthread_mutex_unlock(&r->lock);
    if (tty)
        fputs("\n", stderr);
    return NULL;
}

/* Raises the soft file-descriptor limit to the hard one (a crawl with many
 * hosts holds a connection to each) and says when the limit, not
 * fetch.connections, sets how many transfers run at once. */
static void raise_nofile(const crawl_config *cfg, FILE *warn)
{
    struct rlimit rl;
    long soft = -1;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            struct rlimit want = { rl.rlim_max, rl.rlim_max };
            if (setrlimit(RLIMIT_NOFILE, &want) == 0)
                rl.rlim_cur = rl.rlim_max;
        }
        soft = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)1 << 30
                   ? 1L << 30 : (long)rl.rlim_cur;
    }
    bool capped = false;
    unsigned n = wire_fetch_connections(cfg, soft, &capped);
    if (capped)
        fprintf(warn, "crawld: fetch.connections capped at %u transfers by the file-descriptor "
                        "limit (%ld; raise it with ulimit -n or LimitNOFILE=)\n", n, soft);
}

int cmd_run(int argc, char **argv)
{
    cli_conf cc = { 0 };
    const char *seeds_path = NULL;
    const cli_opt opts[] = {
        { "--seeds", NULL, "FILE", &seeds_path, NULL,
          "more seed URLs, one per line" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
    };
    int code = cli_parse(&cc, "run", usage, opts, CLI_NO_OPERANDS, argc, argv, NULL, NULL);
    if (code != CLI_GO_ON)
        return code;
    crawl_config cfg;
    if (cli_conf_load(&cc, "run", &cfg, false) != 0)
        return 1;
    /* every thread started from here on inherits the blocked signals */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    signal(SIGPIPE, SIG_IGN);

    int rc = 1;
    char err[512];
    runner r = { .cfg = &cfg, .tty = cr_log_mode_of(2) == CR_LOG_TTY };
    FILE *errs = cr_log_open(CR_LOG_ERR);
    r.info = cr_log_open(CR_LOG_INFO);
    r.note = cr_log_open(CR_LOG_NOTICE);
    r.warn = cr_log_open(CR_LOG_WARNING);
    errs = errs ? errs : stderr;
    r.info = r.info ? r.info : stderr;
    r.note = r.note ? r.note : stderr;
    r.warn = r.warn ? r.warn : stderr;
    raise_nofile(&cfg, r.warn);
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    control *ctl = NULL;
    clusterrun *cr = NULL;
    r.c = crawl_open(&cfg, r.note, err, sizeof err);
    if (r.c == NULL) {
        fprintf(errs, "crawld run: %s\n", err);
        goto out;
    }
    if (cfg.cluster.redis[0] != '\0') {
        /* a node of a shared crawl: seeds go where the settled map says */
        if (clusterrun_start(r.c, &cfg, r.note, &cr, err, sizeof err) < 0) {
            fprintf(errs, "crawld run: cluster: %s\n", err);
            goto out;
        }
        if (clusterrun_wait_settled(cr) < 0)
            goto out;
    }
    long seeds = 0;
    for (size_t i = 0; i < cfg.crawl.seeds.n; i++) {
        char why[128];
        const char *s = cfg.crawl.seeds.v[i];
        int a = crawl_add_seed(r.c, s, strlen(s), why, sizeof why);
        if (a == -EINVAL)
            fprintf(r.warn, "crawld run: seed %s rejected: %s\n", s, why);
        seeds += a > 0;
    }
    if (cfg.crawl.seeds_file[0]) {
        int a = add_seed_file(r.c, cfg.crawl.seeds_file, r.warn);
        seeds += a > 0 ? a : 0;
    }
    if (seeds_path) {
        int a = add_seed_file(r.c, seeds_path, r.warn);
        if (a < 0)
            goto out;
        seeds += a;
    }
    if (cfg.control.listen[0]) {
        ctl = control_start(r.c, &cfg, err, sizeof err);
        if (ctl == NULL) {
            fprintf(errs, "crawld run: control API: %s\n", err);
            goto out;
        }
    }
    if (cr)
        clusterrun_ready(cr);
    fprintf(r.info, "crawld: crawling with %ld new seeds, state in %s%s%s\n", seeds,
            cfg.storage.state_dir, ctl ? ", control API on " : "",
            ctl ? control_address(ctl) : "");
    pthread_create(&r.sig_thread, NULL, signal_main, &r);
    pthread_create(&r.progress_thread, NULL, progress_main, &r);
    int run_rc = crawl_run(r.c);
    pthread_mutex_lock(&r.lock);
    r.quit = 1;
    pthread_cond_signal(&r.cond);
    pthread_mutex_unlock(&r.lock);
    pthread_join(r.progress_thread, NULL);
    control_stop(ctl);
    ctl = NULL;
    int finish_rc = crawl_finish(r.c);
    crawl_summary(r.c, r.info);
    /* after the last outcome (and its outbox rows) and the summary (which
     * reads the node's figures), before the close: a node that ends
     * leaves at once, its leases released */
    clusterrun_stop(cr, true);
    cr = NULL;
    /* The signal thread calls into the crawl: it ends before the crawl is
     * freed (a signal during the close stays blocked; the close is the
     * final flush and a stop could not shorten it). */
    pthread_kill(r.sig_thread, SIGUSR1);
    pthread_join(r.sig_thread, NULL);
    int close_rc = crawl_close(r.c);
    if (finish_rc < 0)
        close_rc = finish_rc;
    r.c = NULL;
    rc = run_rc == 0 && close_rc == 0 ? 0 : 1;
    if (rc == 0 && cfg.archive.wacz && !cfg.archive.warc)
        fprintf(stderr, "crawld run: archive.wacz needs archive.warc = true: no package written\n");
    if (rc == 0 && cfg.archive.warc && cfg.archive.wacz) {
        char chosen[4400];
        wacz_stats st;
        if (package_crawl(&cfg, cfg.storage.state_dir, NULL, chosen, sizeof chosen, &st, err,
                          sizeof err) < 0) {
            fprintf(stderr, "crawld run: archive.wacz: %s\n", err);
            rc = 1;
        } else {
            fprintf(stderr, "crawld: WACZ %s: %llu WARC files, %llu pages\n", chosen,
                    (unsigned long long)st.warcs, (unsigned long long)st.pages);
        }
    }
out:
    control_stop(ctl);
    if (r.c && cr)
        crawl_finish(r.c); /* no fetch may reach the outbox once it is closed */
    clusterrun_stop(cr, true);
    if (r.c)
        crawl_close(r.c);
    pthread_cond_destroy(&r.cond);
    pthread_mutex_destroy(&r.lock);
    config_release(&cfg);
    cr_log_close(errs);
    cr_log_close(r.info);
    cr_log_close(r.note);
    cr_log_close(r.warn);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
