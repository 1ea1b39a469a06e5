// The Worker's bindings (wrangler.jsonc, wrangler.local.jsonc) and secrets.
import type { Sandbox } from "@cloudflare/sandbox";
import type { DuetAgent } from "./agent";
import type { DuetLobby } from "./lobby";

export interface Env {
  /** One Durable Object per room (the Agents SDK agent). */
  DuetAgent: DurableObjectNamespace<DuetAgent>;
  /** The one object that keeps the room list (lobby.ts). */
  DuetLobby: DurableObjectNamespace<DuetLobby>;
  /** One Sandbox per room: the real container, or the local stand-in. */
  Sandbox: DurableObjectNamespace<Sandbox>;
  /** Backups of the rooms' /workspace across a container's sleep. */
  WORKSPACES: R2Bucket;
  /** Checkpoints: the Sandbox SDK's createBackup/restoreBackup keep their archives here. */
  BACKUP_BUCKET: R2Bucket;
  /** Seconds a socket ticket may be used (default 60). */
  DUET_TICKET_SECS?: string;
  /** The bearer token (a secret); empty or absent: no token needed. */
  DUET_TOKEN?: string;
  /** Origins (comma list) whose browser pages may call the API; default none. */
  DUET_ALLOW_ORIGIN?: string;
  /** The model: an OpenAI-compatible base URL, its model and key (a secret). */
  DUET_AI_URL?: string;
  DUET_AI_MODEL?: string;
  /** The models a room's owner may choose, comma-separated, the first the default (DUET_AI_MODEL alone). */
  DUET_AI_MODELS?: string;
  DUET_AI_KEY?: string;
  /** Rounds a turn may take (duet serve --agent-steps, default 10). */
  DUET_AGENT_STEPS?: string;
  /** Seconds a turn may take, all its rounds (--agent-turn-secs, default 600). */
  DUET_AGENT_TURN_SECS?: string;
  /** Tokens of context the model is sent at most (--ai-context-tokens, default 32000). */
  DUET_AI_CONTEXT_TOKENS?: string;
  /** Time one answer of the model may take. */
  DUET_AI_TIMEOUT_SECS?: string;
  /** Time to reach the model's service, until its answer starts (default 30). */
  DUET_AI_CONNECT_TIMEOUT_SECS?: string;
  /** Whether the model is offered the `run` tool: auto (default; tags if refused), on, off. */
  DUET_AI_TOOLS?: string;
  /** Bytes of /workspace/AGENTS.md the agent is sent each turn (default 16384). */
  DUET_AGENTS_MD_BYTES?: string;
  /** A command's timeout when the request names none, and the largest allowed. */
  DUET_EXEC_TIMEOUT_MS?: string;
  DUET_MAX_EXEC_TIMEOUT_MS?: string;
  /** Bytes kept per stream of one command's output. */
  DUET_OUTPUT_CAP?: string;
  /** A sandbox without a command for this long sleeps. */
  DUET_SANDBOX_IDLE_SECS?: string;
  /** The shared terminal ends after this long unattached and silent (default 3600). */
  DUET_TERMINAL_IDLE_SECS?: string;
  /** Limits (src/limits.ts; docs/protocol.md "Limits"), each a positive whole number. */
  DUET_SOCKET_FRAMES_PER_SEC?: string;
  DUET_SOCKET_BYTES_PER_SEC?: string;
  DUET_SOCKET_MESSAGES_PER_MIN?: string;
  DUET_SOCKET_COMMANDS_PER_MIN?: string;
  DUET_ROOM_MESSAGES_PER_MIN?: string;
  DUET_ROOM_COMMANDS_PER_MIN?: string;
  DUET_MAX_ROOM_SOCKETS?: string;
  /** Background processes running at once in a room (default 8). */
  DUET_MAX_PROCESSES?: string;
  /** Bytes a tunnel's client sends per second (default 67108864). */
  DUET_TUNNEL_BYTES_PER_SEC?: string;
  /** Automatic checkpoints a room keeps (default 10; 0: none are taken). */
  DUET_AUTO_CHECKPOINTS?: string;
  /** Seconds a checkpoint is kept before it expires (default 604800, 7 days). */
  DUET_CHECKPOINT_TTL_SECS?: string;
  /** MiB a room's /workspace and its checkpoints may take together (default 1024). */
  DUET_DISK_MB?: string;
  /** Seconds an agent's command waits for approval under `ask` (default 300). */
  DUET_APPROVAL_TIMEOUT_SECS?: string;
  /** Commands that never ask (comma-separated; each room adds its own). */
  DUET_APPROVAL_ALLOW?: string;
  /**
   * The custom domain of host-based preview URLs (`exposePort`), e.g.
   * `preview.example.com` routed to this Worker; absent: ports have no `url`.
   */
  DUET_PREVIEW_HOST?: string;
  /** Local configuration only: the `duet serve` the stand-in Sandbox forwards to. */
  DUET_STANDIN_URL?: string;
  DUET_STANDIN_TOKEN?: string;
  /** Local only: seconds the stand-in's "container" takes to start (default 0). */
  DUET_STANDIN_START_SECS?: string;
}

/** A positive whole number from a var, else `fallback`. */
export function positiveVar(value: string | undefined, fallback: number): number {
  const n = Number((value ?? "").trim());
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}

/** The limits a room applies, read from the vars. */
export interface Limits {
  execTimeoutMs: number;
  maxExecTimeoutMs: number;
  outputCap: number;
  maxProcesses: number;
  tunnelBytesPerSec: number;
  /** Automatic checkpoints kept (0: none taken). */
  autoCheckpoints: number;
  checkpointTtlSecs: number;
  /** Bytes of the room's disk: /workspace and its checkpoints. */
  diskBytes: number;
  approvalTimeoutMs: number;
}

/** A whole number, zero included, from a var, else `fallback`. */
export function countVar(value: string | undefined, fallback: number): number {
  const text = (value ?? "").trim();
  const n = Number(text);
  return text !== "" && Number.isSafeInteger(n) && n >= 0 ? n : fallback;
}

/**
 * The largest output cap: a command's two streams must fit the 32 MiB that
 * Durable Object RPC carries per value (and an object's 128 MB of memory).
 */
export const MAX_OUTPUT_CAP = 8 * 1024 * 1024;

export function limits(env: Env): Limits {
  return {
    execTimeoutMs: positiveVar(env.DUET_EXEC_TIMEOUT_MS, 60_000),
    maxExecTimeoutMs: positiveVar(env.DUET_MAX_EXEC_TIMEOUT_MS, 600_000),
    outputCap: Math.min(positiveVar(env.DUET_OUTPUT_CAP, 1024 * 1024), MAX_OUTPUT_CAP),
    maxProcesses: positiveVar(env.DUET_MAX_PROCESSES, 8),
    tunnelBytesPerSec: positiveVar(env.DUET_TUNNEL_BYTES_PER_SEC, 64 * 1024 * 1024),
    autoCheckpoints: countVar(env.DUET_AUTO_CHECKPOINTS, 10),
    checkpointTtlSecs: positiveVar(env.DUET_CHECKPOINT_TTL_SECS, 7 * 24 * 3600),
    diskBytes: positiveVar(env.DUET_DISK_MB, 1024) * 1024 * 1024,
    approvalTimeoutMs: positiveVar(env.DUET_APPROVAL_TIMEOUT_SECS, 300) * 1000,
  };
}
