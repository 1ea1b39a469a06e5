// Who may do what (docs/protocol.md "Invites, roles and approvals"): the
// one table of actions × roles, with duet serve's words
// (src/server/access.rs), checked against docs/operations.json; which
// action each operation is comes from the operation table (ops.ts `opAction`).
// Every way in asks `check` here before it does anything: HTTP and rpc
// (room.ts `perform`, agent.ts for the socket's own operations), terminal
// frames (agent.ts), files, previews and tunnels (index.ts, preview.ts).

import { ApiError } from "./http";

export type RoomRole = "owner" | "writer" | "viewer";

export const ROLES: readonly RoomRole[] = ["owner", "writer", "viewer"];

/** Each role may do what the ones after it may. */
const RANK: Record<RoomRole, number> = { viewer: 0, writer: 1, owner: 2 };

export function parseRole(value: unknown): RoomRole | undefined {
  return typeof value === "string" && (ROLES as readonly string[]).includes(value) ? (value as RoomRole) : undefined;
}

/** Who asks: a role, the invite it came with (none: the server's token) and the name that invite fixes. */
export interface Caller {
  role: RoomRole;
  inviteId?: string;
  name?: string;
  /** An invite's expiry (ms), for the channels it opens (watch.ts). */
  expiresAt?: number;
}

/** The server's token (or a backend without one). */
export const OWNER: Caller = { role: "owner" };

/** The least role each action needs, and how a refusal names it ("a viewer may not …"). */
export const TABLE = {
  chatToRoom: ["viewer", "talk to the room"],
  rename: ["viewer", "change their name"],
  watch: ["viewer", "watch"],
  previewRead: ["viewer", "open a preview"],
  askAgent: ["writer", "ask the agent"],
  runCommand: ["writer", "run commands"],
  interrupt: ["writer", "interrupt commands"],
  cancel: ["writer", "cancel the agent's turn"],
  writeFiles: ["writer", "change files"],
  startProcess: ["writer", "start background processes"],
  killProcess: ["writer", "stop background processes"],
  usePort: ["writer", "send requests to the sandbox's ports"],
  openTerminal: ["writer", "open the terminal"],
  typeIntoTerminal: ["writer", "type into the terminal"],
  resizeTerminal: ["writer", "size the terminal"],
  closeTerminal: ["writer", "close the terminal"],
  takeCheckpoint: ["writer", "take checkpoints"],
  restoreCheckpoint: ["writer", "restore checkpoints"],
  deleteCheckpoint: ["writer", "delete checkpoints"],
  setPolicy: ["writer", "change the policy"],
  approve: ["writer", "answer approvals"],
  cleanup: ["owner", "clean the room up"],
  fork: ["owner", "fork the room"],
  setRole: ["owner", "change roles"],
  manageInvites: ["owner", "manage invites"],
  setModel: ["owner", "choose the model"],
} as const satisfies Record<string, readonly [RoomRole, string]>;

export type Action = keyof typeof TABLE;

export function may(role: RoomRole, action: Action): boolean {
  return RANK[role] >= RANK[TABLE[action][0]];
}

/** The contract's 403 for `role` doing `action`. */
export function forbidden(role: RoomRole, action: Action): ApiError {
  const article = role === "owner" ? "an" : "a";
  return new ApiError(403, "forbidden", { role: [`${article} ${role} may not ${TABLE[action][1]}`] });
}

/** Throws the 403 unless `role` may do `action`. */
export function check(role: RoomRole, action: Action): void {
  if (!may(role, action)) throw forbidden(role, action);
}
