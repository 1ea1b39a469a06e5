// Reading a request object field by field, so that every bad field is
// named with the messages of `duet serve` (src/server/ops/): the reader and
// the field types several operations share (ops.ts parses each operation
// with them).

import { parseRole, type RoomRole } from "./access";
import { collapse } from "./approvals";
import { addDetail, isWhole, type Details, type JsonObject } from "./http";
import { type Addressee } from "./protocol";
import { charCount, isControl, nameProblem, trim } from "./text";

/** Most entries of a room's allow list, and the longest entry. */
const ALLOW_ENTRIES = 64;
const ALLOW_ENTRY_CHARS = 200;

/** Field-by-field reader of a request object that collects every problem. */
export class Fields {
  constructor(
    readonly obj: JsonObject,
    readonly details: Details,
  ) {}

  /** The field's value; JSON `null` counts as absent. */
  get(name: string): unknown {
    if (!Object.prototype.hasOwnProperty.call(this.obj, name)) return undefined;
    const v = this.obj[name];
    return v === null ? undefined : v;
  }

  /** Whether the field is a whole number, written as one (`isWhole`). */
  isWhole(name: string): boolean {
    return isWhole(this.obj, name);
  }

  problem(name: string, message: string): void {
    addDetail(this.details, name, message);
  }

  string(name: string): string | undefined {
    const v = this.get(name);
    if (v === undefined) return undefined;
    if (typeof v === "string") return v;
    this.problem(name, "must be a string");
    return undefined;
  }

  /** A `clientId`: 1 to 64 printable characters, made up by the client (src/server/ops/fields.rs client_id). */
  clientId(name: string): string | undefined {
    const s = this.string(name);
    if (s === undefined) return undefined;
    if (s === "" || charCount(s) > 64 || Array.from(s).some(isControl)) {
      this.problem(name, "must be 1 to 64 printable characters");
      return undefined;
    }
    return s;
  }

  requiredText(name: string): string | undefined {
    if (this.get(name) === undefined) {
      this.problem(name, "is required");
      return undefined;
    }
    const s = this.string(name);
    if (s === undefined) return undefined;
    if (trim(s) === "") {
      this.problem(name, "must not be empty");
      return undefined;
    }
    return s;
  }

  /** A required id (`processId`, `checkpointId`, …), trimmed. */
  requiredId(name: string): string | undefined {
    const raw = this.requiredText(name);
    return raw === undefined ? undefined : trim(raw);
  }

  /** A person's name (`userId`), trimmed. */
  name(name: string): string | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    const s = trim(raw);
    const p = nameProblem(s);
    if (p) {
      this.problem(name, p);
      return undefined;
    }
    return s;
  }

  plainString(name: string): string | undefined {
    const s = this.string(name);
    if (s === undefined) return undefined;
    if (s.includes("\0")) {
      this.problem(name, "must not contain NUL characters");
      return undefined;
    }
    return s;
  }

  /** A required `role`. */
  role(): RoomRole | undefined {
    if (this.get("role") === undefined) {
      this.problem("role", "is required");
      return undefined;
    }
    const role = parseRole(this.get("role"));
    if (role === undefined) this.problem("role", "must be owner, writer or viewer");
    return role;
  }

  /** `allow`: absent (undefined), an array of commands (white space collapsed), or refused (null). */
  allowList(): string[] | undefined | null {
    const value = this.get("allow");
    if (value === undefined) return undefined;
    const entries = Array.isArray(value) && value.every((e) => typeof e === "string") ? value.map((e) => collapse(e as string)) : undefined;
    if (entries && entries.length <= ALLOW_ENTRIES && entries.every((e) => e !== "" && charCount(e) <= ALLOW_ENTRY_CHARS)) return entries;
    this.problem("allow", "must be an array of at most 64 commands, each 1 to 200 characters");
    return null;
  }

  /** Whom a message is for: `to`, "agent" when absent; undefined when it is neither. */
  addressee(): Addressee | undefined {
    const to = this.get("to");
    if (to === undefined) return "agent";
    if (to === "agent" || to === "room") return to;
    this.problem("to", 'must be "agent" or "room"');
    return undefined;
  }
}

/** Whether `key` is an environment variable name. */
export function envKeyOk(key: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key);
}

/** A string as Rust's `{:?}` shows it (close enough: JSON's quoting). */
export function quoted(s: string): string {
  return JSON.stringify(s);
}
