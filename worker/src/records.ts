// The room's records (docs/protocol.md "Talking to each other, and the
// room's records"): what people did to the room, as the readable text a
// latecomer sees beside the event. The event's fields are the contract; the
// words are `duet serve`'s (src/server/room/records.rs).

import { type RoomEvent } from "./protocol";
import { charCount, firstChars, trim, trimEnd } from "./text";

/** The text of a record; `cmd` is the command after which a `shell` record's shell was replaced. */
export function recordText(e: RoomEvent, cmd?: string): string {
  switch (e.kind) {
    case "cleanup":
      return `${e.by} cleaned up the room`;
    case "cancel":
      return `${e.by} cancelled the agent's turn`;
    case "interrupt":
      return `${e.by} interrupted ${code(e.cmd)}`;
    case "upload":
      return `${e.by} uploaded ${e.path} (${bytes(e.size)})`;
    case "rename":
      return `${e.from} is now ${e.to}`;
    case "delete":
      return `${e.by} deleted ${e.path}`;
    case "checkpoint":
      return `${e.by} saved checkpoint ${e.name}`;
    case "restore":
      return `${e.by} restored checkpoint ${e.name}: /workspace is as it was then`;
    case "fork":
      return `${e.by} forked room ${e.from} into room ${e.to}`;
    case "policy":
      return `${e.by} set the agent's commands to ${e.policy}`;
    case "model":
      return `${e.by} set the agent's model to ${e.model}`;
    case "process":
      return `${e.by} started ${e.name} in the background: ${code(e.cmd)}`;
    case "edit":
      return `the agent edited ${e.path} (+${e.added} -${e.removed} lines)`;
    case "push":
      return `${e.by} pushed ${e.files} file${e.files === 1 ? "" : "s"} (${bytes(e.bytes)}) into /workspace${e.path === "" ? "" : `/${e.path}`}`;
    case "shell": {
      const next = nextCommand(e.cwd, e.reset);
      if (cmd === undefined) return `The shell was restarted: ${next}`;
      switch (e.reason) {
        case "exit":
          return `${code(cmd)} ended the shell: ${next}`;
        case "timeout":
          return `${code(cmd)} ran out of time: ${next}`;
        case "stopped":
          return `The shell was stopped while running ${code(cmd)}: ${next}`;
      }
    }
  }
}

/** Where the next command runs, after the shell was replaced. */
function nextCommand(cwd: string, reset: boolean): string {
  return reset
    ? `the next command runs in a fresh shell in ${cwd}`
    : `the next command runs in ${cwd}, with the exported variables kept`;
}

/** Characters of a command a record shows. */
const SHOWN = 60;

/** A command as a record shows it: in backticks, its first line, cut short. */
function code(cmd: string): string {
  const whole = trim(cmd);
  const [shown] = firstChars(trimEnd(whole.split("\n")[0]), SHOWN);
  return `\`${shown}${charCount(shown) < charCount(whole) ? "…" : ""}\``;
}

/** A size as people say it. */
function bytes(size: number): string {
  const KIB = 1024;
  if (size === 1) return "1 byte";
  if (size < KIB) return `${size} bytes`;
  if (size < KIB * KIB) return `${(size / KIB).toFixed(1)} KiB`;
  return `${(size / (KIB * KIB)).toFixed(1)} MiB`;
}
