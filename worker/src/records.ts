// The room's records (docs/protocol.md "Talking to each other, and the
// room's records"): what people did to the room, as the readable text a
// latecomer sees beside the event. The event's fields are the contract; the
// words follow `duet serve`'s where they can.

import type { RoomEvent } from "./protocol";

/** The text of a record; `cmd` is the command a `shell` record's shell ran (its event holds only the id). */
export function recordText(e: RoomEvent, cmd?: string): string {
  switch (e.kind) {
    case "cleanup":
      return `${e.by} cleaned up the room`;
    case "cancel":
      return `${e.by} cancelled the agent's turn`;
    case "interrupt":
      return `${e.by} interrupted \`${e.cmd}\``;
    case "upload":
      return `${e.by} uploaded ${e.path} (${e.size} ${e.size === 1 ? "byte" : "bytes"})`;
    case "rename":
      return `${e.from} is now ${e.to}`;
    case "shell": {
      const what = cmd !== undefined ? `\`${cmd}\`` : "a command";
      switch (e.reason) {
        case "exit":
          return `${what} ended the shell: the next command runs in a fresh shell in ${e.cwd}`;
        case "timeout":
          return `${what} timed out: the shell was replaced; the next command runs in ${e.cwd}`;
        case "stopped":
          return `${what} stopped the shell: it was replaced; the next command runs in ${e.cwd}`;
      }
    }
  }
}
