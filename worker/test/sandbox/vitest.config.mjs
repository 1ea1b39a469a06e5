// The sandbox tests (adapter and stand-in) in workerd, against a real
// `duet serve` started by global-setup.mjs. Run from worker/:
//   npx vitest run --config test/sandbox/vitest.config.mjs
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

const here = new URL(".", import.meta.url).pathname;

export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => ({
      main: `${here}worker.ts`,
      miniflare: {
        compatibilityDate: "2026-11-01",
        compatibilityFlags: ["nodejs_compat"],
        durableObjects: { Sandbox: { className: "SandboxStandIn", useSQLite: true } },
        r2Buckets: ["WORKSPACES", "BACKUP_BUCKET"],
        bindings: {
          DUET_STANDIN_URL: inject("standinUrl"),
          DUET_STANDIN_TOKEN: inject("standinToken"),
          // Short, so that the sleep test does not wait ten minutes.
          DUET_SANDBOX_IDLE_SECS: "2",
        },
      },
    })),
  ],
  test: {
    root: here,
    include: ["**/*.test.ts"],
    globalSetup: [`${here}global-setup.mjs`],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    isolate: false,
    // As the root configuration's (vitest wants the same in every project).
    maxWorkers: 4,
  },
});
