// What the agent knows of the project, through the Worker against the fake
// model (which records what it was sent) and the real sandbox:
// /workspace/AGENTS.md as the second system message, read afresh each turn
// and cut at DUET_AGENTS_MD_BYTES (16384 here), and the files a question
// names with `@path` (docs/protocol.md "What the agent knows of the project").
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ORIGIN, TOKEN, chunked, get, modelRequests, post, room, script, type Json } from "./support";

const HEADER = "[the project's instructions: /workspace/AGENTS.md]";

async function put(r: string, path: string, body: string | Uint8Array): Promise<void> {
  const res = await SELF.fetch(`${ORIGIN}/api/rooms/${r}/files/${path}`, { method: "PUT", headers: { authorization: `Bearer ${TOKEN}` }, body });
  expect(res.status, await res.text()).toBe(200);
}

async function exec(r: string, cmd: string): Promise<void> {
  const { status, body } = await post(`/api/rooms/${r}/sandbox/exec`, { cmd, userId: "ada" });
  expect([status, body.result?.exitCode], JSON.stringify(body)).toEqual([200, 0]);
}

async function ask(r: string, text: string): Promise<Json> {
  const { status, body } = await post(`/api/rooms/${r}/message`, { text, userId: "ada" });
  expect(status, JSON.stringify(body)).toBe(200);
  return body;
}

/** The messages of each request the model got for `key`. */
async function sent(key: string): Promise<{ role: string; content: string }[][]> {
  return (await modelRequests(key)).map((r) => r.body.messages);
}

describe("AGENTS.md", () => {
  it("is the second system message, read afresh each turn, and absent once deleted", async () => {
    const r = room("ctx");
    const key = await script(r, [chunked("One.", 2), chunked("Two.", 2), chunked("Three.", 2)]);
    await put(r, "AGENTS.md", "Use tabs.\nRun `make test` before you say done.\n");
    await ask(r, `first ${key}`);
    await put(r, "AGENTS.md", "Use spaces now.");
    await ask(r, `second ${key}`);
    const deleted = await SELF.fetch(`${ORIGIN}/api/rooms/${r}/files/AGENTS.md?userId=ada`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(deleted.status).toBe(200);
    await ask(r, `third ${key}`);
    const [first, second, third] = await sent(r);
    expect(first[0].role).toBe("system");
    expect(first[1]).toEqual({ role: "system", content: `${HEADER}\nUse tabs.\nRun \`make test\` before you say done.\n` });
    expect(first[first.length - 1].content).toBe(`ada: first ${key}`);
    expect(second[1]).toEqual({ role: "system", content: `${HEADER}\nUse spaces now.` });
    expect(third.filter((m) => m.role === "system").length).toBe(1);
    expect(third.map((m) => m.content).join("\n")).not.toContain(HEADER);
  });

  it("is cut at the limit, back to a whole character, with a note", async () => {
    const r = room("ctx");
    const key = await script(r, [chunked("Ok.", 2)]);
    // 16383 ASCII bytes, then a 3-byte character across the limit, then more.
    const text = "a".repeat(16_383) + "€" + "b".repeat(3_000);
    const size = new TextEncoder().encode(text).length;
    await put(r, "AGENTS.md", text);
    await ask(r, `long ${key}`);
    const [messages] = await sent(r);
    expect(messages[1].content).toBe(`${HEADER}\n${"a".repeat(16_383)}\n[AGENTS.md is ${size} bytes: only the first 16384 are shown]`);
  });

  it("sends nothing for an empty file, a folder or a symlink, and a note for one that is not text", async () => {
    const r = room("ctx");
    const key = await script(r, [chunked("A.", 2), chunked("B.", 2), chunked("C.", 2), chunked("D.", 2)]);
    await put(r, "AGENTS.md", "");
    await ask(r, `empty ${key}`);
    await exec(r, "rm AGENTS.md && mkdir AGENTS.md");
    await ask(r, `folder ${key}`);
    await exec(r, "rmdir AGENTS.md && printf 'secret' > real.md && ln -s real.md AGENTS.md");
    await ask(r, `symlink ${key}`);
    await exec(r, "rm AGENTS.md && printf 'ab\\377\\376cd' > AGENTS.md");
    await ask(r, `binary ${key}`);
    const [empty, folder, symlink, binary] = await sent(r);
    for (const messages of [empty, folder, symlink]) {
      expect(messages.filter((m) => m.role === "system").length).toBe(1);
      expect(messages.map((m) => m.content).join("\n")).not.toContain("secret");
    }
    expect(binary[1]).toEqual({ role: "system", content: `${HEADER}\n[AGENTS.md is 6 bytes and not text: not shown]` });
  });
});

describe("@path", () => {
  it("inlines the named files into the question as the model sees it; the stored message is as written", async () => {
    const r = room("ctx");
    const key = await script(r, [chunked("Seen.", 2)]);
    await put(r, "src/main.rs", "fn main() {}\n");
    await put(r, "notes.txt", "todo: tests");
    await put(r, "img.bin", new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe]));
    await exec(r, "mkdir -p docs && ln -s notes.txt link.txt");
    const question = `why does @src/main.rs fail (see @notes.txt, @missing.txt)? not @../etc/passwd, @/etc/passwd, @docs, @link.txt or @img.bin; again @notes.txt; an email a@b.c; a lone @ ${key}`;
    const body = await ask(r, question);
    expect(body.messages.find((m: Json) => m.role === "user").text).toBe(question);
    const [messages] = await sent(r);
    const last = messages[messages.length - 1];
    expect(last.role).toBe("user");
    expect(last.content).toBe(
      `ada: ${question}\n\n` +
        "[@src/main.rs: 13 bytes]\nfn main() {}\n\n\n" +
        "[@notes.txt: 11 bytes]\ntodo: tests\n\n" +
        "[@missing.txt: no such file in /workspace]\n\n" +
        "[@../etc/passwd: not a path inside /workspace]\n\n" +
        "[@/etc/passwd: not read: at most 4 files are inlined in a question]\n\n" +
        "[@docs: not read: at most 4 files are inlined in a question]\n\n" +
        "[@link.txt: not read: at most 4 files are inlined in a question]\n\n" +
        "[@img.bin: not read: at most 4 files are inlined in a question]",
    );
  });

  it("says plainly what cannot be inlined: outside, a folder, a symlink, not text", async () => {
    const r = room("ctx");
    const key = await script(r, [chunked("Hm.", 2)]);
    await put(r, "notes.txt", "x");
    await put(r, "img.bin", new Uint8Array([0x89, 0x50, 0xff, 0xfe]));
    await exec(r, "mkdir -p docs && ln -s notes.txt link.txt");
    await ask(r, `@/etc/passwd @docs @link.txt @img.bin ${key}`);
    const [messages] = await sent(r);
    expect(messages[messages.length - 1].content).toBe(
      `ada: @/etc/passwd @docs @link.txt @img.bin ${key}\n\n` +
        "[@/etc/passwd: not a path inside /workspace]\n\n" +
        "[@docs: a folder, not a file]\n\n" +
        "[@link.txt: not a path inside /workspace]\n\n" +
        "[@img.bin: 4 bytes and not text: not shown]",
    );
  });

  it("cuts a long file at 32768 bytes with a note", async () => {
    const r = room("ctx");
    const key = await script(r, [chunked("Long.", 2)]);
    await put(r, "big.txt", "é".repeat(20_000));
    await ask(r, `read @big.txt ${key}`);
    const [messages] = await sent(r);
    expect(messages[messages.length - 1].content).toBe(
      `ada: read @big.txt ${key}\n\n[@big.txt: 40000 bytes]\n${"é".repeat(16_384)}\n[@big.txt is 40000 bytes: only the first 32768 are shown]`,
    );
  });

  it("leaves @agent at the start of a line alone, and only the question is read", async () => {
    const r = room("ctx");
    const key = await script(r, [chunked("Hi.", 2), chunked("Again.", 2)]);
    await put(r, "agent", "a file named agent");
    await put(r, "old.txt", "old contents");
    await ask(r, `look at @old.txt ${key}`);
    await ask(r, `@agent hello\n@agent, and ask @agent ${key}`);
    const [, second] = await sent(r);
    // The earlier question is history as it was written.
    expect(second.some((m) => m.content === `ada: look at @old.txt ${key}`)).toBe(true);
    expect(second[second.length - 1].content).toBe(`ada: @agent hello\n@agent, and ask @agent ${key}\n\n[@agent: 18 bytes]\na file named agent`);
  });

  it("keeps a question without mentions as it is", async () => {
    const r = room("ctx");
    const key = await script(r, [chunked("Fine.", 2)]);
    await ask(r, `plain question ${key}`);
    const [messages] = await sent(r);
    expect(messages[messages.length - 1].content).toBe(`ada: plain question ${key}`);
    expect((await get(`/api/rooms/${r}/messages`)).body.messages[0].text).toBe(`plain question ${key}`);
  });
});
