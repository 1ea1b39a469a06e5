// `PUT` and `GET /api/rooms/{room}/archive/{path}` and `GET /diff`
// (docs/protocol.md "Archives: a folder in and out, and what changed"). A
// push streams through the Worker, its tar headers checked as they go
// (src/tar.ts; gzip undone first), into the room's sandbox, which unpacks it
// only once all of it arrived and passed; the room then takes its `push-N`
// checkpoint and stores its record. A folder goes out as a tar, and a diff
// as git writes it (tidied by src/diff.ts), both streamed from the sandbox.

import { check as allowed, type Caller } from "./access";
import { tidyDiff } from "./diff";
import type { Env } from "./env";
import { check, checkRoom, fileError, notFoundText, pathComponents, queryUser } from "./files";
import { ApiError, addDetail, bodyChunks, describe } from "./http";
import { roomDetails } from "./ops";
import { roomOp } from "./rooms";
import { roomSandbox } from "./sandbox/adapter";
import { DiskFull, InWorkspace, RefusedMember, type WorkspaceCopy } from "./sandbox/types";
import { TarChecker } from "./tar";

/** The folder of an archive route: "" is /workspace; otherwise the path rules of "Files". */
function folderOf(room: string, path: string, details = roomDetails(room)): string {
  return path.replace(/\/+$/, "") === "" ? checkRoom(room, details) : check(room, path, details);
}

/** A room operation's JSON answer, or its error answer thrown as it is. */
async function ask<T>(env: Env, room: string, op: object): Promise<T> {
  const res = await roomOp(env, room, op);
  if (!res.ok) throw new Answered(res);
  return (await res.json()) as T;
}

/** An answer the room gave, passed on whole. */
class Answered extends Error {
  constructor(readonly response: Response) {
    super(`the room answered ${response.status}`);
  }
}

function archiveError(e: unknown): Response {
  if (e instanceof Answered) return e.response;
  return fileError(e);
}

/** `PUT /api/rooms/{room}/archive/{path}?userId=NAME[&delete=1]` (body: a tar, or gzipped) */
export async function putArchive(env: Env, room: string, path: string, query: string, request: Request, caller: Caller): Promise<Response> {
  try {
    const details = roomDetails(room);
    const asked = queryUser(query, details);
    const dir = folderOf(room, path, details);
    allowed(caller.role, "writeFiles");
    const user = caller.name ?? asked;
    const mirror = new URLSearchParams(query).get("delete") === "1";
    const { free } = await ask<{ free: number }>(env, room, { kind: "disk_free" });
    const checker = new TarChecker(free, () => new DiskFull());
    const { deleted } = await unpack(env, room, dir, checked(request, checker), checker, mirror);
    const { files, bytes } = checker.summary;
    return await roomOp(env, room, { kind: "pushed", path: dir, files, bytes, deleted, user });
  } catch (e) {
    return archiveError(e);
  }
}

/** The sandbox's unpacking; a folder of the archive that is a symlink in the workspace is refused as the first member beneath it. */
async function unpack(env: Env, room: string, dir: string, tar: AsyncIterable<Uint8Array>, checker: TarChecker, mirror: boolean): Promise<{ deleted: number }> {
  try {
    return await roomSandbox(env, room).unpackArchive(dir, tar, mirror);
  } catch (e) {
    if (!(e instanceof InWorkspace)) throw e;
    const first = checker.summary.names.find((n) => n.startsWith(`${e.member}/`)) ?? e.member;
    throw new RefusedMember(first, e.why);
  }
}

/** The body's tar bytes (gunzipped when it is gzip: by its type, or its first bytes), each chunk checked before it goes on. */
async function* checked(request: Request, checker: TarChecker): AsyncGenerator<Uint8Array> {
  const raw = bodyChunks(request, Number.POSITIVE_INFINITY);
  const first = await raw.next();
  if (first.done) {
    checker.finish();
    return;
  }
  const gzip = /^application\/(x-)?gzip\b/i.test(request.headers.get("content-type") ?? "") || (first.value[0] === 0x1f && first.value[1] === 0x8b);
  let body: AsyncIterable<Uint8Array> = (async function* () {
    yield first.value;
    yield* raw;
  })();
  if (gzip) body = gunzipped(body);
  for await (const chunk of body) {
    checker.push(chunk);
    yield chunk;
  }
  checker.finish();
}

/** `chunks` through the platform's gzip decoder; a broken gzip stream is the body's 400. */
async function* gunzipped(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const source = new ReadableStream<Uint8Array>({
    async start(controller) {
      try {
        for await (const c of chunks) controller.enqueue(c);
        controller.close();
      } catch (e) {
        controller.error(e);
      }
    },
  });
  const reader = source.pipeThrough(new DecompressionStream("gzip")).getReader();
  for (;;) {
    let part: ReadableStreamReadResult<Uint8Array>;
    try {
      part = await reader.read();
    } catch (e) {
      if (e instanceof ApiError) throw e;
      throw ApiError.field("body", `is not valid gzip: ${describe(e)}`);
    }
    if (part.done) return;
    yield part.value;
  }
}

/** `GET /api/rooms/{room}/archive/{path}`: a tar of the folder, streamed. */
export async function getArchive(env: Env, room: string, path: string): Promise<Response> {
  try {
    const body = await roomSandbox(env, room).packArchive(folderOf(room, path));
    if (body === null) return notFoundText();
    return new Response(body, { headers: { "content-type": "application/x-tar" } });
  } catch (e) {
    return archiveError(e);
  }
}

/** `GET /api/rooms/{room}/diff[?from=CHECKPOINT][&path=P…]`: git's diff of the checkpoint against /workspace. */
export async function getDiff(env: Env, room: string, query: string): Promise<Response> {
  try {
    const details = roomDetails(room);
    const params = new URLSearchParams(query);
    const filters: string[] = [];
    for (const p of params.getAll("path")) {
      const parts = pathComponents(p);
      if (typeof parts === "string") addDetail(details, "path", parts);
      else filters.push(parts.join("/"));
    }
    if (Object.keys(details).length > 0) throw ApiError.invalid(details);
    const from = params.get("from") ?? undefined;
    const { copy } = await ask<{ copy: WorkspaceCopy }>(env, room, { kind: "diff_base", ...(from !== undefined && { from }) });
    const body = await roomSandbox(env, room).diffWorkspace(copy);
    return new Response(body.pipeThrough(tidyDiff(filters)), { headers: { "content-type": "text/plain; charset=utf-8" } });
  } catch (e) {
    return archiveError(e);
  }
}
