// The browser page (docs/web.md), as duet serve's src/server/web.rs
// serves it: `GET /` and `GET /r/{room}` answer `assets/web/index.html`,
// `GET /web/{file}` the folder's other files, from the Worker's own bundle
// (pagefiles.js). The page holds no secret: no token needed. Every answer
// carries a strict Content-Security-Policy. Cloudflare's edge compresses
// these text types for a browser that takes it, as it does every answer.

import { ApiError, errorResponse } from "./http";
import { PAGE_FILES } from "./pagefiles";

export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The file of `assets/web/` a page path names (`index.html` for `/` and `/r/{room}`), if it is one. */
export function pageFile(path: string): string | undefined {
  if (path === "/") return "index.html";
  const m = /^\/(r|web)\/([^/]+)$/.exec(path);
  if (!m) return undefined;
  if (m[1] === "r") return "index.html";
  // Only plain file names: the folder has no other.
  return /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(m[2]) ? m[2] : "";
}

/** The `Content-Type` of a file of the page, by its extension (as duet serve's). */
function contentType(name: string): string {
  const ext = name.includes(".") ? name.slice(name.lastIndexOf(".") + 1) : "";
  const types: Record<string, string> = {
    html: "text/html; charset=utf-8",
    js: "text/javascript; charset=utf-8",
    mjs: "text/javascript; charset=utf-8",
    css: "text/css; charset=utf-8",
    svg: "image/svg+xml",
    ico: "image/x-icon",
    png: "image/png",
    json: "application/json",
    webmanifest: "application/manifest+json",
    woff2: "font/woff2",
    txt: "text/plain; charset=utf-8",
  };
  return types[ext] ?? "application/octet-stream";
}

/** The headers every answer of the page carries. */
function headers(type: string): Headers {
  return new Headers({
    "content-type": type,
    "cache-control": "no-cache",
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  });
}

/** `GET` (or `HEAD`) of a page path whose file is `file` ("" : none). */
export function servePage(request: Request, file: string): Response {
  if (request.method !== "GET" && request.method !== "HEAD") return errorResponse(ApiError.methodNotAllowed());
  const text = PAGE_FILES.get(file);
  if (text === undefined) {
    return new Response(request.method === "HEAD" ? null : "not found", { status: 404, headers: headers("text/plain; charset=utf-8") });
  }
  return new Response(request.method === "HEAD" ? null : text, { status: 200, headers: headers(contentType(file)) });
}
