/* tests/fuzz/replay: replays a fuzz target's corpus under cmocka, so `make
 * test` runs every input the fuzzer ever kept (and every crash it found)
 * through the normal build. The corpus folder is tests/fuzz/corpus/NAME/,
 * NAME being this binary's name after "replay_". */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char corpus_dir[512];

static void replay_corpus(void **state)
{
    (void)state;
    DIR *d = opendir(corpus_dir);
    if (d == NULL) {
        fail_msg("cannot open corpus %s", corpus_dir);
        return;
    }
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", corpus_dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (f == NULL)
            continue;
        size_t cap = 1 << 20, len = 0;
        uint8_t *buf = malloc(cap);
        assert_non_null(buf);
        size_t n;
        while ((n = fread(buf + len, 1, cap - len, f)) > 0) {
            len += n;
            if (len == cap) {
                cap *= 2;
                buf = realloc(buf, cap);
                assert_non_null(buf);
            }
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, len);
        free(buf);
        files++;
    }
    closedir(d);
    assert_true(files > 0);
}

int main(int argc, char **argv)
{
    (void)argc;
    const char *name = strrchr(argv[0], '/');
    name = name ? name + 1 : argv[0];
    if (strncmp(name, "replay_", 7) == 0)
        name += 7;
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep cmocka's stdout and stderr in order */
    snprintf(corpus_dir, sizeof corpus_dir, "tests/fuzz/corpus/%s", name);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replay_corpus),
    };
    return cmocka_run_group_tests_name(name, tests, NULL, NULL);
}
