// The pieces of the processes and ports that need no sandbox: a log's
// 64 KiB tail, the process wrapper the stand-in reads back, the kernel's
// TCP table, default names, and the preview's cookie credential.
import { describe, expect, it } from "vitest";
import { confineCookies } from "../src/preview";
import { http1 } from "../dev/http1";
import { LogTail } from "../src/processes";
import { defaultProcessName } from "../src/protocol";
import { GROUP_SIGNAL_COMMAND, groupSignalCommand, listeningPorts, parseProcessCommand, processCommand, tcpTable } from "../src/sandbox/signal";

describe("process units", () => {
  it("keeps the last bytes of a log, dropping a character the limit cuts", () => {
    const tail = new LogTail("", 8);
    tail.append("abc");
    tail.append("défg");
    expect(tail.value()).toBe("abcdéfg");
    tail.append("h");
    expect(tail.value()).toBe("bcdéfgh");
    tail.append("€€€");
    // The first euro would be cut: it goes whole.
    expect(tail.value()).toBe("€€");
    const big = new LogTail();
    for (let i = 0; i < 3000; i++) big.append(`line ${i}\n`.padEnd(64, "."));
    expect(new TextEncoder().encode(big.value()).length).toBeLessThanOrEqual(64 * 1024);
    expect(big.value().endsWith("line 2999\n".padEnd(64, "."))).toBe(true);
  });

  it("writes commands the stand-in reads back, quotes and all", () => {
    for (const cmd of ["python3 -m http.server 8000", "echo 'it'\\''s' \"$HOME\"; exit 3", "a\nb"]) {
      expect(parseProcessCommand(processCommand("duet-p1-abc", cmd))).toEqual(["duet-p1-abc", cmd]);
    }
    expect(parseProcessCommand("echo hi")).toBeUndefined();
    expect(GROUP_SIGNAL_COMMAND.exec(groupSignalCommand("TERM", "duet-p2-x"))?.slice(1)).toEqual(["TERM", "duet-p2-x"]);
  });

  it("reads the listening ports of /proc/net/tcp and tcp6", () => {
    const table = [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0",
      "   1: 0100007F:1F40 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0",
      "   2: 00000000:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0",
      "  sl  local_address                         remote_address                        st tx_queue rx_queue",
      "   0: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000",
      "   1: 00000000000000000000000001000000:15B3 00000000000000000000000000000000:0000 0A 00000000:00000000",
    ].join("\n");
    expect(listeningPorts(table)).toEqual([3000, 5555, 8000]);
    expect(listeningPorts(tcpTable([22, 8000]))).toEqual([22, 8000]);
    expect(listeningPorts("")).toEqual([]);
  });

  it("names a process after its program", () => {
    expect(defaultProcessName("python3 -m http.server 8000")).toBe("python3");
    expect(defaultProcessName("/usr/bin/env X=1 node")).toBe("env");
    expect(defaultProcessName("   ")).toBe("process");
  });

  it("keeps an app's cookies to its own host, and drops one named as Duet's", () => {
    const headers = new Headers();
    headers.append("set-cookie", "tracker=1; Domain=localhost; Path=/; HttpOnly");
    headers.append("set-cookie", "duet_preview=forged; Path=/");
    headers.append("set-cookie", "b=2");
    const kept = confineCookies(new Response("x", { headers })).headers.getSetCookie();
    expect(kept).toEqual(["tracker=1; Path=/; HttpOnly", "b=2"]);
  });

  it("speaks one HTTP/1.1 exchange over a byte stream, chunked or not", async () => {
    const exchange = async (answer: string, pieces: number) => {
      const sent: Uint8Array[] = [];
      const bytes = new TextEncoder().encode(answer);
      const step = Math.ceil(bytes.length / pieces);
      const readable = new ReadableStream<Uint8Array>({
        start(c) {
          for (let i = 0; i < bytes.length; i += step) c.enqueue(bytes.slice(i, i + step));
          c.close();
        },
      });
      const writable = new WritableStream<Uint8Array>({ write: (chunk) => void sent.push(chunk) });
      const req = new Request("http://localhost:8000/a?b=1", { method: "POST", body: "hi", headers: { "x-one": "1" } });
      const res = await http1(req, { readable, writable });
      const request = new TextDecoder().decode(sent[0]);
      return { res, request, body: await res.text() };
    };
    const chunked = await exchange("HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n", 9);
    expect(chunked.res.status).toBe(201);
    expect(chunked.body).toBe("hello, world");
    expect(chunked.res.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(chunked.request.startsWith("POST /a?b=1 HTTP/1.1\r\n")).toBe(true);
    expect(chunked.request).toContain("x-one: 1\r\n");
    expect(chunked.request).toContain("connection: close\r\n");
    expect(chunked.request.endsWith("content-length: 2\r\nconnection: close\r\n\r\nhi")).toBe(true);
    const sized = await exchange("HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabcdef", 4);
    expect(sized.body).toBe("abc");
    const closed = await exchange("HTTP/1.0 404 Not Found\r\n\r\nuntil the end", 2);
    expect(closed.res.status).toBe(404);
    expect(closed.body).toBe("until the end");
  });
});
