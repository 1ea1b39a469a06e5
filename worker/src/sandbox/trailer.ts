// Where the commands' shell is after a command, learnt in the same exec
// as the command (no second call to the sandbox): the command goes with a
// trailer, on a line of its own, that prints the shell's directory to
// stderr between markers carrying a nonce of this exec and exits with the
// command's status. It runs in a subshell (no variable of the shell
// changes) with tracing off (`set -x` in the shell shows nothing of it).
// The adapter strips it from the stream as output comes, so what the
// command printed reaches the room byte for byte.
//
// A command the trailer could change is sent as it is, and the directory
// asked for afterwards (`pwd`): one whose last line continues onto the
// next (a trailing backslash) or one with a here-document (`<<`), whose
// unterminated body would take the trailer in; and (adapter.ts) one with a
// directory or variables of its own, which the trailer would see instead
// of the shell's.

import { randomHex } from "../text";

/** The record separator: never in a path or output that the markers could be confused with. */
const RS = "\u001e";

/** Whether `cmd` may take the trailer without any change to what it does. */
export function takesTrailer(cmd: string): boolean {
  return !cmd.includes("<<") && !/(^|[^\\])(\\\\)*\\$/.test(cmd);
}

export class CwdTrailer {
  /** What precedes the directory on stderr; RS ends it. */
  private readonly marker: string;
  private readonly nonce: string;
  /** Stderr held back: a marker may be split across two events. */
  private held = "";
  private found = false;
  /** The shell's directory, once the trailer printed it. */
  cwd?: string;

  constructor(nonce = randomHex()) {
    this.nonce = nonce.replace(/[^0-9a-z]/gi, "");
    this.marker = `${RS}duet-cwd-${this.nonce}:`;
  }

  /**
   * The command as sent. The format is printf's: the markers' RS bytes are
   * made by printf, so a shell that echoes its input (`set -v`) shows no
   * marker.
   */
  wrap(cmd: string): string {
    return (
      `${cmd}\n` +
      `({ s=$?; builtin set +vx; } 2>/dev/null; builtin printf '\\036duet-cwd-%s:%s\\036' ${this.nonce} "$PWD" >&2; builtin exit $s)`
    );
  }

  /** Stderr as it comes: what of it is the command's (the marker and what may begin one held back). */
  stderr(data: string): string {
    if (this.found) return data;
    const text = this.held + data;
    this.held = "";
    const at = text.indexOf(this.marker);
    if (at >= 0) {
      const end = text.indexOf(RS, at + this.marker.length);
      if (end < 0) {
        this.held = text.slice(at);
        return text.slice(0, at);
      }
      this.found = true;
      const cwd = text.slice(at + this.marker.length, end);
      if (cwd.startsWith("/") && !cwd.includes("\n")) this.cwd = cwd;
      return text.slice(0, at) + text.slice(end + 1);
    }
    // A marker begins with RS, which no other part of it holds: only from the last RS can one begin.
    const rs = text.lastIndexOf(RS);
    if (rs >= 0 && this.marker.startsWith(text.slice(rs))) {
      this.held = text.slice(rs);
      return text.slice(0, rs);
    }
    return text;
  }

  /** At the stream's end: what was held back and is not the trailer's. */
  end(): string {
    const rest = this.held;
    this.held = "";
    return rest.startsWith(this.marker) ? "" : rest;
  }
}
