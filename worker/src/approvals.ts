// The room's approval policy for the agent's commands (docs/protocol.md
// "Invites, roles and approvals"): `auto`, `ask` or `off`, the allow list
// of commands that never ask (the server's DUET_APPROVAL_ALLOW, then the
// room's), and the requests that wait for a writer or owner: their
// `duet_approval` frames, the state's `approvals`, the answer, the timeout
// and the withdrawal when the turn is cancelled. The rules are
// src/protocol/access.rs's.

import { ApiError, ok, type Reply } from "./http";

export type Policy = "auto" | "ask" | "off";

const POLICIES: readonly Policy[] = ["auto", "ask", "off"];

export function parsePolicy(value: unknown): Policy | undefined {
  return typeof value === "string" && (POLICIES as readonly string[]).includes(value) ? (value as Policy) : undefined;
}

/** An agent's command waiting for a person (`approvals` of the state). */
export interface Approval {
  approvalId: string;
  turnId: string;
  cmd: string;
}

/** The block text of an agent's command that was not run. */
export const deniedBy = (name: string) => `denied by ${name}`;
export const NOT_APPROVED_IN_TIME = "not approved in time";
export const POLICY_OFF = "not run: the room's policy is off";
/** Who decides when nobody answered in time. */
const TIMEOUT_BY = "duet";

/** Characters that make a command ask even when an entry starts it: they chain, redirect or substitute. */
const SHELL_SPECIALS = /[;&|<>$`()\n]/;

/**
 * Whether `cmd` never needs asking under `allow`: it holds none of the
 * shell's chaining, redirecting or substituting characters, and its first
 * words are an entry's.
 */
export function allowedWithoutAsking(cmd: string, allow: readonly string[]): boolean {
  if (SHELL_SPECIALS.test(cmd)) return false;
  const have = words(cmd);
  return allow.some((entry) => {
    const want = words(entry);
    return want.length > 0 && have.length >= want.length && want.every((w, i) => have[i] === w);
  });
}

/** A run of Rust's White_Space (what `split_whitespace` splits at). */
const WHITE_RUN = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/;

/** A command's words (`split_whitespace`). */
function words(text: string): string[] {
  return text.split(WHITE_RUN).filter((w) => w !== "");
}

/** An allow-list entry as it is matched: its words, one space between. */
export function collapse(entry: string): string {
  return words(entry).join(" ");
}

/** An allow list as a flag or var gives it: comma-separated entries, each's words kept, empty ones dropped. */
export function parseAllowList(text: string | undefined): string[] {
  return (text ?? "")
    .split(",")
    .map(collapse)
    .filter((e) => e !== "");
}

/** How a request ended. */
export type Decision = { approved: true } | { approved: false; by: string; timedOut: boolean } | { withdrawn: true };

/** The frames of `duet_approval`, in duet serve's field order. */
export function approvalRequestFrame(a: Approval): string {
  return JSON.stringify({ type: "duet_approval", phase: "request", approvalId: a.approvalId, turnId: a.turnId, cmd: a.cmd });
}

function decidedFrame(approvalId: string, approved: boolean, by: string): string {
  return JSON.stringify({ type: "duet_approval", phase: "decided", approvalId, approved, by });
}

function withdrawnFrame(approvalId: string): string {
  return JSON.stringify({ type: "duet_approval", phase: "withdrawn", approvalId });
}

export function approvalJson(a: Approval): object {
  return { approvalId: a.approvalId, turnId: a.turnId, cmd: a.cmd };
}

/** How the approvals reach the room. */
export interface ApprovalHost {
  /** A frame to every socket. */
  all(text: string): void;
  /** The state's `approvals` changed. */
  changed(open: Approval[]): void;
}

interface Open {
  approval: Approval;
  settle(d: Decision): void;
}

/** The requests of a room: open ones in order, and the ids answered or withdrawn (unique while loaded). */
export class Approvals {
  private readonly open: Open[] = [];
  private readonly closed = new Set<string>();
  private last = 0;

  constructor(
    private readonly host: ApprovalHost,
    private readonly timeoutMs: number,
  ) {}

  list(): Approval[] {
    return this.open.map((o) => o.approval);
  }

  /**
   * Asks the room about command `cmd` of turn `turnId`; resolves with the
   * answer, `approved: false` by "duet" after the timeout, or withdrawn
   * when `signal` aborts (the turn was cancelled).
   */
  request(cmd: string, turnId: string, signal: AbortSignal): Promise<Decision> {
    const approval: Approval = { approvalId: `a${++this.last}`, turnId, cmd };
    return new Promise<Decision>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => {
        if (this.close(approval.approvalId)) {
          this.host.all(withdrawnFrame(approval.approvalId));
          this.host.changed(this.list());
        }
        entry.settle({ withdrawn: true });
      };
      const entry: Open = {
        approval,
        settle: (d) => {
          if (timer !== undefined) clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
          resolve(d);
        },
      };
      if (signal.aborted) return resolve({ withdrawn: true });
      this.open.push(entry);
      signal.addEventListener("abort", onAbort, { once: true });
      // The timer lives in the object's memory, as the request does: neither outlives it.
      timer = setTimeout(() => this.decide(approval.approvalId, false, TIMEOUT_BY, true), this.timeoutMs);
      this.host.all(approvalRequestFrame(approval));
      this.host.changed(this.list());
    });
  }

  /** Answers request `approvalId` (`by` answered it): the `decided` frame, the state, then `{decided: true}`. */
  answer(approvalId: string, approved: boolean, by: string): Reply {
    if (this.closed.has(approvalId)) {
      // A withdrawn request is over too: nobody can answer it any more.
      throw new ApiError(409, "already decided", { approvalId: [`approval ${JSON.stringify(approvalId)} was decided already`] });
    }
    if (!this.decide(approvalId, approved, by)) {
      throw new ApiError(404, "no such approval", { approvalId: [`no approval ${JSON.stringify(approvalId)} in this room`] });
    }
    return ok({ decided: true });
  }

  private decide(approvalId: string, approved: boolean, by: string, timedOut = false): boolean {
    const entry = this.open.find((o) => o.approval.approvalId === approvalId);
    if (!entry || !this.close(approvalId)) return false;
    this.host.all(decidedFrame(approvalId, approved, by));
    this.host.changed(this.list());
    entry.settle(approved ? { approved: true } : { approved: false, by, timedOut });
    return true;
  }

  /** Takes a request off the open list; false when it was not open. */
  private close(approvalId: string): boolean {
    const i = this.open.findIndex((o) => o.approval.approvalId === approvalId);
    if (i < 0) return false;
    this.open.splice(i, 1);
    this.closed.add(approvalId);
    return true;
  }
}
