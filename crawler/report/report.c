/* crawler/report: the crawl report page (see report.h).
 *
 * report_load() is the only part that reads the database (through the
 * db_reader API); report_write() only formats. Charts are built as SVG
 * text in a capped cr_buf, then written base64-encoded into an <img>'s
 * data: URI; the legend and caption of each chart are HTML around it.
 * Numbers are laid out from the JSON with small helpers that read a
 * missing field as 0, so a report of an older or half-written database
 * still renders. */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/buf.h"

#define META_MAX (1u << 20) /* the stored status object */
#define SVG_MAX (4u << 20)  /* one chart's SVG text */
#define MAX_LINES 10        /* series per chart (Bloom stages beyond are left out) */

/* ---- loading ------------------------------------------------------------ */

typedef struct load_ctx {
    json_t *arr;
    int oom;
} load_ctx;

static int add_sample(void *ud, int64_t t_ms, const char *data, size_t len)
{
    load_ctx *lc = ud;
    json_error_t jerr;
    json_t *o = json_loadb(data, len, 0, &jerr);
    if (o == NULL || !json_is_object(o)) {
        json_decref(o);
        return 0; /* a row we cannot read: left out */
    }
    json_object_set_new(o, "t_ms", json_integer((json_int_t)t_ms));
    if (json_array_append_new(lc->arr, o) < 0)
        lc->oom = 1;
    return lc->oom ? -ENOMEM : 0;
}

static int add_host(void *ud, const char *host, int64_t pages, const char *data)
{
    load_ctx *lc = ud;
    json_error_t jerr;
    json_t *o = json_loads(data, 0, &jerr);
    if (o == NULL || !json_is_object(o)) {
        json_decref(o);
        o = json_object();
        if (o == NULL)
            return -ENOMEM;
        json_object_set_new(o, "pages", json_integer((json_int_t)pages));
    }
    json_object_set_new(o, "host", json_string(host));
    if (json_array_append_new(lc->arr, o) < 0)
        lc->oom = 1;
    return lc->oom ? -ENOMEM : 0;
}

int report_load(db_reader *rd, size_t max_samples, size_t max_hosts, json_t **out, char *err,
                size_t errlen)
{
    int rc = -ENOMEM;
    char *text = cr_malloc(META_MAX);
    json_t *all = json_object();
    json_t *st = NULL;
    load_ctx sc = { json_array(), 0 }, hc = { json_array(), 0 };
    int64_t counts[DB_STATE_COUNT], hosts_total = 0;
    *out = NULL;
    if (text == NULL || all == NULL || sc.arr == NULL || hc.arr == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (db_reader_get_meta(rd, "stats", text, META_MAX) == 0) {
        json_error_t jerr;
        st = json_loads(text, 0, &jerr);
    }
    json_object_set_new(all, "stats", st ? st : json_object());
    rc = db_reader_count_by_state(rd, counts);
    if (rc < 0) {
        snprintf(err, errlen, "cannot count the rows (%s)", strerror(-rc));
        goto out;
    }
    json_t *rows = json_object();
    for (int s = 0; s < DB_STATE_COUNT; s++)
        json_object_set_new(rows, db_state_name(s), json_integer((json_int_t)counts[s]));
    json_object_set_new(all, "database", rows);
    int64_t ns = db_reader_samples(rd, max_samples, add_sample, &sc);
    int64_t total = db_reader_sample_count(rd);
    if (ns < 0 || total < 0) {
        rc = ns < 0 ? (int)ns : (int)total;
        snprintf(err, errlen, "cannot read the samples (%s)", strerror(-rc));
        goto out;
    }
    json_object_set_new(all, "samples", sc.arr);
    sc.arr = NULL;
    json_object_set_new(all, "samples_total", json_integer((json_int_t)total));
    int64_t nh = db_reader_host_stats(rd, max_hosts, &hosts_total, add_host, &hc);
    if (nh < 0) {
        rc = (int)nh;
        snprintf(err, errlen, "cannot read the hosts (%s)", strerror(-rc));
        goto out;
    }
    json_object_set_new(all, "hosts", hc.arr);
    hc.arr = NULL;
    json_object_set_new(all, "hosts_total", json_integer((json_int_t)hosts_total));
    if (db_reader_get_meta(rd, "config", text, META_MAX) == 0)
        json_object_set_new(all, "config", json_string(text));
    else
        json_object_set_new(all, "config", json_null());
    *out = all;
    all = NULL;
    rc = 0;
out:
    json_decref(sc.arr);
    json_decref(hc.arr);
    json_decref(all);
    cr_free(text);
    return rc;
}

/* ---- small formatting helpers --------------------------------------------- */

static const json_t *jget(const json_t *o, const char *path)
{
    /* "a" or "a.b" or "a.b.c" */
    char key[64];
    while (o != NULL) {
        const char *dot = strchr(path, '.');
        if (dot == NULL)
            return json_object_get(o, path);
        snprintf(key, sizeof key, "%.*s", (int)(dot - path), path);
        o = json_object_get(o, key);
        path = dot + 1;
    }
    return NULL;
}

static double jnum(const json_t *o, const char *path) { return json_number_value(jget(o, path)); }

static long long jint(const json_t *o, const char *path)
{
    const json_t *v = jget(o, path);
    return json_is_integer(v) ? (long long)json_integer_value(v) : (long long)json_number_value(v);
}

void report_escape(FILE *f, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        switch (s[i]) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if ((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t')
                fputc('?', f); /* control bytes are not allowed in HTML */
            else
                fputc(s[i], f);
        }
    }
}

static void esc(FILE *f, const char *s) { report_escape(f, s ? s : "", s ? strlen(s) : 0); }

/* 1234567 -> "1,234,567" */
static void fmt_int(char *out, size_t cap, long long v)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", v < 0 ? -v : v);
    size_t o = 0;
    if (v < 0 && o + 1 < cap)
        out[o++] = '-';
    for (int i = 0; i < n && o + 2 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
}

static void fmt_bytes(char *out, size_t cap, double b)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(out, cap, u == 0 ? "%.0f %s" : "%.1f %s", b, unit[u]);
}

static void fmt_duration(char *out, size_t cap, double s)
{
    if (s < 60)
        snprintf(out, cap, "%.1f s", s);
    else if (s < 3600)
        snprintf(out, cap, "%d min %02d s", (int)s / 60, (int)s % 60);
    else
        snprintf(out, cap, "%d h %02d min", (int)(s / 3600), (int)s % 3600 / 60);
}

static void fmt_utc(char *out, size_t cap, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || strftime(out, cap, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
        snprintf(out, cap, "?");
}

static double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

/* ---- SVG charts ----------------------------------------------------------- */

enum { FMT_NUM, FMT_PCT, FMT_RATE };
enum { S_LINE, S_AREA, S_DASH };

typedef struct series {
    const char *name;
    const char *color;
    double *y;
    int style;
} series;

typedef struct chart {
    const char *id;       /* element id of the figure */
    const char *title;
    const char *caption;
    const char *alt;
    int yfmt;
    double ymax;          /* <= 0: from the data */
    const double *x;      /* seconds since the first sample */
    size_t n;
    series s[MAX_LINES];
    size_t ns;
} chart;

/* A fresh chart over the samples' time axis x (n points). */
static void chart_start(chart *c, const char *id, const char *title, int yfmt, const double *x,
                        size_t n)
{
    memset(c, 0, sizeof *c);
    c->id = id;
    c->title = title;
    c->yfmt = yfmt;
    c->x = x;
    c->n = n;
}

#define W 640.0
#define H 260.0
#define ML 62.0
#define MR 18.0
#define MT 14.0
#define MB 38.0

static const char *const palette[MAX_LINES] = { "#2563eb", "#0d9488", "#d97706", "#7c3aed",
                                                "#db2777", "#16a34a", "#0891b2", "#65a30d",
                                                "#9333ea", "#64748b" };

static double nice_step(double range, int target)
{
    if (!(range > 0))
        return 1;
    double raw = range / target;
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    double nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    return nf * mag;
}

static void fmt_axis(char *out, size_t cap, double v, int fmt, double step)
{
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step));
    if (dec > 9)
        dec = 9;
    if (fmt == FMT_PCT) {
        snprintf(out, cap, "%.*f%%", dec, v);
    } else if (fabs(v) >= 1e6) {
        snprintf(out, cap, "%gM", v / 1e6);
    } else if (fabs(v) >= 1e4) {
        snprintf(out, cap, "%gk", v / 1e3);
    } else {
        snprintf(out, cap, "%.*f", dec, v);
    }
}

static void fmt_time_tick(char *out, size_t cap, double s, double span)
{
    if (span < 180)
        snprintf(out, cap, "%gs", s);
    else if (span < 3 * 3600)
        snprintf(out, cap, "%gm", s / 60);
    else
        snprintf(out, cap, "%gh", s / 3600);
}

static double px_x(double x, double x1)
{
    return ML + (x1 > 0 ? x / x1 : 0) * (W - ML - MR);
}

static double px_y(double y, double ymax)
{
    double f = ymax > 0 ? y / ymax : 0;
    if (f < 0)
        f = 0;
    if (f > 1.02)
        f = 1.02;
    return H - MB - f * (H - MT - MB);
}

/* The chart's SVG into b. */
static void chart_svg(cr_buf *b, const chart *c)
{
    double x1 = c->n ? c->x[c->n - 1] : 0;
    if (!(x1 > 0))
        x1 = 1;
    double ymax = c->ymax;
    double *base = cr_calloc(c->n ? c->n : 1, sizeof *base);
    double *top = cr_calloc(c->n ? c->n : 1, sizeof *top);
    if (base == NULL || top == NULL)
        goto out;
    if (!(ymax > 0)) {
        for (size_t i = 0; i < c->n; i++) {
            double stack = 0;
            for (size_t k = 0; k < c->ns; k++) {
                double v = c->s[k].y[i];
                if (c->s[k].style == S_AREA)
                    stack += v;
                else if (v > ymax)
                    ymax = v;
            }
            if (stack > ymax)
                ymax = stack;
        }
        ymax *= 1.1;
    }
    if (!(ymax > 0))
        ymax = 1;
    double step = nice_step(ymax, 4);
    ymax = ceil(ymax / step - 1e-9) * step;
    cr_buf_printf(b,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                  "viewBox=\"0 0 %.0f %.0f\" font-family=\"-apple-system,Segoe UI,Roboto,"
                  "Helvetica,Arial,sans-serif\" font-size=\"11\">"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>",
                  W, H, W, H);
    /* grid and y labels */
    for (double v = 0; v <= ymax + step / 2; v += step) {
        char lab[32];
        double y = px_y(v, ymax);
        fmt_axis(lab, sizeof lab, v, c->yfmt, step);
        cr_buf_printf(b,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                      "stroke-width=\"1\"/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                      "fill=\"#64748b\">%s</text>",
                      ML, y, W - MR, y, v == 0 ? "#94a3b8" : "#e5e7eb", ML - 6, y + 4, lab);
    }
    /* x ticks */
    double xs = nice_step(x1, 6);
    if (x1 >= 180 && x1 < 3 * 3600)
        xs = 60 * nice_step(x1 / 60, 6);
    else if (x1 >= 3 * 3600)
        xs = 3600 * nice_step(x1 / 3600, 6);
    for (double v = 0; v <= x1 + xs / 1000; v += xs) {
        char lab[32];
        double x = px_x(v, x1);
        fmt_time_tick(lab, sizeof lab, v, x1);
        cr_buf_printf(b,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#94a3b8\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#64748b\">%s"
                      "</text>",
                      x, H - MB, x, H - MB + 4, x, H - MB + 17, lab);
    }
    cr_buf_printf(b,
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#475569\">elapsed "
                  "time</text>",
                  ML + (W - ML - MR) / 2, H - 4);
    /* stacked areas first, then lines on top */
    for (size_t k = 0; k < c->ns; k++) {
        const series *s = &c->s[k];
        if (s->style != S_AREA || c->n == 0)
            continue;
        for (size_t i = 0; i < c->n; i++)
            top[i] = base[i] + (isfinite(s->y[i]) ? s->y[i] : 0);
        cr_buf_printf(b, "<path fill=\"%s\" fill-opacity=\"0.55\" stroke=\"%s\" "
                         "stroke-width=\"1.5\" d=\"", s->color, s->color);
        for (size_t i = 0; i < c->n; i++)
            cr_buf_printf(b, "%s%.1f %.1f", i ? "L" : "M", px_x(c->x[i], x1),
                          px_y(top[i], ymax));
        for (size_t i = c->n; i-- > 0;)
            cr_buf_printf(b, "L%.1f %.1f", px_x(c->x[i], x1), px_y(base[i], ymax));
        cr_buf_printf(b, "Z\"/>");
        memcpy(base, top, c->n * sizeof *base);
    }
    for (size_t k = 0; k < c->ns; k++) {
        const series *s = &c->s[k];
        if (s->style == S_AREA || c->n == 0)
            continue;
        cr_buf_printf(b, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" "
                         "stroke-linejoin=\"round\"%s d=\"", s->color,
                      s->style == S_DASH ? "1.8" : "2.2",
                      s->style == S_DASH ? " stroke-dasharray=\"6 4\"" : "");
        bool pen = false;
        for (size_t i = 0; i < c->n; i++) {
            if (!isfinite(s->y[i])) {
                pen = false;
                continue;
            }
            cr_buf_printf(b, "%s%.1f %.1f", pen ? "L" : "M", px_x(c->x[i], x1),
                          px_y(s->y[i], ymax));
            pen = true;
        }
        if (c->n == 1) /* one point: a short mark so it shows */
            cr_buf_printf(b, "h2");
        cr_buf_printf(b, "\"/>");
    }
    cr_buf_printf(b, "</svg>");
out:
    cr_free(base);
    cr_free(top);
}

static void base64_write(FILE *f, const unsigned char *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        fputc(tab[(v >> 18) & 63], f);
        fputc(tab[(v >> 12) & 63], f);
        fputc(i + 1 < n ? tab[(v >> 6) & 63] : '=', f);
        fputc(i + 2 < n ? tab[v & 63] : '=', f);
    }
}

/* A card with the chart's title, the chart, its legend and caption. */
static int chart_write(FILE *f, const chart *c)
{
    cr_buf b;
    cr_buf_init(&b, SVG_MAX);
    fprintf(f, "<div class=\"card chart\" id=\"%s\"><h3>%s</h3>\n", c->id, c->title);
    if (c->n == 0) {
        fputs("<p class=\"empty\">No samples stored yet: the daemon stores one every 2 s "
              "while it crawls.</p>\n</div>\n",
              f);
        return 0;
    }
    chart_svg(&b, c);
    if (b.data == NULL || b.len == 0) {
        cr_buf_release(&b);
        return -ENOMEM;
    }
    fputs("<img class=\"plot\" width=\"640\" height=\"260\" alt=\"", f);
    esc(f, c->alt);
    fputs("\" src=\"data:image/svg+xml;base64,", f);
    base64_write(f, (const unsigned char *)b.data, b.len);
    fputs("\">\n<div class=\"legend\">", f);
    for (size_t k = 0; k < c->ns; k++)
        fprintf(f, "<span><i class=\"%s\" style=\"background:%s;border-color:%s\"></i>%s</span>",
                c->s[k].style == S_DASH ? "dash" : "sw", c->s[k].color, c->s[k].color,
                c->s[k].name);
    fprintf(f, "</div>\n<p class=\"caption\">%s</p>\n</div>\n", c->caption);
    cr_buf_release(&b);
    return 0;
}

/* ---- the page ------------------------------------------------------------- */

static const char css[] =
    "*{box-sizing:border-box}"
    "body{margin:0;background:#f3f5f8;color:#0f172a;font:15px/1.5 -apple-system,'Segoe UI',"
    "Roboto,Helvetica,Arial,sans-serif}"
    ".wrap{max-width:1360px;margin:0 auto;padding:28px 32px 48px}"
    ".top{background:linear-gradient(120deg,#0f172a,#1e3a8a);color:#fff;border-radius:14px;"
    "padding:26px 30px 22px;margin-bottom:22px}"
    ".top h1{margin:0;font-size:26px;font-weight:650;letter-spacing:-.01em}"
    ".top .sub{margin-top:4px;color:#cbd5e1;font-size:14px}"
    ".top .sub code{color:#e2e8f0}"
    ".badge{display:inline-block;padding:2px 10px;border-radius:999px;font-size:12px;"
    "font-weight:600;margin-left:10px;vertical-align:4px}"
    ".badge.done{background:#16a34a}.badge.run{background:#d97706}.badge.stop{background:#64748b}"
    ".kpis{display:grid;grid-template-columns:repeat(6,1fr);gap:12px;margin-top:20px}"
    ".kpi{background:rgba(255,255,255,.08);border-radius:10px;padding:10px 14px}"
    ".kpi .v{font-size:22px;font-weight:650;font-variant-numeric:tabular-nums}"
    ".kpi .l{font-size:12px;color:#cbd5e1;text-transform:uppercase;letter-spacing:.04em}"
    ".kpi .d{font-size:12px;color:#93c5fd}"
    "h2{font-size:18px;margin:28px 0 12px;font-weight:650}"
    ".grid{display:grid;grid-template-columns:1fr 1fr;gap:18px}"
    ".card{background:#fff;border-radius:12px;padding:16px 18px;"
    "box-shadow:0 1px 2px rgba(15,23,42,.06),0 1px 8px rgba(15,23,42,.04)}"
    ".card h3{margin:0 0 8px;font-size:15px;font-weight:600}"
    "img.plot{display:block;width:100%;height:auto}"
    ".legend{display:flex;flex-wrap:wrap;gap:6px 16px;font-size:13px;color:#334155;margin-top:6px}"
    ".legend i{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:6px;"
    "vertical-align:-1px}"
    ".legend i.dash{height:0;border-top:2px dashed;background:none!important;width:18px;"
    "vertical-align:3px}"
    ".caption{color:#64748b;font-size:13px;margin:6px 0 0}"
    ".empty{color:#64748b;font-style:italic}"
    "table{border-collapse:collapse;width:100%;font-size:13.5px;font-variant-numeric:tabular-nums}"
    "th{text-align:right;font-weight:600;color:#475569;border-bottom:2px solid #e2e8f0;"
    "padding:6px 7px;white-space:nowrap;font-size:12.5px}"
    "td{text-align:right;padding:5px 7px;border-bottom:1px solid #f1f5f9;white-space:nowrap}"
    "#hosts{overflow-x:auto}"
    "th:first-child,td:first-child{text-align:left}"
    "tbody tr:hover{background:#f8fafc}"
    "td.host{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;"
    "max-width:300px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}"
    ".meter{display:inline-block;width:44px;height:6px;background:#e2e8f0;border-radius:3px;"
    "margin-left:8px;vertical-align:1px}"
    ".meter b{display:block;height:6px;border-radius:3px;background:#0d9488}"
    ".bars .row{display:grid;grid-template-columns:64px 1fr 72px;align-items:center;gap:10px;"
    "margin:5px 0;font-size:13.5px}"
    ".bars .track{background:#f1f5f9;border-radius:4px;height:16px}"
    ".bars .fill{height:16px;border-radius:4px}"
    ".c2{background:#16a34a}.c3{background:#2563eb}.c4{background:#d97706}.c5{background:#dc2626}"
    ".c1{background:#64748b}"
    ".num{text-align:right;font-variant-numeric:tabular-nums}"
    "pre{background:#0f172a;color:#e2e8f0;padding:14px 16px;border-radius:10px;overflow:auto;"
    "font-size:12.5px;line-height:1.45;max-height:520px}"
    ".more{color:#64748b;font-style:italic}"
    ".foot{color:#94a3b8;font-size:12px;margin-top:30px}"
    "dl.facts{display:grid;grid-template-columns:auto 1fr;gap:4px 16px;margin:0;font-size:13.5px}"
    "dl.facts dt{color:#64748b}dl.facts dd{margin:0;font-variant-numeric:tabular-nums}";

static void kpi(FILE *f, const char *id, const char *value_attr, const char *shown,
                const char *label, const char *detail)
{
    fprintf(f, "<div class=\"kpi\" id=\"kpi-%s\" data-value=\"%s\"><div class=\"v\">%s</div>"
               "<div class=\"l\">%s</div>",
            id, value_attr, shown, label);
    if (detail)
        fprintf(f, "<div class=\"d\">%s</div>", detail);
    fputs("</div>\n", f);
}

static void kpi_int(FILE *f, const char *id, long long v, const char *label, const char *detail)
{
    char a[32], s[48];
    snprintf(a, sizeof a, "%lld", v);
    fmt_int(s, sizeof s, v);
    kpi(f, id, a, s, label, detail);
}

static void header(FILE *f, const json_t *data, const report_meta *m)
{
    const json_t *st = json_object_get(data, "stats");
    double elapsed = jnum(st, "elapsed_s");
    long long pages = jint(st, "pages");
    long long urls = jint(st, "dedup.urls");
    long long dups = jint(st, "dedup.duplicate.bloom_maybe_trusted") +
                     jint(st, "dedup.duplicate.recent_cache") + jint(st, "dedup.duplicate.sqlite");
    long long news = jint(st, "dedup.new.bloom_no") + jint(st, "dedup.new.false_positive_caught");
    char a[64], s[64], d[128], when[64];
    bool done = json_is_true(json_object_get(st, "done"));
    bool stopping = json_is_true(json_object_get(st, "stopping"));
    fmt_utc(when, sizeof when, m->generated_ms);
    fputs("<div class=\"top\"><h1>crawld report", f);
    if (json_object_size(st) == 0)
        fputs("<span class=\"badge stop\">no figures stored</span>", f);
    else if (done)
        fputs("<span class=\"badge done\">finished: frontier drained</span>", f);
    else if (stopping)
        fputs("<span class=\"badge stop\">stopped</span>", f);
    else
        fputs("<span class=\"badge run\">running (or interrupted)</span>", f);
    fputs("</h1>\n<div class=\"sub\">state <code>", f);
    esc(f, m->state_dir ? m->state_dir : "?");
    fmt_duration(d, sizeof d, elapsed);
    fprintf(f, "</code> &middot; crawled for %s &middot; report made %s</div>\n", d, when);
    fputs("<div class=\"kpis\">\n", f);
    fmt_duration(d, sizeof d, elapsed);
    kpi_int(f, "pages", pages, "pages fetched", d);
    snprintf(a, sizeof a, "%.3f", elapsed > 0 ? (double)pages / elapsed : 0.0);
    snprintf(s, sizeof s, "%.1f", elapsed > 0 ? (double)pages / elapsed : 0.0);
    kpi(f, "pages_per_s", a, s, "pages / s", "average over the crawl");
    kpi_int(f, "links", jint(st, "links"), "links extracted", NULL);
    kpi_int(f, "new", news, "new URLs", NULL);
    snprintf(d, sizeof d, "%.1f%% of %lld URLs tested", pct((double)dups, (double)urls), urls);
    kpi_int(f, "duplicates", dups, "duplicates skipped", d);
    kpi_int(f, "fp_caught", jint(st, "dedup.new.false_positive_caught"),
            "false positives caught", "by SQLite");
    double fo = jnum(st, "dedup.fpr.observed"), fb = jnum(st, "dedup.fpr.bound");
    snprintf(a, sizeof a, "%.9g", fo);
    snprintf(s, sizeof s, "%.4f%%", 100 * fo);
    snprintf(d, sizeof d, "bound %.4g%%, predicted %.4f%%", 100 * fb,
             100 * jnum(st, "dedup.fpr.predicted"));
    kpi(f, "fpr_observed", a, s, "observed FPR", d);
    snprintf(a, sizeof a, "%.9g", fb);
    snprintf(s, sizeof s, "%.4g%%", 100 * fb);
    snprintf(d, sizeof d, "fill %.4f, %lld stages", jnum(st, "dedup.bloom.fill"),
             jint(st, "dedup.bloom.stages"));
    kpi(f, "fpr_bound", a, s, "FPR bound", d);
    kpi_int(f, "fetch_errors", jint(st, "fetch_errors"), "fetch errors", "no HTTP answer");
    snprintf(a, sizeof a, "%lld", jint(st, "bytes"));
    fmt_bytes(s, sizeof s, (double)jint(st, "bytes"));
    kpi(f, "bytes", a, s, "on the wire", "body bytes");
    snprintf(d, sizeof d, "%lld active now", jint(st, "frontier.hosts_active"));
    kpi_int(f, "hosts", jint(st, "frontier.hosts"), "hosts", d);
    /* every queued URL has its row in SQLite; some are also held in memory */
    snprintf(d, sizeof d, "%lld of them in memory", jint(st, "frontier.memory"));
    kpi_int(f, "frontier", jint(st, "frontier.sqlite_queued"), "URLs queued", d);
    fputs("</div></div>\n", f);
}

/* Series values from the samples: sample[i].key. */
static void fill_series(const json_t *samples, const char *key, double *y)
{
    for (size_t i = 0; i < json_array_size(samples); i++)
        y[i] = jnum(json_array_get(samples, i), key);
}

/* The dedup decisions since the start, as `crawld stats` prints them. */
static void layers_card(FILE *f, const json_t *st)
{
    struct {
        const char *id, *label, *path;
    } rows[] = {
        { "new-bloom-no", "new: Bloom said NO", "dedup.new.bloom_no" },
        { "new-fp-caught", "new: false positive caught (SQLite)",
          "dedup.new.false_positive_caught" },
        { "dup-bloom-trusted", "duplicate: Bloom MAYBE trusted",
          "dedup.duplicate.bloom_maybe_trusted" },
        { "dup-recent-cache", "duplicate: recent cache", "dedup.duplicate.recent_cache" },
        { "dup-sqlite", "duplicate: SQLite", "dedup.duplicate.sqlite" },
        { "dup-pending", "duplicate: pending (not committed yet)", "dedup.duplicate.pending" },
        { "dup-same-page", "duplicate: same page (page memo)", "dedup.duplicate.same_page" },
    };
    long long urls = jint(st, "dedup.urls");
    fputs("<div class=\"card\" id=\"layers\"><h3>Who decided: URLs by layer</h3>\n"
          "<table><thead><tr><th>decision (layer)</th><th>URLs</th><th>share</th></tr></thead>"
          "<tbody>\n",
          f);
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        long long n = jint(st, rows[i].path);
        char s[32];
        fmt_int(s, sizeof s, n);
        fprintf(f, "<tr id=\"layer-%s\" data-value=\"%lld\"><td>%s</td><td>%s</td>"
                   "<td>%.2f%%<span class=\"meter\"><b style=\"width:%.0f%%\"></b></span></td>"
                   "</tr>\n",
                rows[i].id, n, rows[i].label, s, pct((double)n, (double)urls),
                pct((double)n, (double)urls));
    }
    char s[32], mem[32];
    fmt_int(s, sizeof s, urls);
    fmt_bytes(mem, sizeof mem, jnum(st, "dedup.bloom.memory_bytes"));
    fprintf(f, "<tr id=\"layer-total\" data-value=\"%lld\"><th>URLs tested</th><th>%s</th>"
               "<th></th></tr>\n</tbody></table>\n",
            urls, s);
    fprintf(f, "<p class=\"caption\">Every URL that passed the scope was decided once: by the "
               "seen test, or, for a repeat of a link on the page that found it, by that page's "
               "memo (the first occurrence's answer). Bloom filter: %lld shards, %lld stages, fill %.6f, %.1f bits per URL, "
               "%s of bits. %lld verifier errors.</p></div>\n",
            jint(st, "dedup.bloom.shards"), jint(st, "dedup.bloom.stages"),
            jnum(st, "dedup.bloom.fill"), jnum(st, "dedup.bloom.bits_per_item"), mem,
            jint(st, "dedup.errors"));
}

static double *col(double *all, size_t n, size_t k) { return all + k * n; }

/* y[i] = the share (percent) of total's growth between samples i-1 and i
 * that is part's growth; an interval where total did not grow repeats the
 * previous value (0 at the start). */
static void fill_share(const json_t *samples, const char *total, const char *part, double *y)
{
    for (size_t i = 0; i < json_array_size(samples); i++) {
        const json_t *cur = json_array_get(samples, i);
        const json_t *prev = i ? json_array_get(samples, i - 1) : NULL;
        double dt = jnum(cur, total) - (prev ? jnum(prev, total) : 0);
        double dp = jnum(cur, part) - (prev ? jnum(prev, part) : 0);
        y[i] = dt > 0 ? 100.0 * dp / dt : i ? y[i - 1] : 0;
    }
}

/* One part of a share chart: its counter, its name, its style. */
typedef struct share_part {
    const char *key, *name;
    int style;
} share_part;

/* The series (at most 4) of a share chart of total's growth (0..100 %),
 * in columns 0..nparts-1 of v, coloured in one order. */
static void share_series(chart *c, const json_t *samples, double *v, size_t n, const char *total,
                         const share_part *parts, size_t nparts)
{
    static const size_t colour[4] = { 2, 1, 3, 4 };
    c->ymax = 100;
    for (size_t k = 0; k < nparts && k < 4; k++) {
        fill_share(samples, total, parts[k].key, col(v, n, k));
        c->s[c->ns++] = (series){ parts[k].name, palette[colour[k]], col(v, n, k),
                                  parts[k].style };
    }
}

/* 3b. With dedup.retention_s: the generation ring over time, keys per
 * generation by age (newest first), and the URLs forgotten so far. No
 * chart (0) when no sample has a ring. */
static int ring_chart(FILE *f, const json_t *samples, double *v, const double *x, size_t n)
{
    static const char *const names[MAX_LINES - 1] = {
        "newest", "1 window older", "2 windows older", "3 windows older", "4 windows older",
        "5 windows older", "6 windows older", "7 windows older", "8 windows older"
    };
    size_t gens = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = json_array_size(json_object_get(json_array_get(samples, i), "ring_keys"));
        if (k > gens)
            gens = k;
    }
    if (gens == 0)
        return 0;
    if (gens > MAX_LINES - 1)
        gens = MAX_LINES - 1;
    chart c;
    chart_start(&c, "chart-ring", "Bloom generations (dedup.retention_s), keys by age", FMT_NUM,
                x, n);
    c.caption = "Keys in each live Bloom generation, the newest first: a window's generation "
                "fills while it is the newest, ages one step per window, and is dropped with "
                "the rows nobody linked within the retention. The dashed line counts the URLs "
                "forgotten so far (same axis).";
    c.alt = "Line chart of the keys per Bloom generation over time";
    for (size_t k = 0; k < gens; k++) {
        double *y = col(v, n, k);
        for (size_t i = 0; i < n; i++) {
            const json_t *a = json_object_get(json_array_get(samples, i), "ring_keys");
            y[i] = k < json_array_size(a) ? (double)json_integer_value(json_array_get(a, k)) : NAN;
        }
        c.s[c.ns++] = (series){ names[k], palette[k], y, S_LINE };
    }
    fill_series(samples, "forgotten", col(v, n, gens));
    c.s[c.ns++] = (series){ "forgotten", "#dc2626", col(v, n, gens), S_DASH };
    return chart_write(f, &c);
}

/* The re-crawl's totals and the intervals the schedule settled on (rows
 * per interval bucket, from the latest figures). */
static void recrawl_card(FILE *f, const json_t *st)
{
    char a[32], b[32], c[32], d[32], e[32], g[32];
    fmt_int(a, sizeof a, jint(st, "recrawl.revisited"));
    fmt_int(b, sizeof b, jint(st, "recrawl.unchanged"));
    fmt_int(c, sizeof c, jint(st, "recrawl.changed"));
    fmt_int(d, sizeof d, jint(st, "recrawl.gone"));
    fmt_int(e, sizeof e, jint(st, "recrawl.new"));
    fmt_bytes(g, sizeof g, (double)jint(st, "recrawl.bytes_saved"));
    fprintf(f, "<figure class=\"card\" id=\"recrawl\"><figcaption>Re-crawl</figcaption>\n"
               "<p>%s revisits: %s unchanged (%lld answered 304, %lld with the same payload), %s"
               " changed, %s gone; %s new pages; %s not sent thanks to 304s.</p>\n",
            a, b, jint(st, "recrawl.not_modified"), jint(st, "recrawl.same_digest"), c, d, e, g);
    fputs("<table><thead><tr><th>interval</th><th>pages</th></tr></thead><tbody>\n", f);
    const json_t *iv = jget(st, "recrawl.intervals_s");
    const char *k;
    const json_t *val;
    json_object_foreach((json_t *)iv, k, val)
    {
        char when[32], cnt[32];
        fmt_duration(when, sizeof when, strtod(k, NULL));
        fmt_int(cnt, sizeof cnt, (long long)json_integer_value(val));
        fprintf(f, "<tr><td>from %s</td><td>%s</td></tr>\n", when, cnt);
    }
    fputs("</tbody></table></figure>\n", f);
}

static int charts(FILE *f, const json_t *samples, const json_t *st)
{
    size_t n = json_array_size(samples);
    size_t cols = 2 + MAX_LINES;
    double *v = cr_calloc((n ? n : 1) * cols, sizeof *v);
    double *x = cr_calloc(n ? n : 1, sizeof *x);
    int rc = -ENOMEM;
    if (v == NULL || x == NULL)
        goto out;
    int64_t t0 = n ? (int64_t)jint(json_array_get(samples, 0), "t_ms") : 0;
    for (size_t i = 0; i < n; i++)
        x[i] = (double)((int64_t)jint(json_array_get(samples, i), "t_ms") - t0) / 1000.0;
    chart c;

    /* 1. duplicate-skip rate per interval, by layer */
    chart_start(&c, "chart-dup", "Duplicate-skip rate, by the layer that decided", FMT_PCT, x, n);
    c.caption = "Share of the URLs tested in each interval between samples that were skipped as "
                "duplicates, stacked by layer: the Bloom filter's MAYBE trusted without a check, "
                "the exact recent-fingerprint cache, SQLite, and the page memo (a link repeated "
                "on one page takes its first occurrence's answer). The white space above the "
                "stack is the share that was new. Intervals with no URLs repeat the previous "
                "value.";
    c.alt = "Stacked area chart of the duplicate-skip rate per layer over time";
    static const share_part dup_parts[] = {
        { "dup_bloom_trusted", "Bloom MAYBE trusted", S_AREA },
        { "dup_recent_cache", "recent cache", S_AREA },
        { "dup_sqlite", "SQLite", S_AREA },
        { "dup_same_page", "same page (page memo)", S_AREA },
    };
    share_series(&c, samples, v, n, "urls", dup_parts, sizeof dup_parts / sizeof dup_parts[0]);
    rc = chart_write(f, &c);
    if (rc < 0)
        goto out;

    /* 2. FPR */
    chart_start(&c, "chart-fpr", "False-positive rate: observed, predicted, bound", FMT_PCT, x, n);
    c.caption = "Observed: false positives SQLite caught / new URLs that a Bloom MAYBE would have "
                "sent to SQLite, since the start. Predicted: the rate the filter's model gives "
                "for its fill at that time. The dashed line is the configured bound "
                "(dedup.fp_rate); the scalable chain adds tighter stages to stay under it.";
    c.alt = "Line chart of the observed and predicted false-positive rate against the bound";
    {
        double *yo = col(v, n, 0), *yp = col(v, n, 1), *yb = col(v, n, 2);
        double top = 0;
        for (size_t i = 0; i < n; i++) {
            const json_t *s = json_array_get(samples, i);
            yo[i] = 100 * jnum(s, "fpr_observed");
            yp[i] = 100 * jnum(s, "fpr_predicted");
            yb[i] = 100 * jnum(s, "fpr_bound");
            top = fmax(top, fmax(yo[i], fmax(yp[i], yb[i] * 1.25)));
        }
        c.ymax = top;
        c.s[c.ns++] = (series){ "observed", palette[0], yo, S_LINE };
        c.s[c.ns++] = (series){ "predicted from fill", palette[3], yp, S_LINE };
        c.s[c.ns++] = (series){ "configured bound", "#dc2626", yb, S_DASH };
    }
    rc = chart_write(f, &c);
    if (rc < 0)
        goto out;

    /* 3. Bloom fill per stage */
    chart_start(&c, "chart-fill", "Bloom filter fill, per stage of the chain", FMT_PCT, x, n);
    c.caption = "Fraction of bits set in each stage (the mean over the shards that have it). A "
                "new, larger and tighter stage starts when the newest one reaches its capacity; "
                "older stages stop filling then.";
    c.alt = "Line chart of the fill of each Bloom stage over time";
    {
        static const char *const names[MAX_LINES] = { "stage 0", "stage 1", "stage 2",
                                                      "stage 3", "stage 4", "stage 5",
                                                      "stage 6", "stage 7", "stage 8",
                                                      "stage 9" };
        size_t stages = 0;
        for (size_t i = 0; i < n; i++) {
            size_t k = json_array_size(json_object_get(json_array_get(samples, i), "bloom_fill"));
            if (k > stages)
                stages = k;
        }
        if (stages > MAX_LINES)
            stages = MAX_LINES;
        for (size_t k = 0; k < stages; k++) {
            double *y = col(v, n, k);
            for (size_t i = 0; i < n; i++) {
                const json_t *a = json_object_get(json_array_get(samples, i), "bloom_fill");
                y[i] = k < json_array_size(a) ? 100 * json_number_value(json_array_get(a, k))
                                              : NAN;
            }
            c.s[c.ns++] = (series){ names[k], palette[k], y, S_LINE };
        }
    }
    rc = chart_write(f, &c);
    if (rc < 0)
        goto out;
    rc = ring_chart(f, samples, v, x, n);
    if (rc < 0)
        goto out;
    layers_card(f, st);
    fputs("</div>\n<h2>Progress</h2>\n<div class=\"grid\">\n", f);

    /* 4. pages/s */
    chart_start(&c, "chart-rate", "Pages per second", FMT_RATE, x, n);
    c.caption = "Fetches answered per second between two samples (robots.txt and retries "
                "included), as the daemon measured it.";
    c.alt = "Line chart of pages per second over time";
    fill_series(samples, "pages_per_s", col(v, n, 0));
    c.s[c.ns++] = (series){ "pages / s", palette[0], col(v, n, 0), S_AREA };
    rc = chart_write(f, &c);
    if (rc < 0)
        goto out;

    /* 5. frontier */
    chart_start(&c, "chart-frontier", "Frontier size", FMT_NUM, x, n);
    c.caption = "URLs waiting to be fetched. Every one has its row queued in SQLite (the area); "
                "the per-host queues hold some of them in memory too, within the memory budget "
                "(the line). The dashed line is the number of hosts with work (same axis).";
    c.alt = "Stacked area chart of the frontier size over time";
    fill_series(samples, "frontier_memory", col(v, n, 0));
    fill_series(samples, "frontier_sqlite", col(v, n, 1));
    fill_series(samples, "hosts_active", col(v, n, 2));
    c.s[c.ns++] = (series){ "queued (SQLite)", palette[6], col(v, n, 1), S_AREA };
    c.s[c.ns++] = (series){ "of which in memory", palette[1], col(v, n, 0), S_LINE };
    c.s[c.ns++] = (series){ "hosts active", palette[4], col(v, n, 2), S_DASH };
    rc = chart_write(f, &c);
    if (rc < 0 || jint(st, "recrawl.revisited") <= 0)
        goto out;

    /* 6. re-crawl: what the revisits found */
    chart_start(&c, "chart-recrawl", "Re-crawl: what each revisit found", FMT_PCT, x, n);
    c.caption = "Of the known pages fetched again in each interval between samples, the share "
                "found changed (a new payload), unchanged (304 Not Modified, or the same payload "
                "digest) and gone (404/410 after a 200). The change rate is what the adaptive "
                "schedule follows. Intervals without revisits repeat the previous value.";
    c.alt = "Chart of the change rate of revisited pages over time";
    static const share_part rc_parts[3] = {
        { "recrawl.changed", "changed", S_AREA },
        { "recrawl.unchanged", "unchanged", S_LINE },
        { "recrawl.gone", "gone", S_LINE },
    };
    share_series(&c, samples, v, n, "recrawl.revisited", rc_parts, 3);
    rc = chart_write(f, &c);
    if (rc < 0)
        goto out;
    recrawl_card(f, st);
out:
    cr_free(v);
    cr_free(x);
    return rc;
}

static void status_bars(FILE *f, const json_t *st)
{
    const json_t *by = json_object_get(st, "pages_by_status");
    long long max = 0, total = 0;
    const char *code;
    const json_t *val;
    json_object_foreach((json_t *)by, code, val)
    {
        long long n = (long long)json_integer_value(val);
        total += n;
        if (n > max)
            max = n;
    }
    fputs("<div class=\"card\" id=\"status\"><h3>HTTP status codes</h3>\n", f);
    if (total == 0) {
        fputs("<p class=\"empty\">No answers yet.</p></div>\n", f);
        return;
    }
    fputs("<div class=\"bars\">\n", f);
    for (long c = 100; c < 600; c++) {
        char key[8];
        snprintf(key, sizeof key, "%ld", c);
        val = json_object_get(by, key);
        if (val == NULL)
            continue;
        long long n = (long long)json_integer_value(val);
        char s[32];
        fmt_int(s, sizeof s, n);
        fprintf(f, "<div class=\"row\" id=\"status-%ld\" data-value=\"%lld\"><span>%ld</span>"
                   "<div class=\"track\"><div class=\"fill c%ld\" style=\"width:%.1f%%\"></div>"
                   "</div><span class=\"num\">%s</span></div>\n",
                c, n, c, c / 100, max ? 100.0 * (double)n / (double)max : 0.0, s);
    }
    fprintf(f, "</div><p class=\"caption\">Every fetch that got an HTTP answer, robots.txt and "
               "retries included (%lld in all). 429 and 5xx answers are retried after a "
               "backoff.</p></div>\n",
            total);
}

static void errors_card(FILE *f, const json_t *data)
{
    const json_t *st = json_object_get(data, "stats");
    const json_t *kinds = json_object_get(st, "fetch_errors_by_kind");
    const json_t *rows = json_object_get(data, "database");
    fputs("<div class=\"card\" id=\"outcomes\"><h3>Outcomes and errors</h3>\n<dl class=\"facts\">\n",
          f);
    struct {
        const char *label, *path;
    } facts[] = {
        { "URLs done", "frontier.done" },
        { "URLs failed (attempts used up)", "frontier.failed" },
        { "retries scheduled", "frontier.retries" },
        { "excluded by robots.txt", "frontier.robots_excluded" },
        { "politeness waits", "frontier.politeness_waits" },
        { "redirects followed", "redirects" },
        { "bodies truncated", "truncated" },
        { "links refused by the URL parser", "links_rejected" },
        { "links outside scope or limits", "links_out_of_scope" },
        { "nofollow links skipped", "nofollow_skipped" },
    };
    for (size_t i = 0; i < sizeof facts / sizeof *facts; i++) {
        char s[32];
        fmt_int(s, sizeof s, jint(st, facts[i].path));
        fprintf(f, "<dt>%s</dt><dd>%s</dd>\n", facts[i].label, s);
    }
    const char *k;
    const json_t *val;
    json_object_foreach((json_t *)kinds, k, val)
    {
        fputs("<dt>fetch error: ", f);
        esc(f, k);
        fputs("</dt><dd class=\"error\" data-kind=\"", f);
        esc(f, k);
        fprintf(f, "\" data-value=\"%lld\">%lld</dd>\n", (long long)json_integer_value(val),
                (long long)json_integer_value(val));
    }
    if (json_object_size(kinds) == 0)
        fputs("<dt>fetch errors by kind</dt><dd>none</dd>\n", f);
    json_object_foreach((json_t *)json_object_get(st, "links_rejected_by"), k, val)
    {
        if (json_integer_value(val) <= 0)
            continue;
        fputs("<dt>links refused: ", f);
        esc(f, k);
        fputs("</dt><dd class=\"refused\" data-reason=\"", f);
        esc(f, k);
        fprintf(f, "\" data-value=\"%lld\">%lld</dd>\n", (long long)json_integer_value(val),
                (long long)json_integer_value(val));
    }
    fputs("<dt>rows in the database</dt><dd>", f);
    const char *sn;
    int first = 1;
    json_object_foreach((json_t *)rows, sn, val)
    {
        fprintf(f, "%s%s %lld", first ? "" : ", ", sn, (long long)json_integer_value(val));
        first = 0;
    }
    fputs("</dd>\n</dl></div>\n", f);
}

/* The sitemaps card, when the crawl read sitemaps ([sitemaps] enabled). */
static void sitemaps_card(FILE *f, const json_t *st)
{
    const json_t *sm = json_object_get(st, "sitemaps");
    if (sm == NULL)
        return;
    fputs("<div class=\"card\" id=\"sitemaps\"><h3>Sitemaps</h3>\n<dl class=\"facts\">\n", f);
    static const struct {
        const char *label, *key;
    } facts[] = {
        { "sitemaps queued", "queued" },
        { "sitemaps fetched and parsed", "fetched" },
        { "urlsets / indexes", NULL },
        { "gzip-compressed", "gzip" },
        { "parse errors", "parse_errors" },
        { "cut at max_bytes", "cut" },
        { "URLs listed", "urls_listed" },
        { "URLs admitted", "urls_admitted" },
        { "URLs new to the crawl", "urls_new" },
        { "rejected: outside the sitemap's host and path", "rejected_scope" },
        { "rejected: outside the crawl's scope", "out_of_scope" },
        { "rejected: not an absolute http(s) URL", "invalid" },
        { "child sitemaps listed", "children_listed" },
        { "dropped by limits", "dropped_by_limits" },
    };
    for (size_t i = 0; i < sizeof facts / sizeof *facts; i++) {
        char a[32], b[32];
        if (facts[i].key == NULL) {
            fmt_int(a, sizeof a, jint(sm, "urlsets"));
            fmt_int(b, sizeof b, jint(sm, "indexes"));
            fprintf(f, "<dt>%s</dt><dd>%s / %s</dd>\n", facts[i].label, a, b);
            continue;
        }
        fmt_int(a, sizeof a, jint(sm, facts[i].key));
        fprintf(f, "<dt>%s</dt><dd data-key=\"%s\" data-value=\"%lld\">%s</dd>\n",
                facts[i].label, facts[i].key, jint(sm, facts[i].key), a);
    }
    fputs("</dl><p class=\"caption\">Dropped by limits: entries past sitemaps.max_urls, without "
          "or with too long a loc, index children past max_index_depth or max_per_host, and "
          "files cut at max_bytes.</p></div>\n",
          f);
}

static void hosts_table(FILE *f, const json_t *data)
{
    const json_t *hosts = json_object_get(data, "hosts");
    long long total = jint(data, "hosts_total");
    size_t n = json_array_size(hosts);
    fputs("<div class=\"card\" id=\"hosts\">\n", f);
    if (n == 0) {
        fputs("<p class=\"empty\">No per-host figures stored.</p></div>\n", f);
        return;
    }
    fputs("<table><thead><tr><th>host</th><th>pages</th><th>links</th><th>new</th>"
          "<th>duplicate-skip</th><th>no answer</th><th>HTTP &ge;400</th><th>failed</th>"
          "<th>retries</th><th>robots: allowed</th><th>disallowed</th>"
          "<th>politeness waits</th><th>delay</th><th>bytes (decoded)</th></tr></thead>\n"
          "<tbody>\n",
          f);
    for (size_t i = 0; i < n; i++) {
        const json_t *h = json_array_get(hosts, i);
        const char *name = json_string_value(json_object_get(h, "host"));
        long long links = jint(h, "links"), nw = jint(h, "links_new");
        double rate = pct((double)(links - nw), (double)links);
        char by[32], c[8][32];
        long long vals[8] = { jint(h, "pages"), links, nw, jint(h, "no_answer"),
                              jint(h, "http_errors"), jint(h, "failed"), jint(h, "retries"),
                              jint(h, "robots_allowed") };
        for (int k = 0; k < 8; k++)
            fmt_int(c[k], sizeof c[k], vals[k]);
        fmt_bytes(by, sizeof by, (double)jint(h, "bytes"));
        fputs("<tr data-host=\"", f);
        esc(f, name);
        fprintf(f, "\" data-pages=\"%lld\"><td class=\"host\" title=\"", vals[0]);
        esc(f, name);
        fputs("\">", f);
        esc(f, name);
        fprintf(f, "</td><td>%s</td><td>%s</td><td>%s</td><td>%.1f%%<span class=\"meter\">"
                   "<b style=\"width:%.0f%%\"></b></span></td><td>%s</td><td>%s</td><td>%s</td>"
                   "<td>%s</td><td>%s</td><td>%lld</td><td>%lld</td><td>%lld ms</td><td>%s</td>"
                   "</tr>\n",
                c[0], c[1], c[2], rate, rate, c[3], c[4], c[5], c[6], c[7],
                jint(h, "robots_disallowed"), jint(h, "politeness_waits"), jint(h, "delay_ms"),
                by);
    }
    fputs("</tbody></table>\n", f);
    if (total > (long long)n)
        fprintf(f, "<p class=\"more\" id=\"hosts-more\" data-value=\"%lld\">%lld more hosts not "
                   "shown (the table shows the %zu busiest).</p>\n",
                total - (long long)n, total - (long long)n, n);
    fputs("<p class=\"caption\">Busiest hosts first. Pages: fetches answered (robots.txt and "
          "retries included). Links: links on the host's pages that reached the seen test; "
          "duplicate-skip is the share of them that were already known. Politeness waits: "
          "times the host had work but had to wait for its delay (delay_ms, Crawl-delay or "
          "the adaptive term, whichever is largest).</p></div>\n",
          f);
}

int report_write(FILE *f, const json_t *data, const report_meta *m)
{
    const json_t *st = json_object_get(data, "stats");
    const json_t *samples = json_object_get(data, "samples");
    const char *config = json_string_value(json_object_get(data, "config"));
    char when[64];
    fmt_utc(when, sizeof when, m->generated_ms);
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"crawld report\">\n<title>crawld report: ",
          f);
    esc(f, m->state_dir);
    fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<div class=\"wrap\">\n", css);
    header(f, data, m);
    fputs("<h2>Deduplication</h2>\n<div class=\"grid\">\n", f);
    int rc = charts(f, samples, st);
    if (rc < 0)
        return rc;
    status_bars(f, st);
    errors_card(f, data);
    sitemaps_card(f, st);
    fputs("</div>\n<h2>Hosts</h2>\n", f);
    hosts_table(f, data);
    fputs("<h2>Configuration</h2>\n<div class=\"card\" id=\"config\">", f);
    if (config) {
        fputs("<pre>", f);
        esc(f, config);
        fputs("</pre><p class=\"caption\">The effective configuration of the crawl (defaults, "
              "file and --set overrides), as the daemon stored it at start; secrets are "
              "redacted.</p>",
              f);
    } else {
        fputs("<p class=\"empty\">Not stored (a crawl from an older crawld).</p>", f);
    }
    fprintf(f, "</div>\n<p class=\"foot\" id=\"samples\" data-value=\"%lld\">%lld samples stored, "
               "%zu plotted. Made by <code>crawld report</code> at %s; the same figures: "
               "<code>crawld stats --json</code>.</p>\n</div>\n</body>\n</html>\n",
            jint(data, "samples_total"), jint(data, "samples_total"), json_array_size(samples),
            when);
    return ferror(f) ? -EIO : 0;
}
