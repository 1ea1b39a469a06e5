#!/usr/bin/env bash
# The original engine's room (original.ts) in local workerd, for the
# benchmarks: `wrangler dev` with bench/wrangler.jsonc on a free loopback
# port and DIR for its storage. Prints `duet: listening on http://ADDR`
# once /health answers, as `duet serve` and worker/dev.sh do; SIGTERM stops it.
#
#   worker/bench/original.sh DIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
worker="$(dirname "$here")"
[ $# -eq 1 ] || { echo "usage: worker/bench/original.sh DIR" >&2; exit 2; }
dir="$1"
mkdir -p "$dir"
export PATH="$worker/node_modules/.bin:$PATH"
port="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
group=""
stop() {
  trap - TERM INT EXIT
  if [ -n "$group" ]; then
    kill -TERM -- "-$group" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 -- "-$group" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$group" 2>/dev/null || true
  fi
}
trap 'stop; exit 143' TERM
trap 'stop; exit 130' INT
trap stop EXIT
(
  cd "$here"
  exec setsid env WRANGLER_SEND_METRICS=false CI=1 CLOUDFLARE_CF_FETCH_ENABLED=false \
    WRANGLER_CI_DISABLE_CONFIG_WATCHING=true WRANGLER_REGISTRY_PATH="$dir/registry" \
    wrangler dev -c wrangler.jsonc --local --ip 127.0.0.1 --port "$port" \
    --persist-to "$dir/wrangler" --inspector-port 0 --show-interactive-dev-session=false \
    --log-level "${WRANGLER_LOG:-warn}" >&2 </dev/null
) &
group=$!
health() {
  { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || return 1
  printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  local status=""
  read -r -t 5 status <&3 || true
  exec 3>&-
  [[ "$status" == "HTTP/1."?" 200"* ]]
}
for _ in $(seq 1200); do
  health && break
  kill -0 "$group" 2>/dev/null || { echo "worker/bench/original.sh: wrangler exited" >&2; exit 1; }
  sleep 0.1
done
health || { echo "worker/bench/original.sh: /health did not answer" >&2; exit 1; }
echo "duet: listening on http://127.0.0.1:$port"
set +e
wait "$group"
