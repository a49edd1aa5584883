/* crawler/cmd_report: `crawld report` writes the HTML report of a finished
 * or running crawl (crawler/report) from its state folder. The page is
 * written to a temp file beside the target and renamed over it, so a
 * reader never sees half a page. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common/alloc.h"
#include "common/atomic_file.h"
#include "common/clock.h"
#include "crawler/report/report.h"
#include "storage/db.h"

static const char usage[] =
    "usage: crawld report [--state DIR] [-o FILE] [-c FILE] [--set K=V]...\n"
    "\n"
    "Writes one self-contained HTML page (CSS and SVG charts inline, no script,\n"
    "nothing fetched when viewed) about the crawl whose state is in DIR\n"
    "(default: storage.state_dir of the configuration): the duplicate-skip rate\n"
    "by layer over time, the observed false-positive rate against its bound and\n"
    "the rate predicted from the Bloom fill, the fill of each Bloom stage, pages/s,\n"
    "the frontier, status codes, the busiest hosts and the configuration. Works on\n"
    "a running crawl too (the daemon stores a sample every 2 s). The figures are\n"
    "those of `crawld stats --json`.\n";

int cmd_report(int argc, char **argv)
{
    cli_conf cc = { 0 };
    const char *dir = NULL;
    const char *outp = "report.html";
    const cli_opt opts[] = {
        { "--state", NULL, "DIR", &dir, NULL,
          "the crawl's state folder" },
        { "--output", "-o", "FILE", &outp, NULL,
          "where to write the page (default: report.html; '-': stdout)" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
    };
    int code = cli_parse(&cc, "report", usage, opts, CLI_NO_OPERANDS, argc, argv, NULL, NULL);
    if (code != CLI_GO_ON)
        return code;
    if (outp[0] == '\0') {
        fputs("crawld report: -o needs a file name\n", stderr);
        return 2;
    }
    crawl_config cfg;
    if (cli_conf_load(&cc, "report", &cfg, false) != 0)
        return 1;
    if (dir == NULL)
        dir = cfg.storage.state_dir;
    int rc = 2;
    char err[512];
    cr_afile af;
    char *shown = NULL; /* realpath's: free() */
    FILE *f = NULL;
    json_t *data = NULL;
    struct stat sb;
    if (dir == NULL || dir[0] == '\0') {
        fputs("crawld report: no state folder (give --state DIR)\n", stderr);
        goto out;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "crawld report: %s: %s\n", dir,
                stat(dir, &sb) != 0 ? strerror(errno) : "not a folder");
        goto out;
    }
    db_reader *rd = db_reader_open_dir(dir, err, sizeof err);
    if (rd == NULL) {
        fprintf(stderr, "crawld report: no crawl in %s: %s\n", dir, err);
        goto out;
    }
    int r = report_load(rd, REPORT_MAX_SAMPLES, REPORT_MAX_HOSTS, &data, err, sizeof err);
    db_reader_free(rd);
    if (r < 0) {
        fprintf(stderr, "crawld report: %s: %s\n", dir, err);
        rc = 1;
        goto out;
    }
    rc = 1;
    shown = realpath(dir, NULL);
    report_meta m = { shown ? shown : dir, cr_wall_ms() };
    if (strcmp(outp, "-") == 0) {
        r = report_write(stdout, data, &m);
        if (r == 0 && fflush(stdout) != 0)
            r = -EIO;
        if (r < 0)
            fprintf(stderr, "crawld report: writing to stdout: %s\n", strerror(-r));
        else
            rc = 0;
        goto out;
    }
    r = cr_afile_open(&af, outp, 0644);
    if (r < 0) {
        fprintf(stderr, "crawld report: cannot write %s: %s\n", outp, strerror(-r));
        goto out;
    }
    f = cr_afile_stdio(&af);
    r = f ? report_write(f, data, &m) : -ENOMEM;
    long size = r == 0 ? ftell(f) : 0;
    if (r < 0) {
        cr_afile_abort(&af);
    } else {
        r = cr_afile_commit(&af);
    }
    f = NULL;
    if (r < 0) {
        fprintf(stderr, "crawld report: cannot write %s (%s): %s\n", outp,
                af.failed ? cr_afile_step_name(af.failed) : "report", strerror(-r));
        goto out;
    }
    char *abs = realpath(outp, NULL);
    printf("crawld report: wrote %s (%ld bytes)\n", abs ? abs : outp, size);
    free(abs); /* realpath's, from libc */
    rc = 0;
out:
    free(shown);
    json_decref(data);
    config_release(&cfg);
    return rc;
}
