// The worker's bindings and vars (wrangler.jsonc, wrangler.local.jsonc).
// Minimal version written on the worker-sandbox branch; the worker-core
// branch owns this file and its version wins when they meet.

export interface Env {
  DuetAgent: DurableObjectNamespace;
  /** The real Sandbox (production) or SandboxStandIn (local). */
  Sandbox: DurableObjectNamespace<any>;
  /** Workspace backups across a container's sleep (src/sandbox/backup.ts). */
  WORKSPACES: R2Bucket;
  DUET_TOKEN?: string;
  DUET_AI_URL: string;
  DUET_AI_MODEL: string;
  DUET_AI_KEY?: string;
  DUET_AGENT_STEPS: string;
  DUET_AI_TIMEOUT_SECS: string;
  DUET_EXEC_TIMEOUT_MS: string;
  DUET_MAX_EXEC_TIMEOUT_MS: string;
  DUET_OUTPUT_CAP: string;
  DUET_SANDBOX_IDLE_SECS: string;
  /** Local only: the `duet serve` the stand-in forwards to, and its token. */
  DUET_STANDIN_URL?: string;
  DUET_STANDIN_TOKEN?: string;
}
