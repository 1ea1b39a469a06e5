// A room's background processes and listening ports in its container: the
// session they run in beside the commands' shell, a process's log stream
// read to its end, and the ports (with their preview URLs) the room sees.

import { parseSSEStream } from "@cloudflare/sandbox";
import type { LogEvent } from "@cloudflare/sandbox";
import type { Env } from "../env";
import type { SdkStub } from "./adapter";
import { PORTS_COMMAND, groupSignalCommand, listeningPorts, processCommand } from "./signal";
import type { ListeningPort, ProcessEvents, SandboxProcess } from "./types";
import { CONTROL_PORT, asStarting, message, release } from "./sdkio";

/** The session the background processes and the port looks run in (the sandbox's base environment). */
export const PROCESS_SESSION = "duet-processes";

/** Preview URLs (`exposePort`) per room and port, in this isolate. */
const previewUrls = new Map<string, string>();
/** The ports last seen listening per room, for the previews. */
const seenPorts = new Map<string, { at: number; ports: number[] }>();

/** Creates the session of the background processes where the container has none. */
export async function processSession(sandbox: SdkStub): Promise<void> {
  try {
    release(await sandbox.createSession({ id: PROCESS_SESSION, cwd: "/workspace" }));
  } catch (e) {
    if (!/exists/i.test(message(e))) throw e;
  }
}

/**
 * `startProcess` of the wrapper (src/sandbox/signal.ts) and its log
 * stream (`streamProcessLogs`) read until it ends. The SDK's killProcess
 * ignores its signal, so signals are `kill` commands of their own.
 */
export async function startProcess(sandbox: SdkStub, roomId: string, id: string, cmd: string, events: ProcessEvents): Promise<SandboxProcess> {
  // Unique in the container across cleanups and rooms' restarts.
  const processId = `duet-${id}-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await processSession(sandbox);
    release(await sandbox.startProcess(processCommand(processId, cmd), { processId, autoCleanup: false, sessionId: PROCESS_SESSION }));
  } catch (e) {
    throw asStarting(e);
  }
  void readLogs(sandbox, roomId, processId, events);
  return {
    signal: async (signal) => {
      release(await sandbox.startProcess(groupSignalCommand(signal, processId), { sessionId: PROCESS_SESSION }));
    },
  };
}

async function readLogs(sandbox: SdkStub, roomId: string, processId: string, events: ProcessEvents): Promise<void> {
  let code: number | null = null;
  try {
    const stream = await sandbox.streamProcessLogs(processId);
    for await (const event of parseSSEStream<LogEvent>(stream)) {
      if (event.type === "stdout" || event.type === "stderr") {
        if (event.data) events.onOutput(event.type, event.data);
      } else if (event.type === "exit" || (event.type as string) === "complete") {
        code = typeof event.exitCode === "number" ? event.exitCode : null;
        break;
      } else if (event.type === "error") {
        break;
      }
    }
  } catch (e) {
    console.error(`the log of process ${processId} in room ${roomId} broke off: ${message(e)}`);
  }
  events.onExit(code);
}

/** /proc/net/tcp{,6} of the container while it runs (never starting it); the SDK's own port left out. */
export async function listeningPortsOf(sandbox: SdkStub, env: Env, roomId: string): Promise<ListeningPort[]> {
  const state = await sandbox.getState();
  if (state.status !== "running" && state.status !== "healthy") return [];
  // Beside the commands' shell, which may be busy; no session object (its stubs would pin the room's object).
  let table;
  try {
    table = await sandbox.execWithSessionToken(PORTS_COMMAND, PROCESS_SESSION);
  } catch {
    // A container without the session yet (no process started in it).
    await processSession(sandbox);
    table = await sandbox.execWithSessionToken(PORTS_COMMAND, PROCESS_SESSION);
  }
  const ports = listeningPorts(table.stdout).filter((p) => p !== CONTROL_PORT);
  return Promise.all(ports.map(async (port) => ({ port, ...(await previewUrl(sandbox, env, roomId, port)) })));
}

/** The `exposePort` URL of `port` under DUET_PREVIEW_HOST, where one is set (ports 1024-65535 only). */
async function previewUrl(sandbox: SdkStub, env: Env, roomId: string, port: number): Promise<{ url?: string }> {
  const hostname = env.DUET_PREVIEW_HOST;
  if (!hostname || port < 1024) return {};
  const key = `${roomId}:${port}`;
  let url = previewUrls.get(key);
  if (url === undefined) {
    try {
      url = (await sandbox.exposePort(port, { hostname })).url;
      previewUrls.set(key, url);
    } catch (e) {
      console.error(`exposing port ${port} of room ${roomId} failed: ${message(e)}`);
      return {};
    }
  }
  return { url };
}

/** Whether `port` listens, as looked at most a second ago in this isolate. */
export async function listens(sandbox: SdkStub, env: Env, roomId: string, port: number): Promise<boolean> {
  const seen = seenPorts.get(roomId);
  if (seen && Date.now() - seen.at < 1000) return seen.ports.includes(port);
  const ports = (await listeningPortsOf(sandbox, env, roomId)).map((p) => p.port);
  seenPorts.set(roomId, { at: Date.now(), ports });
  return ports.includes(port);
}
