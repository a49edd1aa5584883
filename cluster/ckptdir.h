/* cluster/ckptdir: the names of a node's checkpoint files, and the sweep
 * of those an earlier run of the node left behind.
 *
 * A hand-over writes its checkpoint to DIR/CRAWL-slotN-NODE-MS.db (NODE
 * is the node id with '/' and ':' made '_', MS the wall clock; the export
 * builds it as that name plus ".tmp" first). A node that dies between
 * writing one and recording it in P"ckpt:N" (cluster/member), or whose
 * checkpoint went through Redis, leaves the file; at its next start the
 * node removes its own files that no record names, before it writes any. */
#ifndef CRAWLD_CLUSTER_CKPTDIR_H
#define CRAWLD_CLUSTER_CKPTDIR_H

#include <stddef.h>
#include <stdint.h>

/* The node id as it goes in a file name, into out (cap bytes). */
void ckptdir_safe_id(const char *node_id, char *out, size_t cap);

/* dir/CRAWL-slotN-NODE-MS.db into out; 0, or -ENAMETOOLONG. */
int ckptdir_name(char *out, size_t cap, const char *dir, const char *crawl_id, uint32_t slot,
                 const char *node_id, int64_t wall_ms);

/* 1 when name (a file name, no folder) is one of node_id's checkpoint
 * files of crawl_id (or its ".tmp"), else 0. */
int ckptdir_is_own(const char *name, const char *crawl_id, const char *node_id);

/* Removes node_id's checkpoint files in dir whose file name is none of
 * keep[0..nkeep) (file names or paths: only the part after the last '/'
 * counts, so the folder may be spelled another way in a record). Returns
 * how many went, or a negative errno when dir cannot be read (-ENOENT: no
 * such folder, nothing to sweep). */
long ckptdir_sweep(const char *dir, const char *crawl_id, const char *node_id,
                   const char *const *keep, size_t nkeep);

#endif
