/* tests/test_atomic_file: common/atomic_file, with a failure injected at
 * each step: before the rename the target keeps its old bytes and no temp
 * file is left; at the folder's fsync the new bytes are in place and the
 * failure is still reported. Also common/clock's small contracts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/atomic_file.h"
#include "common/clock.h"

struct fx {
    char dir[64];
    char path[128];
};

static cr_afile_step fail_at;
static int hook_calls;

static int fail_hook(cr_afile_step step)
{
    hook_calls++;
    return step == fail_at ? -EIO : 0;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/crawld-afile-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    snprintf(f->path, sizeof f->path, "%s/target", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    DIR *d = opendir(f->dir);
    struct dirent *e;
    char p[512];
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
        unlink(p);
    }
    if (d != NULL)
        closedir(d);
    rmdir(f->dir);
    free(f);
    cr_afile_fail_hook = NULL;
    return 0;
}

/* The file's bytes, NUL-terminated, into out; -1 when missing. */
static long slurp(const char *path, char *out, size_t outlen)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return -1;
    size_t n = fread(out, 1, outlen - 1, fp);
    out[n] = '\0';
    fclose(fp);
    return (long)n;
}

static int entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    if (d != NULL)
        closedir(d);
    return n;
}

static void write_replaces_whole_file(void **state)
{
    struct fx *f = *state;
    char got[64];
    assert_int_equal(cr_atomic_write(f->path, "old", 3, 0644), 0);
    assert_int_equal(cr_atomic_write(f->path, "newer", 5, 0640), 0);
    assert_int_equal(slurp(f->path, got, sizeof got), 5);
    assert_string_equal(got, "newer");
    struct stat st;
    assert_int_equal(stat(f->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_int_equal(entries(f->dir), 1); /* no temp file left */
}

static void failure_at_each_step_keeps_old_file(void **state)
{
    struct fx *f = *state;
    char got[64];
    for (cr_afile_step s = CR_AF_CREATE; s < CR_AF_STEPS; s++) {
        assert_int_equal(cr_atomic_write(f->path, "old", 3, 0644), 0);
        fail_at = s;
        hook_calls = 0;
        cr_afile_fail_hook = fail_hook;
        int rc = cr_atomic_write(f->path, "new", 3, 0644);
        cr_afile_fail_hook = NULL;
        print_message("step %s: rc %d\n", cr_afile_step_name(s), rc);
        assert_int_equal(rc, -EIO);
        assert_true(hook_calls > 0);
        assert_int_equal(slurp(f->path, got, sizeof got), 3);
        /* only the folder's fsync comes after the rename */
        assert_string_equal(got, s == CR_AF_DIRSYNC ? "new" : "old");
        assert_int_equal(entries(f->dir), 1);
    }
}

static void failed_step_is_named(void **state)
{
    struct fx *f = *state;
    cr_afile af;
    assert_int_equal(cr_afile_open(&af, f->path, 0644), 0);
    assert_int_equal(cr_afile_write(&af, "x", 1), 0);
    fail_at = CR_AF_RENAME;
    cr_afile_fail_hook = fail_hook;
    assert_int_equal(cr_afile_commit(&af), -EIO);
    cr_afile_fail_hook = NULL;
    assert_int_equal(af.failed, CR_AF_RENAME);
    assert_string_equal(cr_afile_step_name(af.failed), "rename");
    assert_int_equal(access(f->path, F_OK), -1); /* never created */
    assert_int_equal(entries(f->dir), 0);
}

static void stdio_stream_commits(void **state)
{
    struct fx *f = *state;
    char got[64];
    cr_afile af;
    assert_int_equal(cr_afile_open(&af, f->path, 0644), 0);
    FILE *fp = cr_afile_stdio(&af);
    assert_non_null(fp);
    fprintf(fp, "%d lines", 42);
    assert_int_equal(cr_afile_commit(&af), 0);
    assert_int_equal(slurp(f->path, got, sizeof got), 8);
    assert_string_equal(got, "42 lines");
}

static void stdio_flush_failure_is_a_write_failure(void **state)
{
    struct fx *f = *state;
    cr_afile af;
    assert_int_equal(cr_afile_open(&af, f->path, 0644), 0);
    fputs("abc", cr_afile_stdio(&af));
    fail_at = CR_AF_WRITE;
    cr_afile_fail_hook = fail_hook;
    assert_int_equal(cr_afile_commit(&af), -EIO);
    cr_afile_fail_hook = NULL;
    assert_int_equal(af.failed, CR_AF_WRITE);
    assert_int_equal(entries(f->dir), 0);
}

static void abort_leaves_target_alone(void **state)
{
    struct fx *f = *state;
    char got[64];
    cr_afile af;
    assert_int_equal(cr_atomic_write(f->path, "keep", 4, 0644), 0);
    assert_int_equal(cr_afile_open(&af, f->path, 0644), 0);
    assert_int_equal(cr_afile_write(&af, "gone", 4), 0);
    cr_afile_abort(&af);
    cr_afile_abort(&af); /* twice is harmless */
    assert_int_equal(slurp(f->path, got, sizeof got), 4);
    assert_string_equal(got, "keep");
    assert_int_equal(entries(f->dir), 1);
}

static void open_survives_out_of_memory(void **state)
{
    struct fx *f = *state;
    cr_afile af;
    for (long n = 1; n <= 2; n++) {
        cr_alloc_fail_after(n);
        int rc = cr_afile_open(&af, f->path, 0644);
        cr_alloc_fail_after(0);
        assert_int_equal(rc, -ENOMEM);
        assert_int_equal(entries(f->dir), 0);
    }
}

static void missing_folder_fails_at_create(void **state)
{
    struct fx *f = *state;
    char p[256];
    snprintf(p, sizeof p, "%s/no/such/file", f->dir);
    assert_int_equal(cr_atomic_write(p, "x", 1, 0644), -ENOENT);
    assert_int_equal(cr_fsync_dir(f->dir), 0);
    assert_int_equal(cr_fsync_dir(p), -ENOENT);
}

static void clock_contracts(void **state)
{
    (void)state;
    int64_t ms = cr_mono_ms();
    int64_t ns = cr_mono_ns();
    int64_t ceil_ms = cr_mono_ms_ceil();
    assert_true(ns / 1000000 >= ms);
    assert_true(ceil_ms >= ns / 1000000);
    assert_true(cr_mono_ms() >= ms); /* never goes back */
    struct timespec ts, now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    cr_deadline_mono(1500, &ts);
    assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
    int64_t d = ((int64_t)ts.tv_sec - now.tv_sec) * 1000 + (ts.tv_nsec - now.tv_nsec) / 1000000;
    assert_true(d >= 1499); /* at least 1.5 s from the instant read before it */
    cr_deadline(-5, &ts); /* a negative wait is now */
    assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
    assert_true(cr_wall_ms() > 1600000000000LL); /* after 2020 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(write_replaces_whole_file, setup, teardown),
        cmocka_unit_test_setup_teardown(failure_at_each_step_keeps_old_file, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_step_is_named, setup, teardown),
        cmocka_unit_test_setup_teardown(stdio_stream_commits, setup, teardown),
        cmocka_unit_test_setup_teardown(stdio_flush_failure_is_a_write_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(abort_leaves_target_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(open_survives_out_of_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_folder_fails_at_create, setup, teardown),
        cmocka_unit_test(clock_contracts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
