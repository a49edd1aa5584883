/* tests/fuzz/fuzz_warc: the byte-level parts of storage/warc and
 * storage/cdxj, on any input.
 *
 *  - warc_http_fix: when it accepts a header block, what it returns starts
 *    "HTTP/", ends with CRLF CRLF, has no bare LF and no Transfer-Encoding
 *    line, and is a fixed point (fixing it again changes nothing);
 *  - cdxj_json_string: the result is one JSON string (jansson parses it);
 *    for valid UTF-8 input it decodes back to the input;
 *  - cdxj_line / cdxj_parse_span: whatever the URL and mime hold, the
 *    offset and length read back are the ones written, and the line is
 *    one line;
 *  - cdxj_surt: adds no blank or control byte the URL did not have.
 * Any violation aborts. */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "storage/cdxj.h"
#include "storage/warc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_warc: %s\n", what);
        abort();
    }
}

static bool has_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] <= 0x20 || p[i] == 0x7f)
            return true;
    return false;
}

static bool valid_utf8_no_nul(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t need;
        uint32_t cp;
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            need = 2;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 3;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (n - i < need)
            return false;
        for (size_t k = 1; k < need; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += need;
    }
    return true;
}

static void fuzz_fix(const char *in, size_t n)
{
    cr_buf a, b;
    cr_buf_init(&a, 0);
    cr_buf_init(&b, 0);
    bool changed = false;
    if (warc_http_fix(in, n, n, &a, &changed) == 0) {
        check(a.len >= 9 && memcmp(a.data, "HTTP/", 5) == 0, "fix: no status line");
        check(memcmp(a.data + a.len - 4, "\r\n\r\n", 4) == 0, "fix: no CRLF CRLF end");
        for (size_t i = 0; i < a.len; i++)
            check(a.data[i] != '\n' || (i > 0 && a.data[i - 1] == '\r'), "fix: bare LF left");
        check(changed || (a.len == n && memcmp(a.data, in, n) == 0), "fix: unchanged but differs");
        bool again = true;
        check(warc_http_fix(a.data, a.len, n, &b, &again) == 0, "fix: own output refused");
        check(!again && b.len == a.len && memcmp(a.data, b.data, a.len) == 0, "fix: not a fixed point");
        for (const char *p = a.data; (p = strstr(p, "\r\n")) != NULL; p += 2)
            check(strncasecmp(p + 2, "transfer-encoding:", 18) != 0, "fix: Transfer-Encoding left");
    }
    cr_buf_release(&a);
    cr_buf_release(&b);
}

static void fuzz_json(const char *in, size_t n)
{
    cr_buf b;
    cr_buf_init(&b, 0);
    check(cdxj_json_string(&b, in, n) == 0, "json: failed");
    json_error_t err;
    json_t *j = json_loadb(b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    check(j != NULL && json_is_string(j), "json: not a JSON string");
    if (valid_utf8_no_nul((const unsigned char *)in, n))
        check(json_string_length(j) == n && memcmp(json_string_value(j), in, n) == 0,
              "json: does not decode back");
    json_decref(j);
    cr_buf_release(&b);
}

static void fuzz_line(const char *in, size_t n)
{
    cr_buf b;
    cr_buf_init(&b, 0);
    uint64_t off = (uint64_t)n * 7919u, len = n + 1;
    cdxj_entry e = {.url = in, .url_len = n, .mime = in, .mime_len = n / 2, .status = 200,
                    .digest = "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ", .timestamp = "20240101000000",
                    .length = len, .offset = off, .filename = "f.warc.gz"};
    check(cdxj_line(&b, &e) == 0, "line: failed");
    char *nl = memchr(b.data, '\n', b.len);
    bool url_blank = has_blank(in, n);
    if (!url_blank) { /* URLs the writer accepts have no blanks */
        check(nl == b.data + b.len - 1, "line: not one line");
        uint64_t o2 = 0, l2 = 0;
        check(cdxj_parse_span(b.data, b.len - 1, &o2, &l2) == 0, "line: span unreadable");
        check(o2 == off && l2 == len, "line: span differs");
    }
    cr_buf_release(&b);
}

static void fuzz_surt(const char *in, size_t n)
{
    cr_buf b;
    cr_buf_init(&b, 0);
    check(cdxj_surt(in, n, &b) == 0, "surt: failed");
    if (!has_blank(in, n))
        check(!has_blank(b.data, b.len), "surt: blank added");
    cr_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    const char *in = (const char *)data;
    fuzz_fix(in, size);
    fuzz_json(in, size);
    fuzz_line(in, size);
    fuzz_surt(in, size);
    return 0;
}
