// `GET` and `PUT /api/rooms/{room}/files/{path}`, a folder's listing
// (`GET /files/` and `/files/{dir}/`) and `DELETE /files/{path}`: files in
// and out of a room's workspace (docs/protocol.md "Files"), with the path
// rules of src/sandbox/files.rs. The sandbox refuses symlinks. The Worker
// talks to the room's sandbox directly; a written file is then the room's
// `upload` record, a deleted one its `delete` record. Bodies stream both
// ways (never held whole); only regular files are read, so a FIFO is a 400.

import { check as allowed, type Caller } from "./access";
import type { Env } from "./env";
import { ApiError, addDetail, bodyChunks, describe, errorResponse, type Details } from "./http";
import { roomDetails, type Op } from "./ops";
import { MAX_FILE_BODY } from "./protocol";
import { nameProblem, trim } from "./text";
import { roomOp } from "./rooms";
import { roomSandbox } from "./sandbox/adapter";
import { MAX_DEPTH } from "./tar";
import { BadPath, DiskFull, NotAFolder, NotRegular, RefusedMember, SandboxStarting } from "./sandbox/types";

const encoder = new TextEncoder();

/** A workspace-relative path's components, or why it is refused. */
export function pathComponents(path: string): string[] | string {
  if (path === "") return "must name a file under /workspace";
  if (path.startsWith("/")) return "must be relative to /workspace, not absolute";
  if (path.includes("\0")) return "must not contain NUL";
  if (path.includes("//")) return "must not have an empty segment (//)";
  const parts = path.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) return "must not leave /workspace (..)";
  if (parts.length === 0) return "must name a file under /workspace";
  // Linux's limit (NAME_MAX); its twin is duet serve's src/sandbox/files.rs `components`.
  if (parts.some((p) => encoder.encode(p).length > 255)) return "has a name longer than 255 bytes";
  if (parts.length > MAX_DEPTH) return `nests more than ${MAX_DEPTH} folders deep`;
  return parts;
}

/** Checks the room and the path before anything is touched; the path for the sandbox. */
export function check(room: string, path: string, details: Details = roomDetails(room)): string {
  const parts = pathComponents(path);
  if (typeof parts === "string") addDetail(details, "path", parts);
  if (Object.keys(details).length > 0) throw ApiError.invalid(details);
  return (parts as string[]).join("/");
}

/** The workspace itself (a listing of `files/`): only the room is checked. */
export function checkRoom(room: string, details: Details = roomDetails(room)): string {
  if (Object.keys(details).length > 0) throw ApiError.invalid(details);
  return "";
}

export function fileError(e: unknown): Response {
  if (e instanceof ApiError) return errorResponse(e);
  if (e instanceof BadPath || e instanceof NotRegular || e instanceof NotAFolder) return errorResponse(ApiError.field("path", e.message));
  if (e instanceof RefusedMember) return errorResponse(ApiError.field("member", e.message));
  if (e instanceof DiskFull) {
    return new Response(JSON.stringify({ error: "the room's disk is full" }), {
      status: 507,
      headers: { "content-type": "application/json" },
    });
  }
  if (e instanceof SandboxStarting) return errorResponse(ApiError.starting(e.retryAfterSecs));
  return errorResponse(ApiError.internal(describe(e)));
}

/** `GET /api/rooms/{room}/files/{path}`: streamed, with its length. */
export async function getFile(env: Env, room: string, path: string): Promise<Response> {
  try {
    const file = await roomSandbox(env, room).openFile(check(room, path));
    if (file === null) return notFoundText();
    const sized = new FixedLengthStream(file.size);
    void file.body.pipeTo(sized.writable).catch((e) => console.error(`room ${room}: sending ${path} stopped: ${describe(e)}`));
    return new Response(sized.readable, { headers: { "content-type": "application/octet-stream" } });
  } catch (e) {
    return fileError(e);
  }
}

export function notFoundText(): Response {
  return new Response("not found", { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } });
}

function json(body: object): Response {
  return new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
}

/** Byte order of UTF-8 strings (code point order, not UTF-16's). */
function byteOrder(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0) ?? 0);
  const y = Array.from(b, (c) => c.codePointAt(0) ?? 0);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** `GET /api/rooms/{room}/files/` and `/files/{dir}/`: `dir` is the path before the last `/` ("" for /workspace). */
export async function listFolder(env: Env, room: string, dir: string): Promise<Response> {
  try {
    const inside = dir === "" ? checkRoom(room) : check(room, dir);
    const entries = await roomSandbox(env, room).listFiles(inside);
    if (entries === null) return notFoundText();
    const listed = entries
      .filter((e) => e.name !== "." && e.name !== "..")
      .sort((a, b) => byteOrder(a.name, b.name))
      .map(({ name, type, size, mtime }) => ({ name, type, size, mtime }));
    return json({ entries: listed });
  } catch (e) {
    return fileError(e);
  }
}

/** `DELETE /api/rooms/{room}/files/{path}?userId=NAME`: a file, a symlink or a folder with all in it. */
export async function deleteFile(env: Env, room: string, path: string, query: string, caller: Caller): Promise<Response> {
  try {
    const details = roomDetails(room);
    const asked = queryUser(query, details);
    if (path.replace(/\/+$/, "") === "") {
      addDetail(details, "path", "must name a file or folder under /workspace, not /workspace itself");
      throw ApiError.invalid(details);
    }
    const inside = check(room, path, details);
    allowed(caller.role, "writeFiles");
    const user = caller.name ?? asked;
    if (!(await roomSandbox(env, room).deleteFile(inside))) return notFoundText();
    await recordQuietly(env, room, { kind: "deleted", path: inside, user });
    return json({ deleted: true });
  } catch (e) {
    return fileError(e);
  }
}

/** `userId` of a query (trimmed; absent: undefined); a bad one is a problem in `details`. */
export function queryUser(query: string, details: Details): string | undefined {
  const raw = new URLSearchParams(query).get("userId");
  if (raw === null) return undefined;
  const name = trim(raw);
  const problem = nameProblem(name);
  if (problem) addDetail(details, "userId", problem);
  return problem ? undefined : name;
}

/** Why a `PUT` to a path that ends in `/` is refused (src/server/files.rs says the same). */
const NAMES_A_FOLDER = "names a folder (it ends in /), not a file";

/** `PUT /api/rooms/{room}/files/{path}?userId=NAME` (body: the bytes, at most 64 MiB, streamed to the sandbox) */
export async function putFile(env: Env, room: string, path: string, query: string, request: Request, caller: Caller): Promise<Response> {
  try {
    const details = roomDetails(room);
    const asked = queryUser(query, details);
    if (path.endsWith("/")) addDetail(details, "path", NAMES_A_FOLDER);
    const inside = check(room, path, details);
    allowed(caller.role, "writeFiles");
    // An invite that fixes a name gives it to the record.
    const user = caller.name ?? asked;
    const size = await roomSandbox(env, room).writeFileFrom(inside, bodyChunks(request, MAX_FILE_BODY));
    await recordQuietly(env, room, { kind: "upload", path: inside, size, user });
    return new Response(JSON.stringify({ path, size }), {
      headers: { "content-type": "application/json" },
    });
  } catch (e) {
    return fileError(e);
  }
}

/** Stores the record of what was done to a file; it was done either way, so a failure is only logged. */
export async function recordQuietly(env: Env, room: string, op: Op): Promise<void> {
  try {
    const res = await roomOp(env, room, op);
    if (!res.ok) console.error(`room ${room}: the ${op.kind} record was not stored: ${await res.text()}`);
    else await res.body?.cancel();
  } catch (e) {
    console.error(`room ${room}: the ${op.kind} record was not stored: ${describe(e)}`);
  }
}
