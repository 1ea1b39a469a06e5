#!/usr/bin/env bash
# The whole local Cloudflare stack in the foreground: the Worker in workerd
# as `wrangler dev --local` runs it (Miniflare, from the bundle of `wrangler
# deploy --dry-run`: dev/prepare.mjs, dev/stack.mjs) with the stand-in
# Sandbox (wrangler.local.jsonc), and the `duet serve`
# the stand-in forwards commands to (its real namespace sandbox, behind a
# random token of its own). Prints `duet: listening on http://ADDR` once
# /health answers, as `duet serve` does. SIGTERM stops all of it.
#
#   worker/dev.sh --listen 127.0.0.1:PORT --data-dir DIR [--token T]
#                 [--ai-url URL --ai-model M] [other flags of `duet serve`]
#
# State: DIR/wrangler (rooms: the Durable Objects' SQLite, R2 backups),
# DIR/sandbox (the stand-in's workspaces). Both survive a stop and start.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"

usage() {
  cat <<'EOF'
Usage: worker/dev.sh [OPTIONS]

The same flags and DUET_* variables as `duet serve`:
  --listen ADDR               [env: DUET_LISTEN] (default 127.0.0.1:8787; port 0 picks one)
  --data-dir DIR              [env: DUET_DATA_DIR] (default $XDG_DATA_HOME/duet-worker)
  --token T                   [env: DUET_TOKEN] bearer token (anything but loopback needs one)
  --exec-timeout-ms N         default timeout of a command (60000)
  --max-exec-timeout-ms N     largest timeout a request may ask for (600000)
  --output-cap N              bytes captured per stream of a command (1048576)
  --sandbox-idle-secs N       the sandbox sleeps after this many idle seconds (600)
  --terminal-idle-secs N      the shared terminal ends after this long unattached and silent (3600)
  --memory-mb, --processes, --cpu-secs, --disk-mb, --open-files, --tmp-mb N,
  --sandbox-network none|nat  limits of the stand-in's sandbox
  --ai-url URL                [env: DUET_AI_URL] OpenAI-compatible chat API
  --ai-model M                [env: DUET_AI_MODEL]
  --ai-models A,B,…           [env: DUET_AI_MODELS] the models a room's owner may choose,
                              the first the default (--ai-model alone)
  --ai-key K                  [env: DUET_AI_KEY]
  --agent-steps N             [env: DUET_AGENT_STEPS] rounds a turn may take (10)
  --agent-turn-secs N         [env: DUET_AGENT_TURN_SECS] seconds a turn may take (600)
  --ai-context-tokens N       [env: DUET_AI_CONTEXT_TOKENS] tokens of context sent to the model (32000)
  --ai-timeout-secs N         [env: DUET_AI_TIMEOUT_SECS] (120)
  --ai-tools MODE             [env: DUET_AI_TOOLS] offer the model the run tool: auto (tags
                              if the model refuses it), on, off (auto)
  --agents-md-bytes N         [env: DUET_AGENTS_MD_BYTES] bytes of /workspace/AGENTS.md
                              the agent is sent each turn (16384)
  --allow-origin O[,O…]       [env: DUET_ALLOW_ORIGIN] web origins that may call the API
  --socket-frames-per-sec, --socket-bytes-per-sec, --socket-messages-per-min,
  --socket-commands-per-min, --room-messages-per-min, --room-commands-per-min,
  --max-room-sockets N        the limits (same defaults and DUET_* variables; 0: none)
  --max-processes N           background processes running at once in a room (8)
  --tunnel-bytes-per-sec N    bytes a tunnel's client sends per second (67108864)
  --auto-checkpoints N        automatic checkpoints a room keeps (10; 0: none)
                              (--disk-mb is also the worker's DUET_DISK_MB: a room's
                              /workspace and checkpoints together, default 1024;
                              DUET_CHECKPOINT_TTL_SECS: a checkpoint's lifetime)
  --approval-timeout-secs N   seconds an agent's command waits for approval under `ask` (300)
  --approval-allow LIST       [env: DUET_APPROVAL_ALLOW] commands that never ask ("ls,cat,git status")
  --ticket-secs N             seconds a socket ticket (a browser's way in) may be used (60)
  --public-host, --room-idle-secs, --max-sockets
                              accepted and ignored: Cloudflare routes by host, evicts
                              idle rooms itself and has no server-wide socket count
The stand-in's duet serve: $DUET_BIN, else target/{debug,release}/duet, else duet on PATH.
DUET_STANDIN_START_SECS=N: each start of a room's stand-in container takes N s
(requests answer 503 with Retry-After meanwhile, as on Cloudflare).
DUET_WORKER_INSPECTOR_PORT=N: workerd's V8 inspector on 127.0.0.1:N, for
CPU profiles of the Worker (target `core:user:duet`, Profiler.start and
Profiler.stop over the DevTools protocol).
EOF
}

die() {
  echo "worker/dev.sh: $*" >&2
  exit 2
}

listen="${DUET_LISTEN:-127.0.0.1:8787}"
data_dir="${DUET_DATA_DIR:-${XDG_DATA_HOME:-${HOME:-.}/.local/share}/duet-worker}"
token="${DUET_TOKEN:-}"
ai_url="${DUET_AI_URL:-}"
ai_model="${DUET_AI_MODEL:-}"
ai_models="${DUET_AI_MODELS:-}"
ai_key="${DUET_AI_KEY:-}"
ai_timeout="${DUET_AI_TIMEOUT_SECS:-120}"
ai_tools="${DUET_AI_TOOLS:-auto}"
agents_md_bytes="${DUET_AGENTS_MD_BYTES:-16384}"
agent_steps="${DUET_AGENT_STEPS:-10}"
agent_turn_secs="${DUET_AGENT_TURN_SECS:-600}"
ai_context_tokens="${DUET_AI_CONTEXT_TOKENS:-32000}"
exec_timeout=60000
max_exec_timeout=600000
output_cap=1048576
idle_secs=600
terminal_idle_secs=3600
sandbox_limits=() # only the stand-in's duet serve applies these
allow_origin="${DUET_ALLOW_ORIGIN:-}"
approval_allow="${DUET_APPROVAL_ALLOW:-}"
# The limits, as the worker's vars (the doc's defaults apply when unset).
declare -A limits=()
for name in SOCKET_FRAMES_PER_SEC SOCKET_BYTES_PER_SEC SOCKET_MESSAGES_PER_MIN \
  SOCKET_COMMANDS_PER_MIN ROOM_MESSAGES_PER_MIN ROOM_COMMANDS_PER_MIN MAX_ROOM_SOCKETS \
  MAX_PROCESSES TUNNEL_BYTES_PER_SEC AUTO_CHECKPOINTS DISK_MB CHECKPOINT_TTL_SECS APPROVAL_TIMEOUT_SECS TICKET_SECS; do
  var="DUET_$name"
  [ -z "${!var:-}" ] || limits[$var]="${!var}"
done

number() { [[ "$2" =~ ^[0-9]+$ ]] || die "$1 must be a whole number, not '$2'"; }

while [ $# -gt 0 ]; do
  flag="$1"
  shift
  case "$flag" in
  -h | --help)
    usage
    exit 0
    ;;
  --*=*)
    value="${flag#*=}"
    flag="${flag%%=*}"
    ;;
  --*)
    [ $# -gt 0 ] || die "$flag needs a value"
    value="$1"
    shift
    ;;
  *) die "unexpected argument '$flag' (see --help)" ;;
  esac
  case "$flag" in
  --listen) listen="$value" ;;
  --data-dir) data_dir="$value" ;;
  --token) token="$value" ;;
  --ai-url) ai_url="$value" ;;
  --ai-model) ai_model="$value" ;;
  --ai-models) ai_models="$value" ;;
  --ai-key) ai_key="$value" ;;
  --ai-timeout-secs) number "$flag" "$value" && ai_timeout="$value" ;;
  --agent-steps) number "$flag" "$value" && agent_steps="$value" ;;
  --agent-turn-secs) number "$flag" "$value" && agent_turn_secs="$value" ;;
  --ai-context-tokens) number "$flag" "$value" && ai_context_tokens="$value" ;;
  --ai-tools) ai_tools="$value" ;;
  --agents-md-bytes) number "$flag" "$value" && agents_md_bytes="$value" ;;
  --exec-timeout-ms) number "$flag" "$value" && exec_timeout="$value" ;;
  --max-exec-timeout-ms) number "$flag" "$value" && max_exec_timeout="$value" ;;
  --output-cap) number "$flag" "$value" && output_cap="$value" ;;
  --sandbox-idle-secs) number "$flag" "$value" && idle_secs="$value" ;;
  --terminal-idle-secs) number "$flag" "$value" && terminal_idle_secs="$value" ;;
  --memory-mb | --processes | --cpu-secs | --disk-mb | --open-files | --tmp-mb)
    number "$flag" "$value" && sandbox_limits+=("$flag" "$value")
    # The room's disk budget is the worker's too: /workspace and its checkpoints.
    [ "$flag" != --disk-mb ] || limits[DUET_DISK_MB]="$value"
    ;;
  --sandbox-network)
    [[ "$value" == none || "$value" == nat ]] || die "--sandbox-network is none or nat, not '$value'"
    sandbox_limits+=("$flag" "$value")
    ;;
  --allow-origin) allow_origin="$value" ;;
  --approval-allow) approval_allow="$value" ;;
  --socket-frames-per-sec | --socket-bytes-per-sec | --socket-messages-per-min | \
    --socket-commands-per-min | --room-messages-per-min | --room-commands-per-min | --max-room-sockets | \
    --max-processes | --tunnel-bytes-per-sec | --auto-checkpoints | --approval-timeout-secs | --ticket-secs)
    number "$flag" "$value"
    var="DUET_$(echo "${flag#--}" | tr 'a-z-' 'A-Z_')"
    limits[$var]="$value"
    ;;
  --public-host | --room-idle-secs | --max-sockets) ;;
  *) die "unknown flag $flag (see --help)" ;;
  esac
done
[ "$max_exec_timeout" -ge "$exec_timeout" ] || max_exec_timeout="$exec_timeout"
[[ "$ai_tools" == auto || "$ai_tools" == on || "$ai_tools" == off ]] || die "--ai-tools is auto, on or off, not '$ai_tools'"
number --agents-md-bytes "$agents_md_bytes"

host="${listen%:*}"
port="${listen##*:}"
[[ "$listen" == *:* && "$port" =~ ^[0-9]+$ && -n "$host" ]] || die "--listen is HOST:PORT, not '$listen'"
case "$host" in
127.* | localhost | ::1 | "[::1]") ;;
*) [ -n "$token" ] || die "listening on $host (not loopback) needs --token" ;;
esac

# Node 22 and wrangler come from node_modules (Debian's Node is too old).
export PATH="$here/node_modules/.bin:$PATH"
needs_install() {
  [ ! -f "$here/node_modules/.package-lock.json" ] || [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]
}
if needs_install; then
  # Stacks started side by side install once.
  exec 9>"$here/.npm-install.lock"
  flock 9
  if needs_install; then
    echo "worker/dev.sh: npm ci (first use)" >&2
    (cd "$here" && npm ci --no-audit --no-fund >&2)
  fi
  exec 9>&-
fi

# What `wrangler dev` would bundle and read on each start, once per version
# of the sources (dev/prepare.mjs): stacks started one after another, as the
# tests do, then cost a Miniflare start each. Kept in node_modules/.cache.
sources_hash() {
  (cd "$here" && find src dev wrangler.local.jsonc package-lock.json -type f -print0 | sort -z |
    xargs -0 sha256sum | sha256sum | cut -c1-16)
}
prepared="$here/node_modules/.cache/duet-dev/$(sources_hash)"
if [ ! -f "$prepared/options.json" ]; then
  mkdir -p "$here/node_modules/.cache/duet-dev"
  exec 9>"$here/node_modules/.cache/duet-dev/.lock"
  flock 9
  if [ ! -f "$prepared/options.json" ]; then
    staging="$(mktemp -d "$here/node_modules/.cache/duet-dev/.new.XXXXXX")"
    (cd "$here" && WRANGLER_SEND_METRICS=false CI=1 CLOUDFLARE_CF_FETCH_ENABLED=false \
      wrangler deploy -c wrangler.local.jsonc --dry-run --outdir "$staging" >/dev/null </dev/null &&
      node dev/prepare.mjs "$staging" >&2 </dev/null) || {
      rm -rf "$staging"
      die "bundling the worker failed"
    }
    rm -rf "$prepared"
    mv "$staging" "$prepared"
    # Versions not started for a day go.
    find "$here/node_modules/.cache/duet-dev" -mindepth 1 -maxdepth 1 -type d -mmin +1440 \
      -exec rm -rf {} + 2>/dev/null || true
  fi
  exec 9>&-
fi

duet="${DUET_BIN:-}"
if [ -z "$duet" ]; then
  for profile in debug release; do
    if [ -x "$repo/target/$profile/duet" ]; then
      duet="$repo/target/$profile/duet"
      break
    fi
  done
fi
duet="${duet:-duet}"
command -v "$duet" >/dev/null 2>&1 || die "no duet binary: build it (cargo build) or set DUET_BIN"

mkdir -p "$data_dir/sandbox" "$data_dir/wrangler"
run="$(mktemp -d "${TMPDIR:-/tmp}/duet-dev.XXXXXX")"
chmod 700 "$run"
groups=() # process groups to stop: each child leads its own
watchdog=""

stop_all() {
  trap - TERM INT EXIT
  [ -z "$watchdog" ] || kill -KILL "$watchdog" 2>/dev/null || true
  if [ ${#groups[@]} -gt 0 ]; then
    for g in "${groups[@]}"; do kill -TERM -- "-$g" 2>/dev/null || true; done
    for _ in $(seq 50); do
      alive=0
      for g in "${groups[@]}"; do kill -0 -- "-$g" 2>/dev/null && alive=1; done
      [ $alive -eq 0 ] && break
      sleep 0.1
    done
    for g in "${groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
  fi
  rm -rf "$run"
}
trap 'stop_all; exit 143' TERM
trap 'stop_all; exit 130' INT
trap 'stop_all' EXIT

# A watchdog outlives a SIGKILL of this script and then stops the groups.
watch_groups() {
  setsid bash -c 'while kill -0 "$0" 2>/dev/null; do sleep 1; done
    for g in $(cat "$1" 2>/dev/null); do kill -TERM -- "-$g" 2>/dev/null; done
    sleep 3
    for g in $(cat "$1" 2>/dev/null); do kill -KILL -- "-$g" 2>/dev/null; done
    rm -rf "$(dirname "$1")"' "$$" "$run/groups" </dev/null >/dev/null 2>&1 &
  watchdog=$!
}

# 1. The stand-in's duet serve, on a loopback port of its own choosing.
standin_token="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
# The worker enforces the limits; its one stand-in connection carries every
# room's commands, so the stand-in's own server has none. Its output cap is
# twice the worker's: the worker's adapter caps a command's output (and
# marks it truncated) as with the real Sandbox, which has no cap of its own.
setsid env -u DUET_TOKEN -u DUET_AI_URL -u DUET_AI_MODEL -u DUET_AI_MODELS -u DUET_AI_KEY -u DUET_LISTEN -u DUET_DATA_DIR \
  -u DUET_ALLOW_ORIGIN DUET_LOG="${DUET_LOG:-warn}" \
  DUET_SOCKET_FRAMES_PER_SEC=0 DUET_SOCKET_BYTES_PER_SEC=0 DUET_SOCKET_MESSAGES_PER_MIN=0 \
  DUET_SOCKET_COMMANDS_PER_MIN=0 DUET_ROOM_MESSAGES_PER_MIN=0 DUET_ROOM_COMMANDS_PER_MIN=0 \
  DUET_MAX_ROOM_SOCKETS=0 DUET_MAX_SOCKETS=0 DUET_MAX_PROCESSES=1024 DUET_TUNNEL_BYTES_PER_SEC=1099511627776 \
  "$duet" serve --listen 127.0.0.1:0 --data-dir "$data_dir/sandbox" --token "$standin_token" \
  --exec-timeout-ms "$exec_timeout" --max-exec-timeout-ms "$((max_exec_timeout + 60000))" \
  --output-cap "$((output_cap * 2))" --sandbox-idle-secs "$((idle_secs + 60))" \
  ${sandbox_limits[@]+"${sandbox_limits[@]}"} >"$run/standin.out" 2>&2 </dev/null &
groups+=("$!")
echo "${groups[*]}" >"$run/groups"
watch_groups
standin_url=""
for _ in $(seq 600); do
  if line="$(head -n1 "$run/standin.out" 2>/dev/null)" && [ -n "$line" ]; then
    standin_url="${line#duet: listening on }"
    break
  fi
  kill -0 "${groups[0]}" 2>/dev/null || die "the stand-in's duet serve exited"
  sleep 0.05
done
[[ "$standin_url" == http://* ]] || die "the stand-in's duet serve did not start (${line:-no output})"

# 2. The Worker in workerd (dev/stack.mjs) on the asked port (0: workerd
# binds a free one and dev/stack.mjs writes which to $run/url).
# Vars and secrets in a private file, not on the command line.
{
  echo "DUET_TOKEN=$token"
  echo "DUET_AI_URL=$ai_url"
  echo "DUET_AI_MODEL=$ai_model"
  echo "DUET_AI_MODELS=$ai_models"
  echo "DUET_AI_KEY=$ai_key"
  echo "DUET_AGENT_STEPS=$agent_steps"
  echo "DUET_AGENT_TURN_SECS=$agent_turn_secs"
  echo "DUET_AI_CONTEXT_TOKENS=$ai_context_tokens"
  echo "DUET_AI_TIMEOUT_SECS=$ai_timeout"
  echo "DUET_AI_TOOLS=$ai_tools"
  echo "DUET_AGENTS_MD_BYTES=$agents_md_bytes"
  echo "DUET_EXEC_TIMEOUT_MS=$exec_timeout"
  echo "DUET_MAX_EXEC_TIMEOUT_MS=$max_exec_timeout"
  echo "DUET_OUTPUT_CAP=$output_cap"
  echo "DUET_SANDBOX_IDLE_SECS=$idle_secs"
  echo "DUET_TERMINAL_IDLE_SECS=$terminal_idle_secs"
  echo "DUET_STANDIN_URL=$standin_url"
  echo "DUET_STANDIN_TOKEN=$standin_token"
  echo "DUET_STANDIN_START_SECS=${DUET_STANDIN_START_SECS:-0}"
  echo "DUET_ALLOW_ORIGIN=$allow_origin"
  echo "DUET_APPROVAL_ALLOW=$approval_allow"
  for var in "${!limits[@]}"; do echo "$var=${limits[$var]}"; done
} >"$run/vars.env"
(
  cd "$here"
  exec setsid node dev/stack.mjs "$prepared" "$host" "$port" "$data_dir/wrangler" "$run/vars.env" "$run/url" >&2 </dev/null
) &
groups+=("$!")
echo "${groups[*]}" >"$run/groups"

health() {
  { exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null || return 1
  printf 'GET /health HTTP/1.0\r\nHost: %s\r\n\r\n' "$host" >&3
  local status=""
  read -r -t 5 status <&3 || true
  exec 3>&-
  [[ "$status" == "HTTP/1."?" 200"* ]]
}
# workerd may take a minute to start on a loaded machine.
for _ in $(seq 1200); do
  if [ "$port" -eq 0 ] && [ -s "$run/url" ]; then
    url="$(cat "$run/url")"
    port="${url##*:}"
  fi
  [ "$port" -eq 0 ] || ! health || break
  for g in "${groups[@]}"; do kill -0 "$g" 2>/dev/null || die "a part of the stack exited before /health answered"; done
  sleep 0.1
done
[ "$port" -ne 0 ] && health || die "/health did not answer on $host:$port"
echo "duet: listening on http://$host:$port"

# Until either part ends, or a signal.
set +e
wait -n "${groups[@]}"
status=$?
echo "worker/dev.sh: a part of the stack exited ($status); stopping" >&2
exit 1
