/* cluster/ckptdir: see ckptdir.h. */
#include "cluster/ckptdir.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void ckptdir_safe_id(const char *node_id, char *out, size_t cap)
{
    size_t i = 0;
    for (; node_id[i] && i + 1 < cap; i++)
        out[i] = node_id[i] == '/' || node_id[i] == ':' ? '_' : node_id[i];
    if (cap > 0)
        out[i] = '\0';
}

int ckptdir_name(char *out, size_t cap, const char *dir, const char *crawl_id, uint32_t slot,
                 const char *node_id, int64_t wall_ms)
{
    char safe[512];
    ckptdir_safe_id(node_id, safe, sizeof safe);
    int n = snprintf(out, cap, "%s/%s-slot%u-%s-%lld.db", dir, crawl_id, slot, safe,
                     (long long)wall_ms);
    return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

/* Past one or more digits at p; NULL when there are none. */
static const char *digits(const char *p)
{
    if (*p < '0' || *p > '9')
        return NULL;
    while (*p >= '0' && *p <= '9')
        p++;
    return p;
}

int ckptdir_is_own(const char *name, const char *crawl_id, const char *node_id)
{
    char safe[512];
    ckptdir_safe_id(node_id, safe, sizeof safe);
    size_t cl = strlen(crawl_id), sl = strlen(safe);
    if (strncmp(name, crawl_id, cl) != 0 || strncmp(name + cl, "-slot", 5) != 0)
        return 0;
    const char *p = digits(name + cl + 5);
    if (p == NULL || *p++ != '-' || strncmp(p, safe, sl) != 0 || p[sl] != '-')
        return 0;
    p = digits(p + sl + 1);
    return p != NULL && (strcmp(p, ".db") == 0 || strcmp(p, ".db.tmp") == 0);
}

static bool kept(const char *name, const char *const *keep, size_t nkeep)
{
    for (size_t i = 0; i < nkeep; i++) {
        const char *base = strrchr(keep[i], '/');
        if (strcmp(base != NULL ? base + 1 : keep[i], name) == 0)
            return true;
    }
    return false;
}

long ckptdir_sweep(const char *dir, const char *crawl_id, const char *node_id,
                   const char *const *keep, size_t nkeep)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -errno;
    long removed = 0;
    char path[4096];
    const struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!ckptdir_is_own(e->d_name, crawl_id, node_id) || kept(e->d_name, keep, nkeep))
            continue;
        int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (n > 0 && (size_t)n < sizeof path && unlink(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
