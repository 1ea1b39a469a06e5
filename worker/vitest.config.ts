// The worker's own tests, in workerd (the Workers Vitest integration), with
// the local configuration (wrangler.local.jsonc: the stand-in Sandbox in
// front of a real `duet serve`) and a fake model, both started by
// test/global-setup.mjs. Several projects, because the model settings are
// vars of the whole Worker: `room` (one round, a model), `rounds` (five
// rounds), `nomodel` (no model configured), `tools-on` and `tools-off`
// (DUET_AI_TOOLS; the latter with a 64-byte DUET_AGENTS_MD_BYTES), `starting` (containers that
// take 3 s to start), `idle` (sandboxes and terminals that idle out after 2 s), `checkpoints`
// (two automatic checkpoints kept, a 1 MiB disk, 3 s lifetimes) and `limits`
// (small rate limits and socket cap), `notoken` (no DUET_TOKEN) and
// `approvals` (an agent's command waits 1 s for approval). The sandbox tests of test/sandbox
// have their own configuration, run as one more project.
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

function project(name: string, include: string[], vars: Record<string, string>) {
  return {
    plugins: [
      cloudflareTest(({ inject }) => ({
        wrangler: { configPath: "./wrangler.local.jsonc" },
        miniflare: {
          bindings: {
            DUET_STANDIN_URL: inject<string>("standinUrl"),
            DUET_STANDIN_TOKEN: inject<string>("standinToken"),
            DUET_TOKEN: "test-token",
            DUET_AI_URL: `${inject<string>("modelUrl")}/v1`,
            DUET_AI_MODEL: "scripted",
            DUET_AI_KEY: "sk-test",
            DUET_AI_TIMEOUT_SECS: "120",
            // One round a turn, as the original agent (a script of one answer is a turn).
            DUET_AGENT_STEPS: "1",
            DUET_ALLOW_ORIGIN: "https://ide.example, HTTPS://Other.example/",
            ...vars,
          },
        },
      })),
    ],
    test: {
      name,
      include,
      globalSetup: ["./test/global-setup.mjs"],
      testTimeout: 60_000,
      hookTimeout: 60_000,
      // The files of a project share one isolate (a second or more of
      // startup each otherwise): each works in rooms of its own (room() of
      // test/support.ts) and mocks nothing.
      isolate: false,
    },
  };
}

export default defineConfig({
  test: {
    // Most of a file's time is spent waiting (on the sandbox, on timers of
    // a second or more): more files at once than cores (vitest's default on
    // two cores is one).
    maxWorkers: 4,
    projects: [
      project("room", ["test/*.test.ts"], { DUET_APPROVAL_ALLOW: "ls, cat" }),
      project("rounds", ["test/rounds/*.test.ts"], { DUET_AGENT_STEPS: "5", DUET_AI_TIMEOUT_SECS: "2" }),
      project("nomodel", ["test/nomodel/*.test.ts"], { DUET_AI_URL: "" }),
      project("tools-on", ["test/tools-on/*.test.ts"], { DUET_AI_TOOLS: "on" }),
      project("tools-off", ["test/tools-off/*.test.ts"], { DUET_AI_TOOLS: "off", DUET_AGENTS_MD_BYTES: "64" }),
      project("starting", ["test/starting/*.test.ts"], { DUET_STANDIN_START_SECS: "3" }),
      project("idle", ["test/idle/*.test.ts"], { DUET_SANDBOX_IDLE_SECS: "2", DUET_TERMINAL_IDLE_SECS: "2" }),
      project("checkpoints", ["test/checkpoints/*.test.ts"], {
        DUET_AUTO_CHECKPOINTS: "2",
        DUET_DISK_MB: "1",
        DUET_CHECKPOINT_TTL_SECS: "3",
      }),
      project("limits", ["test/limits/*.test.ts"], {
        DUET_SOCKET_FRAMES_PER_SEC: "20",
        DUET_SOCKET_BYTES_PER_SEC: "4096",
        DUET_SOCKET_MESSAGES_PER_MIN: "2",
        DUET_SOCKET_COMMANDS_PER_MIN: "3",
        DUET_ROOM_MESSAGES_PER_MIN: "3",
        DUET_ROOM_COMMANDS_PER_MIN: "4",
        DUET_MAX_ROOM_SOCKETS: "2",
      }),
      // Invites need a token: without one everyone is an owner.
      project("notoken", ["test/notoken/*.test.ts"], { DUET_TOKEN: "" }),
      project("approvals", ["test/approvals/*.test.ts"], { DUET_APPROVAL_TIMEOUT_SECS: "1" }),
      "./test/sandbox/vitest.config.mjs",
    ],
  },
});
