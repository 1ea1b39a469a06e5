// The Worker of local development and tests (wrangler.local.jsonc, used by
// worker/dev.sh and vitest): the production entry (src/index.ts) plus the
// stand-in Sandbox (standin.ts), bound in place of the real container,
// which needs Docker. Nothing here is deployed.

export { default, DuetAgent, DuetLobby, Sandbox } from "../src/index";
export { SandboxStandIn } from "./standin";
