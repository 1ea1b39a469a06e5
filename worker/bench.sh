#!/usr/bin/env bash
# The figures of `duet serve` and of the local worker side by side, from one
# run: exec of `true` (median, p99), a message's fan-out to 100 sockets
# (p50, p99) and the memory of 1,000 idle sockets (100 rooms of 10). Both
# come from benches/server.rs; DUET_BENCH_BACKEND=worker points it at
# worker/dev.sh. Then the section `engines`: `duet serve`, the worker and
# the original engine's room (worker/bench/original.sh, a bare Agents SDK
# room) measured by the same clients in one run, with ratios to the
# original, the worker's exec breakdown and each engine's idle memory.
# Local workerd is not Cloudflare's edge: see the README.
#
#   worker/bench.sh            everything
#   worker/bench.sh engines    only the three engines side by side
set -euo pipefail
cd "$(dirname "$0")/.."
export DUET_BENCH_ROOMS="${DUET_BENCH_ROOMS:-100}"
cargo bench --bench server --no-run
if [ "${1:-}" != engines ]; then
  for backend in serve worker; do
    echo "==== $backend"
    DUET_BENCH_BACKEND="$backend" cargo bench --bench server 2>/dev/null
  done
fi
echo "==== engines"
cargo bench --bench server -- engines 2>/dev/null
