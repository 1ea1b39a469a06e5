// The shell's directory learnt in the same exec as the command
// (src/sandbox/trailer.ts): the trailer is run by a real bash, and its
// marker is stripped from stderr however the stream is cut.
import { describe, expect, it } from "vitest";
import { CwdTrailer, takesTrailer } from "../src/sandbox/trailer";

const RS = "\u001e";

/** Feeds `parts` as stderr events; what the room gets, and the directory. */
function strip(t: CwdTrailer, parts: string[]): [string, string | undefined] {
  let out = "";
  for (const p of parts) out += t.stderr(p);
  out += t.end();
  return [out, t.cwd];
}

describe("the cwd trailer", () => {
  it("is stripped whole, the command's stderr kept byte for byte", () => {
    const t = new CwdTrailer("abc123");
    const printed = `oops\npartial${RS}duet-cwd-abc123:/workspace/a b${RS}`;
    expect(strip(t, [printed])).toEqual(["oops\npartial", "/workspace/a b"]);
  });

  it("is found when events cut it anywhere", () => {
    const printed = `err${RS}tail${RS}duet-cwd-n1:/tmp${RS}`;
    for (let i = 0; i <= printed.length; i++) {
      for (let j = i; j <= printed.length; j++) {
        const t = new CwdTrailer("n1");
        expect(strip(t, [printed.slice(0, i), printed.slice(i, j), printed.slice(j)])).toEqual([`err${RS}tail`, "/tmp"]);
      }
    }
  });

  it("passes what only looks like its start, and drops a marker cut off by the stream's end", () => {
    const t = new CwdTrailer("n2");
    expect(strip(t, [`a${RS}duet-cw`])).toEqual([`a${RS}duet-cw`, undefined]);
    const u = new CwdTrailer("n2");
    expect(strip(u, [`a${RS}duet-cwd-n2:/wor`])).toEqual(["a", undefined]);
    const v = new CwdTrailer("n2");
    expect(strip(v, [`${RS}duet-cwd-other:/x${RS}`])).toEqual([`${RS}duet-cwd-other:/x${RS}`, undefined]);
  });

  it("takes no directory that is not an absolute path on one line", () => {
    const t = new CwdTrailer("n3");
    expect(strip(t, [`${RS}duet-cwd-n3:relative${RS}`])).toEqual(["", undefined]);
  });

  it("is left off commands it could change", () => {
    expect(takesTrailer("true")).toBe(true);
    expect(takesTrailer("echo a \\\\")).toBe(true);
    expect(takesTrailer("echo a \\")).toBe(false);
    expect(takesTrailer("cat <<EOF\nx\nEOF")).toBe(false);
  });

  it("wraps into a command whose exit status and directory are the command's", () => {
    const t = new CwdTrailer("n4");
    const wrapped = t.wrap("cd /tmp; false");
    expect(wrapped.startsWith("cd /tmp; false\n(")).toBe(true);
    // What bash runs is checked end to end by the neutral exec tests (tests/it/neutral/server_exec.rs).
    expect(wrapped).toContain("builtin exit $s)");
  });
});
