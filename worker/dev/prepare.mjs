// Run by dev.sh once per version of the worker's sources: what `wrangler
// dev` would work out on every start, kept in the folder given. Beside the
// bundle that `wrangler deploy --dry-run` wrote there (index.js, the same
// build as a deploy), options.json: the Miniflare options of
// wrangler.local.jsonc (bindings, Durable Objects, buckets, compatibility)
// as wrangler reads them. dev/stack.mjs starts workerd from both, without
// loading wrangler or bundling again.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

const out = process.argv[2];
if (!out) throw new Error("usage: node dev/prepare.mjs DIR [CONFIG]");
// CONFIG: another wrangler config (worker/bench/original.sh: the baselines of the benchmarks).
const { workerOptions } = unstable_getMiniflareWorkerOptions(process.argv[3] ?? "wrangler.local.jsonc");
const options = {};
for (const [key, value] of Object.entries(workerOptions)) {
  // rootPath and modulesRules are for sources; the bundle is one module.
  if (typeof value === "function" || ["connectHandlers", "rootPath", "modulesRules"].includes(key)) continue;
  options[key] = value;
}
writeFileSync(join(out, "options.json"), JSON.stringify(options));
