/* tests/test_daemon: `crawld run` as a daemon: its control listener (a Unix
 * socket in the state folder by default, TCP when asked), how it holds up
 * against idle connections, the subcommands that talk to it (`crawld
 * status` and friends), the file-descriptor limit and the log it writes.
 *
 * Each case starts its own daemon (daemon mode, no seeds: it idles) in its
 * own state folder and stops it; a daemon outlives no test (the child asks
 * for SIGKILL when the test process dies). No timing thresholds but the one
 * the control API promises: an authorised request answers within a second
 * while hundreds of idle connections are open (a functional bound, far
 * above the milliseconds it takes). */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "tests/support/crawlrun.h"
#include "tests/support/proc.h"

#define IDLE 500

static int group_setup(void **state)
{
    (void)state;
    struct rlimit rl; /* IDLE sockets here, as many in the daemon */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    return crawlrun_setup("daemon");
}

static int group_teardown(void **state)
{
    (void)state;
    crawlrun_teardown();
    return 0;
}

#define sleep_ms crawlrun_sleep_ms
#define slurp crawlrun_slurp

typedef struct crawld_proc {
    pid_t pid;
    char dir[256];       /* its state folder */
    char cfg[256];
    char errfile[256];
    char where[4300];    /* what it printed after "control API on " */
} crawld_proc;

/* Writes the configuration of a daemon named name; control lines (may be
 * "") go into [control]. */
static void configure(crawld_proc *d, const char *name, const char *control)
{
    snprintf(d->dir, sizeof d->dir, "%s", crawlrun_path(name, NULL));
    snprintf(d->errfile, sizeof d->errfile, "%s", crawlrun_path(name, ".err"));
    snprintf(d->cfg, sizeof d->cfg, "%s",
             crawlrun_config(name,
                             "[crawl]\nseeds = []\ndaemon = true\n[dedup]\nexpected_urls = 1000\n"
                             "[storage]\nstate_dir = \"%s\"\n[control]\n%s\n",
                             d->dir, control));
}

/* In the child of a journal run: its stderr is taken for the journal
 * stream ($JOURNAL_STREAM names the file's device and inode, as systemd
 * does for a service's stream). */
static void as_journal(void)
{
    struct stat st;
    char js[64];
    if (fstat(2, &st) == 0) {
        snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino);
        setenv("JOURNAL_STREAM", js, 1);
    }
}

static void not_journal(void)
{
    unsetenv("JOURNAL_STREAM");
}

/* Starts crawld run; with journal, as a journal stream's service. */
static void spawn(crawld_proc *d, bool journal)
{
    d->pid = crawlrun_spawn(NULL, (const char *const[]){ "run", "-c", d->cfg, NULL }, d->errfile,
                            0, journal ? as_journal : not_journal);
}

/* Starts the daemon and waits for it to say where its API is. */
static void start_as(crawld_proc *d, bool journal)
{
    spawn(d, journal);
    const char *p = crawlrun_await(d->pid, d->errfile, "control API on ", 30000);
    if (p && sscanf(p, "control API on %4299s", d->where) == 1)
        return;
    if (p == NULL && kill(d->pid, 0) != 0)
        fail_msg("crawld exited early: %s", slurp(d->errfile));
    kill(d->pid, SIGKILL);
    waitpid(d->pid, NULL, 0);
    fail_msg("the daemon printed no control address: %s", slurp(d->errfile));
}

static void start(crawld_proc *d)
{
    start_as(d, false);
}

static int wait_exit(crawld_proc *d)
{
    return crawlrun_wait_exit(d->pid);
}

/* Runs bin/crawld with args (NULL-ended); returns its exit code. */
static int crawld(const char *const *args, cr_buf *out, cr_buf *err)
{
    int rc = proc_crawld(args, NULL, out, err);
    if (out && out->data == NULL)
        cr_buf_puts(out, "");
    if (err && err->data == NULL)
        cr_buf_puts(err, "");
    return rc;
}

/* ---- an HTTP client (libcurl), over TCP or the Unix socket ------------- */

typedef struct http {
    long status;
    cr_buf body;
    CURLcode rc;
} http;

static size_t collect(char *p, size_t size, size_t n, void *ud)
{
    cr_buf_append(ud, p, size * n);
    return size * n;
}

static http request(const char *where, const char *method, const char *path, const char *token,
                    long timeout_ms)
{
    http h = { 0, { 0 }, CURLE_OK };
    cr_buf_init(&h.body, 0);
    CURL *e = curl_easy_init();
    char url[4400], auth[256];
    struct curl_slist *hdr = NULL;
    if (strncmp(where, "unix:", 5) == 0) {
        curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, where + 5);
        snprintf(url, sizeof url, "http://crawld%s", path);
    } else {
        snprintf(url, sizeof url, "http://%s%s", where, path);
    }
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdr = curl_slist_append(hdr, auth);
    }
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "POST") == 0)
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &h.body);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    h.rc = curl_easy_perform(e);
    if (h.rc == CURLE_OK)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &h.status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(e);
    if (h.body.data == NULL)
        cr_buf_puts(&h.body, "");
    return h;
}

static void shutdown_daemon(crawld_proc *d, const char *token)
{
    http h = request(d->where, "POST", "/v1/shutdown", token, 10000);
    assert_int_equal(h.status, 200);
    cr_buf_release(&h.body);
    assert_int_equal(wait_exit(d), 0);
}

/* A connected socket to where (TCP or Unix), or -1. */
static int dial(const char *where)
{
    int fd;
    if (strncmp(where, "unix:", 5) == 0) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", where + 5);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            close(fd);
            return -1;
        }
        return fd;
    }
    struct sockaddr_in sa = { .sin_family = AF_INET };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)atoi(strrchr(where, ':') + 1));
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static long long metric(const char *text, const char *name)
{
    const char *p = strstr(text, name);
    if (p == NULL)
        fail_msg("no %s in the metrics:\n%s", name, text);
    return strtoll(p + strlen(name), NULL, 10);
}

/* IDLE connections that never send a byte, and one that stops in the
 * middle of its request line, lock no client out: an authorised request
 * answers within a second, and the connections crowded out or cut are
 * counted in /metrics. */
static void idle_connections_lock_no_one_out(const char *where, const char *token)
{
    int fds[IDLE + 1];
    for (int i = 0; i < IDLE; i++) {
        fds[i] = dial(where);
        assert_true(fds[i] >= 0);
    }
    fds[IDLE] = dial(where);
    assert_true(fds[IDLE] >= 0);
    assert_int_equal(send(fds[IDLE], "GET /v1/sta", 11, MSG_NOSIGNAL), 11);

    http h = request(where, "GET", "/v1/status", token, 1000);
    if (h.status != 200)
        fail_msg("GET /v1/status with %d idle connections: curl %d, HTTP %ld", IDLE, h.rc,
                 h.status);
    json_error_t jerr;
    json_t *j = json_loads(h.body.data, 0, &jerr);
    assert_non_null(json_object_get(j, "dedup"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "control"), "listen")),
                        where);
    json_decref(j);
    cr_buf_release(&h.body);

    h = request(where, "GET", "/metrics", token, 1000);
    assert_int_equal(h.status, 200);
    /* each idle connection was crowded out, cut, or still waits (one
     * address may keep control.max_per_address = 16 waiting) */
    long long crowded = metric(h.body.data, "{reason=\"crowded_out\"} ");
    long long cut = metric(h.body.data, "{reason=\"no_request_line\"} ");
    long long all = metric(h.body.data, "\ncrawld_control_connections_total ");
    assert_true(crowded + cut >= IDLE + 1 - 16);
    assert_true(all >= IDLE + 2);
    cr_buf_release(&h.body);
    for (int i = 0; i <= IDLE; i++)
        close(fds[i]);
}

static void tcp_listener_holds_up(void **state)
{
    (void)state;
    crawld_proc d;
    configure(&d, "tcp", "listen = \"127.0.0.1:0\"\ntoken = \"s3cret\"\n");
    start(&d);
    assert_non_null(strstr(d.where, "127.0.0.1:"));
    idle_connections_lock_no_one_out(d.where, "s3cret");
    http h = request(d.where, "GET", "/v1/status", NULL, 1000);
    assert_int_equal(h.status, 401); /* and the token is still required */
    cr_buf_release(&h.body);
    shutdown_daemon(&d, "s3cret");
}

/* By default the API is a Unix socket in the state folder, only for the
 * folder's owner, and gone when the daemon stops. */
static void unix_socket_by_default(void **state)
{
    (void)state;
    crawld_proc d;
    configure(&d, "unix", "");
    start(&d);
    char want[400];
    snprintf(want, sizeof want, "unix:%s/control.sock", d.dir);
    assert_string_equal(d.where, want);
    struct stat st;
    assert_int_equal(stat(d.where + 5, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 077, 0);
    idle_connections_lock_no_one_out(d.where, NULL);
    shutdown_daemon(&d, NULL);
    assert_int_equal(stat(want + 5, &st), -1);
}

/* `crawld status --state DIR` and friends find the daemon by its state
 * folder; two crawls on one machine each have their own. */
static void commands_reach_the_crawl_of_their_state_folder(void **state)
{
    (void)state;
    crawld_proc a, b;
    configure(&a, "first", "");
    configure(&b, "second", "");
    start(&a);
    start(&b);
    cr_buf out, err;
    cr_buf_init(&out, 0);
    cr_buf_init(&err, 0);
    const char *seed[] = { "seed", "-c", a.cfg, "--state", a.dir, "http://x.example/",
                           "mailto:no@where", NULL };
    assert_int_equal(crawld(seed, &out, &err), 1); /* one was rejected */
    assert_non_null(strstr(out.data, "1 queued, 0 already known, 1 rejected"));
    assert_non_null(strstr(out.data, "mailto:no@where"));
    cr_buf_clear(&out);

    const char *pause[] = { "pause", "-c", a.cfg, "--state", a.dir, NULL };
    assert_int_equal(crawld(pause, &out, &err), 0);
    cr_buf_clear(&out);
    const char *st_a[] = { "status", "-c", a.cfg, "--state", a.dir, NULL };
    assert_int_equal(crawld(st_a, &out, &err), 0);
    assert_non_null(strstr(out.data, ": paused,"));
    assert_non_null(strstr(out.data, "dedup:"));
    cr_buf_clear(&out);
    const char *st_b[] = { "status", "-c", b.cfg, "--state", b.dir, "--json", NULL };
    assert_int_equal(crawld(st_b, &out, &err), 0);
    json_error_t jerr;
    json_t *j = json_loads(out.data, 0, &jerr);
    assert_non_null(j);
    assert_false(json_is_true(json_object_get(j, "paused"))); /* the other crawl */
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "control"), "listen")),
                        b.where);
    json_decref(j);
    cr_buf_clear(&out);
    const char *metrics[] = { "status", "-c", b.cfg, "--state", b.dir, "--metrics", NULL };
    assert_int_equal(crawld(metrics, &out, &err), 0);
    assert_non_null(strstr(out.data, "crawld_control_connections_total "));
    cr_buf_clear(&out);

    const char *resume[] = { "resume", "-c", a.cfg, "--state", a.dir, NULL };
    assert_int_equal(crawld(resume, &out, &err), 0);
    const char *stop_a[] = { "shutdown", "-c", a.cfg, "--state", a.dir, NULL };
    const char *stop_b[] = { "shutdown", "-c", b.cfg, "--control", b.where, NULL };
    assert_int_equal(crawld(stop_a, &out, &err), 0);
    assert_int_equal(crawld(stop_b, &out, &err), 0);
    assert_int_equal(wait_exit(&a), 0);
    assert_int_equal(wait_exit(&b), 0);

    /* nobody home: a clear message and exit 1 */
    cr_buf_clear(&err);
    assert_int_equal(crawld(st_a, &out, &err), 1);
    assert_non_null(strstr(err.data, "no crawl answers at unix:"));
    assert_non_null(strstr(err.data, "crawld stats --state"));
    cr_buf_release(&out);
    cr_buf_release(&err);
}

/* A TCP port another program holds is refused with a message that says so;
 * a socket file that a crawld left behind is replaced, one that a running
 * crawld answers on is not. */
static void taken_listeners_are_refused_clearly(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 4), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    char listen_line[128];
    snprintf(listen_line, sizeof listen_line, "listen = \"127.0.0.1:%d\"\n", ntohs(sa.sin_port));
    crawld_proc d;
    configure(&d, "taken", listen_line);
    spawn(&d, false);
    assert_int_equal(wait_exit(&d), 1);
    assert_non_null(strstr(slurp(d.errfile), "the port is taken"));
    close(fd);

    /* a stale socket file in the state folder */
    crawld_proc s;
    configure(&s, "stale", "");
    mkdir(s.dir, 0700);
    char path[400];
    snprintf(path, sizeof path, "%s/control.sock", s.dir);
    struct sockaddr_un su = { .sun_family = AF_UNIX };
    assert_true(strlen(path) < sizeof su.sun_path);
    memcpy(su.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&su, sizeof su), 0);
    close(fd); /* the file stays, nobody listens */
    start(&s);

    /* a second crawl told to use the first one's socket */
    crawld_proc t;
    char shared[600];
    snprintf(shared, sizeof shared, "listen = \"unix:%s\"\n", path);
    configure(&t, "shared", shared);
    spawn(&t, false);
    assert_int_equal(wait_exit(&t), 1);
    assert_non_null(strstr(slurp(t.errfile), "is the control socket of a running crawld"));
    shutdown_daemon(&s, NULL);
}

/* The soft file-descriptor limit is raised to the hard one, and when that
 * is what sets the number of transfers, the log says so. */
static void the_descriptor_limit_is_raised_and_named(void **state)
{
    (void)state;
    crawld_proc d;
    configure(&d, "nofile", "listen = \"\"\n");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "ulimit -Sn 100; ulimit -Hn 600; exec %s run -c %s --set crawl.daemon=false",
             proc_crawld_path(), d.cfg);
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    cr_buf err;
    cr_buf_init(&err, 0);
    assert_int_equal(proc_run(argv, NULL, 0, NULL, &err), 0);
    /* (600 - 256 reserved) / 2 per transfer: the soft limit went to 600 */
    assert_non_null(strstr(err.data, "fetch.connections capped at 172 transfers by the "
                                     "file-descriptor limit (600;"));
    /* with room for all 8192 transfers of "auto", nothing is said */
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max >= 2 * 8192 + 256) {
        cr_buf_clear(&err);
        const char *run[] = { "run", "-c", d.cfg, "--set", "crawl.daemon=false", NULL };
        assert_int_equal(crawld(run, NULL, &err), 0);
        assert_null(strstr(err.data, "capped"));
    }
    cr_buf_release(&err);
}

/* Where stderr is not a terminal, the log is one event per line: no
 * carriage return, no blank line; in the journal every line carries its
 * syslog priority, elsewhere none does. */
static void the_log_reads_well_in_the_journal(void **state)
{
    (void)state;
    crawld_proc d;
    configure(&d, "journal", "");
    start_as(&d, true);
    kill(d.pid, SIGTERM);
    assert_int_equal(wait_exit(&d), 0);
    char *text = slurp(d.errfile);
    assert_null(strchr(text, '\r'));
    assert_null(strstr(text, "\n\n"));
    int lines = 0;
    for (char *p = text; *p; lines++) {
        char *nl = strchr(p, '\n');
        assert_non_null(nl);
        if (!(p[0] == '<' && p[1] >= '0' && p[1] <= '7' && p[2] == '>'))
            fail_msg("a line without its priority: %.*s", (int)(nl - p), p);
        p = nl + 1;
    }
    assert_true(lines > 10);
    assert_non_null(strstr(text, "<6>crawld: crawling with 0 new seeds"));
    assert_non_null(strstr(text, "<5>crawld: SIGTERM: stopping"));
    assert_non_null(strstr(text, "\n<6>dedup:\n"));

    crawld_proc p;
    configure(&p, "plain", "");
    start(&p);
    /* requests on the control socket leave no line of libmicrohttpd's
     * (it tries TCP options on a Unix socket, and used to say so) */
    for (int i = 0; i < 3; i++) {
        http h = request(p.where, "GET", "/v1/status", NULL, 10000);
        assert_int_equal(h.status, 200);
        cr_buf_release(&h.body);
    }
    kill(p.pid, SIGTERM);
    assert_int_equal(wait_exit(&p), 0);
    text = slurp(p.errfile);
    assert_null(strchr(text, '\r'));
    assert_null(strstr(text, "\n\n"));
    assert_int_equal(strncmp(text, "crawld: crawling with 0 new seeds", 33), 0);
    assert_non_null(strstr(text, "\ncrawld: SIGTERM: stopping"));
    assert_null(strstr(text, "\n<"));
    assert_null(strstr(text, "TCP_NODELAY"));
    for (char *q = text; *q; q = strchr(q, '\n') + 1) /* every line is ours */
        if (strncmp(q, "crawld", 6) != 0 && strncmp(q, "  ", 2) != 0 && strncmp(q, "dedup", 5) != 0 &&
            strncmp(q, "crawl:", 6) != 0)
            fail_msg("a line not crawld's: %.*s", (int)(strchr(q, '\n') - q), q);
}

static char *read_root_file(const char *rel)
{
    char path[512];
    const char *root = getenv("CRAWLD_ROOT");
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", rel);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        fail_msg("cannot read %s", path);
    char *text = calloc(1, 1 << 20);
    assert_non_null(text);
    fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    return text;
}

/* What `make install` ships agrees with the code: the man page names every
 * command `crawld --help` lists and every configuration section, and the
 * systemd unit's command line is one crawld accepts. */
static void installed_docs_match_the_code(void **state)
{
    (void)state;
    char *man = read_root_file("docs/crawld.1");
    cr_buf out, err;
    cr_buf_init(&out, 0);
    cr_buf_init(&err, 0);
    const char *help[] = { "--help", NULL };
    assert_int_equal(crawld(help, &out, &err), 0);
    const char *p = strstr(out.data, "commands:\n");
    assert_non_null(p);
    /* the COMMANDS section, where each is a bold word of a .TP heading */
    char *sec = strstr(man, "\n.SH COMMANDS\n");
    assert_non_null(sec);
    char *sec_end = strstr(sec + 1, "\n.SH ");
    assert_non_null(sec_end);
    *sec_end = '\0';
    char *wr = sec; /* roff writes '-' as "\-" */
    for (const char *r = sec; *r; r++)
        if (!(r[0] == '\\' && r[1] == '-'))
            *wr++ = *r;
    *wr = '\0';
    int commands = 0;
    for (p = strchr(p, '\n') + 1; strncmp(p, "  ", 2) == 0; p = strchr(p, '\n') + 1) {
        char name[64];
        assert_int_equal(sscanf(p, " %63s", name), 1);
        bool found = false;
        size_t len = strlen(name);
        for (const char *h = sec; !found && (h = strstr(h, "\n.TP\n.B")) != NULL; h++) {
            const char *eol = strchr(h + 5, '\n');
            for (const char *w = h + 8; w && w < eol && !found; w++)
                found = strncmp(w, name, len) == 0 && (w[-1] == ' ' || w[-1] == '\\') &&
                        (w[len] == ' ' || w[len] == '\n' || w[len] == '"');
        }
        if (!found)
            fail_msg("docs/crawld.1 does not describe the command %s", name);
        commands++;
    }
    assert_true(commands >= 13);
    free(man);
    man = read_root_file("docs/crawld.1");
    const char *defaults[] = { "check-config", "--defaults", NULL };
    cr_buf_clear(&out);
    assert_int_equal(crawld(defaults, &out, &err), 0);
    for (p = out.data; (p = strstr(p, "\n[")) != NULL; p++) {
        char name[64], want[80];
        assert_int_equal(sscanf(p + 1, "[%63[a-z]]", name), 1);
        snprintf(want, sizeof want, " [%s]", name);
        if (strstr(man, want) == NULL)
            fail_msg("docs/crawld.1 does not name the section [%s]", name);
    }
    free(man);

    /* the unit's ExecStart, its --set options checked by check-config */
    char *unit = read_root_file("docs/crawld.service.in");
    char *line = strstr(unit, "\nExecStart=@BINDIR@/crawld run -c @SYSCONFDIR@/crawld/crawl.toml ");
    assert_non_null(line);
    char *end = strchr(line + 1, '\n');
    *end = '\0';
    const char *empty = proc_temp_file(0, "", 0);
    assert_non_null(empty);
    const char *args[16] = { "check-config", "-c", empty };
    int n = 3;
    char *q = strstr(line, "crawl.toml ") + 11;
    for (char *tok = q; *tok && n < 14;) {
        while (*tok == ' ')
            tok++;
        if (*tok == '\0')
            break;
        char *sp = strchr(tok, ' ');
        if (sp)
            *sp = '\0';
        if (strcmp(tok, "--set") == 0) {
            args[n++] = "--set";
        } else { /* systemd takes the single quotes away, as a shell would */
            char *o = tok;
            for (const char *r = tok; *r; r++)
                if (*r != '\'')
                    *o++ = *r;
            *o = '\0';
            args[n++] = tok;
        }
        if (sp == NULL)
            break;
        tok = sp + 1;
    }
    args[n] = NULL;
    assert_true(n >= 7);
    cr_buf_clear(&out);
    cr_buf_clear(&err);
    if (crawld(args, &out, &err) != 0)
        fail_msg("the unit's options are refused: %s", err.data);
    assert_non_null(strstr(out.data, "daemon = true"));
    assert_non_null(strstr(out.data, "state_dir = \"/var/lib/crawld\""));
    free(unit);
    cr_buf_release(&out);
    cr_buf_release(&err);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tcp_listener_holds_up),
        cmocka_unit_test(unix_socket_by_default),
        cmocka_unit_test(commands_reach_the_crawl_of_their_state_folder),
        cmocka_unit_test(taken_listeners_are_refused_clearly),
        cmocka_unit_test(the_descriptor_limit_is_raised_and_named),
        cmocka_unit_test(the_log_reads_well_in_the_journal),
        cmocka_unit_test(installed_docs_match_the_code),
    };
    int rc = cmocka_run_group_tests_name("daemon", tests, group_setup, group_teardown);
    curl_global_cleanup();
    return rc;
}
