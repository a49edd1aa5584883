/* storage/fpruns: the fingerprint runs of the seen-set (see fpruns.h). */
#include "storage/fpruns.h"

#include "common/buf.h"

#include <stdio.h>

#define MAX_RUNS 256 /* far above what upkeep leaves: (fanin - 1) per tier */
#define ACTIVE_TIER (-1)

struct run {
    int64_t run, tier, rows;
};

/* A frozen run's table. */
static const char *frozen_table(int64_t run, char buf[32])
{
    snprintf(buf, 32, "fp_%lld", (long long)run);
    return buf;
}

/* A run's table: the active one has a fixed name, so that the statement
 * adding to it (FPRUNS_ADD_SQL) stays the same across freezes. */
static const char *table_of(const struct run *r, char buf[32])
{
    return r->tier == ACTIVE_TIER ? FPRUNS_ACTIVE_TABLE : frozen_table(r->run, buf);
}

/* The runs, largest tier first (the order of the view: a random key that
 * is there is most likely in the biggest run), the active one last. */
static int read_runs(sqlite3 *c, struct run *r, int *n)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(c, "SELECT run, tier, rows FROM fp_runs"
                                   " ORDER BY tier DESC, run", -1, &s, NULL);
    *n = 0;
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (*n == MAX_RUNS) {
            rc = SQLITE_CORRUPT;
            break;
        }
        r[*n].run = sqlite3_column_int64(s, 0);
        r[*n].tier = sqlite3_column_int64(s, 1);
        r[*n].rows = sqlite3_column_int64(s, 2);
        (*n)++;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    if (rc == SQLITE_OK && (*n == 0 || r[*n - 1].tier != ACTIVE_TIER))
        rc = SQLITE_CORRUPT; /* no active run: this file was not made by fpruns */
    return rc;
}

static int exec_buf(sqlite3 *c, cr_buf *b, int mem)
{
    if (mem != 0)
        return SQLITE_NOMEM;
    return sqlite3_exec(c, b->data, NULL, NULL, NULL);
}

/* *out = 1 if the table exists. */
static int has_table(sqlite3 *c, const char *name, int *out)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(c, "SELECT 1 FROM sqlite_master WHERE type = 'table'"
                                   " AND name = ?1", -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
        rc = sqlite3_step(s);
        *out = rc == SQLITE_ROW;
        rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    sqlite3_finalize(s);
    return rc;
}

/* The view and the triggers for the runs in r (as read_runs orders them):
 * a row deleted from urls or from seen (the bare rows, when that table is
 * there; they keep no fp column, so crawld_urlfp gives it) takes its entry
 * along; a row of urls whose fp or id changes moves it. */
static int rewrite(sqlite3 *c, const struct run *r, int n)
{
    char name[32];
    cr_buf b;
    int mem = 0;

    cr_buf_init(&b, 0);
    mem |= cr_buf_puts(&b, "DROP VIEW IF EXISTS seen_fp; CREATE VIEW seen_fp AS ");
    for (int i = 0; i < n; i++)
        mem |= cr_buf_printf(&b, "%sSELECT fp, id FROM %s", i ? " UNION ALL " : "",
                             table_of(&r[i], name));
    mem |= cr_buf_puts(&b, ";");
    int seen = 0;
    int rc = has_table(c, "seen", &seen);
    if (rc != SQLITE_OK) {
        cr_buf_release(&b);
        return rc;
    }
    /* each trigger: its name, its event, the old row's fp, what it adds */
    static const struct { const char *name, *on, *old_fp, *then; } trig[] = {
        { "seen_fp_drop", "AFTER DELETE ON urls", "old.fp", "" },
        { "seen_fp_move", "AFTER UPDATE OF fp, id ON urls", "old.fp",
          " INSERT INTO " FPRUNS_ACTIVE_TABLE "(fp, id) VALUES(new.fp, new.id);" },
        { "seen_fp_drop_bare", "AFTER DELETE ON seen", "crawld_urlfp(old.url)", "" },
    };
    for (int t = 0; t < 2 + seen; t++) {
        mem |= cr_buf_printf(&b, " DROP TRIGGER IF EXISTS %s; CREATE TRIGGER %s %s BEGIN",
                             trig[t].name, trig[t].name, trig[t].on);
        for (int i = 0; i < n; i++)
            mem |= cr_buf_printf(&b, " DELETE FROM %s WHERE fp = %s AND id = old.id;",
                                 table_of(&r[i], name), trig[t].old_fp);
        mem |= cr_buf_printf(&b, "%s END;", trig[t].then);
    }
    rc = exec_buf(c, &b, mem);
    cr_buf_release(&b);
    return rc;
}

static int create_run(sqlite3 *c, const char *table)
{
    char sql[160];
    snprintf(sql, sizeof sql, "CREATE TABLE %s(fp INTEGER NOT NULL, id INTEGER NOT NULL,"
             " PRIMARY KEY(fp, id)) WITHOUT ROWID", table);
    return sqlite3_exec(c, sql, NULL, NULL, NULL);
}

static int put_run(sqlite3 *c, int64_t run, int64_t tier, int64_t rows)
{
    char sql[160];
    snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO fp_runs(run, tier, rows)"
             " VALUES(%lld, %lld, %lld)", (long long)run, (long long)tier, (long long)rows);
    return sqlite3_exec(c, sql, NULL, NULL, NULL);
}

static int query_count(sqlite3 *c, const char *table, int64_t *out)
{
    char sql[96];
    sqlite3_stmt *s = NULL;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    int rc = sqlite3_prepare_v2(c, sql, -1, &s, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        *out = sqlite3_column_int64(s, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? SQLITE_CORRUPT : rc;
}

int fpruns_refresh(sqlite3 *c)
{
    struct run r[MAX_RUNS];
    int n = 0;
    int rc = read_runs(c, r, &n);
    return rc == SQLITE_OK ? rewrite(c, r, n) : rc;
}

int fpruns_install(sqlite3 *c)
{
    struct run r[2];
    int n = 0, rc;

    rc = sqlite3_exec(c, "CREATE TABLE fp_runs(run INTEGER PRIMARY KEY,"
                         " tier INTEGER NOT NULL, rows INTEGER NOT NULL)", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = create_run(c, "fp_1");
    /* urls_fp yields (fp, rowid) in key order: the run is written in order */
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c, "INSERT INTO fp_1(fp, id) SELECT fp, id FROM urls"
                             " INDEXED BY urls_fp ORDER BY fp, id", NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
        int64_t rows = sqlite3_changes64(c);
        if (rows > 0) {
            r[n++] = (struct run){1, 0, rows};
            rc = put_run(c, 1, 0, rows);
        } else {
            rc = sqlite3_exec(c, "DROP TABLE fp_1", NULL, NULL, NULL);
        }
    }
    if (rc == SQLITE_OK)
        rc = create_run(c, FPRUNS_ACTIVE_TABLE);
    if (rc == SQLITE_OK) {
        r[n++] = (struct run){2, ACTIVE_TIER, 0};
        rc = put_run(c, 2, ACTIVE_TIER, 0);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c, "DROP INDEX urls_fp", NULL, NULL, NULL);
    return rc == SQLITE_OK ? rewrite(c, r, n) : rc;
}

/* The frozen active run takes tier 0 (its table renamed to its number); a
 * new empty run becomes active. */
static int rotate(sqlite3 *c, struct run *r, int n, int64_t next)
{
    struct run *a = &r[n - 1];
    char sql[96], name[32];
    int rc = query_count(c, FPRUNS_ACTIVE_TABLE, &a->rows);
    snprintf(sql, sizeof sql, "ALTER TABLE " FPRUNS_ACTIVE_TABLE " RENAME TO %s",
             frozen_table(a->run, name));
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c, sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = put_run(c, a->run, 0, a->rows);
    if (rc == SQLITE_OK)
        rc = create_run(c, FPRUNS_ACTIVE_TABLE);
    if (rc == SQLITE_OK)
        rc = put_run(c, next, ACTIVE_TIER, 0);
    if (rc == SQLITE_OK)
        rc = read_runs(c, r, &n);
    return rc == SQLITE_OK ? rewrite(c, r, n) : rc;
}

/* The `fanin` oldest runs of tier t become one run of tier t + 1, written in
 * key order: a merge of sorted inputs (SQLite's compound ORDER BY merges
 * them, each read along its key), appended to a new B-tree. */
static int merge(sqlite3 *c, struct run *r, int n, int64_t tier, int fanin, int64_t next,
                 int64_t *written)
{
    int64_t pick[MAX_RUNS];
    int k = 0, rc, mem = 0;
    cr_buf b;

    for (int i = 0; i < n && k < fanin; i++) /* within a tier, oldest first */
        if (r[i].tier == tier)
            pick[k++] = r[i].run;
    if (k < fanin)
        return SQLITE_MISUSE;
    char name[32];
    rc = create_run(c, frozen_table(next, name));
    cr_buf_init(&b, 0);
    mem |= cr_buf_printf(&b, "INSERT INTO %s(fp, id) ", name);
    for (int i = 0; i < k; i++)
        mem |= cr_buf_printf(&b, "%sSELECT fp, id FROM %s", i ? " UNION ALL " : "",
                             frozen_table(pick[i], name));
    mem |= cr_buf_puts(&b, " ORDER BY 1, 2");
    if (rc == SQLITE_OK)
        rc = exec_buf(c, &b, mem);
    if (rc == SQLITE_OK) {
        *written = sqlite3_changes64(c);
        rc = put_run(c, next, tier + 1, *written);
    }
    for (int i = 0; i < k && rc == SQLITE_OK; i++) {
        char sql[96];
        snprintf(sql, sizeof sql, "DROP TABLE %s; DELETE FROM fp_runs WHERE run = %lld",
                 frozen_table(pick[i], name), (long long)pick[i]);
        rc = sqlite3_exec(c, sql, NULL, NULL, NULL);
    }
    cr_buf_release(&b);
    if (rc == SQLITE_OK)
        rc = read_runs(c, r, &n);
    return rc == SQLITE_OK ? rewrite(c, r, n) : rc;
}

int fpruns_maintain(sqlite3 *c, int64_t *active_rows, int64_t active_max, int fanin,
                    fpruns_step *st)
{
    struct run r[MAX_RUNS];
    int n, rc;
    int64_t next = 0, due_tier = -1;

    *st = (fpruns_step){0, 0, 0};
    if (fanin < 2)
        fanin = 2;
    rc = read_runs(c, r, &n);
    if (rc != SQLITE_OK)
        return rc;
    for (int i = 0; i < n; i++)
        if (r[i].run >= next)
            next = r[i].run + 1;
    if (*active_rows < active_max) {
        /* the lowest tier holding fanin frozen runs */
        for (int64_t t = 0; due_tier < 0 && t < 64; t++) {
            int m = 0;
            for (int i = 0; i < n; i++)
                m += r[i].tier == t;
            if (m >= fanin)
                due_tier = t;
        }
        if (due_tier < 0)
            return SQLITE_OK;
    }
    rc = sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return rc;
    if (due_tier < 0)
        rc = rotate(c, r, n, next);
    else
        rc = merge(c, r, n, due_tier, fanin, next, &st->rows);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        if (!sqlite3_get_autocommit(c))
            sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
        st->rows = 0;
        return rc;
    }
    if (due_tier < 0) {
        st->rotated = 1;
        *active_rows = 0;
    } else {
        st->merged = fanin;
    }
    return SQLITE_OK;
}

int fpruns_count(sqlite3 *c, int64_t *active_rows, int *runs)
{
    struct run r[MAX_RUNS];
    int n;
    int rc = read_runs(c, r, &n);
    if (rc == SQLITE_OK)
        rc = query_count(c, FPRUNS_ACTIVE_TABLE, active_rows);
    if (rc == SQLITE_OK)
        *runs = n;
    return rc;
}
