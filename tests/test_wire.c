/* tests/test_wire: configuration -> module options, where the composition
 * root decides something itself (fetch.connections = "auto" and the
 * file-descriptor limit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "config/config.h"
#include "crawler/wire.h"

static crawl_config cfg;

static int setup(void **state)
{
    (void)state;
    return config_init(&cfg);
}

static int teardown(void **state)
{
    (void)state;
    config_release(&cfg);
    return 0;
}

static void set(const char *assignment)
{
    config_error err;
    if (config_set(&cfg, assignment, &err) != 0)
        fail_msg("%s", err.msg);
}

/* "auto" is WIRE_AUTO_CONNECTIONS_MAX where descriptors are plenty, and
 * what the limit leaves (two per transfer, after the reserve) where not. */
static void auto_follows_the_descriptor_limit(void **state)
{
    (void)state;
    bool capped = true;
    assert_int_equal(wire_fetch_connections(&cfg, 1L << 20, &capped), WIRE_AUTO_CONNECTIONS_MAX);
    assert_false(capped);
    long tight = 1024;
    unsigned want = (unsigned)(tight - WIRE_FD_RESERVE) / 2;
    assert_int_equal(wire_fetch_connections(&cfg, tight, &capped), want);
    assert_true(capped);
    /* at the limit exactly, nothing is capped */
    long exact = 2 * (long)WIRE_AUTO_CONNECTIONS_MAX + WIRE_FD_RESERVE;
    assert_int_equal(wire_fetch_connections(&cfg, exact, &capped), WIRE_AUTO_CONNECTIONS_MAX);
    assert_false(capped);
    assert_int_equal(wire_fetch_connections(&cfg, exact - 2, &capped),
                     WIRE_AUTO_CONNECTIONS_MAX - 1);
    assert_true(capped);
}

/* A number is taken as given unless the limit cannot hold it; never fewer
 * than one transfer per fetcher thread. */
static void a_number_is_kept_within_the_limit(void **state)
{
    (void)state;
    bool capped = true;
    set("fetch.connections = 100");
    assert_int_equal(wire_fetch_connections(&cfg, 20000, &capped), 100);
    assert_false(capped);
    set("fetch.connections = 5000");
    assert_int_equal(wire_fetch_connections(&cfg, 1024, &capped), (1024 - WIRE_FD_RESERVE) / 2);
    assert_true(capped);
    set("fetch.connections = 1");
    set("fetch.threads = 4");
    assert_int_equal(wire_fetch_connections(&cfg, 20000, &capped), 4);
    assert_false(capped);
    /* a limit too small for the reserve still leaves each thread one */
    set("fetch.connections = \"auto\"");
    assert_int_equal(wire_fetch_connections(&cfg, 100, &capped), 25);
    assert_true(capped);
    assert_int_equal(wire_fetch_connections(&cfg, 8, &capped), 4);
}

/* wire_fetch_opts uses the process's own soft limit. */
static void fetch_opts_read_the_process_limit(void **state)
{
    (void)state;
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    long soft = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)1 << 30 ? 1L << 30
                                                                               : (long)rl.rlim_cur;
    fetch_opts fo;
    wire_fetch_opts(&cfg, &fo);
    assert_int_equal(fo.connections, wire_fetch_connections(&cfg, soft, NULL));
    assert_true(fo.connections >= fo.threads);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(auto_follows_the_descriptor_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(a_number_is_kept_within_the_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(fetch_opts_read_the_process_limit, setup, teardown),
    };
    return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
