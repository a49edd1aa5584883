/* bench/bench_links: link extraction throughput of crawler/links.
 *
 * usage: bench_links [-r ROUNDS] [-c CHUNK] [-l MAX_LINKS] [-k] LISTFILE
 * -k: links_opts.keep_values (no value shortening), for before/after.
 * LISTFILE names one HTML file per line. All files are read into memory
 * first; then each round parses every file as a page (links_reset with
 * "text/html", CHUNK-byte feeds as from the network, links_finish) with one
 * reused parser, and then measures the floor: libxml2's HTML push parser
 * alone on the same pages and chunks (UTF-8, a startElement that only
 * counts), so that the module's own cost shows as the difference; the two
 * alternate, so that a change in the machine's load hits both. Prints a
 * line per round and two last lines
 *     RESULT bytes=B links=L cpu_median=S wall_median=S
 *     FLOOR bytes=B elements=E cpu_median=S wall_median=S
 * Times are process CPU seconds (the machine may be shared) and wall. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>

#include "crawler/web/links.h"

typedef struct page {
    char *data;
    size_t len;
} page;

static void count_link(void *ud, const links_link *l)
{
    (void)l;
    (*(uint64_t *)ud)++;
}

static void count_element(void *ud, const xmlChar *name, const xmlChar **atts)
{
    (void)name;
    (void)atts;
    (*(uint64_t *)ud)++;
}

/* The floor: one page through libxml2 alone, as crawler/links drives it. */
static void bare_page(const page *pg, size_t chunk, uint64_t *elements)
{
    htmlSAXHandler sax;
    memset(&sax, 0, sizeof sax);
    sax.startElement = count_element;
    htmlParserCtxtPtr c = htmlCreatePushParserCtxt(&sax, elements, NULL, 0, NULL,
                                                   XML_CHAR_ENCODING_NONE);
    if (c == NULL)
        return;
    htmlCtxtUseOptions(c, HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_NOERROR |
                              HTML_PARSE_NOWARNING | HTML_PARSE_IGNORE_ENC);
    xmlSwitchToEncoding(c, xmlFindCharEncodingHandler("UTF-8"));
    for (size_t off = 0; off < pg->len; off += chunk) {
        size_t k = pg->len - off < chunk ? pg->len - off : chunk;
        htmlParseChunk(c, pg->data + off, (int)k, 0);
    }
    htmlParseChunk(c, NULL, 0, 1);
    htmlFreeParserCtxt(c);
}

static double now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int load(const char *path, page *pg)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -errno;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while (buf != NULL && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf == NULL)
        return -ENOMEM;
    pg->data = buf;
    pg->len = len;
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = 5;
    size_t chunk = 16384;
    links_opts o = {0};
    const char *list = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-r") == 0 && i + 1 < argc)
            rounds = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
            chunk = (size_t)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-l") == 0 && i + 1 < argc)
            o.max_links = (size_t)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-k") == 0)
            o.keep_values = 1;
        else
            list = argv[i];
    }
    if (list == NULL || rounds < 1 || rounds > 100 || chunk == 0) {
        fprintf(stderr, "usage: bench_links [-r ROUNDS] [-c CHUNK] [-l MAX_LINKS] [-k] LISTFILE\n");
        return 2;
    }
    FILE *lf = fopen(list, "r");
    if (lf == NULL) {
        perror(list);
        return 1;
    }
    page *pages = NULL;
    size_t npages = 0, cap = 0;
    uint64_t bytes = 0;
    char line[4096];
    while (fgets(line, sizeof line, lf) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0')
            continue;
        if (npages == cap) {
            cap = cap ? cap * 2 : 256;
            page *np = realloc(pages, cap * sizeof *pages);
            if (np == NULL)
                return 1;
            pages = np;
        }
        int rc = load(line, &pages[npages]);
        if (rc < 0) {
            fprintf(stderr, "%s: %s\n", line, strerror(-rc));
            return 1;
        }
        bytes += pages[npages].len;
        npages++;
    }
    fclose(lf);

    xmlInitParser();
    uint64_t links = 0;
    links_parser *p = links_new(&o, count_link, &links);
    if (p == NULL)
        return 1;
    double cpu[100], wall[100], fcpu[100], fwall[100];
    uint64_t round_links = 0, elements = 0, elided = 0, elided_text = 0, elided_tags = 0;
    for (int r = 0; r < rounds; r++) {
        links = 0;
        double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
        for (size_t i = 0; i < npages; i++) {
            links_reset(p, "text/html");
            for (size_t off = 0; off < pages[i].len; off += chunk) {
                size_t k = pages[i].len - off < chunk ? pages[i].len - off : chunk;
                links_feed(p, pages[i].data + off, k);
            }
            links_finish(p);
            links_stats st;
            links_stats_get(p, &st);
            elided += st.elided;
            elided_text += st.elided_text;
            elided_tags += st.elided_tags;
        }
        cpu[r] = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
        wall[r] = now(CLOCK_MONOTONIC) - w0;
        round_links = links;

        elements = 0;
        c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
        for (size_t i = 0; i < npages; i++)
            bare_page(&pages[i], chunk, &elements);
        fcpu[r] = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
        fwall[r] = now(CLOCK_MONOTONIC) - w0;
        printf("round %d: %zu pages, %llu bytes: %llu links, cpu %.3f s, wall %.3f s; "
               "floor: %llu elements, cpu %.3f s, wall %.3f s\n",
               r + 1, npages, (unsigned long long)bytes, (unsigned long long)links, cpu[r],
               wall[r], (unsigned long long)elements, fcpu[r], fwall[r]);
    }
    links_free(p);
    printf("elided: %llu bytes of unread attribute values, %llu of unread text, %llu of "
           "unread tags per round\n",
           (unsigned long long)(elided / (uint64_t)rounds),
           (unsigned long long)(elided_text / (uint64_t)rounds),
           (unsigned long long)(elided_tags / (uint64_t)rounds));
    printf("RESULT bytes=%llu links=%llu cpu_median=%.6f wall_median=%.6f\n",
           (unsigned long long)bytes, (unsigned long long)round_links, median(cpu, rounds),
           median(wall, rounds));
    printf("FLOOR bytes=%llu elements=%llu cpu_median=%.6f wall_median=%.6f\n",
           (unsigned long long)bytes, (unsigned long long)elements, median(fcpu, rounds),
           median(fwall, rounds));
    for (size_t i = 0; i < npages; i++)
        free(pages[i].data);
    free(pages);
    xmlCleanupParser();
    return 0;
}
