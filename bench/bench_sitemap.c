/* bench/bench_sitemap: throughput of crawler/web/sitemap.
 *
 * usage: bench_sitemap [-r ROUNDS] [-c CHUNK] FILE
 * FILE is one sitemap (plain or gzip), read into memory first; each round
 * parses it in CHUNK-byte feeds, as from the network, with one reused
 * parser (sitemap_reset), and then measures the floor: libxml2's XML push
 * parser alone on the same uncompressed bytes (a no-op SAX2 handler), so
 * the module's own cost shows as the difference; the two alternate, so a
 * change in the machine's load hits both. Prints a line per round and
 *     RESULT bytes=B urls=U cpu_median=S wall_median=S maxrss_kb=K
 *     FLOOR bytes=B elements=E cpu_median=S wall_median=S
 * bytes: uncompressed XML. Times are process CPU seconds (the machine may
 * be shared) and wall. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <zlib.h>

#include "crawler/web/sitemap.h"

static void count_entry(void *ud, const sitemap_entry *e)
{
    (void)e;
    (*(uint64_t *)ud)++;
}

static void count_element(void *ud, const xmlChar *local, const xmlChar *prefix,
                          const xmlChar *uri, int nns, const xmlChar **ns, int nattr, int ndef,
                          const xmlChar **attrs)
{
    (void)local, (void)prefix, (void)uri, (void)nns, (void)ns, (void)nattr, (void)ndef,
        (void)attrs;
    (*(uint64_t *)ud)++;
}

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The uncompressed bytes of a gzip file (for the floor), or NULL. */
static unsigned char *gunzip(const unsigned char *in, size_t n, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return NULL;
    size_t cap = n * 8 + 4096, len = 0;
    unsigned char *out = malloc(cap);
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)n;
    int rc = Z_OK;
    while (out && rc == Z_OK) {
        if (len == cap) {
            cap *= 2;
            unsigned char *o = realloc(out, cap);
            if (o == NULL) {
                free(out);
                out = NULL;
                break;
            }
            out = o;
        }
        z.next_out = out + len;
        z.avail_out = (uInt)(cap - len);
        rc = inflate(&z, Z_NO_FLUSH);
        len = cap - z.avail_out;
    }
    inflateEnd(&z);
    if (out == NULL || rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    *out_len = len;
    return out;
}

int main(int argc, char **argv)
{
    int rounds = 5, opt;
    size_t chunk = 16384;
    while ((opt = getopt(argc, argv, "r:c:")) != -1) {
        if (opt == 'r')
            rounds = (int)strtol(optarg, NULL, 10);
        else if (opt == 'c')
            chunk = (size_t)strtoul(optarg, NULL, 10);
        else
            return 2;
    }
    if (optind >= argc || rounds < 1 || rounds > 1000 || chunk == 0) {
        fprintf(stderr, "usage: bench_sitemap [-r ROUNDS] [-c CHUNK] FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[optind], "rb");
    if (f == NULL) {
        perror(argv[optind]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(sz > 0 ? (size_t)sz : 1);
    if (data == NULL || fread(data, 1, (size_t)sz, f) != (size_t)sz) {
        fprintf(stderr, "bench_sitemap: cannot read %s\n", argv[optind]);
        return 1;
    }
    fclose(f);
    size_t n = (size_t)sz, xml_len = n;
    unsigned char *xml = data;
    if (n >= 2 && data[0] == 0x1f && data[1] == 0x8b)
        xml = gunzip(data, n, &xml_len);
    if (xml == NULL) {
        fprintf(stderr, "bench_sitemap: bad gzip\n");
        return 1;
    }
    xmlInitParser();
    uint64_t urls = 0, elements = 0;
    sitemap_opts so = { .max_urls = 10000000, .max_bytes = (size_t)1 << 40 };
    sitemap_parser *p = sitemap_new(&so, count_entry, &urls);
    double *cpu = calloc((size_t)rounds, sizeof *cpu), *wall = calloc((size_t)rounds, sizeof *wall);
    double *fcpu = calloc((size_t)rounds, sizeof *fcpu), *fwall = calloc((size_t)rounds, sizeof *fwall);
    if (p == NULL || !cpu || !wall || !fcpu || !fwall)
        return 1;
    xmlSAXHandler sax;
    memset(&sax, 0, sizeof sax);
    sax.initialized = XML_SAX2_MAGIC;
    sax.startElementNs = count_element;
    for (int r = 0; r < rounds; r++) {
        urls = 0;
        sitemap_reset(p);
        double c0 = cpu_s(), w0 = wall_s();
        int rc = 0;
        for (size_t off = 0; off < n && rc == 0; off += chunk)
            rc = sitemap_feed(p, data + off, n - off < chunk ? n - off : chunk);
        if (rc == 0)
            rc = sitemap_finish(p);
        cpu[r] = cpu_s() - c0;
        wall[r] = wall_s() - w0;
        if (rc != 0) {
            fprintf(stderr, "bench_sitemap: %s\n", sitemap_error_text(p));
            return 1;
        }
        elements = 0;
        c0 = cpu_s();
        w0 = wall_s();
        xmlParserCtxtPtr c = xmlCreatePushParserCtxt(&sax, &elements, NULL, 0, NULL);
        if (c == NULL)
            return 1;
        xmlCtxtUseOptions(c, XML_PARSE_NONET);
        for (size_t off = 0; off < xml_len; off += chunk)
            xmlParseChunk(c, (const char *)xml + off,
                          (int)(xml_len - off < chunk ? xml_len - off : chunk), 0);
        xmlParseChunk(c, NULL, 0, 1);
        xmlFreeParserCtxt(c);
        fcpu[r] = cpu_s() - c0;
        fwall[r] = wall_s() - w0;
        printf("round %d: %llu URLs, cpu %.4f s (floor %.4f s, %llu elements)\n", r + 1,
               (unsigned long long)urls, cpu[r], fcpu[r], (unsigned long long)elements);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("RESULT bytes=%zu urls=%llu cpu_median=%.6f wall_median=%.6f maxrss_kb=%ld\n", xml_len,
           (unsigned long long)urls, median(cpu, rounds), median(wall, rounds), ru.ru_maxrss);
    printf("FLOOR bytes=%zu elements=%llu cpu_median=%.6f wall_median=%.6f\n", xml_len,
           (unsigned long long)elements, median(fcpu, rounds), median(fwall, rounds));
    sitemap_free(p);
    if (xml != data)
        free(xml);
    free(data);
    free(cpu);
    free(wall);
    free(fcpu);
    free(fwall);
    xmlCleanupParser();
    return 0;
}
