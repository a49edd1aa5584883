/* tests/fuzz/fuzz_toml: parse, check the error or walk the whole tree, free.
 *
 * For an accepted document it also writes the tree back out as TOML (every
 * table inline, every key and string quoted and escaped, floats in %.17g,
 * dates and times as their normalized text), parses that, and requires the
 * same tree: a cheap oracle that catches values read wrongly, not only
 * crashes. The normalized text of every date and time is also checked
 * against its shape and ranges here, independently of the reader. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "config/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "fuzz_toml: check failed: %s (line %d)\n", #c,    \
                    __LINE__);                                                \
            abort();                                                          \
        }                                                                     \
    } while (0)

/* n digits at *s, their value in lo..hi; advances *s. */
static int num(const char **s, int n, int lo, int hi)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        CHECK((*s)[i] >= '0' && (*s)[i] <= '9');
        v = v * 10 + ((*s)[i] - '0');
    }
    CHECK(v >= lo && v <= hi);
    *s += n;
    return v;
}

static void check_date(const char **s)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y = num(s, 4, 0, 9999);
    CHECK(*(*s)++ == '-');
    int m = num(s, 2, 1, 12);
    CHECK(*(*s)++ == '-');
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    num(s, 2, 1, dm[m - 1] + (m == 2 && leap));
}

static void check_time(const char **s)
{
    num(s, 2, 0, 23);
    CHECK(*(*s)++ == ':');
    num(s, 2, 0, 59);
    CHECK(*(*s)++ == ':');
    num(s, 2, 0, 60);
    if (**s == '.') {
        (*s)++;
        CHECK(**s >= '0' && **s <= '9');
        while (**s >= '0' && **s <= '9')
            (*s)++;
    }
}

/* The normalized text of a date or time has exactly its type's shape. */
static void check_datetime(const toml_value *v)
{
    const char *t = toml_datetime(v);
    CHECK(t != NULL);
    CHECK(toml_string(v, NULL) == NULL);
    const char *s = t;
    toml_type ty = toml_type_of(v);
    if (ty != TOML_TIME_LOCAL)
        check_date(&s);
    if (ty == TOML_DATETIME || ty == TOML_DATETIME_LOCAL) {
        CHECK(*s++ == 'T');
        check_time(&s);
    }
    if (ty == TOML_TIME_LOCAL)
        check_time(&s);
    if (ty == TOML_DATETIME) {
        if (*s == 'Z')
            s++;
        else {
            CHECK(*s == '+' || *s == '-');
            s++;
            num(&s, 2, 0, 23);
            CHECK(*s++ == ':');
            num(&s, 2, 0, 59);
        }
    }
    CHECK(*s == '\0');
}

static unsigned walk(const toml_value *v, int depth)
{
    CHECK(depth <= TOML_MAX_DEPTH + 1);
    int line, col;
    toml_pos(v, &line, &col);
    CHECK(line >= 1 && col >= 1);
    unsigned sum = 0;
    size_t len;
    const char *s;
    toml_type ty = toml_type_of(v);
    CHECK((toml_datetime(v) != NULL) ==
          (ty == TOML_DATETIME || ty == TOML_DATETIME_LOCAL || ty == TOML_DATE_LOCAL ||
           ty == TOML_TIME_LOCAL));
    switch (ty) {
    case TOML_TABLE:
        for (size_t i = 0; i < toml_count(v); i++) {
            const char *k = toml_key_at(v, i);
            CHECK(k != NULL);
            sum += (unsigned)strlen(k);
            /* a key holding a NUL is found by its name only up to the NUL,
             * so only the lookup itself is exercised here */
            (void)toml_get(v, k);
            sum += walk(toml_at(v, i), depth + 1);
        }
        CHECK(toml_at(v, toml_count(v)) == NULL);
        break;
    case TOML_ARRAY:
        for (size_t i = 0; i < toml_count(v); i++) {
            CHECK(toml_key_at(v, i) == NULL);
            sum += walk(toml_at(v, i), depth + 1);
        }
        break;
    case TOML_STRING:
        s = toml_string(v, &len);
        CHECK(s != NULL && s[len] == '\0');
        for (size_t i = 0; i < len; i++)
            sum += (unsigned char)s[i];
        break;
    case TOML_INTEGER:
        sum += (unsigned)toml_int(v);
        break;
    case TOML_FLOAT:
        sum += isnan(toml_float(v)) ? 1u : 0u;
        break;
    case TOML_BOOL:
        CHECK(toml_bool(v) == 0 || toml_bool(v) == 1);
        break;
    case TOML_DATETIME:
    case TOML_DATETIME_LOCAL:
    case TOML_DATE_LOCAL:
    case TOML_TIME_LOCAL:
        check_datetime(v);
        sum += (unsigned)strlen(toml_datetime(v));
        break;
    default:
        CHECK(!"unknown type");
    }
    return sum;
}

static void put_quoted(cr_buf *b, const char *s, size_t n)
{
    cr_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7F || c == '"' || c == '\\')
            cr_buf_printf(b, "\\u%04X", c);
        else
            cr_buf_putc(b, (char)c);
    }
    cr_buf_putc(b, '"');
}

static void emit(cr_buf *b, const toml_value *v)
{
    size_t len;
    const char *s;
    char num[64];
    switch (toml_type_of(v)) {
    case TOML_TABLE:
        cr_buf_putc(b, '{');
        for (size_t i = 0; i < toml_count(v); i++) {
            const char *k = toml_key_at(v, i);
            cr_buf_puts(b, i ? ", " : " ");
            put_quoted(b, k, strlen(k));
            cr_buf_puts(b, " = ");
            emit(b, toml_at(v, i));
        }
        cr_buf_puts(b, " }");
        break;
    case TOML_ARRAY:
        cr_buf_puts(b, "[\n");
        for (size_t i = 0; i < toml_count(v); i++) {
            emit(b, toml_at(v, i));
            cr_buf_puts(b, ",\n");
        }
        cr_buf_putc(b, ']');
        break;
    case TOML_STRING:
        s = toml_string(v, &len);
        put_quoted(b, s, len);
        break;
    case TOML_INTEGER:
        cr_buf_printf(b, "%lld", (long long)toml_int(v));
        break;
    case TOML_FLOAT: {
        double f = toml_float(v);
        if (isnan(f))
            cr_buf_puts(b, "nan");
        else if (isinf(f))
            cr_buf_puts(b, f < 0 ? "-inf" : "inf");
        else {
            snprintf(num, sizeof num, "%.17g", f);
            cr_buf_puts(b, num);
            if (strpbrk(num, ".e") == NULL)
                cr_buf_puts(b, ".0");
        }
        break;
    }
    case TOML_BOOL:
        cr_buf_puts(b, toml_bool(v) ? "true" : "false");
        break;
    case TOML_DATETIME:
    case TOML_DATETIME_LOCAL:
    case TOML_DATE_LOCAL:
    case TOML_TIME_LOCAL:
        cr_buf_puts(b, toml_datetime(v));
        break;
    }
}

static int equal(const toml_value *a, const toml_value *b)
{
    if (toml_type_of(a) != toml_type_of(b) || toml_count(a) != toml_count(b))
        return 0;
    size_t la, lb;
    const char *sa, *sb;
    double fa, fb;
    switch (toml_type_of(a)) {
    case TOML_TABLE:
        for (size_t i = 0; i < toml_count(a); i++)
            if (strcmp(toml_key_at(a, i), toml_key_at(b, i)) != 0 ||
                !equal(toml_at(a, i), toml_at(b, i)))
                return 0;
        return 1;
    case TOML_ARRAY:
        for (size_t i = 0; i < toml_count(a); i++)
            if (!equal(toml_at(a, i), toml_at(b, i)))
                return 0;
        return 1;
    case TOML_STRING:
        sa = toml_string(a, &la);
        sb = toml_string(b, &lb);
        return la == lb && memcmp(sa, sb, la) == 0;
    case TOML_INTEGER:
        return toml_int(a) == toml_int(b);
    case TOML_FLOAT:
        fa = toml_float(a);
        fb = toml_float(b);
        return (isnan(fa) && isnan(fb)) || (fa == fb && signbit(fa) == signbit(fb));
    case TOML_BOOL:
        return toml_bool(a) == toml_bool(b);
    case TOML_DATETIME:
    case TOML_DATETIME_LOCAL:
    case TOML_DATE_LOCAL:
    case TOML_TIME_LOCAL:
        return strcmp(toml_datetime(a), toml_datetime(b)) == 0;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    toml_error err;
    toml_value *v = toml_parse((const char *)data, size, &err);
    if (v == NULL) {
        CHECK(memchr(err.msg, '\0', sizeof err.msg) != NULL && err.msg[0] != '\0');
        CHECK(err.line >= 1 && err.col >= 1); /* no allocation failures here */
        return 0;
    }
    CHECK(toml_type_of(v) == TOML_TABLE);
    volatile unsigned sink = walk(v, 0);
    (void)sink;

    cr_buf out;
    cr_buf_init(&out, 0);
    for (size_t i = 0; i < toml_count(v); i++) {
        const char *k = toml_key_at(v, i);
        put_quoted(&out, k, strlen(k));
        cr_buf_puts(&out, " = ");
        emit(&out, toml_at(v, i));
        cr_buf_putc(&out, '\n');
    }
    toml_value *w = toml_parse(out.data ? out.data : "", out.len, &err);
    if (w == NULL) {
        /* keys holding a NUL print only up to it and may then collide */
        CHECK(strncmp(err.msg, "duplicate key", 13) == 0 ||
              strstr(err.msg, "input too large") != NULL);
    } else
        CHECK(equal(v, w));
    toml_free(w);
    cr_buf_release(&out);
    toml_free(v);
    return 0;
}
