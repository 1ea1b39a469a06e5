// Node side of the worker's tests: the stand-in's `duet serve` (its real
// namespace sandbox, behind a random token of its own) and a fake model, a
// real HTTP server on loopback speaking the OpenAI streaming API with
// scripted replies. Both are stopped when the run ends.
//
// A test registers scripts under a key (POST /control/scripts) and puts
// `[[KEY]]` in its question; the model answers each request with the next
// script of the last key its conversation mentions. Scripts speak text,
// OpenAI's streamed tool calls (`tools`), or refuse a request that offers
// tools (`notools`: a 400 that leaves the script for the next request).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

const repo = resolve(process.cwd(), "..");

/** `$DUET_BIN`, else the repository's debug build. */
function duetBinary() {
  return process.env.DUET_BIN || join(repo, "target", "debug", "duet");
}

async function startDuet() {
  const bin = duetBinary();
  if (!existsSync(bin)) throw new Error(`no duet binary at ${bin}: run cargo build, or set DUET_BIN`);
  const dataDir = mkdtempSync(join(tmpdir(), "duet-worker-test-"));
  const token = randomBytes(16).toString("hex");
  const child = spawn(bin, ["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--token", token], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, DUET_LOG: process.env.DUET_TEST_LOG || "warn", DUET_TOKEN: "" },
  });
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise((ok, fail) => {
    child.once("exit", (code) => fail(new Error(`duet serve exited with ${code}`)));
    lines.once("line", (line) => {
      const m = /^duet: listening on (http:\/\/\S+)$/.exec(line);
      if (m) ok(m[1]);
      else fail(new Error(`duet serve said ${JSON.stringify(line)}`));
    });
  });
  const stop = async () => {
    if (child.exitCode === null) {
      // It unmounts its rooms' disks on SIGTERM: wait for it before removing them.
      const exited = new Promise((ok) => child.once("exit", ok));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { url, token, stop };
}

/** One SSE event carrying a piece of the answer. */
function event(piece) {
  const chunk = {
    id: "c1",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta: { content: piece }, finish_reason: null }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

const FINISH = `data: ${JSON.stringify({
  id: "c1",
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
})}\n\ndata: [DONE]\n\n`;

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/** One SSE event carrying a piece of the answer's tool calls. */
function toolEvent(call) {
  const chunk = { id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta: { tool_calls: [call] }, finish_reason: null }] };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

const TOOLS_FINISH = `data: ${JSON.stringify({
  id: "c1",
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }],
})}\n\ndata: [DONE]\n\n`;

/** Answers one chat request with `script`. */
async function answer(res, script) {
  const sse = () => res.writeHead(200, { "content-type": "text/event-stream" });
  const pieces = script.pieces ?? [];
  switch (script.kind) {
    case "status":
      res.writeHead(script.status, { "content-type": "application/json" });
      return res.end(script.body);
    case "whole":
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(
        JSON.stringify({
          id: "c1",
          object: "chat.completion",
          choices: [{ index: 0, message: { role: "assistant", content: script.text }, finish_reason: "stop" }],
        }),
      );
    case "tools":
      // Text, then each call: its name first, its arguments in the pieces given.
      sse();
      for (const p of pieces) res.write(event(p));
      for (const [index, call] of (script.calls ?? []).entries()) {
        res.write(toolEvent({ index, id: `call_${index}`, type: "function", function: { name: call.name, arguments: "" } }));
        for (const piece of call.args) res.write(toolEvent({ index, function: { arguments: piece } }));
      }
      return res.end(TOOLS_FINISH);
    case "stream":
      sse();
      for (const p of pieces) res.write(event(p));
      return res.end(FINISH);
    case "paced":
      sse();
      for (const p of pieces) {
        await sleep(script.ms);
        res.write(event(p));
      }
      return res.end(FINISH);
    case "broken":
      sse();
      for (const p of pieces) res.write(event(p));
      await sleep(200);
      return res.destroy();
    case "cut":
      sse();
      for (const p of pieces) res.write(event(p));
      return res.end();
    case "hang":
      sse();
      for (const p of pieces) res.write(event(p));
      return; // never ends; closed when the client goes or the run ends
    default:
      res.writeHead(500, { "content-type": "application/json" });
      return res.end(JSON.stringify({ error: { message: `unknown script ${script.kind}` } }));
  }
}

function readJson(req) {
  return new Promise((ok) => {
    // Decoded once: a character may be split between two chunks.
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      try {
        ok(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch {
        ok(null);
      }
    });
  });
}

async function startModel() {
  const scripts = new Map();
  const requests = new Map();
  const server = createServer(async (req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (req.method === "POST" && path === "/control/scripts") {
      const { key, scripts: list } = await readJson(req);
      scripts.set(key, [...(scripts.get(key) ?? []), ...list]);
      res.writeHead(200, { "content-type": "application/json" });
      return res.end("{}");
    }
    if (req.method === "GET" && path.startsWith("/control/requests/")) {
      const key = decodeURIComponent(path.slice("/control/requests/".length));
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify(requests.get(key) ?? []));
    }
    if (req.method === "GET" && path === "/v1/models") {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify({ object: "list", data: [{ id: "fake-model", object: "model" }] }));
    }
    if (req.method === "POST" && path === "/v1/chat/completions") {
      const body = await readJson(req);
      const text = (body?.messages ?? []).map((m) => String(m.content)).join("\n");
      const keys = [...text.matchAll(/\[\[([A-Za-z0-9_-]+)\]\]/g)].map((m) => m[1]);
      const key = keys[keys.length - 1] ?? "";
      requests.set(key, [...(requests.get(key) ?? []), { headers: req.headers, body }]);
      const queue = scripts.get(key) ?? [];
      if (queue[0]?.kind === "notools") {
        if (body?.tools !== undefined) {
          res.writeHead(400, { "content-type": "application/json" });
          return res.end(JSON.stringify({ error: { message: "tools are not supported by this model" } }));
        }
        return answer(res, queue.shift().then);
      }
      const next = queue.shift();
      return answer(res, next ?? { kind: "status", status: 500, body: '{"error":{"message":"no script left"}}' });
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address();
  const stop = () =>
    new Promise((ok) => {
      server.closeAllConnections();
      server.close(() => ok());
    });
  return { url: `http://127.0.0.1:${port}`, stop };
}

export default async function setup(project) {
  const [duet, model] = await Promise.all([startDuet(), startModel()]);
  project.provide("standinUrl", duet.url);
  project.provide("standinToken", duet.token);
  project.provide("modelUrl", model.url);
  project.provide("systemPromptFile", readFileSync(join(repo, "assets", "system_prompt.md"), "utf8"));
  return async () => {
    await Promise.all([duet.stop(), model.stop()]);
  };
}
