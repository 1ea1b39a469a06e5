// The pure parts of the archive routes: the tar checker a push streams
// through (src/tar.ts: what it refuses, in duet serve's words, whatever
// the chunks' sizes; long names; the disk's budget) and the tidying of
// git's diff (src/diff.ts: headers as git's own diff writes them, the path
// filters, the routes' scratch left out, long lines in pieces).
import { describe, expect, it } from "vitest";
import { tidyDiff, unquote } from "../src/diff";
import { RefusedMember, TarChecker } from "../src/tar";
import { tarOf, type Member } from "./tars";

const enc = new TextEncoder();

/** Checks `tar` in chunks of `size` bytes: its summary, or what it refused. */
function check(tar: Uint8Array, size = tar.byteLength, allowed = Number.POSITIVE_INFINITY) {
  const checker = new TarChecker(allowed, () => new Error("disk full"));
  try {
    for (let at = 0; at < tar.byteLength; at += size) checker.push(tar.subarray(at, at + size));
    return checker.finish();
  } catch (e) {
    if (e instanceof RefusedMember) return { refused: e.message };
    return { error: (e as Error).message };
  }
}

describe("a push's tar", () => {
  const good: Member[] = [
    { name: "./", type: "5" },
    { name: "./src/", type: "5" },
    { name: "./src/main.rs", data: "fn main() {}\n" },
    { name: "./bin.dat", data: new Uint8Array([0, 1, 2, 255]) },
    { name: "./src/link", type: "2", link: "../bin.dat" },
    { name: `./${"déjà/".repeat(30)}long.txt`, data: "x" },
  ];

  it("is summed up the same whatever the chunks' sizes", () => {
    const tar = tarOf(good);
    const whole = check(tar);
    expect(whole).toEqual({
      files: 3,
      bytes: 13 + 4 + 1,
      names: ["src", "src/main.rs", "bin.dat", "src/link", `${"déjà/".repeat(30)}long.txt`],
    });
    for (const size of [1, 7, 511, 512, 513, 4096]) expect(check(tar, size), `chunks of ${size}`).toEqual(whole);
  });

  it("refuses each hostile member by name, in duet serve's words", () => {
    const cases: [Member[], string][] = [
      [[{ name: "../etc/passwd", data: "x" }], "../etc/passwd: leaves the folder"],
      [[{ name: "a/../../b", data: "x" }], "a/../../b: leaves the folder"],
      [[{ name: "/etc/passwd", data: "x" }], "/etc/passwd: is absolute"],
      [[{ name: "", data: "x" }], ": has an empty name"],
      [[{ name: "a", data: "x" }, { name: "b", type: "1", link: "a" }], "b: is a hard link"],
      [[{ name: "tty", type: "3" }], "tty: is a device node"],
      [[{ name: "disk", type: "4" }], "disk: is a device node"],
      [[{ name: "pipe", type: "6" }], "pipe: is a FIFO"],
      [[{ name: "sparse", type: "S" }], "sparse: is not a folder, a regular file or a symlink"],
      [[{ name: "l", type: "2", link: "/etc" }], "l: is a symlink out of the folder (absolute target)"],
      [[{ name: "d/l", type: "2", link: "../../x" }], "d/l: is a symlink out of the folder"],
      [[{ name: "l", type: "2", link: "" }], "l: is a symlink to nothing"],
      [[{ name: "l", type: "2", link: "d" }, { name: "l/f", data: "x" }], "l/f: passes through a symlink"],
      [[{ name: "a", data: "x" }, { name: "a/b", data: "y" }], "a/b: is inside a file"],
      [[{ name: "x", rawName: new Uint8Array([0x66, 0xff, 0x66]), data: "x" }], "f\ufffdf: is not UTF-8"],
    ];
    for (const [members, refused] of cases) {
      expect(check(tarOf(members)), refused).toEqual({ refused });
      expect(check(tarOf(members), 100), `${refused} in pieces`).toEqual({ refused });
    }
    // A symlink that stays inside is fine, even through `..`.
    expect(check(tarOf([{ name: "d/e/l", type: "2", link: "../../f" }]))).toMatchObject({ names: ["d/e/l"] });
  });

  it("says a body that is not a tar, or is cut short, is not one", () => {
    expect(check(enc.encode("not a tar at all"))).toEqual({
      refused: "(archive): is not a tar archive, or it is cut short: the archive ended in the middle of a member",
    });
    const garbage = new Uint8Array(512).fill(0x41);
    expect(check(garbage)).toEqual({ refused: "(archive): is not a tar archive, or it is cut short: a header's checksum is wrong" });
    const tar = tarOf([{ name: "a", data: "x".repeat(2000) }]);
    expect(check(tar.subarray(0, 1000))).toMatchObject({ refused: expect.stringMatching(/^\(archive\): is not a tar archive, or it is cut short/) });
  });

  it("stops at the disk's budget, counting files' bytes", () => {
    const tar = tarOf([
      { name: "a", data: "x".repeat(600) },
      { name: "b", data: "y".repeat(600) },
    ]);
    expect(check(tar, 512, 1200)).toMatchObject({ files: 2, bytes: 1200 });
    expect(check(tar, 512, 1199)).toEqual({ error: "disk full" });
  });
});

/** `text` through tidyDiff(filters) in chunks of `size` bytes. */
async function tidied(text: string | Uint8Array, filters: string[] = [], size = 5): Promise<string> {
  const bytes = typeof text === "string" ? enc.encode(text) : text;
  const source = new ReadableStream<Uint8Array>({
    start(c) {
      for (let at = 0; at < bytes.byteLength; at += size) c.enqueue(bytes.slice(at, at + size));
      c.close();
    },
  });
  return new Response(source.pipeThrough(tidyDiff(filters))).text();
}

const NEW_FILE = "diff --git b/n b/n\nnew file mode 100644\nindex 0000000..c1b0730\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x\n";
const GONE = "diff --git a/gone a/gone\ndeleted file mode 100644\nindex bca70f3..0000000\n--- a/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-q\n";
const CHANGED = "diff --git a/src/f b/src/f\nindex 422c2b7..0f7bc76 100644\n--- a/src/f\n+++ b/src/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";

describe("a diff's tidying", () => {
  it("names new and deleted files a/P b/P, as git's own diff does", async () => {
    expect(await tidied(CHANGED + GONE + NEW_FILE)).toBe(
      CHANGED + GONE.replace("diff --git a/gone a/gone", "diff --git a/gone b/gone") + NEW_FILE.replace("diff --git b/n b/n", "diff --git a/n b/n"),
    );
    const quoted = 'diff --git "b/sp ace/t\\tx" "b/sp ace/t\\tx"\nnew file mode 100644\n';
    expect(await tidied(quoted)).toBe('diff --git "a/sp ace/t\\tx" "b/sp ace/t\\tx"\nnew file mode 100644\n');
    expect(unquote('"sp ace/t\\tx \\303\\251"')).toBe("sp ace/t\tx é");
  });

  it("keeps only the files the path filters name, and never the routes' scratch", async () => {
    expect(await tidied(CHANGED + GONE + NEW_FILE, ["src"])).toBe(CHANGED);
    expect(await tidied(CHANGED + GONE + NEW_FILE, ["gone", "n"])).toBe(
      GONE.replace("a/gone a/gone", "a/gone b/gone") + NEW_FILE.replace("b/n b/n", "a/n b/n"),
    );
    expect(await tidied(CHANGED, ["sr"])).toBe("");
    const scratch = NEW_FILE.replaceAll("b/n", "b/.duet-push-1234/parts/part-000000");
    expect(await tidied(scratch + CHANGED)).toBe(CHANGED);
  });

  it("passes long lines and bytes that are not UTF-8 through as they are", async () => {
    const long = `+${"z".repeat(100_000)}\n`;
    const bytes = new Uint8Array([...enc.encode(CHANGED), 0x2b, 0xff, 0xfe, 0x0a, ...enc.encode(long)]);
    const out = new Uint8Array(await new Response(
      new ReadableStream<Uint8Array>({
        start(c) {
          for (let at = 0; at < bytes.byteLength; at += 3) c.enqueue(bytes.slice(at, at + 3));
          c.close();
        },
      }).pipeThrough(tidyDiff([])),
    ).arrayBuffer());
    expect([...out]).toEqual([...bytes]);
  });
});
