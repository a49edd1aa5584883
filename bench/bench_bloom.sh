#!/bin/sh
# crawld's Bloom filter against libbloom (Debian libbloom-dev), one run:
# in-cache and out-of-cache filters, 1 and 2 threads, the scalable chain.
# Prints Markdown tables with ratios. Runs in about 3-4 minutes on 2 cores.
# Sizes and repetitions can be lowered for a quick look, e.g.
#   BLOOM_BENCH_BIG=20000000 BLOOM_BENCH_REPS=3 BENCH_ONLY=bloom make bench
# usage: bench/bench_bloom.sh   (called by `make bench`; needs $B)
: "${B:=build/default}"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "uptime before: $(uptime)"
"$B/bench/bench_bloom"
rc=$?
echo "uptime after: $(uptime)"
exit $rc
