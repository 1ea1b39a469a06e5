// What the original worker trims (issue 10, item 4): `text` and `userId` of a
// message, and the whole agent reply at both ends, so that a reply with no
// prose starts with `Output (`.
import { describe, expect, it } from "vitest";
import { joined, post, room, script } from "./support";

describe("trims", () => {
  it("stores text and userId trimmed, over HTTP and rpc, and counts the limit after the trim", async () => {
    const r = room("trim");
    const { status, body } = await post(`/api/rooms/${r}/message`, { text: " \n hello there \t", userId: "  ada " });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.messages[0]).toMatchObject({ role: "user", text: "hello there", userId: "ada" });
    const padded = ` ${"x".repeat(8000)} \n`;
    expect((await post(`/api/rooms/${r}/message`, { text: padded })).status).toBe(200);
    const blank = await post(`/api/rooms/${r}/message`, { text: "hi", userId: " \t " });
    expect(blank.status).toBe(400);
    expect(Object.keys(blank.body.details)).toEqual(["userId"]);
    const s = await joined(r, "user=bob");
    const answer = await s.rpc("m", "message", [{ text: "  via rpc  ", userId: " cy " }]);
    expect(answer.success, JSON.stringify(answer)).toBe(true);
    const stored = answer.result.messages.find((m: { text: string }) => m.text === "via rpc");
    expect(stored.userId).toBe("cy");
    s.close();
  });

  it("trims the whole reply: a reply with no prose starts with Output (", async () => {
    const r = room("trim");
    const key = await script(r, [{ kind: "stream", pieces: ["  \n<run>echo hi</run>\n\n  "] }]);
    const { status, body } = await post(`/api/rooms/${r}/message`, { text: `run it ${key}` });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.reply).toBe("Output (echo hi):\nhi");
    expect(body.messages[1].text).toBe("Output (echo hi):\nhi");
  });
});
