#!/usr/bin/env bash
# Runs the worker's tests (every vitest project of vitest.config.ts, in
# workerd, offline) and ends with one line `N passed, M failed`; exits
# non-zero when a test failed or the run broke. Needs the duet binary
# (`cargo build` at the repository's root, or DUET_BIN). Extra arguments go
# to vitest (e.g. `--project room test/ws.test.ts`).
set -uo pipefail
cd "$(dirname "$0")"
export WRANGLER_SEND_METRICS=false CI=1 CLOUDFLARE_CF_FETCH_ENABLED=false
[ -d node_modules ] || npm ci --no-audit --no-fund || exit 1
report="$(mktemp)"
trap 'rm -f "$report"' EXIT
npx vitest run --reporter=default --reporter=json --outputFile="$report" "$@" 2>&1 |
  grep -v -e '^Sourcemap for ' -e 'WebSocket disconnected between frames' -e '^stack: .*workerd@'
status=${PIPESTATUS[0]}
npx node -e '
  const fs = require("fs");
  let r;
  try { r = JSON.parse(fs.readFileSync(process.argv[1], "utf8")); } catch { r = { numFailedTestSuites: 1 }; }
  const passed = r.numPassedTests ?? 0;
  // A suite that broke before its tests counts as one failure.
  // So does a run that broke outside any test (vitest says success: false).
  const failed = (r.numFailedTests ?? 0) || (r.numFailedTestSuites ?? 0) || (r.success === false ? 1 : 0);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
' "$report" || status=1
exit "$status"
