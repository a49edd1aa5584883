/* config/toml: a small, strict reader for TOML 1.0.
 *
 * Bytes in, a tree of values out; no I/O. It accepts what TOML 1.0 accepts
 * (tables, dotted keys, arrays of tables, inline tables, all string forms and
 * escapes, integers with _ and 0x/0o/0b, floats incl. inf/nan, booleans,
 * offset and local date-times, local dates and local times) and
 * rejects everything else with the line and column (1-based, columns counted
 * in bytes) of the first error. Nesting depth and input size are bounded, so
 * hostile input costs bounded time and memory. Dates and times are checked
 * strictly (month 01..12, the day within its month incl. leap years, hour
 * 00..23, minute 00..59, second 00..60, offset -23:59..+23:59, seconds
 * required) and kept as text. The tree is immutable once built; it owns all
 * its strings. */
#ifndef CRAWLD_TOML_H
#define CRAWLD_TOML_H

#include <stddef.h>
#include <stdint.h>

typedef struct toml_value toml_value;

typedef enum toml_type {
    TOML_TABLE,
    TOML_ARRAY,
    TOML_STRING,
    TOML_INTEGER,
    TOML_FLOAT,
    TOML_BOOL,
    TOML_DATETIME,       /* offset date-time: 1979-05-27T07:32:00-07:00 */
    TOML_DATETIME_LOCAL, /* local date-time: 1979-05-27T07:32:00.5 */
    TOML_DATE_LOCAL,     /* local date: 1979-05-27 */
    TOML_TIME_LOCAL      /* local time: 07:32:00 */
} toml_type;

typedef struct toml_error {
    int line;       /* 1-based */
    int col;        /* 1-based, in bytes */
    char msg[200];
} toml_error;

#define TOML_MAX_DEPTH 64              /* nested arrays / inline tables / dotted parts */
#define TOML_MAX_INPUT (16u << 20)     /* bytes */

/* Parses a whole document. Returns the root table, or NULL with *err filled
 * (err->line == 0 and "out of memory" when allocation failed).
 * Caller owns the result; free with toml_free(). */
toml_value *toml_parse(const char *data, size_t len, toml_error *err /* OUT */);
void toml_free(toml_value *v);

toml_type toml_type_of(const toml_value *v);
/* "table", "array", "string", "integer", "float", "bool", "datetime",
 * "datetime-local", "date-local", "time-local" (toml-test's names). */
const char *toml_type_name(toml_type t);

/* Tables: entries in definition order. Arrays: elements in order. */
size_t toml_count(const toml_value *v);
const toml_value *toml_at(const toml_value *v, size_t i);
const char *toml_key_at(const toml_value *table, size_t i); /* NULL for arrays */
const toml_value *toml_get(const toml_value *table, const char *key);

/* Scalars; the caller checks the type first. A string may hold NUL bytes:
 * *len (may be NULL) gets its length; the returned bytes are NUL-terminated. */
const char *toml_string(const toml_value *v, size_t *len /* OUT */);
int64_t toml_int(const toml_value *v);
double toml_float(const toml_value *v);
int toml_bool(const toml_value *v);

/* The four date/time types: the value as text, normalized the way toml-test
 * writes it: "1979-05-27T07:32:00Z", "1979-05-27T00:32:00.999-07:00",
 * "1979-05-27T07:32:00", "1979-05-27", "07:32:00.5". The separator is 'T'
 * (also when written as 't' or a space), 'Z' is upper case, the fraction of
 * a second keeps every digit as written, an offset is +HH:MM or -HH:MM as
 * written (-00:00 stays). NULL for any other type. */
const char *toml_datetime(const toml_value *v);

/* Where the value was defined: the position of its key for a table entry,
 * of the value itself for an array element. */
void toml_pos(const toml_value *v, int *line /* OUT */, int *col /* OUT */);

#endif
