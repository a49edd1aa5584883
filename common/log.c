/* common/log: see log.h. The journal form is a stdio stream of our own
 * (fopencookie, a glibc extension: hence _GNU_SOURCE here only) that
 * splits what it is given into lines and writes each with its prefix. */
#define _GNU_SOURCE
#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"

#define LINE_MAX_BYTES 16384 /* a longer line is written in pieces */

enum cr_log_mode cr_log_mode_of(int fd)
{
    if (isatty(fd))
        return CR_LOG_TTY;
    const char *js = getenv("JOURNAL_STREAM");
    struct stat st;
    unsigned long long dev, ino;
    char tail;
    if (js != NULL && sscanf(js, "%llu:%llu%c", &dev, &ino, &tail) == 2 && fstat(fd, &st) == 0 &&
        (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino)
        return CR_LOG_JOURNAL;
    return CR_LOG_PLAIN;
}

typedef struct sink {
    int prio;
    cr_buf line;
} sink;

static void write_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(2, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* Writes one line (without its '\n'), with its priority. */
static void emit(sink *s, const char *p, size_t n)
{
    char out[LINE_MAX_BYTES + 8];
    int prio = s->prio;
    if (n >= 3 && p[0] == '<' && p[1] >= '0' && p[1] <= '7' && p[2] == '>') {
        prio = p[1] - '0';
        p += 3;
        n -= 3;
    }
    while (n > 0 && p[n - 1] == '\r')
        n--;
    if (n == 0)
        return; /* no blank entries */
    if (n > LINE_MAX_BYTES)
        n = LINE_MAX_BYTES;
    int k = snprintf(out, sizeof out, "<%d>", prio);
    memcpy(out + k, p, n);
    out[k + n] = '\n';
    write_all(out, (size_t)k + n + 1);
}

static ssize_t sink_write(void *cookie, const char *buf, size_t size)
{
    sink *s = cookie;
    size_t done = 0;
    while (done < size) {
        const char *nl = memchr(buf + done, '\n', size - done);
        size_t take = nl ? (size_t)(nl - (buf + done)) : size - done;
        if (s->line.len > 0 || nl == NULL) {
            if (s->line.len + take > LINE_MAX_BYTES) { /* too long: out in pieces */
                emit(s, s->line.data ? s->line.data : "", s->line.len);
                cr_buf_clear(&s->line);
            }
            if (cr_buf_append(&s->line, buf + done, take) < 0) {
                emit(s, buf + done, take); /* no memory: the piece on a line of its own */
            } else if (nl != NULL) {
                emit(s, s->line.data, s->line.len);
                cr_buf_clear(&s->line);
            }
        } else {
            emit(s, buf + done, take);
        }
        done += take + (nl != NULL);
    }
    return (ssize_t)size;
}

static int sink_close(void *cookie)
{
    sink *s = cookie;
    if (s->line.len > 0)
        emit(s, s->line.data, s->line.len);
    cr_buf_release(&s->line);
    cr_free(s);
    return 0;
}

FILE *cr_log_open(int prio)
{
    if (cr_log_mode_of(2) != CR_LOG_JOURNAL)
        return stderr;
    sink *s = cr_calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->prio = prio;
    cr_buf_init(&s->line, LINE_MAX_BYTES);
    cookie_io_functions_t io = { .write = sink_write, .close = sink_close };
    FILE *f = fopencookie(s, "w", io);
    if (f == NULL) {
        cr_free(s);
        return NULL;
    }
    setvbuf(f, NULL, _IOLBF, 0);
    return f;
}

void cr_log_close(FILE *f)
{
    if (f != NULL && f != stderr)
        fclose(f);
    else if (f != NULL)
        fflush(f);
}
