#!/usr/bin/env bash
# The original engine's room (original.ts) in local workerd, for the
# benchmarks: bench/wrangler.jsonc (or CONFIG, e.g. floor.jsonc: the
# fan-out's floor, floor.ts) bundled as `wrangler deploy` would and run as
# worker/dev.sh runs the worker (dev/prepare.mjs, dev/stack.mjs: workerd
# through Miniflare, no `wrangler dev` proxy in front), so that the engines
# differ in their code only; on a free loopback port, DIR for its storage.
# Prints `duet: listening on http://ADDR` once /health answers, as `duet
# serve` and worker/dev.sh do; SIGTERM stops it.
#
#   worker/bench/original.sh DIR [CONFIG]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
worker="$(dirname "$here")"
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: worker/bench/original.sh DIR [CONFIG]" >&2; exit 2; }
dir="$1"
config="${2:-wrangler.jsonc}"
mkdir -p "$dir"
export PATH="$worker/node_modules/.bin:$PATH"
prepared="$dir/prepared"
rm -rf "$prepared"
(
  cd "$here"
  WRANGLER_SEND_METRICS=false CI=1 CLOUDFLARE_CF_FETCH_ENABLED=false \
    wrangler deploy -c "$config" --dry-run --outdir "$prepared" >/dev/null </dev/null
  node "$worker/dev/prepare.mjs" "$prepared" "$config" >&2 </dev/null
)
# dev/stack.mjs runs index.js (the worker's bundle is named so).
main="$(sed -n 's/^ *"main": *"\(.*\)\.ts".*/\1/p' "$here/$config")"
mv "$prepared/$main.js" "$prepared/index.js"
: >"$dir/vars.env"
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
  exec setsid node "$worker/dev/stack.mjs" "$prepared" 127.0.0.1 0 "$dir/wrangler" "$dir/vars.env" "$dir/url" >&2 </dev/null
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
port=""
for _ in $(seq 1200); do
  [ -n "$port" ] || { [ -s "$dir/url" ] && port="$(sed 's/.*://' "$dir/url")"; }
  [ -z "$port" ] || ! health || break
  kill -0 "$group" 2>/dev/null || { echo "worker/bench/original.sh: workerd exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] && health || { echo "worker/bench/original.sh: /health did not answer" >&2; exit 1; }
echo "duet: listening on http://127.0.0.1:$port"
set +e
wait "$group"
