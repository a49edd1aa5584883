/* storage/outbox: a small SQLite queue of links bound for other nodes.
 * See outbox.h; the table is
 *   links(id INTEGER PRIMARY KEY, slot, url BLOB, fetch_url BLOB, host, depth, kind)
 * in WAL mode with synchronous=FULL, so a committed add survives a crash
 * of the process and of the machine. One mutex guards the connection and
 * its prepared statements. */
#include "outbox.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"

struct outbox {
    sqlite3 *db;
    sqlite3_stmt *ins, *peek, *del, *count;
    pthread_mutex_t mu;
};

static int errno_of(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK: case SQLITE_DONE: case SQLITE_ROW: return 0;
    case SQLITE_FULL: return -ENOSPC;
    case SQLITE_NOMEM: return -ENOMEM;
    case SQLITE_READONLY: return -EROFS;
    default: return -EIO;
    }
}

int outbox_open(const char *dir, outbox **out, char *err, size_t errlen)
{
    *out = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/outbox.db", dir);
    outbox *ob = cr_calloc(1, sizeof *ob);
    if (ob == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&ob->mu, NULL);
    int rc = sqlite3_open_v2(path, &ob->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                                 SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(ob->db,
                          "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                          "PRAGMA busy_timeout=5000;"
                          "CREATE TABLE IF NOT EXISTS links(id INTEGER PRIMARY KEY, slot INTEGER NOT NULL,"
                          " url BLOB NOT NULL, fetch_url BLOB, host TEXT NOT NULL,"
                          " depth INTEGER NOT NULL, kind INTEGER NOT NULL);",
                          NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(ob->db,
                                "INSERT INTO links(slot, url, fetch_url, host, depth, kind)"
                                " VALUES(?,?,?,?,?,?)", -1, &ob->ins, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(ob->db,
                                "SELECT id, slot, url, fetch_url, host, depth, kind FROM links"
                                " ORDER BY id LIMIT ?", -1, &ob->peek, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(ob->db, "DELETE FROM links WHERE id = ?", -1, &ob->del, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(ob->db, "SELECT count(*) FROM links", -1, &ob->count, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, ob->db ? sqlite3_errmsg(ob->db) : "cannot open");
        int e = errno_of(rc);
        outbox_close(ob);
        return e ? e : -EIO;
    }
    *out = ob;
    return 0;
}

void outbox_close(outbox *ob)
{
    if (ob == NULL)
        return;
    sqlite3_finalize(ob->ins);
    sqlite3_finalize(ob->peek);
    sqlite3_finalize(ob->del);
    sqlite3_finalize(ob->count);
    sqlite3_close(ob->db);
    pthread_mutex_destroy(&ob->mu);
    cr_free(ob);
}

static int exec(outbox *ob, const char *sql)
{
    return errno_of(sqlite3_exec(ob->db, sql, NULL, NULL, NULL));
}

int outbox_add(outbox *ob, const outbox_link *v, size_t n)
{
    if (n == 0)
        return 0;
    pthread_mutex_lock(&ob->mu);
    int rc = exec(ob, "BEGIN IMMEDIATE");
    for (size_t i = 0; i < n && rc == 0; i++) {
        const outbox_link *l = &v[i];
        sqlite3_reset(ob->ins);
        sqlite3_bind_int64(ob->ins, 1, l->slot);
        sqlite3_bind_blob(ob->ins, 2, l->url, (int)l->url_len, SQLITE_STATIC);
        if (l->fetch_url != NULL)
            sqlite3_bind_blob(ob->ins, 3, l->fetch_url, (int)l->fetch_url_len, SQLITE_STATIC);
        else
            sqlite3_bind_null(ob->ins, 3);
        sqlite3_bind_text(ob->ins, 4, l->host, -1, SQLITE_STATIC);
        sqlite3_bind_int(ob->ins, 5, l->depth);
        sqlite3_bind_int(ob->ins, 6, l->kind);
        rc = errno_of(sqlite3_step(ob->ins));
    }
    sqlite3_reset(ob->ins);
    sqlite3_clear_bindings(ob->ins);
    if (rc == 0)
        rc = exec(ob, "COMMIT");
    if (rc != 0)
        exec(ob, "ROLLBACK");
    pthread_mutex_unlock(&ob->mu);
    return rc;
}

static char *dup_col(sqlite3_stmt *st, int col, size_t *len)
{
    const void *p = sqlite3_column_blob(st, col);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    if (len != NULL)
        *len = n;
    char *s = cr_malloc(n + 1);
    if (s != NULL) {
        if (n)
            memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

int outbox_peek(outbox *ob, size_t max, outbox_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    outbox_row *v = cr_calloc(max ? max : 1, sizeof *v);
    if (v == NULL)
        return -ENOMEM;
    pthread_mutex_lock(&ob->mu);
    sqlite3_bind_int64(ob->peek, 1, (sqlite3_int64)max);
    int rc = 0, step = SQLITE_DONE;
    size_t k = 0;
    while (k < max && (step = sqlite3_step(ob->peek)) == SQLITE_ROW) {
        outbox_row *r = &v[k++];
        r->id = sqlite3_column_int64(ob->peek, 0);
        r->slot = (uint32_t)sqlite3_column_int64(ob->peek, 1);
        r->url = dup_col(ob->peek, 2, &r->url_len);
        r->fetch_url = sqlite3_column_type(ob->peek, 3) == SQLITE_NULL ? NULL
                                                                       : dup_col(ob->peek, 3, NULL);
        r->host = dup_col(ob->peek, 4, NULL);
        r->depth = sqlite3_column_int(ob->peek, 5);
        r->kind = sqlite3_column_int(ob->peek, 6);
        if (r->url == NULL || r->host == NULL ||
            (sqlite3_column_type(ob->peek, 3) != SQLITE_NULL && r->fetch_url == NULL)) {
            rc = -ENOMEM;
            break;
        }
    }
    if (rc == 0 && k < max && step != SQLITE_DONE)
        rc = errno_of(step);
    sqlite3_reset(ob->peek);
    pthread_mutex_unlock(&ob->mu);
    if (rc < 0 || k == 0) {
        outbox_rows_free(v, k);
        return rc;
    }
    *rows = v;
    *n = k;
    return 0;
}

void outbox_rows_free(outbox_row *rows, size_t n)
{
    if (rows == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        cr_free(rows[i].url);
        cr_free(rows[i].fetch_url);
        cr_free(rows[i].host);
    }
    cr_free(rows);
}

int outbox_delete(outbox *ob, const int64_t *ids, size_t n)
{
    if (n == 0)
        return 0;
    pthread_mutex_lock(&ob->mu);
    int rc = exec(ob, "BEGIN IMMEDIATE");
    for (size_t i = 0; i < n && rc == 0; i++) {
        sqlite3_reset(ob->del);
        sqlite3_bind_int64(ob->del, 1, ids[i]);
        rc = errno_of(sqlite3_step(ob->del));
    }
    sqlite3_reset(ob->del);
    if (rc == 0)
        rc = exec(ob, "COMMIT");
    if (rc != 0)
        exec(ob, "ROLLBACK");
    pthread_mutex_unlock(&ob->mu);
    return rc;
}

int64_t outbox_count(outbox *ob)
{
    pthread_mutex_lock(&ob->mu);
    int rc = sqlite3_step(ob->count);
    int64_t n = rc == SQLITE_ROW ? sqlite3_column_int64(ob->count, 0) : errno_of(rc);
    sqlite3_reset(ob->count);
    pthread_mutex_unlock(&ob->mu);
    return n;
}

int outbox_take_from(outbox *ob, const char *dir, int64_t *rows)
{
    char path[4096];
    *rows = 0;
    if ((size_t)snprintf(path, sizeof path, "%s/outbox.db", dir) >= sizeof path)
        return -ENAMETOOLONG;
    if (access(path, F_OK) < 0)
        return 0; /* that node never had an outbox: nothing waits in it */
    pthread_mutex_lock(&ob->mu);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(ob->db, "ATTACH ?1 AS gone", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        pthread_mutex_unlock(&ob->mu);
        return errno_of(rc) ? errno_of(rc) : -EIO;
    }
    /* Two commits, ours first: a crash between them leaves the rows in
     * both outboxes (sent twice, the receiver's seen test drops the
     * copy), never in neither. */
    rc = exec(ob, "BEGIN IMMEDIATE;"
                  "CREATE TEMP TABLE IF NOT EXISTS gone_ids(id INTEGER PRIMARY KEY);"
                  "DELETE FROM temp.gone_ids;"
                  "INSERT INTO temp.gone_ids SELECT id FROM gone.links;"
                  "INSERT INTO main.links(slot, url, fetch_url, host, depth, kind)"
                  " SELECT slot, url, fetch_url, host, depth, kind FROM gone.links"
                  " WHERE id IN temp.gone_ids ORDER BY id;");
    if (rc == 0)
        *rows = sqlite3_changes(ob->db);
    if (rc == 0)
        rc = exec(ob, "COMMIT");
    if (rc < 0) {
        exec(ob, "ROLLBACK");
        *rows = 0;
    }
    if (rc == 0)
        rc = exec(ob, "DELETE FROM gone.links WHERE id IN temp.gone_ids");
    exec(ob, "DETACH gone");
    pthread_mutex_unlock(&ob->mu);
    return rc;
}
