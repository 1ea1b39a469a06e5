// The Worker of dev.sh in workerd, through Miniflare (what `wrangler dev
// --local` runs underneath), from what dev/prepare.mjs kept: the bundle
// and its options. Starting so costs a fraction of a `wrangler dev` (no
// wrangler to load, nothing to bundle), which the tests pay once a server.
//
//   node dev/stack.mjs PREPARED HOST PORT PERSIST VARS_FILE URL_FILE
//
// The Worker listens on HOST:PORT itself (Miniflare's unsafeDirectSockets).
// PORT 0: workerd binds a free one itself (no port picked beforehand that
// someone else may take meanwhile). PERSIST: the rooms' state (Durable
// Objects, R2) as `wrangler dev --persist-to` keeps it; VARS_FILE:
// NAME=value lines over the config's vars. Once workerd listens, its URL
// goes to URL_FILE (written whole, then renamed). Stops workerd on SIGTERM
// or SIGINT.
import { readFileSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Log, LogLevel, Miniflare, convertV4MiniflareOptions } from "miniflare";

const [prepared, host, port, persist, varsFile, urlFile] = process.argv.slice(2);
if (!urlFile) throw new Error("usage: node dev/stack.mjs PREPARED HOST PORT PERSIST VARS_FILE URL_FILE");
const options = JSON.parse(readFileSync(join(prepared, "options.json"), "utf8"));
const vars = {};
for (const line of readFileSync(varsFile, "utf8").split("\n")) {
  const eq = line.indexOf("=");
  if (eq > 0) vars[line.slice(0, eq)] = line.slice(eq + 1);
}
// Beside the bundle, wrangler writes its Text modules (the `rules` of
// wrangler.jsonc: the browser page), named by their hash; the rest is its own.
const own = new Set(["index.js", "options.json", "README.md"]);
const texts = readdirSync(prepared).filter((name) => !own.has(name) && !name.endsWith(".map"));
const mf = new Miniflare(
  convertV4MiniflareOptions({
    ...options,
    name: "duet",
    modulesRoot: prepared,
    modules: [
      { type: "ESModule", path: join(prepared, "index.js") },
      ...texts.map((name) => ({ type: "Text", path: join(prepared, name) })),
    ],
    bindings: { ...options.bindings, ...vars },
    // Requests reach this Worker on a socket of its own, with no Worker in
    // between, as on Cloudflare; Miniflare's entry Worker (which would
    // proxy each request and socket) listens on a loopback port nobody is told.
    host: "127.0.0.1",
    port: 0,
    unsafeDirectSockets: [{ host, port: Number(port) }],
    resourcePersistencePath: join(persist, "v3"),
    // No request.cf from Cloudflare's API (offline).
    cf: false,
    ...(process.env.DUET_WORKER_INSPECTOR_PORT && { inspectorPort: Number(process.env.DUET_WORKER_INSPECTOR_PORT) }),
    // Miniflare's own warnings, as `wrangler dev --log-level warn` shows them.
    log: new Log(LogLevel.WARN),
  }),
);
const stop = async () => {
  await mf.dispose().catch(() => {});
  process.exit(0);
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
await mf.ready;
const url = await mf.unsafeGetDirectURL("duet");
writeFileSync(`${urlFile}.new`, `${url.origin}\n`);
renameSync(`${urlFile}.new`, urlFile);
