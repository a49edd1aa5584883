/* crawler/summary: dedup layer table and JSON. */
#include "summary.h"

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

void summary_dedup_print(FILE *f, const seen_counters *c, const bloom_stats *b)
{
    uint64_t fresh = c->new_bloom + c->new_verified;
    uint64_t dups = c->dup_trusted + c->dup_recent + c->dup_verified;
    fprintf(f, "  %-34s %12s %8s\n", "decision (layer)", "URLs", "share");
    fprintf(f, "  %-34s %12llu %7.2f%%\n", "new: Bloom said NO", (unsigned long long)c->new_bloom,
            pct(c->new_bloom, c->keys));
    fprintf(f, "  %-34s %12llu %7.2f%%\n", "new: false positive caught (SQLite)",
            (unsigned long long)c->new_verified, pct(c->new_verified, c->keys));
    fprintf(f, "  %-34s %12llu %7.2f%%\n", "duplicate: Bloom MAYBE trusted",
            (unsigned long long)c->dup_trusted, pct(c->dup_trusted, c->keys));
    fprintf(f, "  %-34s %12llu %7.2f%%\n", "duplicate: recent cache",
            (unsigned long long)c->dup_recent, pct(c->dup_recent, c->keys));
    fprintf(f, "  %-34s %12llu %7.2f%%\n", "duplicate: SQLite", (unsigned long long)c->dup_verified,
            pct(c->dup_verified, c->keys));
    fprintf(f, "  %-34s %12llu\n", "total new", (unsigned long long)fresh);
    fprintf(f, "  %-34s %12llu %7.2f%%\n", "total duplicates skipped", (unsigned long long)dups,
            pct(dups, c->keys));
    if (c->errors)
        fprintf(f, "  %-34s %12llu\n", "verifier errors", (unsigned long long)c->errors);
    fprintf(f, "  false-positive rate: observed %.4f%% (%llu of %llu new URLs checked), "
               "bound %.4f%%, predicted from fill %.4f%%\n",
            100.0 * seen_observed_fpr(c), (unsigned long long)c->new_verified,
            (unsigned long long)c->checked_new, 100.0 * b->fpr_bound, 100.0 * b->fpr_model);
    fprintf(f, "  Bloom filter: %u shards, %u stages (%u..%u per shard), fill %.3f, "
               "%.2f bits/URL, %.1f MiB\n",
            b->shards, b->stages_total, b->stages_min, b->stages_max, b->fill, b->bits_per_item,
            (double)b->memory_bytes / 1048576.0);
}

json_t *summary_dedup_json(const seen_counters *c, const bloom_stats *b)
{
    return json_pack("{s:I, s:{s:I, s:I}, s:{s:I, s:I, s:I}, s:I, s:I,"
                     " s:{s:f, s:f, s:f},"
                     " s:{s:i, s:i, s:I, s:I, s:f, s:f, s:I}}",
                     "urls", (json_int_t)c->keys,
                     "new", "bloom_no", (json_int_t)c->new_bloom,
                     "false_positive_caught", (json_int_t)c->new_verified,
                     "duplicate", "bloom_maybe_trusted", (json_int_t)c->dup_trusted,
                     "recent_cache", (json_int_t)c->dup_recent,
                     "sqlite", (json_int_t)c->dup_verified,
                     "checked_new", (json_int_t)c->checked_new,
                     "errors", (json_int_t)c->errors,
                     "fpr", "observed", seen_observed_fpr(c), "bound", b->fpr_bound,
                     "predicted", b->fpr_model,
                     "bloom", "shards", (int)b->shards, "stages", (int)b->stages_total,
                     "count", (json_int_t)b->count, "bits", (json_int_t)b->bits,
                     "fill", b->fill, "bits_per_item", b->bits_per_item,
                     "memory_bytes", (json_int_t)b->memory_bytes);
}
