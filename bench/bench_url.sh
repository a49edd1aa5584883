#!/bin/sh
# URL canonicalization: fast path vs the curl path, on link-like input.
# Called by bench/run.sh (env B = build dir). N links (default 400000).
"$B/bench/bench_url" "${N:-200000}"
