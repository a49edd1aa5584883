/* storage/cdxj: SURT keys and CDXJ index lines for storage/warc.
 *
 * The SURT form follows what pywb and warcio produce for the URLs a crawler
 * archives (already canonical: lower-case scheme and host, percent-encoded
 * path): everything lower-cased, host labels reversed, query parts sorted.
 * Sorting the query splits it into at most SURT_MAX_PARTS pieces; a query
 * with more parts is kept in its own order past that point (a key is a
 * lookup aid, not an identity). No allocation except through the cr_buf. */
#include "cdxj.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SURT_MAX_PARTS 256

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool prefix_ci(const char *s, size_t len, const char *p)
{
    size_t n = strlen(p);
    if (len < n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower(s[i]) != p[i])
            return false;
    return true;
}

static int put_lower(cr_buf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = cr_buf_putc(out, lower(s[i]));
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* A query part for sorting: compared lower-cased, bytewise. */
typedef struct part {
    const char *p;
    size_t n;
} part;

static int part_cmp(const void *a, const void *b)
{
    const part *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    for (size_t i = 0; i < n; i++) {
        unsigned char cx = (unsigned char)lower(x->p[i]);
        unsigned char cy = (unsigned char)lower(y->p[i]);
        if (cx != cy)
            return cx < cy ? -1 : 1;
    }
    return x->n < y->n ? -1 : x->n > y->n ? 1 : 0;
}

static int put_query(cr_buf *out, const char *q, size_t n)
{
    part parts[SURT_MAX_PARTS];
    size_t np = 0, start = 0;
    int rc;
    for (size_t i = 0; i <= n && np < SURT_MAX_PARTS; i++) {
        if (i == n || q[i] == '&') {
            parts[np].p = q + start;
            parts[np].n = i - start;
            np++;
            start = i + 1;
        }
    }
    qsort(parts, np, sizeof parts[0], part_cmp);
    for (size_t i = 0; i < np; i++) {
        if (i > 0 && (rc = cr_buf_putc(out, '&')) < 0)
            return rc;
        if ((rc = put_lower(out, parts[i].p, parts[i].n)) < 0)
            return rc;
    }
    if (start < n) { /* more parts than we sort: the rest as it came */
        if ((rc = cr_buf_putc(out, '&')) < 0)
            return rc;
        return put_lower(out, q + start, n - start);
    }
    return 0;
}

int cdxj_surt(const char *url, size_t len, cr_buf *out)
{
    size_t skip;
    const char *default_port;
    if (prefix_ci(url, len, "http://")) {
        skip = 7;
        default_port = "80";
    } else if (prefix_ci(url, len, "https://")) {
        skip = 8;
        default_port = "443";
    } else {
        return cr_buf_append(out, url, len);
    }
    const char *p = url + skip, *end = url + len;
    const char *auth_end = p;
    while (auth_end < end && *auth_end != '/' && *auth_end != '?' && *auth_end != '#')
        auth_end++;
    const char *host = p;
    for (const char *q = p; q < auth_end; q++)
        if (*q == '@')
            host = q + 1;
    const char *host_end = host;
    if (host < auth_end && *host == '[') {
        while (host_end < auth_end && *host_end != ']')
            host_end++;
        if (host_end < auth_end)
            host_end++;
    } else {
        while (host_end < auth_end && *host_end != ':')
            host_end++;
    }
    const char *port = NULL;
    size_t port_len = 0;
    if (host_end < auth_end && *host_end == ':') {
        port = host_end + 1;
        port_len = (size_t)(auth_end - port);
        if (port_len == strlen(default_port) && memcmp(port, default_port, port_len) == 0)
            port = NULL;
        if (port_len == 0)
            port = NULL;
    }
    /* Drop a leading "www" label with optional digits: www., www2. */
    if (prefix_ci(host, (size_t)(host_end - host), "www")) {
        const char *q = host + 3;
        while (q < host_end && *q >= '0' && *q <= '9')
            q++;
        if (q < host_end && *q == '.')
            host = q + 1;
    }
    int rc;
    /* Host labels, last first ("a.b." gives ",b,a", as a split would). */
    size_t hl = (size_t)(host_end - host), label_end = hl;
    bool first = true;
    for (size_t i = hl;; i--) {
        if (i == 0 || host[i - 1] == '.') {
            if (!first && (rc = cr_buf_putc(out, ',')) < 0)
                return rc;
            if ((rc = put_lower(out, host + i, label_end - i)) < 0)
                return rc;
            first = false;
            if (i == 0)
                break;
            label_end = i - 1;
        }
    }
    if (port) {
        if ((rc = cr_buf_putc(out, ':')) < 0 || (rc = cr_buf_append(out, port, port_len)) < 0)
            return rc;
    }
    if ((rc = cr_buf_putc(out, ')')) < 0)
        return rc;
    const char *path = auth_end, *path_end = auth_end;
    while (path_end < end && *path_end != '?' && *path_end != '#')
        path_end++;
    if (path_end == path)
        rc = cr_buf_putc(out, '/');
    else
        rc = put_lower(out, path, (size_t)(path_end - path));
    if (rc < 0)
        return rc;
    if (path_end < end && *path_end == '?') {
        const char *q = path_end + 1, *q_end = q;
        while (q_end < end && *q_end != '#')
            q_end++;
        if (q_end > q) {
            if ((rc = cr_buf_putc(out, '?')) < 0)
                return rc;
            return put_query(out, q, (size_t)(q_end - q));
        }
    }
    return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t need;
    uint32_t cp;
    if (c < 0x80)
        return 1;
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
        return 0;
    }
    if (n < need)
        return 0;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return need;
}

int cdxj_json_string(cr_buf *out, const char *s, size_t len)
{
    int rc = cr_buf_putc(out, '"');
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (rc == 0 && i < len) {
        unsigned char c = u[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            rc = cr_buf_append(out, esc, 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            rc = cr_buf_printf(out, "\\u%04x", c);
            i++;
        } else {
            size_t n = utf8_len(u + i, len - i);
            if (n == 0) {
                rc = cr_buf_puts(out, "\\ufffd");
                i++;
            } else {
                rc = cr_buf_append(out, s + i, n);
                i += n;
            }
        }
    }
    if (rc == 0)
        rc = cr_buf_putc(out, '"');
    return rc;
}

int cdxj_line(cr_buf *out, const cdxj_entry *e)
{
    size_t mark = out->len;
    int rc = cdxj_surt(e->url, e->url_len, out);
    if (rc == 0)
        rc = cr_buf_printf(out, " %.14s {\"url\":", e->timestamp);
    if (rc == 0)
        rc = cdxj_json_string(out, e->url, e->url_len);
    if (rc == 0)
        rc = cr_buf_puts(out, ",\"mime\":");
    if (rc == 0)
        rc = e->mime && e->mime_len ? cdxj_json_string(out, e->mime, e->mime_len)
                                    : cr_buf_puts(out, "\"unk\"");
    if (rc == 0)
        rc = cr_buf_printf(out,
                           ",\"status\":\"%d\",\"digest\":\"%.32s\",\"length\":\"%" PRIu64
                           "\",\"offset\":\"%" PRIu64 "\",\"filename\":",
                           e->status, e->digest, e->length, e->offset);
    if (rc == 0)
        rc = cdxj_json_string(out, e->filename, strlen(e->filename));
    if (rc == 0)
        rc = cr_buf_puts(out, "}\n");
    if (rc < 0) {
        out->len = mark;
        if (out->data)
            out->data[mark] = '\0';
    }
    return rc;
}

/* The digits after key (e.g. "\"length\":\""), up to the closing quote. */
static int field_u64(const char *s, size_t len, const char *key, uint64_t *out)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl <= len; i++) {
        if (memcmp(s + i, key, kl) != 0)
            continue;
        uint64_t v = 0;
        size_t j = i + kl, digits = 0;
        while (j < len && s[j] >= '0' && s[j] <= '9' && digits < 19) {
            v = v * 10 + (uint64_t)(s[j] - '0');
            j++;
            digits++;
        }
        if (digits == 0 || j >= len || s[j] != '"')
            return -EINVAL;
        *out = v;
        return 0;
    }
    return -EINVAL;
}

int cdxj_parse_span(const char *line, size_t len, uint64_t *offset, uint64_t *length)
{
    /* Skip the key and the timestamp: the JSON starts after the 2nd space. */
    size_t i = 0, spaces = 0;
    while (i < len && spaces < 2) {
        if (line[i] == ' ')
            spaces++;
        i++;
    }
    if (spaces < 2 || i >= len || line[i] != '{' || line[len - 1] != '}')
        return -EINVAL;
    if (field_u64(line + i, len - i, "\"offset\":\"", offset) < 0 ||
        field_u64(line + i, len - i, "\"length\":\"", length) < 0)
        return -EINVAL;
    return 0;
}

size_t cdxj_media_type(const char *ct, size_t len, const char **out)
{
    size_t a = 0, b = 0;
    while (b < len && ct[b] != ';')
        b++;
    while (a < b && (ct[a] == ' ' || ct[a] == '\t'))
        a++;
    while (b > a && (ct[b - 1] == ' ' || ct[b - 1] == '\t' || ct[b - 1] == '\r' || ct[b - 1] == '\n'))
        b--;
    *out = ct + a;
    return b - a;
}
