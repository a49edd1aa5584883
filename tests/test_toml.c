/* tests/test_toml: the TOML reader against the toml-test conformance data
 * (read in place), exact error positions, the API, bounded cost on hostile
 * shapes, and every out-of-memory path of a mid-size document.
 *
 * Why one file of about 1,500 lines: one test binary per module (STYLE.md);
 * the cases share the conformance-data walker and value comparer at the top. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "config/toml.h"

/* ------------------------------------------------------------- helpers */

static toml_value *parse(const char *s, toml_error *err) { return toml_parse(s, strlen(s), err); }

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (nb == NULL)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

typedef struct pathlist {
    char **v;
    size_t n, cap;
} pathlist;

static void collect(const char *dir, const char *suffix, pathlist *out)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            collect(path, suffix, out);
            continue;
        }
        size_t pl = strlen(path), sl = strlen(suffix);
        if (pl < sl || strcmp(path + pl - sl, suffix) != 0)
            continue;
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 64;
            out->v = realloc(out->v, out->cap * sizeof *out->v);
            assert_non_null(out->v);
        }
        out->v[out->n++] = strdup(path);
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void pathlist_free(pathlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static const char *conformance_dir(void)
{
    const char *d = getenv("CRAWLD_CONFORMANCE");
    return d && *d ? d : "../shared/conformance";
}

/* Fails with where the cases are expected and how to get them, when dir
 * holds none (a clone without ../shared, say): "0 cases" alone says neither. */
static void require_cases(const char *dir, size_t n)
{
    if (n > 0)
        return;
    fail_msg("no TOML conformance cases under %s. The tests read the toml-test suite's "
             "cases (github.com/toml-lang/toml-test, commit d168c2a4: valid/ and invalid/ "
             "as described in the data's README.md) from ../shared/conformance beside the "
             "checkout, or from the folder CRAWLD_CONFORMANCE names: put a copy there, or "
             "run CRAWLD_CONFORMANCE=/path/to/conformance make test (see README.md, "
             "\"Configuration\").",
             dir);
}

/* --------------------------------------------------- tagged JSON compare */

static int is_tagged(json_t *j)
{
    return json_is_object(j) && json_object_size(j) == 2 &&
           json_is_string(json_object_get(j, "type")) &&
           json_is_string(json_object_get(j, "value"));
}

static double json_float(const char *s)
{
    const char *t = s[0] == '+' || s[0] == '-' ? s + 1 : s;
    if (strcmp(t, "inf") == 0)
        return s[0] == '-' ? -INFINITY : INFINITY;
    if (strcmp(t, "nan") == 0)
        return NAN;
    return strtod(s, NULL);
}

/* 0 if v holds exactly what j says; else 1 with why in msg. */
static int same(const toml_value *v, json_t *j, const char *path, char *msg, size_t cap)
{
    if (is_tagged(j)) {
        const char *type = json_string_value(json_object_get(j, "type"));
        json_t *jv = json_object_get(j, "value");
        const char *val = json_string_value(jv);
        if (strcmp(type, toml_type_name(toml_type_of(v))) != 0) {
            snprintf(msg, cap, "%s: type %s, want %s", path, toml_type_name(toml_type_of(v)),
                     type);
            return 1;
        }
        int ok;
        if (strcmp(type, "string") == 0) {
            size_t n;
            const char *s = toml_string(v, &n);
            ok = n == json_string_length(jv) && memcmp(s, val, n) == 0 && s[n] == '\0';
        } else if (strcmp(type, "integer") == 0)
            ok = toml_int(v) == strtoll(val, NULL, 10);
        else if (strcmp(type, "float") == 0) {
            double a = toml_float(v), b = json_float(val);
            ok = (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
        } else if (strcmp(type, "bool") == 0)
            ok = toml_bool(v) == (strcmp(val, "true") == 0);
        else if (strcmp(type, "datetime") == 0 || strcmp(type, "datetime-local") == 0 ||
                 strcmp(type, "date-local") == 0 || strcmp(type, "time-local") == 0)
            ok = toml_datetime(v) != NULL && strcmp(toml_datetime(v), val) == 0;
        else
            ok = 0;
        if (!ok)
            snprintf(msg, cap, "%s: wrong %s value, want '%s'", path, type, val);
        return !ok;
    }
    char sub[512];
    if (json_is_object(j)) {
        if (toml_type_of(v) != TOML_TABLE || toml_count(v) != json_object_size(j)) {
            snprintf(msg, cap, "%s: want a table of %zu keys", path, json_object_size(j));
            return 1;
        }
        const char *key;
        json_t *jv;
        json_object_foreach(j, key, jv) {
            snprintf(sub, sizeof sub, "%s.%s", path, key);
            const toml_value *c = toml_get(v, key);
            if (c == NULL) {
                snprintf(msg, cap, "%s: missing", sub);
                return 1;
            }
            if (same(c, jv, sub, msg, cap))
                return 1;
        }
        return 0;
    }
    if (json_is_array(j)) {
        if (toml_type_of(v) != TOML_ARRAY || toml_count(v) != json_array_size(j)) {
            snprintf(msg, cap, "%s: want an array of %zu", path, json_array_size(j));
            return 1;
        }
        for (size_t i = 0; i < json_array_size(j); i++) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            if (same(toml_at(v, i), json_array_get(j, i), sub, msg, cap))
                return 1;
        }
        return 0;
    }
    snprintf(msg, cap, "%s: unexpected JSON", path);
    return 1;
}

/* ------------------------------------------------------ conformance tests */

static void conformance_valid(void **state)
{
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/toml/valid", conformance_dir());
    pathlist l = {0};
    collect(dir, ".toml", &l);
    require_cases(dir, l.n);
    qsort(l.v, l.n, sizeof *l.v, cmp_str);
    int failed = 0;
    for (size_t i = 0; i < l.n; i++) {
        const char *name = l.v[i] + strlen(dir) + 1;
        size_t tl, jl;
        char *t = read_file(l.v[i], &tl);
        char jpath[1100];
        snprintf(jpath, sizeof jpath, "%.*s.json", (int)(strlen(l.v[i]) - 5), l.v[i]);
        char *js = read_file(jpath, &jl);
        json_error_t jerr;
        json_t *j = js ? json_loadb(js, jl, JSON_ALLOW_NUL, &jerr) : NULL;
        toml_error err;
        toml_value *v = t ? toml_parse(t, tl, &err) : NULL;
        char msg[600] = "";
        if (t == NULL || j == NULL)
            snprintf(msg, sizeof msg, "cannot read the .toml or its .json");
        else if (v == NULL)
            snprintf(msg, sizeof msg, "rejected: %d:%d: %s", err.line, err.col, err.msg);
        else
            same(v, j, "", msg, sizeof msg);
        if (msg[0]) {
            print_message("valid case %s FAILED: %s\n", name, msg);
            failed++;
        }
        toml_free(v);
        json_decref(j);
        free(js);
        free(t);
    }
    print_message("toml valid: %zu cases, %d failed (from %s)\n", l.n, failed, dir);
    size_t n = l.n;
    pathlist_free(&l);
    assert_int_equal(failed, 0);
    assert_int_equal(n, 65);
}

static void conformance_invalid(void **state)
{
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/toml/invalid", conformance_dir());
    pathlist l = {0};
    collect(dir, ".toml", &l);
    require_cases(dir, l.n);
    qsort(l.v, l.n, sizeof *l.v, cmp_str);
    int failed = 0;
    int verbose = getenv("TOML_VERBOSE") != NULL;
    for (size_t i = 0; i < l.n; i++) {
        const char *name = l.v[i] + strlen(dir) + 1;
        size_t tl;
        char *t = read_file(l.v[i], &tl);
        toml_error err;
        toml_value *v = t ? toml_parse(t, tl, &err) : NULL;
        if (t == NULL) {
            print_message("invalid case %s FAILED: cannot read\n", name);
            failed++;
        } else if (v != NULL) {
            print_message("invalid case %s FAILED: accepted\n", name);
            failed++;
        } else if (err.line < 1 || err.col < 1 || err.msg[0] == '\0') {
            print_message("invalid case %s FAILED: no position or message\n", name);
            failed++;
        } else if (verbose)
            print_message("%-50s %d:%d: %s\n", name, err.line, err.col, err.msg);
        toml_free(v);
        free(t);
    }
    print_message("toml invalid: %zu cases, %d failed (from %s)\n", l.n, failed, dir);
    size_t n = l.n;
    pathlist_free(&l);
    assert_int_equal(failed, 0);
    assert_int_equal(n, 64);
}

/* ------------------------------------------------------- error positions */

typedef struct errcase {
    const char *doc;
    size_t len; /* 0: strlen(doc) */
    int line, col;
    const char *msg; /* must occur in the message */
} errcase;

#define BIN(s) s, sizeof(s) - 1

static const errcase err_cases[] = {
    {"a = 1\na = 2\n", 0, 2, 1, "duplicate key 'a' (first defined at line 1)"},
    {"a = \"abc\nb = 1\n", 0, 1, 5, "unterminated basic string"},
    {"a = \"x\\qy\"", 0, 1, 7, "invalid escape '\\q'"},
    {"a = 'abc", 0, 1, 5, "unterminated literal string"},
    {"a = \"\"\"\nabc\n", 0, 1, 5, "unterminated multi-line basic string"},
    {"x = 1\na = '''abc\n\n", 0, 2, 5, "unterminated multi-line literal string"},
    {"a = \"\\uD800\"", 0, 1, 6, "invalid unicode escape '\\uD800'"},
    {"a = \"\\U00110000\"", 0, 1, 6, "not a unicode scalar value"},
    {"a = \"\\u12\"", 0, 1, 6, "needs 4 hex digits"},
    {"a = 01", 0, 1, 5, "leading zeros are not allowed"},
    {"a = 1__2", 0, 1, 6, "'_' must be between digits"},
    {"a = 9223372036854775808", 0, 1, 5, "integer out of range"},
    {"a = -9223372036854775809", 0, 1, 5, "integer out of range"},
    {"a = 0x8000000000000000", 0, 1, 5, "integer out of range"},
    {"a = -0x1", 0, 1, 5, "sign is not allowed"},
    {"a = 0xG", 0, 1, 7, "expected a digit in hexadecimal integer"},
    {"a = 1.", 0, 1, 7, "expected a digit in fraction"},
    {"a = 1e", 0, 1, 7, "expected a digit in exponent"},
    {"a = 1 2", 0, 1, 7, "unexpected '2' after value"},
    {"a = [1 2]", 0, 1, 8, "expected ',' or ']' in array"},
    {"a = [1,2", 0, 1, 5, "unterminated array"},
    {"a = {b = 1,}", 0, 1, 12, "trailing comma not allowed"},
    {"a = {b = 1\n}", 0, 1, 11, "newline not allowed in inline table"},
    {"a = {}\n[a.b]", 0, 2, 2, "cannot extend inline table 'a'"},
    {"[a]\n[a]", 0, 2, 2, "table 'a' already defined at line 1"},
    {"a = [1]\n[[a]]", 0, 2, 3, "cannot append to static array 'a'"},
    {"[a]\nb.c = 1\n[a.b]", 0, 3, 4, "table 'b' already defined at line 2"},
    {"a.b = 1\na.b.c = 2", 0, 2, 3, "key 'b' already defined as integer at line 1"},
    {"d = 1979-02-29", 0, 1, 13, "day 29 out of range for 1979-02 (01..28)"},
    {"d = 1979-13-01", 0, 1, 10, "month 13 out of range (01..12)"},
    {"x = 1\nt = 07:32", 0, 2, 10, "expected ':' and seconds after the minute"},
    {"d = 1979-05-27T07:32Z", 0, 1, 21, "(TOML 1.0 requires seconds), found 'Z'"},
    {"d = [1979-05-27T24:00:00]", 0, 1, 17, "hour 24 out of range (00..23)"},
    {"d = 1979-05-27 07:60:00", 0, 1, 19, "minute 60 out of range (00..59)"},
    {"d = 1979-05-27T07:32:61", 0, 1, 22, "second 61 out of range (00..60)"},
    {"d = 1979-05-27T07:32:00+24:00", 0, 1, 25, "offset hour 24 out of range (00..23)"},
    {"d = 1979-05-27T07:32:00-07:60", 0, 1, 28, "offset minute 60 out of range (00..59)"},
    {"d = 1979-05-27T07:32:00-0700", 0, 1, 25, "offset hour must have 2 digits"},
    {"d = 1979-05-27T07:32:00.Z", 0, 1, 25, "expected a digit after '.' in the seconds, found 'Z'"},
    {"d = 1979-05-27T07:32:00Zx", 0, 1, 25, "unexpected 'x' after offset date-time"},
    {"d = 1979-05-27T07:32:00.5:", 0, 1, 26, "unexpected ':' after local date-time"},
    {"d = 1979-05-27X", 0, 1, 15, "unexpected 'X' after local date"},
    {"d = 1979-05-27T", 0, 1, 16, "expected a 2-digit hour, found end of input"},
    {"d = 10000-01-01", 0, 1, 5, "year must have 4 digits"},
    {"d = 1979-5-27", 0, 1, 10, "month must have 2 digits"},
    {"d = 1979-05-7", 0, 1, 13, "day must have 2 digits"},
    {"t = 7:32:00", 0, 1, 5, "hour must have 2 digits"},
    {"t = 07:32:00-07:00", 0, 1, 13, "a local time cannot have an offset"},
    {"t = 07:32:00 Z", 0, 1, 14, "unexpected 'Z' after value"},
    {"t = {a = 07:3:00}", 0, 1, 13, "minute must have 2 digits"},
    {"d = 1979-05-27 7:32:00", 0, 1, 16, "hour must have 2 digits"},
    {"a = 1\rb = 2", 0, 1, 6, "unexpected bare carriage return after value"},
    {BIN("# comment \x01\n"), 1, 11, "control character U+0001 in comment"},
    {BIN("a = \"\xff\""), 1, 6, "invalid UTF-8 byte 0xFF in string"},
    {BIN("a = \"\xed\xa0\x80\""), 1, 6, "invalid UTF-8"}, /* encoded surrogate */
    {BIN("a = \"\xc0\xaf\""), 1, 6, "invalid UTF-8"},     /* overlong */
    {BIN("a = \"x\0y\""), 1, 7, "control character U+0000 in string"},
    {BIN("a = 1\n\0"), 2, 1, "expected a key, found control character U+0000"},
    {"a = true\nb = True", 0, 2, 5, "invalid value 'True'"},
    {"a b = 1", 0, 1, 3, "expected '=' after key, found 'b'"},
    {"= 1", 0, 1, 1, "expected a key, found '='"},
    {"[a\nb = 1", 0, 1, 3, "expected ']' to end the table header, found newline"},
    {"[[a]\n", 0, 1, 5, "expected ']]'"},
    {"a = \"\"\"\nline\n  \\qx\"\"\"", 0, 3, 3, "invalid escape '\\q'"},
    {"a = \"\"\"\nx \\  y\"\"\"", 0, 2, 3, "followed by whitespace must end the line"},
    {"a = \"\"\"\nx\ry\"\"\"", 0, 2, 2, "bare carriage return in string"},
    {"[[a]]\n[a]", 0, 2, 2, "key 'a' already defined as array of tables at line 1"},
    {"a = {x = 1}\na.y = 2", 0, 2, 1, "cannot extend inline table 'a'"},
    {"[a.b.c]\n[a]\nb.d = 1", 0, 3, 1, "cannot extend table 'b' with dotted keys"},
    {"[a]\nx = [1]\n[a.x.y]", 0, 3, 4, "key 'x' already defined as array at line 2"},
    {"a = 1.5e999", 0, 1, 5, "float out of range"},
    {"\357\273\277a = 1\nb = =", 0, 2, 5, "expected a value, found '='"},
    {"a = \"x\"\r\nb = \"y\r\n", 0, 2, 5, "unterminated basic string"},
    {"a = 1 # ok\r\nb = 2 \x7f", 0, 2, 7, "unexpected control character U+007F after value"},
    {"\"a\\u0000b\" = 1\n\"a\\u0000b\" = 2", 0, 2, 1, "duplicate key 'a\\x00b'"},
    {"a = {b = 1, b = 2}", 0, 1, 13, "duplicate key 'b' (first defined at line 1)"},
    {"x = \"\"\"\"\"\"\"\"\"", 0, 1, 13, "unexpected '\"' after value"},
    {"\"\"\"k\"\"\" = 1", 0, 1, 1, "a multi-line string cannot be a key"},
    {"a = 'x'\n\n   [b] junk", 0, 3, 8, "unexpected 'j' after table header"},
    {"a = [\n 1, # c \x02\n]", 0, 2, 9, "control character U+0002 in comment"},
    {"a = \"\\", 0, 1, 5, "unterminated basic string"},
    {"a = \"\\\x01\"", 0, 1, 6, "invalid escape: '\\' followed by control character U+0001"},
    {"a = 0b102", 0, 1, 9, "unexpected '2' in binary integer"},
    {"a = 0o8", 0, 1, 7, "expected a digit in octal integer"},
    {BIN("# ok \xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e\n# bad \xf4\x90\x80\x80\n"), 2, 7,
     "invalid UTF-8 byte 0xF4 in comment"},
    {BIN("# \xe0\x80\xaf overlong\n"), 1, 3, "invalid UTF-8 byte 0xE0 in comment"},
    {BIN("a = \"\xe2\x82\""), 1, 6, "invalid UTF-8 byte 0xE2 in string"}, /* cut short */
    {"a = 1\n\rb = 2", 0, 2, 1, "unexpected bare carriage return"},
    {"a = [1,\n2", 0, 1, 5, "unterminated array"},
    {"a = {b = 1", 0, 1, 5, "unterminated inline table"},
    {"a = \"\\\t\"", 0, 1, 6, "invalid escape: '\\' followed by tab"},
    {BIN("a = \xc3\xa9"), 1, 5, "expected a value, found character U+00E9"},
    {"a = 'x\ty\x7f'", 0, 1, 9, "control character U+007F in string"},
    {"a = 1_000_", 0, 1, 10, "'_' must be between digits"},
    {"a = +_1", 0, 1, 6, "expected a digit in number, found '_'"},
    {"a = 1.5.", 0, 1, 8, "unexpected '.' in number"},
    {"a = 1e5e", 0, 1, 8, "unexpected 'e' in number"},
};

static void error_positions(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof err_cases / sizeof err_cases[0]; i++) {
        const errcase *c = &err_cases[i];
        toml_error err;
        toml_value *v = toml_parse(c->doc, c->len ? c->len : strlen(c->doc), &err);
        if (v != NULL || err.line != c->line || err.col != c->col ||
            strstr(err.msg, c->msg) == NULL) {
            print_message("case %zu: got %s %d:%d '%s', want %d:%d '%s'\n", i,
                          v ? "accepted" : "rejected", err.line, err.col, err.msg, c->line,
                          c->col, c->msg);
            toml_free(v);
            fail();
        }
    }
}

static void error_duplicate_message_exact(void **state)
{
    (void)state;
    toml_error err;
    assert_null(parse("x = 1\n\n\"a\" = 1\n[t]\n'a' = 2\n[t2]\nz=0\n[t]\n", &err));
    assert_int_equal(err.line, 8);
    assert_int_equal(err.col, 2);
    assert_string_equal(err.msg, "table 't' already defined at line 4");
    assert_null(parse("x = 1\n\n\"a\" = 1\na = 2\n", &err));
    assert_int_equal(err.line, 4);
    assert_int_equal(err.col, 1);
    assert_string_equal(err.msg, "duplicate key 'a' (first defined at line 3)");
}

static void error_long_key_is_shortened(void **state)
{
    (void)state;
    size_t n;
    char *k = malloc(301);
    assert_non_null(k);
    memset(k, 'k', 300);
    k[300] = '\0';
    char doc[700];
    snprintf(doc, sizeof doc, "%s = 1\n%s = 2\n", k, k);
    toml_error err;
    assert_null(parse(doc, &err));
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.msg, "duplicate key 'kkkkkkkkkkkkkkkkkkkk"));
    assert_non_null(strstr(err.msg, "...' (first defined at line 1)"));
    n = strlen(err.msg);
    assert_true(n < sizeof err.msg - 1);
    free(k);
}

static void error_null_err_is_fine(void **state)
{
    (void)state;
    assert_null(toml_parse("a = ", 4, NULL));
    toml_value *v = toml_parse("a = 1", 5, NULL);
    assert_non_null(v);
    toml_free(v);
}

/* ------------------------------------------------------------------- API */

static void api_order_and_lookup(void **state)
{
    (void)state;
    toml_error err;
    toml_value *v = parse("b = 1\na = 'two'\nc = [3, 4.5, true]\n[t]\nz = 1\n", &err);
    assert_non_null(v);
    assert_int_equal(toml_type_of(v), TOML_TABLE);
    assert_int_equal(toml_count(v), 4);
    assert_string_equal(toml_key_at(v, 0), "b");
    assert_string_equal(toml_key_at(v, 1), "a");
    assert_string_equal(toml_key_at(v, 2), "c");
    assert_string_equal(toml_key_at(v, 3), "t");
    assert_null(toml_key_at(v, 4));
    assert_null(toml_at(v, 4));
    assert_ptr_equal(toml_at(v, 1), toml_get(v, "a"));
    assert_int_equal(toml_int(toml_get(v, "b")), 1);
    assert_string_equal(toml_string(toml_get(v, "a"), NULL), "two");
    assert_null(toml_get(v, "zz"));
    assert_null(toml_get(v, ""));
    const toml_value *c = toml_get(v, "c");
    assert_int_equal(toml_type_of(c), TOML_ARRAY);
    assert_int_equal(toml_count(c), 3);
    assert_null(toml_key_at(c, 0));
    assert_null(toml_get(c, "0"));
    assert_int_equal(toml_type_of(toml_at(c, 0)), TOML_INTEGER);
    assert_true(toml_float(toml_at(c, 1)) == 4.5);
    assert_int_equal(toml_bool(toml_at(c, 2)), 1);
    assert_null(toml_at(c, 3));
    assert_int_equal(toml_count(toml_at(c, 0)), 0);
    assert_int_equal(toml_int(toml_get(toml_get(v, "t"), "z")), 1);
    assert_string_equal(toml_type_name(TOML_TABLE), "table");
    assert_string_equal(toml_type_name(TOML_ARRAY), "array");
    assert_string_equal(toml_type_name(TOML_STRING), "string");
    assert_string_equal(toml_type_name(TOML_INTEGER), "integer");
    assert_string_equal(toml_type_name(TOML_FLOAT), "float");
    assert_string_equal(toml_type_name(TOML_BOOL), "bool");
    toml_free((toml_value *)toml_get(v, "t")); /* not a root: ignored */
    toml_free(NULL);
    assert_int_equal(toml_int(toml_get(toml_get(v, "t"), "z")), 1);
    toml_free(v);
}

static void api_positions(void **state)
{
    (void)state;
    toml_error err;
    toml_value *v = parse("  k = 1\n"           /* 1 */
                          "s = \"\"\"\n"         /* 2 */
                          "two\n"                /* 3 */
                          "lines\"\"\"\n"        /* 4 */
                          "arr = [ 10,\n"        /* 5 */
                          "   20 ]\n"            /* 6 */
                          "[x . \"y\"]\n"        /* 7 */
                          "a.bb.c = 1\n"         /* 8 */
                          "[[aot]]\n"            /* 9 */
                          "[[aot]]\n",           /* 10 */
                          &err);
    assert_non_null(v);
    int line, col;
    toml_pos(toml_get(v, "k"), &line, &col);
    assert_int_equal(line, 1);
    assert_int_equal(col, 3);
    toml_pos(toml_get(v, "s"), &line, &col);
    assert_int_equal(line, 2);
    assert_int_equal(col, 1);
    const toml_value *arr = toml_get(v, "arr");
    toml_pos(toml_at(arr, 0), &line, &col);
    assert_int_equal(line, 5);
    assert_int_equal(col, 9);
    toml_pos(toml_at(arr, 1), &line, &col);
    assert_int_equal(line, 6);
    assert_int_equal(col, 4);
    const toml_value *x = toml_get(v, "x");
    toml_pos(x, &line, &col); /* implicitly created by [x.y] */
    assert_int_equal(line, 7);
    assert_int_equal(col, 2);
    const toml_value *y = toml_get(x, "y");
    toml_pos(y, &line, &col);
    assert_int_equal(line, 7);
    assert_int_equal(col, 6);
    const toml_value *a = toml_get(y, "a");
    toml_pos(toml_get(toml_get(a, "bb"), "c"), &line, &col);
    assert_int_equal(line, 8);
    assert_int_equal(col, 6);
    toml_pos(toml_get(a, "bb"), &line, &col);
    assert_int_equal(line, 8);
    assert_int_equal(col, 3);
    const toml_value *aot = toml_get(v, "aot");
    assert_int_equal(toml_count(aot), 2);
    toml_pos(toml_at(aot, 1), &line, &col);
    assert_int_equal(line, 10);
    assert_int_equal(col, 3);
    toml_free(v);
}

static void api_strings(void **state)
{
    (void)state;
    toml_error err;
    toml_value *v = parse("nul = \"a\\u0000b\"\n"
                          "esc = \"\\b\\t\\n\\f\\r\\\"\\\\\\u00e9\\U0001F600\\u20AC\"\n"
                          "lit = 'C:\\path\\n'\n"
                          "ml = \"\"\"\nab\\\n    cd \\  \n\n  e\"\"\"\n"
                          "mll = '''\r\nx\r\ny'''\n"
                          "q = \"\"\"\"\"x\"\"\"\"\"\n"
                          "lq = ''''x'''''\n"
                          "empty = \"\"\n"
                          "\"\" = 'empty key'\n"
                          "\"\\u0000k\" = 1\n",
                          &err);
    if (v == NULL)
        fail_msg("%d:%d: %s", err.line, err.col, err.msg);
    size_t n;
    const char *s = toml_string(toml_get(v, "nul"), &n);
    assert_int_equal(n, 3);
    assert_memory_equal(s, "a\0b", 4);
    s = toml_string(toml_get(v, "esc"), &n);
    assert_int_equal(n, 16);
    assert_memory_equal(s, "\b\t\n\f\r\"\\\xc3\xa9\xf0\x9f\x98\x80\xe2\x82\xac", 17);
    assert_string_equal(toml_string(toml_get(v, "lit"), NULL), "C:\\path\\n");
    assert_string_equal(toml_string(toml_get(v, "ml"), NULL), "abcd e");
    assert_string_equal(toml_string(toml_get(v, "mll"), NULL), "x\ny");
    assert_string_equal(toml_string(toml_get(v, "q"), NULL), "\"\"x\"\"");
    assert_string_equal(toml_string(toml_get(v, "lq"), NULL), "'x''");
    s = toml_string(toml_get(v, "empty"), &n);
    assert_int_equal(n, 0);
    assert_string_equal(s, "");
    assert_string_equal(toml_string(toml_get(v, ""), NULL), "empty key");
    /* a key with a NUL is kept whole; toml_key_at shows it up to the NUL */
    assert_int_equal(toml_count(v), 10);
    assert_string_equal(toml_key_at(v, 9), "");
    assert_int_equal(toml_type_of(toml_at(v, 9)), TOML_INTEGER);
    /* the wrong accessor gives a neutral answer */
    assert_null(toml_string(toml_at(v, 9), &n));
    assert_int_equal(n, 0);
    toml_free(v);
}

static void api_numbers(void **state)
{
    (void)state;
    toml_error err;
    toml_value *v = parse("max = 9223372036854775807\n"
                          "min = -9223372036854775808\n"
                          "hex = 0xDEAD_beef\n"
                          "oct = 0o7_55\n"
                          "bin = 0b1101_0110\n"
                          "hmax = 0x7FFFFFFFFFFFFFFF\n"
                          "z = +0\n"
                          "u = 1_000_000\n"
                          "f1 = -1_0.2_5e+0_2\n"
                          "f2 = 5E-3\n"
                          "f3 = 0e0\n"
                          "ninf = -inf\n"
                          "pnan = +nan\n"
                          "neg0 = -0.0\n"
                          "tiny = 1e-400\n"
                          "b = false\n",
                          &err);
    if (v == NULL)
        fail_msg("%d:%d: %s", err.line, err.col, err.msg);
    assert_true(toml_int(toml_get(v, "max")) == INT64_MAX);
    assert_true(toml_int(toml_get(v, "min")) == INT64_MIN);
    assert_int_equal(toml_int(toml_get(v, "hex")), 0xDEADBEEF);
    assert_int_equal(toml_int(toml_get(v, "oct")), 0755);
    assert_int_equal(toml_int(toml_get(v, "bin")), 0xD6);
    assert_true(toml_int(toml_get(v, "hmax")) == INT64_MAX);
    assert_int_equal(toml_int(toml_get(v, "z")), 0);
    assert_int_equal(toml_int(toml_get(v, "u")), 1000000);
    assert_true(toml_float(toml_get(v, "f1")) == -1025.0);
    assert_true(toml_float(toml_get(v, "f2")) == 5e-3);
    assert_true(toml_float(toml_get(v, "f3")) == 0.0);
    assert_true(isinf(toml_float(toml_get(v, "ninf"))) && toml_float(toml_get(v, "ninf")) < 0);
    assert_true(isnan(toml_float(toml_get(v, "pnan"))));
    assert_true(signbit(toml_float(toml_get(v, "neg0"))));
    assert_true(toml_float(toml_get(v, "tiny")) == 0.0);
    assert_int_equal(toml_type_of(toml_get(v, "b")), TOML_BOOL);
    assert_int_equal(toml_bool(toml_get(v, "b")), 0);
    assert_int_equal(toml_int(toml_get(v, "f1")), 0); /* wrong accessor */
    toml_free(v);
}

/* -------------------------------------------------------------- datetimes */

typedef struct dtcase {
    const char *text; /* as written after "v = " */
    toml_type type;
    const char *want; /* toml_datetime() */
} dtcase;

static const dtcase dt_valid[] = {
    {"1979-05-27T07:32:00Z", TOML_DATETIME, "1979-05-27T07:32:00Z"},
    {"1979-05-27T00:32:00-07:00", TOML_DATETIME, "1979-05-27T00:32:00-07:00"},
    {"1979-05-27T00:32:00.999999-07:00", TOML_DATETIME, "1979-05-27T00:32:00.999999-07:00"},
    {"1979-05-27 07:32:00Z", TOML_DATETIME, "1979-05-27T07:32:00Z"},
    {"1979-05-27t07:32:00z", TOML_DATETIME, "1979-05-27T07:32:00Z"},
    {"1987-07-05 17:45:56.6+08:00", TOML_DATETIME, "1987-07-05T17:45:56.6+08:00"},
    {"1987-07-05T17:45:56.1234Z", TOML_DATETIME, "1987-07-05T17:45:56.1234Z"},
    {"1987-07-05T17:45:56.100Z", TOML_DATETIME, "1987-07-05T17:45:56.100Z"},
    {"2024-01-01T00:00:00-00:00", TOML_DATETIME, "2024-01-01T00:00:00-00:00"},
    {"2024-01-01T00:00:00+23:59", TOML_DATETIME, "2024-01-01T00:00:00+23:59"},
    {"2016-12-31T23:59:60Z", TOML_DATETIME, "2016-12-31T23:59:60Z"},
    {"0000-01-01T00:00:00Z", TOML_DATETIME, "0000-01-01T00:00:00Z"},
    {"9999-12-31T23:59:59Z", TOML_DATETIME, "9999-12-31T23:59:59Z"},
    {"1979-05-27T07:32:00", TOML_DATETIME_LOCAL, "1979-05-27T07:32:00"},
    {"1979-05-27T00:32:00.999999", TOML_DATETIME_LOCAL, "1979-05-27T00:32:00.999999"},
    {"1979-05-27 07:32:00", TOML_DATETIME_LOCAL, "1979-05-27T07:32:00"},
    {"1979-05-27t07:32:00.5", TOML_DATETIME_LOCAL, "1979-05-27T07:32:00.5"},
    {"1979-05-27", TOML_DATE_LOCAL, "1979-05-27"},
    {"2000-02-29", TOML_DATE_LOCAL, "2000-02-29"},
    {"2024-02-29", TOML_DATE_LOCAL, "2024-02-29"},
    {"2023-04-30", TOML_DATE_LOCAL, "2023-04-30"},
    {"2023-12-31", TOML_DATE_LOCAL, "2023-12-31"},
    {"07:32:00", TOML_TIME_LOCAL, "07:32:00"},
    {"00:32:00.999999", TOML_TIME_LOCAL, "00:32:00.999999"},
    {"23:59:59.123456789012345678", TOML_TIME_LOCAL, "23:59:59.123456789012345678"},
    {"00:00:00", TOML_TIME_LOCAL, "00:00:00"},
    {"1979-05-27T07:32:00Z # comment", TOML_DATETIME, "1979-05-27T07:32:00Z"},
    {"1979-05-27 # a date, then a comment", TOML_DATE_LOCAL, "1979-05-27"},
    {"1979-05-27\t", TOML_DATE_LOCAL, "1979-05-27"},
};

/* Each must be rejected; the error points into the value (col >= 5). */
static const char *const dt_invalid[] = {
    "2023-02-29",                  /* not a leap year */
    "1900-02-29",                  /* a century that is not a leap year */
    "2024-02-30",
    "2023-04-31",
    "2023-00-10",
    "2023-13-10",
    "2023-01-00",
    "2023-01-32",
    "10000-01-01",                 /* 5-digit year */
    "999-01-01",
    "2023-1-01",
    "2023-01-1",
    "2023-01-01T",                 /* a separator, no time */
    "2023-01-01t1:00:00",
    "2023-01-01T24:00:00",
    "2023-01-01T12:60:00",
    "2023-01-01T12:00:61",
    "2023-01-01T12:00",            /* no seconds: TOML 1.0 requires them */
    "12:00",
    "2023-01-01T12:00Z",
    "2023-01-01T12:00:00.",        /* fraction without digits */
    "2023-01-01T12:00:00.Z",
    "12:00:00.",
    "12:00:00..5",
    "2023-01-01T12:00:00+1:00",
    "2023-01-01T12:00:00+01",
    "2023-01-01T12:00:00+0100",
    "2023-01-01T12:00:00+",
    "2023-01-01T12:00:00+24:00",
    "2023-01-01T12:00:00-00:60",
    "2023-01-01T12:00:00ZZ",       /* trailing garbage */
    "2023-01-01T12:00:00Z:",
    "2023-01-01T12:00:00x",
    "2023-01-01x",
    "2023-01-01-",
    "2023-01-0112:00:00",          /* no separator */
    "2023-01-01_12:00:00",
    "12:00:00Z",                   /* a local time with an offset */
    "12:00:00+01:00",
    "1:00:00",
    "12:0:00",
    "12:00:0",
    "2023/01/01",
    "+2023-01-01",
    "2023--01-01",
    "2023-01-01T12:00:00Z 1",
    "2023-01-01 12:00:00 x",
};

static void datetime_valid_values(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof dt_valid / sizeof dt_valid[0]; i++) {
        const dtcase *c = &dt_valid[i];
        char doc[128];
        snprintf(doc, sizeof doc, "v = %s\nafter = 1", c->text);
        toml_error err;
        toml_value *v = parse(doc, &err);
        const toml_value *x = v ? toml_get(v, "v") : NULL;
        if (v == NULL)
            print_message("dt_valid[%zu] '%s' rejected: %d:%d: %s\n", i, c->text, err.line,
                          err.col, err.msg);
        else if (toml_type_of(x) != c->type || toml_datetime(x) == NULL ||
                 strcmp(toml_datetime(x), c->want) != 0 ||
                 toml_int(toml_get(v, "after")) != 1)
            print_message("dt_valid[%zu] '%s': got %s '%s', want %s '%s'\n", i, c->text,
                          toml_type_name(toml_type_of(x)),
                          toml_datetime(x) ? toml_datetime(x) : "(null)",
                          toml_type_name(c->type), c->want);
        else {
            toml_free(v);
            continue;
        }
        failed++;
        toml_free(v);
    }
    assert_int_equal(failed, 0);
}

static void datetime_invalid_values(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof dt_invalid / sizeof dt_invalid[0]; i++) {
        char doc[128];
        snprintf(doc, sizeof doc, "v = %s", dt_invalid[i]);
        toml_error err;
        toml_value *v = parse(doc, &err);
        if (v != NULL || err.line != 1 || err.col < 5 ||
            (size_t)err.col > strlen(doc) + 1 || err.msg[0] == '\0') {
            print_message("dt_invalid[%zu] '%s': %s %d:%d '%s'\n", i, dt_invalid[i],
                          v ? "accepted" : "rejected at", err.line, err.col, err.msg);
            failed++;
        }
        toml_free(v);
        /* the same inside an array and an inline table */
        snprintf(doc, sizeof doc, "a = [1979-05-27, %s]", dt_invalid[i]);
        v = parse(doc, &err);
        if (v != NULL) {
            print_message("dt_invalid[%zu] '%s' accepted in an array\n", i, dt_invalid[i]);
            failed++;
        }
        toml_free(v);
        snprintf(doc, sizeof doc, "t = {v = %s}", dt_invalid[i]);
        v = parse(doc, &err);
        if (v != NULL) {
            print_message("dt_invalid[%zu] '%s' accepted in an inline table\n", i,
                          dt_invalid[i]);
            failed++;
        }
        toml_free(v);
    }
    assert_int_equal(failed, 0);
}

/* Every day of 400 years (a full Gregorian cycle) and the day after each
 * month's last: exactly the real calendar dates are accepted. */
static void datetime_calendar(void **state)
{
    (void)state;
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    long accepted = 0;
    for (int y = 1600; y < 2000; y++) {
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        for (int m = 1; m <= 12; m++) {
            int last = dm[m - 1] + (m == 2 && leap);
            for (int d = 1; d <= 32; d++) {
                char doc[64];
                snprintf(doc, sizeof doc, "d = %04d-%02d-%02d", y, m, d);
                toml_error err;
                toml_value *v = parse(doc, &err);
                if ((v != NULL) != (d <= last))
                    fail_msg("%s: %s", doc, v ? "accepted" : err.msg);
                if (v != NULL) {
                    assert_string_equal(toml_datetime(toml_get(v, "d")), doc + 4);
                    accepted++;
                } else
                    assert_int_equal(err.col, 13);
                toml_free(v);
            }
        }
    }
    assert_int_equal(accepted, 400 * 365 + 97); /* 97 leap days per 400 years */
}

static void datetime_api(void **state)
{
    (void)state;
    /* the new types come after TOML_BOOL: older numbering is unchanged */
    assert_int_equal(TOML_BOOL, 5);
    assert_int_equal(TOML_DATETIME, 6);
    assert_int_equal(TOML_TIME_LOCAL, 9);
    assert_string_equal(toml_type_name(TOML_DATETIME), "datetime");
    assert_string_equal(toml_type_name(TOML_DATETIME_LOCAL), "datetime-local");
    assert_string_equal(toml_type_name(TOML_DATE_LOCAL), "date-local");
    assert_string_equal(toml_type_name(TOML_TIME_LOCAL), "time-local");
    toml_error err;
    toml_value *v = parse("# dates\n"
                          "odt = 1979-05-27 07:32:00.25-07:00\n"
                          "[t]\n"
                          "list = [ 07:32:00 , 1979-05-27,\n"
                          "  1979-05-27T07:32:00 ]\n"
                          "in = {d = 2000-02-29, s = \"1979-05-27\"}\n"
                          "2001-02-03 = 2001-02-03\n",
                          &err);
    if (v == NULL)
        fail_msg("%d:%d: %s", err.line, err.col, err.msg);
    const toml_value *odt = toml_get(v, "odt");
    assert_int_equal(toml_type_of(odt), TOML_DATETIME);
    assert_string_equal(toml_datetime(odt), "1979-05-27T07:32:00.25-07:00");
    int line, col;
    toml_pos(odt, &line, &col);
    assert_int_equal(line, 2);
    assert_int_equal(col, 1);
    /* other accessors refuse a datetime; toml_datetime refuses the rest */
    size_t len = 99;
    assert_null(toml_string(odt, &len));
    assert_int_equal(len, 0);
    assert_int_equal(toml_int(odt), 0);
    assert_int_equal(toml_count(odt), 0);
    const toml_value *t = toml_get(v, "t");
    assert_null(toml_datetime(t));
    assert_null(toml_datetime(NULL));
    const toml_value *list = toml_get(t, "list");
    assert_int_equal(toml_count(list), 3);
    assert_int_equal(toml_type_of(toml_at(list, 0)), TOML_TIME_LOCAL);
    assert_int_equal(toml_type_of(toml_at(list, 1)), TOML_DATE_LOCAL);
    assert_int_equal(toml_type_of(toml_at(list, 2)), TOML_DATETIME_LOCAL);
    assert_string_equal(toml_datetime(toml_at(list, 2)), "1979-05-27T07:32:00");
    toml_pos(toml_at(list, 2), &line, &col);
    assert_int_equal(line, 5);
    assert_int_equal(col, 3);
    const toml_value *in = toml_get(t, "in");
    assert_string_equal(toml_datetime(toml_get(in, "d")), "2000-02-29");
    assert_int_equal(toml_type_of(toml_get(in, "s")), TOML_STRING);
    assert_null(toml_datetime(toml_get(in, "s")));
    /* a bare key that looks like a date stays a key */
    assert_string_equal(toml_datetime(toml_get(t, "2001-02-03")), "2001-02-03");
    toml_free(v);
    /* a duplicate names the first value's type */
    assert_null(parse("d = 1979-05-27\nd.x = 1", &err));
    assert_string_equal(err.msg, "key 'd' already defined as date-local at line 1");
}

/* Shapes TOML 1.0 accepts around table definitions. */
static void api_table_rules_accept(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "[a.b]\n[a]\nx = 1\n",          /* define an implicit parent later */
        "[[a.b]]\n[a]\nx = 1\n",        /* the same through an array of tables */
        "a.b = 1\n[a.c]\nx = 1\n",      /* a sub-table of a dotted-key table */
        "[t]\nx.y = 1\nx.z = 2\n",      /* dotted keys extend their own tables */
        "[[p]]\nq.r = 1\n[[p]]\nq.r = 2\n[p.s]\n",
        "a = { b.c = 1, b.d = 2 }\n",   /* dotted keys inside an inline table */
        "x = [ {a = 1}, [2], \"s\" ]\n", /* mixed types */
        "x = [\n  1, # one\n  2,\n]\n", /* newlines, comments, trailing comma */
        "x = {a = [\n1,\n2]}\n",        /* an array inside an inline table may span lines */
        "x = { s = \"\"\"a\nb\"\"\" }\n", /* so may a multi-line string */
        "\357\273\277a = 1\n",          /* BOM */
        "",
        "# only a comment",
        "\n\r\n\t \n",
        "'quoted key' = 1\n\"\" = 2\n",
        "a=1#c\r\nb=2",
        "1.2 = 3\n",                      /* dotted bare key "1"."2" */
        "true = 1\ninf = 2\n",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        toml_error err;
        toml_value *v = parse(ok[i], &err);
        if (v == NULL)
            fail_msg("case %zu rejected: %d:%d: %s", i, err.line, err.col, err.msg);
        toml_free(v);
    }
    toml_value *v = toml_parse(NULL, 0, NULL);
    assert_non_null(v);
    assert_int_equal(toml_count(v), 0);
    toml_free(v);
    toml_error err;
    v = parse("1.2 = 3\n[[p]]\nq.r = 1\n[[p]]\nq.r = 2\n", &err);
    assert_non_null(v);
    assert_int_equal(toml_int(toml_get(toml_get(v, "1"), "2")), 3);
    const toml_value *p = toml_get(v, "p");
    assert_int_equal(toml_count(p), 2);
    assert_int_equal(toml_int(toml_get(toml_get(toml_at(p, 1), "q"), "r")), 2);
    toml_free(v);
}

/* --------------------------------------------------- TOML 1.0 rules */

typedef struct tdoc {
    const char *s;
    size_t len;
} tdoc;

#define DOC(s) {s, sizeof(s) - 1}

/* Documents TOML 1.0 rejects, one rule each (our own, beyond the suite). */
static const tdoc must_reject[] = {
    DOC("[[]]\ntitle = \"x\""),
    DOC("[ [table]]"),
    DOC("[naughty..naughty]"),
    DOC("[[table] ]"),
    DOC("[invalid key]"),
    DOC("[name=bad]"),
    DOC("[\"no end here]\nk = v"),
    DOC("[a]b]\nz = 1"),
    DOC("[tbl]\n[[tbl]]"),
    DOC("[[albums.songs]]\nn = 1\n[[albums]]\nname = \"x\""),
    DOC("[k#g]\nv = 1"),
    DOC("a = [{ b = 1 }]\n[a.c]\nfoo = 1"),
    DOC("[[tab.arr]]\n[tab]\narr.val1=1"),
    DOC("[a.b]\n[a]\n[a]"),
    DOC("[[a.b]]\n[a]\nb = 1"),
    DOC("a=true\n[[a]]"),
    DOC("a=1\n[a.b.c.d]"),
    DOC("[t1]\nt2.t3.v = 0\n[t1.t2.t3]"),
    DOC("a = {b = 1}\na.b = 2"),
    DOC("inline-t = {nest = {}}\n[[inline-t.nest]]"),
    DOC("inline-t = {nest = {}}\n[inline-t.nest]"),
    DOC("a = {b=1, b.c=2}"),
    DOC("tab = { inner.table = [{}], inner.table.val = \"bad\" }"),
    DOC("tab = { inner = { dog = \"best\" }, inner.cat = \"worst\" }"),
    DOC("[tab.nested]\ninline-t = { nest = {} }\n[tab]\nnested.inline-t.nest = 2"),
    DOC("t = {,}"),
    DOC("t = { , }"),
    DOC("t = {a=1,\nb=2}"),
    DOC("t = {a=1\n,b=2}"),
    DOC("multi-cr = \"\"\"null\r\"\"\""),
    DOC("rawmulti-cr = '''null\r'''"),
    DOC("string-cr = \"null\r\""),
    DOC("rawstring-cr = 'null\r'"),
    DOC("# comment \r"),
    DOC("# bare cr follows\r\n\r"),
    DOC("string-bs = \"backspace\x08\""),
    DOC("multi-del = \"\"\"null\x7f\"\"\""),
    DOC("rawmulti-us = '''null\x1f'''"),
    DOC("a = \x0c" "1"),
    DOC("\x0b" "a = 1"),
    DOC("\x00"),
    DOC("\x0c"),
    DOC("multi-null = \"\"\"null\x00\"\"\""),
    DOC("foo\xe3\x80\x80= \"bar\""),
    DOC("bom-not-at-start \xef\xbb\xbf= 1"),
    DOC("a = inf_1"),
    DOC("a = nan_1"),
    DOC("a = in"),
    DOC("a = +in"),
    DOC("a = Inf"),
    DOC("a = NaN"),
    DOC("a = 03.14"),
    DOC("a = -03.14"),
    DOC("a = +03.14"),
    DOC("a = 1e2.3"),
    DOC("a = 1.e2"),
    DOC("a = 3.e+20"),
    DOC("a = 1ee2"),
    DOC("a = 1e2__3"),
    DOC("a = 1e_23"),
    DOC("a = 1.2e3_"),
    DOC("a = 1.2e"),
    DOC("a = 1.2e-"),
    DOC("a = 1.2e+"),
    DOC("a = 1._2"),
    DOC("a = 1.2_"),
    DOC("a = -.5"),
    DOC("a = +.5"),
    DOC("a = \xd9\xa1"),
    DOC("a = 0B0"),
    DOC("a = 0O7"),
    DOC("a = --99"),
    DOC("a = 1__2"),
    DOC("a = 0b"),
    DOC("a = 0x"),
    DOC("a = 0o"),
    DOC("a = 0b0012"),
    DOC("a = 0xaafz"),
    DOC("a = 0x-1"),
    DOC("a = 0x_1"),
    DOC("a = 00"),
    DOC("a = 0_0"),
    DOC("a = -01"),
    DOC("a = +0_1"),
    DOC("a = -0b11"),
    DOC("a = +0xff"),
    DOC("a = -0o7"),
    DOC("a = 0x1_"),
    DOC("a = 0o78"),
    DOC(". = 1"),
    DOC("a..b = 1"),
    DOC(" = 1"),
    DOC("\"backslash is the last char\\"),
    DOC("\\u00c0 = \"x\""),
    DOC("a# = 1"),
    DOC("\"\"\"long\nkey\"\"\" = 1"),
    DOC("'''long key''' = 1"),
    DOC("1.1"),
    DOC("1"),
    DOC("\"\""),
    DOC("[abc = 1"),
    DOC("partial\"quoted\" = 5"),
    DOC("\"key = x"),
    DOC("["),
    DOC("\"a b\" c = 1"),
    DOC("\xc3\xa9 = 1"),
    DOC("[a]\n[xyz = 5\n[b]"),
    DOC("a\tb = 1"),
    DOC("a==1"),
    DOC("a=b=1"),
    DOC("key = "),
    DOC("\"key\""),
    DOC("fs.fw"),
    DOC("fs.fw ="),
    DOC("fs."),
    DOC("[error] this = \"should not be here\""),
    DOC("s = \"one\" \"two\""),
    DOC("a = \"\\e\""),
    DOC("a = \"\\x0A\""),
    DOC("s = \"\"\"three: \"\"\".\"\"\""),
    DOC("a = '''six: ''''''"),
    DOC("a = \"\"\"six: \"\"\"\"\"\""),
    DOC("k = \"\"\"t\\ t\"\"\""),
    DOC("k = \"\"\"t\\ \"\"\""),
    DOC("a = \"\"\"\n  foo \\ \\ bar\"\"\""),
    DOC("s = words then\""),
    DOC("s = \"mixed close'"),
    DOC("name = [value]"),
    DOC("name = { key = value }"),
    DOC("a = \"\\u00\""),
    DOC("a = \"\\uD801\""),
    DOC("a = \"\\uDFFF\""),
    DOC("a = \"\\U00110000\""),
    DOC("a = \"\"\"\\uD801\"\"\""),
    DOC("[[closing-bracket.missing]"),
    DOC("[[a"),
    DOC("[!]"),
    DOC("[.]"),
    DOC("[..]"),
    DOC("[\"\"\"key\"\"\"]"),
    DOC("['''key''']"),
    DOC("[tbl\n]"),
    DOC("[\ntbl]"),
    DOC("[a.]"),
    DOC("[a"),
    DOC("[\"a\""),
    DOC("x = [{ key = 42"),
    DOC("x = [{ key = 42 #"),
    DOC("fruit = []\n[[fruit]]"),
    DOC("fruit = [{}, {}]\n[[fruit]]"),
    DOC("a = [1, 2 3]"),
    DOC("a = [1 x, 2]"),
    DOC("a = [,]"),
    DOC("a = [1, 2,,]"),
    DOC("a = ["),
    DOC("a = [1,"),
    DOC("a = true false"),
    DOC("a = truee"),
    DOC("a = tru"),
    DOC("a = {}\n[a]"),
    DOC("a.b = 1\n[a]"),
    DOC("a = 1\na.b = 2"),
    DOC("[a]\nx.y = 1\n[a.x]"),
    DOC("[[a]]\n[a.b]\n[[a.b]]"),
    DOC("a = [[1]]\n[[a]]"),
    DOC("[a.b.c]\n[a]\nb.d = 1"),
    DOC("[[a.b]]\n[a]\nb.c = 1"),
};

/* Documents it accepts that sit right next to those rules. */
static const tdoc must_accept[] = {
    DOC("[fruit]\napple.color = \"red\"\n[[fruit.apple.seeds]]\nsize = 2"),
    DOC("a = { a.b = 1 }"),
    DOC("[tbl]\na.b.c = {d.e=1}"),
    DOC("[[arr]]\na.b.c=1\na.b.d=2\n[[arr]]\na.b.C=3\na.b.D=4"),
    DOC("arr-3 = [{a.b = 1}, {a.b = 2}]\narr-4 = [\"str\", {a.b = 1}, {a.b = 2}]"),
    DOC("[a.b.c]\nv = 1\n[a]\nbetter = 43"),
    DOC("[a]\nbetter = 43\n[a.b.c]\nv = 1"),
    DOC("''.x = \"empty.x\"\nx.\"\" = \"x.empty\"\n[a]\n\"\".'' = \"empty.empty\""),
    DOC("['']\nx = 1\n[\"\".a]\nx = 2\n[a.'']\nx = 3"),
    DOC("[true]\n[false]\n[inf]\n[nan]"),
    DOC("2001-02-03 = 1\n-1 = 2\n_ = 3"),
    DOC("[section]#attached comment\n#[notsection]\none = \"11\"#cmt\ntwo = \"22#\"\nthree = '#'\nfour = \"\"\"# no comment\n# nor this\n#also not comment\"\"\"#is_comment\nfive = 5.5#66\nsix = 6#7\n8 = \"eight\"\nnine = [1#cmt\n,2]#cmt"),
    DOC("clap-2 = { version = \"4\"\t   \t,\t  \tfeatures = [   \"derive\"  ,  \t  \"cargo\"   ]   , nest   =   {  \t  \"a\"   =   'x'  , \t  'b'   = [ 1.5    ,   9.8  ]  } }"),
    DOC("[[parent-table.arr]]\n[[parent-table.arr]]\n[parent-table]\nnot-arr = 1"),
    DOC("[[a.b]]\nx = 1\n[a]\ny = 2"),
    DOC("a = \"\"\"\n  foo \\ \n  bar\"\"\""),
    DOC("a = \"\"\"\\\r\n\n  x\"\"\""),
    DOC("lit_one = ''''one quote''''\nlit_two = '''''two quotes'''''\none = \"\"\"\"one quote\"\"\"\"\ntwo = \"\"\"\"\"two quotes\"\"\"\"\""),
    DOC("\"~!@$^&*()_+-={}[]|\\\\:;\\\"'<>,.?/\" = 1"),
    DOC("a = \"\\U00000000\\u0000\""),
    DOC("a = \"\"\"\n\"\"\""),
    DOC("x = [[[]], [], {}]"),
    DOC("a = [\n# c\n]"),
    DOC("a = {}\nb = {a = {}}"),
    DOC("[a]\n[a.b]\n[a.b.c]\n[a.d]"),
    DOC("a = 0x0\nb = 0o0\nc = 0b0\nd = 0xffff_ffff\ne = -0\nf = +0.0\ng = 1e-0\nh = 1E+00"),
    DOC("[[a]]\n[[a.b]]\n[a.b.c]\n[[a]]\n[[a.b]]\n[a.b.c]"),
    DOC("a = [1979-05-27,1979-05-27T07:32:00Z]\nb = {c=07:32:00}\nc = [07:32:00]"),
    DOC("a = 1979-05-27 07:32:00\r\nb = 1979-05-27\r\n"),
    DOC("1979-05-27 = 1979-05-27\n07 = 1\n'07:32:00' = 07:32:00"),
};

static void spec_rejections(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof must_reject / sizeof must_reject[0]; i++) {
        toml_error err;
        toml_value *v = toml_parse(must_reject[i].s, must_reject[i].len, &err);
        if (v != NULL || err.line < 1 || err.col < 1 || err.msg[0] == '\0') {
            print_message("must_reject[%zu] %s: %.*s\n", i, v ? "accepted" : "no position",
                          (int)must_reject[i].len, must_reject[i].s);
            failed++;
        }
        toml_free(v);
    }
    assert_int_equal(failed, 0);
}

static void spec_acceptances(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof must_accept / sizeof must_accept[0]; i++) {
        toml_error err;
        toml_value *v = toml_parse(must_accept[i].s, must_accept[i].len, &err);
        if (v == NULL) {
            print_message("must_accept[%zu] rejected: %d:%d: %s\n", i, err.line, err.col,
                          err.msg);
            failed++;
        }
        toml_free(v);
    }
    assert_int_equal(failed, 0);
}

/* ----------------------------------------------------------- bounded cost */

static char *repeat(const char *head, const char *unit, size_t times, const char *tail,
                    size_t *len)
{
    size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
    size_t n = hl + ul * times + tl;
    char *s = malloc(n + 1);
    assert_non_null(s);
    memcpy(s, head, hl);
    for (size_t i = 0; i < times; i++)
        memcpy(s + hl + i * ul, unit, ul);
    memcpy(s + hl + ul * times, tail, tl);
    s[n] = '\0';
    *len = n;
    return s;
}

static void cost_big_array(void **state)
{
    (void)state;
    cr_buf b;
    cr_buf_init(&b, 0);
    assert_int_equal(cr_buf_puts(&b, "a = ["), 0);
    for (int i = 0; i < 100000; i++)
        assert_int_equal(cr_buf_printf(&b, "%d,%s", i, i % 10 == 9 ? "\n" : " "), 0);
    assert_int_equal(cr_buf_puts(&b, "]\n"), 0);
    toml_error err;
    toml_value *v = toml_parse(b.data, b.len, &err);
    assert_non_null(v);
    const toml_value *a = toml_get(v, "a");
    assert_int_equal(toml_count(a), 100000);
    assert_int_equal(toml_int(toml_at(a, 0)), 0);
    assert_int_equal(toml_int(toml_at(a, 99999)), 99999);
    int line, col;
    toml_pos(toml_at(a, 99999), &line, &col);
    assert_int_equal(line, 10000);
    toml_free(v);
    cr_buf_release(&b);
}

static void cost_deep_arrays(void **state)
{
    (void)state;
    size_t n;
    toml_error err;
    char *s = repeat("a = ", "[", 100000, "", &n);
    assert_null(toml_parse(s, n, &err));
    assert_int_equal(err.line, 1);
    assert_int_equal(err.col, 5 + TOML_MAX_DEPTH);
    assert_non_null(strstr(err.msg, "nesting too deep"));
    free(s);
    s = repeat("", "[", 100000, "", &n); /* as a header */
    assert_null(toml_parse(s, n, &err));
    assert_int_equal(err.col, 3);
    free(s);
    /* exactly the limit is fine */
    cr_buf b;
    cr_buf_init(&b, 0);
    cr_buf_puts(&b, "a = ");
    for (int i = 0; i < TOML_MAX_DEPTH; i++)
        cr_buf_putc(&b, '[');
    for (int i = 0; i < TOML_MAX_DEPTH; i++)
        cr_buf_putc(&b, ']');
    toml_value *v = toml_parse(b.data, b.len, &err);
    assert_non_null(v);
    toml_free(v);
    cr_buf_release(&b);
}

static void cost_deep_inline_tables(void **state)
{
    (void)state;
    size_t n;
    toml_error err;
    char *s = repeat("a = ", "{b = ", 100000, "1", &n);
    assert_null(toml_parse(s, n, &err));
    assert_int_equal(err.col, 5 + 5 * TOML_MAX_DEPTH);
    assert_non_null(strstr(err.msg, "nesting too deep"));
    free(s);
}

static void cost_long_keys(void **state)
{
    (void)state;
    size_t n;
    toml_error err;
    char *s = repeat("x", ".x", 100000, " = 1", &n);
    assert_null(toml_parse(s, n, &err));
    assert_int_equal(err.col, 1 + 2 * TOML_MAX_DEPTH);
    assert_non_null(strstr(err.msg, "too many parts"));
    free(s);
    s = repeat("[x", ".x", 100000, "]", &n);
    assert_null(toml_parse(s, n, &err));
    assert_non_null(strstr(err.msg, "too many parts"));
    free(s);
    /* 64 parts is fine; a 65th level through a header plus a dotted key is not */
    s = repeat("x", ".x", TOML_MAX_DEPTH - 1, " = 1", &n);
    toml_value *v = toml_parse(s, n, &err);
    assert_non_null(v);
    toml_free(v);
    free(s);
    s = repeat("[[x", ".x", TOML_MAX_DEPTH - 1, "]]", &n); /* its element is level 65 */
    assert_null(toml_parse(s, n, &err));
    assert_int_equal(err.col, 3 + 2 * (TOML_MAX_DEPTH - 1));
    assert_non_null(strstr(err.msg, "nesting too deep"));
    free(s);
    s = repeat("[[x", ".x", TOML_MAX_DEPTH - 2, "]]", &n);
    v = toml_parse(s, n, &err);
    assert_non_null(v);
    toml_free(v);
    free(s);
    s = repeat("[x", ".x", TOML_MAX_DEPTH - 1, "]\ny.z = 1", &n);
    assert_null(toml_parse(s, n, &err));
    assert_int_equal(err.line, 2);
    assert_int_equal(err.col, 1);
    assert_non_null(strstr(err.msg, "nesting too deep"));
    free(s);
}

static void cost_many_keys(void **state)
{
    (void)state;
    enum { N = 100000 };
    cr_buf b;
    cr_buf_init(&b, 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(cr_buf_printf(&b, "k%d = %d\n", i, i), 0);
    cr_buf_puts(&b, "[t]\n");
    for (int i = 0; i < N; i++) /* dotted keys into one sub-table */
        assert_int_equal(cr_buf_printf(&b, "d.\"q%d\" = %d\n", i, i), 0);
    for (int i = 0; i < N; i++) /* a header per table */
        assert_int_equal(cr_buf_printf(&b, "[h.k%d]\n", i), 0);
    toml_error err;
    toml_value *v = toml_parse(b.data, b.len, &err);
    if (v == NULL)
        fail_msg("%d:%d: %s", err.line, err.col, err.msg);
    assert_int_equal(toml_count(v), N + 2);
    char key[32];
    for (int i = 0; i < N; i += 7) {
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(toml_int(toml_get(v, key)), i);
        assert_string_equal(toml_key_at(v, (size_t)i), key);
    }
    assert_null(toml_get(v, "k100000"));
    const toml_value *d = toml_get(toml_get(v, "t"), "d");
    assert_int_equal(toml_count(d), N);
    assert_int_equal(toml_int(toml_get(d, "q77777")), 77777);
    assert_int_equal(toml_count(toml_get(v, "h")), N);
    toml_free(v);
    /* and the same key once more at the end is still found as a duplicate */
    cr_buf_clear(&b);
    for (int i = 0; i < N; i++)
        cr_buf_printf(&b, "k%d = %d\n", i, i);
    cr_buf_puts(&b, "k4242 = 0\n");
    assert_null(toml_parse(b.data, b.len, &err));
    assert_int_equal(err.line, N + 1);
    assert_string_equal(err.msg, "duplicate key 'k4242' (first defined at line 4243)");
    cr_buf_release(&b);
}

static void cost_many_array_tables(void **state)
{
    (void)state;
    size_t n;
    char *s = repeat("", "[[a]]\nx = 1\n", 100000, "", &n);
    toml_error err;
    toml_value *v = toml_parse(s, n, &err);
    assert_non_null(v);
    assert_int_equal(toml_count(toml_get(v, "a")), 100000);
    toml_free(v);
    free(s);
}

static void cost_size_cap(void **state)
{
    (void)state;
    size_t n = 17u << 20;
    char *s = malloc(n);
    assert_non_null(s);
    memset(s, ' ', n);
    toml_error err;
    assert_null(toml_parse(s, n, &err));
    assert_non_null(strstr(err.msg, "input too large"));
    assert_int_equal(err.line, 1);
    /* exactly at the cap is read: a 16 MB document of one long string */
    n = TOML_MAX_INPUT;
    memcpy(s, "s = '", 5);
    memset(s + 5, 'x', n - 6);
    s[n - 1] = '\'';
    toml_value *v = toml_parse(s, n, &err);
    assert_non_null(v);
    size_t len;
    toml_string(toml_get(v, "s"), &len);
    assert_int_equal(len, n - 6);
    toml_free(v);
    free(s);
}

static void cost_quotes_and_comments(void **state)
{
    (void)state;
    size_t n;
    toml_error err;
    /* many quote pairs inside a multi-line string, many comment lines */
    char *s = repeat("a = \"\"\"", "x\"\"", 200000, "\"\"\"", &n);
    toml_value *v = toml_parse(s, n, &err);
    assert_non_null(v);
    size_t len;
    toml_string(toml_get(v, "a"), &len);
    assert_int_equal(len, 600000);
    toml_free(v);
    free(s);
    s = repeat("", "# comment\n", 200000, "a = 1", &n);
    v = toml_parse(s, n, &err);
    assert_non_null(v);
    int line;
    toml_pos(toml_get(v, "a"), &line, NULL);
    assert_int_equal(line, 200001);
    toml_free(v);
    free(s);
    /* an error at the end of a long multi-line string points back to its start */
    s = repeat("\n\na = '''", "x\n", 200000, "", &n);
    assert_null(toml_parse(s, n, &err));
    assert_int_equal(err.line, 3);
    assert_int_equal(err.col, 5);
    free(s);
}

/* ------------------------------------------------------------------- OOM */

#define TEXT70 "0123456789012345678901234567890123456789012345678901234567890123456789"
#define TEXT700 TEXT70 TEXT70 TEXT70 TEXT70 TEXT70 TEXT70 TEXT70 TEXT70 TEXT70 TEXT70

/* Big enough for several arena blocks, a block of its own (the long string),
 * item arrays that move from the arena to the heap, and a hash index. */
static const char mid_doc[] =
    "# a mid-size document touching every allocation path\n"
    "title = \"crawl\"\n"
    "k1 = 1\nk2 = 2\nk3 = 3\nk4 = 4\nk5 = 5\nk6 = 6\nk7 = 7\nk8 = 8\nk9 = 9\nk10 = 10\n"
    "k11 = 11\nk12 = 12\nk13 = 13\nk14 = 14\nk15 = 15\nk16 = 16\nk17 = 17\n"
    "ratio = 0.25\n"
    "when = [1979-05-27T07:32:00.5-07:00, 1979-05-27 07:32:00, 1979-05-27, 07:32:00]\n"
    "big = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,\n"
    "       20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36]\n"
    "esc = \"tab\\there \\u00e9\"\n"
    "ml = \"\"\"\nline one\nline two \\\n  joined\"\"\"\n"
    "list = [1, [2, 3], {x = 1, y.z = 2}, 'lit', \"\"\"m\"\"\"]\n"
    "[server]\nhost = \"localhost\"\nport = 8080\nlimits.max = 10\nlimits.min = 1\n"
    "[server.tls]\nenabled = true\n"
    "[[seeds]]\nurl = \"http://a.example/\"\n"
    "[[seeds]]\nurl = \"http://b.example/\"\ntags = ['x', 'y']\n"
    "[a.b.c]\nd = 1\n[a]\ne = 2\n"
    "[long]\ntext = '''" TEXT700 TEXT700 TEXT700 "'''\n"
    "short = '" TEXT70 "'\n";

/* Fails allocation n, n+1, ... for n = 1, 2, ... until the parse no longer
 * runs out of memory; then the outcome must be what it is without failures.
 * Returns the number of allocations the parse needs. */
static long oom_check(const char *doc, size_t len, const char *name)
{
    toml_error want, err;
    toml_value *v = toml_parse(doc, len, &want);
    int ok = v != NULL;
    toml_free(v);
    long n;
    for (n = 1; n < 100000; n++) {
        cr_alloc_fail_after(n);
        v = toml_parse(doc, len, &err);
        long failures = cr_alloc_failures();
        cr_alloc_fail_after(0);
        if (failures == 0) {
            if ((v != NULL) != ok || (!ok && (err.line != want.line || err.col != want.col ||
                                              strcmp(err.msg, want.msg) != 0)))
                fail_msg("%s: n=%ld: outcome differs from the unconstrained parse", name, n);
            toml_free(v);
            return n;
        }
        if (v != NULL || err.line != 0 || err.col != 0 || strcmp(err.msg, "out of memory") != 0)
            fail_msg("%s: n=%ld: got %s %d:%d '%s' after an allocation failed", name, n,
                     v ? "a tree" : "an error", err.line, err.col, err.msg);
    }
    fail_msg("%s: no end", name);
    return 0;
}

static void oom_every_allocation(void **state)
{
    (void)state;
    long n = oom_check(mid_doc, sizeof mid_doc - 1, "mid_doc");
    print_message("mid_doc parses once %ld allocations can succeed\n", n);
    assert_true(n > 10); /* the document really allocates */
    toml_error err;
    toml_value *v = toml_parse(mid_doc, sizeof mid_doc - 1, &err);
    assert_non_null(v);
    assert_int_equal(toml_int(toml_get(toml_get(v, "server"), "port")), 8080);
    assert_int_equal(toml_count(toml_get(v, "seeds")), 2);
    toml_free(v);
}

static void oom_conformance_documents(void **state)
{
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/toml", conformance_dir());
    pathlist l = {0};
    collect(dir, ".toml", &l);
    require_cases(dir, l.n);
    assert_int_equal(l.n, 65 + 64);
    for (size_t i = 0; i < l.n; i++) {
        size_t len;
        char *t = read_file(l.v[i], &len);
        assert_non_null(t);
        oom_check(t, len, l.v[i]);
        free(t);
    }
    pathlist_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conformance_valid),
        cmocka_unit_test(conformance_invalid),
        cmocka_unit_test(error_positions),
        cmocka_unit_test(error_duplicate_message_exact),
        cmocka_unit_test(error_long_key_is_shortened),
        cmocka_unit_test(error_null_err_is_fine),
        cmocka_unit_test(api_order_and_lookup),
        cmocka_unit_test(api_positions),
        cmocka_unit_test(api_strings),
        cmocka_unit_test(api_numbers),
        cmocka_unit_test(datetime_valid_values),
        cmocka_unit_test(datetime_invalid_values),
        cmocka_unit_test(datetime_calendar),
        cmocka_unit_test(datetime_api),
        cmocka_unit_test(api_table_rules_accept),
        cmocka_unit_test(spec_rejections),
        cmocka_unit_test(spec_acceptances),
        cmocka_unit_test(cost_big_array),
        cmocka_unit_test(cost_deep_arrays),
        cmocka_unit_test(cost_deep_inline_tables),
        cmocka_unit_test(cost_long_keys),
        cmocka_unit_test(cost_many_keys),
        cmocka_unit_test(cost_many_array_tables),
        cmocka_unit_test(cost_size_cap),
        cmocka_unit_test(cost_quotes_and_comments),
        cmocka_unit_test(oom_every_allocation),
        cmocka_unit_test(oom_conformance_documents),
    };
    return cmocka_run_group_tests_name("toml", tests, NULL, NULL);
}
